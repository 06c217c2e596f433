"""`graphmem stale update` as the git hooks run it: through the owner, else on a lean direct path.

The hooks start this detached after every commit, merge, checkout and rewrite, so its wall time
is the time until memory reflects the commit. When the store's owner runs, the update is handed
to it (Kuzu open, code warm): this process imports no pydantic, no models, no Kuzu. Otherwise it
opens the journal and the graph itself, without the service layer (pydantic, retrieval), runs
`staleness.update_stale` and closes. Anything unusual (no store yet, a journal the graph has not
caught up with, GRAPHMEM_OWNER=always) goes the full `open_memory` way instead. While another
process holds the store, it waits (checking for an owner again) up to two minutes.

Every write still goes through the store's Writer (journal first, fsynced, then the graph), as
the service's do: a rebuild from the journal gives the same store.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphmem import env, errors
from graphmem.paths import DB_NAME, JOURNAL_NAME, find_project, store_dir_from_env

WAIT_SECONDS = 120.0
ACTOR = "git-hook"


class DirectStore:
    """A store's writer and graph, opened for a staleness update only (what it needs of Memory)."""

    def __init__(self, data_dir: Path) -> None:
        from graphmem.store.journal import Journal
        from graphmem.store.writer import Writer

        self.dir = data_dir
        self.writer = Writer(data_dir, Journal(data_dir / JOURNAL_NAME), actor=ACTOR)
        self.store = self.writer.open()

    def behind(self) -> bool:
        """True when the graph missed journal records (Memory's catch-up must run first)."""
        return self.writer.behind

    def close(self) -> None:
        self.writer.close()


def update(cwd: str | None = None, *, commit: str | None = None, rev_range: str | None = None,
           worktree: bool = False, project: str | None = None,
           wait: float = WAIT_SECONDS) -> Any:
    """Run one staleness update for the project at cwd, the cheapest way available."""
    mode = env.text("owner")
    # Revisions are read in the hook's own checkout, which an owner started elsewhere is not.
    kwargs: dict[str, Any] = {"commit": commit, "rev_range": rev_range, "worktree": worktree,
                              "repo": str(_repo(cwd))}
    if mode == "always":
        return _through_memory(cwd, project, kwargs)
    data_dir = store_dir_from_env(cwd)
    if not (data_dir / DB_NAME).exists():
        return _through_memory(cwd, project, kwargs)
    deadline = time.monotonic() + wait
    while True:
        if mode != "never":
            try:
                return _through_owner(cwd, data_dir, project, kwargs)
            except errors.OwnerUnavailable:
                pass
        try:
            direct = DirectStore(data_dir)
        except errors.StoreUnavailable as exc:
            if "in use" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        try:
            if not direct.behind():
                from graphmem.staleness import update as staleness

                return staleness.update_stale(direct, **kwargs)
        finally:
            direct.close()
        return _through_memory(cwd, project, kwargs)


def _repo(cwd: str | None) -> Path:
    """Where git runs: the checkout of cwd (GRAPHMEM_CWD, else this process's directory)."""
    explicit = cwd or env.raw("cwd")
    return Path(explicit) if explicit else Path.cwd()


def _through_owner(cwd: str | None, data_dir: Path, project: str | None,
                   kwargs: dict[str, Any]) -> Any:
    from graphmem.owner.client import RemoteMemory, owner_running

    if not owner_running(data_dir):
        raise errors.OwnerUnavailable(f"no owner is running for {data_dir}")
    ref = find_project(cwd or env.raw("cwd"))
    remote = RemoteMemory(None, data_dir, project or env.raw("project")
                          or ref.name, ref.branch, start=False)
    remote.actor = ACTOR
    with remote:
        return remote.update_stale(**kwargs)


def _through_memory(cwd: str | None, project: str | None, kwargs: dict[str, Any]) -> Any:
    """The full way (service layer): owner when it runs or is wanted, else Memory with catch-up."""
    from graphmem.config import Config
    from graphmem.owner.client import open_memory

    config = Config.from_env(cwd=cwd, project=project, embed=False)
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            memory = open_memory(config)
            break
        except errors.StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)
    memory.actor = ACTOR
    with memory:
        return memory.update_stale(**kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """`[stale update] [--commit SHA | --range A..B | --worktree] [--cwd DIR] [--project P] [--json]`."""
    import argparse

    parser = argparse.ArgumentParser(prog="graphmem stale update",
                                     description="re-hash changed code and mark items stale")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--commit", help="the commit whose changes to check (default HEAD)")
    which.add_argument("--range", dest="rev_range", help="A..B: every change in the range")
    which.add_argument("--worktree", action="store_true", help="uncommitted changes too")
    parser.add_argument("--cwd", help=argparse.SUPPRESS)
    parser.add_argument("--project", help="project label (default: the git work tree root)")
    parser.add_argument("--json", action="store_true", help="indented JSON")
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["stale", "update"]:
        args = args[2:]
    parsed = parser.parse_args(args)
    try:
        report = update(parsed.cwd, commit=parsed.commit, rev_range=parsed.rev_range,
                        worktree=parsed.worktree, project=parsed.project)
    except errors.GraphmemError as exc:
        print(f"graphmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps(report, default=str, indent=2 if parsed.json else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
