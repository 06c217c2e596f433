"""A session's observations → atomic memory drafts, by rules (no LLM): pure functions, never raise.

Rules, each producing one fact per draft, conclusion first:

* failure → fix (`pitfall`): a command failed with error E (exit code, `is_error`, or a clear
  failure summary in its output) and a later run of the same command (same executable +
  subcommand + targets, flags order and env-var prefixes ignored; npm/pnpm/yarn/bun count as one
  family) no longer shows E. The fix is what happened in between: edits (their added lines), env
  vars that appeared (prefix or `export`), other commands, or a package-manager switch.
  Confidence 0.6, +0.2 when a passing test/build run verifies it.
* unresolved failure (`task`): the last run of a command still fails at the end of the session
  → "Unresolved: `cmd` fails with E", so the next session's brief hands it off.
* environment (`env`): tool versions (`python --version`, `node -v`), packages installed with a
  pin or listed by "Successfully installed", localhost ports seen answering or refusing, env vars
  a failure showed to be required (KeyError 'X', "X is not set") or that had to be set.
* user statements (`convention`, `decision`, `fact`, `note`, `task`) from user prompts and the
  transcript's user messages: "use X, not Y", "never/always …", "we decided … because …",
  "remember that …", "FYI …", "TODO …", "next time …". Source "user", confidence 0.9.
* exactly one `summary` per session with something in it: goal, what was fixed, files changed,
  what is left open. It leads the next session's brief.

Keys are sha1(session id, rule, normalised subject): re-running on a grown session replaces the
same drafts instead of adding new ones. Events are sorted by time, de-duplicated by id, and any
text is looked at only through its first and last few KB. Inputs were redacted at capture; text
taken from a transcript is redacted here.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import math
import posixpath
import re
import shlex
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any, TypeVar

from graphmem.capture.event import HookEvent
from graphmem.capture.transcript import BUILT_IN_COMMANDS, LOOP_TICK, strip_attached, windows_input
from graphmem.kinds import WRITTEN
from graphmem.models import DERIVED_BODY_MAX
from graphmem.paths import posix_command, posix_form

__all__ = ["EDIT_TOOLS", "WRITE_TOOLS", "Draft", "command_key", "compress_session", "parse_command",
           "session_key", "short", "uniq"]

log = logging.getLogger(__name__)

KINDS = WRITTEN
TITLE_MAX = 160
BODY_MAX = 1500
SUMMARY_BODY_MAX = 2400  # what was asked, built, reported, learnt, changed, left open
WHY_MAX = 1500  # the message of the commit that heads a summary, told in it
HEAD = 4096
TAIL = 4096
MAX_EVENTS = 5000

BASE_CONFIDENCE = 0.6
VERIFIED_BONUS = 0.2
USER_CONFIDENCE = 0.9


@dataclass
class Draft:
    """One atomic memory proposed by the compressor, with provenance and a stable key."""

    kind: str
    title: str
    body: str = ""
    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    confidence: float = BASE_CONFIDENCE
    importance: float = 0.5
    source: str = "rule"
    key: str = ""
    observation_ids: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

T = TypeVar("T")


def session_key(session: str, rule: str, subject: str = "") -> str:
    """The stable key of a draft: the same fact from the same session gets the same key."""
    return hashlib.sha1(f"{session}\x1f{rule}\x1f{subject}".encode("utf-8", "replace")).hexdigest()[:24]


def _norm(text: str) -> str:
    """Lowercase words and digits only: the identity of a phrase."""
    return " ".join(re.findall(r"[a-z0-9_]+", text.lower()))


norm = _norm  # and the one phrase identity, for keys


def _clip(text: str, head: int = HEAD, tail: int = TAIL) -> str:
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[…]\n{text[-tail:]}"


def _short(text: str, limit: int) -> str:
    """One line, at most `limit` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


short = _short  # the one line-shortener the capture rules share


def _cap_body(text: str, most: int = BODY_MAX) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _uniq(items: Iterable[T]) -> list[T]:
    seen: set[Any] = set()
    out = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


uniq = _uniq  # and the one order-keeping de-duplicator


_BOLD_OR_CODE = re.compile(r"(`[^`\n]*`)|\*\*")


def unbold(text: str) -> str:
    """Markdown text without its bold marks; a code span keeps its stars (held-out review 154: "`**/*.ts`" had
    become "`/*.ts`"). The one bold-stripper the capture rules share."""
    return _BOLD_OR_CODE.sub(lambda m: m.group(1) or "", text) if "**" in text else text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _safe(rule: Callable[[], list[Draft]], name: str) -> list[Draft]:
    """Run one rule; a bug in it costs its drafts, never the session."""
    try:
        return rule()
    except Exception:  # pragma: no cover - defensive
        log.warning("compress rule %s failed", name, exc_info=True)
        return []


# ---------------------------------------------------------------------------------------------
# Events, cleaned
# ---------------------------------------------------------------------------------------------

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "edit",
                        "write", "str_replace_editor", "create_file", "edit_file", "write_file"})
WRITE_TOOLS = frozenset({"Write", "write", "create_file", "write_file"})


@dataclass
class _Ev:
    """A HookEvent with every field coerced to its type (junk in, sane values out)."""

    order: int
    id: str
    event: str
    session_id: str
    cwd: str
    project: str
    tool: str
    command: str
    text: str
    files: list[str]
    exit_code: int | None
    is_error: bool | None
    ts: float
    tool_input: dict[str, Any]
    extra: dict[str, Any]
    pos: int = 0  # index in time order, set once sorted

    @property
    def is_edit(self) -> bool:
        return self.event == "post-tool" and self.tool in EDIT_TOOLS and not self.failed_tool

    @property
    def failed_tool(self) -> bool:
        return self.is_error is True or (self.exit_code is not None and self.exit_code != 0)

    @property
    def interrupted(self) -> bool:
        return self.extra.get("interrupted") is True or self.extra.get("is_interrupt") is True


def _s(value: Any, limit: int | None = None) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # noqa: BLE001 - a junk object with a broken __str__
            return ""
    return _clip(value) if limit is None else value[:limit]


def _coerce(raw: Any, order: int, last_ts: float) -> _Ev | None:
    get: Callable[..., Any]
    if isinstance(raw, dict):
        get = raw.get
    elif isinstance(raw, HookEvent) or hasattr(raw, "event"):
        def get(name: str, default: Any = None) -> Any:
            return getattr(raw, name, default)
    else:
        return None
    event = _s(get("event"), 40)
    if not event:
        return None
    raw_ts: Any = get("ts")
    try:
        ts = float(raw_ts)
    except (TypeError, ValueError):
        ts = last_ts
    if not math.isfinite(ts):
        ts = last_ts
    files = get("files")
    if isinstance(files, str):
        files = [files]
    files = [posix_form(f) for f in (files if isinstance(files, list) else []) if isinstance(f, str) and f][:50]
    exit_code = get("exit_code")
    if isinstance(exit_code, bool) or not isinstance(exit_code, int):
        try:
            exit_code = int(exit_code) if isinstance(exit_code, str) and exit_code.strip() else None
        except ValueError:
            exit_code = None
    is_error = get("is_error")
    tool_input = get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    extra = get("extra")
    extra = extra if isinstance(extra, dict) else {}
    cwd, project, tool, command = _s(get("cwd"), 1000), _s(get("project"), 1000), _s(get("tool"), 200), _s(get("command"), 8000)
    if posix_form(cwd) != cwd or posix_form(project) != project or tool == "PowerShell":
        # a Windows machine: its paths read as Git Bash writes them, so they come out relative
        cwd, project, command = posix_form(cwd), posix_form(project), posix_command(command, tool == "PowerShell")
        tool_input = windows_input(tool_input, tool == "PowerShell")
        if isinstance(tree := extra.get("work_tree"), str):
            extra = {**extra, "work_tree": posix_form(tree)}
    return _Ev(
        order=order,
        id=_s(get("id"), 200) or f"noid-{order}",
        event=event,
        session_id=_s(get("session_id"), 200),
        cwd=cwd,
        project=project,
        tool=tool,
        command=command,
        text=_s(get("text")),
        files=files,
        exit_code=exit_code,
        is_error=is_error if isinstance(is_error, bool) else None,
        ts=ts,
        tool_input=tool_input,
        extra=extra,
    )


def _prepare(events: Any) -> list[_Ev]:
    """Coerce, de-duplicate by id, sort by time (input order breaks ties)."""
    out: list[_Ev] = []
    seen: set[str] = set()
    last_ts = 0.0
    try:
        iterator = iter(events or ())
    except TypeError:
        return []
    for order, raw in enumerate(iterator):
        if order >= MAX_EVENTS * 4 or len(out) >= MAX_EVENTS:
            break
        try:
            ev = _coerce(raw, order, last_ts)
        except Exception:  # junk events are dropped, never raised
            log.debug("dropped an unreadable event", exc_info=True)
            continue
        if ev is None or ev.id in seen:
            continue
        seen.add(ev.id)
        last_ts = ev.ts
        out.append(ev)
    out.sort(key=lambda e: (e.ts, e.order))
    for pos, ev in enumerate(out):
        ev.pos = pos
    return out


_DRIVE_ROOT = re.compile(r"/[a-z]/")


class _Paths:
    """Makes paths relative to the project root (or the session's cwd) when they are inside it."""

    def __init__(self, events: list[_Ev]) -> None:
        roots = Counter(e.project for e in events if e.project.startswith("/"))
        roots.update(e.cwd for e in events if e.cwd.startswith("/") and not e.project)
        roots.update(t for e in events if isinstance(t := e.extra.get("work_tree"), str) and t.startswith("/"))
        self.roots = sorted({r.rstrip("/") for r in roots if r.rstrip("/")}, key=len, reverse=True)

    def rel(self, path: str) -> str:
        path = path.strip().strip("'\"`")
        for root in self.roots:
            if path == root:
                return "."
            if path.startswith(root + "/"):
                return path[len(root) + 1 :]
            # a Windows checkout (`/c/Users/…`, posix_form) names its files in any case (the review of session 28)
            if _DRIVE_ROOT.match(root) and path.lower().startswith(root.lower() + "/"):
                return path[len(root) + 1 :]
        path = path.removeprefix("./")
        return path

    def relative_text(self, text: str) -> str:
        """Text with the checkouts' absolute paths made relative (`cd /x/repo/assets` → `cd assets`)."""
        for root in self.roots:
            text = text.replace(root + "/", "").replace(root, ".")
        return text

    def in_project(self, path: str) -> bool:
        rel = self.rel(path)
        if not rel or rel.startswith(("/", "<", "~")) or rel == ".":
            return False
        return not any(p in rel for p in ("site-packages", "dist-packages", "node_modules/",
                                          "/lib/python", "frozen "))


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_OPERATORS = {"&&", "||", ";", "&", "|", "|&", ";;", "\n"}
_GROUPING = {"(", ")", "((", "))", "()"}
# A call the harness or the person stopped before it ran (held-out review 9, acmebank: "This
# command requires approval", three sessions in a row).
NEVER_RAN = re.compile(r"<tool_use_error>|The user doesn't want to (?:proceed|take this action)|"
                       r"Permission to use \S+ has been denied|(?:command|part) requires approval|"
                       r"requested permissions to|Permission for this action was denied", re.IGNORECASE)
_WRAPPERS = {"sudo", "time", "nice", "nohup", "command", "exec", "env", "stdbuf", "caffeinate"}
_RUN_WRAPPERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"),
                 ("hatch", "run"), ("rye", "run"), ("pnpm", "exec"), ("pnpm", "dlx"),
                 ("yarn", "dlx"), ("yarn", "exec"), ("npm", "exec"), ("bundle", "exec")}
_RUNNERS = {"npx", "pnpx", "bunx"}
_SUBCOMMAND_TOOLS = {
    "git", "npm", "pnpm", "yarn", "bun", "pip", "uv", "poetry", "pdm", "cargo", "go", "docker",
    "docker-compose", "kubectl", "helm", "terraform", "brew", "apt", "apt-get", "conda", "gh",
    "alembic", "dotnet", "deno", "rustup", "gcloud", "aws", "systemctl", "bundle", "rails",
    "composer", "mix", "swift", "nx", "turbo", "bazel", "pre-commit", "tox", "nox", "just",
}
_SELECTOR_FLAGS = {"-k", "-m", "--filter", "-F", "-p", "--package", "-w", "--workspace",
                   "-t", "--testNamePattern", "--project", "--features", "--bin", "--test", "-run"}
_DIR_FLAGS = {"-C", "--prefix", "--dir", "--cwd", "--manifest-path", "--project-dir"}
_VALUE_FLAGS = {"--tb", "-n", "--maxfail", "--timeout", "-j", "--jobs", "--log-level",
                "--reporter", "--color", "--port", "--host", "-o", "--output", "-c", "--config",
                "-r", "--requirement", "-e", "-i", "--index-url", "-f", "--file", "-H",
                "--header", "-X", "--request", "-d", "--data", "-u", "--user", "-b", "--bind",
                "-w", "--workers", "--env-file", "--cov", "--rootdir", "-W", "--deselect"}
_ALIASES = {"i": "install", "add": "install", "ci": "install", "rm": "remove",
            "uninstall": "remove", "up": "update", "t": "test", "tst": "test", "b": "build"}
_JS_PMS = {"npm", "pnpm", "yarn", "bun"}
_JS_BUILTIN = {"install", "remove", "update", "run", "test", "exec", "dlx", "audit", "outdated",
               "publish", "init", "link", "why", "list", "ls", "pack", "version", "cache",
               "store", "config", "create", "x", "upgrade", "info", "view", "whoami", "login",
               "rebuild", "dedupe", "prune", "workspace", "workspaces", "set", "start"}
_SETUP = {"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "ulimit", "alias",
          "shopt", "trap", "umask"}
_TRIVIAL = {"echo", "printf", "true", "false", ":", "sleep", "clear", "pwd", "wait", "exit",
            "read", "tput", "date"}
READ_ONLY = {
    "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "find", "fd", "tree", "pwd", "echo", "printf", "which", "type", "whereis", "wc", "diff",
    "cmp", "stat", "file", "du", "df", "env", "printenv", "id", "whoami", "uname", "date", "true",
    "false", "test", "[", "[[", "sleep", "jq", "yq", "sort", "uniq", "cut", "tr", "ps", "pgrep",
    "lsof", "basename", "dirname", "realpath", "readlink", "md5sum", "sha256sum", "shasum",
    "xxd", "od", "hexdump", "column", "nl", "tee", "strings", "locate", "history", "hostname",
    "top", "free", "uptime", "awk", "sed", "bat", "exa", "eza", "open", "xdg-open", "man",
}
_GIT_READ = {"status", "log", "diff", "show", "branch", "remote", "rev-parse", "blame", "ls-files",
             "describe", "tag", "reflog", "config", "shortlog", "grep", "ls-remote", "fetch"}
PROBES = {"curl", "wget", "http", "https", "nc", "ncat", "telnet", "ping", "psql", "mysql",
          "redis-cli", "mongosh", "pg_isready", "httpie", "xh", "dig", "nslookup", "ssh"}
_CHECK_EXES = {"pytest", "tox", "nox", "jest", "vitest", "mocha", "ava", "tsc", "mypy", "pyright",
               "ruff", "flake8", "pylint", "eslint", "make", "cmake", "ninja", "mvn", "gradle",
               "gradlew", "rspec", "phpunit", "playwright", "cypress", "unittest", "nosetests",
               "black", "isort", "prettier", "stylelint", "biome", "golangci-lint", "ctest",
               "meson", "bazel", "xcodebuild", "vue-tsc", "svelte-check", "shellcheck"}
_CHECK_SUBS = {"test", "build", "check", "clippy", "vet", "lint", "typecheck", "type-check",
               "compile", "verify", "tsc", "ci", "e2e", "run test", "run build", "run lint",
               "run typecheck", "run type-check", "run check", "run test:unit", "run e2e",
               "run compile", "run ci"}
_INSTALL_SUBS = {"install", "sync", "get", "mod download", "update"}


@dataclass
class Command:
    """The main simple command of a shell line, normalised for matching runs of "the same" command."""

    raw: str
    main: str = ""
    exe: str = ""
    tool: str = ""
    sub: str = ""
    targets: tuple[str, ...] = ()
    selectors: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    exports: dict[str, str] = field(default_factory=dict)
    dir: str = ""
    background: bool = False
    setups: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    writes: tuple[str, ...] = ()  # files the line writes (redirects, tee, sed -i, cp/mv targets)

    @property
    def family(self) -> str:
        return "js" if self.exe in _JS_PMS else self.exe

    @cached_property
    def key(self) -> str:
        parts = [self.dir, self.family, self.sub, " ".join(sorted(self.targets)),
                 " ".join(sorted(self.selectors))]
        return "\x1f".join(parts)

    @property
    def is_check(self) -> bool:
        if self.exe in _CHECK_EXES:
            return True
        if self.exe == "python" and self.targets[:1] == ("setup.py",):
            return self.targets[1:2] in (("build",), ("build_ext",), ("build_py",), ("bdist_wheel",), ("develop",))
        return self.sub in _CHECK_SUBS and self.exe in (_JS_PMS | {"cargo", "go", "dotnet", "deno",
                                                                   "swift", "bazel", "nx", "turbo",
                                                                   "gradle", "mvn", "python", "mix",
                                                                   "rake", "bundle", "sbt", "lein",
                                                                   "stack", "cabal", "zig", "make"})

    @property
    def is_install(self) -> bool:
        if self.exe in {"pip", "cargo", "poetry", "pdm", "uv", "brew", "apt", "apt-get", "conda",
                        "bundle", "composer", "go"} | _JS_PMS:
            return self.sub in _INSTALL_SUBS or self.sub == "add"
        return False

    @property
    def is_read_only(self) -> bool:
        if not self.exe or self.exe in READ_ONLY:
            return True
        if self.exe == "git":
            return self.sub in _GIT_READ or not self.sub
        # `python -c ...`, `node -e ...`, version queries
        return self.exe in ("python", "node") and not self.targets and not self.sub

    @property
    def changes_things(self) -> bool:
        """Whether running it did work rather than looked: a Q&A turn's `python -c` or `grep`
        does not make the turn a working one; a build, an install or a written file does."""
        if self.writes or not self.is_read_only:
            return True
        return any(not parse_command(step).is_read_only for step in self.others)  # `git remote add … && git push`

    @property
    def is_probe(self) -> bool:
        return self.exe in PROBES

    @property
    def display(self) -> str:
        return _short(self.main or self.raw, 60)

    @property
    def where(self) -> str:
        return f" in {self.dir}/" if self.dir and self.dir != "." else ""


def _split(command: str) -> list[str]:
    return list(_tokens(command) if len(command) <= TOKENS_CACHED_CHARS else _tokens.__wrapped__(command))


TOKENS_CACHED_CHARS = 4096  # every line a rule reads; with 512 entries the cache holds at most ~20 MB


def _lines_apart(command: str) -> str:
    """A newline outside quotes and heredoc bodies ends a command, as `;` does: `git rm X` on one
    line and `git commit …` on the next were one `git rm` whose targets were every later word
    (held-out review 18: "10 files changed", among them `git`, `commit`, `push`, `origin`)."""
    if "\n" not in command:
        return command
    bodies = [(m.start(), m.end()) for m in HEREDOC.finditer(command)]
    out: list[str] = []
    quote = ""
    i = b = 0
    while i < len(command):
        while b < len(bodies) and bodies[b][1] <= i:
            b += 1
        char = command[i]
        if b < len(bodies) and bodies[b][0] <= i and not quote:
            out.append(command[i:bodies[b][1]])
            i = bodies[b][1]
            continue
        if char == "\\" and quote != "'":
            out.append(command[i:i + 2])
            i += 2
            continue
        if char == "#" and not quote and (i == 0 or command[i - 1] in " \t\n;&|("):
            end = command.find("\n", i)
            i = len(command) if end < 0 else end  # a comment: its quotes quote nothing
            continue
        if char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        elif char == "\n" and not quote:
            char = " ; "
        out.append(char)
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _tokens(command: str) -> tuple[str, ...]:
    """A session runs the same lines again and again, and each is read by several rules: shlex
    tokenising them took half of a long session's compression, under the owner's lock."""
    command = _lines_apart(re.sub(r"\\\r?\n", " ", command))  # shlex keeps a continuation as a newline
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return tuple(lexer)
    except ValueError:
        return tuple(re.findall(r"&&|\|\||[|;&]|[^\s|;&]+", command))


def _segments(tokens: list[str], groups: bool = False) -> list[tuple[list[str], bool]]:
    """Simple commands of a line, each with whether it reads a pipe (is a filter). A `$( … )`
    stays inside its word; `( … )` and `{ …; }` group commands, and with `groups` each opening and
    closing comes as a segment of its own ([GROUP_OPEN] / [GROUP_CLOSE]): a `cd` inside ends there."""
    out: list[tuple[list[str], bool]] = []
    current: list[str] = []
    piped = False
    depth = 0
    tokens = [part for tok in tokens for part in _unglue(tok)]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok in ("(", "((") and current and current[-1].endswith("$"):
            inner, level = [], len(tok)  # `$(…)`, `$((…))`: part of the word it is in
            while i < len(tokens) and level > 0:
                level += _NESTING.get(tokens[i], 0)
                if level > 0:
                    inner.append(tokens[i])
                i += 1
            current[-1] += tok + " ".join(inner) + tok.replace("(", ")")
            continue
        if tok in _OPERATORS:
            if current:
                out.append((current, piped))
            current = []
            piped = tok in ("|", "|&")
            continue
        if tok in ("(", "((") or tok == "{" and not current:
            if current:
                out.append((current, piped))
                current = []
            depth += 1
            if groups:
                out.append(([GROUP_OPEN], False))
            continue
        if tok in (")", "))") and depth or tok == "}" and not current and depth:
            if current:
                out.append((current, piped))
                current = []
            depth -= 1
            if groups:
                out.append(([GROUP_CLOSE], False))
            continue
        current.append(tok)
    if current:
        out.append((current, piped))
    return out


GROUP_OPEN, GROUP_CLOSE = "\x00(", "\x00)"
_NESTING = {"(": 1, "((": 2, ")": -1, "))": -2}
_GLUED = re.compile(r"&&|\|\||;;|\|&|[();&|]")


def _unglue(token: str) -> list[str]:
    """shlex runs punctuation together (`);`, `)&&`): the operators and parentheses apart."""
    if len(token) < 2 or token in _OPERATORS or token in _GROUPING or set(token) - set("();&|"):
        return [token]
    return _GLUED.findall(token)


def _strip_redirects(tokens: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for i, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        if tok and set(tok) <= set("<>&") and tok not in ("&&",):
            skip = True
            continue
        if tok.isdigit() and i + 1 < len(tokens) and tokens[i + 1][:1] in "<>" and tokens[i + 1]:
            continue
        out.append(tok)
    return out


def _exe_name(token: str) -> str:
    name = token.rsplit("/", 1)[-1].lower()
    name = re.sub(r"(?<=[a-z])\d+(?:\.\d+)*$", "", name) if name.startswith(("python", "pip")) else name
    return {"py.test": "pytest", "py": "python", "docker-compose": "docker-compose",
            "gradlew": "gradle", "nodejs": "node"}.get(name, name)


def step_of(line: Command, step: str, rel: Callable[[str], str] | None = None) -> Command:
    """One step of a chained line, parsed where the line left the shell, with what it exported before it."""
    cmd = parse_command(step, line.dir, rel)
    cmd.exports = {**line.exports, **cmd.exports}
    return cmd


def chain(line: Command, rel: Callable[[str], str] | None = None) -> list[Command]:
    """The line's main command and its other steps, each parsed."""
    return [line, *(step_of(line, step, rel) for step in line.others)]


def parse_command(command: str, cwd_rel: str = "", rel: Callable[[str], str] | None = None) -> Command:
    """Parse one shell line into its main command (never raises)."""
    cmd = Command(raw=command)
    try:
        _parse_into(cmd, command, cwd_rel, rel or (lambda p: p))
    except Exception:  # noqa: BLE001 - pragma: no cover; a shell line never breaks compression
        cmd.main = command.strip()[:200]
    return cmd


def _parse_into(cmd: Command, command: str, cwd_rel: str, rel: Callable[[str], str]) -> None:
    text = command.strip()[:4000]
    tokens = _split(text)
    if tokens and tokens[-1] == "&":
        cmd.background = True
    directory = cwd_rel
    outer: list[str] = []
    main: list[str] | None = None
    for seg, piped in _segments(tokens, groups=True):
        if seg == [GROUP_OPEN]:
            outer.append(directory)
            continue
        if seg == [GROUP_CLOSE]:
            directory = outer.pop() if outer else directory  # `(cd x && make) && make test`
            continue
        seg = _strip_redirects(seg)
        # shell grammar is no program: `for c in a b; do git show $c; done` runs `git show`
        while seg and seg[0] in _KEYWORDS_BEFORE:
            seg = seg[1:]
        if not seg or seg[0] in _HEADERS:
            continue
        env: dict[str, str] = {}
        while seg and _ASSIGN.match(seg[0]):
            name, value = _ASSIGN.match(seg[0]).groups()  # type: ignore[union-attr]
            env[name] = value
            seg = seg[1:]
        if not seg:
            cmd.exports.update(env)
            continue
        head = seg[0]
        if head in ("cd", "pushd"):
            target = seg[1] if len(seg) > 1 else ""
            if target and target != "-":
                directory = _join_dir(directory, rel(target))
            continue
        if head == "export":
            for arg in seg[1:]:
                match = _ASSIGN.match(arg)
                if match:
                    cmd.exports[match.group(1)] = match.group(2)
            cmd.setups.append(_joined(seg))
            continue
        if head in _SETUP:
            cmd.setups.append(_joined(seg))
            continue
        if piped and main is not None:
            continue
        if main is None or (_exe_name(main[0]) in _TRIVIAL and _exe_name(head) not in _TRIVIAL):
            if main is not None:
                cmd.others.append(_joined(main))
            main, cmd.env, cmd.dir = seg, env, directory
        else:
            cmd.others.append(_joined(seg))
    cmd.writes = _written(text, cwd_rel, rel)
    if main is None:
        cmd.main = text[:200]
        cmd.dir = directory
        return
    cmd.main = _joined(main)
    _classify(cmd, main, rel)


_KEYWORDS_BEFORE = frozenset({"do", "then", "else", "elif", "while", "until", "if", "!"})
_HEADERS = frozenset({"for", "select", "case", "done", "fi", "esac", "in", ";;"})


def _joined(tokens: list[str]) -> str:
    """Tokens back into a line that splits into them again ("/mnt/c/Program Files/…/make.exe")."""
    return " ".join(shlex.quote(t) if re.search(r"\s", t) or re.search(r"[();<>|&]", t) and not
                    re.fullmatch(r"[();<>|&\d]+", t) else t for t in tokens)


HEREDOC = re.compile(r"(?<!<)<<(?!<)-?[ \t]*(['\"]?)([A-Za-z_]\w*)\1([^\n]*)\n.*?(?:\n\s*\2\s*(?=\n|$)|$)", re.DOTALL)
_WRITE_REDIRECTS = {">", ">>", "&>", "&>>", ">|"}
_COPIES = {"cp", "mv", "install", "ln", "rsync"}


def _written(text: str, cwd_rel: str, rel: Callable[[str], str]) -> tuple[str, ...]:
    """The files a shell line writes, as the session would name them (relative to the checkout
    where they are in it): redirect and `tee` targets, `sed -i`/`perl -i` and `nbconvert
    --inplace` files, the target of a copy or move, `touch`. A heredoc's body is text, not shell.
    Without these, a session that wrote its notebooks from Bash "changed nothing" (held-out
    review 4, DefaultWatch)."""
    if not re.search(r">|\btee\b|-[a-z]*i|--in-?place|\b(?:cp|mv|install|ln|rsync|touch|rm)\b", text):
        return ()
    found: list[str] = []
    directory = cwd_rel

    def where(target: str) -> str:
        if target.startswith("/"):
            return rel(target)
        if directory.startswith("/"):
            return rel(posixpath.normpath(f"{directory}/{target}"))
        return _join_dir(directory, rel(target))

    for seg, _piped in _segments(_split(HEREDOC.sub(lambda m: "<< _" + m.group(3), text))):
        for i, tok in enumerate(seg[:-1]):
            if tok in _WRITE_REDIRECTS:
                found.append(where(seg[i + 1]))
        words = _strip_redirects(seg)
        while words and _ASSIGN.match(words[0]):
            words = words[1:]
        if not words:
            continue
        head = _exe_name(words[0])
        if head in ("cd", "pushd") and len(words) > 1:
            directory = where(words[1])
            continue
        if head in ("sudo", "command", "exec", "nice") and len(words) > 1:
            words, head = words[1:], _exe_name(words[1])
        args = words[1:]
        targets: list[str] = []
        if head in ("tee", "touch"):
            targets = [a for a in args if not a.startswith("-")]
        elif head in ("sed", "gsed", "perl") and any(
                re.fullmatch(r"-[nrEsulz]*i\S*" if head != "perl" else r"-[lnpaw0]*i\S*", a)
                or a.startswith("--in-place") for a in args):
            perl = head == "perl"
            scripted = any(_gives_script(a, perl) for a in args)
            plain: list[str] = []
            skip = False
            for a in args:
                if skip:
                    skip = False
                    continue
                if _gives_script(a, perl):
                    skip = True
                    continue
                if a.startswith("-") or not a:
                    continue
                plain.append(a)
            targets = plain if scripted else plain[1:]
        elif head == "git" and args[:1] == ["rm"] and not {"-n", "--dry-run"} & set(args):
            # a file the commit deletes is a change too; what `-r` takes may be a directory
            targets = [a for a in args[1:] if not a.startswith("-")
                       and ("-r" not in args or "." in a.rstrip("/").rsplit("/", 1)[-1])]
        elif "nbconvert" in args and "--inplace" in args:  # also under `uv run --with …`
            targets = [a for a in args if a.endswith(".ipynb")]
        elif head in _COPIES and not any(a == "-t" or a.startswith("--target-directory") for a in args) \
                or head == "git" and args[:1] == ["mv"]:
            plain = [a for a in (args[1:] if head == "git" else args) if not a.startswith("-")]
            # the target names a file, not a directory it lands in
            targets = [t for t in plain[-1:] if len(plain) >= 2 and "." in t.rstrip("/").rsplit("/", 1)[-1]
                       and not t.endswith("/")]
        found.extend(where(t) for t in targets)
    return tuple(_uniq(
        f for f in (t.removeprefix("./") for t in found)
        if f and not f.startswith(("/", "~", "&", "$", "-", "../")) and f not in (".", "..") and not f.isdigit()
        and not re.search(r"[*?${}`<>|]", f) and not f.endswith("/") and not re.match(r"[\w.-]+@?[\w.-]*:", f)))


def _gives_script(arg: str, perl: bool) -> bool:
    """Whether a `sed`/`perl` option carries the script (then the next word is not a file)."""
    return arg in ("-e", "-f", "--expression", "--file") or perl and bool(re.fullmatch(r"-\w*e", arg))


def _join_dir(base: str, target: str) -> str:
    if target.startswith("/") or not base or base == ".":
        return target.strip("/") if not target.startswith("/") else target
    parts = [p for p in f"{base}/{target}".split("/") if p and p != "."]
    out: list[str] = []
    for p in parts:
        if p == ".." and out:
            out.pop()
        else:
            out.append(p)
    return "/".join(out)


def _classify(cmd: Command, main: list[str], rel: Callable[[str], str]) -> None:
    toks = list(main)
    while toks:
        name = _exe_name(toks[0])
        if name in _WRAPPERS:
            toks = toks[1:]
            while toks and (toks[0].startswith("-") or _ASSIGN.match(toks[0])):
                match = _ASSIGN.match(toks[0])
                if match:
                    cmd.env[match.group(1)] = match.group(2)
                toks = toks[1:]
            continue
        if name == "timeout" and len(toks) > 1:
            toks = toks[2:]
            continue
        if name in _RUNNERS:
            toks = [t for t in toks[1:] if t not in ("-y", "--yes")]
            continue
        if len(toks) > 1 and (name, toks[1]) in _RUN_WRAPPERS:
            toks = toks[2:]
            continue
        if name == "python" and len(toks) > 2 and toks[1] == "-m":
            toks = toks[2:]
            continue
        if name == "uv" and len(toks) > 1 and toks[1] == "pip":
            toks = toks[1:]
            continue
        break
    if not toks:
        return
    cmd.exe = _exe_name(toks[0])
    cmd.tool = toks[0]
    rest = toks[1:]
    targets: list[str] = []
    selectors: list[str] = []
    sub = ""
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok.startswith("-") and len(tok) > 1:
            name, _, inline = tok.partition("=")
            takes = name in _SELECTOR_FLAGS or name in _DIR_FLAGS or name in _VALUE_FLAGS
            value = inline if inline else (rest[i + 1] if takes and i + 1 < len(rest) else "")
            if name in _SELECTOR_FLAGS and value:
                selectors.append(f"{name}={value}")
            elif name in _DIR_FLAGS and value:
                cmd.dir = _join_dir(cmd.dir, rel(value))
            i += 1 if inline or not takes else 2
            continue
        if not sub and cmd.exe in _SUBCOMMAND_TOOLS or not sub and cmd.exe in _JS_PMS:
            sub = tok
        else:
            targets.append(tok)
        i += 1
    if cmd.exe in _JS_PMS:
        if not sub:
            sub = "install" if cmd.exe in ("yarn", "bun") else ""
        sub = _ALIASES.get(sub, sub)
        if sub == "run" and targets:
            sub = f"run {targets.pop(0)}"
        elif sub and sub not in _JS_BUILTIN:
            sub = f"run {sub}"  # `pnpm build` is `pnpm run build`
        if sub in ("run test", "test"):
            sub = "test"
    elif sub:
        sub = _ALIASES.get(sub, sub) if cmd.exe in {"pip", "poetry", "pdm", "uv", "cargo",
                                                  "brew", "apt", "apt-get", "conda"} else sub
    cmd.sub = sub
    cmd.targets = tuple(_norm_target(t, rel) for t in targets[:20])
    cmd.selectors = tuple(selectors)


def _norm_target(target: str, rel: Callable[[str], str]) -> str:
    target = rel(target) if target.startswith("/") else target
    target = target.removeprefix("./")
    return target.rstrip("/") or target


def command_key(command: str) -> str:
    """The identity of a command line for "the same command passed later" (see Command.key)."""
    return parse_command(command).key


def _covers(passing: Command, failing: Command) -> bool:
    """Whether a passing run exercises what the failing run did."""
    if passing.dir != failing.dir or passing.family != failing.family or passing.sub != failing.sub:
        return False
    if passing.exe != failing.exe and not (passing.exe in _JS_PMS and failing.exe in _JS_PMS):
        return False
    if passing.selectors and sorted(passing.selectors) != sorted(failing.selectors):
        return False
    if not passing.targets:
        return True
    return all(any(t == p or t.startswith((p + "/", p + "::")) for p in passing.targets)
               for t in failing.targets) and bool(failing.targets)


# ---------------------------------------------------------------------------------------------
# Failures and errors
# ---------------------------------------------------------------------------------------------

_FAIL_TEXT = re.compile(
    r"""(?mx)
    ^=+\ .*\b\d+\ (?:failed|errors?)\b.*=+\s*$       # pytest summary bar
    | ^FAILED\ \S | ^ERROR\ (?:tests?/|\S+\.py)          # pytest short summary lines
    | ^Interrupted:\ \d+\ errors?\ during\ collection
    | ^Traceback\ \(most\ recent\ call\ last\):
    | ^npm\ (?:ERR!|error)\ | \bERR_PNPM_\w+ | ^error\ Command\ failed
    | ^Tests?:\ +(?:\d+\ \w+,\ )*\d+\ failed | ^FAIL\ +\S | ^---\ FAIL:
    | ^\s*(?:Test\ Files|Tests)\ +\d*[1-9]\d*\ failed\b                  # vitest's tally
    | ^error(?:\[E\d+\])?:\ | ^\S+\(\d+,\d+\):\ error\ TS\d+ | ^Found\ \d+\ errors?\ in\ \d+\ files?
    | ^Found\ [1-9]\d*\ errors?\.?\s*$                   # biome's tally (held-out review 33: piped to `tail`, exit 0)
    | ^make(?:\[\d+\])?:\ \*\*\*
    | :\ command\ not\ found$ | ^(?:bash|zsh|sh):\ .*(?:No\ such\ file|not\ found|Permission\ denied)
    | ^fatal:\ | ^Error:\ | ^ERROR:\ 
    | \bBUILD\ FAILED\b | ^error:\ could\ not\ compile
    | ^✖\ \d+\ problems?\ \(\d*[1-9]\d*\ errors?                # ESLint's tally with errors
    | \bexternally-managed-environment\b | ^hint:\ See\ PEP\ 668\b  # pip refusing a system Python
    """
)
_PASS_TEXT = re.compile(
    r"(?m)\b\d+ passed\b|^ok\s|test result: ok|\bTests?:\s+\d+ passed|Build succeeded|"
    r"\bbuilt in [\d.]+m?s\b|Success: no issues found|All checks passed|\bPASS\b|Done in [\d.]+m?s|"
    r"Compiled successfully|Finished .*target"
)
_EXIT_LINE = re.compile(r"^\s*(?:Exit code|exit code|exited with (?:status|code))[:\s]+(-?\d+)\s*$")
_PY_EXC = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure|"
    r"Fault|Timeout|NotFound|Refused|Denied|Invalid)))(?::\s?(.*))?$")
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_PYTEST_LOC = re.compile(r"^(\S+?\.\w+):(\d+):(?: in (\w+)| (\w+))?\s*$")
_DEF = re.compile(r"^\s*(?:>\s*)?(?:async\s+)?def (\w+)\(")
_JS_FRAME = re.compile(r"^\s*at (?:(?:async )?([\w.$<>]+) )?\(?([^():\s]+\.\w+):(\d+):\d+\)?")
_CHECKER = re.compile(r"^(\S+?\.\w+):(\d+)(?::\d+)?: (?:error|E\d+|F\d+):? (.+)$")
_TSC = re.compile(r"^(\S+?\.\w+)\((\d+),\d+\): error (TS\d+): (.+)$")
_RUST = re.compile(r"^error(?:\[(E\d+)\])?: (.+)$")
_RUST_LOC = re.compile(r"^\s*--> (\S+?):(\d+):\d+")
_NPM_CODE = re.compile(r"^(?:npm (?:ERR!|error)|ERR_PNPM_\w+|error)\s+code\s+(E[A-Z0-9_]{3,})\s*$")
_NPM_MSG = re.compile(r"^(?:npm (?:ERR!|error)\s+)?((?:E[A-Z]{4,}|ERR_PNPM_[A-Z_]+)\b:?\s+.+)$")
_GENERIC = re.compile(r"(?i)\b(?:error|failed|failure|fatal|cannot|can't|unable|not found|denied|"
                      r"refused|no such|invalid|missing|timed out|exception)\b")
_ENV_MISSING = re.compile(
    r"(?i)KeyError: '([A-Z][A-Z0-9_]+)'|"
    r"(?:environment variable|env var(?:iable)?|env)\s+[`'\"]?([A-Z][A-Z0-9_]{2,})[`'\"]?\s+"
    r"(?:is\s+)?(?:not set|missing|required|undefined|unset|must be set|empty)|"
    r"[`'\"]?\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b[`'\"]?\s+(?:is\s+)?(?:not set|missing|required|"
    r"undefined|must be set|is unset)")


_ENVIRON = re.compile(r"environ|getenv|<frozen os>|process\.env|\bENV\[")


@dataclass
class _Err:
    text: str
    name: str
    where: str = ""
    file: str = ""
    symbol: str = ""
    lines: list[str] = field(default_factory=list)
    envvars: list[str] = field(default_factory=list)
    generic: bool = False

    @property
    def key(self) -> str:
        text = re.sub(r"\d+", "#", self.text.lower())
        return " ".join(re.findall(r"[\w#.\-']+", text))[:100]


_CLEAN_TALLY = re.compile(r"(?m)^=+ .*\b\d+ passed\b(?!.*\bfailed\b).*=+\s*$|^\s*Test Files\s+\d+ passed \(\d+\)\s*$|"
                          r"^Tests:\s+\d+ passed, \d+ total\s*$")
# bun test's own tally, which the tests' logs ("[Batch] 1 failed") do not overrule (held-out review 107)
_BUN_TALLY = re.compile(r"(?m)^[ \t]*\d+ pass[ \t]*\n[ \t]*(\d+) fail[ \t]*$")


def _fails(ev: _Ev, cmd: Command) -> bool:
    if ev.failed_tool:
        return True
    if cmd.is_read_only or cmd.is_probe:
        return False
    tail = ev.text[-6000:]
    bun = list(_BUN_TALLY.finditer(tail))
    if any(m.group(1) != "0" for m in bun):
        return True  # bun's own count of failed tests, whatever the status (`| tail` gives tail's)
    if bun:  # what came before bun's tally passed; what came after it (a chained lint) decides the rest
        return bool(_FAIL_TEXT.search(tail, bun[-1].end()))  # (held-out review 125: a commit whose hook ran the tests)
    if not _FAIL_TEXT.search(tail):
        return False
    if re.search(r"\|\s*head\b", cmd.raw[:4000]) and any(step.is_check for step in chain(cmd)) \
            and not re.search(r"(?m)^[ \t]*(?:Tests?:?[ \t]+)?[1-9]\d* (?:fail|failed|failing)\b|^[ \t]*FAIL\b|^\(fail\) |"
                              r"exited with code [1-9]|\bFound [1-9]\d* errors?\b|ELIFECYCLE|npm ERR!|^Exit code [1-9]", tail):
        # a test run cut by `head` before its tally, with head's status: its first lines (a passing test's logged
        # stack traces) do not say it failed (held-out review 157: "Commands: 7 run, 1 failed", and none had)
        return False
    # a test run whose own tally says all passed, beside a stray `fatal: not a git repository` (held-out
    # review 28, blastline: `bun run build && bunx vitest run`, "Test Files  17 passed (17)")
    clean = _CLEAN_TALLY.search(tail) and not re.search(r"\b[1-9]\d* failed\b", tail)
    return not (clean and any(step.is_check for step in chain(cmd)))


def _error_of(ev: _Ev, paths: _Paths) -> _Err:
    text = ev.text
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not _EXIT_LINE.match(ln)]
    err = (_python_error(lines, paths) or _checker_error(lines, paths) or _npm_error(lines)
           or _mention_error(text) or _generic_error(lines, ev))
    tail = text[-8000:]
    found = _ENV_MISSING.findall(tail)
    environ = bool(_ENVIRON.search(tail))
    err.envvars = _uniq(next((g for i, g in enumerate(groups) if g and (i or environ)), "")
                        for groups in found)
    return err


def _python_error(lines: list[str], paths: _Paths) -> _Err | None:
    exc_index = -1
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        match = _PY_EXC.match(line)
        if match and (line.startswith("E ") or match.group(3) is not None or i == len(lines) - 1):
            exc_index = i
            break
    assertion = None
    if exc_index < 0:
        e_lines = [ln.strip()[1:].strip() for ln in lines if re.match(r"^E\s{2,}\S", ln.strip())]
        loc = next((m for m in map(_PYTEST_LOC.match, reversed(lines)) if m and m.group(4)), None)
        if not e_lines or not loc:
            return None
        assertion = f"{loc.group(4)}: {e_lines[0]}"
    if assertion:
        name, message, line = assertion.split(":", 1)[0], assertion.split(":", 1)[1].strip(), assertion
    else:
        match = _PY_EXC.match(lines[exc_index].strip())
        assert match is not None
        name, message = match.group(2), (match.group(3) or "").strip()
        line = lines[exc_index].strip()
        line = line[1:].strip() if line.startswith("E ") else line
    text = f"{name}: {message}" if message else name
    err = _Err(text=_short(text, 120), name=name, lines=[line])
    _locate_python(err, lines, paths)
    return err


def _locate_python(err: _Err, lines: list[str], paths: _Paths) -> None:
    frames: list[tuple[str, str, str]] = []
    last_def = ""
    for line in lines:
        d = _DEF.match(line)
        if d:
            last_def = d.group(1)
        f = _PY_FRAME.match(line)
        if f:
            frames.append((f.group(1), f.group(2), f.group(3)))
            continue
        loc = _PYTEST_LOC.match(line.strip())
        if loc:
            frames.append((loc.group(1), loc.group(2), loc.group(3) or last_def))
            last_def = ""
            continue
        j = _JS_FRAME.match(line)
        if j:
            frames.insert(0, (j.group(2), j.group(3), (j.group(1) or "").split(".")[-1]))
    project = [fr for fr in frames if paths.in_project(fr[0])]
    source = [fr for fr in project if not re.match(r"(?:.*/)?(?:tests?|spec|__tests__)/", paths.rel(fr[0]))]
    if not project:
        return
    path, lineno, func = (source or project)[-1]
    err.file = paths.rel(path)
    err.symbol = func if func not in ("<module>", "") else ""
    err.where = f"{err.file}:{lineno}"


def _checker_error(lines: list[str], paths: _Paths) -> _Err | None:
    for i, line in enumerate(lines):
        s = line.strip()
        m = _TSC.match(s)
        if m:
            err = _Err(_short(f"{m.group(3)}: {m.group(4)}", 120), m.group(3), lines=[s])
            err.file, err.where = paths.rel(m.group(1)), f"{paths.rel(m.group(1))}:{m.group(2)}"
            return err
        m = _CHECKER.match(s)
        if m and paths.in_project(m.group(1)):
            message = re.sub(r"\s{2,}", " ", m.group(3)).strip()
            code = re.search(r"\[([\w-]+)\]$", message)
            err = _Err(_short(message, 120), code.group(1) if code else "error", lines=[s])
            err.file, err.where = paths.rel(m.group(1)), f"{paths.rel(m.group(1))}:{m.group(2)}"
            return err
        m = _RUST.match(s)
        if m and not s.lower().startswith("error: could not compile"):
            err = _Err(_short(s[len("error"):].lstrip(":[] ") if not m.group(1) else
                              f"{m.group(1)}: {m.group(2)}", 120), m.group(1) or "error", lines=[s])
            for nxt in lines[i + 1 : i + 4]:
                loc = _RUST_LOC.match(nxt)
                if loc:
                    err.file, err.where = paths.rel(loc.group(1)), f"{paths.rel(loc.group(1))}:{loc.group(2)}"
                    break
            return err
    return None


def _npm_error(lines: list[str]) -> _Err | None:
    code = ""
    for line in lines:
        m = _NPM_CODE.match(line.strip())
        if m:
            code = m.group(1)
            break
    for line in lines:
        m = _NPM_MSG.match(line.strip())
        if m and (not code or m.group(1).startswith(code)):
            message = m.group(1)
            name = code or message.split()[0].rstrip(":")
            return _Err(_short(message, 120), name, lines=[line.strip()])
    if code:
        return _Err(code, code, lines=[code])
    return None


def _mention_error(text: str) -> _Err | None:
    tail = text[-2000:]
    if not tail.strip():
        return None
    try:
        from graphmem.extract.text import extract

        mentions = [m for m in extract(tail, concepts=False) if m.kind == "error"]
    except Exception:  # noqa: BLE001 - extraction is a bonus; the regex rules stand alone
        return None
    mentions = [m for m in mentions if not m.norm.startswith("exit ")]
    if not mentions:
        return None
    m = mentions[-1]
    line = next((ln.strip() for ln in tail.splitlines() if m.text in ln), m.text)
    text_ = f"{m.norm}: {m.detail}" if m.detail else _short(line, 120)
    return _Err(_short(text_, 120), m.norm, lines=[line])


def _generic_error(lines: list[str], ev: _Ev) -> _Err:
    for line in lines[-40:]:
        if _GENERIC.search(line):
            return _Err(_short(line.strip(), 120), "error", lines=[line.strip()], generic=True)
    code = ev.exit_code if ev.exit_code not in (None, 0) else None
    label = f"exit {code}" if code is not None else "an error"
    return _Err(label, label, generic=True)


# ---------------------------------------------------------------------------------------------
# The session, analysed once
# ---------------------------------------------------------------------------------------------


@dataclass
class _Run:
    ev: _Ev
    cmd: Command
    failed: bool
    err: _Err | None = None
    pending: bool = False  # started in the background; its outcome never came back


# ---------------------------------------------------------------------------------------------
# Background commands: "Command running in background with ID: b2ed671" is no outcome. The outcome
# comes later, from TaskOutput/BashOutput (`<exit_code>`), from the harness's notification
# ("completed (exit code 0)"), or from the agent reading the task's output file.
# ---------------------------------------------------------------------------------------------

TASK_OUTPUT_TOOLS = frozenset({"TaskOutput", "BashOutput"})
# Started in the background, or moved there: past the Bash tool's timeout, or so that a message
# could reach the agent ("Command did not complete within its 120s timeout and was moved to the
# background (ID: bhd7n484s)", held-out review 5, solar d6ced6b4).
_BACKGROUND = re.compile(r"\s*Command (?:running in background with ID: ([\w-]+)|(?:did not complete within its "
                         r"\d+s timeout and )?was moved to the background \(ID: ([\w-]+)\))")
_BACKGROUND_KEY = re.compile(r'"backgroundTaskId":\s*"([\w-]+)"')  # the hook payload's tool_response
_TASK_ID = re.compile(r"<task-id>([\w-]+)</task-id>")
_TASK_EXIT = re.compile(r"<exit_code>(-?\d{1,4})</exit_code>")
_TASK_DONE = re.compile(r"<status>\s*(?:completed|failed|killed)\s*</status>")
_NOTIFIED_EXIT = re.compile(r"<summary>[^<]*?\bexit code (-?\d{1,4})\)?[^<]*</summary>")
_TASK_FILE = re.compile(r"/tasks/([\w-]+)\.output\b")
_TASK_BODY = re.compile(r"<(output|stdout|stderr)>\n?(.*?)(?:</\1>|$)", re.DOTALL)


def background_id(output: str) -> str:
    """The task id of a command the harness started in the background ("" if it ran in the
    foreground): the transcript's words for it, or the hook payload's `backgroundTaskId`."""
    match = _BACKGROUND.match(output[:300]) or _BACKGROUND_KEY.search(output[:2000])
    return next((g for g in match.groups() if g), "") if match else ""


def task_outcome(tool: str, tool_input: dict[str, Any], output: str) -> tuple[str, int | None, str]:
    """(task id, exit code or None while it runs, its output) from a TaskOutput/BashOutput call,
    or from the harness's `<task-notification>` (tool "", no output)."""
    if tool in TASK_OUTPUT_TOOLS:
        task = tool_input.get("task_id") or tool_input.get("bash_id") or ""
        # only the harness's own tag, and only once the task ended: "exit code 2" in a running
        # task's output is what its program printed
        code = _TASK_EXIT.search(output) if _TASK_DONE.search(output) else None
    else:
        found = _TASK_ID.search(output[:400])
        task = found.group(1) if found else ""
        code = _NOTIFIED_EXIT.search(output[:2000])
    exit_code = int(code.group(1)) if code else None
    if not tool:
        return str(task), exit_code, ""
    body = "\n".join(m.group(2).strip() for m in _TASK_BODY.finditer(output))
    return str(task), exit_code, body or output


def _settle_background(runs: list[_Run], events: list[_Ev], transcript: Any, paths: _Paths) -> None:
    started = {bid: run for run in runs if (bid := background_id(run.ev.text))}
    for run in runs:
        if run.ev.tool_input.get("run_in_background") is True and all(run is not r for r in started.values()):
            run.pending, run.failed, run.err = True, False, None  # started, and no id to hear back by
    if not started:
        return
    outcome: dict[str, int] = {}
    output: dict[str, str] = {}
    for ev in events:
        if ev.event == "post-tool" and ev.tool in TASK_OUTPUT_TOOLS:
            task, code, text = task_outcome(ev.tool, ev.tool_input, ev.text)
            if task in started and code is not None:
                outcome[task], output[task] = code, text
        elif (ev.event == "post-tool" and (read := _TASK_FILE.search(ev.command or str(ev.tool_input.get("file_path") or "")))
              and read.group(1) in started and ev.text.strip() and not ev.failed_tool):
            output.setdefault(read.group(1), ev.text)  # the output only: the outcome is the exit code
    notes = [*(ev.text for ev in events if ev.event == "user-prompt"),
             *(msg.text for msg in transcript or () if msg.role == "user")]
    for note in notes:
        if "<task-notification>" in note[:300]:
            task, code, _ = task_outcome("", {}, note)
            if task in started and code is not None:
                outcome.setdefault(task, code)
    for task, run in started.items():
        if task not in outcome:
            run.pending, run.failed, run.err = True, False, None
            continue
        run.ev = replace(run.ev, text=output.get(task) or run.ev.text, exit_code=outcome[task])
        run.failed = outcome[task] != 0 or _fails(run.ev, run.cmd)
        run.err = _error_of(run.ev, paths) if run.failed else None


@dataclass
class _Session:
    events: list[_Ev]
    session_id: str
    paths: _Paths
    runs: list[_Run]
    prompts: list[_Ev]
    transcript: Any
    headlines: dict[str, str] = field(default_factory=dict)
    findings: list[Any] = field(default_factory=list)  # lessons.ranked_findings of the transcript

    edits: list[_Ev] = field(default_factory=list)

    @cached_property
    def commits(self) -> dict[str, tuple[str, _Run]]:
        """The session's commits (see _commits), read once for the summary and the commit items."""
        return _commits(self)

    def edits_between(self, a: _Ev, b: _Ev) -> list[_Ev]:
        """Successful edits strictly after event `a` and before event `b` (positions in time order)."""
        positions = [e.pos for e in self.edits]
        return self.edits[bisect_right(positions, a.pos) : bisect_left(positions, b.pos)]

    def runs_between(self, a: _Run, b: _Run) -> list[_Run]:
        positions = [r.ev.pos for r in self.runs]
        return self.runs[bisect_right(positions, a.ev.pos) : bisect_left(positions, b.ev.pos)]


_NOT_TYPED = re.compile(r"\s*(?:<(?:task-notification|command-name|command-message|local-command-\w+|"
                        r"bash-\w+)>|This session is being continued from a previous|"
                        r"Another Claude session sent a message:|<cross-session-message\b|"
                        + "|".join(map(re.escape, LOOP_TICK)) + ")")


def _analyse(events: list[_Ev], transcript: Any) -> _Session:
    session_ids = Counter(e.session_id for e in events if e.session_id)
    session_id = session_ids.most_common(1)[0][0] if session_ids else ""
    if not session_id and transcript is not None:
        session_id = getattr(transcript, "session_id", "") or ""
    paths = _Paths(events)
    if not paths.roots and transcript is not None:
        cwds = Counter(m.cwd for m in transcript if getattr(m, "cwd", "").startswith("/"))
        paths.roots = [cwds.most_common(1)[0][0].rstrip("/")] if cwds else []
    runs: list[_Run] = []
    for ev in events:
        if ev.event != "post-tool" or not ev.command.strip() or ev.interrupted:
            continue
        if ev.failed_tool and NEVER_RAN.search(ev.text[:400]):
            continue  # refused before it started: no run, no failure
        cwd_rel = paths.rel(ev.cwd) if ev.cwd else ""
        cmd = parse_command(ev.command, "" if cwd_rel in (".", ev.cwd) else cwd_rel, paths.rel)
        if ev.tool_input.get("run_in_background") is True:
            cmd.background = True
        failed = _fails(ev, cmd)
        told = told_failure(cmd, ev.text, paths.rel)
        if told is not None:
            failed, cmd = True, told
        elif failed and cmd.others:
            from graphmem.capture.lessons import failed_step_of

            cmd = failed_step_of(cmd, ev.text, paths.rel)
        runs.append(_Run(ev, cmd, failed, _error_of(ev, paths) if failed else None))
    try:
        _settle_background(runs, events, transcript, paths)
    except Exception:
        log.warning("background runs left unsettled", exc_info=True)
    for e in events:
        if e.event == "user-prompt":
            e.text = strip_attached(e.text).strip()
    # a built-in command alone (`/effort`, held-out review 35) asks nothing of the session
    prompts = [e for e in events if e.event == "user-prompt" and e.text.strip()
               and not _NOT_TYPED.match(e.text) and e.text.split()[0] not in BUILT_IN_COMMANDS]
    return _Session(events, session_id, paths, runs, prompts, transcript,
                    edits=[e for e in events if e.is_edit])


# ---------------------------------------------------------------------------------------------
# Rule: failure → fix, and unresolved failures
# ---------------------------------------------------------------------------------------------


@dataclass
class _Open:
    err: _Err
    first: _Run
    last: _Run
    count: int = 1


def _failure_rules(s: _Session) -> list[Draft]:
    drafts: list[Draft] = []
    open_by_cmd: dict[str, dict[str, _Open]] = {}
    failing_cmds: dict[str, Command] = {}
    for run in s.runs:
        cmd = run.cmd
        if cmd.is_read_only or cmd.is_probe or not cmd.exe or run.pending:
            continue
        # resolve open failures this run covers
        for key, errors in list(open_by_cmd.items()):
            same = key == cmd.key
            if run.failed and (not same or run.err is None or run.err.generic):
                continue  # only a pass, or the same command failing differently, clears E
            if not same and not _covers(cmd, failing_cmds[key]):
                continue
            present = run.err.key if run.failed and run.err else None
            for err_key, op in list(errors.items()):
                if err_key != present:
                    drafts.append(_pitfall(s, op, run))
                    del errors[err_key]
            if not errors:
                del open_by_cmd[key]
        if run.failed and run.err is not None:
            if run.err.generic and not (cmd.is_check or cmd.is_install):
                continue
            errors = open_by_cmd.setdefault(cmd.key, {})
            failing_cmds[cmd.key] = cmd
            existing = errors.get(run.err.key)
            if existing:
                existing.last, existing.count = run, existing.count + 1
            else:
                errors[run.err.key] = _Open(run.err, run, run)
    for key, errors in open_by_cmd.items():
        latest = max(errors.values(), key=lambda o: o.last.ev.pos)
        drafts.append(_unresolved(s, failing_cmds[key], latest, list(errors.values())))
    return drafts


def _added_lines(ev: _Ev) -> list[str]:
    text = ev.text[:HEAD * 2]
    if ev.tool in WRITE_TOOLS:
        return [ln for ln in text.splitlines() if ln.strip()]
    added = [ln[1:] for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if not added and ev.tool not in ("Edit", "MultiEdit", "apply_patch"):
        added = [ln for ln in text.splitlines() if ln.strip()]
    return added


def _removed_lines(ev: _Ev) -> list[str]:
    return [ln[1:] for ln in ev.text[:HEAD * 2].splitlines() if ln.startswith("-") and not ln.startswith("---")]


_NEW_DEF = re.compile(r"^\s*(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn|const|let)\s+"
                      r"([A-Za-z_]\w*)")


def _gist(lines: list[str], subjects: list[str]) -> str:
    """The most telling added line: one that names the error's subject, else real code."""
    code = []
    in_doc = False
    for ln in lines:
        s = ln.strip()
        if s.count('"""') == 1 or s.count("'''") == 1:
            in_doc = not in_doc
            continue
        if in_doc or not s or s.startswith(("#", "//", "/*", "*", '"""', "'''", "import ", "from ",
                                            "@", "}", ")", "]")):
            continue
        code.append(s)
    for s in code:
        if any(sub and sub in s for sub in subjects) and not _NEW_DEF.match(s):
            return s
    for s in code:
        if not _NEW_DEF.match(s) and len(s) > 6:
            return s
    return code[0] if code else ""


def _subjects(err: _Err) -> list[str]:
    quoted = re.findall(r"['\"`]([^'\"`]{2,60})['\"`]", err.text)
    return _uniq([*err.envvars, *quoted, err.symbol])


def _pitfall(s: _Session, op: _Open, fixed: _Run) -> Draft:
    err, fail = op.err, op.last
    subjects = _subjects(err)
    edits = s.edits_between(fail.ev, fixed.ev)
    relevant = [e for e in edits if any(sub and sub in e.text for sub in subjects) or
                any(s.paths.rel(f) == err.file for f in e.files)]
    edits = relevant or edits[-3:]
    edit_files = _uniq(s.paths.rel(f) for e in edits for f in e.files)
    removed = {ln.strip() for e in edits for ln in _removed_lines(e)}
    added = [ln for e in edits for ln in _added_lines(e) if ln.strip() not in removed]
    new_defs = _uniq(m.group(1) for ln in added if (m := _NEW_DEF.match(ln)) and ln.strip() not in removed)
    between = s.runs_between(fail, fixed)
    env_set = _uniq([*(k for k in fixed.cmd.env if k not in fail.cmd.env),
                     *(k for r in between if not r.failed for k in r.cmd.exports),
                     *(k for k in fixed.cmd.exports if k not in fail.cmd.exports)])
    other_cmds = _uniq(r.cmd.display for r in between
                       if not r.failed and not r.cmd.is_read_only and not r.cmd.is_probe
                       and r.cmd.key != fail.cmd.key and r.cmd.exe and r.cmd.key != fixed.cmd.key)
    switched = fixed.cmd.exe != fail.cmd.exe
    fix_parts: list[str] = []
    if switched:
        fix_parts.append(f"using `{_short(fixed.cmd.main, 40)}` instead of `{fail.cmd.exe}`")
    if env_set:
        fix_parts.append(f"setting {', '.join(env_set[:3])}")
    gist = _gist(added, subjects)
    if edit_files:
        where = ", ".join(edit_files[:2]) + (f" (+{len(edit_files) - 2})" if len(edit_files) > 2 else "")
        if new_defs:
            fix_parts.append(f"adding `{new_defs[0]}` in {where}")
        else:
            fix_parts.append(f"editing {where}")
    if other_cmds and not fix_parts:
        fix_parts.append(f"running `{_short(other_cmds[-1], 50)}`")
    flaky = not fix_parts
    verified = not flaky and (fixed.cmd.is_check and not fixed.failed or any(
        r.cmd.is_check and not r.failed and not r.pending for r in s.runs if r.ev.pos > fixed.ev.pos))
    cmd_text = f"`{fail.cmd.display}`{fail.cmd.where}"
    if flaky:
        title = f"{_short(err.text, 80)} in {cmd_text}: passed on a re-run without visible changes (flaky?)"
    else:
        fix = " and ".join(fix_parts)
        title = f"{_short(err.text, 80)} in {cmd_text}: fixed by {fix}"
        if gist and len(title) + len(gist) + 5 <= TITLE_MAX:
            title += f" (`{gist}`)"
        elif gist and len(title) < TITLE_MAX - 30:
            title += f" (`{_short(gist, TITLE_MAX - len(title) - 5)}`)"
    body = [f"Failed: `{_short(fail.cmd.main or fail.cmd.raw, 200)}`{fail.cmd.where}"
            + (f" ({op.count}×)" if op.count > 1 else "") + f" with {err.text}"]
    if err.where:
        body.append(f"Raised at: {err.where}" + (f" in {err.symbol}()" if err.symbol else ""))
    if err.lines and err.lines[0] not in err.text:
        body.append("Error: " + _short(err.lines[0], 300))
    if switched:
        body.append(f"Fix: `{_short(fixed.cmd.main, 200)}` works where `{_short(fail.cmd.main, 200)}` failed.")
    if env_set:
        body.append("Fix: set " + ", ".join(env_set) + " (env prefix or export before the command).")
    for ev in edits[:3]:
        lines = [ln for ln in _added_lines(ev) if ln.strip() and ln.strip() not in removed][:8]
        body.append(f"Edit {', '.join(s.paths.rel(f) for f in ev.files) or ev.tool}:")
        body.extend("  +" + _short(ln, 160) for ln in lines)
    if other_cmds:
        body.append("Also ran: " + ", ".join(f"`{c}`" for c in other_cmds[-3:]))
    outcome = _outcome_line(fixed.ev.text)
    body.append(f"Then `{_short(fixed.cmd.main, 200)}` {'passed' if not fixed.failed else 'no longer shows it'}"
                + (f" ({outcome})" if outcome else "") + ".")
    if verified:
        body.append("Verified by a passing test/build run.")
    key = session_key(s.session_id, "failure-fix", f"{fail.cmd.key}\x1f{err.key}")
    s.headlines[key] = f"fixed {_short(err.name, 40)} in {_short(fail.cmd.main, 40)}"
    ids = _uniq([op.first.ev.id, op.last.ev.id, *(e.id for e in edits),
                 *(r.ev.id for r in between if r.cmd.exports and not r.failed), fixed.ev.id])
    return Draft(
        kind="pitfall", title=_short(title, TITLE_MAX), body=_cap_body("\n".join(body)),
        files=_uniq([*edit_files, err.file]), symbols=_uniq([*new_defs[:3], err.symbol]),
        confidence=0.5 if flaky else BASE_CONFIDENCE + (VERIFIED_BONUS if verified else 0.0),
        importance=0.4 if flaky else (0.8 if verified else 0.7), source="rule",
        key=key, observation_ids=ids,
        tags=_uniq(["failure-fix", fail.cmd.exe, err.name, *(["verified"] if verified else []),
                    *(["flaky"] if flaky else [])]),
    )


def _outcome_line(text: str) -> str:
    for line in reversed(text[-3000:].splitlines()):
        stripped = line.strip(" =")
        if _PASS_TEXT.search(stripped) and len(stripped) < 200:
            return stripped
    return ""


def _unresolved(s: _Session, cmd: Command, op: _Open, all_ops: list[_Open]) -> Draft:
    err = op.err
    first = min((o.first for o in all_ops), key=lambda r: r.ev.pos)
    attempts = sum(o.count for o in all_ops)
    tried = s.edits_between(first.ev, op.last.ev)
    where = f" ({err.where})" if err.where else ""
    title = f"Unresolved: `{cmd.display}`{cmd.where} fails with {_short(err.text, 90)}{where}"
    body = [f"`{_short(op.last.cmd.main, 200)}`{cmd.where} still failed at the end of the session"
            + (f" ({attempts} failing runs)" if attempts > 1 else "") + f": {err.text}"]
    if err.where:
        body.append(f"At: {err.where}" + (f" in {err.symbol}()" if err.symbol else ""))
    body.extend("  " + _short(ln, 200) for ln in err.lines[:3] if ln not in err.text)
    if tried:
        body.append("Tried: edits to " + ", ".join(_uniq(s.paths.rel(f) for e in tried for f in e.files))[:300])
    body.append("Next: reproduce with the command above and fix the error.")
    return Draft(
        kind="task", title=_short(title, TITLE_MAX), body=_cap_body("\n".join(body)),
        files=_uniq([err.file]), symbols=_uniq([err.symbol]), confidence=BASE_CONFIDENCE,
        importance=0.8, source="rule", key=session_key(s.session_id, "unresolved", cmd.key),
        observation_ids=_uniq([first.ev.id, op.last.ev.id]),
        tags=_uniq(["unresolved", "handoff", cmd.exe, err.name]),
    )


# ---------------------------------------------------------------------------------------------
# Rule: environment facts
# ---------------------------------------------------------------------------------------------

_VERSION_FLAGS = {"--version", "-v", "-V", "version", "-version"}
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?(?:[-.+][\w.]+)?\b")
_INSTALLED = re.compile(r"Successfully installed (.+)")
_PIN = re.compile(r"^(@?[A-Za-z0-9][\w.\-/]*?)(==|@|>=|~=)(\d[\w.\-]*)$")
_LOOPBACK = r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|::1)"
_REFUSED = re.compile(
    r"(?i)(?:connection refused|ECONNREFUSED|failed to connect to|could not connect to server|"
    r"Couldn't connect to server|connect\(\) failed|is the server running)")
_PORT_IN = re.compile(rf"(?i){_LOOPBACK}:(\d{{2,5}})|\bport\s+(\d{{2,5}})")
_LISTEN = re.compile(
    rf"(?i)(?:running on|listening on|listening at|Local:|started (?:server )?(?:on|at)|serving (?:on|at)|"
    rf"server (?:started|running) (?:on|at)|available at)\s+(?:https?://)?(?:{_LOOPBACK}|\S*?)?:(\d{{2,5}})")
_URL_PORT = re.compile(rf"(?i)(?:https?://)?{_LOOPBACK}:(\d{{2,5}})(/\S*)?")
# a port the line gives its server: a flag, or after a host; not a slice (`str(e)[:120]`, held-out review 55)
_PORT_FLAG = re.compile(rf"(?:(?<![\w-])--port[= ]|(?<![\w-])-p[= ]?)(\d{{2,5}})\b|(?:{_LOOPBACK}:|(?:(?<=\s)|^):)(\d{{2,5}})(?=\s|/|$|['\"])")
_READS_LOGS = re.compile(r"\s*(?:\S*/)?(?:curl|wget|tail|cat|head|less|grep|journalctl|(?:docker(?:-compose| compose)?|"
                         r"kubectl|podman|heroku|fly|pm2)(?:\s+-{1,2}[\w-]+(?:[ =][^\s-]\S*)?)*\s+logs)(?:\s|$)")
_STARTS_SERVER = re.compile(r"(?i)\b(?:up|run|start|serve|dev|preview)\b")


def _env_rules(s: _Session) -> list[Draft]:
    drafts: list[Draft] = []
    drafts += _versions(s)
    drafts += _installs(s)
    drafts += _ports(s)
    drafts += _env_vars(s)
    return drafts


_VERSION_NUMBER = re.compile(r"(\d+)\.(\d+)")


def _versions(s: _Session) -> list[Draft]:
    """Tool versions the session printed; with a transcript, those the agent then spoke of
    ("Same golangci-lint version (2.8.0) but: local darwin/arm64, CI linux/amd64"), not a
    `git --version` nobody mentioned again."""
    seen: dict[str, Draft] = {}
    for run in s.runs:
        cmd = run.cmd
        args = cmd.main.split()[1:]
        if run.failed or not args or not cmd.exe or args[-1] not in _VERSION_FLAGS:
            continue
        if len(args) > 2:
            continue
        first = next((ln.strip() for ln in run.ev.text.splitlines() if _VERSION.search(ln)), "")
        if not first or len(first) > 160:
            continue
        number = _VERSION_NUMBER.search(first)
        spoken = re.compile(rf"(?<![\d.]){number.group(1)}\.{number.group(2)}(?!\d)") if number else None
        if s.transcript is not None and spoken and not any(
                m.role == "assistant" and spoken.search(m.text) for m in s.transcript):
            continue  # printed and never spoken of again ("Go 1.25" speaks of 1.25.6): it did not matter
        stated = first if re.search(r"[A-Za-z]{2,}", first.split()[0]) else f"{cmd.exe} {first}"
        title = f"{_short(stated, 80)} in this environment (`{_short(cmd.main, 50)}`)"
        seen[cmd.tool] = Draft(
            kind="env", title=title, body=f"`{cmd.main}` printed:\n{_short(run.ev.text, 400)}",
            confidence=BASE_CONFIDENCE + 0.2, importance=0.4, source="rule",
            key=session_key(s.session_id, "env-version", cmd.tool), observation_ids=[run.ev.id],
            tags=["version", cmd.exe])
    return list(seen.values())


def _installs(s: _Session) -> list[Draft]:
    drafts: list[Draft] = []
    for run in s.runs:
        cmd = run.cmd
        if run.failed or not cmd.is_install:
            continue
        pins = [f"{m.group(1)}{m.group(2)}{m.group(3)}" for t in cmd.targets if (m := _PIN.match(t))]
        done = _INSTALLED.search(run.ev.text)
        if done:
            pins += [re.sub(r"-(\d[\w.]*)$", r"==\1", p) for p in done.group(1).split()[:12]]
        pins = _uniq(pins)
        if not pins:
            continue
        title = f"Installed {', '.join(pins[:4])}{' …' if len(pins) > 4 else ''}{cmd.where} with `{_short(cmd.main, 50)}`"
        drafts.append(Draft(
            kind="env", title=_short(title, TITLE_MAX),
            body=f"`{cmd.main}`{cmd.where} succeeded.\nPackages: {', '.join(pins)}",
            confidence=BASE_CONFIDENCE + 0.2, importance=0.4, source="rule",
            key=session_key(s.session_id, "env-install", f"{cmd.dir}\x1f{cmd.exe}\x1f{' '.join(sorted(pins))}"),
            observation_ids=[run.ev.id], tags=["install", cmd.exe]))
    return drafts


def _ports(s: _Session) -> list[Draft]:
    state: dict[str, dict[str, Any]] = {}
    for run in s.runs:
        cmd, text = run.cmd, run.ev.text[-4000:]
        ports_in_cmd = [m.group(1) for m in _URL_PORT.finditer(cmd.raw)]
        if _REFUSED.search(text) or (run.failed and cmd.is_probe and ports_in_cmd):
            ports = ports_in_cmd or [p for m in _PORT_IN.finditer(text) for p in m.groups() if p]
            for port in _uniq(ports)[:3]:
                st = state.setdefault(port, {"ids": []})
                st.update(last="refused", refused_by=cmd.display)
                st["ids"].append(run.ev.id)
            continue
        if run.failed:
            continue
        # A probe, or a command that prints a server's logs, shows what listens but is not it
        # (held-out review 7: `curl … /api/health && docker compose logs app` was "the server").
        steps = [cmd.raw.split("&&")[0], *cmd.others]
        reads = (cmd.is_probe or any(_READS_LOGS.match(step) for step in steps)) and not any(
            _STARTS_SERVER.search(step) and not _READS_LOGS.match(step) for step in steps)
        listen = [] if reads else [m.group(1) for m in _LISTEN.finditer(text)]
        if cmd.background and not listen and not reads:
            listen = [m.group(1) or m.group(2) for m in _PORT_FLAG.finditer(cmd.main)][:1]
        for port in _uniq(listen):
            st = state.setdefault(port, {"ids": []})
            st.update(server=cmd.display)
            st["ids"].append(run.ev.id)
        if cmd.is_probe and ports_in_cmd and text.strip():
            for port in _uniq(ports_in_cmd)[:3]:
                st = state.setdefault(port, {"ids": []})
                st.update(last="up", probe=cmd.display)
                st["ids"].append(run.ev.id)
        elif listen:
            for port in listen:
                state[port].setdefault("last", "up")
                if state[port].get("last") == "refused":
                    state[port]["last"] = "started"
    drafts = []
    for port, st in state.items():
        server, last = st.get("server"), st.get("last", "")
        if last == "refused" and not server:
            title = f"localhost:{port} refused connections (`{st.get('refused_by')}`): nothing was listening"
        elif server:
            title = f"localhost:{port} is served by `{server}`"
            if st.get("refused_by"):
                title += " (refused connections until it was started)"
        elif last == "up":
            title = f"localhost:{port} answers (`{st.get('probe')}`)"
        else:
            continue
        body = [f"Port {port} on localhost during the session:"]
        if st.get("refused_by"):
            body.append(f"- refused: `{st['refused_by']}`")
        if server:
            body.append(f"- served by: `{server}`")
        if st.get("probe"):
            body.append(f"- answered: `{st['probe']}`")
        drafts.append(Draft(
            kind="env", title=_short(title, TITLE_MAX), body="\n".join(body),
            confidence=BASE_CONFIDENCE, importance=0.5, source="rule",
            key=session_key(s.session_id, "env-port", port), observation_ids=_uniq(st["ids"]),
            tags=["port", f"localhost:{port}"]))
    return drafts


def _env_vars(s: _Session) -> list[Draft]:
    """Env vars a failure showed to be required, or that turned a failure into a pass."""
    found: dict[str, dict[str, Any]] = {}
    failures = [r for r in s.runs if r.failed and r.err is not None]
    for run in failures:
        assert run.err is not None
        for var in run.err.envvars:
            info = found.setdefault(var, {"ids": [], "cmds": [], "set_by": []})
            info["ids"].append(run.ev.id)
            info["cmds"].append(run.cmd.display)
            if run.err.where:
                info.setdefault("where", f"{run.err.where}" + (f" {run.err.symbol}()" if run.err.symbol else ""))
            info.setdefault("error", run.err.name)
    from graphmem.capture.redact import redact

    # The variable an error named, set on a later passing run of the same command, is the fix
    # itself, not a guess (held-out review 7: "JAVA_HOME must be set" without the JDK that worked).
    named_by: dict[str, set[str]] = {}
    for run in failures:
        assert run.err is not None
        for var in run.err.envvars:
            named_by.setdefault(run.cmd.key, set()).add(var)
    for run in s.runs:
        for var in sorted(named_by.get(run.cmd.key, set()) if not run.failed and not run.pending else ()):
            if var in run.cmd.env and var in found and not found[var]["set_by"]:
                setting = _short(redact(f"{var}={run.cmd.env[var]}"), 160)  # a secret-named one stays masked
                found[var]["set_by"].append(f"`{run.cmd.display}` passed with {setting}")
                found[var]["ids"].append(run.ev.id)
    last_failure: dict[str, _Run] = {}
    exported: list[tuple[_Run, str]] = []  # successful `export X=...` and the run it was in
    # With a transcript the agent's own diagnosis says what fixed a failure; guessing from an env
    # prefix that happened to be on the passing run credited GOLANGCI_LINT_LOG_LEVEL with a fix.
    for run in ([] if s.transcript is not None else s.runs):
        if run.failed:
            last_failure[run.cmd.key] = run
            continue
        exported.extend((run, k) for k in run.cmd.exports)
        failed = last_failure.get(run.cmd.key)
        if failed is None:
            continue
        lo, hi = failed.ev.pos, run.ev.pos
        new_vars = [k for k in run.cmd.env if k not in failed.cmd.env]
        new_vars += [k for k in run.cmd.exports if k not in failed.cmd.exports]
        new_vars += [k for r, k in exported if lo < r.ev.pos < hi]
        for var in _uniq(new_vars):
            info = found.setdefault(var, {"ids": [], "cmds": [], "set_by": []})
            info["ids"].append(run.ev.id)
            info["cmds"].append(run.cmd.display)
            info["set_by"].append(f"`{run.cmd.display}` passed once {var} was set")
    for ev in s.events:
        if not ev.is_edit:
            continue
        for var, info in found.items():
            if var in ev.text and any(var in ln for ln in _added_lines(ev)):
                info.setdefault("fixed_in", _uniq(s.paths.rel(f) for f in ev.files))
                info["ids"].append(ev.id)
    drafts = []
    for var, info in found.items():
        if not re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,}", var):
            continue  # "blob must be set": a word an error printed, not a variable
        cmds = _uniq(info["cmds"])
        if info.get("where"):
            title = f"{var} must be set: {info['where']} raises {info.get('error', 'an error')} without it"
        else:
            title = f"{var} must be set for `{cmds[0]}`" if cmds else f"{var} must be set"
        if info.get("fixed_in"):
            title += f"; {', '.join(info['fixed_in'][:2])} now sets it"
        body = [f"Commands affected: {', '.join(f'`{c}`' for c in cmds[:4])}"]
        body += info["set_by"][:2]
        if info.get("fixed_in"):
            body.append(f"Set in: {', '.join(info['fixed_in'])}")
        drafts.append(Draft(
            kind="env", title=_short(title, TITLE_MAX), body="\n".join(body),
            files=_uniq([*(info.get("fixed_in") or []), (info.get("where") or "").split(":")[0]]),
            confidence=BASE_CONFIDENCE + (0.1 if info["set_by"] or info.get("fixed_in") else 0.0),
            importance=0.6, source="rule", key=session_key(s.session_id, "env-var", var),
            observation_ids=_uniq(info["ids"]), tags=["envvar", var]))
    return drafts


# ---------------------------------------------------------------------------------------------
# Rule: what the user stated
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_OUTPUT_LINE = re.compile(r"^\s*(?:\$ |>>> |File \"|E {2,}|Traceback|at \S+ \(|\S+:\d+:|[-=+#*]{3,}\s*$|"
                          r"npm (?:ERR!|error)|FAILED |PASSED )")
_FILLER = re.compile(
    r"^(?:(?:(?:ok(?:ay)?|alright|all right|right) then|ok(?:ay)?|also|and|so|btw|by the way|oh|hey|hi|hmm+|um+|uh+|stop|wait|great|thanks|thank you|cool|"
    r"nice|perfect|good|alright|right|actually|plus|one more thing|and also|oh and|please note|"
    r"to be (?:honest|fair|clear)|honestly|frankly|truth be told|once again|like I said|as I (?:said|mentioned)(?: before| earlier)?|"
    r"I repeat)\b"
    r"[\s,.!:—–-]*)+", re.IGNORECASE)
_TASK_PREFIX = re.compile(r"^(?:todo|to-do|to do)\b\s*[:,\-–—]?\s*(.+)$", re.IGNORECASE)
_TASK_ANY = re.compile(r"(?i)\b(?:next time|still needs? to|remaining work|follow[- ]up|"
                       r"later,? (?:we|you) (?:need|should|must)|(?:we|you) (?:need|have) to .+ later|"
                       r"don't forget to|do not forget to)\b")
_FACT_PREFIX = re.compile(r"^(?:please\s+)?(?:remember|keep in mind|for the record|bear in mind|"
                          r"important)\b\s*[:,]?\s*(?:that\s+)?(.+)$", re.IGNORECASE)
_STANDING_ORDER = re.compile(r"(?i)(?:keep|use|write|answer|explain|avoid|prefer|always|never|don'?t|do not|"
                             r"make sure|be)\s(?!access\b|permissions?\b|rights\b|mode\b)")
_NOTE_PREFIX = re.compile(r"^(?:note|nb|n\.b\.|fyi|heads[- ]up|just so you know|for your information|"
                          # held-out review 29, vertumnus: "It's probably worth noting that we're not only
                          # creating the poster page itself, but also the /about page, …"
                          r"it['’]?s (?:probably |also )?worth (?:noting|mentioning|pointing out)|"
                          r"one thing (?:worth|to) (?:noting|note|pointing out|point out|mentioning|mention) is)"
                          r"\b\s*[:,]?\s*(?:that\s+)?(.+)$", re.IGNORECASE)
_DECISION = re.compile(
    r"(?i)\b(?:we|i|the team)\s*(?:'ve|have|had)?\s*(?:decided|chose|chosen|picked|went with|"
    r"settled on|agreed on|agreed to|opted for|are going with|'re going with|will go with)\b|"
    # held-out review 29, vertumnus: "We're going to use React, though I'm more agnostic on the framework"
    # held-out review 30, vertumnus: "Okay, I'm aligned on Astro 6 + Bun."
    r"\b(?:i['’]m|i am|we['’]re|we are) (?:all )?aligned on\b|"
    r"^(?:(?:so|ok(?:ay)?|and|then|yes|right)\W+|for [^,.;:!?]{1,40}?\s|[^,.;:!?]{1,40},\s*)?we(?:['’]re| are| will|['’]ll)"
    r"(?: be)?(?: going to)? us(?:e|ing)\s(?!(?:it|this|that|them|one|a lot|lots|too|way|more|less|much|many|up|about|"
    r"around|over|under|nearly|almost)\b|\d[\d.,]*\s*(?:%|(?:percent|[kmgt]i?b)\b))|"
    r"^(?:let's|lets|we'll|we will) go with\b|^decision\s*[:\-]|"
    r"\bwe should (?:use|keep|not|never|always|prefer|stick|switch|go|make|store|show|treat|drop|"
    r"avoid|only)\b|\b(?:should|must) (?:use|be) .{3,80}\b(?:instead of|rather than|not)\b|"
    # what the person's word means (held-out review 38: "By the roofline number, I mean how much of
    # the peak flops are we using as a percentage")
    r"^\W*(?:and |also |so )?by (?:the |a |an |this |that )?[^,.;:]{2,60},\s*I mean\b")
_CONVENTION = re.compile(
    # "use X, not Y"; not "use random.org, but every time you load it, it does not remember the bounds"
    # (held-out review 29): a later clause's negated verb contrasts nothing with X
    r"(?i)\b(?:use|using)\s+\S(?:(?!\bbut\s+(?!not\b))(?:[^.!?;]|[.!?](?!\s))){0,80}?,?\s+(?:(?<!['’]s\s)(?<!\b(?:do|is)\s)(?<!\b(?:was|can|are|has|did)\s)"
    r"(?<!\b(?:does|were|have|will)\s)(?<!\b(?:could|would)\s)(?<!\bshould\s)not|instead of|rather than|over)\s+\S|"
    r"^(?:please\s+)?(?:always|never)\b|"
    # what the person cannot stand the agent doing (held-out review 63: "I am super allergic when you try to
    # put my... your words into my mouth.")
    r"\bI(?:['’]m| am) (?:super |really |very |so |quite )?allergic (?:when you|to (?:you|it when you))\b|"
    r"\bI (?:hate|can['’]t stand|cannot stand|dislike) (?:it )?when you (?!have to|need to|get\b|want to)|"
    r"\b(?:we|you|agents?|everyone)\s+(?:should\s+|must\s+)?(?:always|never)\b|"
    r"\bwe\s+(?:use|prefer|only use|stick to|follow|don't use|do not use|never|always)\b|"
    r"\bwe\s+only\s+(?:do|ship|release|support|deploy|run|allow|accept|publish|merge|target)\b|"
    r"\bwe\s+(?:don't|do not)\s+(?!worry|know|think|understand|see|care|mind)|"
    r"^(?:please\s+)?(?:prefer|avoid)\b|"
    # held-out review 38: "To be honest, I would actually prefer fable class work."; "All of the
    # optimizer and model files are supposed to be portable to any other project"; "You should also be
    # compiling with the compile file, as it is designed to be better than regular nvcc" (the reviews of
    # session 26: not "I'd prefer option B", "I'd prefer you fix the login bug first", "This function is
    # supposed to return a list, it returns None", "You should use the --force flag")
    r"\bI(?:['’]d| would)? (?:actually |really |much |rather |strongly |still )?prefer\b"
    r"(?! not to answer| you\b| we\b| if\b| that\b| (?:option|choice|approach|plan)\b| (?:the )?(?:first|second|third|last|other|latter|former)\b| [a-d]\b)|"
    r"\b(?:is|are|['’]re|['’]s) (?:all |always )?supposed to\b(?![^.!?]*(?:\bbut\b|,\s*(?:it|this|that|which)\s))|"
    r"^(?:\w+,\s*)?you should (?:also |always |only )?(?:use|be using|be \w+ing (?:with|through|via))\b"
    r"(?=[^.!?]*(?:\balways\b|,?\s(?:so|because|since|as (?:it|they|that))\b))|"
    # held-out review 43: "I don't want to be claude-bound, I want the hardware to be the constraint"; held-out
    # review 40: "And make sure you are using the cache so you can recompile super fast" (with its reason)
    r"\bI (?:don['’]t|do not) want (?:to |you to |it to |the )?(?!(?:that|this|it|them|one|those|these)\b)[^.,;!?]{3,60}[,;]\s*"
    r"(?:I want|I['’]d rather|I prefer)\b|"
    r"\bmake sure (?:that )?you(?:['’]re| are) (?:always |also )?using\b(?=[^.!?]*(?:\balways\b|\s(?:so|because|since)\b))|"
    r"^(?:please\s+)?(?:don't|do not|dont)\s+(?!worry|know|think|understand|see|care|mind|bother|"
    r"get\b|forget|have\b|need\b|want\b)|"
    r"\b(?:must|should)\s+(?:always|never)\b|\bour convention\b|\bby convention\b|"
    # what the person keeps for themselves (held-out review 29, vertumnus: "I will run commands like
    # git init and git commit myself, so that I can verify things before commiting")
    r"^(?:i|we)(?:['’]ll| will| want to| prefer to| would rather|['’]d rather)\s[^.!?]{1,80}?\b(?:myself|ourselves)\b"
    r"(?![^.!?]{0,40}\b(?:this time|for now|today|tonight|tomorrow|later|after|once|when|next|soon|first)\b)|"
    # a constraint the work must keep (held-out review 23, forem: "since forem is an open source
    # project that people can self deploy we need to make sure we're not forcing EVERYONE to move
    # to betterstack")
    r"\bwe (?:(?:need|have|want) to|should|must) (?:also )?\w*(?:make sure|ensure)(?: that)? "
    r"(?!.{0,200}?\b(?:fix|investigat|debug|look into|find|figure)\w*)"
    r"(?:we(?:['’]re| are) not|we (?:don['’]t|do not|never|won['’]t)|(?:nobody|no one|nothing) )|"
    r"^(?:please\s+)?(?:ensure|make sure)\b(?!.{0,200}?\b(?:fix|investigat|debug|look into|find)\w*)"
    r".{0,200}?\b(?<!that )(?<!which )(?<!who )(?:always|never)\s")


# A prohibition that bounds the work the same prompt asks for, not a rule of the project (held-out
# reviews 7 and 8: "Do not spawn agents, commit, push, call providers, or modify anything else"
# after "Change only docs/…/entire-session-history.md" became a standing convention).
_PROHIBITION = re.compile(r"(?i)^\W*(?:please\s+)?(?:don'?t|do not)\b")
_DURABLE = re.compile(r"(?i)\b(?:ever|any ?more|from now on|going forward|in (?:the )?future|in general|"
                      r"by default|in this (?:repo(?:sitory)?|project|codebase)|anywhere|every ?time|whenever|"
                      r"(?:directly )?(?:to|on|into) (?:main|master|prod(?:uction)?)\b(?! (?:yet|until|for now)\b))\b")
_BOUNDED = re.compile(r"(?i)\b(?:anything|everything|something|nothing) else\b|\bany other\b|\bbeyond (?:this|that)\b|"
                      r"\bfor now\b|\byet\b|\buntil\b|\bthis (?:time|task|change|session|pr|run|check|step)\b|"
                      r",\s*just\s+(?:fix|change|add|update|run|do|edit|write|make)\b")
# the work asked, also as numbered steps (held-out review 28, blastline: "Do exactly these steps, nothing
# else. 1) Read … 4) Commit only those two files … Do not push.")
_WORK_ASKED = re.compile(r"(?i)(?:^|[.!?]\s+|\n\s*)(?:\d{1,2}[.)]\s+)?(?:please\s+)?(?:change|add|append|fix|implement|create|write|"
                         r"update|remove|delete|rename|move|refactor|build|run|make|read|edit|report|check|review|"
                         r"investigate|look|find|set up|install|migrate|port|bump|test|commit|merge|release|deploy|publish)\b")


_BUG_TOLD = re.compile(r"(?i)\bright now\b|\bcurrently\b|\bdoes nothing\b|\binstead\b|"
                       r"\b(?:it|this|that) (?:returns|fails|crashes|shows|gives|throws|just)\b|\bbut (?:it|this|that)\b")


def _bounds_the_task(sentence: str, prompt: str) -> bool:
    """A "don't …" that limits what this prompt asks to be done: it says "anything else" or "for
    now", or, with no word that makes it last ("ever", "from now on"), sits beside a request."""
    if not _PROHIBITION.match(sentence) or _DURABLE.search(sentence):
        return False
    return bool(_BOUNDED.search(sentence) or _WORK_ASKED.search(prompt.replace(sentence, " ")))


def _sentences(text: str) -> Iterable[str]:
    text = _FENCE.sub("\n", text[:6000])
    for line in text.splitlines():
        if not line.strip() or _OUTPUT_LINE.match(line):
            continue
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line)
        # two spaces before a capital part sentences too (held-out review 28: "… -m '…'   Never pass --no-verify.")
        for part in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\s+[.!?]\s+|;\s+|\s+[—–]\s+|\s+--?\s+(?=[A-Za-z])|"
                             r"\s{2,}(?=[A-Z][a-z])", line):
            for sub in re.split(r",?\s+and\s+(?=(?:never|always|don't|do not)\b)", part, flags=re.IGNORECASE):
                sub = _unquoted(sub.strip())
                if sub:
                    yield sub


def _unquoted(sentence: str) -> str:
    """A sentence without the quote marks around it, or the one a split left at an end; a quoted value at
    its end keeps its marks (held-out review 131: '… but instead "Copilot instructions"')."""
    for mark in "\"'":
        count = len(re.findall(rf"(?<![A-Za-z]){mark}|{mark}(?![A-Za-z])", sentence))  # not "don't"
        if count % 2 or count == 2 and sentence[:1] == sentence[-1:] == mark:
            sentence = sentence.strip(mark)
    return sentence


# What the person reports of the system's history or behaviour: a change made to it, or what makes a
# problem go away. Said once, it is what nobody can find in the code later.
_CHANGED = re.compile(
    r"(?i)\b(?:we|i)(?:'ve| have)?\s+(?:\w+\s+){0,2}?(?:did an? (?:\w+ )?(?:migration|move|switch|rewrite|"
    r"upgrade)|migrated|moved (?:to|from|over)|switched (?:to|from|over)|replaced .{1,60}? with|upgraded|"
    r"downgraded|renamed .{1,60}? to)\b")
_CURED = re.compile(
    r"(?i)\b(?:is|was|gets|got|goes|went)\s+(?:\w+\s+)?(?:solved|fixed|resolved|away|gone)\s+"
    r"(?:when|by|if|after|once|with)\b|\b(?:only|always) (?:happens|fails|breaks|occurs|works)\s+"
    r"(?:when|if|with|on|in|after)\b")
_NAMED = re.compile(r"`[^`]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|[\w.-]+/[\w./-]+|\b\w+[-_.]\w+\b|'[^']{2,40}'|\"[^\"]{2,40}\"")
_ASKED = re.compile(r"(?i)(?:have|has|had|did|do|does|is|are|was|were|can|could|should|would|will)\s+(?:we|i|you|it|they)\b")
_BIDDING = re.compile(r"(?i),\s*(?:now\s+)?(?:try|please|rebase|check|run|fix|can you|could you|go)\b|\bby your\b")
_TAG_QUESTION = re.compile(r",\s*(?:could|can|would|might|is|was|does|did|should)\s+(?:this|that|it)\b[^,]*\?\s*$",
                           re.IGNORECASE)
CHECKING = re.compile(r"(?i)\bfrom wh?at you(?:'ve)? (?:explained|said|told)|\bif i (?:understand|get) (?:it|this|you)\b|"
                       r"\bin other words\b")
REPORTED = re.compile(r"(?i)\b(?:it|this|that|you|the (?:code|comment|note|change|diff|file|output|"
                       r"message|docs?|readme)) (?:has|have|had|says|said|reads|shows|contains|wrote|"
                       r"added)\s*:|:\s*(?:#|//)")


def states_something(prompt: str) -> bool:
    """Whether a prompt already gives an item of its own (a rule, a decision, a fact it tells)."""
    return any(_statement(sentence) for sentence in _sentences(prompt))


# what the person's machine has (held-out review 38: "I have 80 gb vram, 200 gb ram, and 30 gb disk
# space", "I do also have a 50gb volume attached to this instance")
_MACHINE = re.compile(r"(?i)(?:\bI (?:do )?(?:also |only |just )?(?:have|['’]ve got|got)|\b(?:my|this|the) (?:machine|box|"
                      r"instance|server|laptop|vm|pod|host|mac) (?:has|only has|comes with))\b[^.!?\d]{0,12}?\b\d+(?:\.\d+)?"
                      r"\s*(?:(?:gb|gib|tb|tib)\s*(?:of\s+)?(?:(?:gpu|system|host)\s+)?(?:v?ram|memory|disk|storage|ssd|nvme|volume|swap|hbm)|"
                      r"cores?|v?cpus?|gpus?|threads)\b")


# the person holds the agent to what they said before (held-out review 44: "Why do you have DP with Zero 2 in
# there. I said it should be 4D parallelism with ZeRO-3."); not what they report still goes wrong ("I said it
# should redirect to /home, but it still goes to /dashboard"), take back ("forget that") or set a date for
_HELD_TO = re.compile(r"(?i)^\W*(?:(?:but|no|again|look)\W+)?I (?:already |clearly )?(?:said|told you)(?: (?:before|earlier|already))?,?"
                      r" (?:it|we|you|they|the [\w-]+(?: [\w-]+)?) (?:should|must|needs? to|has to|have to|(?:is|are) supposed to) "
                      r"(?:be|use|have|run|stay|go|target)\b")
_NOT_HELD = re.compile(r"(?i)\bbut\b|\b(?:still|yet)\b|n['’]t\b|\bnot\b|\bforget (?:that|it)\b|\bignore (?:that|it)\b|"
                       r"\bscratch that\b|\bnever ?mind\b|\btoday\b|\btonight\b|\btomorrow\b|\bby (?:\w+day|tonight|noon)\b|"
                       r"\bfor now\b")
# what the machine keeps and what it throws away (held-out review 49: "When the instance is closed,
# everything outside of /workspace will be deleted, so please prep the instance for closure.")
_WIPED = re.compile(r"(?i)\b(?:when|whenever|once|after|if|every time) (?:the |this |my |our )?(?:instance|container|pod|"
                    r"machine|vm|box|sandbox|runner)s? (?:is |are |gets? )?(?:closed|stopped|shut ?down|terminated|restarted|"
                    r"rebooted|recreated|destroyed|deleted|torn down)\b,?\s*"
                    r"(?:everything|anything|all (?:the )?(?:files|data) (?:outside|under|in|on)\b|/\S*)[^.!?;]{0,60}?"
                    r"\b(?:will be|is|are|gets?|get) (?:deleted|wiped|erased|lost|reset|cleared|gone)\b[^,.!?;]*")


def _statement(sentence: str) -> tuple[str, str] | None:
    """(kind, text) for a sentence that states a durable fact, or None."""
    s = _FILLER.sub("", sentence).strip(" ,")
    told = _TAG_QUESTION.sub("", s)  # "we replaced X with Y, could this be related?" tells X → Y
    if told != s and (_CHANGED.search(told) or _CURED.search(told)):
        s = told
    if len(s) < 8 or len(s) > 400 or not re.search(r"[A-Za-z]{3}", s):
        return None
    if re.sub(r"[^\w?)\]]+$", "", s).endswith("?") or re.match(r"\s*[#>]|\s*//", s):
        return None  # a question (an emoji may follow it), or a quoted comment or heading
    if CHECKING.search(sentence):
        return None  # the person checking they understood the agent, not setting a rule
    if re.match(r"(?i)if\b", s) and not re.search(r",|\bthen\b", s):
        return None  # a condition with nothing it leads to (held-out review 69: "If this is supposed to be encoding rules.")
    if re.match(r"(?i)i (?:saw|see|noticed|notice|think|thought|wonder|guess|found)\b", s):
        return None  # an observation or a musing, not a rule the person sets
    if REPORTED.search(s):
        return None  # what the code or the agent says, quoted for the agent to look at
    if m := _TASK_PREFIX.match(s):
        return "task", m.group(1)
    if m := _FACT_PREFIX.match(s):
        said = m.group(1).rstrip(" :")
        # "Remember, keep it short, straight to the point…" is how to work, not a fact
        return ("convention" if _STANDING_ORDER.match(said) else "fact"), said
    if m := _NOTE_PREFIX.match(s):
        return "note", m.group(1)
    if _TASK_ANY.search(s):
        # "let's go ahead and wire up tailwind …, and we'll tackle the lint in a follow up commit" (held-out
        # review 32): what the same prompt asks now is done in the session; the deferred clause is the task
        return "task", next((c for c in re.split(r",\s*(?:and|but|then)\s+|;\s+", s) if _TASK_ANY.search(c)), s)
    if _DECISION.search(s) or _HELD_TO.search(s) and not _NOT_HELD.search(s):
        return "decision", s
    if _CONVENTION.search(s):
        return "convention", s
    if (has := _MACHINE.search(s)) and not _ASKED.match(s) and not re.search(r"(?i)\bbut\b|\bonly one\b", s):
        return "env", s[has.start():]  # not "Because truth by told, …"
    if (gone := _WIPED.search(s)) and not _ASKED.match(s):
        return "env", s[gone.start():gone.end()]
    if (_CHANGED.search(s) or _CURED.search(s)) and _NAMED.search(s) and not _ASKED.match(s) \
            and not _BIDDING.search(s):
        return "fact", s
    return None


def _title_case(text: str) -> str:
    text = _unvoiced(text).strip().rstrip(".!").strip()
    return text[:1].upper() + text[1:] if text else text


# what speech-to-text leaves of a spoken prompt (held-out review 67: "We should not reiterate, uh, the
# the such rules in our skill")
_FILLED = re.compile(r"(?i)(?:,\s*)?\b(?:uh|um|uhm|erm|er)\b,?(?=\s)")
_STUTTER = re.compile(r"(?i)\b(\w+)(?:\s+\1\b)+")


def _unvoiced(text: str) -> str:
    """A spoken sentence without its fillers and stutters ("uh,", "the the", "on on on")."""
    text = _FILLED.sub("", text)
    text = _STUTTER.sub(lambda m: m.group(1) if not m.group(1).isdigit() else m.group(0), text)
    return re.sub(r"\s{2,}", " ", text)


_IMPORTANCE = {"convention": 0.8, "decision": 0.8, "env": 0.7, "fact": 0.6, "note": 0.5, "task": 0.7}


# what the person says next that turns the sentence before around (held-out review 63)
_TURNS_ON = re.compile(r"(?i)\W*(?:but|however|though|that said|then again|except)\b,?\s*"
                       r"(?!(?:first|go ahead|let['’]?s|please|now|for now|start|do|fix|also)\b)")
_FOR_A_SCOPE = re.compile(r"(?i)\W*(?:but|however|though)\b,?\s+(?:for|in|on|with) (?:the|this|a|an|our|that) ")


def _turns_around(rule: str, after: str) -> bool:
    """Whether the sentence after a rule takes it back for where it applies ("But for the benchmark, it
    makes sense.") or re-judges what it speaks of, not a new ask ("But first, fix the failing build.")."""
    if not _TURNS_ON.match(after):
        return False
    stems = {w[:5] for w in re.findall(r"[a-z]{4,}", rule.lower())} - {"that", "this", "with", "have", "would", "should"}
    return bool(_FOR_A_SCOPE.match(after)) or bool(stems & {w[:5] for w in re.findall(r"[a-z]{4,}", after.lower())})


def _user_rules(s: _Session) -> list[Draft]:
    sources: list[tuple[str, list[str], str]] = [(e.text, [e.id], "") for e in s.prompts]
    transcript = s.transcript
    if transcript is not None:
        from graphmem.capture.redact import redact

        seen = {_norm(e.text[:2000]) for e in s.prompts}
        for msg in transcript.user_prompts[:200]:
            text = redact(msg.text[:6000])
            if _norm(text[:2000]) in seen:
                continue
            sources.append((text, [], msg.uuid))
    drafts: dict[str, Draft] = {}
    machine: dict[int, Draft] = {}
    for n, (text, ids, uuid) in enumerate(sources, 1):
        lines = text.splitlines()
        if len(lines) > 20:  # a long prompt pastes docs or output below its first lines
            text = "\n".join(lines[:3])
        # a line quoted with ">" is someone else's words the person answers (held-out review 64: "> I only
        # built it this morning in response." was the agent's)
        said_all = list(_sentences(_without_spec_items(re.sub(r"(?m)^\s*(?:#|//|>).*$", "", text))))
        for at, sentence in enumerate(said_all):
            found = _statement(sentence)
            if not found:
                continue
            kind, said = found
            if kind in ("convention", "decision") and at + 1 < len(said_all) and _turns_around(sentence, said_all[at + 1]):
                # half a rule: "… for a product, we would not need a granularity of commits on this TDD cycle
                # level. But for the benchmark, it makes sense." (a fact goes on: "we did a migration from
                # entire/sessions to entire/checkpoints/v1 - but that should have been a one-off", entire-cli)
                continue
            if kind == "convention" and _bounds_the_task(sentence, text):
                continue
            beside = text[text.find(sentence):][:len(sentence) + 160] if sentence in text else sentence
            if kind == "convention" and "supposed to" in sentence and _BUG_TOLD.search(beside):
                continue  # what it should do, told beside what it does: a bug report
            title = _short(_title_case(said), TITLE_MAX)
            if len(title) < 6:
                continue
            key = session_key(s.session_id, f"user-{kind}", _norm(title))
            if kind == "env" and n in machine:  # the machine told over sentences of one prompt: one item
                machine[n].title = _short(f"{machine[n].title.rstrip('.…')}; {title}", TITLE_MAX)
                continue
            if key in drafts:
                drafts[key].observation_ids = _uniq([*drafts[key].observation_ids, *ids])
                continue
            files, symbols, tags = _mentions(sentence)
            origin = f"transcript message {uuid}" if uuid else f"prompt {n}"
            body = f"The user said ({origin}): \"{_short(sentence, 500)}\""
            if len(text) > len(sentence) + 20:
                body += f"\nContext: {_short(text, 700)}"
            drafts[key] = Draft(
                kind=kind, title=title, body=_cap_body(body), files=files, symbols=symbols,
                confidence=USER_CONFIDENCE,
                importance=min(1.0, _IMPORTANCE[kind] + (0.1 if re.search(r"(?i)\b(?:never|always)\b", said) else 0.0)),
                source="user", key=key, observation_ids=list(ids),
                tags=_uniq(["user-stated", *tags, *([] if ids else ["transcript"])]))
            if kind == "env":
                machine[n] = drafts[key]
    return list(drafts.values())


# "it should\n1. remember lower bounds and upper bounds\n2. have a button for GENERATE" (held-out
# review 29): each item finishes "it should …", what the thing being built must do
_SPEC_LEAD = re.compile(r"(?i)\b(?:it|this|that|the (?:app|page|site|website|tool|script|game|ui|cli|program|service|"
                        r"bot|extension|plugin|feature|component|form|button|screen|api|endpoint|server|library))\s+"
                        r"(?:should|must|needs? to|has to|will|shall|can)(?:\s+also)?:?$")
_RULE_ITEM = re.compile(r"(?i)^\s*(?:[-*•+]|\d+[.)])\s+(?:always|never|don['’]?t|do not|must|use|prefer|avoid|only)\b")


def _without_spec_items(text: str) -> str:
    """The text without the list items that complete a lead like "it should" (a spec, not a rule)."""
    kept: list[str] = []
    in_spec = False
    for line in text.splitlines():
        if in_spec and _LIST_ITEM.match(line) and not _RULE_ITEM.match(line):
            continue  # "1. remember lower bounds …"; not "1. never return raw SQL errors", a rule whatever the lead
        in_spec = bool(_SPEC_LEAD.search(line.rstrip()[-200:])) or in_spec and not line.strip()
        kept.append(line)
    return "\n".join(kept)


def _mentions(text: str) -> tuple[list[str], list[str], list[str]]:
    try:
        from graphmem.extract.text import extract

        mentions = extract(text, concepts=False)
    except Exception:  # noqa: BLE001 - extraction is a bonus; the statement stands alone
        return [], [], []
    files = _uniq(m.norm for m in mentions if m.kind == "file")
    # A bare CamelCase name stays a mention of the text: linking asks the code index about it.
    symbols = _uniq(m.norm for m in mentions if m.kind == "symbol" and not m.bare)
    tags = _uniq(m.norm for m in mentions if m.kind in ("package", "envvar"))
    tags += [w for w in re.findall(r"\b(pnpm|npm|yarn|bun|uv|poetry|pip|docker|make)\b", text.lower())
             if w not in tags]
    return files[:8], symbols[:8], tags[:8]


# ---------------------------------------------------------------------------------------------
# Rule: the one session summary
# ---------------------------------------------------------------------------------------------


# "Ground truth, and it corrects me again: Astro is at 7.1.3, not 6" (held-out review 30): a short
# lead-in about the conversation (it says "me", "you"), with nothing named in it, before what the sentence says
ASIDE = re.compile(r"(?i)^(?=(?:[^:\s]+\s+){2,}[^:\s]+:\s+(?:\S+\s+){3})(?=[^:]*\b(?:me|you|your)\b)(?![^:]*\bnow\b)(?!\W*(?-i:I)\b)(?!\W*(?:the|a|an|this|that|these|those)\b)"
                    r"[^:`'\"\d/]{3,60}:\s+")
# the agent's own list of what is still to do, in its last message ("- **Not yet done** (deliberately …): …")
# the label bold, or with a colon after an hourglass (held-out review 61: "- ⏳ Next: **C.3** (the grid-lockstep
# P1 restructure …), **D** (…), **E** (…)", cut from the summary)
_NOT_YET_LABEL = r"(?:not (?:yet )?done|still to do|left to do|remaining(?: work| steps)?|next(?: steps?)?|to ?do|pending)"
_NOT_YET_DONE = re.compile(rf"(?i)^[ \t]*(?:[-*•]|\d+[.)])?[ \t]*(?:\*\*{_NOT_YET_LABEL} ?:?\*\*|[⏳🔜⬜☐]\ufe0f?[ \t]*"
                           rf"(?:\*\*)?{_NOT_YET_LABEL}(?:\*\*)? ?:(?:\*\*)?) ?(?:\([^)\n]{{0,120}}\))? ?:? ?(.*)$")


def _not_yet_done(last_words: str) -> list[str]:
    """The agent's own list of what is still to do in its last message: the text after a label
    such as "**Not yet done**", or the list items under it."""
    lines = last_words.splitlines()
    found: list[str] = []
    for n, line in enumerate(lines[:400]):
        label = _NOT_YET_DONE.match(line.strip()[:600])
        if label is None:
            continue
        said = label.group(1).strip()
        if not said:
            items: list[str] = []
            for follow in lines[n + 1:n + 12]:
                if not _LIST_ITEM.match(follow):
                    if items or follow.strip():
                        break
                    continue
                items.append(_LIST_ITEM.sub("", follow).strip())
            said = "; ".join(items[:6])
        if len(said) >= 10:
            found.append(_short(said, 400))
    return found[:3]


_MID_WORK = re.compile(r"(?i)^\W*(?:(?:now|next|then|first|ok(?:ay)?|alright|good|great|right)[,!.]?\s+)?"
                       r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i have enough|i (?:also |still )?need to|"
                       r"running|starting|(?:checking|looking)\b(?![^.,;:!?\n]{0,60}(?<!\bnow),\s(?!then\b|and\b|i'll\b|"
                       r"i will\b|let me\b|one (?:moment|sec)|(?:this|it) (?:takes|may|will|should|might)\b|please\b|"
                       r"bear with\b|hang on\b|give me\b)))\b")
_ATTACHED = re.compile(r"\[(?:Image|Pasted text|File) #\d+[^\]\n]{0,40}\]")  # "[Image #1] looks the sign out…"
_NOW_SO = re.compile(r"(?i)\b(?:is|are) now\b|"
                     # what it left alone, not what it did (held-out review 24, gkeyll: "Only the two
                     # intended files were touched (the untracked files were pre-existing …)")
                     r"^\W*(?:only|no other|nothing else)\b[^.]{0,60}\b(?:touched|changed|modified|staged)\b")
_UNDER_WAY = re.compile(r"(?i)\b(?:is|are) (?:now )?(?:starting|booting)\b|\bin the background\b|"
                        r"\b(?:I'll|I will|will) (?:report|let you know)\b")


_BUILT = re.compile(r"(?i)\.(?:so(?:\.\d+)*|o|obj|a|lib|pyc|pyd|dll|dylib|whl|class|exe|cubin|fatbin|ptx|node)$")


_AN_ASK = re.compile(r"(?i)\?|\b(?:please|pls|can you|could you|would you|fix|continue|go on|why|how|what|help|make|add|"
                     r"check|look|run|finish|implement|review|explain)\b")
# an ask typed below a paste opens with one (not a log line that holds "run" or "make")
_ASK_LINE = re.compile(r"(?i)^\W*(?:please|pls|can you|could you|would you|continue|go on|keep going|carry on|proceed|"
                       r"resume|fix|why|how|what|help)\b|\?\s*$")
_PASTED_LINE = re.compile(r"^\s*(?:[-*•>#|$`]|\d+[.)]\s|\[|\{|</?\w)")


# what a long spoken prompt asks after it opens with its context (held-out review 88: 2,383 characters of
# voice that open "I did a spot check on the skill MD files …" and ask in their middle "I need you now to do
# the same for this session.", "I want us to have all the prompts that produced these skills to be in the repo.")
_ASKING = re.compile(r"(?i)\b(?:i (?:also |really |just )?(?:need|want) (?:you|us)|i['’]?d like (?:you|us)?|i would like (?:you|us)?|"
                     r"please|can (?:you|we)|could (?:you|we)|would you|let['’]s)\b|\?$")
# an imperative ("Also remove the duplicate row on staging once that is in, and add a test …")
_IMPERATIVE = re.compile(r"(?i)\W{0,4}(?:(?:also|then|now|and|so|finally|next|afterwards),? )?(?:(?:don['’]t|do not|never) )?"
                         r"(?:add|remove|fix|make|run|write|move|update|delete|rename|change|create|check|verify|drop|revert|"
                         r"bump|wire|port|split|merge|migrate|document|refactor|rewrite|replace|investigate|audit|confirm|"
                         r"review|test|explain|show|tell|commit|push|deploy|ensure|handle|implement|use|keep|install|touch|"
                         r"release|publish|find out|figure out|look into|clean up|set up) "
                         r"(?:the|a|an|it|and|this|that|them|those|these|all|every|each|any|its|our|my|your|me|us|sure|up|"
                         r"out|whether|if|why|how|what|where|`)")
# …but not the conditions of a report ("Run the suite twice and the second run fails with …": the review of
# ebcbfbc, M5)
_CONSEQUENCE = re.compile(r"(?i)\band (?:the|it|nothing|everything|every|that|you|we|this)\b(?:[ ,]+(?!that\b|which\b|who\b)"
                          r"[\w'’-]+){0,4}?[ ,]+(?:fails?|takes?|refuses?|works?|breaks?|changes?|happens?|crash\w*|hangs?|"
                          r"stops?|gets?|shows?|returns?|throws?|errors?|loads?|prints?|stays?|times? out)\b")
# …but not one the person quotes or reports ("Ops posted in the channel: 'please stop restarting the runners'")
_QUOTED_BEFORE = re.compile(r"(?:^|[\s:(])['\"“‘][^'\"”’]*$|(?i:\b(?:said|says|wrote|writes|posted|asked|told|replied)\b[^.?!]{0,40}$)")
# nor a line of pasted output, up to the next blank line ("Please commit your changes or stash them before you merge."),
# nor a paragraph hard-wrapped mid-sentence as tools print ("Please make sure you have the correct access rights\nand
# the repository exists.")
_OUTPUT_LEAD = re.compile(r"^(?:[ \t]|(?:error|fatal|hint|warning|npm ERR!|Traceback|E)\b)")
LONG_PROMPT = 400  # characters of prose before the asks in it are told apart from its opening
ASKS_HEAD = 200  # characters of the opening kept before them


def asks_told(prompt: str) -> str:
    """A long prompt of prose as its opening and then each sentence after it that asks something of the
    agent; any other prompt as it is. Give it redacted text: it cuts."""
    if len(prompt) <= LONG_PROMPT or len(prompt.splitlines()) > 20:
        return prompt
    flat = " ".join(prompt.split())
    asks: list[str] = []
    pasted = False
    lines = prompt.splitlines()
    for n, line in enumerate(lines):
        wrapped = n + 1 < len(lines) and bool(re.match(r"[^\s.?!:;]", line.rstrip()[-1:])) and lines[n + 1][:1].islower()
        pasted = bool(line.strip()) and (pasted or wrapped or bool(_OUTPUT_LEAD.match(line)))
        for said in () if pasted else _sentences(line):
            said = " ".join(said.split())
            hit = _ASKING.search(said) or (_IMPERATIVE.match(said) if not _CONSEQUENCE.search(said) else None)
            at = flat.find(said)
            if hit and len(said.split()) >= 4 and not _QUOTED_BEFORE.search(said[:hit.start()]) \
                    and not 0 <= at <= ASKS_HEAD - len(said):
                asks.append(said)
    if not asks:
        return prompt
    opening = _short(flat, ASKS_HEAD)
    return (opening if opening.endswith("…") else opening + " …") + " " + " … ".join(_uniq(asks))


def _typed_around_paste(prompt: str) -> str:
    """The words typed around a long paste, when they are a short ask on its last line or first
    paragraph (held-out review 65: a 46,000-character earlier session pasted, then "Continue please
    continue this please"; the summary asked "ION_ON_CHAIN env var) - Installed blockint skills …")."""
    lines = [ln for ln in prompt.splitlines() if ln.strip()]
    if len(lines) <= 20:
        return prompt
    first = lines[0].strip()
    if len(first) <= 300 and (_AN_ASK.search(first) or first.endswith(":")) and not _PASTED_LINE.match(first):
        return prompt  # the ask comes first, its paste below
    last = lines[-1].strip()
    if len(last) <= 200 and _ASK_LINE.search(last) and not _PASTED_LINE.match(last):
        return f"{last} (below {len(lines) - 1} pasted lines)"
    return prompt


def _summary(s: _Session, drafts: list[Draft]) -> list[Draft]:
    from graphmem.capture import lessons  # it imports this module

    transcript_msgs = list(s.transcript or [])
    has_tools = bool(s.runs) or any(e.is_edit for e in s.events)
    goal_text = s.prompts[0].text if s.prompts else ""
    asked = 1  # prompts the "Asked" line stands for
    if len(s.prompts) > 1 and _BARE_COMMAND.fullmatch(goal_text.strip()):
        # `/debug`, then what to debug: the command alone says nothing of the request.
        goal_text, asked = f"{goal_text.strip()} {s.prompts[1].text}", 2
    elif _ASKS_NOTHING.fullmatch(goal_text):
        # a word alone ("cd", "hey") asks for nothing yet (held-out review 36: "Asked: cd")
        meant = next((n for n, e in enumerate(s.prompts) if not _ASKS_NOTHING.fullmatch(e.text)), None)
        goal_text, asked = (s.prompts[meant].text, meant + 1) if meant is not None else ("", len(s.prompts))
    if not goal_text:
        first = next((m for m in getattr(s.transcript, "user_prompts", [])
                      if not _ASKS_NOTHING.fullmatch(m.text)), None)
        if first is not None:
            from graphmem.capture.redact import redact

            goal_text = redact(first.text[:4000])[:2000]
    goal_text = _typed_around_paste(goal_text)
    told = asks_told(goal_text)
    if goal_text.lstrip().startswith(lessons.IMPLEMENT_PLAN) and (gist := lessons.plan_line(
            goal_text.lstrip()[len(lessons.IMPLEMENT_PLAN):])):
        # a plan handed over: its title and why, not its first 200 characters, which stop inside its context
        # (held-out reviews 136, 140)
        told = f"{lessons.IMPLEMENT_PLAN} {gist}"
    goal_text, goal_room = told, 200 if told == goal_text else 2 * LONG_PROMPT
    if not goal_text and not has_tools:
        return []
    # The transcript's clock says when the work happened; an imported or replayed session's hook
    # events carry the time they were fed in (held-out reviews 4 and 5: every title "Session <today>").
    # Its last message, not its first: a resumed session's file starts with the old conversation.
    start_ts = next((m.ts for m in reversed(transcript_msgs) if m.ts), 0.0) \
        or next((e.ts for e in s.events if e.ts > 0), 0.0)
    try:
        day = datetime.fromtimestamp(start_ts).strftime("%Y-%m-%d") if start_ts else "undated"
    except (OverflowError, OSError, ValueError):
        day = "undated"
    fixed = [d for d in drafts if d.kind == "pitfall" and "flaky" not in d.tags]
    open_tasks = [d for d in drafts if d.kind == "task"]
    # A plan written to ~/Obsidian or /tmp is no change to the project (ida-hcli e6dd9346's summary
    # was "changed /Users/…/recusive plugin … plan.md").
    edited = [s.paths.rel(f) for e in s.events if e.is_edit for f in e.files if s.paths.in_project(f)]
    written = [f for r in s.runs if not r.failed for f in r.cmd.writes]
    if not edited and not written and s.transcript is not None:  # imported without its hook events
        edited = lessons.edited_files(s.transcript, s.paths.rel)
        written = [f for c in lessons.passed_commands(s.transcript, s.paths.rel) for f in c.writes]
    # `cd notebooks && nbconvert --inplace x.ipynb`, then `nbconvert … x.ipynb` from the shell's
    # remembered directory: one file the shell named two ways.
    written = [f for f in written if "/" in f or not any(g.endswith("/" + f) for g in written)]
    # a log a redirect wrote is the output of a run, and a file the session wrote and then removed
    # changed nothing (held-out review 24, julia: `make > .build5.log`, … `rm -f .build5.log …`)
    gone = _removed_after_written(s.runs)
    # nor is what a build put in place (held-out review 47: `_ops.cpython-311-x86_64-linux-gnu.so`, copied in)
    written = [f for f in written if not f.endswith(".log") and f not in gone and not _BUILT.search(f)]
    # git's own files (`.git/hooks/post-commit`) are the checkout's machinery, not its content
    committed = bool(s.commits)
    # and what its commits took in besides (`bundle install`'s Gemfile.lock, a vendored gem: held-out
    # review 23 said "3 files changed" of a commit of five)
    staged = [s.paths.rel(posixpath.join(step.dir, f)) for r in s.runs if not r.failed and committed
              for step in chain(r.cmd, s.paths.rel) if step.exe == "git" and step.sub == "add" for f in step.targets
              if re.search(r"[^/]\.[A-Za-z]\w*$", f) and not re.search(r"[*?]", f)]
    put_back = lessons.put_back_files(s.transcript, s.paths.rel) if s.transcript is not None else set()
    edited = [f for f in edited if f not in put_back]  # only its edits undone: the shell may have changed it after
    changed = [f for f in _uniq([*edited, *written, *staged])
               if not re.match(r"(?:.*[/\\])?\.git[/\\]", f) and not _elsewhere(f)]
    failed_runs = [r for r in s.runs if r.failed]
    # Without a transcript the fixes are what the rules know happened; with one, the lessons are
    # the agent's words, and the summary says what was built instead.
    headline = ([] if s.transcript is not None else
                [s.headlines.get(d.key) or _short(d.title, 60) for d in fixed[:2]])
    if headline and len(fixed) > 2:
        headline.append(f"+{len(fixed) - 2} more fixes")
    commits = _commit_subjects(s)
    committed_count, swept_in = _committed_files(s, changed)
    unhooked = _hooks_skipped(s)
    if commits:
        headline = [f"committed \"{_short(commits[0], 70)}\""
                    + (f" (+{len(commits) - 1} more)" if len(commits) > 1 else "")
                    + (f" ({_plural(committed_count, 'file')})" if committed_count not in (None, len(changed)) else "")
                    + (" (hooks skipped)" if unhooked else "")]
    last_words = _last_agent_message(s)
    stopped_at_work = _cut_mid_turn(s)
    uncommitted = _commit_failed_last(s)
    if not headline:
        closing = ASIDE.sub("", _first_sentence(_closing_words(last_words)))
        # "Phoenix server is starting in the background": what it ran has no outcome yet.
        under_way = bool(_UNDER_WAY.search(closing))
        # "… are correctly ignored (not staged). Committing.": the session stopped mid-step
        cut_off = bool(_STEP_ANNOUNCED.search(" ".join(last_words.split())[-80:]))
        if len(closing.split()) < 4 or under_way or cut_off or _MID_WORK.match(closing) or stopped_at_work \
                or uncommitted and re.search(r"(?i)\bcommit|\bamend", closing):
            # (held-out review 138: "It appears the post-commit hook auto-amended the previous commit, …", a guess
            # after its own `git commit` failed)
            # "Now I have enough to write the commit message": a step, not what was done; nor what it
            # said in the turn the session ended in (held-out review 108: "… (it's used separately by the
            # skills summary pipeline). Let me verify —")
            closing = ""
        elif _NOW_SO.search(closing) and s.transcript is not None and (report := lessons.reported(s.transcript)):
            # "The zip is now `C:\…`" (held-out review 17): the state the last small ask left, not
            # what the session did; its own report of what it did says that
            closing = report[0]
        if not (closing or changed or drafts or s.runs and not under_way or stopped_at_work):
            return []  # a session that did, decided and learnt nothing leaves no handoff
        # with nothing built or said at the end, what was asked says what the session was about
        # (held-out review 6: "ran 20 commands" for the session that diagnosed a failing deploy)
        asked_for = _FILLER.sub("", " ".join(_ATTACHED.sub(" ", goal_text).split())).strip(" ,")
        gist = closing or (f"changed {', '.join(changed[:3])}" if changed else
                           f"asked: {asked_for}" if len(asked_for.split()) >= 4 else
                           f"ran {_plural(len(s.runs), 'command')}" if s.runs else "talked, changed nothing")
        headline.append(_short(gist, 90).rstrip(".;:,!"))
    parts = [", ".join(headline)]
    rewrote = _rewritten_by_fixer(s)
    if changed and committed_count in (None, len(changed)):
        # beside a commit that took in more or fewer, a second count of files reads as the commit's
        # (held-out review 122: "committed …; 1 file changed" for a commit of two)
        parts.append(_plural(len(changed), "file") + " changed" + (
            f", {rewrote[1]} rewritten by `{_short(rewrote[0], 40)}`" if rewrote and rewrote[1] > len(changed) else ""))
    if open_tasks:
        parts.append(_plural(len(open_tasks), "open task"))
    if stopped_at_work:
        parts.append("left unfinished")
    title = _short(f"Session {day}: " + "; ".join(parts), TITLE_MAX)
    body = []
    if goal_text:
        body.append(f"Asked: {_short(goal_text, goal_room)}")
    if stopped_at_work:
        read = _read_last_turn(s)
        body.append("Not done when the session ended: its turn was still at work"
                    + (", having read " + ", ".join(read[:6]) + (f" (+{len(read) - 6})" if len(read) > 6 else "")
                       if read else ""))
    why = ""
    if commits:
        body.append("Built (commits): " + " | ".join(_short(c, 100) for c in commits[:6]))
        headed = _headline_commit(s, drafts)
        if headed is not None:  # its message, told once here: the title already names it
            subject = commits[0]
            why = _cap_body("Why (its message): " + (f"{subject}: " if len(subject) > 100 else "")
                            + _unwrapped(headed.body.split("\n", 1)[-1]), WHY_MAX)
            body.append(why)
    if unhooked:
        body.append(unhooked)
    if uncommitted:
        body.append(uncommitted)
    checks = _passing_checks(s.runs)
    if checks:
        body.append("Verified: " + ", ".join(f"`{_short(c, 80)}`" for c in checks[-3:]) + " passed")
    done = lessons.reported(s.transcript) if s.transcript is not None else []
    if done:
        body.append("Reported done:")
        body.extend(f"- {line}" for line in done)
    edits = ([(s.paths.rel(f), old, new) for e in s.events if e.is_edit for f in e.files[:1]
              for old, new in lessons.edit_texts(e.tool_input)]
             or (lessons.transcript_edits(s.transcript, s.paths.rel) if s.transcript is not None else []))
    settings = lessons.config_changes(edits)
    settings += [f"installed: {line}" for line in lessons.installs(
        [r.cmd for r in s.runs if not r.failed and not r.pending]
        or (lessons.passed_commands(s.transcript, s.paths.rel) if s.transcript is not None else []))]
    from graphmem.capture.redact import redact

    if settings:
        body.append("Configuration set:")
        body.extend(f"- {redact(line)}" for line in settings)
    found = lessons.more_findings(s.findings)
    if found:
        body.append("Also found:")
        body.extend(f"- {redact(line)}" for line in found)
    later = [text for text in _asked_later(s, asked) if not _retyped(text, goal_text) and not _THANKS.match(text)]
    if len(later) > 3:  # where the session went last matters to the next one (held-out review 23)
        later = [later[0], f"(+{len(later) - 3} more)", *later[-2:]]
    if later:
        # a short ask is told whole (held-out review 44: "… I said it should be 4D parallelism with…", cut
        # three characters before "ZeRO-3", the word the correction was about)
        body.append("Later asks: " + " | ".join(_short(text, 140 if len(" ".join(text.split())) <= 140 else 100)
                                                for text in later))
    body.extend(f"Plan the person approved: {plan}" for plan in
                (lessons.approved_plans(s.transcript)[:2] if s.transcript is not None else []))
    unchecked = lessons.plan_checks_not_run(s.transcript, s.paths.rel) if s.transcript is not None else []
    if unchecked:
        body.append("The plan's checks not run in the session: " + "; ".join(unchecked))
    if fixed:
        body.append("Lessons:" if s.transcript is not None else "Done:")
        body.extend(f"- {_short(d.title, 200)}" for d in fixed[:5])
    if changed:
        body.append("Files changed: " + ", ".join(changed[:12]) + (f" (+{len(changed) - 12})" if len(changed) > 12 else ""))
    if swept_in:
        body.append("Its commits also took in: " + ", ".join(swept_in[:8])
                    + (f" (+{len(swept_in) - 8})" if len(swept_in) > 8 else "") + " (not changed in the session)")
    if s.runs:
        body.append(f"Commands: {len(s.runs)} run, {len(failed_runs)} failed")
    unpushed = _unpushed(s)
    if unpushed and not any(d.kind == "task" and re.search(r"(?i)\bpush\b|\bahead of\b", d.title + d.body) for d in drafts):
        # (an open task that already says so: "ready to push when you're ready: `git push`")
        body.append(f"Not pushed when the session ended: {unpushed}")
    recorded = Counter(d.kind for d in drafts if d.source == "user")
    if recorded:
        body.append("Recorded from the user: " + ", ".join(_plural(n, k) for k, n in sorted(recorded.items())))
    if open_tasks:
        body.append("Open:")
        body.extend(f"- {_short(d.title, 200)}" for d in open_tasks[:5])
    quoted = _short(redact(last_words), 300)
    # the words that tell where the work stood are not always the session's last (held-out reviews 89–91:
    # "Agent's last message: Banked. Waiting on your read of the P-12 proposal", and two answers followed)
    latest, asked_by_person = _latest_words(s)
    literal = not latest or _same_message(latest, last_words)
    if last_words:
        label = ("Its last words, in the turn the session ended in" if stopped_at_work and literal
                 else "Agent's last message" if literal else "Its last working turn ended")
        body.append(f"{label}: {quoted}")
        body.extend(f"Not yet done (its last message): {redact(said)}" for said in _not_yet_done(last_words)
                    if " ".join(said.split())[:60] not in " ".join(quoted.split()))
    asked_last, final, spoke_after = _final_reply(s)
    told = " ".join(" ".join(d.body.split()) for d in drafts)
    if last_words and final and _norm(final[:300]) != _norm(last_words[:300]) \
            and " ".join(final.split())[:80] not in told and sum(len(b) + 1 for b in body) < SUMMARY_BODY_MAX - 700:
        # what it said last, when the person's later question made it take back part of its report
        # (held-out review 38: "sccache … installed (40 GB cache)", then, asked whether that is in RAM
        # or on disk, "on disk … I sized it bigger than your whole disk")
        # after a loop tick or a task's notice that did work, its answer to the person was not its last word
        label = "Its answer, asked" if spoke_after else "Its last words, asked"
        body.append(f"{label} \"{_short(' '.join(asked_last.split()), 120)}\": "
                    f"{redact(_short(' '.join(unbold(final).split()), 400))}")
    offered = _offer_left_open(s)
    latest = _before_offer(latest, offered)  # the offer's own line tells the rest
    head = _norm(latest)[:80].rsplit(" ", 1)[0] if len(_norm(latest)) > 80 else _norm(latest)
    if last_words and not literal and asked_by_person and latest and f" {head} " not in f" {_norm(' '.join(body))} ":
        body.append(f"Its latest words: {redact(_short(' '.join(unbold(latest).split()), 300))}")
    after = _run_after_last_words(s, last_words)
    if after:
        body.append(f"Then, after its last words: {redact(after)}")
    stopped = _stopped_after_last_words(s, last_words)
    if stopped:
        body.append(f"Then the harness said: {redact(stopped)}")
    listed = lessons.tasks_left(s.transcript) if s.transcript is not None else []
    if listed:
        body.append("Left open on the agent's task list: " + "; ".join(_short(t, 100) for t in listed[:6])
                    + (f" (+{len(listed) - 6} more)" if len(listed) > 6 else ""))
    report_file, left = lessons.report_left_open(s.transcript, s.paths.rel) if s.transcript is not None else ("", [])
    if left:
        body.append(f"Left open in its report ({report_file}):")
        body.extend(f"- {redact(item)}" for item in left)
    if offered and " ".join(offered.split())[-80:] not in " ".join(quoted.split()):
        body.append(f"Offered at the end, not answered: {redact(_short(offered, 400))}")
    left_out = _left_uncommitted(s)  # (last: a body over its room loses it before the agent's words)
    if left_out:
        body.append(left_out)
    end = next((e for e in reversed(s.events) if e.event in ("session-end", "pre-compact")), None)
    if end is not None:
        reason = end.extra.get("reason") or end.extra.get("trigger") or ""
        body.append(f"Ended: {end.event}" + (f" ({reason})" if isinstance(reason, str) and reason else ""))
    ids = _uniq([*(e.id for e in s.prompts[:5]), *(i for d in fixed[:5] for i in d.observation_ids[-1:]),
                 *(e.id for e in s.events[-1:])])
    # (every line from commands and their output too: "Left out of its commits" names what `git status` printed,
    # the review of a28347e, M6)
    return [Draft(
        kind="summary", title=redact(title), body=redact(_cap_body("\n".join(body), min(DERIVED_BODY_MAX, SUMMARY_BODY_MAX + len(why)))),
        files=changed[:20],
        symbols=[], confidence=0.7, importance=0.7, source="rule",
        key=session_key(s.session_id, "summary", ""), observation_ids=ids,
        tags=_uniq(["session-summary", "handoff", day, "commit-told" if why else ""]))]


def _unwrapped(message: str) -> str:
    """A commit message's paragraphs and list items one line each: its 72-column breaks made lines
    of their own that crowded the rest of a summary out of the prompt's few hundred characters."""
    lines: list[str] = []
    in_item = False  # an indented line goes on a list item; after prose it is code, a line of its own
    for raw in message.strip().splitlines():
        line = raw.strip()
        if not line:
            lines.append("")
            in_item = False
        elif lines and lines[-1] and not _LIST_ITEM.match(raw) and not line.startswith("|") \
                and (in_item or not raw[:1].isspace()):
            lines[-1] += " " + line
        else:
            lines.append(line)
            in_item = bool(_LIST_ITEM.match(raw))
    return "\n".join(line for line in lines if line)


def _headline_commit(s: _Session, drafts: list[Draft]) -> Draft | None:
    """The commit item of the commit that heads the session's summary."""
    subjects = _commit_subjects(s)
    key = session_key(s.session_id, "commit", subjects[0]) if subjects else ""
    return next((d for d in drafts if d.key == key), None)


_COMMIT_MSG = re.compile(
    r"""git\s+(?:-C\s+\S+\s+)?commit\b[^\n]*?-[a-zA-Z]*m\s+(?:"\$\(cat\s+<<-?\s*'?(\w+)'?\s*\n(.*?)\n\s*\1|"((?:[^"\\]|\\.)+)"|'([^']+)')""",
    re.DOTALL)
# `git commit -F - <<'EOF' … EOF`: the message on stdin (held-out review 6, zoia 91de1feb)
_COMMIT_STDIN = re.compile(r"""git\s+(?:-C\s+\S+\s+)?commit\b[^\n]*?(?:-[a-zA-Z]*F\s*-|--file[= ]-)(?=\s)[^\n]*?"""
                           r"""<<-?\s*(['"]?)(\w+)\1[^\n]*\n(.*?)\n\s*\2\b""", re.DOTALL)
_COMMIT_FILE = re.compile(r"""git\s+(?:-C\s+\S+\s+)?commit\b[^\n]*?(?:\s-[a-zA-Z]*F\s*|\s--file[= ])(?:<\(\s*cat\s+)?"""
                          r"""(?!-\s)([^\s)<>;&|]+)""")
_HEREDOC_TO_FILE = re.compile(
    r"""\bcat\s*>\s*(?P<path>[^\s<>;&|]+)\s*<<-?\s*(?P<q>['"]?)(?P<tag>\w+)(?P=q)[^\n]*\n(?P<text>.*?)\n\s*(?P=tag)\b|"""
    r"""\bcat\s*<<-?\s*(?P<q2>['"]?)(?P<tag2>\w+)(?P=q2)\s*>\s*(?P<path2>[^\s<>;&|]+)[^\n]*\n(?P<text2>.*?)\n\s*(?P=tag2)\b""",
    re.DOTALL)
_GIT_ADD = re.compile(r"git add ([^&|;\n]+)")  # a line ends the targets: a commit message may follow


_TRAILER = re.compile(r"(?im)^(?:co-authored-by|signed-off-by|change-id|generated with|claude-session)\b.*$|^🤖.*$")
MAX_COMMIT_ITEMS = 2


def _removed_after_written(runs: list[_Run]) -> set[str]:
    """The files the session's commands last removed (`rm`) after they last wrote them."""
    last_write: dict[str, int] = {}
    last_rm: dict[str, int] = {}
    for n, run in enumerate(runs):
        if run.failed:
            continue
        for f in run.cmd.writes:
            last_write[f] = n
        for step in chain(run.cmd):
            if step.exe == "rm":
                for target in step.targets:
                    last_rm[posixpath.normpath(posixpath.join(step.dir, target))] = n
    return {f for f, n in last_rm.items() if n >= last_write.get(f, -1)}


def _commits(s: _Session) -> dict[str, tuple[str, _Run]]:
    """Subject → (message body, its run) for the commits the session made; a commit redone
    (amended, retried after a hook) keeps its last message. Commits not pushed when the session
    then reset the branch hard to another revision are gone (held-out review 20: the spec commit
    before `git reset --hard origin/main && rm -rf docs/superpowers` headed the brief)."""
    found: dict[str, tuple[str, _Run]] = {}
    pushed: set[str] = set()
    drafted: dict[str, str] = {}  # file name → the text last written to it, for `git commit -F <file>`
    runs = {r.ev.pos: r for r in s.runs}
    for ev in s.events:
        if ev.event != "post-tool":
            continue
        if ev.is_edit and isinstance(ev.tool_input.get("content"), str) and ev.files:
            drafted[posixpath.basename(ev.files[0])] = ev.tool_input["content"]
        for written in _HEREDOC_TO_FILE.finditer(ev.command[:20000]) if "<<" in ev.command else ():
            path, text = written.group("path") or written.group("path2"), written.group("text") or written.group("text2") or ""
            drafted[posixpath.basename(path.strip("'\""))] = text
        run = runs.get(ev.pos)
        if run is None or run.failed or _elsewhere(run.cmd.dir):
            continue  # `cd ~/Developer/site && git commit …`: another repository's history
        refused = _COMMIT_REFUSED.search(run.ev.text[:20000])
        if refused and not _COMMIT_MADE.search(run.ev.text[:20000]) and (
                refused.group(0).startswith(("fatal", "***", "Aborting")) or not _STATUS_BEFORE.search(run.ev.command[:4000])):
            continue  # git refused it, and the line went on to exit 0
        messages = [(m.group(2) or m.group(3) or m.group(4) or "") for m in _COMMIT_MSG.finditer(run.ev.command)]
        messages += [m.group(3) for m in _COMMIT_STDIN.finditer(run.ev.command)]
        # the message drafted into a file first (held-out review 24, julia: `cat > $S/msg1.txt <<'EOF'`,
        # then `git commit -q -F <(cat $S/msg1.txt; printf '%s\n' "$TRAILER")`)
        messages += [drafted[name] for m in _COMMIT_FILE.finditer(run.ev.command[:20000])
                     if (name := posixpath.basename(m.group(1).strip("'\""))) in drafted]
        for message in messages if "commit" in run.ev.command else ():
            message = message.replace("\\n", "\n")
            lines = [ln.rstrip() for ln in message.splitlines()]
            subject = next((ln.strip() for ln in lines if ln.strip()), "")
            if not subject:
                continue
            body = _TRAILER.sub("", "\n".join(lines[lines.index(next(ln for ln in lines if ln.strip())) + 1:]))
            found.pop(subject, None)
            found[subject] = (body.strip(), run)
        if _PUSH.search(run.ev.command):
            pushed = set(found)
        if _RESET_AWAY.search(run.ev.command):
            found = {k: v for k, v in found.items() if k in pushed}
    return found


# held-out review 61: `git add -A; git commit -q -m "WIP: …"; echo …` printed "fatal: unable to
# auto-detect email address" and went on; the same commit landed a minute later
_COMMIT_REFUSED = re.compile(r"(?im)^fatal: unable to auto-detect email address|^\*\*\* Please tell me who you are|"
                             r"^nothing (?:added )?to commit\b|^no changes added to commit\b|^Aborting commit\b|"
                             r"^fatal: (?:cannot do a partial commit|could not (?:read|open) (?:log|commit message) file)")
_COMMIT_MADE = re.compile(r"(?m)^\[[^\]\n]+ [0-9a-f]{7,40}\] |^ \d+ files? changed\b|^ create mode \d+ ")
# "nothing added to commit" that a `git status` earlier in the line printed (the review of session 28)
_STATUS_BEFORE = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?status\b[\s\S]*\bgit\s+(?:-C\s+\S+\s+)?commit\b")
_PUSH = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?push\b(?![^\n;&|]*--dry-run)")
_RESET_AWAY = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?reset\s+--hard\s+(?!HEAD(?:\s|$|[;&|)]))[\w./~^@{}-]+")


def _elsewhere(path: str) -> bool:
    """A directory or file outside the project, as the session names it."""
    return path.startswith(("/", "~", "../")) or path == ".."


# A later commit that says it does a thing another way ("Keep provider order for relevance sort
# instead of re-sorting") or reverts one replaces the session's earlier commit on that subject.
# Not "Replace raw API calls with the typed client": that one builds on the commit adding the client.
_INSTEAD = re.compile(r"(?i)\b(?:instead of|rather than)\b(.+)$")
_REVERT = re.compile(r"(?i)^revert\b\W*(.+?)[\"'”]?\s*$")
_COMMON_SUBJECT_WORDS = frozenset({"feat", "fix", "chore", "refactor", "test", "tests", "docs", "style", "with",
                                   "from", "into", "that", "this", "when", "instead", "rather", "than", "revert",
                                   "update", "updates", "make", "makes", "keep", "keeps", "also"})


def _subject_words(subject: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z_]{3,}", subject.lower()) if w not in _COMMON_SUBJECT_WORDS}


def _replaced(commits: dict[str, tuple[str, _Run]]) -> dict[str, str]:
    """Earlier subject → the later subject of the same session that replaced it: one that reverts
    it by name, or whose subject says it does it another way (its body's "instead of failing" is a
    detail), shares two or more words with it, and names what it no longer does in the earlier one's
    words ("re-sorting" for "… relevance sort"; not "Log upload client errors instead of swallowing
    them" after "Add retry logic to the upload client")."""
    subjects = list(commits)
    replaced: dict[str, str] = {}
    for n, later in enumerate(subjects):
        instead, revert = _INSTEAD.search(later), _REVERT.match(later)
        reverts = _norm(revert.group(1).strip("\"'“” ")) if revert else None
        undone = {w[:4] for w in _subject_words(instead.group(1))} if instead else set()
        for earlier in subjects[:n]:
            words = _subject_words(earlier)
            redone = len(_subject_words(later) & words) >= 2 and bool(undone & {v[:4] for v in words})
            if earlier not in replaced and (reverts == _norm(earlier) or redone):
                replaced[earlier] = later
    return replaced


# a commit's own lines in what git printed: its head (`[main da5defc] Fix …`), then its stat and mode lines
_COMMIT_HEAD = re.compile(r"^\[[^\]\n]+ [0-9a-f]{7,40}\] (.*)$")
_COMMIT_BLOCK_LINE = re.compile(r"^ (?:\d+ files? changed\b|(?:create|delete) mode \d+ |rename |mode change |copy )")
_COMMIT_STAT = re.compile(r"^ (\d{1,9}) files? changed\b")
_COMMIT_ADDS = re.compile(r"^ (?:create|delete) mode \d+ (\S(?:.*\S)?)\s*$")
_ADDS_ALL = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(?:add\s+(?:[^;&|\n]*\s)?(?:-A|--all|-u|--update|\.|:/)(?:\s|$)|"
                       r"commit\s+(?:[^;&|\n]*\s)?(?:-a|--all|-[a-zA-Z]*a[a-zA-Z]*)(?:\s|$))")
_LOCKFILE = re.compile(r"(?:^|/)(?:[\w.-]*\.lock|[\w-]+-lock\.(?:json|yaml)|go\.sum)$")


def _commit_blocks(out: str) -> list[tuple[str, list[str]]]:
    """Each commit git printed in a run's output: its subject and the stat and mode lines right after it (not
    another command's, a `git pull`'s before it: the review of 6bdf030, M1)."""
    lines = out.splitlines()
    blocks = []
    for n, line in enumerate(lines):
        head = _COMMIT_HEAD.match(line)
        if head:
            block = []
            for follow in lines[n + 1:]:
                if not _COMMIT_BLOCK_LINE.match(follow):
                    break
                block.append(follow)
            blocks.append((head.group(1), block))
    return blocks


def _git_path(path: str) -> str:
    """A path as git prints it, quoted with its bytes escaped when they are not ASCII ("docs/caf\\303\\251.md")."""
    if not (len(path) > 1 and path[0] == path[-1] == '"'):
        return path
    raw = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), path[1:-1].encode("utf-8", "replace"))
    return raw.replace(b'\\"', b'"').replace(b"\\\\", b"\\").decode("utf-8", "replace")


_FIXER = re.compile(r"\b(?:biome|black|ruff|prettier|eslint|rubocop|gofmt|rustfmt|dprint)\b|\brun\s+(?:lint|format|fmt)(?::\w+)?\b|"
                    r"(?:^|\s)--(?:fix|write)\b")
_FIXER_COUNT = re.compile(r"(?m)(?:^|\. )Fixed (\d{1,9}) files?\b|^(\d{1,9}) files? reformatted\b")


def _rewritten_by_fixer(s: _Session) -> tuple[str, int] | None:
    """The command and count of the largest rewrite a fixer reported without naming its files (Biome's "Fixed 2
    files.", black's "2 files reformatted"): the files changed are more than the edits show (held-out review 146:
    `bun run lint:fix` fixed a second file, and the summary said "1 file changed")."""
    # a fixer's own run in this checkout (not a `git log` subject, not `cd ../other && black .`), whose rewrite no
    # later put-back undid (the review of a28347e, M5)
    runs = [(n, r.cmd.display, int(m.group(1) or m.group(2))) for n, r in enumerate(s.runs) if not r.pending
            and _FIXER.search(r.cmd.raw[:4000]) and not _elsewhere(r.cmd.dir) and "../" not in r.cmd.raw[:4000]
            for m in [_FIXER_COUNT.search(r.ev.text[-4000:])] if m]
    found = [(shown, count) for n, shown, count in runs if not _put_back_after(s, s.runs[n + 1:])]
    return max(found, key=lambda f: f[1]) if found else None


def _committed_files(s: _Session, changed: list[str]) -> tuple[int | None, list[str]]:
    """How many files the session's one commit took in, by git's own count (None when it made several, amended
    one or concluded a merge, whose counts hold work not the session's, or git did not say), and the files git
    named as created or deleted in its commits that the session did not change: a file staged before it began
    rides along (held-out review 122: "I'll commit only the git-cloner fix", and the commit made "2 files
    changed … create mode 100644 frontend/assets/packmind_logo_dark.svg"). git names them from the top of the
    repository. Told only when the session staged files by name: `git add -A` takes in what its own installs
    and generators wrote (the review of 6bdf030, M4)."""
    made = [(r, block) for r in s.runs if not r.failed for block in _commit_blocks(r.ev.text[:20000])] if s.commits else []
    lines = " ".join(r.ev.command[:4000] for r, _ in made)
    if not made or re.search(r"--amend\b", lines) or any(subject.startswith("Merge ") for _, (subject, _) in made):
        return None, []
    stat = [m for line in made[0][1][1] for m in [_COMMIT_STAT.match(line)] if m] if len(made) == 1 else []
    count = int(stat[0].group(1)) if stat else None
    if any(_ADDS_ALL.search(e.command[:4000]) for e in s.events if e.command):
        return count, []
    named = [s.paths.rel(_git_path(m.group(1))) for _, (_, block) in made for line in block
             for m in [_COMMIT_ADDS.match(line)] if m]
    # not one the session touched another way (`git -C <repo> rm -q <file>`, an edit in another checkout): by path
    said = {w for e in s.events if e.command for w in re.findall(r"[^\s'\"`;&|()<>=]+", e.command[:4000])}
    said |= {f for e in s.events for f in e.files} | set(changed)

    def touched(f: str) -> bool:
        return any(w == f or w.endswith("/" + f) or "/" in w and f.endswith("/" + w) for w in said)
    return count, [f for f in _uniq(named) if not _elsewhere(f) and not _LOCKFILE.search(f) and not touched(f)]


_HEREDOC_START = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n")


def _without_heredocs(line: str) -> str:
    """A shell line without the text of its here-documents (a commit message's words are no flags)."""
    kept, at = [], 0
    while (start := _HEREDOC_START.search(line, at)) is not None:
        end = re.compile(rf"^[ \t]*{start.group(1)}\b", re.MULTILINE).search(line, start.end())
        kept.append(line[at:start.start()])
        if end is None:
            return "".join(kept)
        at = end.end()
    return "".join(kept) + line[at:]


_QUOTED_ARG = re.compile(r"\"[^\"]*\"|'[^']*'")
_NO_VERIFY = re.compile(r"\bgit\s+(?:-[Cc]\s+\S+\s+){0,4}commit\b[^;&|\n]{0,400}?\s(?:--no-verify|-[a-mo-zA-Z]*n[a-zA-Z]*)"
                        r"(?=\s|$)|\bHUSKY=0\s+(?:\w+=\S*\s+){0,4}git\b[^;&|\n]{0,400}?\scommit\b|"
                        r"\bgit\s+(?:-[Cc]\s+\S+\s+){0,4}-c\s+core\.hooksPath=/dev/null\b[^;&|\n]{0,400}?\scommit\b")


def _hooks_skipped(s: _Session) -> str:
    """What the session's commits made with `--no-verify` skipped: the checks its hooks run, and what they
    said when an earlier commit of the session failed in them (held-out review 129: the pre-commit hook's
    tests failed, and the release went in with `--no-verify`, the summary saying only what passed)."""
    found = [(run, m) for _, run in s.commits.values()
             if (m := _NO_VERIFY.search(_QUOTED_ARG.sub("", _without_heredocs(run.ev.command[:20000]))))]
    if not found:
        return ""
    runs = [run for run, _ in found]
    how = next((w for w in ("HUSKY=0", "core.hooksPath=/dev/null") if w in found[0][1].group(0)), "--no-verify")
    first = min(r.ev.pos for r in runs)
    # (failed in them: what it printed is a hook's, not git's own refusal, "no changes added to commit")
    hooked = any(r.failed and r.ev.pos < first and _tries_commit(r) and _hook_said(r.ev.text[:20000])
                 and not _COMMIT_REFUSED.search(r.ev.text[:20000]) for r in s.runs)
    # (what the hook printed is a test run's whole log: its first error line may be a passing test's)
    return f"Hooks skipped: committed with `{how}`" + (", after `git commit` failed in them" if hooked else "")


# a commit hook's name in what a failed `git commit` printed (lessons reads its refusals by it too)
COMMIT_HOOK = re.compile(r"(?i)\bpre-?commit\b|\bcommit-msg\b|\bhusky\b|\blefthook\b")


def _hook_said(out: str) -> bool:
    """Whether a failed commit's output is a hook's: it names one, or echoes the scripts it ran (`$ bun test`)."""
    return bool(COMMIT_HOOK.search(out) or re.search(r"(?m)^\$ ", out))


def _tries_commit(run: _Run) -> bool:
    return any(step.exe == "git" and step.sub == "commit" for step in chain(run.cmd))


def _put_back_after(s: _Session, runs: list[_Run]) -> bool:
    """Whether one of these runs put files back (`git checkout -- f`, `git stash`, `git reset --hard`)."""
    from graphmem.capture import lessons  # it imports this module

    return any(lessons.restored_paths(step) for r in runs for step in chain(r.cmd, s.paths.rel))


def _commit_failed_last(s: _Session) -> str:
    """That the session's last `git commit` failed and no later one passed, with git's reason or its hooks'
    (held-out reviews 134, 138, 139: the hook failed, or git found nothing to commit, and the agent's last words
    told the commit as made, guessing a hook had amended another)."""
    tried = [r for r in s.runs if _tries_commit(r)]
    if not tried or not tried[-1].failed:
        return ""
    out = tried[-1].ev.text[:20000]
    refused = _COMMIT_REFUSED.search(out)
    why = f" ({refused.group(0).strip()})" if refused else " in its hooks" if _hook_said(out) else ""
    return f"Its last `git commit` failed{why}, and no later one passed"


def _commit_subjects(s: _Session) -> list[str]:
    """The subjects of the commits the session made (from its git commit commands that passed),
    one that a later commit replaced last."""
    commits = s.commits
    replaced = _replaced(commits)
    return [c for c in commits if c not in replaced] + [f"{c} (replaced later)" for c in commits if c in replaced]


def _commit_rules(s: _Session) -> list[Draft]:
    """Commits whose message explains the change: what was built and how, in the author's words.
    A commit that a later one replaced is told inside the later one's item, as what it replaced:
    alone it reads as the session's outcome (held-out review 12, discourse 1f1355de: the `rank`
    design removed seven minutes later ranked first for the bug and headed the brief)."""
    drafts = []
    commits = s.commits
    replaced = _replaced(commits)
    told: dict[str, str] = {}
    for earlier in commits:  # in order: what a replaced commit had replaced goes on with it
        if earlier in replaced:
            body = "\n".join(filter(None, [commits[earlier][0], told.pop(earlier, "")]))
            told[replaced[earlier]] = "\n".join(filter(None, [
                told.get(replaced[earlier]),
                f"It replaced the session's earlier commit \"{earlier}\"" + (f":\n{body}" if body else ".")]))
    explained = [(subject, "\n".join(filter(None, [body, told.get(subject, "")])), run)
                 for subject, (body, run) in commits.items() if subject not in replaced]
    explained = [c for c in explained if len(c[1]) >= 80]
    explained.sort(key=lambda c: -len(c[1]))
    for subject, body, run in explained[:MAX_COMMIT_ITEMS]:
        added = [t for t in _GIT_ADD.findall(run.ev.command) for t in t.split()]
        files = _uniq(s.paths.rel(f) for f in added if not f.startswith(("-", "http")) and re.search(r"\.[A-Za-z]\w*$", f))
        files = [f for f in files if not _elsewhere(f)]
        drafts.append(Draft(
            kind="fact", title=_short(subject, TITLE_MAX), body=_cap_body(f"Committed: {subject}\n{body}", SUMMARY_BODY_MAX),
            files=files[:12], confidence=0.8, importance=0.6, source="rule",
            key=session_key(s.session_id, "commit", subject), observation_ids=[run.ev.id],
            tags=["commit", "change"]))
    return drafts


_REPORTS_DONE = re.compile(r"(?i)I(?:['’]ve| have)? (?:\w+ )?(?:updated|added|fixed|created|implemented|changed|removed|"
                           r"made|set up|moved|renamed|wrote|rewrote|refactored|replaced|migrated|converted|built)\b")
_AGENT_ACTION = re.compile(r"(?i)(?:let me|let's|now i'll|i'll|i will|next,? i)\b")
_STEP_ANNOUNCED = re.compile(r"(?:^|(?<!\d)[.!]\s+)(?:Now\s+)?(?!(?:No|Every|Some|Any)thing\b|String\b|During\b)"
                             r"[A-Z][a-z]+ing(?:\s+(?:it|them|now|the \w+|this))?(?:\s+now)?(?:\.|…|\.\.\.)\s*$")


_ASKS_NOTHING = re.compile(r"(?i)\s*(?:cd|ls|pwd|hi|hey|hello|yo|ok|okay|go|\.|\?)?\s*")  # "cd", "hey", "ok"
_BARE_COMMAND = re.compile(r"/[\w:.\-]+")  # a slash command without arguments (fullmatch)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
_FILLER_OPENER = re.compile(r"(?i)^(?:(?:all )?done|fixed|perfect|great|excellent)[.!]\s+")


def _closing_words(last_words: str) -> str:
    """The agent's last substantive words, without headings and filler. A line that introduces
    a list ("The label now shows one of:") comes with its items: an item alone is a fragment."""
    lines = last_words.splitlines()
    fenced = False
    for n, raw in enumerate(lines):
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or raw.lstrip().startswith("|"):
            # what a code block holds is quoted, not said (held-out review 139: the subject of a commit the
            # session did not write, shown in a block, titled it); nor is a table's row ("| Платформа | Build
            # ID | Время |", held-out review 6)
            continue
        # emphasis goes, a code span keeps its stars (held-out review 101: "a `.gitignore` with `*`")
        unmarked = re.sub(r"(`[^`\n]*`)|\*+", lambda m: m.group(1) or "", re.sub(r"^[#>*\s-]+", "", raw))
        line = _FILLER_OPENER.sub("", _LIST_ITEM.sub("", unmarked).strip())
        if line.endswith(":") and len(line) > 25 and not _AGENT_ACTION.match(line):
            items = []
            for follow in lines[n + 1:]:
                if not _LIST_ITEM.match(follow):
                    break
                items.append(unbold(_LIST_ITEM.sub("", follow)).strip())
            if items:
                return f"{line} {', '.join(items)}"
            # "I've updated the README to include the `uv tool upgrade --reinstall` command. This
            # provides:" (claude-code-log cb2e607c): what it did comes before the list's lead
            if _REPORTS_DONE.match(line) and re.match(r".{25,}?[.!](?:\s|$)", line):
                return line
        if len(line) > 25 and not line.endswith(("?", ":")) and not _AGENT_ACTION.match(line):
            return line
    return ""


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    return (match.group(1) if match else text).strip()


_ANNOUNCES = re.compile(r"(?i)\W*(?:(?:now|next|first|ok(?:ay)?|good|great|alright)[,!.]?\s+)?(?:let me|let['’]s|i['’]ll|i will)\b")


def _announces_only(text: str) -> bool:
    """Words that only say what the agent does next ("Let me read the model class definitions …")."""
    return len(text) < 300 and _ANNOUNCES.match(text) is not None


def _says_something(text: str) -> bool:
    return len(text) >= 200 and not _announces_only(text)


def _asked_later(s: _Session, asked: int) -> list[str]:
    """The prompts after the first `asked`, in order, with those the person typed while the agent
    worked: Claude Code hands these over mid-turn, with no prompt hook (held-out review 46: "you are
    still only using 1 gpu …", their correction, was in no item)."""
    later = [(e.ts, e.text) for e in s.prompts[asked:]]
    if s.transcript is None:
        return [text for _, text in later]
    from graphmem.capture.redact import redact

    # with no prompt hook at all (held-out review 56: both prompts came mid-turn), every one after the
    # first, which the summary asks with, is a later ask
    since = (s.prompts[asked - 1].ts if 0 < asked <= len(s.prompts) else None) or float("-inf")
    hooked = {_norm(e.text)[:80] for e in s.prompts}  # as the hook stored them: redacted, trimmed
    seen: set[str] = set()
    for m in s.transcript.user_prompts[-400:]:
        if not m.queued or m.ts is None or m.ts <= since:
            continue
        text = redact(strip_attached(m.text).strip())
        if text and _norm(text)[:80] not in hooked and _norm(text) not in seen \
                and not _NOT_TYPED.match(text) and text.split()[0] not in BUILT_IN_COMMANDS:
            later.append((m.ts, text))
            seen.add(_norm(text))
    return [text for _, text in sorted(later, key=lambda t: t[0] if t[0] is not None else since)]


def _final_reply(s: _Session) -> tuple[str, str, bool]:
    """The person's last prompt, the agent's last words after it, and whether a turn the harness
    started said more after them, from the transcript."""
    prompt, noticed, spoke_after = "", False, False
    last = ("", "")
    for m in s.transcript or ():
        if m.sidechain or m.compact:
            continue
        if _notified(m) or m.role == "user" and m.meta and not m.tool_use_id and m.text.strip() and not m.queued:
            # the harness's turn (a notification, a stop hook's feedback: held-out review 78): no answer to the person
            noticed = True
        elif m.role == "user" and not m.meta and not m.tool_use_id and m.text.strip():
            prompt, noticed, spoke_after, last = ("" if _THANKS.match(m.text) else m.text), False, False, ("", "")
        elif m.role == "assistant" and m.text.strip() and prompt and not noticed:
            # the turn's last words, if they say something: not "Let me read the model class definitions …"
            # (held-out review 42), nor a plan it then carried out and closed with "Ported; all tests pass."
            last = (prompt, m.text) if ("?" in prompt or len(m.text) >= 200) and not _announces_only(m.text) else ("", "")
        elif m.role == "assistant" and m.text.strip() and noticed:
            spoke_after = True
    from graphmem.capture.redact import redact

    return redact(last[0]), redact(last[1]), spoke_after


NOTICED_TOOL = re.compile(r"<tool-use-id>([^<\s]+)</tool-use-id>")  # the call a task notification is of


def _ticked(msg: Any) -> bool:
    return msg is not None and msg.meta and msg.text.lstrip().startswith(LOOP_TICK)


def _notified(msg: Any) -> bool:
    """A turn the harness started: a background task's notification, a tick of the agent's own loop."""
    return msg is not None and msg.meta and not msg.compact and ("<task-notification>" in msg.text[:200] or _ticked(msg))


# handing work to a sub-agent is the session's work too (held-out review 40: its last turns launched
# the builds, while a loop tick's disk cleanup stood as its last word); an explorer only looks
_LOOKING_AGENTS = frozenset({"Explore", "Plan", "claude-code-guide", "statusline-setup"})


def delegates_work(tool: str, tool_input: dict[str, Any]) -> bool:
    return tool in ("Agent", "Task") and str(tool_input.get("subagent_type") or "") not in _LOOKING_AGENTS


# the harness telling that the machine under the session went away (held-out review 63: "The container was
# restarted. The following background tasks were running and are now stopped: …", after "Swarm's still
# working" had been the agent's last words)
_STOPPED = re.compile(r"(?i)\b(?:container|machine|sandbox|instance|vm) was restarted\b.*|"
                      r"\bbackground tasks were running and are now stopped\b.*", re.DOTALL)


def _stopped_after_last_words(s: _Session, last_words: str) -> str:
    """The harness's notice, after the agent's last words, that the machine restarted and stopped its
    background tasks: what those words said was running is not."""
    said = " ".join(last_words.split())
    if s.transcript is None or not said:
        return ""
    msgs = [m for m in s.transcript if not m.sidechain]
    at = next((n for n in range(len(msgs) - 1, -1, -1) if msgs[n].role == "assistant"
               and " ".join(msgs[n].text.split()) == said), None)
    for msg in msgs[at + 1:] if at is not None else ():
        hit = _STOPPED.search(msg.text[:4000]) if msg.role == "user" and msg.meta else None
        if hit:
            start = msg.text.rfind("\n", 0, hit.start()) + 1
            notice = re.sub(r"</?system-reminder>", " ", msg.text[start:start + 600])
            return _short(" ".join(notice.split()), 300)
    return ""


def _run_after_last_words(s: _Session, last_words: str) -> str:
    """What the command the agent's last words announced printed last, when those words only
    announce it ("Exact Lion math confirmed. Let me smoke-test on-device against an fp64
    reference:", then "SMOKE TEST: PASS …", held-out review 37): the outcome they left unsaid."""
    said = " ".join(last_words.split())
    if s.transcript is None or not said or not (said.endswith(":") or _STEP_ANNOUNCED.search(said[-80:])):
        return ""
    msgs = [m for m in s.transcript if not m.sidechain]
    at = next((n for n in range(len(msgs) - 1, -1, -1) if msgs[n].role == "assistant"
               and " ".join(msgs[n].text.split()) == said), None)
    if at is None:
        return ""
    uses = {u.id: u for m in msgs[at:] if m.role == "assistant" for u in m.tool_uses}
    results = [m for m in msgs[at:] if m.role == "tool_result" and m.tool_use_id in uses and not m.is_error]
    last = results[-1] if results else None
    command = uses[last.tool_use_id].input.get("command") if last is not None else None
    lines = [ln.strip() for ln in (last.text if last is not None else "").splitlines() if ln.strip()]
    if not isinstance(command, str) or not lines:
        return ""
    return f"`{_short(' '.join(command.split()), 80)}` printed: {_short(lines[-1], 200)}"


def _last_agent_message(s: _Session) -> str:
    """The agent's last words to the person: a turn the harness started (a background task's
    notification) is no answer to them, so its words count only when nothing else was said,
    unless the agent worked in that turn (the awaited run failed and it fixed the next thing).
    Turns of questions and answers after the work (no edit, no command) do not say what the
    session did: its last working turn's words do (held-out review 4, DefaultWatch: four hours of
    Q&A after the notebooks were rewritten titled the session "My fault — I used plain-English names").
    Once it has handed work to sub-agents, a turn their notice started tells how that work stands
    (held-out review 87: "Extraction is in flight — three Fable workers …" stood as its last message
    after "Nothing from the workers on disk yet — all three died …")."""
    prompted = worked = delegated = False
    answers: list[tuple[str, bool]] = []
    stops: list[str] = []
    ran = {r.ev.pos: r.cmd for r in s.runs}  # by position: a settled run holds a copy of its event
    for ev in s.events:
        if ev.event == "user-prompt":
            prompted, worked = True, False
        elif ev.event == "post-tool" and (_edits_project(s, ev.files or [str(ev.tool_input.get("file_path") or "")]) if ev.is_edit else
                                          ev.pos in ran and ran[ev.pos].changes_things
                                          or delegates_work(ev.tool, ev.tool_input)):
            worked = True
            delegated = delegated or delegates_work(ev.tool, ev.tool_input)
        elif ev.event == "stop" and ev.text.strip():
            if prompted or worked:
                answers.append((ev.text, worked))
            else:
                stops.append(ev.text)
            prompted = worked = False
    # the stops do not tell a turn the agent's own loop started (its tick), nor which task a notice is
    # of: the transcript does
    deferred = s.transcript is not None and (delegated or any(_ticked(m) for m in s.transcript))
    if answers and not deferred:
        at = next((k for k in range(len(answers) - 1, -1, -1) if answers[k][1]), len(answers) - 1)
        if "?" in answers[at][0][-400:]:  # a question the person then answered: see below
            at = next((k for k in range(len(answers) - 1, at, -1) if _says_something(answers[k][0])), at)
        return answers[at][0]
    if stops and not deferred:
        return stops[-1]
    if s.transcript is not None:
        from graphmem.capture.lessons import COMMAND_TOOLS
        from graphmem.capture.redact import redact

        asked, spoken, replies, worked, did = None, [], [], False, False
        handed: set[str] = set()  # the ids of the calls that handed work to sub-agents
        working: list[Any] = []  # the replies of turns that edited, wrote or built something
        looked: list[Any] = []  # the replies of turns that only read and searched
        said_in_turn = silent = False  # silent: the last turn that did something said nothing
        for m in s.transcript:
            if m.sidechain:
                continue
            if m.role == "user":
                if did:
                    silent = not said_in_turn
                asked, worked, did, said_in_turn = m, False, False, False
            elif m.role == "assistant":
                # in a tick of its own loop only an edit of the project is work (held-out review 40: its
                # disk cleanup stood as the session's last word)
                worked = worked or any(_edits_project(s, [str(u.input.get("file_path") or "")])
                                       and (u.name in EDIT_TOOLS or not _ticked(asked)) for u in m.tool_uses)
                did = did or any(_edits_project(s, [str(u.input.get("file_path") or u.input.get("notebook_path") or "")])
                                 if u.name in EDIT_TOOLS else
                                 u.name in COMMAND_TOOLS and _changes_things(u.input, s.paths.rel)
                                 or delegates_work(u.name, u.input) for u in m.tool_uses)
                # (a message that resumes one hands it work again: its next notice names that call)
                handed |= {u.id for u in m.tool_uses if delegates_work(u.name, u.input) or u.name == "SendMessage"}
                notice = NOTICED_TOOL.search(asked.text[:600]) if asked is not None and _notified(asked) \
                    and not _ticked(asked) else None
                told = notice is not None and notice.group(1) in handed  # how the work it handed out stands
                if m.text:
                    spoken.append(m)
                    said_in_turn = True
                    if not _notified(asked) or worked or told:
                        replies.append(m)
                        if did or told:
                            working.append(m)
                        elif worked:
                            looked.append(m)
        if did:
            silent = not said_in_turn
        # held-out review 73: the last turn ("Go") launched a worker and edited, and said nothing; the words
        # of the working turn before it ("While the reviewer works, …") were an hour stale by then
        last = (replies or spoken)[-1:] if silent and replies else (working or looked or replies or spoken)[-1:]
        if last and "?" in last[0].text[-400:] and last[0] in replies:
            # its working turn ended on a question the person then answered: the answer's turn says
            # where the session went (held-out review 42: "what's driving it for you …?", then "I would
            # say b …" and the d=2048 proposal, left out)
            after = [m for m in replies[replies.index(last[0]) + 1:] if _says_something(m.text)]
            last = after[-1:] or last
        return redact(last[0].text[:2000]) if last else ""
    return ""


_ONLY_THANKS = re.compile(r"(?i)\W*(?:(?:thanks|thank you|thx|ty|cheers|great|perfect|nice|awesome|cool)\b\W*)+(?:(?:so|very) much\W*)?$")


def _same_message(a: str, b: str) -> bool:
    """Whether two tellings are one message: the same words, or one the start of the other (a stop
    hook's copy may be cut)."""
    na, nb = _norm(a), _norm(b)
    return na == nb or min(len(na), len(nb)) >= 40 and (na.startswith(nb) or nb.startswith(na))


def _latest_words(s: _Session) -> tuple[str, bool]:
    """The agent's last words, whatever turn they ended, and whether the person started that turn
    (not the harness: a notice, a stop hook's feedback, a loop tick; nor their thanks); from the
    stops when there is no transcript."""
    said, typed, by_person = "", False, False
    if s.transcript is None:
        for ev in s.events:
            if ev.event == "user-prompt":
                typed = not _NOT_TYPED.match(ev.text) and not _ONLY_THANKS.match(ev.text)
            elif ev.event == "stop" and ev.text.strip():
                said, by_person, typed = ev.text, typed, False
    for m in s.transcript or ():
        if m.sidechain or m.compact:
            continue
        if m.role == "user" and not m.tool_use_id and m.text.strip():
            typed = not m.meta and not _ONLY_THANKS.match(m.text)
        elif m.role == "assistant" and m.text.strip():
            said, by_person = m.text, typed
    from graphmem.capture.redact import redact

    return redact(said[:2000]), by_person


def _before_offer(latest: str, offered: str) -> str:
    """The latest words without the paragraphs at their end that the offer line tells (the review of
    1e53e97, L4: "`test_timeout` sleeps 2 s on the wall clock too." before "Want me to fix both?" was told
    nowhere once the offer was)."""
    if not offered:
        return latest
    from graphmem.capture.redact import redact

    told = f" {_norm(redact(offered))} "
    paragraphs = [p for p in re.split(r"\n\s*\n", latest) if p.strip()]
    while paragraphs and f" {_norm(paragraphs[-1])} " in told:
        paragraphs.pop()
    return "\n\n".join(paragraphs)


_OFFER_ASKED = re.compile(r"(?i)\b(?:want me to|should i|shall i|would you like me to|do you want me to|ready for me to)\b|"
                          r"^\W*(?:want|ready) to\b")


def _offer_left_open(s: _Session) -> str:
    """What the agent offered to do next in the session's last words, when the person never answered
    (held-out review 31, vertumnus: the poster plan ending "Shall I build that first increment …?" was
    lost because the summary reports the last working turn): its last paragraph."""
    msgs = [m for m in s.transcript or [] if not m.sidechain and not m.compact and (m.role == "assistant" and m.text.strip()
            or m.role == "user" and not m.meta and not m.tool_use_id and m.text.strip())]
    if not msgs or msgs[-1].role != "assistant":
        return ""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", _FENCE.sub("\n", msgs[-1].text)) if p.strip()]
    last = paragraphs[-1] if paragraphs else ""
    if not last.endswith("?") or not _OFFER_ASKED.search(last[-200:]):
        return ""
    return " ".join(paragraphs[-2:]) if len(last) < 120 and len(paragraphs) > 1 else last


def _edits_project(s: _Session, files: list[str]) -> bool:
    """Whether a call on these files (an edit, a read) works on the project: the agent's note to its
    own memory under ~/.claude is no work on it (held-out review 29, vertumnus: that Write and Read
    made "Understood — noted" the summary's headline), nor a scratch file; a document it keeps next
    to the checkout is (held-out review 44: the design doc in /workspace, fixed after the person's
    "Why do you have DP with Zero 2 in there", stood behind an earlier turn's launch report)."""
    named = [f for f in files if f]
    return not named or any(s.paths.in_project(f) or _beside(s, f) for f in named)


def _beside(s: _Session, path: str) -> bool:
    """Whether a file outside the checkout sits beside it: under its parent directory, in no hidden
    directory there (`~/.claude`, `~/.cargo`), and no installed library or scratch."""
    for root in s.paths.roots:
        parent = posixpath.dirname(root.rstrip("/"))
        if parent not in ("", "/") and path.startswith(parent + "/") and not _NOT_ITS_WORK.search(path):
            return not any(part.startswith(".") for part in path[len(parent) + 1:].split("/")[:-1])
    return False


# the agent's own notes and scratch, and installed libraries
_NOT_ITS_WORK = re.compile(r"(?:^|/)\.(?:claude|codex|gemini|cursor|aider)[\w.-]*/|^~|/(?:site|dist)-packages/|/node_modules/|"
                           r"/go/pkg/mod/|/vendor/|^(?:/private)?/(?:var/)?tmp/|"
                           r"^/var/folders/|^[A-Za-z]:[\\/]Users[\\/][^\\/]+[\\/]AppData[\\/]|(?:^|/)memory/[^/]+\.md$")


# a go-ahead or a thank-you, nothing asked ("yes please", "commit", "Excellent work, thank you!")
_THANKS = re.compile(r"(?i)(?:\W*\b(?:thanks|thank|you|thx|excellent|great|perfect|nice|awesome|good|job|well|done|work|"
                     r"so|much|very|cool|ok|okay|that|works|yes|yeah|yep|sure|please|go|ahead|do|it|commit|push|"
                     r"continue|proceed|added|lgtm)\b)+\W*$")


def _retyped(prompt: str, first: str) -> bool:
    """Whether a prompt is the first one typed again with a word or two changed."""
    words, then = set(re.findall(r"\w+", prompt.lower())), set(re.findall(r"\w+", first.lower()))
    return bool(words) and len(words & then) >= 0.8 * len(words | then)


def _changes_things(tool_input: dict[str, Any], rel: Callable[[str], str]) -> bool:
    line = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(line, list):
        line = " ".join(str(p) for p in line)
    return not isinstance(line, str) or not line.strip() or parse_command(line, "", rel).changes_things


def _passing_checks(runs: list[_Run]) -> list[str]:
    """The distinct tests, builds and linters that passed, each as its broadest run, none that
    failed when run again later. A chained line's other steps count only when its exit status
    speaks for each (`a && b`, no pipe, `;` or `||`): eagerminds' `npm run lint && npm run build`."""
    passing: dict[tuple[str, str], str] = {}
    for run in runs:
        if run.pending:
            continue
        line = parse_command(run.ev.command) if run.ev.command else run.cmd
        every = [line, *(parse_command(o) for o in line.others)]
        if run.failed:
            steps = [run.cmd, *every]
        elif _ALL_AND.fullmatch(line.raw.strip()):
            steps = every
        else:  # `a; b`, `a || b`: the line's status is its last step's (past an `echo done`)
            tail = [st for st in every if st.exe not in _TRIVIAL]
            steps = tail[-1:] if re.search(r";|\|\|", line.raw) else [line]
        told = _echoed_statuses(every, line.raw, run.ev.text)
        steps = [st for st in steps if st not in [every[k] for k in told]]
        for step, failed in [*((st, run.failed) for st in steps), *((every[k], bool(s)) for k, s in told.items())]:
            if not step.is_check or _ASKS_ABOUT_TOOL.search(step.main) or _REWRITES.search(step.main):
                continue
            kind = _check_kind(step)
            known = passing.pop(kind, step.main)
            if not failed:
                passing[kind] = min(known, step.main, key=len)
    return list(passing.values())


_ECHOED_STATUS = re.compile(r"echo\s+['\"]?([^'\"$;&|A-Za-z]{0,20}[A-Za-z][^'\"$;&|]{0,60}?)\$\?([^'\"$;&|]{0,20})['\"]?\s*$")


def told_failure(line: Command, output: str, rel: Callable[[str], str]) -> Command | None:
    """The check of a line that printed its own failing status (`make; echo "BUILD=$?"; tail log`
    printed "BUILD=2"), whatever the line's last step returned."""
    if not line.others or "$?" not in line.raw:
        return None
    every = chain(line, rel)
    return next((every[k] for k, status in _echoed_statuses(every, line.raw, output).items() if status), None)


def _echoed_statuses(every: list[Command], raw: str, output: str) -> dict[int, int]:
    """The status a line prints of each check right before an `echo "…$?"`: `make; echo "BUILD=$?"`
    printed "BUILD=0" (held-out review 37, where the line's own status was its last step's, an
    `nm`), by position: the second `exit=` printed is the second check's. A check piped into another
    command printed that command's status, not its own."""
    if "$?" not in raw or not any(_ECHOED_STATUS.match(step.main) for step in every[1:]):
        return {}
    told: dict[int, int] = {}
    tail = output[-8000:]
    # the text right before each echo of `$?`: a pipe there (`|`, `|&`) means the status is its last command's
    segments = re.split(r";|&&|\|\||\n", raw[:20_000])
    piped = [bool(re.search(r"(?<!\|)\|(?!\|)", before)) and "pipefail" not in raw
             for before, echo in pairwise(segments) if re.match(r"\s*echo\b", echo) and "$?" in echo]
    seen: dict[tuple[str, str], int] = {}
    echoed = -1
    for k, (step, after) in enumerate(pairwise(every)):
        if re.match(r"echo\b", after.main) and "$?" in after.main:
            echoed += 1  # which echo of `$?` in the line this is, labelled or not
        said = _ECHOED_STATUS.match(after.main)
        if not said:
            continue
        label, suffix = said.group(1).strip(), said.group(2).strip()
        nth = seen[label, suffix] = seen.get((label, suffix), -1) + 1
        if not step.is_check or echoed < len(piped) and piped[echoed]:
            continue
        printed = re.finditer(rf"(?m)^[ \t]*{re.escape(label)}[ \t]*(-?\d{{1,3}})[ \t]*{re.escape(suffix)}[ \t]*\r?$", tail)
        found = next((hit for n, hit in enumerate(printed) if n == nth), None)
        if found:
            told[k] = int(found.group(1))
    return told


def _check_kind(step: Command) -> tuple[str, str]:
    """What a check checks: `make test` and `make lint` are two, `mix test` and `mix test a.exs` one."""
    words = [w for w in step.main.split()[1:] if not w.startswith("-") and not re.search(r"[/.=]", w)]
    return step.family, step.sub or (words[0] if words else "")


_ALL_AND = re.compile(r"[^|;&]*(?:\|\s*(?:tail|head|grep)\b[^|;&]*)?(?:&&[^|;&]*(?:\|\s*(?:tail|head|grep)\b[^|;&]*)?)*")
# a formatter that rewrites the files passes whatever it found (`npx prettier --write …`, held-out
# review 12), where `--check` verifies; `make -w` prints directories, gradle's `-w` warnings
_REWRITES = re.compile(r"\b(?:prettier|biome|dprint)\b.*\s--write\b|\b(?:gofmt|goimports|shfmt)\b.*\s-w\b|"
                       r"^(?:\S*/)?(?:black|isort|autopep8|rustfmt)\b(?!.*\s--(?:check|diff)\b)|"
                       r"\b(?:ruff format|cargo fmt)\b(?!.*\s--(?:check|diff)\b)")
_ASKS_ABOUT_TOOL = re.compile(r"\s(?:--?version|version|--help|help|-V|--collect-only|--co|--list|"
                             r"cache|linters|config|info|doctor|list|clean|"
                             r"--dry-run|--just-print|--recon)(?:\s|$)|"
                             # a dry run prints what it would do (held-out review 24: `make -n install`)
                             r"^(?:\S*/)?g?make\b.*\s-[a-zA-Z]*n(?:\s|$)")


def _transcript_rules(s: _Session) -> list[Draft]:
    """With the agent's own words at hand: lessons, the person's answers, discoveries, open failures."""
    from graphmem.capture import lessons
    from graphmem.capture.redact import redact
    from graphmem.capture.verdicts import verdicts

    found = lessons.failure_lessons(s.transcript, s.paths.rel)
    linted: set[int] = set()
    drafts = lessons.lint_lessons(s.transcript, s.paths.rel, s.session_id, linted)
    # a failed check the lint lessons tell rule by rule is not told again as one failure
    drafts += lessons.lesson_drafts([f for f in found if f.call.pos not in linted], s.paths.rel,
                                    s.session_id, s.paths.relative_text)
    drafts += lessons.shell_pitfalls(s.transcript, s.paths.rel)
    drafts += lessons.edit_pitfalls(s.transcript, s.paths.rel)
    drafts += lessons.permission_blocks(s.transcript, s.paths.rel)
    drafts += lessons.hung_commands(s.transcript, s.paths.rel)
    drafts += lessons.user_answers(s.transcript, s.session_id)
    drafts += _safe(lambda: verdicts(s.transcript, s.session_id), "verdicts")
    drafts += lessons.rejections(s.transcript, s.session_id)
    drafts += lessons.replies(s.transcript, s.session_id)
    drafts += lessons.lettered_choices(s.transcript, s.session_id)
    s.findings = _untold(lessons.ranked_findings(s.transcript), drafts)
    drafts += lessons.discoveries(s.transcript, s.session_id, s.findings, s.paths.rel)
    drafts += lessons.findings(s.transcript, s.session_id)
    drafts += lessons.reasoned_choices(s.transcript, s.session_id)
    replies: list[str] = []
    drafts += lessons.answers(s.transcript, s.session_id, replies)
    # a finding said inside an answer kept whole is told there (held-out review 35: "Compiling CUDA
    # code doesn't need a GPU either", a line of the answer to "could you just do it on a cpu?")
    answered = [" ".join(unbold(r).split()) for r in replies]
    drafts = [d for d in drafts if "discovery" not in d.tags
              or not any(d.title.rstrip("…")[:60] in said for said in answered)]
    drafts += lessons.handoffs(s.transcript, s.session_id)
    # a line the hand-over already leads with ("Пропущено: …" over its commands) is told once
    drafts += [d for d in lessons.left_out(s.transcript, s.session_id)
               if not any(d.title.rstrip("…: ") in other.title + other.body for other in drafts)]
    drafts += lessons.agent_notes(s.transcript, s.paths.rel, s.session_id)
    drafts += lessons.logged_rulings(s.transcript, s.paths.rel)
    drafts += lessons.code_warnings(s.transcript, s.paths.rel, s.session_id)
    # A failure the agent showed was already there before its change (on main too): the next
    # session meets it again and should not chase it (ida-hcli cbba33a6: code_style fails on every
    # PR because of ruff errors on main). What one session found already broken is one item, titled
    # by a diagnosis that names what it speaks of ("Those lint failures are pre-existing …" does not).
    before = [(said, lesson.call.command, lesson) for lesson in found if lesson.fixed_by is None
              and lesson.call.command is not None for said in [_pre_existing(lesson.diagnosis)] if said]
    for group in _one_matter(before):
        said = next((x for x, _, _ in group if not _ANAPHOR.match(x)), group[0][0])
        ran = group[0][1]
        assert ran is not None
        body = [f"`{_short(redact(cmd.raw), 200)}` failed with {_short(redact(lesson.error), 300)}\n"
                "The agent's diagnosis: " + " ".join(lesson.diagnosis) for _, cmd, lesson in group if cmd is not None]
        drafts.append(Draft(
            kind="pitfall", title=_short(said, TITLE_MAX), body="\n".join(_uniq(body)),
            confidence=BASE_CONFIDENCE, importance=0.6, source="rule",
            key=session_key("", "pre-existing", ran.key),
            tags=_uniq(["pre-existing", *(cmd.exe for _, cmd, _ in group if cmd is not None)])))
    for lesson in lessons.open_failures(found)[-2:]:
        if _pre_existing(lesson.diagnosis):
            continue  # not this session's to finish
        cmd = lesson.call.command
        if cmd is None or lesson is not found[-1] and not lesson.diagnosis:
            continue
        title = f"Unresolved: `{cmd.display}`{cmd.where} fails with {_short(lesson.error, 90)}"
        body = [f"`{_short(cmd.raw, 200)}` still failed when the session ended: {lesson.error}"]
        # it edited what the failure names and never ran it again (held-out review 107: biome's format error
        # in RemediateTab.tsx, the layout it asked for applied, then the session ended): not known to fail
        named = [f for f in lesson.edited_after
                 if re.search(rf"(?<![\w.-]){re.escape(posixpath.basename(f))}(?![\w-])", lesson.call.result)]
        if named:
            title = f"Not run again after its fix: `{cmd.display}`{cmd.where} failed with {_short(lesson.error, 80)}"
            body = [(f"`{_short(cmd.raw, 200)}` failed with {lesson.error}; the agent then edited "
                     f"{', '.join(named[:3])}, which the failure names, and the session ended before it ran it again.")]
        if lesson.diagnosis:
            body.append("The agent's diagnosis: " + " ".join(lesson.diagnosis))
        drafts.append(Draft(
            kind="task", title=_short(title, TITLE_MAX), body="\n".join(body), confidence=BASE_CONFIDENCE,
            importance=0.7, source="rule", key=session_key(s.session_id, "unresolved", cmd.key),
            tags=["unresolved", "handoff", cmd.exe]))
    if not any("unresolved" in d.tags for d in drafts):  # a command still failing already says where it stopped
        drafts += lessons.unfinished(s.transcript, s.session_id,
                                     ended=any(e.event == "session-end" for e in s.events),
                                     finished=[e.command for e in s.events if e.event == "post-tool" and e.command])
    return _as_said(s, _fold_handoff(drafts))


_BOOKKEEPING_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "ExitPlanMode"})
# its last words say what it does next ("… Let me check if it's called elsewhere.", held-out review 108), not
# that it waits on the person ("I'll wait for your go", "Let me know …")
_ANNOUNCES_NEXT = re.compile(r"(?i)(?:^|[.!?:]\s+)(?:(?:now|next|ok(?:ay)?|first|so|then),?\s+)?(?:let me|I['’]ll|I will|"
                             r"I['’]m going to)\s+(?!know\b|wait\b|leave\b|stop\b|pause\b|hold\b|be\b|stand\b|keep\b)"
                             r"\w+(?![^.!?:]*\b(?:once|when|after|as soon as|whenever|unless|until|if you)\b)[^.!?:]{0,160}[.:…]?\s*$")


def _cut_mid_turn(s: _Session) -> bool:
    """Whether the session ended inside a turn the person started, the agent still at work: its last
    words there announce its next step and nothing followed but calls ("I'll start by reading the files
    …", "Let me check if it's called elsewhere.": held-out reviews 105–108). Not when interrupted, nor
    after a turn the harness started."""
    after = _last_turn(s)
    if not after or any(m.role == "user" and m.meta and m.text.strip() for m in after):
        return False  # interrupted, or a turn the harness started (a task's notice, a loop tick) ended it
    said = [n for n, m in enumerate(after) if m.role == "assistant" and m.text.strip()]
    if not said:
        return False
    last = after[said[-1]]
    calls = [u for m in after[said[-1]:] if m.role == "assistant" for u in m.tool_uses]
    if any(u.name == "ExitPlanMode" for u in calls):
        return False  # the plan the person approves is carried out in a session of its own (the review of 05b2f49, H1)
    return _ANNOUNCES_NEXT.search(" ".join(last.text[-300:].split())) is not None \
        and any(u.name not in _BOOKKEEPING_TOOLS for u in calls)


# git's own words for a branch with commits the remote lacks: `git status` ("Your branch is ahead of
# 'origin/main' by 3 commits."), `git status -sb` ("## main...origin/main [ahead 43]")
_AHEAD_OF = re.compile(r"(?m)Your branch is ahead of '([^'\s]+)' by (\d{1,9}) commits?|"
                       r"^(?:##|\S+)?[ \t]*([\w./-]+)\.\.\.([\w./-]+) \[ahead (\d{1,9})(?:, behind \d+)?\]")
_GIT_DOES = re.compile(r"\bgit(?:\s+-[Cc]\s+\S+)*\s+(status|push|commit)\b")


# what `git status` lists as changed in the work tree: its long form, `--short`, and rtk's ("📝 Modified: 2 files")
_STATUS_LONG = re.compile(r"^\t(?:modified|deleted|new file|renamed|typechange):[ \t]+(\S(?:.*\S)?)[ \t]*$")
_STATUS_SHORT = re.compile(r"^([ MADRCUT?]{2}) (\S(?:.*\S)?)[ \t]*$")
_RTK_GROUP = re.compile(r"^\S+ (Modified|Staged|Untracked|Deleted): \d{1,9} files?[ \t]*$")


def _status_files(out: str, staged_too: bool = False) -> tuple[list[str], int]:
    """The tracked files a `git status` shows changed and not staged (what a commit of what was staged leaves
    out; with `staged_too`, the staged ones as well), and how many untracked ones it counts."""
    files: list[str] = []
    untracked = 0
    group = section = ""
    for line in out.splitlines():
        if (g := _RTK_GROUP.match(line)) is not None:
            group = g.group(1)
            if group == "Untracked":
                untracked += int(re.search(r"(\d{1,9}) files?", line).group(1))  # type: ignore[union-attr]
            continue
        if group and line.startswith("   ") and line.strip():
            if (group in ("Modified", "Deleted") or staged_too and group == "Staged") and not line.strip().startswith("..."):
                files.append(line.strip())
            continue
        group = ""
        if line.startswith(("Changes to be committed", "Changes not staged", "Untracked files")):
            section = line.split()[0] + line.split()[1]
            continue
        if (m := _STATUS_LONG.match(line)) is not None:
            if section == "Changesnot" or staged_too:
                files.append(m.group(1).split(" -> ")[-1])
        elif section == "Untrackedfiles:" and line.startswith("\t"):
            untracked += 1
        elif (m := _STATUS_SHORT.match(line)) is not None and not line.startswith(("On branch", "##")):
            if m.group(1) == "??":
                untracked += 1
            elif m.group(1)[1] != " " or staged_too:
                files.append(m.group(2).split(" -> ")[-1].strip('"'))
    return _uniq(files), untracked


def _staged_specs(line: Command, rel: Callable[[str], str]) -> list[tuple[str, str]]:
    """(directory, pathspec) for what a line hands to git for its next commit."""
    specs = []
    for step in chain(line, rel):
        sub, targets = step.sub, list(step.targets)
        if step.exe != "git" and targets and targets[0] == "git":  # a wrapper's: `rtk git add a.ts`
            sub, targets = (targets[1], targets[2:]) if len(targets) > 1 else ("", [])
        elif step.exe != "git":
            continue
        if sub in ("add", "rm", "mv", "commit"):
            specs += [(step.dir, w) for w in targets if not w.startswith("-") and w not in (".", ":/")]
    return specs


def _left_uncommitted(s: _Session) -> str:
    """What the session's last `git status` showed changed that its commits after it left out, when it committed
    some files by name (held-out reviews 142, 149, 136: "only README.md was committed"; `README.md` and three
    source files stayed modified, and the `.husky/` files untracked)."""
    at = next((n for n in range(len(s.runs) - 1, -1, -1) if "status" in _GIT_DOES.findall(s.runs[n].cmd.raw[:4000])
               and not s.runs[n].failed and not _elsewhere(s.runs[n].cmd.dir)
               and not re.search(r"\bgit\s+-C\s", s.runs[n].cmd.raw[:4000])
               and (not s.runs[n].ev.cwd or s.paths.rel(s.runs[n].ev.cwd) in (".", ""))), None)
    if at is None:
        return ""
    after = s.runs[at + 1:]
    if _put_back_after(s, after):
        return ""  # it put files back after the status: what is left, the status no longer tells (the review of a28347e, M4)
    made = [run.ev.pos for _, run in s.commits.values()]
    if made and s.runs[at].ev.pos > max(made):
        # a status after its last commit: what it shows was not committed (held-out review 150: "Only the two
        # template files were included", and `codex-provider.ts` stayed modified)
        files, loose_count = _status_files(s.runs[at].ev.text[:20000], staged_too=True)
        if not files:
            return ""
        more = f" (+{len(files) - 4})" if len(files) > 4 else ""
        loose = f"; {_plural(loose_count, 'untracked file')}" if loose_count else ""
        return f"Not committed after its last commit: {', '.join(files[:4])}{more} (its last `git status`){loose}"
    if not any(not r.failed and (_commit_blocks(r.ev.text[:20000]) or "commit" in _GIT_DOES.findall(r.cmd.raw[:4000])
               and _COMMIT_MADE.search(r.ev.text[:20000])) for r in after):
        return ""  # nothing committed after it: the files it shows are the session's work in progress
    if any(_ADDS_ALL.search(r.ev.command[:4000]) for r in after):
        return ""  # everything went in
    changed, untracked = _status_files(s.runs[at].ev.text[:20000])
    # what it staged after: `git add`, `rm`, `mv` and `git commit <paths>`, through a wrapper too (`rtk git add …`),
    # from the directory it ran in, globs matched; in a line that then failed in a hook as well (the review of
    # a28347e, H1)
    specs = [s.paths.rel(posixpath.normpath(posixpath.join(r.cmd.dir if not d else d, w)))
             for r in after for d, w in _staged_specs(r.cmd, s.paths.rel)]
    specs += [s.paths.rel(_git_path(m.group(1))) for r in after for _, block in _commit_blocks(r.ev.text[:20000])
              for line in block for m in [_COMMIT_ADDS.match(line)] if m]

    def went_in(f: str) -> bool:
        f = s.paths.rel(f)
        # (a bare name may have been given from a directory a `cd` in the line entered: any file of that name)
        return any(f == x or f.startswith(x.rstrip("/") + "/") or fnmatch.fnmatch(f, x)
                   or "/" not in x and fnmatch.fnmatch(posixpath.basename(f), x) for x in specs)
    left = [f for f in changed if not went_in(f)]
    if not left or len(left) == len(changed):
        # (a status that shares no file with what went in speaks of another tree: a checkout of another branch)
        return ""
    more = f" (+{len(left) - 4})" if len(left) > 4 else ""
    loose = f"; {_plural(untracked, 'untracked file')}" if untracked else ""
    return f"Left out of its commits: {', '.join(left[:4])}{more} (changed, per its last `git status`){loose}"


def _unpushed(s: _Session) -> str:
    """What the session's last `git status` said was not pushed, when no push ran after it (held-out reviews
    112, 113, 118: "main...origin/main [ahead 45]", and the session ended)."""
    for n in range(len(s.runs) - 1, -1, -1):
        run = s.runs[n]
        does = _GIT_DOES.findall(run.cmd.raw[:4000])
        ahead = _AHEAD_OF.search(run.ev.text[:20000])
        if "status" not in does and not ("commit" in does and ahead):
            continue  # (through a wrapper too: `rtk git status`; a commit that found nothing to add prints it too)
        if ahead is None or any(not later.failed and "push" in _GIT_DOES.findall(later.cmd.raw[:4000])
                                for later in s.runs[n + 1:]):
            return ""
        later = sum(not r.failed and "commit" in _GIT_DOES.findall(r.cmd.raw[:4000]) for r in s.runs[n + 1:])
        after = f"; {_plural(later, 'commit')} made after it" if later else ""
        if ahead.group(1):
            told = f"{_plural(int(ahead.group(2)), 'commit')} ahead of {ahead.group(1)}"
        else:
            told = f"{ahead.group(3)} is {_plural(int(ahead.group(5)), 'commit')} ahead of {ahead.group(4)}"
        said = "its last `git status`" if "status" in does else "what its last `git commit` printed"
        return f"{told} ({said}{after})"
    return ""


def _last_turn(s: _Session) -> list[Any]:
    """The transcript's messages after the person's last ask (none without an ask)."""
    msgs = [m for m in s.transcript or [] if not m.sidechain and not m.compact]
    asked = max((n for n, m in enumerate(msgs) if m.role == "user" and not m.meta and not m.tool_use_id
                 and m.text.strip()), default=-1)
    return msgs[asked + 1:] if asked >= 0 else []


def _read_last_turn(s: _Session) -> list[str]:
    """The project files the agent read after the person's last ask."""
    return _uniq(s.paths.rel(str(u.input["file_path"])) for m in _last_turn(s) if m.role == "assistant"
                 for u in m.tool_uses if u.name == "Read" and isinstance(u.input.get("file_path"), str)
                 and s.paths.in_project(str(u.input["file_path"])))


def _fold_handoff(drafts: list[Draft]) -> list[Draft]:
    """What the last message left to the person about a command that still fails ("run `npm i -D
    typescript` yourself, then rerun `npm run build`") is part of that open task, not a second one."""
    from graphmem.capture.lessons import HANDED_OVER, handed_commands

    left = next((d for d in drafts if "left-to-user" in d.tags), None)
    if left is None or handed_commands(left.body) is None:
        return drafts  # work of its own (rotate a key) stays the person's task
    for task in drafts:
        named = re.match(r"Unresolved: `([^`]+)`", task.title)
        if "unresolved" in task.tags and named and f"`{named.group(1)}`" in left.body:
            task.body = f"{task.body}\n" + left.body.replace(HANDED_OVER, "Left to the person:", 1)
            return [d for d in drafts if d is not left]
    return drafts


_PRE_EXISTING = re.compile(r"(?i)(?<!not )(?<!n't )(?<!never )\bpre-?existing\b|\b(?:fails?|failing|broken) on main\b|"
                           r"(?<!not )\bon main (?:too|as well)\b|\bsame failures? on main\b|"
                           r"\b(?:not (?:related to|caused by|from)|unrelated to) (?:my|our|these|the|this) (?:\w+ )?changes?\b")
_NOT_PRE_EXISTING = re.compile(r"(?i)\b(?:not|isn't|wasn't|aren't|weren't|never)\s+(?:a\s+)?pre-?existing|"
                               r"\bnot (?:on|from) main\b|\bpasses on main\b")


_ANAPHOR = re.compile(r"(?i)^\W*(?:th(?:ose|ese|is|at|ey)|it|both|all of them)\b(?!\s+(?:is|was)\s+(?:the|a)\b)")
_SAID_OF_ANY = frozenset({"pre", "existing", "preexisting", "pre-existing", "main", "change", "changes", "related", "failure",
                          "failures", "fails", "failed", "issue", "issues", "code", "from", "not", "my", "our"})


def _one_matter(found: list[Any]) -> list[list[Any]]:
    """Pre-existing failures grouped by what they speak of: a diagnosis joins the first group whose
    words it shares ("Those lint failures …" and "`code_style` failed — … the ruff lint issue"),
    else starts its own (a lint error and a flaky network test stay two)."""
    from graphmem.capture.compaction import tokens

    groups: list[tuple[set[str], list[Any]]] = []
    for item in found:
        words = tokens(item[0]) - _SAID_OF_ANY
        group = next((g for g in groups if g[0] & words), None)
        if group is None:
            groups.append((set(words), [item]))
        else:
            group[0].update(words)
            group[1].append(item)
    return [g[1] for g in groups]


# what it has yet to find out, or a contrast that puts the failure on its own work ("… not from the change in
# `orders.ts` — it comes from my edit to `payments.ts`"): no claim that the failure was there before
_YET_TO_SETTLE = re.compile(r"(?i)\?|\b(?:let me|i need to|i['’]ll|i will|need to (?:confirm|check|verify)|whether|"
                            r"make sure|double-check)\b")


_ON_MY_WORK = re.compile(r"(?i)(?:[—–;]|\bbut\b)\s*(?:(?:it|this|that)\s+)?(?:(?:comes|is|was|['’]s)\s+)?"
                         r"(?:(?:from|caused by|due to)\s+)?my\b|\bmy\b[^.;]{0,40}\b(?:breaks|broke|causes|caused)\b")


def _pre_existing(diagnosis: list[str]) -> str:
    """The sentence of a diagnosis saying the failure was already there before the change."""
    return next((d for d in diagnosis if (said := _PRE_EXISTING.search(d)) and not _NOT_PRE_EXISTING.search(d)
                 and not _YET_TO_SETTLE.search(d) and not _ON_MY_WORK.search(d[said.end():])), "")


def _untold(ranked: list[tuple[float, int, str, str]], drafts: list[Draft]) -> list[tuple[float, int, str, str]]:
    """The session's findings but those its lessons already tell, so that a finding told twice
    takes no place among the few kept as discoveries (spotter 4d5611e5: the pre-commit lesson's own
    diagnosis had kept "LLMChain.run returns a 3-tuple" out)."""
    from graphmem.capture import lessons

    said = " ".join(d.title for d in drafts).lower()
    kept: list[tuple[float, int, str, str]] = []
    for found in ranked:
        if len(kept) < lessons.MAX_DISCOVERIES:
            title = short(found[2], 200)
            if title.lower().rstrip(".…")[-80:] in said or _told_by_a_lesson(
                    Draft("fact", title), drafts, lessons.following_claim(found[2], found[3])):
                continue
        kept.append(found)
    return kept


def _told_by_a_lesson(found: Draft, drafts: list[Draft], then: str = "") -> bool:
    """A discovery that a lesson of the session already tells: it becomes a line of that lesson
    instead of an item (entire-cli f6833005 had "`entire enable --agent` doesn't create it" beside
    the lesson "setupAgentHooksNonInteractive doesn't create the .entire/.gitignore")."""
    from graphmem.capture.compaction import tokens

    words = tokens(found.title)
    holder = next((d for d in drafts if d.kind == "pitfall" and _tells(d, words)), None)
    if holder is not None:
        _fold_into(holder, found, then)
    return holder is not None


def _tells(holder: Draft, words: set[str]) -> int:
    """How many of a finding's distinctive words a draft holds, if that is three and half of them."""
    from graphmem.capture.compaction import tokens

    shared = len(words & tokens(f"{holder.title}\n{holder.body}"))
    return shared if shared >= 3 and shared >= len(words) / 2 else 0


def _fold_into(holder: Draft, found: Draft, then: str = "") -> None:
    """`then`: the sentence of the finding's message that completes it (lessons.following_claim):
    "… returns a `span_ctx` record directly." needs "The record has `hex_trace_id` as a binary
    already." (spotter ae4a77f8)."""
    from graphmem.capture import lessons

    if found.title[:60] not in holder.body:
        holder.body = f"{holder.body}\nThe agent found: {found.title} {then}".strip()
    for line in found.body.splitlines():
        if line.startswith(lessons.ERROR_EXPLAINED) and line not in holder.body:
            holder.body = f"{line}\n{holder.body}"
    holder.files = _uniq([*holder.files, *found.files])
    holder.symbols = _uniq([*holder.symbols, *found.symbols])


# An open task a later session closes (superseded once done) would take a finding folded into
# it out of retrieval with it; a ticket closed stays, as a decision.
_CLOSES = frozenset({"unresolved", "left-to-user", "unfinished"})


def _fold_told(drafts: list[Draft]) -> list[Draft]:
    """A discovery that another draft of the session already tells becomes a line of the draft
    that shares most with it. Seen on the dev sessions: two findings on `current_span_ctx()`'s
    return (spotter ae4a77f8), a finding on the alias in `rescue` beside the compaction's lesson on
    it (fa812bfe), the fix of ENT-228 beside its ticket (entire-cli f022dad1)."""
    from graphmem.capture.compaction import tokens

    folded: set[int] = set()
    holding: set[int] = set()
    for n, found in enumerate(drafts):
        if "discovery" not in found.tags or n in holding:
            continue  # a draft that holds another's finding keeps it, standing on its own
        words = tokens(found.title)
        # the person's words are theirs: the agent's finding is not one of them
        told = [(_tells(holder, words), m) for m, holder in enumerate(drafts)
                if m != n and m not in folded and holder.kind != "summary" and holder.source != "user"
                and not _CLOSES.intersection(holder.tags)]
        most, at = max(told, key=lambda t: (t[0], -t[1]), default=(0, -1))
        if not most:
            continue
        folded.add(n)
        holding.add(at)
        _fold_into(drafts[at], found)
    return [d for n, d in enumerate(drafts) if n not in folded]


def _compaction_rules(s: _Session, drafts: list[Draft]) -> list[Draft]:
    """Errors a compaction summary says were fixed: new pitfalls, or lines of the drafts that
    already hold them."""
    from graphmem.capture import compaction
    from graphmem.capture.redact import redact

    fixed = compaction.compaction_drafts(s.transcript, s.session_id, drafts,
                                         clean=lambda text: s.paths.relative_text(redact(text)))
    for d in fixed:
        d.observation_ids = [e.id for e in s.events[-1:]]
    return fixed


def _written_down(drafts: list[Draft]) -> list[Draft]:
    """The person's ask to write a rule into an instructions file, once the session wrote it there,
    is told by what was written: the note says the rule, the ask says where to put it (held-out
    review 13, chkit 8e52f68a: "make sure, that in … @.claude/skills/pr-creation/SKILL.md we mention
    while we are in BETA we ONLY do patch releases" beside the note "While chkit is in BETA, always
    use `patch` …")."""
    noted = {f for d in drafts if "agent-note" in d.tags for f in d.files}
    return [d for d in drafts if not (d.source == "user" and d.kind == "convention"
                                      and any(f in d.title for f in noted))]


_ASKS_TICKET = re.compile(r"(?i)\b(?:log|file|open|create|raise|make|add|write up)\b[^.?!\n]{0,40}\b(?:issues?|tickets?|bugs?)\b")
_FILED_AS = re.compile(r"^Filed in .+? as (\S+?)(?: \(|\.?$)", re.MULTILINE)


def _filed_as_asked(s: _Session, drafts: list[Draft]) -> list[Draft]:
    """The person's ask to file an issue (in a reply or a refusal), once the session filed it in the
    same turn, is told by the first issue whose name the session first showed after the ask, as a
    line of it: the issue is what lasts, the ask says why and where
    (entire-cli 03a1382e: "let's not make this change in this branch. Can we log an linear issue
    (critical priority), Project: Troy …" beside the task "Open Linear issue ENT-242: …")."""
    filed = {m.group(1): d for d in drafts if "ticket" in d.tags for m in [_FILED_AS.search(d.body)] if m}
    if not filed or s.transcript is None:
        return drafts
    try:
        msgs = [m for m in s.transcript if not m.sidechain and m.text]
        told: list[Draft] = []
        for d in drafts:
            # an answer or a refusal that asks for one, not a rule that speaks of issues ("Always add
            # a regression test for every bug you fix", the whole-diff review)
            if d.source != "user" or not {"rejection", "reply"} & set(d.tags) or not _ASKS_TICKET.search(d.title):
                continue
            at = next((n for n, m in enumerate(msgs) if m.role != "assistant" and d.title[:40] in m.text), None)
            if at is None:
                continue
            turn_end = next((n for n in range(at + 1, len(msgs)) if msgs[n].role == "user" and not msgs[n].meta), len(msgs))
            after = [(first, ident) for ident in filed
                     for first in [next((n for n, m in enumerate(msgs) if ident in m.text), -1)] if at < first < turn_end]
            ticket = filed[min(after)[1]] if after else None
            if ticket is not None:
                first, _, rest = ticket.body.partition("\n")
                said = d.body.partition("\n")[0]  # "The user turned down Edit … and said: …"
                said = said if d.title[:40] in said and len(said) > len(d.title) else f"Asked by the person: {d.title}"
                ticket.body = f"{first}\n{said}\n{rest}".rstrip()
                told.append(d)
        return [d for d in drafts if not any(d is t for t in told)]
    except Exception:  # pragma: no cover - a courtesy: both drafts stand without it
        log.warning("asks to file issues left unfolded", exc_info=True)
        return drafts


def _as_said(s: _Session, drafts: list[Draft]) -> list[Draft]:
    """Drafts from the agent's words, redacted, with paths relative to the checkout."""
    from graphmem.capture.redact import redact

    for d in drafts:
        d.title, d.body = s.paths.relative_text(redact(d.title)), s.paths.relative_text(redact(d.body))
        d.tags = [redact(t) for t in d.tags]
        d.observation_ids = d.observation_ids or [e.id for e in s.events[-1:]]
    return drafts


def _ticket_rules(s: _Session) -> list[Draft]:
    """Issues the session filed in a tracker: from the transcript's calls when there is one, else
    from the hook events."""
    from graphmem.capture import lessons, tickets

    if s.transcript is not None and any(m.role == "assistant" for m in s.transcript):
        calls = lessons.tool_calls(s.transcript, s.paths.rel)
    else:
        calls = [(e.tool, e.tool_input, e.text, bool(e.is_error)) for e in s.events if e.event == "post-tool"]
    return _as_said(s, tickets.drafts(tickets.tickets(calls), s.session_id))


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def compress_session(events: Sequence[HookEvent], *, transcript: str | None = None) -> list[Draft]:
    """One session's events (and optionally its transcript: a path or JSONL text) → drafts."""
    try:
        return _compress(events, transcript)
    except Exception:  # pragma: no cover - the rules are individually guarded already
        log.warning("compress_session failed", exc_info=True)
        return []


def passed_commands(events: Sequence[HookEvent], *, transcript: str | None = None
                    ) -> list[tuple[Command, float, str]]:
    """The commands a session's hook events show passing, each with its time and output, that no later
    equivalent run of the session failed again (a background run once its outcome came back).
    A transcript alone is no evidence: a resumed file starts with the old conversation's runs."""
    try:
        session = _analysed(events, transcript)
        from graphmem.capture.lessons import equivalent

        runs = session.runs
        return [(r.cmd, r.ev.ts, r.ev.text) for n, r in enumerate(runs) if not r.failed and not r.pending
                and not any(later.failed and equivalent(later.cmd, r.cmd) for later in runs[n + 1:])]
    except Exception:  # pragma: no cover - closing tasks is a courtesy; nothing is lost without it
        log.warning("passed commands unknown", exc_info=True)
        return []


def calls_made(events: Sequence[HookEvent], *, transcript: str | None = None
               ) -> tuple[list[tuple[Command, float]], list[tuple[str, float]]]:
    """What a session's hook events show it did, each with its time: the commands that ran
    (passed or failed; not those refused before they ran) and the files its edits changed,
    relative to the repository."""
    try:
        session = _analysed(events, transcript)
        return ([(r.cmd, r.ev.ts) for r in session.runs],
                [(session.paths.rel(f), e.ts) for e in session.events if e.is_edit for f in e.files])
    except Exception:  # pragma: no cover - a courtesy, as passed_commands
        log.warning("calls made unknown", exc_info=True)
        return [], []


def _analysed(events: Sequence[HookEvent], transcript: str | None) -> _Session:
    """A session read from its hook events, with its transcript when there is one."""
    parsed = None
    if transcript:
        from graphmem.capture.transcript import parse_transcript

        parsed = parse_transcript(transcript)
    return _analyse(_prepare(events), parsed)


def _compress(events: Any, transcript: Any) -> list[Draft]:
    prepared = _prepare(events)
    parsed = None
    if transcript:
        from graphmem.capture.transcript import parse_transcript

        parsed = parse_transcript(transcript)
    session = _analyse(prepared, parsed)
    drafts: list[Draft] = []
    if parsed is not None and any(m.role == "assistant" for m in parsed):
        drafts += _safe(lambda: _transcript_rules(session), "transcript")
    else:
        drafts += _safe(lambda: _failure_rules(session), "failure")
    drafts += _safe(lambda: _ticket_rules(session), "tickets")
    drafts += _safe(lambda: _env_rules(session), "env")
    drafts += _safe(lambda: _user_rules(session), "user")
    drafts += _safe(lambda: _commit_rules(session), "commit")
    if parsed is not None:
        drafts += _safe(lambda: _compaction_rules(session, drafts), "compaction")
    drafts = _filed_as_asked(session, _written_down(_fold_told(_merge(drafts))))
    summary = _safe(lambda: _summary(session, drafts), "summary")
    if summary:  # a discovery whose sentence, or a commit whose subject, became the summary's title is said once, there
        headed = _headline_commit(session, drafts) if "commit-told" in summary[0].tags else None
        drafts = [d for d in drafts if d is not headed and ("discovery" not in d.tags or _short(d.title, 60).rstrip("…")
                  not in summary[0].title)]
    order = {"summary": 0, "task": 1, "pitfall": 2, "decision": 3, "convention": 4, "env": 5,
             "fact": 6, "note": 7}
    out = _merge(summary + drafts)
    out.sort(key=lambda d: (order.get(d.kind, 9), -d.importance))
    return [_finish(d) for d in out]


def _merge(drafts: list[Draft]) -> list[Draft]:
    """One draft per key and per (kind, title); provenance and tags are unioned."""
    by_key: dict[str, Draft] = {}
    by_title: dict[tuple[str, str], str] = {}
    for d in drafts:
        ident = (d.kind, _norm(d.title))
        existing = by_key.get(d.key) or by_key.get(by_title.get(ident, ""))
        if existing is None:
            by_key[d.key] = d
            by_title[ident] = d.key
            continue
        existing.observation_ids = _uniq([*existing.observation_ids, *d.observation_ids])
        existing.tags = _uniq([*existing.tags, *d.tags])
        existing.files = _uniq([*existing.files, *d.files])
        existing.symbols = _uniq([*existing.symbols, *d.symbols])
        existing.confidence = max(existing.confidence, d.confidence)
        existing.importance = max(existing.importance, d.importance)
    return list(by_key.values())


def _finish(d: Draft) -> Draft:
    d.kind = d.kind if d.kind in KINDS else "note"
    full = " ".join(d.title.split())
    d.title = _short(full, TITLE_MAX) or d.kind
    tail = full[len(d.title.rstrip("…")):].strip()
    if tail and d.kind != "summary" and " ".join(tail.split()[:6]) not in " ".join(d.body.split()):
        d.body = f"{full}\n{d.body}" if d.body else full  # what the cut title leaves out is said first
    # a commit message is written to be read whole (held-out review 26: Orva's lost its trade-offs at 1,500)
    d.body = _cap_body(d.body, DERIVED_BODY_MAX if "commit-told" in d.tags else
                       SUMMARY_BODY_MAX if d.kind == "summary" or "commit" in d.tags or "agent-note" in d.tags
                       else BODY_MAX)
    d.files = [f for f in _uniq(d.files) if f and len(f) < 500][:20]
    d.symbols = [x for x in _uniq(d.symbols) if x and len(x) < 200][:20]
    d.confidence = round(min(max(d.confidence, 0.0), 1.0), 3)
    d.importance = round(min(max(d.importance, 0.0), 1.0), 3)
    d.tags = [t for t in _uniq(d.tags) if isinstance(t, str) and len(t) < 80][:12]
    return d
