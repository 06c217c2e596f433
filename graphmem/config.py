"""Configuration: every knob in one pydantic model, overridable by GRAPHMEM_* environment variables."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

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
                                "recorded right after it (same scope and session)")
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


def default_embed_threads() -> int:
    """Half the machine's cores, between 1 and 2: a query embeds in ~60% of the time on two
    threads, but a second thread that has to wait for a busy core costs more than it gains."""
    return max(1, min(2, (os.cpu_count() or 1) // 2))


class Config(BaseModel):
    """graphmem's settings; `Config.from_env()` reads GRAPHMEM_<FIELD> overrides."""

    home: Path | None = Field(None, description="root of all stores (default: the user data dir)")
    data_dir: Path | None = Field(None, description="this store's directory (default: per project)")
    cwd: Path | None = Field(None, description="where the project is looked up (default: cwd)")
    project: str | None = Field(None, description="explicit project label instead of the git root")
    engine: Literal["kuzu", "ladybug"] | None = Field(None, description="graph database engine: "
                                                     "'kuzu' (default) or 'ladybug', Kuzu's "
                                                     "maintained fork (pip install "
                                                     "'graphmem[ladybug]'); neither opens the "
                                                     "other's graph file: after a switch, "
                                                     "`graphmem rebuild` replays the journal")
    brief_budget: int = Field(400, ge=0, description="token budget of the session-start brief")
    search_budget: int = Field(1500, ge=0, description="token budget of a search answer")
    inject_budget: int = Field(300, ge=0, description="token budget of what the prompt hook adds")
    inject_floor: float = Field(0.30, description="cosine between prompt and item below which the "
                                "prompt hook adds nothing (calibrated on the session benchmark)")
    brief_line_tokens: int = Field(40, ge=8, description="max tokens of one brief line")
    max_item_chars: int = Field(32_000, ge=100, description="longest accepted item text")
    dedupe_similarity: float = Field(0.9, description="cosine above which a new item merges into an old one")
    embed: bool = Field(True, description="compute embeddings (vector channel)")
    embed_model: str = Field("", description="a sentence-transformers model (local path or "
                             "cached name, loaded offline; needs graphmem[st]) to embed with "
                             "instead of the built-in numpy MiniLM; a change re-embeds the store")
    embed_threads: int = Field(default_factory=lambda: default_embed_threads(), ge=1,
                               description="BLAS threads for embedding (default: half the cores, "
                               "at most 2; two threads on a busy 2-core machine are slower than one)")
    weights: RetrievalWeights = Field(default_factory=RetrievalWeights)
    ttl_days: dict[str, float | None] = Field(
        default_factory=lambda: dict(DEFAULT_TTL_DAYS),
        description="days an item of each kind lives unless pinned (0 or null: forever)")
    redact_extra: list[str] = Field(default_factory=list, description="extra regexes to mask")
    redact_allow: list[str] = Field(default_factory=list, description="regexes never masked")
    max_title_chars: int = Field(1_000, ge=10, description="longest imported title")
    max_tags: int = Field(50, ge=0, description="most tags an imported item may carry")
    max_name_chars: int = Field(1_000, ge=1, description="longest imported tag, file path or "
                                "symbol name")
    max_links_per_item: int = Field(1_000, ge=0, description="most files, symbols, anchors, "
                                    "mentions or supersedes edges one imported item may carry")
    max_import_bytes: int = Field(200_000_000, ge=1, description="largest export file `import` "
                                  "reads")
    min_free_mb: int = Field(64, ge=0, description="free disk space (MB) a store keeps: below "
                             "it writes are refused with exit 7 and reads still work")
    http_token: str | None = Field(None, description="bearer token `serve --http` requires "
                                   "(default: generated into the store's http.token, mode 0600)")
    http_allowed_hosts: list[str] = Field(default_factory=list, description="names besides "
                                          "loopback a request's Host/Origin may carry (a TLS "
                                          "proxy's name with --allow-remote)")

    @classmethod
    def from_env(cls, **overrides: Any) -> Config:
        values: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = os.environ.get(f"GRAPHMEM_{name.upper()}")
            if raw is None or name == "weights":
                continue
            annotation = str(field.annotation)
            try:
                values[name] = (json.loads(raw) if ("list" in annotation or "dict" in annotation)
                                else raw)
            except ValueError as exc:
                raise InvalidInput(f"GRAPHMEM_{name.upper()} is not valid JSON: {exc}") from exc
        weights = os.environ.get("GRAPHMEM_WEIGHTS")
        if weights:
            try:
                values["weights"] = RetrievalWeights(**json.loads(weights))
            except (ValueError, TypeError) as exc:
                raise InvalidInput(f"GRAPHMEM_WEIGHTS is not valid JSON weights: {exc}") from exc
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
