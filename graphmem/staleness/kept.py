"""Parsed file versions kept on disk between staleness updates, by blob id and path: the new
version one commit's update parsed is the old version of the next commit's, so each update
parses only what it is the first to see. A cache: anything unreadable is parsed again."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from graphmem.codeindex import file_from_dict
from graphmem.extract import code
from graphmem.extract.code import CodeFile

DIR_NAME = "parsed"
LIMIT = 4000  # files kept; beyond it the older half goes


class Kept:
    """The parsed versions of one store, for the current hashing scheme."""

    def __init__(self, store_dir: Path) -> None:
        self.dir = store_dir / DIR_NAME / code.HASHES
        self.written = 0

    def _file(self, blob: str, path: str) -> Path:
        name = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return self.dir / f"{blob}-{name}.json"

    def get(self, blob: str, path: str) -> CodeFile | None:
        try:
            return file_from_dict(json.loads(self._file(blob, path).read_bytes()))
        except (OSError, ValueError, TypeError):
            return None

    def put(self, blob: str, path: str, parsed: CodeFile) -> None:
        target = self._file(blob, path)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp.write_bytes(json.dumps(asdict(parsed)).encode())
            os.replace(tmp, target)
            self.written += 1
        except OSError:
            tmp.unlink(missing_ok=True)

    def prune(self) -> None:
        """Keep the newest half once there are more than LIMIT (only after writing some)."""
        if not self.written:
            return
        try:
            entries = list(os.scandir(self.dir))
            if len(entries) <= LIMIT:
                return
            entries.sort(key=lambda e: e.stat().st_mtime)
            for entry in entries[:len(entries) - LIMIT // 2]:
                os.unlink(entry.path)
        except OSError:
            pass
