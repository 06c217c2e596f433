"""Codex CLI, both ways it reports: the `notify` program (one JSON argument, type
"agent-turn-complete", thread-id, turn-id, cwd, input-messages, last-assistant-message) and its
Claude-compatible hooks (stdin JSON with session_id, turn_id, model, hook_event_name, tool_name
Bash / apply_patch / mcp__*, tool_input.command, tool_response, prompt, last_assistant_message).

apply_patch carries the whole patch in tool_input.command; the touched files come from its
`*** Add/Update/Delete File:` and `*** Move to:` headers.
"""

from __future__ import annotations

import re
from typing import Any

from graphmem.capture.adapters import as_dict, as_text, event_of, text_of, tool_output
from graphmem.capture.event import HookEvent

_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$", re.MULTILINE
)
# Codex hands hooks the shell tool's output as the model sees it, a string whose header states
# the exit code ("Exit code: 1" or "Process exited with code 1"); there is no exit_code field.
_EXIT_HEADER = re.compile(
    r"^(?:Exit code:|Process exited with code)[ \t]*(-?\d+)[ \t]*$", re.MULTILINE
)
EXTRA_KEYS = (
    "hook_event_name",
    "turn_id",
    "model",
    "tool_use_id",
    "permission_mode",
    "source",
    "trigger",
)


def to_event(event: str, payload: dict[str, Any]) -> HookEvent:
    """Normalise a Codex notify payload or hook payload."""
    if payload.get("type") == "agent-turn-complete" or "turn-id" in payload:
        return _notify(event, payload)
    tool = as_text(payload.get("tool_name"))
    tool_input = as_dict(payload.get("tool_input"))
    raw_command = tool_input.get("command")
    command = (
        " ".join(map(str, raw_command)) if isinstance(raw_command, list) else as_text(raw_command)
    )
    text, exit_code, is_error = "", None, None
    files: list[str] = []
    if tool == "apply_patch":
        files = [f.strip() for f in _PATCH_FILE.findall(command)]
        text, command = command, ""
    elif event == "post-tool":
        text, exit_code, is_error = tool_output(payload.get("tool_response"))
        head = text[:600].split("\nOutput:", 1)[0]
        header = _EXIT_HEADER.search(head) if exit_code is None else None
        if header:
            exit_code = int(header.group(1))
            is_error = exit_code != 0
    elif event == "user-prompt":
        text = as_text(payload.get("prompt"))
    elif event == "stop":
        text = as_text(payload.get("last_assistant_message"))
    return event_of(
        event,
        "codex",
        payload,
        tool=tool,
        tool_input={k: v for k, v in tool_input.items() if k != "command"},
        text=text,
        command=command,
        files=files,
        exit_code=exit_code,
        is_error=is_error,
        extra={k: payload[k] for k in EXTRA_KEYS if k in payload},
    )


def _notify(event: str, payload: dict[str, Any]) -> HookEvent:
    prompts = text_of(payload.get("input-messages"))
    answer = as_text(payload.get("last-assistant-message"))
    parts = [f"User: {prompts}"] if prompts else []
    if answer:
        parts.append(f"Assistant: {answer}")
    text = "\n\n".join(parts)
    return event_of(
        event,
        "codex",
        payload,
        session_key="thread-id",
        text=text,
        extra={"type": as_text(payload.get("type")), "turn_id": as_text(payload.get("turn-id"))},
    )
