"""Project identity and data location, stdlib only: the hook fast path imports this."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from graphmem import env

DB_NAME = "graph.kuzu"
JOURNAL_NAME = "journal.jsonl"
PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
DIR_MODE = 0o700

class ProjectRef:
    """Where a project lives and which branch is checked out (a plain class: the hook path
    avoids importing dataclasses)."""

    __slots__ = ("branch", "is_git", "root", "tree")

    def __init__(self, root: Path, branch: str, is_git: bool, tree: Path | None = None) -> None:
        self.root = root
        self.branch = branch
        self.is_git = is_git
        self.tree = tree or root  # the checkout itself: a linked worktree's own root

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
    explicit = env.path("home")
    if explicit:
        return explicit.expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "graphmem"


def git_dirs(start: Path) -> tuple[Path, Path, Path] | None:
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
    dirs = git_dirs(start)
    if dirs is None:
        return ProjectRef(root=start, branch="", is_git=False)
    work_tree, git_dir, common = dirs
    # A worktree's common dir is the main checkout's .git; a bare repo has no parent tree.
    root = common.parent if common.name == ".git" else work_tree
    return ProjectRef(root=root, branch=_branch(git_dir), is_git=True, tree=work_tree)


def work_tree(cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The checkout containing `cwd` (a linked worktree's own root, not the main one)."""
    dirs = git_dirs(Path(cwd or os.getcwd()).expanduser().resolve())
    return dirs[0] if dirs is not None else None


def store_dir(project: ProjectRef, home: Path | None = None) -> Path:
    """Where one project's store lives."""
    return (home or graphmem_home()) / "projects" / project.key


def store_dir_from_env(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The store dir `Config.from_env(cwd=cwd)` leads to, without pydantic (the git hooks' path).

    GRAPHMEM_DATA_DIR, else the project of `cwd` (else GRAPHMEM_CWD, else the process's) under
    GRAPHMEM_HOME or the user data dir.
    """
    return env.path("data_dir") or store_dir(find_project(cwd or env.raw("cwd")), env.path("home"))


# ----- private files: 0600 files in 0700 directories, whatever the umask -----------------------
def private_umask() -> None:
    """Make every file this process creates private to its user (Kuzu's files included)."""
    os.umask(os.umask(PRIVATE_UMASK) | PRIVATE_UMASK)


def private_dir(path: str | os.PathLike[str]) -> Path:
    """`mkdir -p` whose new directories are 0700; an existing one is left as it is."""
    target = Path(path)
    missing = []
    for directory in (target, *target.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    target.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    for directory in missing:
        os.chmod(directory, DIR_MODE)
    return target


def private_opener(path: str, flags: int) -> int:
    """`open(path, mode, opener=private_opener)`: a file it creates is 0600."""
    return os.open(path, flags, FILE_MODE)


def write_private(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Replace a file atomically with a 0600 one holding `data`."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, target)


def wider_than_private(root: str | os.PathLike[str], repair: bool = False) -> list[Path]:
    """Files and directories under `root` (itself included) that group or others can use;
    with `repair`, their group and other bits are cleared. Symlinks are not followed."""
    found: list[Path] = []
    top = Path(root)
    if not top.exists():
        return found
    for directory, dirs, files in os.walk(top):
        for path in (Path(directory), *(Path(directory) / f for f in files)):
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if path.is_symlink() or not mode & 0o077:
                continue
            found.append(path)
            if repair:
                os.chmod(path, mode & 0o700)
        dirs[:] = [d for d in dirs if not (Path(directory) / d).is_symlink()]
    return found


_DRIVE = re.compile(r"([A-Za-z]):[\\/]")
_DRIVE_IN_LINE = re.compile(r"(?<![\w/\\:])([A-Za-z]):[\\/]([^\s\"'|;&<>`]*)")
_BACKSLASHED = re.compile(r"(?<![\w.\\-])[\w.-]++(?:\\\w[\w.-]*+)+")
_REGEX_OPERAND = re.compile(r"(?i)(?:-(?:[ci]?(?:replace|match|notmatch)|split|pattern)\s+|\[regex\]::\w+\([^'\"]{0,40}|"
                            r"\b(?:select-string|sls)\b(?:\s+-\w+(?:\s+[^\s'\"-]\S*)?){0,6}\s+)"
                            r"('[^']*'|\"[^\"]*\")")
# sed's `s:\.py:.txt:` (or `y:…:…:`) in quotes: an expression, not the drive S: (a path's colon after the
# drive is a port, a line number or a node id: `app.py:42`, `C:\proj:/app`, `test_app.py::test_login`)
_SED_COLON = re.compile(r":(?![:/\d])")
WINDOWS_COMMAND_MAX = 20_000  # what of a longer line is read for its paths


def posix_form(path: str) -> str:
    """A Windows path in the form Git Bash gives it (`C:\\Users\\me\\app` → `/c/Users/me/app`), so one
    reading of paths serves both; any other path as it is."""
    drive = _DRIVE.match(path)
    if drive is None:
        return path
    return f"/{drive.group(1).lower()}/" + re.sub(r"[\\/]+", "/", path[drive.end():]).lstrip("/")


def posix_command(command: str, powershell: bool = False) -> str:
    """A command line from a Windows machine with its paths in POSIX form: drive paths always, and
    backslashed relative paths where the backslash can only separate (PowerShell, where it escapes
    nothing but its regular expressions, or a last part with an extension: `tests\\test_app.py`,
    not `a\\nb`)."""
    if "\\" not in command and ":" not in command:
        return command
    if len(command) > WINDOWS_COMMAND_MAX:
        return posix_command(command[:WINDOWS_COMMAND_MAX], powershell) + command[WINDOWS_COMMAND_MAX:]
    def in_regex(at: int, spans: list[tuple[int, int]]) -> bool:
        return any(start <= at < end for start, end in spans)

    def drive(m: re.Match[str]) -> str:
        sed = m.group(1) in "sSyY" and command[m.start() - 1:m.start()] in ("'", '"') and _SED_COLON.search(m.group(2))
        return m.group(0) if sed or in_regex(m.start(), regexes) else posix_form(m.group(0))
    regexes = [m.span(1) for m in _REGEX_OPERAND.finditer(command)] if powershell else []
    command = _DRIVE_IN_LINE.sub(drive, command)
    regexes = [m.span(1) for m in _REGEX_OPERAND.finditer(command)] if powershell else []

    def relative(m: re.Match[str]) -> str:
        run = m.group(0)
        if in_regex(m.start(), regexes):
            return run
        last = run.rsplit("\\", 1)[-1]
        return run.replace("\\", "/") if powershell or re.search(r"\.\w{1,8}$", last) else run
    return _BACKSLASHED.sub(relative, command)
