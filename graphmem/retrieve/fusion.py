"""Rank fusion and ranking multipliers: pure functions, no I/O."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from graphmem.config import RetrievalWeights

DAY = 86_400.0


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


def prior(item: Mapping[str, object], weights: RetrievalWeights, *, now: float,
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
    return max(boost, 0.01)
