"""Git history as memory: each meaningful commit becomes a `history` item anchored to its code.

`import_git` walks the first-parent history (merged branches' commits enter where they were
merged), and for every commit worth remembering (not a merge, not a bot, not "wip"/"fixup!"/
"typo" or a message under 12 characters) writes an item `git-<sha12>`: title the subject, body
the message, created at the commit time, linked to the commit entity, the files it touched and
the functions its diff touched — each hunk mapped to the innermost symbols of the lines it adds
(in the file at that commit) and of the lines it removes (in the file before it, mapped by name
to the file at that commit). Anchors carry the symbols' hashes at that commit. The same replay
then carries them forward, commit by commit and only through the files each commit changed,
following renames, so that at HEAD an item is stale exactly when code it touched has changed
since (or was deleted). Re-running imports only what is new (state in `git-import.json`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from graphmem import codeindex
from graphmem import models as m
from graphmem.errors import InvalidInput
from graphmem.extract import code
from graphmem.extract.code import CodeFile, CodeSymbol
from graphmem.git import Change, Git, parse_raw_z
from graphmem.paths import write_private
from graphmem.staleness.update import (
    Anchor,
    Tracker,
    Versions,
    chunks,
    commit_entity,
    local_name,
    placeholder,
    work_root,
)
from graphmem.store import ops

STATE_NAME = "git-import.json"
MIN_MESSAGE = 12
_BOT = re.compile(r"dependabot|renovate|github-actions|pre-commit-ci|greenkeeper|snyk-bot|"
                  r"\[bot\]|(?:^|[-.+])bot@|^bot$", re.IGNORECASE)
_TRIVIAL = re.compile(r"^\s*(?:wip\b|fixup!|squash!|amend!|(?:fix(?:ed|es)?\s+(?:a\s+)?)?typos?\b"
                      r"[.!]?\s*$|merge\s+(?:branch|pull request|remote-tracking)\b)", re.IGNORECASE)
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_LOG_FLAGS = ("-M", "--no-abbrev", "--no-color", "--no-ext-diff", "--no-textconv",
              "--src-prefix=a/", "--dst-prefix=b/")

Hunk = tuple[int, int, int, int]  # old start, old count, new start, new count (as in @@)
Progress = Callable[[int, int], None]


class ImportReport(TypedDict):
    """What an import did."""

    head: str
    commits: int
    candidates: int
    imported: int
    stale: int
    skipped: dict[str, int]
    seconds: float
    message: str


@dataclass
class CommitMeta:
    """A commit's identity and message."""

    sha: str
    parents: list[str]
    author: str
    email: str
    time: float
    message: str

    @property
    def subject(self) -> str:
        return self.message.strip().split("\n", 1)[0].strip()


@dataclass
class CommitDiff:
    """A commit's raw changes (against its first parent) and its zero-context hunks by path."""

    changes: list[Change] = field(default_factory=list)
    hunks: dict[str, list[Hunk]] = field(default_factory=dict)


def skip_reason(meta: CommitMeta) -> str | None:
    """Why a commit is not worth an item (None: import it)."""
    if len(meta.parents) > 1:
        return "merge"
    if _BOT.search(meta.author) or _BOT.search(meta.email):
        return "bot"
    message = meta.message.strip()
    if len(message) < MIN_MESSAGE or _TRIVIAL.match(meta.subject):
        return "trivial"
    return None


# ----- reading git ----------------------------------------------------------------------------
def unquote_path(raw: bytes) -> str:
    """A path as git prints it (C-quoted when it holds odd characters) back to a str."""
    if not raw.startswith(b'"'):
        return os.fsdecode(raw)
    body, out, i = raw[1:-1], bytearray(), 0
    escapes = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8,
               ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(body):
        if body[i] == 92 and i + 1 < len(body):
            nxt = body[i + 1]
            if 48 <= nxt <= 55 and i + 3 < len(body) + 1:
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(escapes.get(nxt, nxt))
            i += 2
            continue
        out.append(body[i])
        i += 1
    return os.fsdecode(bytes(out))


def read_metas(git: Git, shas: Sequence[str]) -> dict[str, CommitMeta]:
    if not shas:
        return {}
    out = git.run("log", "--no-walk=unsorted", "--stdin",
                  "--format=%x01%H%x00%P%x00%an%x00%ae%x00%ct%x00%B",
                  input="\n".join(shas).encode() + b"\n")
    metas = {}
    for chunk in out.split(b"\x01")[1:]:
        parts = chunk.split(b"\0", 5)
        if len(parts) < 6:
            continue
        sha, parents, name, email, when, body = (p.decode("utf-8", "replace") for p in parts)
        metas[sha] = CommitMeta(sha, parents.split(), name, email, float(when or 0),
                                body.strip("\n"))
    return metas


def read_mainline_diffs(git: Git, shas: Sequence[str]) -> dict[str, tuple[list[str], list[Change]]]:
    """sha -> (parents, raw changes against the first parent) for each commit."""
    if not shas:
        return {}
    out = git.run("log", "--no-walk=unsorted", "--stdin", "--diff-merges=first-parent", "--raw",
                  "-z", *_LOG_FLAGS[:2], "--format=%x01%H%x00%P",
                  input="\n".join(shas).encode() + b"\n")
    found = {}
    for chunk in out.split(b"\x01")[1:]:
        sha, _, rest = chunk.partition(b"\0")
        parents, _, raw = rest.partition(b"\0")
        found[sha.decode()] = (parents.decode().split(), list(parse_raw_z(raw)))
    return found


def read_patches(git: Git, shas: Sequence[str]) -> dict[str, CommitDiff]:
    """sha -> its raw changes and -U0 hunks (by new path), from one `git log -p` stream."""
    if not shas:
        return {}
    out = git.run("log", "--no-walk=unsorted", "--stdin", "--format=%x01%H", "-p", "-U0", "--raw",
                  *_LOG_FLAGS, input="\n".join(shas).encode() + b"\n")
    return dict(parse_patches(out))


def parse_patches(out: bytes) -> Iterator[tuple[str, CommitDiff]]:
    sha: str | None = None
    diff = CommitDiff()
    path: str | None = None
    skip = 0
    for line in out.split(b"\n"):
        if skip:
            if not line.startswith(b"\\"):
                skip -= 1
            continue
        if line.startswith(b"\x01") and len(line) in (41, 65):
            if sha is not None:
                yield sha, diff
            sha, diff, path = line[1:].decode(), CommitDiff(), None
        elif line.startswith(b":"):
            meta, _, names = line.partition(b"\t")
            paths = [unquote_path(p) for p in _split_tab_paths(names)]
            raw = b"\0".join([meta, *(os.fsencode(p) for p in paths)]) + b"\0"
            diff.changes.extend(parse_raw_z(raw))
        elif line.startswith(b"diff --git "):
            path = None
        elif line.startswith(b"+++ "):
            name = line[4:].rstrip(b"\t")  # git ends names holding spaces with a tab
            path = None if name == b"/dev/null" else unquote_path(name)
            if path is not None and path.startswith("b/"):
                path = path[2:]
        elif line.startswith(b"@@ "):
            match = _HUNK.match(line)
            if match is None:
                continue
            a, b, c, d = (int(g) if g is not None else 1 for g in match.groups())
            skip = b + d
            if path is not None:
                diff.hunks.setdefault(path, []).append((a, b, c, d))
    if sha is not None:
        yield sha, diff


def _split_tab_paths(names: bytes) -> list[bytes]:
    """Tab-separated paths of a raw line; a quoted path may not contain a bare tab anyway."""
    return [p for p in names.split(b"\t") if p]


def touched_symbols(old: CodeFile | None, new: CodeFile | None,
                    hunks: Sequence[Hunk]) -> list[CodeSymbol]:
    """Innermost symbols of the added lines (in new) and of the removed lines (in old, by name)."""
    found: dict[str, CodeSymbol] = {}
    by_local = {local_name(s): s for s in new.symbols} if new is not None else {}
    for a, b, c, d in hunks:
        if d and new is not None:
            for sym in code.symbols_touching(new, c, c + d - 1):
                found[sym.qualname] = sym
        if b and old is not None:
            for sym in code.symbols_touching(old, a, a + b - 1):
                same = by_local.get(local_name(sym))
                if same is not None:
                    found[same.qualname] = same
    return sorted(found.values(), key=lambda s: (s.start_line, s.qualname))


# ----- the import ---------------------------------------------------------------------------
def _load_state(memory: Any) -> dict[str, Any]:
    try:
        data = json.loads((Path(memory.dir) / STATE_NAME).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_state(memory: Any, **values: Any) -> None:
    write_private(Path(memory.dir) / STATE_NAME,
                  json.dumps({**_load_state(memory), **values, "at": time.time()}))


def item_id(sha: str) -> str:
    return f"git-{sha[:12]}"


@dataclass
class _Planned:
    meta: CommitMeta
    files: list[Anchor]  # the touched files, as hash-less anchors the replay moves on renames
    anchors: list[Anchor]


def import_git(memory: Any, repo: str | os.PathLike[str] | None = None, since: str | None = None,
               max_commits: int | None = None, progress: Progress | None = None,
               embed: bool | None = None) -> ImportReport:
    """Import meaningful commit messages as `history` items anchored to the code they touched."""
    started = time.perf_counter()
    report: ImportReport = {"head": "", "commits": 0, "candidates": 0, "imported": 0, "stale": 0,
                            "skipped": {}, "seconds": 0.0, "message": ""}

    def done(message: str) -> ImportReport:
        report["message"] = message
        report["seconds"] = round(time.perf_counter() - started, 3)
        return report

    if max_commits is not None and max_commits <= 0:
        raise InvalidInput("--max must be a positive number of commits")
    with Git.open(repo or work_root(memory)) as git:
        head = git.head()
        if head is None:
            return done("no commits yet: nothing to import")
        report["head"] = head
        last = _load_state(memory).get("last")
        spec = [head]
        if isinstance(last, str) and last and git.rev(last) and git.is_ancestor(last, head):
            if last == head:
                return done("up to date: no new commits since the last import")
            spec.append(f"^{last}")
        args = ["rev-list", "--first-parent", "--reverse"]
        if since:
            args.append(f"--since={since}")
        if max_commits is not None:
            args.append(f"--max-count={int(max_commits)}")
        mainline = git.run(*args, *spec).decode().split()
        report["commits"] = len(mainline)
        if not mainline:
            return done("no commits in range")
        diffs = read_mainline_diffs(git, mainline)
        intro: dict[str, list[str]] = {}
        for sha in mainline:
            parents = diffs.get(sha, ([], []))[0]
            if len(parents) > 1:
                side = git.run("rev-list", "--reverse", "--topo-order", sha, f"^{parents[0]}")
                intro[sha] = [s for s in side.decode().split() if s != sha]
            else:
                intro[sha] = [sha]
        candidates = [s for sha in mainline for s in intro[sha]]
        existing: set[str] = set()
        for chunk in chunks([item_id(s) for s in candidates], 5000):
            existing |= memory.store.existing_item_ids(list(chunk))
        metas = read_metas(git, [s for s in candidates if item_id(s) not in existing])
        shallow = git.shallow_commits() if git.is_shallow() else set()
        skipped: dict[str, int] = {}
        kept: list[str] = []
        for sha in candidates:
            meta = metas.get(sha)
            why = ("already imported" if item_id(sha) in existing else
                   "shallow boundary" if sha in shallow else
                   skip_reason(meta) if meta is not None else "unreadable")
            if why:
                skipped[why] = skipped.get(why, 0) + 1
            else:
                kept.append(sha)
        report["candidates"], report["skipped"] = len(candidates), skipped
        patches = read_patches(git, kept)
        planned = _replay(git, mainline, diffs, intro, set(kept), metas, patches, head, progress)
        written = _write(memory, git, planned, head, embed)
        report["imported"] = written
        report["stale"] = sum(1 for p in planned if any(a.reason for a in p.anchors))
        _save_state(memory, last=head)
        note = " (shallow clone: older history is missing)" if shallow else ""
        return done(f"imported {written} of {len(candidates)} commit(s), {report['stale']} stale "
                    f"at HEAD{note}")


def _replay(git: Git, mainline: Sequence[str], diffs: dict[str, tuple[list[str], list[Change]]],
            intro: dict[str, list[str]], kept: set[str], metas: dict[str, CommitMeta],
            patches: dict[str, CommitDiff], head: str, progress: Progress | None) -> list[_Planned]:
    """Walk the mainline: apply each commit's diff, then anchor the commits it brought in."""
    versions = Versions(git)
    tracker = Tracker(git, versions, record_touches=False)
    planned: list[_Planned] = []
    for number, sha in enumerate(mainline, 1):
        tracker.step(diffs.get(sha, ([], []))[1], {}, sha)
        for commit in intro[sha]:
            if commit not in kept:
                continue
            plan = _plan(versions, metas[commit], patches.get(commit, CommitDiff()))
            for anchor in plan.anchors:
                tracker.check_new(anchor, sha, sha[:7])
            for mention in plan.files:
                tracker.add(mention)  # followed through renames, never judged
            planned.append(plan)
        if progress is not None:
            progress(number, len(mainline))
    # Whatever the history's shape, end exactly at HEAD: re-apply paths whose blob differs.
    at_head = _tree_blobs(git, head, list(tracker.blobs))
    final = []
    for path, blob in tracker.blobs.items():
        now = at_head.get(path)
        if blob == now:
            continue
        if blob is None:
            final.append(Change("A", "", path, "", now or ""))
        elif now is None:
            final.append(Change("D", path, "", blob, ""))
        else:
            final.append(Change("M", path, path, blob, now))
    if final:
        tracker.step(final, {}, head)
    return planned


def _tree_blobs(git: Git, commit: str, paths: Sequence[str]) -> dict[str, str | None]:
    out = git.run("ls-tree", "-r", "-z", "--full-tree", commit)
    wanted = set(paths)
    found: dict[str, str | None] = {}
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        path = os.fsdecode(name)
        if path in wanted:
            parts = meta.split()
            found[path] = parts[2].decode() if len(parts) == 3 and parts[1] == b"blob" else None
    return found


def _plan(versions: Versions, meta: CommitMeta, diff: CommitDiff) -> _Planned:
    """The anchors of one commit's item: the symbols its hunks touched, at that commit."""
    ident = item_id(meta.sha)
    files: list[Anchor] = []
    symbols: dict[str, CodeSymbol] = {}
    for c in diff.changes:
        files.append(Anchor(item=ident, kind="file", path=c.new_path or c.old_path, local="",
                            hash=""))
        if c.deleted:
            continue
        hunks = diff.hunks.get(c.new_path, [])
        if not hunks:
            continue
        new = versions.code(c.new_blob, c.new_path)
        old = versions.code(c.old_blob, c.old_path) if not c.added else None
        for sym in touched_symbols(old, new, hunks):
            symbols[sym.qualname] = sym
    anchors = [Anchor(item=ident, kind="symbol", path=s.path, local=local_name(s),
                      hash=s.body_hash, commit=meta.sha, at=meta.time) for s in symbols.values()]
    return _Planned(meta, files, anchors)


def _write(memory: Any, git: Git, planned: list[_Planned], head: str, embed: bool | None) -> int:
    """Entities first (so mentions resolve), then items, then our anchors, mentions and TOUCHES."""
    if not planned:
        return 0
    versions = Versions(git)
    anchored = {a.path for p in planned for a in p.anchors}
    mentioned = {f.path for p in planned for f in p.files}
    paths = sorted(anchored | mentioned)
    known: set[str] = set()
    for chunk in chunks([f"file:{p}" for p in paths], 5000):
        known |= set(memory.store.entity_hashes(list(chunk)))
    at_head = _tree_blobs(git, head, paths)
    rows: dict[str, dict[str, Any]] = {}
    defined, contains = [], []
    head_files: dict[str, CodeFile | None] = {}
    for path in paths:
        blob = at_head.get(path)
        head_files[path] = versions.code(blob, path) if blob else None
        f = head_files[path]
        if f is None or f"file:{path}" in known:
            continue
        rows[f"file:{path}"] = codeindex.file_entity(f)
        for s in f.symbols:
            rows[f"symbol:{s.qualname}"] = codeindex.symbol_entity(s, f.language)
            defined.append({"source": f"symbol:{s.qualname}", "target": f"file:{path}"})
            if s.parent:
                contains.append({"source": f"symbol:{s.parent}", "target": f"symbol:{s.qualname}"})
    wanted = {a.entity for p in planned for a in p.anchors} | {f"file:{f}" for f in mentioned}
    missing = sorted(wanted - set(rows))
    have: set[str] = set()
    for chunk in chunks(missing, 5000):
        have |= set(memory.store.entity_hashes(list(chunk)))
    for eid in missing:
        if eid in have:
            continue
        path = eid.partition(":")[2].partition("::")[0]
        f = head_files.get(path)
        sym = next((s for s in f.symbols if f"symbol:{s.qualname}" == eid), None) if f else None
        rows[eid] = (codeindex.symbol_entity(sym, f.language) if sym is not None and f is not None
                     else placeholder(eid))
    commits = [commit_entity(p.meta.sha) for p in planned]
    for chunk in chunks(list(rows.values()) + commits):
        memory.writer.write(ops.PutEntities(list(chunk)))
    for kind, links in (("DEFINED_IN", defined), ("CONTAINS", contains)):
        for chunk in chunks(links):
            memory.writer.write(ops.PutLinks(kind, list(chunk)))
    written = 0
    for chunk in chunks(planned, 500):  # items and their links land together, chunk by chunk
        written += _write_items(memory, list(chunk), embed)
    return written


def _write_items(memory: Any, planned: list[_Planned], embed: bool | None) -> int:
    items = []
    for p in planned:
        reasons = [a.reason for a in p.anchors if a.reason]
        reason = (reasons[0] + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else "")
                  if reasons else "")
        body = p.meta.message.strip()
        title = p.meta.subject[:200] or p.meta.sha[:12]
        items.append(m.MemoryItem(
            id=item_id(p.meta.sha), project=memory.project, branch=memory.branch,
            kind=m.ItemKind.history, title=title, body=body if body != title else "",
            source=m.Source.import_, confidence=0.7, created_at=p.meta.time,
            updated_at=p.meta.time, status=m.ItemStatus.stale if reason else m.ItemStatus.active,
            stale_reason=reason))
    # Anchors come from the commit's own hashes below, not from today's code.
    memory.add_items(items, dedupe=False, embed=embed, anchors=False)
    anchors: list[dict[str, Any]] = [
        {"source": a.item, "target": a.entity, "hash": a.hash, "commit": a.commit, "at": a.at}
        for p in planned for a in p.anchors]
    mentions: list[dict[str, Any]] = [
        {"source": item_id(p.meta.sha), "target": f"commit:{p.meta.sha}", "weight": 1.0,
         "surface": p.meta.sha[:12]} for p in planned]
    mentions += [{"source": f.item, "target": f.entity, "weight": 1.0, "surface": f.path}
                 for p in planned for f in p.files]
    mentions += [{"source": a.item, "target": a.entity, "weight": 1.0, "surface": a.local}
                 for p in planned for a in p.anchors]
    touches: list[dict[str, Any]] = [{"source": f"commit:{p.meta.sha}", "target": a.entity}
                                     for p in planned for a in [*p.anchors, *p.files]]
    for kind, links in (("ANCHORED_TO", anchors), ("MENTIONS", mentions), ("TOUCHES", touches)):
        for chunk in chunks(links, 5000):
            memory.writer.write(ops.PutLinks(kind, list(chunk)))
    return len(items)
