"""Git hooks that keep memory in step with the code: post-commit, post-merge, post-checkout and
post-rewrite. Stdlib only.

Each hook is a short POSIX sh script that runs the hook it replaced (kept beside it as
`<hook>.graphmem-orig`, with the same arguments and stdin, and whose exit status it returns),
then starts `graphmem stale update …` detached in the background and exits at once: it never
fails and never makes git wait, even when graphmem is missing or broken. The interpreter path is
baked in at install time. Hooks go where git looks for them (`git rev-parse --git-path hooks`,
which honours core.hooksPath and worktrees). Installing twice changes nothing; uninstalling puts
the original hooks back.

What each hook asks for (graphmem resolves the revisions when it runs):

- post-commit: `--commit HEAD`
- post-merge: `--range ORIG_HEAD..HEAD`
- post-checkout: `--range PREV..NEW` on branch checkouts (flag 1) that move HEAD
- post-commit and post-checkout do nothing while a rebase runs (one python per picked commit
  would be waste): the rebase's post-rewrite covers it
- post-rewrite (amend, rebase): `--range OLD..NEW` from the last "old new" line on stdin
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from graphmem import env, git
from graphmem.errors import InvalidInput

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# graphmem-hook v1"
ORIG_SUFFIX = ".graphmem-orig"
_DISABLE = env.name("disable_git_hooks")
_UNSET = ("GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_OBJECT_DIRECTORY "
          "GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH GIT_REFLOG_ACTION")

_IN_SEQUENCE = """\
    [ -d "$(git rev-parse --git-path rebase-merge 2>/dev/null)" ] && exit 0
    apply=$(git rev-parse --git-path rebase-apply 2>/dev/null)
    [ -d "$apply" ] && [ ! -e "$apply/applying" ] && exit 0"""
_ARGS = {
    "post-commit": _IN_SEQUENCE + """
    set -- --commit HEAD""",
    "post-merge": """\
    orig=$(git rev-parse -q --verify ORIG_HEAD 2>/dev/null)
    head=$(git rev-parse -q --verify HEAD 2>/dev/null) || exit 0
    if [ -n "$orig" ]; then set -- --range "$orig..$head"; else set -- --commit "$head"; fi""",
    "post-checkout": _IN_SEQUENCE + """
    [ "$3" = 1 ] || exit 0
    [ "$1" != "$2" ] || exit 0
    case "$1" in *[!0]*) set -- --range "$1..$2" ;; *) set -- --commit "$2" ;; esac""",
    "post-rewrite": """\
    last=$(printf '%s\\n' "$graphmem_input" | sed -n '/./h; ${x;p;}')
    old=${last%% *}; rest=${last#* }; new=${rest%% *}
    [ -n "$old" ] && [ -n "$new" ] || exit 0
    set -- --range "$old..$new"
""",
}


def hooks_dir(repo: str | os.PathLike[str] = ".") -> Path:
    """Where git runs this repository's hooks from (core.hooksPath and worktrees respected)."""
    where = Path(repo).expanduser().resolve()
    if not where.is_dir():
        raise InvalidInput(f"not a directory: {where}")
    root = git.top_level(where)
    if root is None:
        raise InvalidInput(f"not a git work tree: {where} (git hooks need a repository)")
    found = git.run(["rev-parse", "--git-path", "hooks"], root)
    if found.returncode != 0:
        raise InvalidInput(f"cannot find the hooks directory of {root}: {git.failure(found)}")
    path = Path(git.text(found))
    return path if path.is_absolute() else (root / path).resolve()


def default_command() -> list[str]:
    """This interpreter running graphmem, as an absolute path (hooks run without our venv)."""
    return [str(Path(sys.executable).absolute()), "-m", "graphmem"]


def render(hook: str, command: list[str] | None = None) -> str:
    """The sh script for one hook."""
    if hook not in HOOKS:
        raise InvalidInput(f"unknown hook {hook!r}; graphmem installs {', '.join(HOOKS)}")
    command = command or default_command()
    program = shlex.quote(command[0])
    argv = " ".join(shlex.quote(part) for part in command)
    stdin = "graphmem_input=$(cat)\n" if hook == "post-rewrite" else ""
    chain = ('printf \'%s\\n\' "$graphmem_input" | "$orig" "$@"' if hook == "post-rewrite"
             else '"$orig" "$@"')
    return f"""#!/bin/sh
{MARKER} — keeps graphmem's memory in step with git.
# Remove with `graphmem git uninstall-hooks` (the hook it replaced comes back).
# It never fails and never waits: the update runs detached in the background.
{stdin}status=0
orig="$(dirname -- "$0")/{hook}{ORIG_SUFFIX}"
if [ -x "$orig" ]; then
  {chain}
  status=$?
fi
graphmem_program={program}
if [ -z "${_DISABLE}" ] && {{ [ -x "$graphmem_program" ] || command -v "$graphmem_program" >/dev/null 2>&1; }}; then
  (
    unset {_UNSET}
{_ARGS[hook].rstrip()}
    if command -v setsid >/dev/null 2>&1; then
      exec setsid nohup {argv} stale update "$@"
    fi
    exec nohup {argv} stale update "$@"
  ) </dev/null >/dev/null 2>&1 &
fi
exit $status
"""


def _is_ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            return MARKER in handle.read(400)
    except OSError:
        return False


def _make_executable(path: Path) -> None:
    mode = path.stat().st_mode
    path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def install_hooks(repo: str | os.PathLike[str] = ".", command: list[str] | None = None,
                  hooks: tuple[str, ...] = HOOKS) -> dict[str, Any]:
    """Install graphmem's git hooks, keeping any existing hook as `<hook>.graphmem-orig`."""
    directory = hooks_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    installed, chained, unchanged = [], [], []
    for hook in hooks:
        path = directory / hook
        text = render(hook, command)
        if path.is_symlink() or path.exists():
            if _is_ours(path):
                if path.read_text(encoding="utf-8", errors="replace") == text:
                    unchanged.append(hook)
                    continue
            else:
                keep = directory / f"{hook}{ORIG_SUFFIX}"
                if keep.exists() or keep.is_symlink():
                    raise InvalidInput(f"{path} exists and so does {keep.name}; move one of "
                                       "them away, then install again")
                os.replace(path, keep)
                chained.append(hook)
        tmp = path.with_name(f".{hook}.graphmem-tmp")
        tmp.write_text(text, encoding="utf-8")
        _make_executable(tmp)
        os.replace(tmp, path)
        installed.append(hook)
    return {"hooks_dir": str(directory), "installed": installed, "chained": chained,
            "unchanged": unchanged, "command": command or default_command()}


def uninstall_hooks(repo: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Remove graphmem's git hooks and put back the hooks they replaced."""
    directory = hooks_dir(repo)
    removed, restored = [], []
    for hook in HOOKS:
        path = directory / hook
        keep = directory / f"{hook}{ORIG_SUFFIX}"
        if path.exists() and _is_ours(path):
            path.unlink()
            removed.append(hook)
        if (keep.exists() or keep.is_symlink()) and not path.exists():
            os.replace(keep, path)
            restored.append(hook)
    return {"hooks_dir": str(directory), "removed": removed, "restored": restored}


def hook_status(repo: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Which graphmem hooks are installed, and which chain an older hook (for `doctor`)."""
    directory = hooks_dir(repo)
    return {"hooks_dir": str(directory),
            "installed": [h for h in HOOKS if _is_ours(directory / h)],
            "chained": [h for h in HOOKS if (directory / f"{h}{ORIG_SUFFIX}").exists()]}
