"""The retrieval log (`retrieval.jsonl` in the store): what each search, get, brief, related and
prompt injection was asked and returned, for `graphmem log` and evaluation. Queries are redacted;
`forget` drops every line that returned a forgotten item."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.capture.redact import redact_with
from graphmem.paths import private_opener, write_private

if TYPE_CHECKING:
    from graphmem.service import Memory

NAME = "retrieval.jsonl"


def record(memory: Memory, verb: str, query: str, context: dict[str, Any], candidates: int,
           returned: list[str], tokens: int) -> None:
    """Append one line (nothing on a read-only store; a full disk costs the line, not the read)."""
    if memory.read_only:
        return
    line = {"ts": time.time(), "verb": verb, "project": memory.project,
            "query": redact_with(memory.config, query[:1000])[:500],
            "context": context, "candidates": candidates, "returned": returned, "tokens": tokens}
    try:
        with open(memory.dir / NAME, "a", encoding="utf-8", opener=private_opener) as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a full disk costs the log a line, never the search its answer


def read(directory: Path, project: str, limit: int = 20) -> list[dict[str, Any]]:
    """The last `limit` lines' records of this project (unreadable lines skipped)."""
    path = directory / NAME
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[-limit:]:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("project") == project:
            out.append(entry)
    return out


def drop_returning(directory: Path, item_ids: set[str]) -> None:
    """Rewrite the log without the records that returned any of these items."""
    path = directory / NAME
    if not path.exists():
        return
    lines = path.read_bytes().splitlines(keepends=True)
    kept = []
    for line in lines:
        try:
            entry = json.loads(line)
            returned = set(entry.get("returned") or ()) | (
                {entry.get("query")} if entry.get("verb") == "get" else set())
        except (ValueError, AttributeError, TypeError):
            returned = {i for i in item_ids if json.dumps(i).encode() in line}
        if not returned & item_ids:
            kept.append(line)
    if len(kept) != len(lines):
        write_private(path, b"".join(kept))
