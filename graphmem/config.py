"""Configuration: every knob in one pydantic model, overridable by the GRAPHMEM_* variables env.py declares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from graphmem import env
from graphmem.errors import InvalidInput
from graphmem.lifecycle import DEFAULT_TTL_DAYS


class RetrievalWeights(BaseModel):
    """How retrieval channels and ranking signals combine (see retrieve/fusion.py)."""

    fusion: Literal["score", "rrf"] = Field("score", description="how channels combine: 'score' (relative score "
                        "fusion: weighted sum of min-max scaled channel scores) or 'rrf'")
    channel_depth: int = Field(100, ge=10, description="results read per channel; score fusion "
                               "scales each channel between its best and this rank's score")
    rrf_k: float = Field(60.0, description="RRF damping constant: higher flattens rank differences")
    entity: float = Field(2.0, description="weight of the entity-match channel in fusion")
    graph: float = Field(1.0, description="weight of the graph-expansion channel")
    vector: float = Field(0.6, description="weight of the vector-similarity channel")
    keyword: float = Field(1.0, description="weight of the keyword (BM25) channel")
    graph_hop_decay: float = Field(0.5, description="score multiplier per hop of graph expansion")
    symbol_specificity: float = Field(2.0, description="a symbol match is worth this many file "
                                      "matches in the entity channel")
    symbol_name: float = Field(1.0, description="weight of a symbol near the query's files (in "
                               "them or one code edge away, so with graph expansion on) whose "
                               "name shares the query's words, as a share of a named symbol's "
                               "match in the entity channel; off when the context names symbols")
    breadth: float = Field(0.25, description="an item linked to n files has its entity-match "
                           "score divided by n ** this: a change across twenty files is less "
                           "about each of them than a change to one")
    entity_idf: bool = Field(False, description="weigh entity matches by IDF over visible items "
                             "(a rarely mentioned file or function counts more)")
    context_next: float = Field(0.5, description="share of an item's score lent to the item "
                                "recorded right after it (same scope and session; items about no file)")
    context_previous: float = Field(0.3, description="share lent to the item recorded right before")
    context_gap_seconds: float = Field(1800.0, description="items further apart in time are not "
                                       "each other's context")
    query_recency: float = Field(2.0, description="boost scale for items close in time before the "
                                 "query's as-of time (or now): score × (1 + this × decay)")
    query_recency_half_life_days: float = Field(365.0, description="age before the as-of time at "
                                                "which that boost halves")
    recency_half_life_days: float = Field(90.0, description="age at which the recency boost halves")
    recency: float = Field(0.15, description="max share of the score recency can add")
    hits: float = Field(0.05, description="boost per log2(1 + hit_count)")
    importance: float = Field(0.2, description="boost scale of importance (0..1, 0.5 neutral)")
    confidence: float = Field(0.3, description="boost scale of confidence (0..1, 0.7 neutral)")
    verified: float = Field(0.1, description="boost for verified items")
    branch: float = Field(0.1, description="boost for items of the current branch")
    stale_penalty: float = Field(0.35, description="multiplier for stale items (they stay visible, labelled)")
    summary_penalty: float = Field(0.6, description="multiplier for session summaries: a handoff for "
                                   "the brief, whose long bodies share words with every search")


def _setting(key: str, **constraints: Any) -> Any:
    """A Config field whose default and description are GRAPHMEM_<KEY>'s declaration in env.py."""
    variable = env.VARIABLES[key]
    if callable(variable.default):
        return Field(default_factory=variable.default, description=variable.meaning, **constraints)
    return Field(variable.default, description=variable.meaning, **constraints)


class Config(BaseModel):
    """graphmem's settings; `Config.from_env()` reads GRAPHMEM_<FIELD> overrides (env.py)."""

    home: Path | None = _setting("home")
    data_dir: Path | None = _setting("data_dir")
    cwd: Path | None = _setting("cwd")
    project: str | None = _setting("project")
    engine: Literal["kuzu", "ladybug"] | None = _setting("engine")
    database_url: str | None = _setting("database_url")
    visibility: Literal["team", "private"] = _setting("visibility")
    brief_budget: int = _setting("brief_budget", ge=0)
    search_budget: int = _setting("search_budget", ge=0)
    inject_budget: int = _setting("inject_budget", ge=0)
    inject_floor: float = _setting("inject_floor")
    brief_line_tokens: int = _setting("brief_line_tokens", ge=8)
    max_item_chars: int = _setting("max_item_chars", ge=100)
    dedupe_similarity: float = _setting("dedupe_similarity")
    embed: bool = _setting("embed")
    embed_model: str = _setting("embed_model")
    embed_threads: int = _setting("embed_threads", ge=1)
    weights: RetrievalWeights = Field(default_factory=RetrievalWeights,
                                      description=env.VARIABLES["weights"].meaning)
    ttl_days: dict[str, float | None] = _setting("ttl_days")
    redact_extra: list[str] = _setting("redact_extra")
    redact_allow: list[str] = _setting("redact_allow")
    max_title_chars: int = _setting("max_title_chars", ge=10)
    max_tags: int = _setting("max_tags", ge=0)
    max_name_chars: int = _setting("max_name_chars", ge=1)
    max_links_per_item: int = _setting("max_links_per_item", ge=0)
    max_import_bytes: int = _setting("max_import_bytes", ge=1)
    min_free_mb: int = _setting("min_free_mb", ge=0)
    http_token: str | None = _setting("http_token")
    http_allowed_hosts: list[str] = _setting("http_allowed_hosts")

    @classmethod
    def from_env(cls, **overrides: Any) -> Config:
        values: dict[str, Any] = {}
        for key in cls.model_fields:
            variable = env.VARIABLES[key]
            raw = env.raw(key)
            if raw is None or (variable.type in (list, dict) and not raw.strip()):
                continue
            try:
                values[key] = json.loads(raw) if variable.type in (list, dict) else raw
            except ValueError as exc:
                raise InvalidInput(f"{variable.name} is not valid JSON: {exc}") from exc
        if "weights" in values:
            try:
                values["weights"] = RetrievalWeights(**values["weights"])
            except (ValueError, TypeError) as exc:
                raise InvalidInput(f"{env.name('weights')} is not valid JSON weights: {exc}") from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            config = cls(**values)
        except ValueError as exc:
            raise InvalidInput(f"invalid configuration: {exc}") from exc
        return config

    @field_validator("ttl_days")
    @classmethod
    def _ttl_not_negative(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        negative = {k: v for k, v in value.items() if v is not None and v < 0}
        if negative:
            raise ValueError(f"TTL days must be >= 0 (0 means forever): {negative}")
        return {**DEFAULT_TTL_DAYS, **value}
