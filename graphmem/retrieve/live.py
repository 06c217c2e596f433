"""The live context of a search from an agent: the files and functions its session read and
edited (its spooled tool events) and the work tree's uncommitted changes, weighted by recency.

Edited spans are found in the file as it is now (an Edit's new text, an apply_patch hunk's new
side, a diff hunk's new lines) and mapped to the innermost functions around them by the code
parser. `derive` turns what was touched into weighted context; `SpoolTail` (with `touches_of`)
and `WorkTreeDiff` read the two sources, `LiveContext` puts them together for one checkout.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from graphmem import git
from graphmem.capture.compress import EDIT_TOOLS
from graphmem.capture.event import HookEvent
from graphmem.extract import code
from graphmem.staleness.gitimport import parse_patches

READ_TOOLS = frozenset({"Read", "read_file", "view", "NotebookRead"})
FILE_TOOLS = EDIT_TOOLS | READ_TOOLS
_FILE_TOOL = re.compile(b'"tool":"(?:' + b"|".join(re.escape(t.encode()) for t in FILE_TOOLS)
                        + b')"')
MAX_EVENTS = 400  # per session: the latest say what it is working on
# How much one touch says about what the agent is working on, by what it did.
ACTION_WEIGHT = {"edit": 1.0, "diff": 0.8, "read": 0.5}
RECENCY_DECAY = 0.85  # per step back in the order in which files were last touched
WEIGHT_FLOOR = 0.2
MAX_FILES = 8
MAX_SYMBOLS = 12
SPOOL_TAIL_BYTES = 2 << 20  # a session's recent events; older ones say less about now
MAX_FILE_BYTES = 2 << 20
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update) File: (.+)$")


@dataclass(frozen=True)
class Touch:
    """One file the agent worked on: what it did, when, and the line spans it changed."""

    path: str
    action: str  # edit | diff | read
    at: float
    spans: tuple[tuple[int, int], ...] = ()
    symbols: tuple[str, ...] = ()  # functions already known (a commit's, in the benchmarks)


@dataclass(frozen=True)
class ContextEntry:
    """A file or function in the live context, its weight and where it came from."""

    kind: str  # file | symbol
    name: str
    weight: float
    source: str

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "weight": round(self.weight, 3),
                "source": self.source}


# ----- deriving context ---------------------------------------------------------------------
def derive(touches: Iterable[Touch], symbols_at: Callable[[str, Sequence[tuple[int, int]]],
                                                          list[str]]) -> list[ContextEntry]:
    """Weighted files and functions from what the agent touched, the latest first.

    A file's weight is its strongest action's (edit > uncommitted diff > read) times
    RECENCY_DECAY per file touched after it; a function has the weight of the file it is in.
    `symbols_at(path, spans)` names the functions around changed lines."""
    latest: dict[str, list[Touch]] = {}
    for touch in sorted(touches, key=lambda t: -t.at):
        latest.setdefault(touch.path, []).append(touch)
    files: list[ContextEntry] = []
    symbols: dict[str, ContextEntry] = {}
    for position, (path, seen) in enumerate(latest.items()):
        if len(files) >= MAX_FILES:
            break
        strongest = max(seen, key=lambda t: ACTION_WEIGHT[t.action])
        weight = max(WEIGHT_FLOOR, ACTION_WEIGHT[strongest.action] * RECENCY_DECAY ** position)
        files.append(ContextEntry("file", path, weight, _source(seen, position)))
        for touch in seen:
            found = list(touch.symbols) or (symbols_at(path, touch.spans) if touch.spans else [])
            for name in found:
                if name not in symbols:
                    symbols[name] = ContextEntry("symbol", name, weight,
                                                 f"{_ACTION_NAMES[touch.action]} ({path})")
    ranked = sorted(symbols.values(), key=lambda e: -e.weight)[:MAX_SYMBOLS]
    return files + ranked


_ACTION_NAMES = {"edit": "edited in this session", "diff": "uncommitted change",
                 "read": "read in this session"}


def _source(seen: Sequence[Touch], position: int) -> str:
    actions = sorted({_ACTION_NAMES[t.action] for t in seen})
    return f"{', '.join(actions)}; {'latest file' if position == 0 else f'{position} files since'}"


class SymbolMap:
    """Functions around changed lines of files as they are on disk now (parsed once per
    version: a file is parsed again only when its size or mtime changes)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._versions: dict[str, tuple[tuple[int, int], bytes | None, code.CodeFile | None]] = {}
        self._lock = threading.Lock()

    def _version(self, path: str) -> tuple[bytes | None, code.CodeFile | None]:
        """The file's bytes and parse (None when missing, too big, or no code we parse)."""
        full = self.root / path
        try:
            stat = full.stat()
        except OSError:
            return None, None
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._versions.get(path)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        data, parsed = None, None
        if stat.st_size <= MAX_FILE_BYTES:
            try:
                data = full.read_bytes()
            except OSError:
                data = None
        if data is not None and Path(path).suffix.lower() in code.LANGUAGES:
            parsed = code.parse_source(path, data)
        with self._lock:
            self._versions[path] = (key, data, parsed)
        return data, parsed

    def file(self, path: str) -> code.CodeFile | None:
        return self._version(path)[1]

    def text(self, path: str) -> str | None:
        data = self._version(path)[0]
        return data.decode("utf-8", "replace") if data is not None else None

    def symbols_at(self, path: str, spans: Sequence[tuple[int, int]]) -> list[str]:
        parsed = self.file(path)
        if parsed is None:
            return []
        found: dict[str, None] = {}
        for start, end in spans:
            found.update((s.qualname, None) for s in code.symbols_touching(parsed, start, end))
        return list(found)


# ----- the session's tool events ------------------------------------------------------------
class SpoolTail:
    """The file tool events of a spool's recent tail, by session, read incrementally: each
    call parses only the lines appended since the last (a prompt must not re-read megabytes)."""

    def __init__(self, directory: Path, tail_bytes: int = SPOOL_TAIL_BYTES) -> None:
        self.path = directory / "events.jsonl"
        self.tail_bytes = tail_bytes
        self._inode = -1
        self._offset = 0
        self._events: dict[str, list[HookEvent]] = {}
        self._lock = threading.Lock()

    def events(self, session_id: str) -> list[HookEvent]:
        """The session's file tool events, oldest first."""
        with self._lock:
            self._refresh()
            return list(self._events.get(session_id, ()))

    def _refresh(self) -> None:
        try:
            stat = os.stat(self.path)
        except OSError:
            self._inode, self._offset, self._events = -1, 0, {}
            return
        if stat.st_ino != self._inode or stat.st_size < self._offset:  # new, rotated, rewritten
            self._inode, self._events = stat.st_ino, {}
            self._take(_tail_lines(self.path.with_name("events.1.jsonl"), self.tail_bytes // 2))
            self._offset = max(0, stat.st_size - self.tail_bytes)
            first = self._offset > 0
        elif stat.st_size == self._offset:
            return
        else:
            first = False
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read(stat.st_size - self._offset)
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        lines = data[:end].split(b"\n")
        self._take(lines[1:] if first else lines)  # a tail starts mid-line
        self._offset += end + 1

    def _take(self, lines: Iterable[bytes]) -> None:
        for raw in lines:
            if b'"post-tool"' not in raw or not _FILE_TOOL.search(raw):
                continue
            try:
                event = HookEvent.from_dict(json.loads(raw))
            except (ValueError, TypeError):
                continue
            if event.event == "post-tool" and event.tool in FILE_TOOLS and event.session_id:
                kept = self._events.setdefault(event.session_id, [])
                kept.append(event)
                del kept[:-MAX_EVENTS]


def latest_session(spool_dir: Path, checkout: str | None,
                   tail_bytes: int = SPOOL_TAIL_BYTES) -> str:
    """The session of the newest spooled event from this checkout ("" if none)."""
    for raw in reversed(_tail_lines(spool_dir / "events.jsonl", tail_bytes)):
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        where = (data.get("extra") or {}).get("work_tree") or data.get("project") or ""
        cwd = data.get("cwd") or ""
        if data.get("session_id") and (checkout is None or checkout in (where, cwd)
                                       or cwd.startswith(checkout.rstrip("/") + "/")):
            return str(data["session_id"])
    return ""


def _tail_lines(path: Path, budget: int) -> list[bytes]:
    """Complete lines of the file's last `budget` bytes."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - budget)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # cut in the middle of a line
    return [line for line in lines[:-1] if line.strip()]


def touches_of(events: Sequence[HookEvent], root: Path, files: SymbolMap) -> list[Touch]:
    """What each event touched, as paths relative to `root` with the spans it changed."""
    out: list[Touch] = []
    for event in events:
        if event.is_error:
            continue
        if event.tool == "apply_patch":
            for path, blocks in _patch_blocks(event.text).items():
                rel = _relative(path, root, event.cwd)
                if rel is not None:
                    out.append(Touch(rel, "edit", event.ts, _spans(files.text(rel), blocks)))
            continue
        action = "edit" if event.tool in EDIT_TOOLS else "read"
        for path in event.files:
            rel = _relative(str(path), root, event.cwd)
            if rel is None:
                continue
            spans: tuple[tuple[int, int], ...] = ()
            if action == "edit":
                spans = _spans(files.text(rel), [_new_side(event.text)])
            out.append(Touch(rel, action, event.ts, spans))
    return out


@functools.lru_cache(maxsize=4096)
def _relative(path: str, root: Path, cwd: str) -> str | None:
    """`path` relative to the checkout root, or None when it lies outside it."""
    full = os.path.realpath(os.path.join(cwd or str(root), path))
    base = os.path.realpath(root)
    if full != base and full.startswith(base.rstrip("/") + "/"):
        return full[len(base.rstrip("/")) + 1:]
    return None


def _new_side(diff_text: str) -> str:
    """The new text of an Edit as the spool keeps it ("-old" / "+new" lines)."""
    return "\n".join(line[1:] for line in diff_text.splitlines() if line.startswith("+"))


def _patch_blocks(patch: str) -> dict[str, list[str]]:
    """apply_patch text → {path: the new side of each hunk (context and added lines)}."""
    out: dict[str, list[str]] = {}
    path: str | None = None
    block: list[str] = []

    def close() -> None:
        if path is not None and any(line.strip() for line in block):
            out.setdefault(path, []).append("\n".join(block))
        block.clear()
    for line in patch.splitlines():
        match = _PATCH_FILE.match(line)
        if match or line.startswith("***"):
            close()
            path = match.group(1).strip() if match else None
        elif line.startswith("@@"):
            close()
        elif path is not None and line[:1] in ("+", " "):
            block.append(line[1:])
    close()
    return out


def _spans(text: str | None, blocks: Iterable[str]) -> tuple[tuple[int, int], ...]:
    """Line spans (1-based, inclusive) where each block of new text now stands in `text`."""
    if not text:
        return ()
    spans = []
    for block in blocks:
        block = block.strip("\n")
        at = text.find(block) if block.strip() else -1
        if at >= 0:
            first = text.count("\n", 0, at) + 1
            spans.append((first, first + block.count("\n")))
    return tuple(spans)


# ----- the work tree's uncommitted changes --------------------------------------------------
class WorkTreeDiff:
    """Changed line spans of the work tree against HEAD, by path.

    `git diff` costs tens of milliseconds, too much for every prompt: the answer is kept until
    HEAD, the index or one of the changed files (or a file the session touched) changes. A
    caller that cannot wait gets the last answer while a thread reads the new one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._key: tuple[object, ...] | None = None
        self._spans: dict[str, tuple[tuple[int, int], ...]] = {}
        self._lock = threading.Lock()
        self._reading: threading.Thread | None = None
        self.runs = 0  # git diffs run (what the cache saves is measured in bench_hooks)

    def spans(self, also_watch: Iterable[str] = (), wait: bool = True
              ) -> dict[str, tuple[tuple[int, int], ...]]:
        watch = list(also_watch)
        with self._lock:
            if self._state([*self._spans, *watch]) == self._key:
                return self._spans
            if self._reading is None or not self._reading.is_alive():
                self._reading = threading.Thread(target=self._refresh, args=(watch,),
                                                 name="graphmem-diff", daemon=True)
                self._reading.start()
            reading, stale = self._reading, self._spans
        if not wait:
            return stale
        reading.join()
        with self._lock:
            return self._spans

    def _refresh(self, watch: Sequence[str]) -> None:
        spans = self._read()
        with self._lock:
            self._spans = spans
            self._key = self._state([*spans, *watch])
            self.runs += 1

    def _state(self, paths: Iterable[str]) -> tuple[object, ...]:
        stamps: list[object] = [git.head_commit(self.root), _mtime(_index_path(self.root))]
        stamps += sorted((p, _mtime(self.root / p)) for p in set(paths))
        return tuple(stamps)

    def _read(self) -> dict[str, tuple[tuple[int, int], ...]]:
        try:
            done = git.run(["diff", "HEAD", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
                            "--src-prefix=a/", "--dst-prefix=b/"], self.root, parse=True)
        except git.GitUnavailable:
            return {}
        if done.returncode != 0:
            return {}
        diffs = dict(parse_patches(b"\x01" + git.ZERO.encode() + b"\n" + done.stdout))
        hunks = diffs[git.ZERO].hunks if git.ZERO in diffs else {}
        return {path: tuple((c, c + d - 1) if d else (c, c) for _, _, c, d in found)
                for path, found in hunks.items()}


def _index_path(root: Path) -> Path:
    dot_git = root / ".git"
    if dot_git.is_file():  # a linked worktree: "gitdir: <path>"
        text = dot_git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            return Path(text[7:].strip()) / "index"
    return dot_git / "index"


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


# ----- one checkout's live context ----------------------------------------------------------
class LiveContext:
    """The live context of searches from one checkout (parsed files and the diff cached)."""

    def __init__(self, root: Path, spool_dir: Path) -> None:
        self.root = root
        self.spool_dir = spool_dir
        self.files = SymbolMap(root)
        self.diff = WorkTreeDiff(root)
        self.spool = SpoolTail(spool_dir)

    def entries(self, session_id: str = "", wait: bool = True,
                ingested: Callable[[], Sequence[str]] = tuple) -> list[ContextEntry]:
        """The session's touches and the uncommitted changes, as weighted context. A session
        with no file events here (an MCP server may know none, or an id from before a /clear)
        gives way to the files `ingested` says it touched (its events already in the store,
        latest first), then to the latest session of this checkout. `wait=False`: the
        uncommitted changes as last read if git is still reading them (the prompt hook's
        budget is too short)."""
        events = self.spool.events(session_id) if session_id else []
        known = list(ingested()) if session_id and not events else []
        if not events and not known:
            latest = latest_session(self.spool_dir, str(self.root))
            events = self.spool.events(latest) if latest else []
        touches = touches_of(events, self.root, self.files)
        touches += [Touch(path, "edit", -float(n)) for n, path in enumerate(known)]
        if (self.root / ".git").exists():
            changed = self.diff.spans([t.path for t in touches], wait)
            touches += [Touch(path, "diff", _mtime(self.root / path) / 1e9, spans)
                        for path, spans in changed.items()]
        return derive(touches, self.files.symbols_at)


_LIVE: dict[tuple[str, str], LiveContext] = {}
_LIVE_LOCK = threading.Lock()


def for_checkout(root: Path, spool_dir: Path) -> LiveContext:
    """The cached live context of a checkout (one per checkout and store, per process)."""
    key = (str(root), str(spool_dir))
    with _LIVE_LOCK:
        found = _LIVE.get(key)
        if found is None:
            found = _LIVE[key] = LiveContext(root, spool_dir)
        return found
