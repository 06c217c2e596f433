"""The one place graphmem runs `git` (tests/test_architecture.py holds it to that): every call
gets the same environment (no inherited GIT_DIR & co., no terminal prompt), a timeout
(GRAPHMEM_GIT_SECONDS) and errors in our terms; `Git` drives a work tree for staleness and
import-git; `head_commit` reads HEAD from the .git files without running git at all.

Stdlib only: the git hooks' lean path and the installers import it."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from graphmem import env
from graphmem.errors import InvalidInput
from graphmem.paths import git_dirs

ZERO = "0" * 40
# Output we parse must not depend on the user's config.
CONFIG = ("-c", "core.quotepath=off", "-c", "log.showSignature=false", "-c", "color.ui=never",
          "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false")
# A git hook runs with these set for the repository that called it: our git calls name their own.
ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH")
_SKIP_MODES = ("160000", "120000")  # submodules (gitlinks) and symlinks carry no code of ours


class NotARepo(InvalidInput):
    """The directory is not inside a git work tree."""


class GitUnavailable(InvalidInput):
    """git could not be started, or did not finish in time."""


def git_env() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    environ["GIT_TERMINAL_PROMPT"] = "0"
    return environ


def run(args: Sequence[str], cwd: str | os.PathLike[str], *, input: bytes | None = None,
        parse: bool = False) -> subprocess.CompletedProcess[bytes]:
    """`git args` in cwd, output captured (bytes); the caller reads the return code. `parse`:
    with CONFIG, for output we parse. Raises GitUnavailable when git cannot be started or
    runs past GRAPHMEM_GIT_SECONDS."""
    argv = ["git", *(CONFIG if parse else ()), *args]
    seconds = env.number("git_seconds")
    try:
        return subprocess.run(argv, cwd=cwd, input=input, capture_output=True, env=git_env(),
                              check=False, timeout=seconds)
    except subprocess.TimeoutExpired as exc:
        raise GitUnavailable(f"git {args[0]} did not finish in {seconds:g} s "
                             "(GRAPHMEM_GIT_SECONDS)") from exc
    except OSError as exc:
        raise GitUnavailable(f"git is not available: {exc.strerror or exc}") from exc


def text(done: subprocess.CompletedProcess[bytes]) -> str:
    """A finished git call's standard output as text, stripped."""
    return done.stdout.decode("utf-8", "surrogateescape").strip()


def failure(done: subprocess.CompletedProcess[bytes]) -> str:
    """What a failed git call said last (or its exit code)."""
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return said[-1] if said else str(done.returncode)


def top_level(where: str | os.PathLike[str]) -> Path | None:
    """The root of the work tree containing `where`, or None when it is in none."""
    done = run(["rev-parse", "--show-toplevel"], where)
    top = text(done)
    return Path(top) if done.returncode == 0 and top else None


@dataclass(frozen=True)
class Change:
    """One path of a raw diff: status letter (A, M, D, R, T), paths, blobs and modes."""

    status: str
    old_path: str
    new_path: str
    old_blob: str
    new_blob: str
    old_mode: str = "100644"
    new_mode: str = "100644"

    @property
    def deleted(self) -> bool:
        return self.status == "D"

    @property
    def added(self) -> bool:
        return self.status == "A"


class Git:
    """A git work tree, driven through its CLI."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._batch: subprocess.Popen[bytes] | None = None
        self._empty_tree: str | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Git:
        where = Path(path).expanduser()
        if not where.is_dir():
            raise NotARepo(f"not a directory: {where}")
        try:
            top = top_level(where)
        except GitUnavailable as exc:
            raise NotARepo(str(exc)) from exc
        if top is None:
            raise NotARepo(f"not a git work tree: {where.resolve()} (run `git init`, or use "
                           "graphmem from inside a repository)")
        return cls(top)

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        done = run(args, self.root, input=input, parse=True)
        if check and done.returncode != 0:
            raise InvalidInput(f"git {args[0]} failed: {failure(done)}")
        return done.stdout

    def ok(self, *args: str) -> bool:
        return run(args, self.root, parse=True).returncode == 0

    def rev(self, spec: str) -> str | None:
        """The commit a revision names, or None (asked of the long-lived cat-file: no fork)."""
        if not spec or spec.startswith("-"):
            return None
        found = self._object(f"{spec}^{{commit}}")
        return found[0] if found is not None and found[1] == "commit" else None

    def head(self) -> str | None:
        return self.rev("HEAD")

    def parent(self, sha: str) -> str | None:
        return self.rev(f"{sha}^")

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.ok("merge-base", "--is-ancestor", a, b)

    def is_shallow(self) -> bool:
        return self.run("rev-parse", "--is-shallow-repository", check=False).strip() == b"true"

    def shallow_commits(self) -> set[str]:
        path = self.run("rev-parse", "--git-path", "shallow", check=False).decode().strip()
        try:
            return set((self.root / path).read_text().split()) if path else set()
        except OSError:
            return set()

    def empty_tree(self) -> str:
        if self._empty_tree is None:
            self._empty_tree = self.run("hash-object", "-t", "tree", "/dev/null").decode().strip()
        return self._empty_tree

    def raw_diff(self, base: str | None, target: str | None) -> list[Change]:
        """Changes from base (a commit, None = empty tree) to target (a commit, None = work tree)."""
        left = base or self.empty_tree()
        if target is None:
            out = self.run("diff", "--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", left)
        else:
            out = self.run("diff-tree", "-r", "-M", "--raw", "-z", "--no-abbrev", left, target)
        return list(parse_raw_z(out))

    def read(self, spec: str) -> tuple[str, bytes] | None:
        """(object id, content) of a blob (sha or `rev:path`) via one long-lived cat-file."""
        found = self._object(spec)
        if found is None or found[1] != "blob":
            return None
        return found[0], found[2]

    def _object(self, spec: str) -> tuple[str, str, bytes] | None:
        """(object id, type, content) of any object name, or None when it names nothing."""
        if "\n" in spec:
            return None
        if self._batch is None or self._batch.poll() is not None:
            self._batch = _start(["cat-file", "--batch"], self.root)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        self._batch.stdin.flush()
        # "<oid> <type> <size>", else "<name> missing" / "<name> ambiguous" (names may hold spaces)
        header = self._batch.stdout.readline().rstrip(b"\n").split(b" ")
        if len(header) != 3 or not header[2].isdigit():
            return None
        size = int(header[2])
        data = self._batch.stdout.read(size)
        self._batch.stdout.read(1)
        return header[0].decode(), header[1].decode(), data

    def close(self) -> None:
        if self._batch is not None:
            for stream in (self._batch.stdin, self._batch.stdout):
                if stream is not None:
                    stream.close()
            self._batch.wait()
            self._batch = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_raw_z(out: bytes) -> Iterator[Change]:
    """`--raw -z` records into Changes, skipping submodules, symlinks and unmerged paths."""
    tokens = out.split(b"\0")
    i = 0
    while i < len(tokens):
        meta = tokens[i].lstrip(b"\n")
        i += 1
        if not meta.startswith(b":"):
            continue
        fields = meta[1:].decode().split()
        if len(fields) < 5:
            continue
        old_mode, new_mode, old_blob, new_blob, status = fields[:5]
        paths = [os.fsdecode(tokens[i])]
        i += 1
        if status[0] in "RC":
            paths.append(os.fsdecode(tokens[i]))
            i += 1
        if status[0] == "U" or old_mode in _SKIP_MODES or new_mode in _SKIP_MODES:
            continue
        old_path, new_path = paths[0], paths[-1]
        letter = status[0]
        if letter == "C":  # a copy leaves the source in place: the copy is an addition
            letter, old_path, old_blob = "A", new_path, ZERO
        yield Change(letter, old_path if letter != "A" else "", new_path if letter != "D" else "",
                     old_blob, new_blob, old_mode, new_mode)


def _start(args: Sequence[str], cwd: Path) -> subprocess.Popen[bytes]:
    """A long-lived git process we talk to over pipes (cat-file --batch): no timeout."""
    try:
        return subprocess.Popen(["git", *args], cwd=cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env())
    except OSError as exc:
        raise GitUnavailable(f"git is not available: {exc.strerror or exc}") from exc


def head_commit(root: str | os.PathLike[str]) -> str:
    """HEAD's sha read from .git files, without running git (for anchors made outside a diff)."""
    dirs = git_dirs(Path(root))
    if dirs is None:
        return ""
    _, git_dir, common = dirs
    try:
        head = (git_dir / "HEAD").read_text(errors="replace").strip()
    except OSError:
        return ""
    if not head.startswith("ref:"):
        return head if re.fullmatch(r"[0-9a-f]{40,64}", head) else ""
    ref = head[4:].strip()
    for base in (git_dir, common):
        try:
            value = (base / ref).read_text().strip()
            if value:
                return value
        except OSError:
            pass
    try:
        for line in (common / "packed-refs").read_text(errors="replace").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    except OSError:
        pass
    return ""
