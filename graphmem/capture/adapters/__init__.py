"""Agent hook payloads → one HookEvent; each agent's format stays inside its own module."""

from __future__ import annotations

import json
import re
from typing import Any

from graphmem.capture.event import HookEvent

AGENTS = ("claude-code", "codex", "generic")
_EXIT_CODE = re.compile(
    r"\bexit(?:ed)?(?: with)?(?: status| code)?(?: code)?[:\s]+(-?\d+)", re.IGNORECASE
)


def detect(payload: dict[str, Any]) -> str:
    """Which agent wrote `payload`, from the keys only that agent uses."""
    if payload.get("type") == "agent-turn-complete" or "turn-id" in payload:
        return "codex"  # the `notify` program payload
    if "turn_id" in payload:
        return "codex"  # Codex hooks: Claude-compatible keys plus turn_id and model
    if "hook_event_name" in payload:
        return "claude-code"
    return "generic"


def normalise(payload: dict[str, Any], event: str, agent: str | None = None) -> HookEvent:
    """The HookEvent for `payload` received as hook `event` (not yet redacted or trimmed)."""
    agent = agent if agent in AGENTS else detect(payload)
    if agent == "claude-code":
        from graphmem.capture.adapters import claude_code as adapter
    elif agent == "codex":
        from graphmem.capture.adapters import codex as adapter  # type: ignore[no-redef]
    else:
        from graphmem.capture.adapters import generic as adapter  # type: ignore[no-redef]
    return adapter.to_event(event, payload)


def as_text(value: Any) -> str:
    """Strings as they are; anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def event_of(event: str, agent: str, payload: dict[str, Any], *, session_key: str = "session_id",
             **fields: Any) -> HookEvent:
    """A HookEvent with what agents' payloads carry under the same names (the session id under
    `session_key`, cwd, transcript_path) read from `payload`, and `fields` for the rest."""
    return HookEvent(event=event, agent=agent, session_id=as_text(payload.get(session_key)),
                     cwd=as_text(payload.get("cwd")),
                     transcript_path=as_text(payload.get("transcript_path")), **fields)


def as_dict(value: Any) -> dict[str, Any]:
    """Dicts as they are; anything else as an empty dict."""
    return value if isinstance(value, dict) else {}


def tool_output(response: Any) -> tuple[str, int | None, bool | None]:
    """(text, exit code, is_error) from a tool response that may be a string or a dict."""
    if not isinstance(response, dict):
        return as_text(response), None, None
    parts = [as_text(response.get(k)) for k in ("stdout", "output", "content", "result")]
    stderr = as_text(response.get("stderr"))
    if stderr:
        parts.append(f"[stderr]\n{stderr}")
    text = "\n".join(p for p in parts if p) or (as_text(response) if response else "")
    code = first_int(response, "exit_code", "exitCode", "returncode", "return_code")
    error = response.get("is_error", response.get("isError"))
    return text, code, bool(error) if error is not None else None


def exit_code_in(message: str) -> int | None:
    """The exit code a failure message mentions (`Exit code 2`, `exited with status 1`)."""
    match = _EXIT_CODE.search(message[:400])
    return int(match.group(1)) if match else None


def first_int(data: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` whose value is an int (not a bool)."""
    for key in keys:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def text_of(value: Any) -> str:
    """A string field that may arrive as a list of strings or messages."""
    if isinstance(value, list):
        return "\n".join(as_text(v) for v in value)
    return as_text(value)
