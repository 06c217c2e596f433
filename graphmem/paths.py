"""Project identity and data location, stdlib only: the hook fast path imports this."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

DB_NAME = "graph.kuzu"
JOURNAL_NAME = "journal.jsonl"

class ProjectRef:
    """Where a project lives and which branch is checked out (a plain class: the hook path
    avoids importing dataclasses)."""

    __slots__ = ("branch", "is_git", "root")

    def __init__(self, root: Path, branch: str, is_git: bool) -> None:
        self.root = root
        self.branch = branch
        self.is_git = is_git

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProjectRef) and (self.root, self.branch, self.is_git) == (
            other.root, other.branch, other.is_git)

    def __hash__(self) -> int:
        return hash((self.root, self.branch, self.is_git))

    def __repr__(self) -> str:
        return f"ProjectRef(root={self.root!r}, branch={self.branch!r}, is_git={self.is_git})"

    @property
    def key(self) -> str:
        """A filesystem-safe, stable name for the project's store."""
        digest = hashlib.sha1(str(self.root).encode()).hexdigest()[:8]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", self.root.name).strip("-") or "root"
        return f"{slug}-{digest}"

    @property
    def name(self) -> str:
        return str(self.root)


def graphmem_home() -> Path:
    """$GRAPHMEM_HOME, else the user data dir (XDG_DATA_HOME/graphmem)."""
    explicit = os.environ.get("GRAPHMEM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "graphmem"


def _git_dirs(start: Path) -> tuple[Path, Path, Path] | None:
    """Return (work tree root, this worktree's git dir, common git dir) above `start`."""
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory, dot_git, dot_git
        if dot_git.is_file():
            try:
                text = dot_git.read_text(errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = Path(text[len("gitdir:"):].strip())
            if not git_dir.is_absolute():
                git_dir = (directory / git_dir).resolve()
            common = git_dir
            commondir_file = git_dir / "commondir"
            if commondir_file.is_file():
                rel = commondir_file.read_text(errors="replace").strip()
                common = (git_dir / rel).resolve()
            return directory, git_dir, common
    return None


def _branch(git_dir: Path) -> str:
    try:
        head = (git_dir / "HEAD").read_text(errors="replace").strip()
    except OSError:
        return "unknown"
    if head.startswith("ref:"):
        ref = head[4:].strip()
        return ref.removeprefix("refs/heads/")
    return f"detached@{head[:7]}" if head else "unknown"


def find_project(cwd: str | os.PathLike[str] | None = None) -> ProjectRef:
    """The project containing `cwd`: the main work tree's root, so worktrees share one store."""
    start = Path(cwd or os.getcwd()).expanduser().resolve()
    dirs = _git_dirs(start)
    if dirs is None:
        return ProjectRef(root=start, branch="", is_git=False)
    work_tree, git_dir, common = dirs
    # A worktree's common dir is the main checkout's .git; a bare repo has no parent tree.
    root = common.parent if common.name == ".git" else work_tree
    return ProjectRef(root=root, branch=_branch(git_dir), is_git=True)


def work_tree(cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The checkout containing `cwd` (a linked worktree's own root, not the main one)."""
    dirs = _git_dirs(Path(cwd or os.getcwd()).expanduser().resolve())
    return dirs[0] if dirs is not None else None


def store_dir(project: ProjectRef, home: Path | None = None) -> Path:
    """Where one project's store lives."""
    return (home or graphmem_home()) / "projects" / project.key


def store_dir_from_env(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The store dir `Config.from_env(cwd=cwd)` leads to, without pydantic (the git hooks' path).

    GRAPHMEM_DATA_DIR, else the project of `cwd` (else GRAPHMEM_CWD, else the process's) under
    GRAPHMEM_HOME or the user data dir.
    """
    explicit = os.environ.get("GRAPHMEM_DATA_DIR")
    if explicit:
        return Path(explicit)
    home = os.environ.get("GRAPHMEM_HOME")
    return store_dir(find_project(cwd or os.environ.get("GRAPHMEM_CWD")),
                     Path(home) if home else None)
