"""Retrieval channels: each returns (item id, score) pairs for one way of finding items."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from graphmem.extract import link
from graphmem.store.base import ItemFilter
from graphmem.store.kuzu import KuzuStore, fts_query

Scored = list[tuple[str, float]]


@dataclass
class QueryEntities:
    """Entities a query and its context point at: directly, and through the code graph."""

    direct: dict[str, float] = field(default_factory=dict)
    expanded: dict[str, int] = field(default_factory=dict)
    surfaces: dict[str, str] = field(default_factory=dict)


def query_entities(store: KuzuStore, mentions: Sequence[link.MentionLike], files: Sequence[str],
                   symbols: Sequence[str], hops: int) -> QueryEntities:
    found = QueryEntities()
    code_mentions = [m for m in mentions if m.kind != "concept"]
    for resolved in link.resolve(code_mentions, store, files, symbols):
        # Context the agent names explicitly is stronger evidence than a word in the query.
        found.direct[resolved.entity.id] = max(found.direct.get(resolved.entity.id, 0.0),
                                              resolved.weight)
        found.surfaces[resolved.entity.id] = resolved.surface
    if hops > 0 and found.direct:
        code = [e for e in found.direct if e.startswith(("file:", "symbol:"))]
        found.expanded = {e: d for e, d in store.entity_neighbours(code, hops).items() if d > 0}
    return found


def entity_channel(store: KuzuStore, entities: QueryEntities, flt: ItemFilter) -> tuple[Scored, dict[str, list[str]]]:
    """Items linked to the query's entities, scored by the summed weight of shared entities."""
    if not entities.direct:
        return [], {}
    scores: dict[str, float] = {}
    why: dict[str, list[str]] = {}
    for item_id, entity_id, weight in store.items_mentioning(list(entities.direct), flt):
        specificity = 2.0 if entity_id.startswith("symbol:") else 1.0
        scores[item_id] = scores.get(item_id, 0.0) + weight * entities.direct[entity_id] * specificity
        why.setdefault(item_id, []).append(entity_id)
    return sorted(scores.items(), key=lambda p: -p[1]), why


def graph_channel(store: KuzuStore, entities: QueryEntities, flt: ItemFilter,
                  decay: float) -> tuple[Scored, dict[str, list[str]]]:
    """Items linked to entities one or more code-graph hops away, decayed per hop."""
    if not entities.expanded:
        return [], {}
    scores: dict[str, float] = {}
    why: dict[str, list[str]] = {}
    for item_id, entity_id, weight in store.items_mentioning(list(entities.expanded), flt):
        scores[item_id] = scores.get(item_id, 0.0) + weight * decay ** entities.expanded[entity_id]
        why.setdefault(item_id, []).append(entity_id)
    return sorted(scores.items(), key=lambda p: -p[1]), why


def keyword_channel(store: KuzuStore, query: str, terms: Sequence[str], k: int, flt: ItemFilter) -> Scored:
    text = fts_query(" ".join([query, *terms]))
    return store.keyword_search(text, k, flt) if text.strip() else []


def vector_channel(store: KuzuStore, vector: Sequence[float] | None, k: int, flt: ItemFilter) -> Scored:
    return store.vector_search(vector, k, flt) if vector is not None else []
