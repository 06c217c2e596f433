"""Progressive disclosure: render hits and briefs inside hard token budgets."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from graphmem.models import Brief, Hit, MemoryItem
from graphmem.retrieve.fusion import CHANNELS

SUMMARY_TOKENS = 80
BRIEF_ORDER = {"summary": 0, "task": 1, "convention": 2, "env": 3, "decision": 4, "pitfall": 5,
               "fact": 6, "note": 7, "history": 8}
KIND_LABEL = {"summary": "last session", "task": "open task", "convention": "convention",
              "env": "env", "decision": "decision", "pitfall": "pitfall", "fact": "fact",
              "note": "note", "history": "history"}


class Tokens(Protocol):
    def count(self, text: str) -> int: ...
    def truncate(self, text: str, max_tokens: int) -> str: ...


def hit_text(hit: Hit) -> str:
    """Layer-2 rendering of one hit: label, title, one-paragraph summary, why it matched."""
    item = hit.item
    label = f"[{item.kind.value}{' · STALE: ' + item.stale_reason if hit.stale else ''}]"
    summary = item.body.split("\n\n", 1)[0] if item.body else ""
    lines = [f"{label} {item.title} ({item.id})"]
    if summary and summary.strip() != item.title:
        lines.append(summary)
    if hit.why:
        lines.append("why: " + "; ".join(dict.fromkeys(hit.why)))
    return "\n".join(lines)


def fit_hits(hits: list[Hit], budget: int, tokens: Tokens) -> tuple[list[Hit], int, bool]:
    """Keep hits in rank order while they fit; shorten a summary rather than drop a hit."""
    kept: list[Hit] = []
    used = 0
    for hit in hits:
        body = tokens.truncate(hit.item.body, SUMMARY_TOKENS) if hit.item.body else ""
        shown = hit.model_copy(update={"item": hit.item.model_copy(update={"body": body})})
        cost = tokens.count(hit_text(shown))
        if used + cost > budget:
            return kept, used, True
        kept.append(shown.model_copy(update={"tokens": cost}))
        used += cost
    return kept, used, False


def explain_table(scored: Sequence[tuple[str, float]], channel_ranks: dict[str, dict[str, int]],
                  rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every candidate's rank per channel and final score, best first."""
    out = []
    for position, (item_id, score) in enumerate(scored, 1):
        ranks = channel_ranks.get(item_id, {})
        out.append({"rank": position, "id": item_id, "score": round(score, 6),
                    "title": rows[item_id]["title"][:80], "status": rows[item_id]["status"],
                    **{f"{c}_rank": ranks.get(c) for c in CHANNELS}})
    return out


def brief_priority(item: MemoryItem, now: float, branch: str) -> tuple[float, ...]:
    """Lower sorts first: the last summary and open tasks, then conventions, env, decisions, pitfalls."""
    order = BRIEF_ORDER.get(item.kind.value, 9)
    if "recurring" in item.tags:
        order = min(order, BRIEF_ORDER["convention"])  # met in several sessions: worth knowing first
    age_days = (now - item.updated_at) / 86_400
    if item.kind.value == "pitfall" and age_days > 30:
        order += 4
    weight = item.importance + item.confidence + 0.1 * min(item.hit_count, 10)
    weight += 0.5 if item.pinned else 0.0
    weight += 0.2 if branch and item.branch == branch else 0.0
    return (order, -weight, -item.updated_at)


EARLIER_SESSIONS = 3
EVIDENCE_TAGS = frozenset({"verified", "commit", "unresolved", "unfinished", "user-stated", "left-to-user", "hang",
                           "agent-note", "permissions", "recurring", "ticket"})


def has_evidence(item: MemoryItem) -> bool:
    """Whether an item has shown it is right: recorded on purpose (by the person, or by the agent
    through memory_add), verified by a later pass, a record of what was committed or still
    fails (or never came back, or failed in output the session stopped before reading), calls the
    harness refused for want of the person's approval, what the session's last message handed to
    the person, what the agent wrote down for later itself, an issue the tracker confirmed it
    filed (the create call returned its identifier), found again by another session,
    confirmed by use, or pinned. What rules or an LLM inferred needs one of these."""
    return (item.source.value in ("user", "agent") or item.pinned or item.hit_count > 0
            or bool(EVIDENCE_TAGS.intersection(item.tags)))


def _session_day(item: MemoryItem) -> str:
    """The day a summary's session took place: its title's, else the day it was stored."""
    dated = re.match(r"Session (\d{4}-\d\d-\d\d): ", item.title)
    return dated.group(1) if dated else time.strftime("%Y-%m-%d", time.localtime(item.created_at))


ID_TOKENS = 14  # what " [s…]" costs in the median
_RANDOM_ID = re.compile(r"s?[0-9a-f]{15,16}")  # new_id(), or a capture key's


def brief_line(item: MemoryItem, line_tokens: int, tokens: Tokens, label: str = "") -> str:
    """`- kind: title [id]` with the title shortened so the line stays within line_tokens."""
    stale = " (stale)" if item.status.value == "stale" else ""
    prefix = f"- {KIND_LABEL.get(item.kind.value, item.kind.value)}{stale}: "
    title = item.title.replace("\n", " ")
    if item.kind.value == "summary":  # "Session 2026-12-01: …" says again what the label says
        title = re.sub(r"^Session (\S+): ", "", title)
        prefix = f"- {label or KIND_LABEL['summary']} ({_session_day(item)}): "
    suffix = f" [{item.id}]"
    # the title's room does not hang on how its random id happens to tokenize (10 to 18 tokens): the
    # same memory gets the same line in every store; an id of another shape costs what it costs
    cost = ID_TOKENS if _RANDOM_ID.fullmatch(item.id) else tokens.count(suffix)
    room = max(1, line_tokens - tokens.count(prefix) - cost)
    return prefix + tokens.truncate(title, room) + suffix


def brief(project: str, items: list[MemoryItem], budget: int, line_tokens: int, tokens: Tokens,
          branch: str = "") -> Brief:
    """One line per item, each ≤ line_tokens, whole text ≤ budget tokens."""
    now = time.time()
    header = "graphmem: what this project remembers (memory_search / memory_get for more)"
    summaries = [i for i in items if i.kind.value == "summary"]
    latest_summary = max(summaries, key=lambda i: (_session_day(i), i.created_at), default=None)
    chosen = [i for i in items if i.kind.value != "summary" and has_evidence(i)]
    if latest_summary is not None:
        chosen.append(latest_summary)
    chosen.sort(key=lambda i: brief_priority(i, now, branch))
    lines: list[str] = []
    ids: list[str] = []
    used = tokens.count(header) if budget else 0
    if used > budget:
        return Brief(project=project, text="", lines=[], item_ids=[], tokens=0, budget=budget)
    # Room left over after them tells the sessions before the last, newest first: what was done
    # lately is what a session starts from, though no single item of them had evidence enough.
    earlier = sorted((i for i in summaries if i is not latest_summary),
                     key=lambda i: (_session_day(i), i.created_at), reverse=True)[:EARLIER_SESSIONS]
    picked: list[tuple[MemoryItem, str]] = []
    titles: list[str] = []  # the picked lines' titles, lower-cased with their spaces collapsed
    for item, label in [*((i, "") for i in chosen), *((i, "earlier session") for i in earlier)]:
        title = " ".join(item.title.lower().split())
        said = title.rstrip(".…")
        if not label and len(said) >= 20 and any(said in other for other in titles):
            continue  # `fact: <commit subject>` under `last session: committed "<commit subject>"`
        line = brief_line(item, line_tokens, tokens, label)
        cost = tokens.count(line)
        if used + cost > budget:
            continue
        lines.append(line)
        ids.append(item.id)
        picked.append((item, label))
        titles.append(title)
        used += cost
    # Room left over lets the cut lines say more, in the brief's order, up to twice a line's size.
    for n, (item, label) in enumerate(picked):
        longer = brief_line(item, 2 * line_tokens, tokens, label)
        extra = tokens.count(longer) - tokens.count(lines[n])
        if 0 < extra <= budget - used:
            lines[n] = longer
            used += extra
    text = "\n".join([header, *lines]) if lines else ""
    return Brief(project=project, text=text, lines=lines, item_ids=ids,
                 tokens=tokens.count(text) if text else 0, budget=budget)


_TOKENIZER: Any = None


def _tokenizer() -> Any:
    global _TOKENIZER
    if _TOKENIZER is None:
        from graphmem.store.keywords import Tokenizer

        _TOKENIZER = Tokenizer()
    return _TOKENIZER


def word_share(text: str, weights: Mapping[str, float]) -> float:
    """The share of a query's (IDF) weight that `text`'s words hold."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    words = set(_tokenizer()(text))
    return sum(w for term, w in weights.items() if term in words) / total


_BARE = re.compile(r"^(?:#+\s.*|`{3}\w*|[-=*_]{3,})$")  # a markdown heading, fence or rule


def _after_title(said: str, title: str) -> str:
    """What a body line says past a title taken from its start ("" when the title shows it
    all): an answer cut for the title, or a text whose first sentence became it, keeps the rest."""
    shown = title[title.find(said[:60].lower()):].removesuffix("…").rstrip()
    if not said.lower().startswith(shown):
        return ""
    rest = said[len(shown):]
    return rest if len(rest.strip()) >= 12 else ""


def inject_entry(item: MemoryItem, max_chars: int = 480,
                 weights: Mapping[str, float] | None = None) -> str:
    """`- kind: title [id]` and, indented, the body lines the title does not already say; when
    they do not all fit, the lines densest in the prompt's (IDF-weighted, stemmed) words, kept in
    their order: a long commit message's one relevant line. Density, not the sum: a long line
    holds more words by its length alone, and taking it leaves no room for the short one that
    answers."""
    stale = " (stale)" if item.status.value == "stale" else ""
    label = "session summary" if item.kind.value == "summary" else KIND_LABEL.get(item.kind.value, item.kind.value)
    head = f"- {label}{stale}: {' '.join(item.title.split())} [{item.id}]"
    title = " ".join(item.title.split()).lower()
    lines: list[str] = []
    for line in item.body.splitlines():
        # Body lines are shown as the entry's continuation, never as list items of their own.
        line = re.sub(r"^(?:[-*•+]|\d+[.)])\s+", "", " ".join(line.split()))
        if not line or _BARE.match(line):
            continue
        said = line.split(": ", 1)[-1]
        if said[:60].lower() not in title:
            lines.append(line)
        elif rest := _after_title(said, title):
            lines.append(f"…{rest}")
    room = max_chars - len(head)
    order = list(range(len(lines)))
    if weights and sum(len(line) + 3 for line in lines) > room:
        tokenize = _tokenizer()
        score = [sum(weights.get(t, 0.0) for t in set(tokenize(line))) / math.sqrt(len(line) + 40)
                 for line in lines]
        order.sort(key=lambda i: (-score[i], i))
    chosen: dict[int, str] = {}
    for i in order:
        if room <= 40:
            break
        line = lines[i] if len(lines[i]) + 3 <= room else lines[i][: room - 4] + "…"
        chosen[i] = "  " + line
        room -= len(line) + 3
    extra = [chosen[i] for i in sorted(chosen)]
    return "\n".join([head, *extra])
