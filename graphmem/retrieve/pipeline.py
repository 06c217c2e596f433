"""The retrieval pipeline: run the channels, fuse their scores, say why each item matched.

Steps: entity match (files, symbols, error codes... the query names or the agent passes as
context), graph expansion (code-graph neighbours; the functions inside the named files count
only where their names share the query's words, in the entity match), vector and keyword
search; then fusion (relative score fusion by default, weighted RRF on request), context
expansion (an item about no file lends part of its score to such items recorded just before
and after it in the same session) and a recency multiplier measured from the query's as-of time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from graphmem import lifecycle
from graphmem.config import RetrievalWeights
from graphmem.retrieve import channels, fusion, render
from graphmem.store.base import ItemFilter, Store

CONTEXT_LENDERS = 100
_EMBEDDING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="graphmem-embed")
Ranked = list[tuple[str, float]]


class Candidates(NamedTuple):
    """A search's candidates: best first, each item's rank per channel, why each matched, and
    the items linked to the context given (files, symbols), which rank before all others."""

    ranked: Ranked
    channels: dict[str, dict[str, int]]
    why: dict[str, list[str]]
    first: set[str]


def candidates(store: Store, weights: RetrievalWeights,
               embed: Callable[[list[str]], Any] | None, query: str, files: Sequence[str],
               symbols: Sequence[str], k: int, flt: ItemFilter,
               channels_on: Sequence[str] | None = None,
               context_weights: Mapping[str, float] | None = None
               ) -> Candidates:
    """Fused (item id, score) best first, each item's rank per channel, and reasons.
    `context_weights`: a share per file or symbol of the context (live context)."""
    from graphmem.extract import text

    on = set(channels_on or fusion.CHANNELS)
    # The query embedding is most of a search's time and numpy runs it without the GIL: it
    # overlaps the entity, graph and keyword channels.
    embedding = (_EMBEDDING.submit(embed, [query])
                 if "vector" in on and query and embed is not None else None)
    mentions = text.extract(query, concepts=False, bare=True) if query else []
    depth = max(k, weights.channel_depth)
    results: dict[str, Ranked] = {}
    why: dict[str, list[str]] = {}
    first: set[str] = set()
    if on & {"entity", "graph"}:
        entities = channels.query_entities(store, mentions, files, symbols,
                                           hops=1 if "graph" in on else 0, query=query,
                                           context_weights=context_weights)
        total = _visible_total(store, flt) if entities.direct and weights.entity_idf else 0
        if "entity" in on:
            results["entity"], entity_why = channels.entity_channel(
                store, entities, flt, weights.symbol_specificity, weights.entity_idf, total,
                weights.symbol_name, weights.breadth)
            for item_id, eids in entity_why.items():
                why.setdefault(item_id, []).extend(
                    f"mentions {entities.surfaces.get(e, e)}" for e in eids[:3])
                if entities.context.intersection(eids):
                    first.add(item_id)
        if "graph" in on:
            results["graph"], graph_why = channels.graph_channel(
                store, entities, flt, weights.graph_hop_decay, weights.entity_idf, total)
            for item_id, eids in graph_why.items():
                why.setdefault(item_id, []).append(f"near {eids[0]}")
    if "keyword" in on and query:
        results["keyword"] = channels.keyword_channel(store, query, text.code_terms(query), depth, flt)
    if embedding is not None:
        results["vector"] = channels.vector_channel(store, embedding.result()[0].tolist(), depth, flt)
    channel_weights = {c: getattr(weights, c) for c in fusion.CHANNELS}
    if weights.fusion == "rrf":
        fused = fusion.rrf({name: fusion.ranks(scored[:depth]) for name, scored in results.items()},
                           channel_weights, k=weights.rrf_k)
    else:
        fused = fusion.score_fusion({name: scored[:depth] for name, scored in results.items()},
                                    channel_weights, floor_rank=weights.channel_depth)
    keep = max(3 * k, 50)
    fused = _in_context(store, weights, fused, flt, keep=keep)
    per_item: dict[str, dict[str, int]] = {}
    for name, scored in results.items():
        for item_id, rank in fusion.ranks(scored[:depth]).items():
            per_item.setdefault(item_id, {})[name] = rank
    ranked = sorted(fused.items(), key=lambda p: (p[0] not in first, -p[1], p[0]))
    for item_id, _ in ranked[:keep]:
        ranks = per_item.get(item_id, {})
        if "vector" in ranks and not why.get(item_id):
            why.setdefault(item_id, []).append("similar meaning")
        if "keyword" in ranks:
            why.setdefault(item_id, []).append("shares keywords")
        if not ranks:
            why.setdefault(item_id, []).append("recorded next to a match")
    return Candidates(ranked, per_item, why, first)


def _visible_total(store: Store, flt: ItemFilter) -> int:
    """How many items the query can see (the N of entity IDF); from the timeline when scoped."""
    if flt.project is None:
        return store.count_visible(flt)
    return channels.timeline(store, flt.project).count_before(flt.created_before)


def _in_context(store: Store, weights: RetrievalWeights, fused: dict[str, float],
                flt: ItemFilter, keep: int) -> dict[str, float]:
    """Context expansion and as-of recency; both need each candidate's place in time.

    Only the best `keep` items survive context expansion, and neighbours that entered through
    it are checked against the query's filter (scope, as-of, status, kind) like any hit.
    """
    expand = weights.context_next > 0 or weights.context_previous > 0
    if not fused or flt.project is None or not (expand or weights.query_recency > 0):
        return fused
    line = channels.timeline(store, flt.project)
    scored = dict(fused)
    if expand:
        # Only items that could still make the cut lend their context.
        lenders = sorted(fused, key=lambda i: -fused[i])[:max(CONTEXT_LENDERS, keep)]
        neighbours = _turns(store, {i: line.neighbours(i, weights.context_gap_seconds)
                                    for i in lenders})
        scored = fusion.propagate(fused, neighbours, to_next=weights.context_next,
                                  to_previous=weights.context_previous)
    if weights.query_recency > 0:
        reference = flt.created_before if flt.created_before is not None else (flt.now or time.time())
        for item_id, score in scored.items():
            at = line.time_of(item_id)
            if at is not None:
                scored[item_id] = score * (1.0 + weights.query_recency * fusion.time_decay(
                    at, reference, weights.query_recency_half_life_days))
    if len(scored) == len(fused):
        return scored
    best = sorted(scored.items(), key=lambda p: (-p[1], p[0]))[:keep]
    added = [i for i, _ in best if i not in fused]
    visible = set(store.visible_ids(added, flt))
    return {i: s for i, s in best if i in fused or i in visible}


def _turns(store: Store, neighbours: dict[str, tuple[str | None, str | None]]
           ) -> dict[str, tuple[str | None, str | None]]:
    """The neighbours that are turns of one exchange: an item linked to a file is about that
    code, not a reply to the item before it (a commit history's items are minutes apart)."""
    ids = {i for pair in neighbours.values() for i in pair if i is not None} | neighbours.keys()
    anchored = {i for i, n in store.file_counts(ids).items() if n}
    return {i: (None if p in anchored else p, None if n in anchored else n)
            for i, (p, n) in neighbours.items() if i not in anchored}


def prioritise(store: Store, ranked: Sequence[tuple[str, float]], weights: RetrievalWeights,
               branch: str, as_of: float | None = None,
               first: Collection[str] = ()) -> list[tuple[str, float]]:
    """Fused scores × each item's prior (recency, use, confidence, branch, staleness), best
    first, the items of `first` (on the context given) before the rest. Time travel ranks as
    the store stood then: recency and decay count back from as_of."""
    now = time.time()
    reference = now if as_of is None else min(now, as_of)
    rows = store.item_rows([i for i, _ in ranked])
    return sorted(((i, s * fusion.prior({**rows[i], "confidence": lifecycle.effective_confidence(
        rows[i], reference)}, weights, now=reference, branch=branch))
        for i, s in ranked if i in rows), key=lambda p: (p[0] not in first, -p[1]))


def hit_rows(store: Store, ids: Sequence[str], tokens: Any) -> dict[str, dict[str, Any]]:
    """Items as hits show them, from the search mirror; from the graph only when the mirror's
    body prefix may hold fewer words than a hit shows (`tokens` counts them)."""
    rows = store.item_rows(ids)
    short = [i for i, row in rows.items() if row.pop("body_cut", False)
             and tokens.count(row["body"]) <= render.SUMMARY_TOKENS]
    rows.update((r["id"], r) for r in store.get_items(short))
    return rows
