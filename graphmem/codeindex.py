"""Bridge from the code index (extract/code.py) to the graph: File/Symbol entities and code edges,
and `index_code`, which runs an incremental index into a store: entities of changed files, gone
symbols dropped, mentions that waited for the code linked, anchors on changed code rechecked.

The git hooks' lean updater imports this module: pydantic and the service stay out of it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInput
from graphmem.extract import code
from graphmem.extract.code import CodeFile, CodeSymbol, IndexResult
from graphmem.paths import write_private
from graphmem.store import ops
from graphmem.store.base import ItemFilter

if TYPE_CHECKING:
    from graphmem.service import Memory

CACHE_NAME = "code-index.json"


def entity_id(kind: str, key: str) -> str:
    """models.entity_id, kept here so the git hooks' updater never imports pydantic."""
    return f"{kind}:{key}"


def load_cache(store_dir: Path) -> dict[str, CodeFile]:
    """The previous run's files (for incremental indexing); empty when absent or unreadable."""
    path = store_dir / CACHE_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if raw.get("hashes") != code.HASHES:  # made with another hashing scheme: parse anew
        return {}
    return {rel: file_from_dict(data) for rel, data in raw.get("files", {}).items()}


def file_from_dict(data: dict[str, Any]) -> CodeFile:
    """A CodeFile from its `asdict` form (as JSON gave it back)."""
    symbols = tuple(CodeSymbol(**s) for s in data.get("symbols", ()))
    return CodeFile(**{**data, "symbols": symbols, "imports": tuple(data.get("imports", ()))})


def save_cache(store_dir: Path, root: Path, files: Mapping[str, CodeFile]) -> None:
    write_private(store_dir / CACHE_NAME,
                  json.dumps({"root": str(root), "hashes": code.HASHES,
                              "files": {k: asdict(v) for k, v in files.items()}}))


def file_entity(f: CodeFile) -> dict[str, Any]:
    return {"id": entity_id("file", f.path), "kind": "file", "name": f.path, "path": f.path,
            "qualname": "", "language": f.language, "start_line": 0, "end_line": 0,
            "hash": f.content_hash, "resolved": True}


def symbol_entity(s: CodeSymbol, language: str) -> dict[str, Any]:
    return {"id": entity_id("symbol", s.qualname), "kind": "symbol", "name": s.name,
            "path": s.path, "qualname": s.qualname, "language": language,
            "start_line": s.start_line, "end_line": s.end_line, "hash": s.body_hash,
            "resolved": True}


def graph_ops(result: IndexResult, paths: Iterable[str]) -> list[ops.Op]:
    """Journal ops that write the entities and edges of the given (changed) files."""
    entities: list[dict[str, Any]] = []
    defined: list[dict[str, Any]] = []
    contains: list[dict[str, Any]] = []
    for path in paths:
        f = result.files[path]
        entities.append(file_entity(f))
        for s in f.symbols:
            entities.append(symbol_entity(s, f.language))
            defined.append({"source": entity_id("symbol", s.qualname), "target": entity_id("file", path)})
            if s.parent:
                contains.append({"source": entity_id("symbol", s.parent),
                                 "target": entity_id("symbol", s.qualname)})
    wanted = set(paths)
    imports = [{"source": entity_id("file", a), "target": entity_id("file", b)}
               for a, b in code.resolve_imports(result.files) if a in wanted]
    changes: list[ops.Op] = []
    if entities:
        changes.append(ops.PutEntities(entities))
    for kind, rows in (("DEFINED_IN", defined), ("CONTAINS", contains), ("IMPORTS", imports)):
        if rows:
            changes.append(ops.PutLinks(kind, rows))
    return changes


def run_index(root: Path, previous: Mapping[str, CodeFile],
              progress: Callable[[int, int], None] | None = None) -> IndexResult:
    return code.index_repository(root, previous, progress=progress)


def index_code(memory: Memory, root: str | Path | None = None,
               progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Index the project's code (incremental) and link waiting mentions to what it found."""
    from graphmem.staleness import update as staleness

    root = Path(root or memory.ref.root).resolve()
    if not root.is_dir():
        raise InvalidInput(f"not a directory: {root}")
    staleness.migrate_hashes(memory)
    previous = load_cache(memory.dir)
    result = run_index(root, previous, progress)
    changed = [p for p in result.changed if p in result.files]
    _drop_vanished(memory, previous, result)
    for op in graph_ops(result, changed):
        memory.writer.write(op)
    resolved = resolve_waiting_mentions(memory) if changed else 0
    save_cache(memory.dir, root, result.files)
    # Items anchored to code the index just saw change become stale (or fresh again).
    rechecked = staleness.recheck(memory, changed + list(result.removed)) if changed else {}
    symbols = sum(len(f.symbols) for f in result.files.values())
    return {"root": str(root), "files": len(result.files), "symbols": symbols,
            "parsed": len(changed), "removed": len(result.removed),
            "resolved_mentions": resolved, "skipped": result.skipped,
            "stale": rechecked.get("stale", []),
            "warnings": result.warnings, "seconds": round(result.seconds, 3)}


def _drop_vanished(memory: Memory, previous: Mapping[str, CodeFile], result: IndexResult) -> None:
    """Symbols and files that no longer exist leave the graph unless items are linked to them."""
    old = {s.qualname for f in previous.values() for s in f.symbols}
    new = {s.qualname for f in result.files.values() for s in f.symbols}
    gone = [entity_id("symbol", q) for q in old - new]
    gone += [entity_id("file", p) for p in result.removed]
    if not gone:
        return
    linked = {a["entity"] for a in memory.store.anchors()} | {
        e for _, e, _ in memory.store.items_mentioning(gone, ItemFilter(statuses=None))}
    unlinked = [g for g in gone if g not in linked]
    if unlinked:
        memory.writer.write(ops.DeleteEntities(unlinked))


def resolve_waiting_mentions(memory: Memory) -> int:
    """Mentions of code the index did not know before (placeholders like `file:?src/db.py`):
    link their items to the entities now found; returns how many items were linked."""
    from graphmem.extract import link

    count = 0
    for kind in ("file", "symbol"):
        waiting = [e for e in memory.store.entities_by_kind(kind) if not e["resolved"]]
        for entity in waiting:
            norm = entity["id"].split(":?", 1)[1]
            found = [r for r in link.resolve_code(kind, norm, norm, memory.store)
                     if r.entity.resolved]
            if not found:
                continue
            items = memory.store.items_mentioning([entity["id"]], ItemFilter(statuses=None))
            rows = [{"source": item_id, "target": r.entity.id, "weight": w * r.weight,
                     "surface": norm} for item_id, _, w in items for r in found]
            anchors = [{"source": item_id, "target": r.entity.id, "hash": r.entity.hash,
                        "commit": "", "at": time.time()}
                       for item_id, _, _ in items for r in found if r.anchor]
            if rows:
                memory.writer.write(ops.PutLinks("MENTIONS", rows))
            if anchors:
                memory.writer.write(ops.PutLinks("ANCHORED_TO", anchors))
            memory.writer.write(ops.DeleteEntities([entity["id"]]))
            count += len(items)
    return count
