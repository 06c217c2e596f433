"""`graphmem hook EVENT [--agent claude-code|codex|generic] [PAYLOAD]`: agent hook entry point.

Reads the agent's hook JSON (stdin, or PAYLOAD as the last argument the way Codex `notify` passes
it), normalises it to a HookEvent, redacts and trims it, and appends it to the project's spool.
Fail-open: it always exits 0, prints nothing for tool and prompt events, and writes problems to
`<graphmem home>/logs/hooks.log`. session-start prints the pre-rendered brief; session-end and
pre-compact start a detached `graphmem ingest` (disable with GRAPHMEM_NO_WORKER=1).

Stdlib only, plus graphmem.paths / errors / capture: this runs on every tool call.
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
import time
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem import env
from graphmem.capture.adapters import AGENTS, detect, normalise
from graphmem.capture.event import EVENTS, HookEvent
from graphmem.capture.redact import redact, redact_obj
from graphmem.capture.spool import Spool
from graphmem.capture.trim import clip, evidence_limit_from_env, limit_from_env, trim
from graphmem.paths import ProjectRef, find_project, graphmem_home, private_umask, store_dir

if TYPE_CHECKING:
    import subprocess

SYNC_EVENTS = ("session-end", "pre-compact", "stop")
WORKER_EVENTS = ("session-end", "pre-compact")
FIRST_BYTE_WAIT = 2.0
NEXT_CHUNK_WAIT = 0.25
DRAIN_SECONDS = 5.0
LOG_ROTATE_BYTES = 1024 * 1024
FIELD_CAP = 2048
MAX_DEPTH = 32  # deeper payload values are kept as a marker: nothing agents send nests so deep
INJECT_WAIT = env.number("inject_wait")
COLD_POLL = 0.05
_OWN_FIELDS = frozenset({"event", "agent", "project", "branch", "id"})


def main(argv: list[str] | None = None) -> int:
    """Run one hook; always returns 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    event = args[0] if args else ""
    try:
        private_umask()
        _run(event, args[1:])
    except Exception as exc:  # noqa: BLE001 - fail-open: the agent must never see graphmem break
        log_problem(f"{type(exc).__name__}: {exc}", event)
    return 0


def cli() -> None:
    """Console-script entry (`graphmem-hook EVENT`)."""
    try:
        code = main()
    except KeyboardInterrupt:
        code = 0
    sys.exit(code)


def _run(event: str, rest: list[str]) -> None:
    agent, inline = _options(rest)
    raw, total = _read_stdin() if inline is None else (inline.encode("utf-8", "replace"), -1)
    total = len(raw) if total < 0 else total
    if event not in EVENTS:
        log_problem(f"unknown hook event {event!r} ignored ({total} bytes of payload)", event)
        return
    payload = _parse_payload(raw, total, event)
    agent = agent or detect(payload)
    hook_event = (
        normalise(payload, event, agent) if payload else HookEvent(event=event, agent=agent)
    )
    if not hook_event.cwd:
        hook_event.cwd = os.getcwd()
        log_problem(f"payload has no cwd; using {hook_event.cwd}", event)
    try:
        project = find_project(hook_event.cwd)
    except (OSError, ValueError) as exc:  # a cwd no file system can hold: keep the event
        log_problem(f"payload cwd unusable ({type(exc).__name__}); using {os.getcwd()}", event)
        hook_event.cwd = os.getcwd()
        project = find_project(hook_event.cwd)
    if event == "session-start":
        _print_brief(project, agent)
        _warm_owner(project, hook_event.cwd)
    if payload:
        try:
            _store(hook_event, project, total if total > len(raw) else 0)
        except Exception as exc:  # noqa: BLE001 - the brief and the worker must still run
            log_problem(f"could not spool the event: {type(exc).__name__}: {exc}", event)
            Spool(store_dir(project) / "spool").note_lost()
    if event == "user-prompt" and hook_event.text:
        _inject(hook_event, project, agent)
    if event in WORKER_EVENTS:
        _start_worker(project)


def _options(rest: list[str]) -> tuple[str, str | None]:
    """(`--agent` value or "", inline JSON payload or None)."""
    agent, inline = "", None
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--agent" and i + 1 < len(rest):
            agent, i = rest[i + 1], i + 2
            continue
        if arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        elif arg.lstrip().startswith("{"):
            inline = arg
        else:
            log_problem(f"unknown hook argument {arg[:80]!r} ignored")
        i += 1
    if agent and agent not in AGENTS:
        log_problem(f"unknown agent {agent!r}; detecting from the payload")
        agent = ""
    return agent, inline


def _read_stdin() -> tuple[bytes, int]:
    """Up to GRAPHMEM_HOOK_MAX_BYTES of stdin and the total size; never waits on a stdin left open."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return b"", 0
    if os.isatty(fd):
        return b"", 0
    limit = env.integer("hook_max_bytes")
    chunks: list[bytes] = []
    kept = total = 0
    wait = FIRST_BYTE_WAIT
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        try:
            ready, _, _ = select.select([fd], [], [], wait)
            chunk = os.read(fd, 1 << 20) if ready else None
        except OSError as exc:
            log_problem(f"cannot read stdin: {exc}")
            break
        if chunk is None:
            log_problem(f"stdin still open after {wait}s; using the {total} bytes read")
            break
        if not chunk:
            break
        total += len(chunk)
        if kept < limit:
            chunks.append(chunk[: limit - kept])
            kept += len(chunks[-1])
        wait = NEXT_CHUNK_WAIT
    return b"".join(chunks), total


def _parse_payload(raw: bytes, total: int, event: str) -> dict[str, Any]:
    """The payload as a dict; salvages what it can from truncated or invalid JSON."""
    if not raw.strip():
        log_problem("empty payload", event)
        return {}
    text = raw.decode("utf-8", "replace")
    try:
        try:
            value = json.loads(text)
        except RecursionError:
            text = _flatten_deep(text, MAX_DEPTH)
            log_problem(f"payload nested deeper than {MAX_DEPTH} levels; deeper values cut", event)
            value = json.loads(text)
        value = _clamp_depth(value, MAX_DEPTH)
    except ValueError:
        value = salvage_json(text)
        kept = ", ".join(sorted(value)) or "nothing"
        log_problem(
            f"invalid or truncated JSON ({len(raw)} of {total} bytes); salvaged: {kept}", event
        )
    if not isinstance(value, dict):
        log_problem(f"payload is a JSON {type(value).__name__}, not an object", event)
        return {"text": value} if isinstance(value, str) else {}
    return value


def _store(event: HookEvent, project: ProjectRef, truncated_from: int) -> None:
    """Fill in the project, redact every string, trim, and append to the spool."""
    event.project = str(project.root)
    event.branch = project.branch
    if project.tree != project.root:
        event.extra["work_tree"] = str(project.tree)
    if truncated_from:
        event.extra["payload_truncated_from_bytes"] = truncated_from
    _redact_event(event)
    store = store_dir(project)
    trimmed = trim(event.text, evidence_dir=store / "evidence")
    event.text, event.evidence_ref = trimmed.text, trimmed.evidence_ref
    event.command = _cap(event.command, limit_from_env())
    event.tool_input = _cap_obj(event.tool_input)
    event.extra = _cap_obj(event.extra)
    Spool(store / "spool").append(event, sync=event.event in SYNC_EVENTS)


def _redact_event(event: HookEvent) -> None:
    """Every string the agent sent; not the fields graphmem derived itself (project, ids)."""
    limit = evidence_limit_from_env()
    for name in HookEvent.FIELDS:
        if name in _OWN_FIELDS:
            continue
        value = getattr(event, name)
        if isinstance(value, str) and value:
            setattr(event, name, redact(clip(value, limit)))  # cut first: cost stays bounded
        elif isinstance(value, (dict, list)):
            setattr(event, name, redact_obj(_clip_obj(value)))


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[… {len(text) - limit} chars omitted]"


def _clip_obj(value: Any) -> Any:
    """Strings inside tool inputs cut to a few KB before redaction (they are capped after it)."""
    if isinstance(value, str):
        return clip(value, 4 * FIELD_CAP)
    if isinstance(value, dict):
        return {k: _clip_obj(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_obj(v) for v in value[:200]]
    return value


def _cap_obj(value: Any) -> Any:
    """Tool inputs repeat what `text` holds: keep their strings short."""
    if isinstance(value, str):
        return _cap(value, FIELD_CAP)
    if isinstance(value, dict):
        return {k: _cap_obj(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_obj(v) for v in value[:200]]
    return value


def _print_brief(project: ProjectRef, agent: str) -> None:
    """Print `<store>/brief.txt` (written by ingest) as the agent's session-start context."""
    path = store_dir(project) / "brief.txt"
    try:
        brief = path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return
    if not brief:
        return
    _emit("SessionStart", brief, agent)


def _emit(hook_event: str, text: str, agent: str) -> None:
    """Hand context to the agent: its JSON `additionalContext`, or plain text for others."""
    if agent in ("claude-code", "codex"):
        output = json.dumps({"hookSpecificOutput": {"hookEventName": hook_event,
                                                    "additionalContext": text}}, ensure_ascii=False)
    else:
        output = text
    try:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError) as exc:
        log_problem(f"could not print the {hook_event} context: {exc}", hook_event)


def _has_store(data_dir: Path) -> bool:
    """Whether the project has memory to search: its graph file, or a PostgreSQL server.

    On a server the owner is still what answers the prompt hook: the server handles concurrent
    writers, but the owner keeps the embedding model loaded and a connection open, which is what
    makes a prompt cost milliseconds rather than a model load."""
    return (data_dir / "graph.kuzu").exists() or bool(env.text("database_url"))


def _inject(event: HookEvent, project: ProjectRef, agent: str) -> None:
    """Print the memories that bear on the prompt, as a warm owner ranks them. An owner still
    starting is waited for up to GRAPHMEM_INJECT_COLD_WAIT; if none runs, one is started."""
    if env.flag("no_inject"):
        return
    from graphmem.errors import GraphmemError
    from graphmem.owner.client import (
        NOT_LISTENING,
        ask_running_owner,
        owner_running,
        owner_starting,
        spawn_owner_detached,
    )
    from graphmem.paths import work_tree

    data_dir = store_dir(project)
    if not _has_store(data_dir):
        return
    tree = work_tree(event.cwd)
    checkout = str(tree) if tree else None
    deadline = time.monotonic() + env.number("inject_cold_wait")
    cold = False
    while True:
        try:
            status = ask_running_owner(data_dir, "ping", {}, project=str(project.root),
                                       branch=project.branch, checkout=checkout, timeout=INJECT_WAIT)
            if status.get("waiting"):
                return  # others queue: the prompt is not kept waiting for them
            if status.get("search_ready"):
                break
        except GraphmemError as exc:
            running = owner_running(data_dir)
            # A busy owner times out, and one that was not listening a moment ago may have just
            # started (an owner running now is then asked again); anything else is a fault.
            if running and "timed out" not in str(exc) and NOT_LISTENING not in str(exc):
                log_problem(f"no context injected: {exc}", "user-prompt")
                return
            if not running and not owner_starting(data_dir):
                spawn_owner_detached(data_dir, event.cwd or str(project.root))
        coming = owner_starting(data_dir) or owner_running(data_dir)
        if not coming or time.monotonic() + COLD_POLL > deadline:
            return
        time.sleep(COLD_POLL)
        cold = True
    wait = answer_wait(status, cold, deadline - time.monotonic())
    try:
        text = ask_running_owner(data_dir, "prompt_context",
                                 {"prompt": event.text[:4000], "session_id": event.session_id},
                                 project=str(project.root), branch=project.branch,
                                 checkout=checkout, timeout=wait)
    except GraphmemError as exc:
        if "timed out" not in str(exc):
            log_problem(f"no context injected: {exc}", "user-prompt")
        return
    if isinstance(text, str) and text.strip():
        _emit("UserPromptSubmit", text, agent)


def answer_wait(status: dict[str, Any], cold: bool, cold_left: float) -> float:
    """How long the prompt waits for the answer: INJECT_WAIT from a warm owner; from one that was
    starting, or is still loading the prose extractor beside the answer (which slows it past
    INJECT_WAIT on two cores: sessbench's second prompt after a start took 365 ms and got
    nothing), what is left of its cold wait."""
    return max(INJECT_WAIT, cold_left) if cold or not status.get("warm", True) else INJECT_WAIT


def _warm_owner(project: ProjectRef, cwd: str) -> None:
    """A session is starting: have an owner warm by its first prompt."""
    if env.flag("no_inject") or env.flag("no_worker"):
        return
    data_dir = store_dir(project)
    if not _has_store(data_dir):
        return
    from graphmem.owner.client import owner_running, spawn_owner_detached

    if not owner_running(data_dir):
        spawn_owner_detached(data_dir, cwd or str(project.root))


def _start_worker(project: ProjectRef) -> subprocess.Popen[bytes] | None:
    """Detached `graphmem ingest --project ROOT`: the hook returns without waiting for it."""
    if env.flag("no_worker"):
        return None
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-m", "graphmem", "ingest", "--project", str(project.root)],
        cwd=str(project.root) if project.root.is_dir() else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


# --- deep and truncated JSON --------------------------------------------------------------------

_CUT_DEEP = "[… nested too deep, cut]"
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _flatten_deep(text: str, limit: int) -> str:
    """JSON text with every value nested deeper than `limit` replaced by a marker string, found
    without recursion (a payload json cannot parse for its depth)."""
    parts: list[str] = []
    depth = cursor = 0
    cut_from = -1
    for match in _JSON_TOKENS.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth == limit + 1:
                cut_from = match.start()
        elif char in "]}":
            depth -= 1
            if depth == limit and cut_from >= 0:
                parts += [text[cursor:cut_from], json.dumps(_CUT_DEEP)]
                cursor, cut_from = match.end(), -1
    if cut_from >= 0:  # cut short while deep: what is left is salvaged
        parts += [text[cursor:cut_from], json.dumps(_CUT_DEEP)]
    else:
        parts.append(text[cursor:])
    return "".join(parts)


def _clamp_depth(value: Any, limit: int) -> Any:
    """`value` with containers below `limit` levels replaced by a marker, without recursion."""
    if not isinstance(value, (dict, list)):
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for key in list(keys):
            child = node[key]
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    node[key] = _CUT_DEEP
                else:
                    stack.append((child, depth + 1))
    return value


def salvage_json(text: str) -> dict[str, Any]:
    """The complete key/value pairs of a JSON object cut short, plus the cut-off last value."""
    start = text.find("{")
    return _clamp_depth(_salvage_object(text, start)[0], MAX_DEPTH) if start >= 0 else {}


def _salvage_object(text: str, i: int, depth: int = 1) -> tuple[dict[str, Any], int]:
    decoder = json.JSONDecoder()
    result: dict[str, Any] = {}
    i += 1
    n = len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] != '"':
            break
        try:
            key, i = scanstring(text, i + 1)
        except ValueError:
            break
        while i < n and text[i] in " \t\r\n:":
            i += 1
        if i >= n:
            break
        try:
            result[key], i = decoder.raw_decode(text, i)
        except RecursionError:
            result[key] = _CUT_DEEP
            break
        except ValueError:
            if text[i] == '"':
                result[key] = _partial_string(text, i + 1)
            elif text[i] == "{" and depth < MAX_DEPTH:
                result[key] = _salvage_object(text, i, depth + 1)[0]
            break
    return result, i


def _partial_string(text: str, i: int) -> str:
    """A JSON string value cut off before its closing quote."""
    body = text[i:]
    decoder = json.JSONDecoder(strict=False)
    for trim_by in range(7):
        candidate = body[: len(body) - trim_by] if trim_by else body
        try:
            value = decoder.decode(f'"{candidate}"')
        except ValueError:
            continue
        return value if isinstance(value, str) else body
    return body


# --- problem log --------------------------------------------------------------------------------


def log_path() -> Path:
    """`<graphmem home>/logs/hooks.log`."""
    return graphmem_home() / "logs" / "hooks.log"


def log_problem(message: str, event: str = "") -> None:
    """Append one timestamped, redacted line to the hook log; never raises."""
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.stat().st_size > LOG_ROTATE_BYTES:
                os.replace(path, path.with_name("hooks.log.1"))
        except FileNotFoundError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        text = redact(" ".join(message.split()))[:2000]
        line = f"{stamp} pid={os.getpid()} event={event or '-'} {text}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - the log is best effort; the hook must still exit 0
        return


def recent_problems(n: int = 20) -> list[str]:
    """The last `n` lines of the hook log (oldest first), for `graphmem doctor`."""
    path = log_path()
    lines: list[str] = []
    for candidate in (path.with_name("hooks.log.1"), path):
        try:
            lines.extend(candidate.read_text(encoding="utf-8", errors="replace").splitlines())
        except FileNotFoundError:
            continue
    return lines[-n:] if n > 0 else []


if __name__ == "__main__":
    cli()
