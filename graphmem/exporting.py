"""Human-readable export (markdown) that import can read back, and export file parsing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput

RECORD_MARK = "<!-- graphmem:"


def to_markdown(project: str, records: list[dict[str, Any]]) -> str:
    """One section per memory; a machine line under each heading makes the file re-importable."""
    lines = [f"# graphmem export: {project}", "", f"{len(records)} memories.", ""]
    for record in records:
        meta = {k: v for k, v in record.items() if k not in ("title", "body")}
        lines += [f"## {record['title']}", "",
                  (f"*{record['kind']} · {record['status']} · confidence "
                   f"{record['confidence']:.2f} · source {record['source']}*"), ""]
        if record.get("body") and record["body"] != record["title"]:
            lines += [record["body"], ""]
        if record.get("files"):
            lines += ["Files: " + ", ".join(f"`{f}`" for f in record["files"]), ""]
        lines += [f"{RECORD_MARK} {json.dumps(meta, ensure_ascii=False)} -->", ""]
    return "\n".join(lines)


# Content may not run into the next heading: a section that lost its metadata line is an
# error, never silently merged into the following record.
_SECTION = re.compile(r"^## (?P<title>.+?)\n(?P<content>(?:(?!^## ).)*?)" + re.escape(RECORD_MARK)
                      + r" (?P<meta>\{.*?\}) -->", re.DOTALL | re.MULTILINE)


def from_markdown(text: str) -> list[dict[str, Any]]:
    headings = len(re.findall(r"^## ", text, re.MULTILINE))
    records = []
    for number, match in enumerate(_SECTION.finditer(text), 1):
        try:
            meta = json.loads(match["meta"])
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"memory {number} ({match['title'][:40]!r}): broken metadata line: "
                               f"{exc.msg}") from exc
        paragraphs = [p.strip() for p in match["content"].strip().split("\n\n")]
        body = [p for p in paragraphs[1:] if p and not p.startswith("Files: ")]
        records.append({**meta, "title": match["title"].strip(), "body": "\n\n".join(body)})
    if headings != len(records):
        raise InvalidInput(f"{headings - len(records)} of {headings} memories have no intact "
                           f"'{RECORD_MARK} {{...}} -->' line; nothing was imported")
    return records


def read_export(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL or markdown export; any broken record is a clear error, nothing imported."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InvalidInput(f"no such file: {path}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text") from exc
    if text.lstrip().startswith("#"):
        records = from_markdown(text)
        if not records and text.strip():
            raise InvalidInput(f"{path}: no graphmem records found in this markdown")
        return records
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise InvalidInput(f"{path}:{number}: expected a JSON object")
        records.append(record)
    return records
