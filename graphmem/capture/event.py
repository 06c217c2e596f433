"""The one normalised hook event every agent adapter produces; stdlib only (hook fast path).

A plain class rather than a dataclass: importing `dataclasses` (and `inspect` behind it) was the
largest single cost of the per-tool-call hook process.
"""

from __future__ import annotations

import json
import os
import time

EVENTS = ("session-start", "user-prompt", "pre-tool", "post-tool", "session-end", "pre-compact", "stop")


def _new_id() -> str:
    return os.urandom(16).hex()


class HookEvent:
    """One redacted observation of what the agent did, as written to the spool."""

    FIELDS = ("event", "agent", "session_id", "cwd", "project", "branch", "tool", "tool_input",
              "text", "command", "files", "exit_code", "is_error", "evidence_ref",
              "transcript_path", "extra", "ts", "id")
    __slots__ = FIELDS

    def __init__(self, event: str, agent: str = "generic", session_id: str = "", cwd: str = "",
                 project: str = "", branch: str = "", tool: str = "",
                 tool_input: dict | None = None, text: str = "", command: str = "",
                 files: list | None = None, exit_code: int | None = None,
                 is_error: bool | None = None, evidence_ref: str = "", transcript_path: str = "",
                 extra: dict | None = None, ts: float | None = None, id: str | None = None) -> None:
        self.event = event
        self.agent = agent
        self.session_id = session_id
        self.cwd = cwd
        self.project = project
        self.branch = branch
        self.tool = tool
        self.tool_input = {} if tool_input is None else tool_input
        self.text = text
        self.command = command
        self.files = [] if files is None else files
        self.exit_code = exit_code
        self.is_error = is_error
        self.evidence_ref = evidence_ref
        self.transcript_path = transcript_path
        self.extra = {} if extra is None else extra
        self.ts = time.time() if ts is None else ts
        self.id = _new_id() if id is None else id

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def copy(self, **changes: object) -> HookEvent:
        return HookEvent(**{**self.as_dict(), **changes})  # type: ignore[arg-type]

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict) -> HookEvent:
        return cls(**{k: v for k, v in data.items() if k in cls.FIELDS})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookEvent) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"HookEvent(event={self.event!r}, tool={self.tool!r}, id={self.id!r})"
