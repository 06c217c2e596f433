"""Append-only JSONL journal of every store mutation: the source of truth the graph is rebuilt from.

Each record is one line, framed: `{"crc":"<8 hex>",...rest of the record...}` where the CRC32
covers the record's JSON without that field (`{` + the bytes after it). A line that fails its
CRC, or does not parse, is corrupt. At the end of the file that is a torn write: it is cut off and
kept aside in `journal.jsonl.torn` (mode 0600) before anything is appended, and logged. In the
middle it is skipped and counted (`Journal.corrupt`). Lines without the frame (journals written
before it) are read as plain JSON.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
import zlib
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput, StoreUnavailable, from_os_error
from graphmem.store.ops import RECORD_META, Op, Row, decode

FRAME = b'{"crc":"'
FRAME_LEN = len(FRAME) + 8 + 2  # '{"crc":"' + 8 hex digits + '",'
TAIL_WINDOW = 1 << 20
log = logging.getLogger("graphmem.journal")


def frame(record: Row) -> bytes:
    """One record as its journal line (newline included)."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    return b'{"crc":"%08x",' % zlib.crc32(body) + body[1:] + b"\n"


def unframe(raw: bytes) -> Row | None:
    """The record on one line (without its newline); None when the line is torn or corrupt."""
    if raw.startswith(FRAME):
        body = b"{" + raw[FRAME_LEN:]
        try:
            crc = int(raw[len(FRAME):FRAME_LEN - 2], 16)
        except ValueError:
            return None
        if raw[FRAME_LEN - 2:FRAME_LEN] != b'",' or zlib.crc32(body) != crc:
            return None
    else:
        body = raw
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("seq"), int) or "op" not in record:
        return None
    return record


class Journal:
    """Every op is written and fsynced here before the graph sees it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seq: int | None = None
        self.corrupt: list[int] = []  # line numbers the last full read skipped
        self.notes: list[str] = []    # what opening or appending had to repair

    @property
    def torn_path(self) -> Path:
        """Where torn and corrupt records are kept aside, for the record."""
        return self.path.with_name(self.path.name + ".torn")

    def append(self, op: Op, by: str = "", req: str | None = None) -> Row:
        record = {"seq": self._next_seq(), "ts": time.time(), "by": by,
                  **({"req": req} if req else {}), **op.record()}
        line = frame(record)
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._cut_torn_tail(fd)
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, line)
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, size)  # no fragment for the next append to glue onto
                self._seq = None
                error = from_os_error(exc, f"writing journal {self.path}")  # NoSpace: exit 7
                raise type(error)(f"{error}; nothing was stored") from exc
        finally:
            os.close(fd)
        return record

    def load(self, records: Iterable[Row]) -> int:
        """Write records as they are (sequence numbers, times, actors kept) into a journal that
        does not exist yet: a journal moved here from a server's op log. Returns records."""
        if self.path.exists():
            raise InvalidInput(f"journal {self.path} exists: nothing is loaded over it")
        count = 0
        fd = self._open()
        try:
            last = 0
            for record in records:
                if record["seq"] <= last:
                    raise InvalidInput(f"journal records out of order at seq {record['seq']}")
                last = record["seq"]
                _write_all(fd, frame({k: v for k, v in record.items() if k != "crc"}))
                count += 1
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        os.close(fd)
        self._seq = None
        return count

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreUnavailable(f"journal {self.path} is not writable: {exc.strerror}") from exc

    def repair_tail(self) -> list[str]:
        """On open: cut a torn or corrupt tail off (kept in the .torn file); returns what was done."""
        if not self.path.exists():
            return []
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = len(self.notes)
            self._cut_torn_tail(fd, check_last=True)
            return self.notes[before:]
        finally:
            os.close(fd)

    def _cut_torn_tail(self, fd: int, check_last: bool = False) -> None:
        """Truncate after the last intact record when what follows it is torn (no newline) or,
        with `check_last`, fails its check."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        if not check_last and os.pread(fd, 1, size - 1) == b"\n":
            return
        window = TAIL_WINDOW
        while True:  # back far enough to hold the start of the last line
            start = max(0, size - window)
            data = os.pread(fd, size - start, start)
            if start == 0 or b"\n" in data[:-1]:
                break
            window *= 4
        keep = len(data)
        if not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
        if check_last:
            while keep > 0:
                begin = data.rfind(b"\n", 0, keep - 1) + 1
                if begin == 0 and start > 0:
                    break  # the line starts before the window: leave it to a full read
                if unframe(data[begin:keep - 1]) is not None:
                    break
                keep = begin
        if start + keep == size:
            return
        self._set_aside(data[keep:], f"cut {size - start - keep} bytes of torn or corrupt "
                                     f"record(s) off the end")
        os.ftruncate(fd, start + keep)
        os.fsync(fd)
        self._seq = None

    def _set_aside(self, data: bytes, what: str) -> None:
        torn = os.open(self.torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _write_all(torn, data if data.endswith(b"\n") else data + b"\n")
            os.fsync(torn)
        finally:
            os.close(torn)
        note = f"journal {self.path}: {what} (kept in {self.torn_path.name})"
        self.notes.append(note)
        log.warning(note)

    def _next_seq(self) -> int:
        if self._seq is None:
            self._seq = self.last_seq()
        self._seq += 1
        return self._seq

    def last_seq(self) -> int:
        """Sequence number of the last intact record, read from the file's tail."""
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
                    record = unframe(raw)
                    if record is not None:
                        return int(record["seq"])
                if window >= size:
                    return 0
                window *= 4

    def lines(self) -> Iterator[tuple[int, bytes, Row | None]]:
        """(line number, raw line, record or None if corrupt) for every complete line."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    break  # torn, or still being written
                yield number, raw, unframe(raw[:-1])

    def records(self) -> Iterator[Row]:
        """Every intact record in order; corrupt lines are skipped and listed in `corrupt`."""
        self.corrupt = []
        for number, _, record in self.lines():
            if record is None:
                self.corrupt.append(number)
            else:
                yield record
        if self.corrupt:
            log.warning("journal %s: skipped %d corrupt record(s) at line(s) %s", self.path,
                        len(self.corrupt), ", ".join(map(str, self.corrupt[:10])))

    def verify(self) -> dict[str, Any]:
        """A full read: records, last sequence number, corrupt lines, torn bytes (for doctor)."""
        count, last = 0, 0
        for record in self.records():
            count, last = count + 1, max(last, int(record["seq"]))
        size = self.path.stat().st_size if self.path.exists() else 0
        tail = 0
        if size:
            with self.path.open("rb") as handle:
                handle.seek(max(0, size - TAIL_WINDOW))
                data = handle.read()
            tail = len(data) - (data.rfind(b"\n") + 1)
        return {"records": count, "last_seq": last, "corrupt": list(self.corrupt),
                "torn_tail_bytes": tail,
                "set_aside_bytes": self.torn_path.stat().st_size if self.torn_path.exists() else 0}

    def ops(self, after: int = 0) -> Iterator[tuple[int, Op]]:
        """(seq, op) of records after a sequence number, turned back into store ops."""
        for record in self.records():
            if record.get("seq", 0) > after:
                yield record["seq"], decode(record)

    def touching(self, item_id: str) -> Iterator[Row]:
        """Records that wrote or changed an item (its audit trail)."""
        for record in self.records():
            try:
                named = decode(record).written_ids()
            except InvalidInput:
                continue
            if item_id in named:
                yield record

    def scrub(self, item_ids: AbstractSet[str],
              observation_ids: AbstractSet[str] = frozenset()) -> int:
        """Rewrite the journal without any trace of these items/observations; returns records dropped.

        Corrupt lines cannot be read to be scrubbed: one naming a forgotten id is dropped whole,
        the others move to the .torn file; that file loses its lines naming a forgotten id too."""
        if not self.path.exists():
            return 0
        gone = set(item_ids) | set(observation_ids)
        needles = [json.dumps(i).encode() for i in gone]
        dropped = 0
        aside: list[bytes] = []
        tmp = self.path.with_name(self.path.name + ".rewrite")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                for _, raw, record in self.lines():
                    named = any(n in raw for n in needles)
                    if record is None:
                        if not named:
                            aside.append(raw)
                        continue
                    if not named:  # names none of them: kept as it is, vectors left undecoded
                        handle.write(raw)
                        continue
                    cleaned = scrub_record(record, gone)
                    if cleaned is None:
                        dropped += 1
                    else:
                        handle.write(frame(cleaned))
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _scrub_lines(self.torn_path, needles)
        if aside:
            self._set_aside(b"".join(aside), f"moved {len(aside)} corrupt record(s) aside "
                                             "while rewriting")
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)
        self._seq = None
        return dropped


def _scrub_lines(path: Path, needles: list[bytes]) -> None:
    """Rewrite a file of lines without those containing any needle (0600, atomically)."""
    if not path.exists():
        return
    lines = path.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if not any(n in line for n in needles)]
    if len(kept) == len(lines):
        return
    tmp = path.with_name(path.name + ".rewrite")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(b"".join(kept))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def scrub_record(record: Row, gone: set[str]) -> Row | None:
    """The record without rows naming a gone id (None when none is left); a record of an op this
    version does not know is kept as it is."""
    try:
        op = decode(record)
    except InvalidInput:
        return {k: v for k, v in record.items() if k != "crc"}
    cleaned = op.without(gone)
    if cleaned is None:
        return None
    if cleaned is op:
        return {k: v for k, v in record.items() if k != "crc"}
    meta = {k: record[k] for k in RECORD_META if k in record and k != "crc"}
    return {**meta, **cleaned.record()}


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
