"""The one normalised hook event every agent adapter produces; stdlib only (hook fast path)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

EVENTS = ("session-start", "user-prompt", "pre-tool", "post-tool", "session-end", "pre-compact", "stop")


@dataclass
class HookEvent:
    """One redacted observation of what the agent did, as written to the spool."""

    event: str
    agent: str = "generic"
    session_id: str = ""
    cwd: str = ""
    project: str = ""
    branch: str = ""
    tool: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    command: str = ""
    files: list[str] = field(default_factory=list)
    exit_code: int | None = None
    is_error: bool | None = None
    evidence_ref: str = ""
    transcript_path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HookEvent":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)
