"""Staleness: anchors' content hashes against git — diff, re-hash, mark stale, follow, verify.

An item is anchored (ANCHORED_TO) to files and symbols with the content hash it saw. The hash
is the code index's one (extract/code.py): of syntax-tree tokens, so comment and formatting edits
never count, and a class's covers its own lines, not its methods'. Rules, in the order they apply:

- Only what changed is re-hashed: the paths of `git diff-tree -r -M` (a commit), `git diff -M A B`
  (a range) or the work tree against HEAD; their new versions come from `git cat-file --batch`
  (or the disk), are parsed with `code.parse_source` and replace the File/Symbol entities in the
  graph. Item anchors keep the hash they saw; entities get the new one.
- A renamed file (git rename detection) moves its anchors and mentions to the new path. A symbol
  that vanished from a changed file follows a symbol that appeared in the same diff with the
  same body hash and the same name (moved) or in the same file (renamed) — when that match is
  unique. Otherwise it was deleted: its entity stays with an empty hash while items point at it.
- Python code that only changed the way a formatter changes it (quotes, parentheses, trailing
  commas, line wrapping: the same `ast.dump` before and after) rolls an anchor that saw the
  old version forward to the new hash instead of staling it.
- An item is stale when any anchor it is judged by differs from its entity's hash; a file anchor
  counts only when the item anchors no symbol in that file. The reason names the first change
  ("`parse_config` in src/config.py changed in a1b2c3d: 12 lines", "... deleted in a1b2c3d");
  over several commits (a merge), the commit of the range that changed that code
  (attribution.py). An item staled this way becomes active again when its code returns to what it
  saw (a revert, a branch switched back); items staled by hand are left alone.
- The graph remembers which commit its code entities reflect (`staleness.json` in the store
  dir). An update starts from there when it knows it, so missed hooks, amends, rebases and
  branch switches all converge to the right state, and a late hook for an older commit is a
  no-op.

Functions take a `Memory` (service.py); results are plain dicts so the owner can send them.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from graphmem import codeindex
from graphmem.errors import InvalidInput
from graphmem.extract import code
from graphmem.extract.code import CodeFile, CodeSymbol
from graphmem.git import ZERO, Change, Git, NotARepo
from graphmem.paths import find_project, work_tree, write_private
from graphmem.staleness import attribution
from graphmem.staleness.kept import Kept
from graphmem.store import ops
from graphmem.store.base import ItemFilter

STATE_NAME = "staleness.json"
MAX_BYTES = 1_000_000
WORKTREE = "the work tree"
_AUTO_REASON = re.compile(r" (?:changed|deleted) in (?:the work tree|[0-9a-f]{7,40})\b")
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


class StaleReport(TypedDict):
    """What an update did: the diff it used, what it re-hashed, what went stale or fresh."""

    base: str
    target: str
    files: int
    parsed: int
    anchors_checked: int
    followed: int
    stale: list[dict[str, str]]
    fresh: list[str]
    entities: int
    seconds: float
    message: str


# ----- versions of files --------------------------------------------------------------------
def parse_version(path: str, data: bytes | None) -> CodeFile | None:
    """A file's bytes as the code index sees them (binary or huge files: hash only)."""
    if data is None:
        return None
    if len(data) > MAX_BYTES or b"\0" in data[:8192]:
        return code.parse_source(path, data, language="")
    return code.parse_source(path, data)


class Versions:
    """Blobs and their parses, cached by object id (content-addressed, so always valid)."""

    def __init__(self, git: Git, max_bytes: int = 64 << 20, limit: int = 4096,
                 kept: Kept | None = None) -> None:
        self.git = git
        self.kept = kept
        self.max_bytes = max_bytes
        self.limit = limit
        self._bytes = 0
        self._data: dict[str, bytes | None] = {}
        self._code: dict[tuple[str, str], CodeFile | None] = {}
        self._at: dict[tuple[str, str], str | None] = {}

    def _remember(self, blob: str, data: bytes | None) -> None:
        self._data[blob] = data
        self._bytes += len(data or b"")
        while self._bytes > self.max_bytes and len(self._data) > 1:
            oldest = next(iter(self._data))
            self._bytes -= len(self._data.pop(oldest) or b"")

    def data(self, blob: str, path: str) -> bytes | None:
        if not blob:
            return None
        if blob == ZERO:
            return self._disk(path)
        if blob not in self._data:
            found = self.git.read(blob)
            self._remember(blob, found[1] if found else None)
        return self._data[blob]

    def _disk(self, path: str) -> bytes | None:
        target = self.git.root / path
        try:
            if target.is_symlink() or not target.is_file():
                return None
            return target.read_bytes()
        except OSError:
            return None

    def code(self, blob: str, path: str) -> CodeFile | None:
        if blob == ZERO:
            return parse_version(path, self._disk(path))
        key = (blob, path)
        if key not in self._code:
            if len(self._code) >= self.limit:
                self._code.pop(next(iter(self._code)))
            found = self.kept.get(blob, path) if self.kept is not None else None
            if found is None:
                found = parse_version(path, self.data(blob, path))
                if found is not None and self.kept is not None:
                    self.kept.put(blob, path, found)
            self._code[key] = found
        return self._code[key]

    def blob_at(self, commit: str, path: str) -> str | None:
        """The blob id of path at a commit (None when absent), remembering its content."""
        key = (commit, path)
        if key not in self._at:
            found = self.git.read(f"{commit}:{path}")
            if found is not None and found[0] not in self._data:
                self._remember(found[0], found[1])
            self._at[key] = found[0] if found else None
        return self._at[key]


# ----- anchors and the replay engine ----------------------------------------------------------
def local_name(symbol: CodeSymbol) -> str:
    """A symbol's name within its file (`Class.method`)."""
    return symbol.qualname[len(symbol.path) + 2:]


def entity_key(kind: str, path: str, local: str = "") -> str:
    return f"file:{path}" if kind == "file" else f"symbol:{path}::{local}"


def _short_name(local: str) -> str:
    return local.rsplit(".", 1)[-1].split("#", 1)[0]


@dataclass
class Anchor:
    """One item→entity anchor as the engine tracks it."""

    item: str
    kind: str
    path: str
    local: str
    hash: str
    commit: str = ""
    at: float = 0.0
    origin: str | None = None  # the entity id it has in the graph (None: not written yet)
    reason: str | None = None  # None unchecked, "" matches, else why it is stale
    rehashed: bool = False  # rolled forward over a formatting-only change

    @property
    def entity(self) -> str:
        return entity_key(self.kind, self.path, self.local)

    @property
    def what(self) -> str:
        return f"`{self.local}` in {self.path}" if self.kind == "symbol" else self.path


def _by_local(file: CodeFile | None) -> dict[str, CodeSymbol]:
    return {local_name(s): s for s in file.symbols} if file is not None else {}


def _lines(data: bytes | None, start: int = 1, end: int | None = None) -> list[bytes]:
    if not data:
        return []
    lines = data.splitlines()
    return lines[start - 1:end] if end is not None else lines[start - 1:]


def _lines_note(count: int) -> str:
    return "" if not count else f": {count} line" if count == 1 else f": {count} lines"


def changed_lines(old: list[bytes], new: list[bytes]) -> int:
    """Lines added, removed or rewritten between two texts (a rewritten line counts once)."""
    if not old or not new:
        return max(len(old), len(new))
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
               if tag != "equal")


@dataclass
class Tracker:
    """Replays diffs over anchors: follows renames, re-hashes, records why anchors went stale."""

    git: Git
    versions: Versions
    by_path: dict[str, list[Anchor]] = field(default_factory=dict)
    current: dict[str, CodeFile | None] = field(default_factory=dict)
    blobs: dict[str, str | None] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    moved: dict[str, str] = field(default_factory=dict)
    path_moves: dict[str, str] = field(default_factory=dict)
    touches: dict[str, set[str]] = field(default_factory=dict)
    checked: int = 0
    followed: int = 0
    parsed: int = 0
    record_touches: bool = True

    def add(self, anchor: Anchor) -> None:
        self.by_path.setdefault(anchor.path, []).append(anchor)

    def anchors(self) -> Iterator[Anchor]:
        for group in self.by_path.values():
            yield from group

    def step(self, changes: Sequence[Change], shas: dict[str, str] | None = None,
             default: str = "") -> None:
        """Apply one diff; `shas` names the commit that changed each new path (default: `default`,
        "" for the work tree)."""
        shas = shas or {}
        olds: dict[str, CodeFile | None] = {}
        news: dict[str, CodeFile | None] = {}
        for c in changes:
            if not c.added:
                olds[c.old_path] = self.versions.code(c.old_blob, c.old_path)
            if not c.deleted:
                news[c.new_path] = self.versions.code(c.new_blob, c.new_path)
        self.parsed += len(olds) + len(news)
        follow = self._follow_map(changes, olds, news)
        pending: list[tuple[Change, list[Anchor]]] = []
        for c in changes:
            key = c.new_path if c.added else c.old_path
            pending.append((c, self.by_path.pop(key, [])))
        for c, group in pending:
            sha = shas.get(c.new_path or c.old_path) or default
            old, new = olds.get(c.old_path), news.get(c.new_path)
            old_syms, new_syms = _by_local(old), _by_local(new)
            self._note_entities(c, old_syms, new_syms, follow, sha)
            lines = _LineCache(self.versions, c)
            for anchor in group:
                self._recheck(anchor, c, old, new, old_syms, new_syms, follow, lines,
                              sha[:7] if sha else WORKTREE)
        for c in changes:
            if c.old_path and c.old_path != c.new_path:
                self.current[c.old_path] = None
                self.blobs[c.old_path] = None
            if not c.deleted:
                self.current[c.new_path] = news[c.new_path]
                self.blobs[c.new_path] = c.new_blob

    def _follow_map(self, changes: Sequence[Change], olds: dict[str, CodeFile | None],
                    news: dict[str, CodeFile | None]) -> dict[str, CodeSymbol]:
        """Vanished symbol entity -> the symbol it became (same body, same name or same file)."""
        appeared: dict[str, list[CodeSymbol]] = {}
        vanished: list[tuple[Change, str, CodeSymbol]] = []
        for c in changes:
            old_syms = _by_local(olds.get(c.old_path)) if not c.added else {}
            new_syms = _by_local(news.get(c.new_path)) if not c.deleted else {}
            for local, sym in new_syms.items():
                if local not in old_syms:
                    appeared.setdefault(sym.body_hash, []).append(sym)
            for local, sym in old_syms.items():
                if local not in new_syms:
                    vanished.append((c, local, sym))
        follow: dict[str, CodeSymbol] = {}
        taken: dict[str, int] = {}
        for c, local, sym in vanished:
            candidates = [s for s in appeared.get(sym.body_hash, ())
                          if s.name == sym.name or s.path == (c.new_path or c.old_path)]
            if len(candidates) > 1:
                candidates = [s for s in candidates if s.name == sym.name and
                              s.path == (c.new_path or c.old_path)] or candidates
            if len(candidates) == 1:
                follow[entity_key("symbol", c.old_path, local)] = candidates[0]
                taken[candidates[0].qualname] = taken.get(candidates[0].qualname, 0) + 1
        # two vanished symbols claiming one new symbol: neither is followed (ambiguous)
        return {k: v for k, v in follow.items() if taken[v.qualname] == 1}

    def _note_entities(self, c: Change, old_syms: dict[str, CodeSymbol],
                       new_syms: dict[str, CodeSymbol], follow: dict[str, CodeSymbol],
                       sha: str) -> None:
        """Entities that vanished or moved, and what the commit touched."""
        if c.old_path and c.old_path != c.new_path:
            self.gone.add(entity_key("file", c.old_path))
            if c.new_path:
                self._move(entity_key("file", c.old_path), entity_key("file", c.new_path))
                self._move_path(c.old_path, c.new_path)
        for local in old_syms:
            old_id = entity_key("symbol", c.old_path, local)
            if c.new_path and local in new_syms:
                if c.new_path != c.old_path:
                    self.gone.add(old_id)
                    self._move(old_id, entity_key("symbol", c.new_path, local))
            else:
                self.gone.add(old_id)
                target = follow.get(old_id)
                if target is not None:
                    self._move(old_id, f"symbol:{target.qualname}")
        if self.record_touches and sha and c.new_path:
            touched = self.touches.setdefault(sha, set())
            touched.add(entity_key("file", c.new_path))
            for local, sym in new_syms.items():
                before = old_syms.get(local)
                if before is None or before.body_hash != sym.body_hash:
                    touched.add(f"symbol:{sym.qualname}")

    def _move(self, old: str, new: str) -> None:
        for key, value in list(self.moved.items()):
            if value == old:
                self.moved[key] = new
        if old != new:
            self.moved[old] = new
        self.moved.pop(new, None)

    def _move_path(self, old: str, new: str) -> None:
        for key, value in list(self.path_moves.items()):
            if value == old:
                self.path_moves[key] = new
        self.path_moves[old] = new
        self.path_moves.pop(new, None)

    def _recheck(self, anchor: Anchor, c: Change, old: CodeFile | None, new: CodeFile | None,
                 old_syms: dict[str, CodeSymbol], new_syms: dict[str, CodeSymbol],
                 follow: dict[str, CodeSymbol], lines: _LineCache, label: str) -> None:
        self.checked += 1
        span_old: tuple[int, int] | None = None
        span_new: tuple[int, int] | None = None
        new_hash: str | None = None
        base_hash: str | None = None
        if anchor.kind == "file":
            if new is not None:
                anchor.path = c.new_path
                new_hash = new.content_hash
                base_hash = old.content_hash if old is not None else None
                span_old, span_new = (1, 10**9), (1, 10**9)
        else:
            old_sym = old_syms.get(anchor.local)
            sym = new_syms.get(anchor.local) if new is not None else None
            if sym is None:
                sym = follow.get(entity_key("symbol", c.old_path or c.new_path, anchor.local))
                if sym is not None:
                    self.followed += 1
            if sym is not None:
                anchor.path, anchor.local = sym.path, local_name(sym)
                new_hash = sym.body_hash
                span_new = (sym.start_line, sym.end_line)
                if old_sym is not None:
                    span_old = (old_sym.start_line, old_sym.end_line)
                    base_hash = old_sym.body_hash
        self.add(anchor)
        if new_hash is None:
            if not (anchor.reason and " deleted in " in anchor.reason):
                anchor.reason = f"{anchor.what} deleted in {label}"
        elif new_hash == anchor.hash:
            anchor.reason = ""
        elif (base_hash == anchor.hash and new is not None and new.language == "python"
              and lines.same_python(span_old, span_new)):
            # the anchor saw the old version and Python parses both alike: formatting only
            anchor.hash, anchor.rehashed, anchor.reason = new_hash, True, ""
        elif not anchor.reason:
            count = lines.changed(span_old, span_new)
            anchor.reason = f"{anchor.what} changed in {label}" + _lines_note(count)

    def check_new(self, anchor: Anchor, at_commit: str, label: str) -> None:
        """A freshly made anchor against the replay's current version of its file."""
        self.add(anchor)
        if anchor.path not in self.current:
            blob = self.versions.blob_at(at_commit, anchor.path)
            self.current[anchor.path] = self.versions.code(blob, anchor.path) if blob else None
            self.blobs[anchor.path] = blob
        version = self.current[anchor.path]
        if anchor.kind == "file":
            now = version.content_hash if version is not None else None
        else:
            sym = _by_local(version).get(anchor.local)
            now = sym.body_hash if sym is not None else None
        if now is None:
            anchor.reason = f"{anchor.what} deleted in {label}"
        else:
            anchor.reason = "" if now == anchor.hash else f"{anchor.what} changed in {label}"


class _LineCache:
    """The old and new text of one change, split once, for counting changed lines."""

    def __init__(self, versions: Versions, change: Change) -> None:
        self.versions = versions
        self.change = change
        self._old: list[bytes] | None = None
        self._new: list[bytes] | None = None
        self._dumps: dict[tuple[bool, tuple[int, int]], str | None] = {}

    def _spans(self, old: tuple[int, int] | None,
               new: tuple[int, int] | None) -> tuple[list[bytes], list[bytes]]:
        c = self.change
        if self._old is None or self._new is None:
            self._old = _lines(self.versions.data(c.old_blob, c.old_path)) if not c.added else []
            self._new = _lines(self.versions.data(c.new_blob, c.new_path)) if not c.deleted else []
        before = self._old[old[0] - 1:old[1]] if old else []
        after = self._new[new[0] - 1:new[1]] if new else []
        return before, after

    def changed(self, old: tuple[int, int] | None, new: tuple[int, int] | None) -> int:
        return changed_lines(*self._spans(old, new))

    def same_python(self, old: tuple[int, int] | None, new: tuple[int, int] | None) -> bool:
        """True if both spans parse to the same Python AST (quotes, parentheses, wrapping)."""
        if old is None or new is None:
            return False
        before, after = self._spans(old, new)
        if not before or not after:
            return False
        # several anchors share a symbol: dump each span once
        for key, lines in (((False, old), before), ((True, new), after)):
            if key not in self._dumps:
                self._dumps[key] = _python_dump_or_none(lines)
        dump = self._dumps[(False, old)]
        return dump is not None and dump == self._dumps[(True, new)]


def _python_dump(lines: list[bytes]) -> str:
    text = b"\n".join(lines)
    if lines and lines[0][:1] in (b" ", b"\t"):  # a method or nested def: give it a block
        text = b"if 1:\n" + text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.dump(ast.parse(text), include_attributes=False)


def _python_dump_or_none(lines: list[bytes]) -> str | None:
    try:
        return _python_dump(lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def python_equal(before: list[bytes], after: list[bytes]) -> bool:
    """Same Python AST for two snippets (False when either does not parse)."""
    if not before or not after:
        return False
    dump = _python_dump_or_none(before)
    return dump is not None and dump == _python_dump_or_none(after)


# ----- writing the outcome to the graph ------------------------------------------------------
def placeholder(eid: str) -> dict[str, Any]:
    """An entity for code that no longer exists but that items still point at (hash "")."""
    kind, _, key = eid.partition(":")
    path, _, local = key.partition("::") if kind == "symbol" else (key, "", "")
    return {"id": eid, "kind": kind, "name": _short_name(local) if kind == "symbol" else path,
            "path": path, "qualname": key if kind == "symbol" else "", "language": "",
            "start_line": 0, "end_line": 0, "hash": "", "resolved": True}


def _version_rows(files: Iterable[CodeFile]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                       list[dict[str, Any]]]:
    entities, defined, contains = [], [], []
    for f in files:
        entities.append(codeindex.file_entity(f))
        for s in f.symbols:
            entities.append(codeindex.symbol_entity(s, f.language))
            defined.append({"source": f"symbol:{s.qualname}", "target": f"file:{f.path}"})
            if s.parent:
                contains.append({"source": f"symbol:{s.parent}", "target": f"symbol:{s.qualname}"})
    return entities, defined, contains


def commit_entity(sha: str) -> dict[str, Any]:
    return {"id": f"commit:{sha}", "kind": "commit", "name": sha[:12], "path": "", "qualname": "",
            "language": "", "start_line": 0, "end_line": 0, "hash": "", "resolved": True}


def chunks(rows: Sequence[Any], size: int = 2000) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def _write_tracker(memory: Any, tracker: Tracker) -> int:
    """Entities of the new versions, moved anchors and mentions, vanished code, TOUCHES."""
    store = memory.store
    live = [f for f in tracker.current.values() if f is not None]
    entities, defined, contains = _version_rows(live)
    current_ids = {row["id"] for row in entities}
    anchored = {a.entity for a in tracker.anchors()}
    gone = tracker.gone - current_ids
    movers = set(tracker.moved)  # every anchor and mention of these moves with them
    known = store.entity_hashes(sorted(current_ids | anchored | gone))
    linked = store.linked_entity_ids(sorted(gone - movers)) if gone - movers else set()
    # edges from a symbol to its file only need writing for symbols the graph did not have
    defined = [r for r in defined if r["source"] not in known]
    contains = [r for r in contains if r["target"] not in known]
    # code that no longer exists but that items point at stays, with an empty hash
    keep = sorted(((anchored - current_ids) | (linked - current_ids)) - movers)
    placeholders = [placeholder(eid) for eid in keep if known.get(eid, "x")]
    commits = [commit_entity(sha) for sha in tracker.touches if _SHA.fullmatch(sha)]
    for chunk in chunks(entities + placeholders + commits):
        memory.writer.write(ops.PutEntities(list(chunk)))
    for kind, rows in (("DEFINED_IN", defined), ("CONTAINS", contains)):
        for chunk in chunks(rows):
            memory.writer.write(ops.PutLinks(kind, list(chunk)))
    # anchors that moved (renames, follows) keep what they saw; rehashed ones roll forward
    rewrite = [a for a in tracker.anchors()
               if a.origin is not None and (a.origin != a.entity or a.rehashed)]
    moved = [a for a in rewrite if a.origin != a.entity]
    if rewrite:
        memory.writer.write(ops.PutLinks("ANCHORED_TO", [
            {"source": a.item, "target": a.entity, "hash": a.hash, "commit": a.commit, "at": a.at}
            for a in rewrite]))
    if moved:
        memory.writer.write(ops.DeleteLinks("ANCHORED_TO", [a.item for a in moved],
                                            [str(a.origin) for a in moved]))
    for a in rewrite:
        a.origin, a.rehashed = a.entity, False
    mention_moves = {old: new for old, new in tracker.moved.items() if new in current_ids}
    rows = store.mentions_of(sorted(mention_moves)) if mention_moves else []
    if rows:
        memory.writer.write(ops.PutLinks("MENTIONS", [
            {"source": r["item"], "target": mention_moves[r["entity"]], "weight": r["weight"],
             "surface": r["surface"]} for r in rows]))
        memory.writer.write(ops.DeleteLinks("MENTIONS", [r["item"] for r in rows],
                                            [r["entity"] for r in rows]))
    unlinked = sorted(g for g in gone if g in known and g not in keep)
    for chunk in chunks(unlinked):
        memory.writer.write(ops.DeleteEntities(list(chunk)))
    touch_rows = [{"source": f"commit:{sha}", "target": eid}
                  for sha, eids in tracker.touches.items() for eid in sorted(eids)
                  if eid in current_ids and _SHA.fullmatch(sha)]
    for chunk in chunks(touch_rows):
        memory.writer.write(ops.PutLinks("TOUCHES", list(chunk)))
    return len(entities)


def _attribute(tracker: Tracker, steps: list[attribution.Step], target: str
               ) -> dict[tuple[str, str], int]:
    """Name each changed anchor's reason after the commit of the range that changed its code;
    returns each such anchor's position in the range (for the earliest-first reason)."""
    position = {step.sha: n for n, step in enumerate(steps)}
    order: dict[tuple[str, str], int] = {}
    found: dict[tuple[str, str, str], str | None] = {}
    for a in tracker.anchors():
        if not a.reason or a.origin is None:
            continue
        kind, _, key = a.origin.partition(":")
        path, _, local = key.partition("::")
        if (kind, path, local) not in found:
            found[(kind, path, local)] = attribution.first_change(tracker.versions, steps, kind,
                                                                  path, local)
        sha = found[(kind, path, local)] or target
        verb = "deleted" if " deleted in " in a.reason else "changed"
        a.reason = _AUTO_REASON.sub(f" {verb} in {sha[:7]}", a.reason, count=1)
        order[(a.item, a.entity)] = position.get(sha, len(steps))
    return order


def is_auto_reason(reason: str) -> bool:
    """True for stale reasons written by this module (so a revert may clear them)."""
    return bool(_AUTO_REASON.search(reason or ""))


def judged(anchors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The anchors an item is judged by: a file anchor counts only for an item that anchors no
    symbol in that file (one that names a function is about the function, not its siblings)."""
    specific = {a["path"] for a in anchors if a["kind"] == "symbol"}
    return [a for a in anchors if a["kind"] != "file" or a["path"] not in specific]


def settle(memory: Any, item_ids: Iterable[str], reasons: dict[tuple[str, str], str] | None = None,
           label: str = WORKTREE, order: dict[tuple[str, str], int] | None = None
           ) -> tuple[list[dict[str, str]], list[str]]:
    """Set items' status from their anchors as the graph now has them (edge hash vs entity hash).

    Active items with a differing anchor become stale (reason from `reasons` when the caller
    knows it, the earliest change by `order` first); items this module staled become active
    once every anchor matches again. Returns (newly stale [{id, title, reason}], reactivated ids).
    """
    reasons, order = reasons or {}, order or {}
    ids = sorted(set(item_ids))
    rows: list[dict[str, Any]] = []
    for chunk in chunks(ids, 5000):
        rows += memory.store.anchors_of_items(list(chunk))
    by_item: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_item.setdefault(row["item"], []).append(row)
    to_stale: dict[str, str] = {}
    stale_out: list[dict[str, str]] = []
    fresh: list[str] = []
    for item_id, anchors in sorted(by_item.items()):
        first = anchors[0]
        differing = sorted((a for a in judged(anchors) if a["seen"] and a["seen"] != a["current"]),
                           key=lambda a: order.get((item_id, a["entity"]), 0))
        if first["status"] == "active" and differing:
            why = [reasons.get((item_id, a["entity"])) or _generic_reason(a, label)
                   for a in differing]
            reason = why[0] + (f" (and {len(why) - 1} more)" if len(why) > 1 else "")
            to_stale[item_id] = reason
            stale_out.append({"id": item_id, "title": first["title"], "reason": reason})
        elif first["status"] == "stale" and not differing and is_auto_reason(first["reason"]):
            fresh.append(item_id)
    rows = [{"id": i, "status": "stale", "stale_reason": r} for i, r in sorted(to_stale.items())]
    rows += [{"id": i, "status": "active", "stale_reason": ""} for i in fresh]
    for chunk in chunks(rows, 5000):  # one journal op and one transaction for the whole update
        memory.writer.write(ops.SetItemStatus(list(chunk)))
    return stale_out, fresh


def _generic_reason(anchor: dict[str, Any], label: str) -> str:
    what = (f"`{anchor['qualname'][len(anchor['path']) + 2:]}` in {anchor['path']}"
            if anchor["kind"] == "symbol" else anchor["path"])
    verb = "deleted" if not anchor["current"] else "changed"
    return f"{what} {verb} in {label}"


# ----- the hashing scheme --------------------------------------------------------------------
def migrate_hashes(memory: Any, git: Git | None = None, at: str | None = None) -> int:
    """Move a store's anchors made by an older hashing scheme onto this one (code.HASHES): each
    anchor that matched its code (fresh) gets the new hash of that code at commit `at` (else
    the commit the store reflects, else HEAD; the work tree outside git); stale ones keep
    theirs. Once per store; returns how many anchors moved."""
    if load_state(memory).get("hashes") == code.HASHES:
        return 0
    rows = memory.store.anchors_of_items(None)
    moved = 0
    if rows:
        own = git is None
        try:
            git = git or Git.open(work_root(memory))
        except NotARepo:
            git = None
        try:
            if git is not None and at is None:
                at = _synced_commit(memory, git) or git.head()
            moved = _rehash(memory, git, at, rows)
        finally:
            if own and git is not None:
                git.close()
    save_state(memory, hashes=code.HASHES)
    return moved


def _rehash(memory: Any, git: Git | None, commit: str | None, rows: list[dict[str, Any]]) -> int:
    versions = Versions(git) if git is not None else None
    files: list[CodeFile] = []
    for path in sorted({r["path"] for r in rows if r["path"]}):
        if versions is not None and commit:
            blob = versions.blob_at(commit, path)
            version = versions.code(blob, path) if blob else None
        else:
            target = Path(work_root(memory)) / path
            version = parse_version(path, target.read_bytes()) if target.is_file() else None
        if version is not None:
            files.append(version)
    entities, _, _ = _version_rows(files)
    now = {row["id"]: row["hash"] for row in entities}
    links = [{"source": r["item"], "target": r["entity"], "hash": now[r["entity"]],
              "commit": r["commit"], "at": r["at"]}
             for r in rows if r["seen"] and r["seen"] == r["current"] and r["entity"] in now]
    for chunk in chunks(entities):
        memory.writer.write(ops.PutEntities(list(chunk)))
    for chunk in chunks(links):
        memory.writer.write(ops.PutLinks("ANCHORED_TO", list(chunk)))
    return len(links)


# ----- the synced-commit state ---------------------------------------------------------------
def _state_path(memory: Any) -> Path:
    return Path(memory.dir) / STATE_NAME


def load_state(memory: Any) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(memory).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _synced_commit(memory: Any, git: Git) -> str | None:
    """The commit this checkout's code was last applied at. Kept per checkout: linked worktrees
    share the store but not HEAD, and a diff from another branch's commit would carry that
    branch's changes into this one (a store from before kept one commit, the main checkout's)."""
    state = load_state(memory)
    per_checkout = state.get("synced_in")
    synced = per_checkout.get(str(git.root)) if isinstance(per_checkout, dict) else None
    if synced is None and find_project(git.root).root == Path(git.root).resolve():
        synced = state.get("synced")
    return git.rev(synced) if isinstance(synced, str) and synced else None


def _save_synced(memory: Any, git: Git, commit: str) -> None:
    per_checkout = load_state(memory).get("synced_in")
    per_checkout = dict(per_checkout) if isinstance(per_checkout, dict) else {}
    save_state(memory, synced_in={**per_checkout, str(git.root): commit})


def save_state(memory: Any, **values: Any) -> None:
    path = _state_path(memory)
    write_private(path, json.dumps({**load_state(memory), **values, "at": time.time()}))


# ----- public verbs ------------------------------------------------------------------------
def work_root(memory: Any, repo: str | os.PathLike[str] | None = None) -> Path:
    """Where git runs for a memory: the given checkout, else the caller's (an owner serves
    clients in several linked worktrees, each with its own HEAD and files), else the config's
    cwd, else the checkout this process runs in when it belongs to the project, else the
    project root."""
    chosen = repo or getattr(memory, "checkout", None) or memory.config.cwd
    if chosen:
        return Path(chosen)
    here = work_tree()
    return here if here is not None and find_project(here).root == memory.ref.root else Path(
        memory.ref.root)


def _report(base: str, target: str, message: str, started: float, **rest: Any) -> StaleReport:
    report: StaleReport = {"base": base, "target": target, "files": 0, "parsed": 0,
                           "anchors_checked": 0, "followed": 0, "stale": [], "fresh": [],
                           "entities": 0, "seconds": 0.0, "message": message}
    report.update(rest)  # type: ignore[typeddict-item]
    report["seconds"] = round(time.perf_counter() - started, 4)
    return report


def update_stale(memory: Any, *, commit: str | None = None, rev_range: str | None = None,
                 worktree: bool = False, repo: str | os.PathLike[str] | None = None) -> StaleReport:
    """Re-hash the code a commit, range or the work tree changed; mark anchored items stale."""
    started = time.perf_counter()
    chosen = sum(bool(x) for x in (commit, rev_range, worktree))
    if chosen > 1:
        raise InvalidInput("give one of --commit, --range or --worktree")
    with Git.open(work_root(memory, repo)) as git:
        head = git.head()
        if worktree:
            base, target = head, None
        elif rev_range:
            left, sep, right = rev_range.partition("..")
            if not sep or right.startswith("."):
                raise InvalidInput(f"a range is A..B, not {rev_range!r}")
            base, target = git.rev(left or "HEAD"), git.rev(right or "HEAD")
            if base is None or target is None:
                if head is None:
                    return _report("", "", "no commits yet: nothing to compare", started)
                raise InvalidInput(f"unknown revision in {rev_range!r}")
        else:
            target = git.rev(commit or "HEAD")
            if target is None:
                if head is None:
                    return _report("", "", "no commits yet: nothing to compare", started)
                raise InvalidInput(f"unknown commit {commit!r}")
            base = git.parent(target)
        shas: dict[str, str] = {}
        steps: list[attribution.Step] = []
        if target is not None:
            synced = _synced_commit(memory, git)
            if synced and synced != base:
                if synced == target:
                    return _report(base or "", target, "already up to date", started)
                if head == synced and git.is_ancestor(target, synced):
                    return _report(base or "", target,
                                   "already applied: the graph reflects a newer commit", started)
                base = synced
            # the diff spans several commits (a merge, missed hooks): name the ones that changed
            if base is not None and (git.parent(target) != base or git.rev(f"{target}^2")):
                steps = attribution.range_steps(git, base, target)
                shas = attribution.newest_by_path(steps)
        migrate_hashes(memory, git, base or head)
        changes = git.raw_diff(base, target)
        kept = Kept(Path(memory.dir))
        tracker = Tracker(git, Versions(git, kept=kept))
        paths = sorted({p for c in changes for p in (c.old_path, c.new_path) if p})
        was_stale: set[str] = set()
        for row in memory.store.anchors_on_paths(paths) if paths else []:
            if row["status"] == "stale":
                was_stale.add(row["item"])
            tracker.add(Anchor(item=row["item"], kind=row["kind"], path=row["path"],
                               local=row["qualname"][len(row["path"]) + 2:],
                               hash=row["seen"], commit=row["commit"], at=row["at"],
                               origin=row["entity"]))
        tracker.step(changes, shas, target or "")
        order = _attribute(tracker, steps, target) if steps and target else {}
        entities = _write_tracker(memory, tracker)
        reasons = {(a.item, a.entity): a.reason for a in tracker.anchors() if a.reason}
        # only items that may change: a touched anchor differs now, or the item is stale
        candidates = {item for item, _ in reasons} | was_stale
        stale, fresh = settle(memory, candidates, reasons, target[:7] if target else WORKTREE,
                              order)
        if target is not None:
            _save_synced(memory, git, target)
        kept.prune()
        message = f"{len(changes)} changed file(s), {len(stale)} item(s) now stale"
        if fresh:
            message += f", {len(fresh)} fresh again"
        return _report(base or "", target or WORKTREE, message, started, files=len(changes),
                       parsed=tracker.parsed, anchors_checked=tracker.checked,
                       followed=tracker.followed, stale=stale, fresh=fresh, entities=entities)


def recheck(memory: Any, paths: Sequence[str] | None = None) -> dict[str, Any]:
    """Compare anchors with the entities' current hashes (after a code index) and settle items."""
    rows = (memory.store.anchors_on_paths(list(paths)) if paths is not None
            else memory.store.anchors_of_items(None))
    stale, fresh = settle(memory, {r["item"] for r in rows}, None, WORKTREE)
    return {"anchors": len(rows), "stale": stale, "fresh": fresh}


def stale_items(memory: Any, limit: int = 1000) -> list[dict[str, Any]]:
    """Stale items of this project, newest first, with the anchors that differ."""
    from graphmem import models as m

    rows = memory.store.list_items(ItemFilter(project=memory.project, statuses=("stale",)),
                                   limit=limit, order="updated_at")
    by_item: dict[str, list[dict[str, Any]]] = {}
    for row in memory.store.anchors_of_items([r["id"] for r in rows]) if rows else []:
        by_item.setdefault(row["item"], []).append(row)
    anchors: dict[str, list[dict[str, Any]]] = {}
    for row in (a for group in by_item.values() for a in judged(group)):
        if row["seen"] and row["seen"] != row["current"]:
            anchors.setdefault(row["item"], []).append(
                {"entity": row["entity"], "seen": row["seen"], "current": row["current"],
                 "commit": row["commit"], "state": "changed" if row["current"] else "deleted"})
    fields = m.MemoryItem.model_fields
    return [{"item": m.MemoryItem(**{k: v for k, v in r.items() if k in fields}),
             "reason": r["stale_reason"], "anchors": anchors.get(r["id"], [])} for r in rows]


def verify(memory: Any, item_id: str) -> dict[str, Any]:
    """Re-anchor an item to the code as it is now (work tree) and mark it verified and active."""
    item = memory.get_item(item_id)
    anchors = memory.store.anchors_of_items([item_id])
    try:
        git: Git | None = Git.open(work_root(memory))
    except NotARepo:
        git = None
    root = git.root if git is not None else Path(memory.ref.root)
    head = (git.head() or "") if git is not None else ""
    if git is not None:
        git.close()
    parsed: dict[str, CodeFile | None] = {}
    for path in sorted({a["path"] for a in anchors if a["path"]}):
        target = root / path
        try:
            data = target.read_bytes() if target.is_file() else None
        except OSError:
            data = None
        parsed[path] = parse_version(path, data)
    now = time.time()
    keep: list[dict[str, Any]] = []
    dropped: list[str] = []
    for a in anchors:
        version = parsed.get(a["path"])
        if version is None:
            new_hash = None
        elif a["kind"] == "file":
            new_hash = version.content_hash
        else:
            sym = next((s for s in version.symbols if s.qualname == a["qualname"]), None)
            new_hash = sym.body_hash if sym is not None else None
        if new_hash is None:
            dropped.append(a["entity"])
        else:
            keep.append({"source": item_id, "target": a["entity"], "hash": new_hash,
                         "commit": head, "at": now})
    entities, defined, contains = _version_rows([f for f in parsed.values() if f is not None])
    if entities:
        memory.writer.write(ops.PutEntities(entities))
    for kind, rows in (("DEFINED_IN", defined), ("CONTAINS", contains)):
        if rows:
            memory.writer.write(ops.PutLinks(kind, rows))
    if keep:
        memory.writer.write(ops.PutLinks("ANCHORED_TO", keep))
    if dropped:
        memory.writer.write(ops.DeleteLinks("ANCHORED_TO", [item_id] * len(dropped), dropped))
    fields: dict[str, Any] = {"verified": True, "stale_reason": ""}
    if item.status.value in ("active", "stale"):
        fields["status"] = "active"
    updated = memory.update(item_id, **fields)
    return {"item": updated, "anchors": len(keep), "dropped": dropped, "commit": head}


# ----- entry point for the git hooks ---------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """`python -m graphmem.staleness stale update [--commit SHA | --range A..B | --worktree]`.

    For hooks installed with this module as their command; see graphmem/staleness/hook.py.
    """
    from graphmem.staleness.hook import main as hook_main

    return hook_main(argv)
