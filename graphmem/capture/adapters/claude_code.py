"""Claude Code hooks: JSON on stdin with session_id, transcript_path, cwd, hook_event_name and,
per event, prompt / tool_name, tool_input, tool_response / source / reason / trigger.

Read results keep only the path: the file itself is on disk, anchored by path, so copying its
content into the spool would only duplicate it.
"""

from __future__ import annotations

from typing import Any

from graphmem.capture.adapters import as_dict, as_text, event_of, exit_code_in, tool_output
from graphmem.capture.event import HookEvent

SHELL_TOOLS = ("Bash", "PowerShell")  # PowerShell: Claude Code on Windows
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "Read", "NotebookEdit")
BULKY_INPUT = ("content", "old_string", "new_string", "edits", "new_source")
EXTRA_KEYS = (
    "hook_event_name",
    "tool_use_id",
    "permission_mode",
    "source",
    "reason",
    "trigger",
    "custom_instructions",
    "stop_hook_active",
    "is_interrupt",
)


def to_event(event: str, payload: dict[str, Any]) -> HookEvent:
    """Normalise one Claude Code hook payload."""
    tool = as_text(payload.get("tool_name"))
    tool_input = as_dict(payload.get("tool_input"))
    text, exit_code, is_error = _result(event, tool, tool_input, payload)
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    extra = {k: payload[k] for k in EXTRA_KEYS if k in payload}
    response = payload.get("tool_response")
    if isinstance(response, dict) and response.get("interrupted"):
        extra["interrupted"] = True
    return event_of(
        event,
        "claude-code",
        payload,
        tool=tool,
        tool_input={k: v for k, v in tool_input.items() if k not in BULKY_INPUT},
        text=text,
        command=as_text(tool_input.get("command")) if tool in SHELL_TOOLS else "",
        files=[as_text(path)] if path and tool in FILE_TOOLS else [],
        exit_code=exit_code,
        is_error=is_error,
        extra=extra,
    )


def _result(
    event: str, tool: str, tool_input: dict[str, Any], payload: dict[str, Any]
) -> tuple[str, int | None, bool | None]:
    if event == "user-prompt":
        return as_text(payload.get("prompt")), None, None
    if event == "stop":
        return as_text(payload.get("last_assistant_message")), None, None
    if event != "post-tool":
        return "", None, None
    if "error" in payload and "tool_response" not in payload:  # PostToolUseFailure
        message = as_text(payload.get("error"))
        return message, exit_code_in(message), True
    if tool in ("Edit", "MultiEdit"):
        edits = tool_input.get("edits") or [tool_input]
        return "\n".join(_diff(as_dict(e)) for e in edits), None, None
    if tool == "Write":
        return as_text(tool_input.get("content")), None, None
    if tool == "NotebookEdit":
        return as_text(tool_input.get("new_source")), None, None
    if tool == "Read":
        return "", None, None
    return tool_output(payload.get("tool_response"))


def _diff(edit: dict[str, Any]) -> str:
    old = as_text(edit.get("old_string")).splitlines()
    new = as_text(edit.get("new_string")).splitlines()
    return "\n".join([*(f"-{line}" for line in old), *(f"+{line}" for line in new)])
