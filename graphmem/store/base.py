"""The graph store protocol, in domain verbs; backends live beside it (kuzu.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Row = dict[str, Any]

LINK_TABLES = ("MENTIONS", "ANCHORED_TO", "DEFINED_IN", "CONTAINS", "IMPORTS", "TOUCHES",
               "DERIVED_FROM", "SUPERSEDES")


@dataclass(frozen=True)
class ItemFilter:
    """Which items a read may see; None means no restriction on that field."""

    project: str | None = None
    kinds: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = ("active", "stale")
    created_before: float | None = None
    now: float | None = None
    ids: tuple[str, ...] | None = None
    session_id: str | None = None


class GraphStore(Protocol):
    """What the service needs from a graph database."""

    def apply(self, op: Row) -> None: ...
    def get_items(self, ids: Sequence[str]) -> list[Row]: ...
    def list_items(self, flt: ItemFilter, limit: int = 100, order: str = "created_at") -> list[Row]: ...
    def count_items(self, flt: ItemFilter) -> int: ...
    def keyword_search(self, query: str, k: int, flt: ItemFilter) -> list[tuple[str, float]]: ...
    def vector_search(self, vector: Sequence[float], k: int, flt: ItemFilter) -> list[tuple[str, float]]: ...
    def close(self) -> None: ...
