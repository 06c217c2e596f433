"""Which commit of a range made each change.

An update over several commits at once (a merge, or hooks that did not run) diffs the range
once, base to target, and judges anchors on that diff. Only the names in the stale reasons need
the commits: each changed anchor is named after the earliest commit of the range, in topological
order, whose own diff (against its first parent) changed that anchor's code; the target itself
when none did (a merge's conflict resolution). Merges inside the range are skipped: the commits
they bring in are in the range themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from graphmem.extract.code import CodeFile
from graphmem.git import Change, Git, parse_raw_z


@dataclass(frozen=True)
class Step:
    """One commit of a range and its changes against its first parent."""

    sha: str
    changes: list[Change]


def range_steps(git: Git, base: str, target: str) -> list[Step]:
    """The non-merge commits of base..target, oldest first in topological order."""
    out = git.run("log", "--topo-order", "--reverse", "--no-merges", "--raw", "-z", "-M",
                  "--no-abbrev", "--format=%x01%H", f"{base}..{target}", check=False)
    steps = []
    for chunk in out.split(b"\x01")[1:]:
        sha, _, raw = chunk.partition(b"\0")
        steps.append(Step(sha.decode().strip(), list(parse_raw_z(raw))))
    return steps


def newest_by_path(steps: list[Step]) -> dict[str, str]:
    """Path -> the newest commit of the steps that changed it."""
    found: dict[str, str] = {}
    for step in steps:
        for c in step.changes:
            for path in (c.old_path, c.new_path):
                if path:
                    found[path] = step.sha
    return found


class Parses(Protocol):
    """Parsed file versions by blob (update.Versions)."""

    def code(self, blob: str, path: str) -> CodeFile | None: ...


def first_change(versions: Parses, steps: list[Step], kind: str, path: str,
                 local: str) -> str | None:
    """The earliest step that changed a file (kind "file") or the symbol `local` of a file at
    the range's base, following renames of the file and of the symbol; None when none did."""
    paths = {path}
    for step in steps:
        for c in step.changes:
            if c.old_path not in paths and not (c.added and c.new_path in paths):
                continue
            old = versions.code(c.old_blob, c.old_path) if not c.added else None
            new = versions.code(c.new_blob, c.new_path) if not c.deleted else None
            if kind == "file":
                if old is None or new is None or old.content_hash != new.content_hash:
                    return step.sha
            else:
                renamed = _symbol_change(old, new, path_local=local)
                if renamed is None:
                    return step.sha
                local = renamed
            if c.new_path:
                paths.add(c.new_path)
    return None


def _symbol_change(old: CodeFile | None, new: CodeFile | None, path_local: str) -> str | None:
    """The symbol's local name after a change, or None when the change altered it (its body
    changed, or it is gone without the same body appearing under one new name)."""
    if old is None or new is None:
        return None
    before = {s.qualname[len(s.path) + 2:]: s for s in old.symbols}
    after = {s.qualname[len(s.path) + 2:]: s for s in new.symbols}
    seen = before.get(path_local)
    if seen is None:  # absent before this commit: added by it, or not its business
        return None if path_local in after else path_local
    now = after.get(path_local)
    if now is not None:
        return path_local if now.body_hash == seen.body_hash else None
    moved = [name for name, s in after.items()
             if name not in before and s.body_hash == seen.body_hash]
    return moved[0] if len(moved) == 1 else None
