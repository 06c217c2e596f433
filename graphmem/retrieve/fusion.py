"""Rank fusion and ranking multipliers: pure functions, no I/O."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from graphmem.config import RetrievalWeights

DAY = 86_400.0
# The retrieval channels, each with a weight of its name in RetrievalWeights.
CHANNELS = ("entity", "graph", "vector", "keyword")
# Channels whose scores are evidence counts (any match means something): scaled by their best
# score only. Text-similarity channels are min-max scaled between their best score and the score
# at `floor_rank`, because a weak keyword or cosine score means little on its own.
COUNT_CHANNELS = frozenset({"entity", "graph"})
# Graph expansion is weaker evidence of the same kind as a direct entity match: it is scaled by
# the larger of its own best score and the entity channel's, so it never outranks direct hits
# on its own.
SHARED_SCALE = {"graph": "entity"}


def ranks(scored: Sequence[tuple[str, float]]) -> dict[str, int]:
    """1-based ranks of ids by descending score (ties keep input order)."""
    ordered = sorted(enumerate(scored), key=lambda pair: (-pair[1][1], pair[0]))
    return {item_id: rank for rank, (_, (item_id, _)) in enumerate(ordered, 1)}


def rrf(channel_ranks: Mapping[str, Mapping[str, int]], weights: Mapping[str, float],
        k: float = 60.0) -> dict[str, float]:
    """Weighted reciprocal rank fusion: sum over channels of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for channel, ranking in channel_ranks.items():
        weight = weights.get(channel, 0.0)
        if weight <= 0:
            continue
        for item_id, rank in ranking.items():
            fused[item_id] = fused.get(item_id, 0.0) + weight / (k + rank)
    return fused


def normalise(scored: Sequence[tuple[str, float]], *, floor_rank: int = 50,
              count: bool = False, top: float | None = None) -> dict[str, float]:
    """Channel scores scaled into [0, 1]: best = 1; min-max against the score at floor_rank.

    Count-like channels (`count=True`) are divided by their best score instead, so every match
    keeps a positive share. `top` overrides the best score (a shared scale). A tiny rank-based
    term keeps the channel's order among items the scaling maps to 0.
    """
    ordered = sorted(scored, key=lambda p: -p[1])
    if not ordered:
        return {}
    top = max(ordered[0][1], top or ordered[0][1])
    floor = 0.0 if count else ordered[min(floor_rank, len(ordered)) - 1][1]
    if count and top <= 0:
        return {item_id: 1e-6 / rank for rank, (item_id, _) in enumerate(ordered, 1)}
    span = top - floor
    out: dict[str, float] = {}
    for rank, (item_id, score) in enumerate(ordered, 1):
        scaled = (score - floor) / span if span > 0 else 1.0
        out[item_id] = min(1.0, max(0.0, scaled)) + 1e-6 / rank
    return out


def score_fusion(channel_scores: Mapping[str, Sequence[tuple[str, float]]],
                 weights: Mapping[str, float], *, floor_rank: int = 50) -> dict[str, float]:
    """Relative score fusion: sum over channels of weight × the channel's normalised score."""
    fused: dict[str, float] = {}
    for channel, scored in channel_scores.items():
        weight = weights.get(channel, 0.0)
        if weight <= 0:
            continue
        partner = channel_scores.get(SHARED_SCALE.get(channel, ""), ())
        scaled = normalise(scored, floor_rank=floor_rank, count=channel in COUNT_CHANNELS,
                           top=max((s for _, s in partner), default=None))
        for item_id, value in scaled.items():
            fused[item_id] = fused.get(item_id, 0.0) + weight * value
    return fused


def propagate(scores: Mapping[str, float], neighbours: Mapping[str, tuple[str | None, str | None]],
              *, to_next: float, to_previous: float) -> dict[str, float]:
    """Context expansion: each item passes shares of its score to the items just after/before it.

    `neighbours[id] = (previous id, next id)` within the same scope and session; a reply that
    answers a question gets part of the question's score, and the reverse.
    """
    out = dict(scores)
    if to_next <= 0 and to_previous <= 0:
        return out
    for item_id, score in scores.items():
        previous, following = neighbours.get(item_id, (None, None))
        if following is not None and to_next > 0:
            out[following] = out.get(following, 0.0) + to_next * score
        if previous is not None and to_previous > 0:
            out[previous] = out.get(previous, 0.0) + to_previous * score
    return out


def time_decay(created_at: float, reference: float, half_life_days: float) -> float:
    """0.5 ** (age / half-life), age measured back from `reference` (the query's as-of time)."""
    if half_life_days <= 0:
        return 0.0
    age_days = max(0.0, reference - created_at) / DAY
    return 0.5 ** (age_days / half_life_days)


def idf(document_frequency: int, total: int) -> float:
    """Specificity of an entity: log(1 + N / df); rare files and functions weigh more."""
    return math.log(1.0 + max(total, 1) / max(document_frequency, 1))


def prior(item: Mapping[str, Any], weights: RetrievalWeights, *, now: float,
          branch: str = "") -> float:
    """Multiplier from recency, use, importance, confidence, verification, branch and staleness."""
    created = float(item.get("created_at") or 0.0)
    last_used = float(item.get("last_used_at") or 0.0)
    age_days = max(0.0, now - max(created, last_used)) / DAY
    recency = 0.5 ** (age_days / weights.recency_half_life_days) if weights.recency_half_life_days > 0 else 0.0
    boost = 1.0 + weights.recency * recency
    boost += weights.hits * math.log2(1 + int(item.get("hit_count") or 0))
    boost += weights.importance * (float(item.get("importance") or 0.5) - 0.5)
    boost += weights.confidence * (float(item.get("confidence") or 0.7) - 0.7)
    if item.get("verified"):
        boost += weights.verified
    if branch and item.get("branch") == branch:
        boost += weights.branch
    if item.get("status") == "stale":
        boost *= weights.stale_penalty
    if item.get("kind") == "summary":
        boost *= weights.summary_penalty
    return max(boost, 0.01)
