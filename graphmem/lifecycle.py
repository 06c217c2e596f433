"""Trust and retention rules as pure functions: supersession, confidence decay, TTL, sweep plans."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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

# Words that announce a change. Only cues the new text adds count: "we now use pnpm" repeated as
# "the frontend now uses pnpm" is a duplicate, not a change (measured, tests/test_lifecycle.py).
_CUES = re.compile(
    r"\b(now|no longer|not anymore|any ?more|instead|replac\w*|switch\w*|mov(?:ed|ing) (?:to|from)|"
    r"migrat\w*|deprecat\w*|from now on|going forward|supersed\w*|obsolete|rather than|"
    r"new(?:er)? fix|actually|turns out|was wrong|correction|changed?|upgrad\w*|downgrad\w*|"
    r"dropp\w*|removed?|stop(?:ped)? using|renam\w*|revers\w*|revert\w*|done|closed)\b",
    re.IGNORECASE)
# "not X", "never X", "instead of X", "rather than X", "over X"; a verb right after the negation
# is skipped ("do not use print" turns away from print, not from "use").
_NOT_Y = re.compile(r"\b(?:not|never|instead of|rather than|over)\s+"
                    r"(?:(?:use|using|run|running|call|calling|need|needed)\s+)?([\w.@/+-]+)",
                    re.IGNORECASE)
_WORDS = re.compile(r"[\w.@/+-]+")
# Values whose change is a change of fact: ports, versions, sizes ("port 5432" → "port 5433").
_VALUES = re.compile(r"(?<![\w.])\d+(?:[.:]\d+)*(?![\w])")
# Entity kinds too broad to show two items speak of the same thing on their own: a file or a
# command has many independent facts ("db.py: pool size 10" vs "db.py: no f-strings in SQL").
BROAD_ENTITY_KINDS = ("concept", "file", "command")


@dataclass(frozen=True)
class PairVerdict:
    """How a new item relates to an older one of the same scope."""

    relation: str  # "duplicate" | "supersedes" | "unrelated"
    reason: str


@dataclass(frozen=True)
class SupersessionRule:
    """Thresholds, measured on tests/data/supersession_pairs.jsonl (see tests/test_lifecycle.py;
    tuned on the dev half only, the test half reported separately).

    duplicate_similarity stays at Config.dedupe_similarity (0.9), where the service merges. In
    Memory._supersede_older a "duplicate" verdict only blocks supersession: 0.85 would find more
    rephrasings on the pairs (dev duplicate recall 0.93 vs 0.73), but it would also keep a newer
    fix for the same error (cosine 0.85-0.9, no cue) from replacing the older pitfall (seen in
    bench/bench_month.py). Superseding a repeat is harmless; keeping a stale fact live is not."""

    duplicate_similarity: float = 0.9    # same kind, no new cue, no changed value, no turn-away
    cue_similarity: float = 0.55         # a new cue plus a shared specific entity
    entity_similarity: float = 0.65      # a new cue (or a changed value) about the same thing
    same_error_similarity: float = 0.5   # a newer fix for the same error code


def has_cue(text: str) -> bool:
    return bool(_CUES.search(text))


def cues(text: str) -> set[str]:
    """The change cue words of a text, lowercased. "instead of X" / "rather than X" are left to
    turned_away(): they signal a change only when the old text held X and did not reject it."""
    found = set()
    for match in _CUES.finditer(text):
        word = match.group(0).lower()
        if word == "rather than" or (word == "instead"
                                     and text[match.end():].lstrip().lower().startswith("of ")):
            continue
        found.add(word)
    return found


def rejected_terms(text: str) -> set[str]:
    """Words the text turns away from: 'use pnpm, not npm' → {'npm'}."""
    return {m.group(1).lower().strip(".,;:") for m in _NOT_Y.finditer(text)}


def words(text: str) -> set[str]:
    """Lowercased word tokens, punctuation stripped ('npm,' → 'npm'), as rejected_terms sees them."""
    return {w.strip(".,;:") for w in _WORDS.findall(text.lower())}


def turned_away(new_text: str, old_text: str) -> set[str]:
    """Terms of the old text the new one rejects, unless the old one rejected them too
    ('uses pnpm rather than npm' repeats 'pnpm, not npm'; it does not turn away from it)."""
    return (rejected_terms(new_text) & words(old_text)) - rejected_terms(old_text)


def changed_values(new_text: str, old_text: str) -> bool:
    """Both texts carry numbers the other lacks: a port, version or size changed."""
    new, old = set(_VALUES.findall(new_text)), set(_VALUES.findall(old_text))
    return bool(new - old) and bool(old - new)


def repeats(new_text: str, old_text: str) -> bool:
    """The new text could be a rephrasing of the old: it turns away from nothing the old one held,
    adds no change cue and changes no value. Merging is safe only then (similarity aside)."""
    return (not turned_away(new_text, old_text) and not (cues(new_text) - cues(old_text))
            and not changed_values(new_text, old_text))


def classify_pair(new_text: str, old_text: str, similarity: float, shared_entities: Iterable[str],
                  same_kind: bool, rule: SupersessionRule = SupersessionRule()) -> PairVerdict:
    """Decide whether a new item repeats, replaces, or has nothing to do with an old one."""
    shared = {e for e in shared_entities if not e.startswith("concept:")}
    specific = {e for e in shared if e.split(":", 1)[0] not in BROAD_ENTITY_KINDS}
    away = turned_away(new_text, old_text)
    new_cues = cues(new_text) - cues(old_text)
    values = changed_values(new_text, old_text)
    if similarity >= rule.duplicate_similarity and same_kind and not (away or new_cues or values):
        return PairVerdict("duplicate", f"same meaning (cosine {similarity:.2f})")
    if away and (shared or similarity >= rule.cue_similarity):
        return PairVerdict("supersedes", f"turns away from {', '.join(sorted(away))}")
    if new_cues and specific and similarity >= rule.cue_similarity:
        return PairVerdict("supersedes", f"change cue and shared {', '.join(sorted(specific)[:3])}")
    if (new_cues or values) and same_kind and similarity >= rule.entity_similarity:
        what = "changed value" if values and not new_cues else "change cue"
        return PairVerdict("supersedes", f"{what} about the same thing (cosine {similarity:.2f})")
    errors = {e for e in shared if e.startswith("error:")}
    if errors and same_kind and similarity >= rule.same_error_similarity and not new_cues:
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
