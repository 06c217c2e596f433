"""Item kinds, declared once. Stdlib only: the CLI and capture name them without pydantic."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Literal


class ItemKind(StrEnum):
    decision = "decision"
    pitfall = "pitfall"
    convention = "convention"
    env = "env"
    task = "task"
    fact = "fact"
    summary = "summary"
    history = "history"
    note = "note"


# What a user, an agent or a session's compression may write: history comes from import-git only.
WRITTEN: tuple[str, ...] = tuple(k.value for k in ItemKind if k is not ItemKind.history)

if TYPE_CHECKING:
    WrittenKind = str
else:  # a Literal of WRITTEN, so pydantic and MCP schemas list exactly these
    WrittenKind = Literal[WRITTEN]
