"""What a store holds, as data every engine and the ops share: the columns of items, entities and
observations (each with the value a missing field takes) and the link tables with their ends."""

from __future__ import annotations

from typing import Any

# Every column with the value a missing field takes (Kuzu types parameters by value).
ITEM_COLUMNS: dict[str, Any] = {
    "id": "", "project": "", "branch": "", "kind": "note", "title": "", "body": "", "tags": [],
    "importance": 0.5, "confidence": 0.7, "verified": False, "source": "agent", "hit_count": 0,
    "created_at": 0.0, "updated_at": 0.0, "last_used_at": 0.0, "expire_at": 0.0, "pinned": False,
    "status": "active", "stale_reason": "", "session_id": "", "search_text": ""}
ENTITY_COLUMNS: dict[str, Any] = {
    "id": "", "kind": "concept", "name": "", "path": "", "qualname": "", "language": "",
    "start_line": 0, "end_line": 0, "hash": "", "resolved": True}
OBSERVATION_COLUMNS: dict[str, Any] = {
    "id": "", "project": "", "branch": "", "session_id": "", "agent": "", "event": "", "tool": "",
    "command": "", "text": "", "files": [], "exit_code": -1, "is_error": False,
    "evidence_ref": "", "tool_input": "{}", "ts": 0.0, "cwd": "", "transcript_path": "",
    "extra": "{}"}
# JSON text columns: a dict in the rows the service writes and reads, text in the engine.
OBSERVATION_JSON_COLUMNS = ("tool_input", "extra")
ITEM_FIELDS = tuple(ITEM_COLUMNS)
DERIVED_ITEM_COLUMNS = ("search_text",)  # written by the service from an item's text, not a field
LINK_ENDPOINTS = {
    "MENTIONS": ("Item", "Entity"), "ANCHORED_TO": ("Item", "Entity"),
    "DEFINED_IN": ("Entity", "Entity"), "CONTAINS": ("Entity", "Entity"),
    "IMPORTS": ("Entity", "Entity"), "TOUCHES": ("Entity", "Entity"),
    "DERIVED_FROM": ("Item", "Observation"), "SUPERSEDES": ("Item", "Item"),
}
LINK_PROPS = {"MENTIONS": ("weight", "surface"), "ANCHORED_TO": ("hash", "commit", "at"),
              "SUPERSEDES": ("at", "surface")}
LINK_TABLES = tuple(LINK_ENDPOINTS)


def typed(value: Any, default: Any) -> Any:
    """A value as its column's type (the type of the column's default); None is the default."""
    if value is None:
        return default
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, int):
        return int(value)
    return value
