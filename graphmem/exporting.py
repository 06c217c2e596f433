"""Export and import of a project's items: JSON records (`export_items`, `import_items`), a
human-readable markdown form that import reads back exactly, export file parsing and the guards
every imported record passes.

Each memory is a `## title` section whose first line is `<!-- graphmem: {...} -->`: every field
of the record but the body, plus `body_lines`, the number of lines of body that follow. The body
is read by that count, so it may hold any text (`## ` lines, graphmem comments) and round-trips
exactly; a section whose layout no longer matches its count (a hand edit) is refused, whole file.
Exports written before `body_lines` existed (metadata line at the end of a section) still import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem import models as m
from graphmem.errors import InvalidInput
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.schema import LINK_PROPS

if TYPE_CHECKING:
    from graphmem.service import Memory

RECORD_MARK = "<!-- graphmem:"
MARK_END = " -->"
MAX_DEPTH = 20  # nesting of an export record: a few levels; deeper input is not an export


def export_items(memory: Memory, *, all_projects: bool = False) -> list[dict[str, Any]]:
    """Items as JSON records: their fields, linked files and symbols, SUPERSEDES edges, anchors
    (hash and commit: what the item said of the code, so staleness still holds) and mentions
    (with those not in the text: a commit an imported history item is about). One read of the
    items and one of their edges and entities, whatever their number.

    Code edges come from indexing the repository again, and DERIVED_FROM points at raw session
    observations, which stay in the store they were captured in."""
    flt = ItemFilter(project=None if all_projects else memory.project, statuses=None)
    rows = memory.store.list_items(flt, limit=10**9)
    graph = memory.store.graph_rows([r["id"] for r in rows]) if rows else {}
    entities = {e["id"]: e for e in graph.get("Entity", [])}
    edges: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for table in ("MENTIONS", "ANCHORED_TO", "SUPERSEDES"):
        for edge in graph.get(table, []):
            edges.setdefault(edge["source"], {}).setdefault(table, []).append(edge)
    return [_record(m.MemoryItem.from_row(row), edges.get(row["id"], {}), entities)
            for row in rows]


def _record(item: m.MemoryItem, edges: dict[str, list[dict[str, Any]]],
            entities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One item's export record, from its outgoing edges and the entities they reach."""
    record = item.model_dump(mode="json")
    linked = [entities[e["target"]] for t in ("MENTIONS", "ANCHORED_TO") for e in edges.get(t, [])]
    record["files"] = sorted({e["path"] or e["name"] for e in linked if e["kind"] == "file"})
    record["symbols"] = sorted({e["qualname"] or e["name"] for e in linked if e["kind"] == "symbol"})
    record["supersedes"] = sorted(({"target": e["target"], "at": e["at"], "surface": e["surface"]}
                                   for e in edges.get("SUPERSEDES", [])), key=lambda r: r["target"])
    for key, table in (("anchors", "ANCHORED_TO"), ("mentions", "MENTIONS")):
        record[key] = sorted(({"entity": entity_ref(entities[e["target"]]),
                               **{p: e[p] for p in LINK_PROPS[table]}}
                              for e in edges.get(table, [])), key=lambda r: r["entity"]["id"])
    return record


def import_items(memory: Memory, records: Iterable[dict[str, Any]], *,
                 restore_forgotten: bool = False) -> int:
    """Restore exported items (JSON objects) into this project; existing ids are replaced.

    Items `forget` deleted are skipped unless `restore_forgotten` (which lifts their
    tombstones); returns how many were imported.

    Exported anchors and mentions are kept as they were; an export without anchors is anchored
    to this store's code now."""
    from graphmem import codeindex

    items, files, symbols = [], {}, {}
    supersedes: list[dict[str, Any]] = []
    links: dict[str, list[dict[str, Any]]] = {"ANCHORED_TO": [], "MENTIONS": []}
    entities: dict[str, dict[str, Any]] = {}
    anchored_ids: set[str] = set()
    for number, record in enumerate(records, 1):
        try:
            data = dict(record)
            check_record(data, memory.config)
            files_of = data.pop("files", [])
            symbols_of = data.pop("symbols", [])
            replaces = data.pop("supersedes", None) or []
            anchored, mentioned = data.pop("anchors", None), data.pop("mentions", None) or []
            data["project"] = memory.project
            data.pop("search_text", None)
            item = m.MemoryItem(**data)
            replaced = [_supersedes_row(item.id, entry) for entry in replaces]
            for table, entries in (("ANCHORED_TO", anchored or []), ("MENTIONS", mentioned)):
                for entry in entries:
                    target = entity_ref(entry["entity"])
                    entities[target["id"]] = target
                    links[table].append({"source": item.id, "target": target["id"],
                                         **{p: entry.get(p) for p in LINK_PROPS[table]}})
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidInput(f"record {number}: {m.first_error(exc)}") from exc
        items.append(item)
        files[item.id], symbols[item.id] = list(files_of), list(symbols_of)
        supersedes += replaced
        if anchored is not None:
            anchored_ids.add(item.id)
    _check_import_ids(memory, [i.id for i in items])
    if restore_forgotten:
        memory.unforget([i.id for i in items])
    buried = memory.forgotten(i.id for i in items)
    if buried:
        items = [i for i in items if i.id not in buried]
        links = {t: [r for r in rows if r["source"] not in buried] for t, rows in links.items()}
        supersedes = [r for r in supersedes if not {r["source"], r["target"]} & buried]
        used = {r["target"] for rows in links.values() for r in rows}
        entities = {k: v for k, v in entities.items() if k in used}
    # Entities first: the files and symbols of the items then resolve to the same ones.
    known = {e["id"] for e in memory.store.get_entities(list(entities))}
    if len(known) < len(entities):
        memory.writer.write(ops.PutEntities([e for i, e in entities.items() if i not in known]))
    for keep in (True, False):
        chosen = [i for i in items if (i.id in anchored_ids) is keep]
        if chosen:
            memory.add_items(chosen, files=files, symbols=symbols, dedupe=False, anchors=not keep,
                             concepts=False)
    for table, rows in links.items():
        if rows:
            memory.writer.write(ops.PutLinks(table, rows))
    codeindex.resolve_waiting_mentions(memory)  # placeholders this store's code index does know
    # An edge to an item that is in neither the export nor this store has nothing to point at.
    present = {r["id"] for r in memory.store.get_items([r["target"] for r in supersedes])}
    kept = [r for r in supersedes if r["target"] in present]
    if kept:
        memory.writer.write(ops.PutLinks("SUPERSEDES", kept))
    return len(items)


def _check_import_ids(memory: Memory, ids: list[str]) -> None:
    """Ids appear once, and an id another project or label holds is never overwritten."""
    seen: set[str] = set()
    for item_id in ids:
        if item_id in seen:
            raise InvalidInput(f"id {item_id} appears twice in the import; nothing was imported")
        seen.add(item_id)
    for row in memory.store.get_items(ids):
        if row["project"] != memory.project:
            raise InvalidInput(f"id {row['id']} belongs to a memory of another project or "
                               "label, which an import never overwrites; drop the id field to "
                               "import it under a new id. Nothing was imported")


def entity_ref(entity: dict[str, Any]) -> dict[str, Any]:
    """What an export keeps of an entity: enough to link to it, or to create it again."""
    if not isinstance(entity, dict) or not entity.get("id") or not entity.get("kind"):
        raise ValueError("an entity needs an id and a kind")
    ref: dict[str, Any] = {f: str(entity.get(f) or "") for f in ("id", "kind", "name", "path",
                                                                   "qualname")}
    # A placeholder (`file:?src/db.py`) stands for code the store had not indexed yet.
    ref["resolved"] = bool(entity.get("resolved", ":?" not in ref["id"]))
    return ref


def _supersedes_row(source: str, entry: Any) -> dict[str, Any]:
    """One entry of an exported record's `supersedes` list as a SUPERSEDES link row."""
    if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
        raise TypeError("supersedes: each entry needs the target item's id")
    return {"source": source, "target": entry["target"], "at": float(entry.get("at") or 0.0),
            "surface": str(entry.get("surface") or "")[:200]}


def to_markdown(project: str, records: list[dict[str, Any]]) -> str:
    """One section per memory; a machine line under each heading makes the file re-importable."""
    lines = [f"# graphmem export: {_one_line(project)}", "", f"{len(records)} memories.", ""]
    for record in records:
        body = record.get("body") or ""
        body_lines = body.split("\n") if body else []
        meta = {k: v for k, v in record.items() if k != "body"}
        meta["body_lines"] = len(body_lines)
        # `<` and `>` escaped: no title can close the HTML comment or open another one
        encoded = json.dumps(meta, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
        lines += [f"## {_one_line(record['title'])}", "", f"{RECORD_MARK} {encoded}{MARK_END}",
                  (f"*{record['kind']} · {record['status']} · confidence "
                   f"{record['confidence']:.2f} · source {record['source']}*"), ""]
        if body_lines:
            lines += [*body_lines, ""]
        if record.get("files"):
            lines += ["Files: " + ", ".join(f"`{f}`" for f in record["files"]), ""]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "(untitled)"


def from_markdown(text: str) -> list[dict[str, Any]]:
    """Records of a markdown export; any section that does not read back exactly is an error."""
    lines = text.split("\n")
    first_mark = next((line for line in lines if line.startswith(RECORD_MARK)), None)
    if first_mark is not None and '"body_lines"' not in first_mark:
        return _from_markdown_v1(text)
    records: list[dict[str, Any]] = []
    at = 0
    while at < len(lines):
        if not lines[at].startswith("## "):
            if records and lines[at].strip():
                raise InvalidInput(f"line {at + 1}: text outside any memory's body (was the file "
                                   "edited? a body's line count is in its metadata line)")
            at += 1
            continue
        record, at = _section(lines, at, len(records) + 1)
        records.append(record)
    return records


def _section(lines: list[str], at: int, number: int) -> tuple[dict[str, Any], int]:
    """The record whose heading is on line `at`, and the line after its section."""
    heading = lines[at][3:]
    where = f"memory {number} ({heading[:40]!r}, line {at + 1})"
    mark = at + 2
    line = lines[mark] if mark < len(lines) else ""
    if lines[at + 1 : at + 2] != [""] or not (line.startswith(RECORD_MARK)
                                            and line.endswith(MARK_END)):
        raise InvalidInput(f"{where}: no '{RECORD_MARK} {{...}} -->' line under its heading; "
                           "nothing was imported")
    try:
        meta = json.loads(line[len(RECORD_MARK) : -len(MARK_END)])
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInput(f"{where}: broken metadata line: "
                           f"{getattr(exc, 'msg', 'nested too deep')}") from exc
    count = meta.pop("body_lines", None) if isinstance(meta, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidInput(f"{where}: broken metadata line: no body_lines count")
    if _one_line(meta.get("title", "")) != heading:
        raise InvalidInput(f"{where}: the heading differs from the title in its metadata line; "
                           "edit both or neither")
    at = mark + 2  # past the metadata line and the summary line under it
    if lines[at : at + 1] != [""]:
        raise InvalidInput(f"{where}: expected its summary line, then a blank line (was it "
                           "edited?); nothing was imported")
    body = lines[at + 1 : at + 1 + count]
    at += 1 + count
    if len(body) < count or (count and lines[at : at + 1] != [""]):
        raise InvalidInput(f"{where}: its body is not the {count} lines its metadata line "
                           "says (was it edited?); nothing was imported")
    at += 1 if count else 0
    if at < len(lines) and lines[at].startswith("Files: "):
        at += 2
    while at < len(lines) and not lines[at].strip():
        at += 1
    if at < len(lines) and not lines[at].startswith("## "):
        raise InvalidInput(f"{where}: text after its body that is not part of it (line "
                           f"{at + 1}; was the body edited? its metadata says {count} lines)")
    return {**meta, "body": "\n".join(body)}, at


# Exports written before `body_lines`: content may not run into the next heading, a section
# that lost its metadata line is an error, never silently merged into the following record.
_SECTION = re.compile(r"^## (?P<title>.+?)\n(?P<content>(?:(?!^## ).)*?)" + re.escape(RECORD_MARK)
                      + r" (?P<meta>\{.*?\}) -->", re.DOTALL | re.MULTILINE)


def _from_markdown_v1(text: str) -> list[dict[str, Any]]:
    headings = len(re.findall(r"^## ", text, re.MULTILINE))
    records = []
    for number, match in enumerate(_SECTION.finditer(text), 1):
        try:
            meta = json.loads(match["meta"])
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InvalidInput(f"memory {number} ({match['title'][:40]!r}): broken metadata line: "
                               f"{getattr(exc, 'msg', 'nested too deep')}") from exc
        paragraphs = [p.strip() for p in match["content"].strip().split("\n\n")]
        body = [p for p in paragraphs[1:] if p and not p.startswith("Files: ")]
        records.append({**meta, "title": match["title"].strip(), "body": "\n\n".join(body)})
    if headings != len(records):
        raise InvalidInput(f"{headings - len(records)} of {headings} memories have no intact "
                           f"'{RECORD_MARK} {{...}} -->' line; nothing was imported")
    return records


def read_export(path: Path, max_bytes: int | None = None) -> list[dict[str, Any]]:
    """Records of a JSONL or markdown export; any broken record is a clear error, nothing imported."""
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise InvalidInput(f"{path} is {size:,} bytes, over the import limit of {max_bytes:,} "
                               "(GRAPHMEM_MAX_IMPORT_BYTES)")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InvalidInput(f"no such file: {path}") from exc
    except IsADirectoryError as exc:
        raise InvalidInput(f"{path} is a directory, not an export file") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    if text.lstrip().startswith("#"):
        records = from_markdown(text)
        if not records and text.strip():
            raise InvalidInput(f"{path}: no graphmem records found in this markdown")
        return records
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = json_object(line, f"{path}:{number}")
        if _depth(record) > MAX_DEPTH:
            raise InvalidInput(f"{path}:{number}: JSON nested too deep for an export")
        records.append(record)
    return records


def json_object(line: str, where: str) -> dict[str, Any]:
    """One line of a JSON Lines file, which must be a JSON object; else InvalidInput saying
    `where` (file:line) and what is wrong."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: not JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise InvalidInput(f"{where}: JSON nested too deep") from exc
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: expected a JSON object")
    return record


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


# --- import guards ------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TEXT_FIELDS = ("title", "body", "stale_reason", "session_id", "branch")
_NAME_LISTS = ("tags", "files", "symbols")
_LINK_LISTS = ("files", "symbols", "supersedes", "anchors", "mentions")


def check_record(record: dict[str, Any], limits: Any) -> None:
    """Raise ValueError or TypeError unless `record` is safe to import: field types, sizes (`limits` is the
    Config: max_title_chars, max_item_chars, max_tags, max_name_chars, max_links_per_item),
    no control bytes (tab, newline and carriage return are text) and an id of the id pattern."""
    item_id = record.get("id")
    if item_id is not None and not (isinstance(item_id, str) and m.ITEM_ID.fullmatch(item_id)):
        raise ValueError(f"id {str(item_id)[:80]!r} is not an id (1-64 letters, digits, _ or -)")
    for name in _TEXT_FIELDS:
        value = record.get(name) or ""
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, not {type(value).__name__}")
        _no_control(name, value)
    title, body = record.get("title") or "", record.get("body") or ""
    if len(title) > limits.max_title_chars:
        raise ValueError(f"title is {len(title):,} characters (limit {limits.max_title_chars:,}, "
                         "GRAPHMEM_MAX_TITLE_CHARS)")
    if len(title) + len(body) > limits.max_item_chars:
        raise ValueError(f"text is {len(title) + len(body):,} characters (limit "
                         f"{limits.max_item_chars:,}, GRAPHMEM_MAX_ITEM_CHARS)")
    for name in ("tags", *_LINK_LISTS):
        value = record.get(name) or []
        if not isinstance(value, list):
            raise TypeError(f"{name} must be a list, not {type(value).__name__}")
        limit = limits.max_tags if name == "tags" else limits.max_links_per_item
        if len(value) > limit:
            raise ValueError(f"{len(value):,} {name} (limit {limit:,})")
    for name in _NAME_LISTS:
        for value in record.get(name) or []:
            if not isinstance(value, str):
                raise TypeError(f"{name} must hold strings, not {type(value).__name__}")
            if len(value) > limits.max_name_chars:
                raise ValueError(f"one of {name} is {len(value):,} characters (limit "
                                 f"{limits.max_name_chars:,}, GRAPHMEM_MAX_NAME_CHARS)")
            _no_control(name, value)


def _no_control(name: str, value: str) -> None:
    found = _CONTROL.search(value)
    if found:
        raise ValueError(f"{name} contains the control byte {ord(found.group()):#04x} at "
                         f"character {found.start()}; is it binary?")
