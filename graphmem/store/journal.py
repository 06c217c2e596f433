"""Append-only JSONL journal of every store mutation: the source of truth the graph is rebuilt from."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from graphmem.errors import StoreCorrupt, StoreUnavailable

Op = dict[str, Any]
RECORD_META = ("seq", "ts", "by")  # who/when fields of a record, not part of the op


def encode_vector(vector: Iterable[float]) -> str:
    import numpy as np  # only vector ops need it: the git hooks' updater never loads numpy

    return base64.b64encode(np.asarray(list(vector), dtype=np.float32).tobytes()).decode()


def decode_vector(text: str) -> list[float]:
    import numpy as np

    return np.frombuffer(base64.b64decode(text), dtype=np.float32).tolist()


class Journal:
    """Every op is written and fsynced here before the graph sees it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seq: int | None = None

    def append(self, op: Op, by: str = "") -> Op:
        record = {"seq": self._next_seq(), "ts": time.time(), "by": by, **_portable(op)}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreUnavailable(f"journal {self.path} is not writable: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return record

    def _next_seq(self) -> int:
        if self._seq is None:
            self._seq = self.last_seq()
        self._seq += 1
        return self._seq

    def last_seq(self) -> int:
        """Sequence number of the last complete record, read from the file's tail."""
        if not self.path.exists():
            return 0
        with self.path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            window = 1 << 16
            while True:
                handle.seek(max(0, size - window))
                lines = handle.read().split(b"\n")[:-1]
                complete = lines[1:] if size > window else lines
                for raw in reversed(complete):
                    try:
                        return int(json.loads(raw)["seq"])
                    except (ValueError, KeyError):
                        continue
                if window >= size:
                    return 0
                window *= 4

    def records(self) -> Iterator[Op]:
        """Every record in order; a torn last line (crash mid-write) is skipped."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    break
                try:
                    yield json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise StoreCorrupt(f"journal {self.path} line {number} is not JSON") from exc

    def ops(self, after: int = 0) -> Iterator[tuple[int, Op]]:
        """(seq, op) of records after a sequence number, turned back into store ops."""
        for record in self.records():
            if record.get("seq", 0) > after:
                yield record["seq"], _native(record)

    def touching(self, item_id: str) -> Iterator[Op]:
        """Records that wrote or changed an item (its audit trail)."""
        for record in self.records():
            rows = record.get("rows") or []
            if item_id in (record.get("ids") or []) or any(
                    r.get("id") == item_id or r.get("source") == item_id or r.get("target") == item_id
                    for r in rows):
                yield record

    def scrub(self, item_ids: AbstractSet[str],
              observation_ids: AbstractSet[str] = frozenset()) -> int:
        """Rewrite the journal without any trace of these items/observations; returns records dropped."""
        if not self.path.exists():
            return 0
        gone = set(item_ids) | set(observation_ids)
        kept: list[Op] = []
        dropped = 0
        for record in self.records():
            cleaned = _scrub_record(record, gone)
            if cleaned is None:
                dropped += 1
            else:
                kept.append(cleaned)
        tmp = self.path.with_suffix(".rewrite")
        with tmp.open("w", encoding="utf-8") as handle:
            for record in kept:
                handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)
        return dropped


def _scrub_record(record: Op, gone: set[str]) -> Op | None:
    op = record["op"]
    if op in ("put_items", "put_vectors", "put_observations", "put_entities", "set_item_status"):
        rows = [r for r in record["rows"] if r["id"] not in gone]
        return {**record, "rows": rows} if rows else None
    if op == "put_links":
        rows = [r for r in record["rows"] if r["source"] not in gone and r["target"] not in gone]
        return {**record, "rows": rows} if rows else None
    if op == "bump_items" and "rows" in record:
        rows = [r for r in record["rows"] if r["id"] not in gone]
        return {**record, "rows": rows} if rows else None
    if op in ("update_items", "bump_items", "delete_observations"):
        ids = [i for i in record["ids"] if i not in gone]
        return {**record, "ids": ids} if ids else None
    if op == "delete_links":
        pairs = list(zip(record["sources"], record.get("targets") or [None] * len(record["sources"])))
        pairs = [(s, t) for s, t in pairs if s not in gone and t not in gone]
        if not pairs:
            return None
        targets = None if record.get("targets") is None else [t for _, t in pairs]
        return {**record, "sources": [s for s, _ in pairs], "targets": targets}
    return record


def _portable(op: Op) -> Op:
    if op["op"] != "put_vectors":
        return op
    return {**op, "rows": [{**r, "vec": encode_vector(r["vec"])} for r in op["rows"]]}


def _native(record: Op) -> Op:
    op = {k: v for k, v in record.items() if k not in RECORD_META}
    if op["op"] == "put_vectors":
        op["rows"] = [{**r, "vec": decode_vector(r["vec"])} for r in op["rows"]]
    return op


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
