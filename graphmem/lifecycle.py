"""Trust and retention rules as pure functions: supersession, confidence decay, TTL, sweep plans."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

DAY = 86_400.0

# Days an item of each kind lives unless used, verified or pinned; None: until removed.
DEFAULT_TTL_DAYS: dict[str, float | None] = {
    "task": 45, "summary": 60, "note": 180, "env": 365, "pitfall": 365, "fact": 365,
    "decision": None, "convention": None, "history": None,
}
CONFIDENCE_HALF_LIFE_DAYS = 180.0  # unused, unverified items lose half their confidence per this
BRIEF_CONFIDENCE_FLOOR = 0.3       # below it an item leaves the brief but stays searchable
ARCHIVE_GRACE_DAYS = 30.0          # archived items are purged (really deleted) after this
COLD_CONFIDENCE = 0.15             # effective confidence at which an unused item is archived

_CUES = re.compile(
    r"\b(now|no longer|not anymore|any ?more|instead|replac\w*|switch\w*|mov(?:ed|ing) (?:to|from)|"
    r"migrat\w*|deprecat\w*|from now on|going forward|supersed\w*|obsolete|rather than|"
    r"new(?:er)? fix|actually|turns out|was wrong|correction|changed to|upgrad\w*|downgrad\w*|"
    r"dropp\w*|removed?|stop(?:ped)? using)\b", re.I)
_NOT_Y = re.compile(r"\b(?:not|instead of|rather than|over)\s+([\w.@/+-]+)", re.I)


@dataclass(frozen=True)
class PairVerdict:
    """How a new item relates to an older one of the same scope."""

    relation: str  # "duplicate" | "supersedes" | "unrelated"
    reason: str


@dataclass(frozen=True)
class SupersessionRule:
    """Thresholds, measured on tests/data/supersession_pairs.jsonl (see tests/test_lifecycle.py)."""

    duplicate_similarity: float = 0.9
    cue_similarity: float = 0.45
    entity_similarity: float = 0.6
    same_error_similarity: float = 0.5


def has_cue(text: str) -> bool:
    return bool(_CUES.search(text))


def rejected_terms(text: str) -> set[str]:
    """Words the text turns away from: 'use pnpm, not npm' → {'npm'}."""
    return {m.group(1).lower().strip(".,;:") for m in _NOT_Y.finditer(text)}


def classify_pair(new_text: str, old_text: str, similarity: float, shared_entities: Iterable[str],
                  same_kind: bool, rule: SupersessionRule = SupersessionRule()) -> PairVerdict:
    """Decide whether a new item repeats, replaces, or has nothing to do with an old one."""
    shared = {e for e in shared_entities if not e.startswith("concept:")}
    old_words = set(re.findall(r"[\w.@/+-]+", old_text.lower()))
    turned_away = rejected_terms(new_text) & old_words
    cue = has_cue(new_text) or bool(turned_away)
    if similarity >= rule.duplicate_similarity and same_kind and not turned_away:
        return PairVerdict("duplicate", f"same meaning (cosine {similarity:.2f})")
    if turned_away and (shared or similarity >= rule.cue_similarity):
        return PairVerdict("supersedes", f"turns away from {', '.join(sorted(turned_away))}")
    if cue and shared and similarity >= rule.cue_similarity:
        return PairVerdict("supersedes", f"change cue and shared {', '.join(sorted(shared)[:3])}")
    if cue and same_kind and similarity >= rule.entity_similarity:
        return PairVerdict("supersedes", f"change cue about the same thing (cosine {similarity:.2f})")
    errors = {e for e in shared if e.startswith("error:")}
    if errors and same_kind and similarity >= rule.same_error_similarity and not cue:
        return PairVerdict("supersedes", f"newer fix for {', '.join(sorted(errors))}")
    return PairVerdict("unrelated", "")


def effective_confidence(item: Mapping[str, Any], now: float) -> float:
    """Stored confidence, decayed for items long unused and never verified (pinned never decay)."""
    confidence = float(item.get("confidence") or 0.0)
    if item.get("verified") or item.get("pinned"):
        return confidence
    last = max(float(item.get("last_used_at") or 0.0), float(item.get("updated_at") or 0.0),
               float(item.get("created_at") or 0.0))
    idle_days = max(0.0, now - last) / DAY  # a clock that went backwards never adds confidence
    return confidence * 0.5 ** (idle_days / CONFIDENCE_HALF_LIFE_DAYS)


def expire_at(kind: str, created_at: float, pinned: bool,
              ttl_days: Mapping[str, float | None] = DEFAULT_TTL_DAYS) -> float:
    """When an item expires (0.0: never). A TTL of 0 or None means never."""
    ttl = ttl_days.get(kind)
    if pinned or not ttl:
        return 0.0
    if ttl < 0:
        raise ValueError(f"TTL for {kind!r} must be >= 0 days, got {ttl}")
    return created_at + ttl * DAY


@dataclass
class SweepPlan:
    """What a sweep would do; `graphmem sweep --dry-run` prints it."""

    archive_expired: list[str] = field(default_factory=list)
    archive_cold: list[str] = field(default_factory=list)
    purge: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"archive_expired": self.archive_expired, "archive_cold": self.archive_cold,
                "purge": self.purge}


def plan_sweep(items: Iterable[Mapping[str, Any]], now: float,
               grace_days: float = ARCHIVE_GRACE_DAYS) -> SweepPlan:
    """Expired live items and cold unverified ones are archived; long-archived ones purged."""
    plan = SweepPlan()
    for item in items:
        if item.get("pinned"):
            continue
        status = item.get("status")
        if status in ("active", "stale", "superseded"):
            expires = float(item.get("expire_at") or 0.0)
            if expires and expires <= now:
                plan.archive_expired.append(item["id"])
            elif effective_confidence(item, now) < COLD_CONFIDENCE:
                plan.archive_cold.append(item["id"])
        elif status == "archived":
            archived_at = float(item.get("updated_at") or 0.0)
            if archived_at and now - archived_at >= grace_days * DAY:
                plan.purge.append(item["id"])
    return plan
