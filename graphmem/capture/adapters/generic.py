"""graphmem's own hook JSON, for agents without an adapter (schema/hook-event.schema.json):
{event, agent, session_id, cwd, tool, tool_input, command, text, files, exit_code, is_error,
transcript_path, extra}; every field optional.
"""

from __future__ import annotations

from typing import Any

from graphmem.capture.adapters import as_dict, as_text, event_of
from graphmem.capture.event import HookEvent


def to_event(event: str, payload: dict[str, Any]) -> HookEvent:
    """Normalise a generic payload; the hook's EVENT argument wins over the payload's `event`."""
    files = payload.get("files")
    exit_code = payload.get("exit_code")
    is_error = payload.get("is_error")
    return event_of(
        event,
        as_text(payload.get("agent")) or "generic",
        payload,
        tool=as_text(payload.get("tool")),
        tool_input=as_dict(payload.get("tool_input")),
        text=as_text(payload.get("text")),
        command=as_text(payload.get("command")),
        files=[as_text(f) for f in files]
        if isinstance(files, list)
        else ([files] if isinstance(files, str) else []),
        exit_code=exit_code
        if isinstance(exit_code, int) and not isinstance(exit_code, bool)
        else None,
        is_error=is_error if isinstance(is_error, bool) else None,
        extra=as_dict(payload.get("extra")),
    )
