"""The per-project append-only event spool between the hooks (many writers) and ingest (one reader).

Layout: `<store>/spool/events.jsonl` (one JSON event per line), `consumed.offset` (how far ingest
has read, written atomically), `events.1.jsonl` (the previous, fully consumed generation).

Writes: each line goes out in a single `os.write` on an `O_APPEND` descriptor while holding
`flock(LOCK_EX)` on that descriptor. O_APPEND alone makes the position atomic on local Linux
filesystems; the lock also keeps lines larger than a pipe buffer whole on filesystems that split
big writes, and serialises writers against rotation. Measured cost of the lock: a few
microseconds per append (tests/capture/test_spool.py).

Durability: session-end, pre-compact and stop events are fsynced; tool and prompt events are not,
to keep the per-tool-call hook cheap. A machine crash can therefore lose the last few seconds of
tool events, never earlier ones (each fsync flushes every line appended before it), and never
leaves a torn line in the middle: a torn final line has no newline and readers skip it until it
is complete.

Reading: `read_from(offset)` returns the complete lines after `offset` and the offset after the
last one; `commit(offset)` records progress. Ingest that crashes before committing reads the
same events again, so it must be idempotent (events carry a unique `id`).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Set as AbstractSet
from pathlib import Path

from graphmem.capture.event import HookEvent
from graphmem.paths import ProjectRef, store_dir

ROTATE_BYTES = 16 * 1024 * 1024
LOST_WIDTH = 20  # bytes of the lost-events counter, rewritten in place
_EVENT_START = b'{"event":'


class Spool:
    """One project's spool directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / "events.jsonl"
        self.offset_path = self.directory / "consumed.offset"
        self.previous_path = self.directory / "events.1.jsonl"
        self.lost_path = self.directory / "lost.count"
        self.skipped = 0  # lines the last read could not parse

    @classmethod
    def for_project(cls, project: ProjectRef, home: Path | None = None) -> Spool:
        """The spool of `project` under its store directory."""
        return cls(store_dir(project, home) / "spool")

    # --- writers (hooks) ---

    def append(self, event: HookEvent, *, sync: bool = False) -> int:
        """Append one event as one line; returns the bytes written."""
        return self.append_line(event.to_json(), sync=sync)

    def append_line(self, line: str, *, sync: bool = False) -> int:
        """Append `line` (no newline inside) atomically with respect to other writers."""
        data = (line.replace("\n", " ") + "\n").encode("utf-8", "replace")
        for _ in range(8):
            fd = self._open_for_append()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not self._still_current(fd):
                    continue  # rotated between open and lock: write to the new file
                size = os.fstat(fd).st_size
                try:
                    _write_all(fd, data)
                    if sync:
                        os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, size)  # no fragment for the next line to be glued onto
                    raise
                if not os.path.exists(self.lost_path):
                    self._make_lost_counter()
                return len(data)
            finally:
                os.close(fd)
        raise OSError(f"spool {self.path} kept being rotated under the writer")

    def _make_lost_counter(self) -> None:
        """Made while there is room, so that a full disk can still take the count."""
        try:
            fd = os.open(self.lost_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         0o600)
        except OSError:
            return
        try:
            os.write(fd, _counter(0))
        except OSError:
            pass
        finally:
            os.close(fd)

    def note_lost(self) -> None:
        """Count one event that could not be spooled (a full disk): the counter file is
        rewritten in place, never grown. Never raises."""
        try:
            fd = os.open(self.lost_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, _counter(_count(os.pread(fd, LOST_WIDTH, 0)) + 1), 0)
        except OSError:
            pass
        finally:
            os.close(fd)

    def take_lost(self) -> int:
        """Events counted as lost since the last call (what `graphmem doctor` reports)."""
        try:
            fd = os.open(self.lost_path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            count = _count(os.pread(fd, LOST_WIDTH, 0))
            if count:
                os.pwrite(fd, _counter(0), 0)
            return count
        except OSError:
            return 0
        finally:
            os.close(fd)

    def _open_for_append(self) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            return os.open(self.path, flags, 0o600)
        except FileNotFoundError:
            self.directory.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, flags, 0o600)

    def _still_current(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    # --- the reader (ingest) ---

    def read_from(self, offset: int, max_bytes: int | None = None) -> tuple[list[HookEvent], int]:
        """Events on complete lines after `offset`, and the offset just past the last of them.

        A torn final line (no newline yet) is left for a later read. Lines that do not parse
        are skipped and counted in `self.skipped`.
        """
        self.skipped = 0
        try:
            with open(self.path, "rb") as handle:
                handle.seek(offset)
                data = handle.read(max_bytes) if max_bytes else handle.read()
                if max_bytes and b"\n" not in data and data:
                    data += handle.readline()  # one line longer than max_bytes
        except FileNotFoundError:
            return [], offset
        end = data.rfind(b"\n")
        if end < 0:
            return [], offset
        events = []
        for raw in data[:end].split(b"\n"):
            event = self._parse(raw)
            if event is not None:
                events.append(event)
        return events, offset + end + 1

    def _parse(self, raw: bytes) -> HookEvent | None:
        if not raw.strip():
            return None
        for candidate in (raw, raw[raw.rfind(_EVENT_START) :]):
            try:
                data = json.loads(candidate)
            except ValueError:
                continue  # a writer died mid-line and the next line was glued to it
            if isinstance(data, dict) and isinstance(data.get("event"), str):
                return HookEvent.from_dict(data)
        self.skipped += 1
        return None

    def committed(self) -> int:
        """The consumer's offset into the current `events.jsonl` (0 after a rotation)."""
        try:
            fields = self.offset_path.read_text().split()
            offset, inode = int(fields[0]), int(fields[1])
        except (FileNotFoundError, ValueError, IndexError):
            return 0
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            return 0
        if offset > current.st_size:
            return 0
        if inode != current.st_ino:
            # A copied or restored store has new inodes: the same first record says same spool.
            head = fields[2] if len(fields) > 2 else ""
            if not head or head != self._first_line_digest():
                return 0
        return offset

    def commit(self, offset: int) -> None:
        """Record that everything before `offset` has been ingested (atomic replace)."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = 0
        self._write_offset(offset, inode)

    def _write_offset(self, offset: int, inode: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.offset_path.with_name(f".consumed.offset.{os.getpid()}.tmp")
        head = self._first_line_digest() if inode else ""
        with open(tmp, "w") as handle:
            handle.write(f"{offset} {inode} {head}\n".replace(" \n", "\n"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.offset_path)

    def _first_line_digest(self) -> str:
        """The spool's first complete record, hashed: it never changes while the file lives."""
        import hashlib  # not on the per-tool-call path: only the consumer commits offsets

        try:
            with open(self.path, "rb") as handle:
                first = handle.readline(1 << 20)
        except OSError:
            return ""
        return hashlib.sha1(first).hexdigest()[:16] if first.endswith(b"\n") else ""

    def pending_bytes(self) -> int:
        """Bytes appended but not yet consumed: the spool lag `graphmem doctor` reports."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return 0
        return max(0, size - self.committed())

    def rotate_if_consumed(self, threshold: int = ROTATE_BYTES) -> bool:
        """Start a new `events.jsonl` when the current one is fully consumed and large."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # writers wait; they reopen once we rename
            size = os.fstat(fd).st_size
            if size <= threshold or self.committed() != size or not self._still_current(fd):
                return False
            os.replace(self.path, self.previous_path)
            self._write_offset(0, 0)
            return True
        finally:
            os.close(fd)

    # --- forget ---

    def drop_events(self, ids: AbstractSet[str]) -> int:
        """Rewrite both generations without the events of these ids; returns lines dropped.

        Writers wait on the lock and then append to the new file (as after a rotation); the
        consumer's offset moves back by the bytes dropped before it."""
        if not ids:
            return 0
        needles = [f'"id":"{i}"'.encode() for i in ids]
        dropped = 0
        if self.previous_path.exists():
            kept, removed, _ = self._without(self.previous_path.read_bytes(), ids, needles, 0)
            if removed:
                _replace_private(self.previous_path, kept)
                dropped += removed
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return dropped
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            committed = self.committed()
            data = os.pread(fd, os.fstat(fd).st_size, 0)
            kept, removed, before = self._without(data, ids, needles, committed)
            if removed:
                _replace_private(self.path, kept)
                self._write_offset(committed - before, os.stat(self.path).st_ino)
                dropped += removed
        finally:
            os.close(fd)
        return dropped

    def _without(self, data: bytes, ids: AbstractSet[str], needles: list[bytes],
                 committed: int) -> tuple[bytes, int, int]:
        """(the lines not of these events, lines dropped, bytes dropped before `committed`).
        Only lines where an id occurs are parsed: a 16 MB spool is not read line by line."""
        spans = set()
        for raw in (i.encode() for i in ids):
            at = data.find(raw)
            while at != -1:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", at)
                end = len(data) if end == -1 else end + 1
                spans.add((start, end))
                at = data.find(raw, end)
        drop = []
        for start, end in sorted(spans):
            line = data[start:end]
            event = self._parse(line.rstrip(b"\n")) if line.endswith(b"\n") else None
            if (event is not None and event.id in ids) or any(n in line for n in needles):
                drop.append((start, end))
        pieces, cursor, before = [], 0, 0
        for start, end in drop:
            pieces.append(data[cursor:start])
            cursor = end
            if end <= committed:
                before += end - start
        pieces.append(data[cursor:])
        return b"".join(pieces), len(drop), before


def _replace_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _counter(count: int) -> bytes:
    return str(count).ljust(LOST_WIDTH - 1).encode() + b"\n"


def _count(raw: bytes) -> int:
    text = raw.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else 0
