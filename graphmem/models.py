"""Pydantic models of graphmem's public data; of ours they import only the item kinds (stdlib)."""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem.kinds import ItemKind


class ItemStatus(StrEnum):
    active = "active"
    stale = "stale"
    superseded = "superseded"
    archived = "archived"
    deleted = "deleted"


class Source(StrEnum):
    user = "user"
    agent = "agent"
    rule = "rule"
    llm = "llm"
    import_ = "import"


class EntityKind(StrEnum):
    file = "file"
    symbol = "symbol"
    error = "error"
    commit = "commit"
    package = "package"
    envvar = "envvar"
    command = "command"
    url = "url"
    concept = "concept"


# What every item id matches (random hex, `git-<sha>`, `s<hex>`, or an imported id like them).
ITEM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
DERIVED_BODY_MAX = 4000  # what the store keeps of the body of an item compressed from a session


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def content_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]


def entity_id(kind: str, key: str) -> str:
    return f"{kind}:{key}"


def title_text(value: str) -> str:
    """A title stripped; ValueError when nothing is left (every model with a title checks so)."""
    if not value.strip():
        raise ValueError("title must not be empty")
    return value.strip()


def first_error(exc: Exception) -> str:
    """A validation error's first complaint (`field: message`), or the exception's text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)


class Scope(BaseModel):
    """Where an item applies: a project (its root path or any label) and optionally a branch."""

    model_config = ConfigDict(frozen=True)

    project: str
    branch: str = ""


class MemoryItem(BaseModel):
    """One atomic memory: one fact, conclusion first, with scope, trust and provenance."""

    id: str = Field(default_factory=new_id)
    project: str
    branch: str = ""
    kind: ItemKind = ItemKind.note
    title: str
    body: str = ""
    tags: list[str] = Field(default_factory=list)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    verified: bool = False
    source: Source = Source.agent
    hit_count: int = 0
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    last_used_at: float = 0.0
    expire_at: float = 0.0
    pinned: bool = False
    status: ItemStatus = ItemStatus.active
    stale_reason: str = ""
    session_id: str = ""

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, value: str) -> str:
        return title_text(value)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemoryItem:
        """The item a store row holds (columns that are no field, like search_text, left out)."""
        return cls(**{k: v for k, v in row.items() if k in cls.model_fields})

    @property
    def scope(self) -> Scope:
        return Scope(project=self.project, branch=self.branch)

    @property
    def text(self) -> str:
        """Title and body as one text: what is embedded and keyword-indexed."""
        if not self.body or self.body.strip() == self.title:
            return self.title
        return f"{self.title}\n{self.body}"

    @property
    def text_hash(self) -> str:
        return content_hash(self.text)


class Entity(BaseModel):
    """Something items speak of: a file, a symbol, an error code, a package..."""

    id: str
    kind: EntityKind
    name: str
    path: str = ""
    qualname: str = ""
    language: str = ""
    start_line: int = 0
    end_line: int = 0
    hash: str = ""
    resolved: bool = True

    @classmethod
    def make(cls, kind: EntityKind | str, key: str, **fields: Any) -> Entity:
        kind = EntityKind(kind)
        return cls(id=entity_id(kind.value, key), kind=kind, name=fields.pop("name", key), **fields)


class LinkKind(StrEnum):
    mentions = "MENTIONS"
    anchored_to = "ANCHORED_TO"
    defined_in = "DEFINED_IN"
    contains = "CONTAINS"
    imports = "IMPORTS"
    touches = "TOUCHES"
    derived_from = "DERIVED_FROM"
    supersedes = "SUPERSEDES"


class Link(BaseModel):
    """An edge of the graph; `weight`, `surface` and `hash` are used by some kinds only."""

    kind: LinkKind
    source: str
    target: str
    weight: float = 1.0
    surface: str = ""
    hash: str = ""
    commit: str = ""
    at: float = 0.0


class Observation(BaseModel):
    """Redacted raw evidence: one captured hook event."""

    id: str = Field(default_factory=new_id)
    project: str = ""
    branch: str = ""
    session_id: str = ""
    agent: str = ""
    event: str = ""
    tool: str = ""
    command: str = ""
    text: str = ""
    files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    is_error: bool | None = None
    evidence_ref: str = ""
    tool_input: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
    cwd: str = ""
    transcript_path: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)


class Hit(BaseModel):
    """One retrieved item with its score and the reasons it was found."""

    item: MemoryItem
    score: float
    channels: dict[str, int] = Field(default_factory=dict)
    why: list[str] = Field(default_factory=list)
    stale: bool = False
    tokens: int = 0


PUBLIC_MODELS: dict[str, type[BaseModel]] = {
    "memory-item": MemoryItem,
    "entity": Entity,
    "link": Link,
    "observation": Observation,
    "scope": Scope,
    "hit": Hit,
}


class SearchResult(BaseModel):
    """Layer 2: ranked hits inside a token budget, with why each matched."""

    query: str
    hits: list[Hit]
    tokens: int
    budget: int
    candidates: int
    truncated: bool = False
    explain: list[dict[str, Any]] | None = None
    context: list[dict[str, Any]] | None = None  # with explain: each context entity's source


class Brief(BaseModel):
    """Layer 1: the tiny session-start index, one line per item."""

    project: str
    text: str
    lines: list[str]
    item_ids: list[str]
    tokens: int
    budget: int


class ItemDetail(BaseModel):
    """Layer 3 entry: an item with its links, status and evidence count."""

    item: MemoryItem
    links: list[dict[str, Any]]
    evidence_count: int
    tokens: int


class EvidenceExcerpt(BaseModel):
    """A redacted raw observation an item was derived from."""

    observation_id: str
    ts: float
    event: str
    tool: str
    command: str
    text: str
    evidence_ref: str = ""


PUBLIC_MODELS.update({"search-result": SearchResult, "brief": Brief, "item-detail": ItemDetail,
                      "evidence": EvidenceExcerpt})


def json_schemas() -> dict[str, str]:
    """File name → JSON Schema text of every public model (written to schema/)."""
    import json

    return {f"{name}.schema.json": json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
            for name, model in PUBLIC_MODELS.items()}
