"""Bridge from the code index (extract/code.py) to the graph: File/Symbol entities and code edges."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from graphmem.extract import code
from graphmem.extract.code import CodeFile, CodeSymbol, IndexResult
from graphmem.paths import write_private
from graphmem.store import ops

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
    files = {}
    for rel, data in raw.get("files", {}).items():
        symbols = tuple(CodeSymbol(**s) for s in data.pop("symbols", []))
        files[rel] = CodeFile(**{**data, "symbols": symbols, "imports": tuple(data.get("imports", ()))})
    return files


def save_cache(store_dir: Path, root: Path, files: Mapping[str, CodeFile]) -> None:
    write_private(store_dir / CACHE_NAME,
                  json.dumps({"root": str(root), "files": {k: asdict(v) for k, v in files.items()}}))


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
