"""Retrieval channels: each returns (item id, score) pairs for one way of finding items."""

from __future__ import annotations

import bisect
import functools
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphmem.extract import link
from graphmem.models import entity_id as entity_id_of
from graphmem.retrieve import fusion
from graphmem.store.base import ItemFilter, Store
from graphmem.store.keywords import Tokenizer

Scored = list[tuple[str, float]]
# A name more code entities hold than this (`send()` in hundreds of files) is matched in a search
# only where the query's files (named or given as context) say which: otherwise every item about
# any of them matched alike, which says nothing of which is meant and, at 100k items, cost a
# search about as much as all its other steps (~1,000 items read, counted and fused). A file
# name the query itself gives is never narrowed this way: it names its own holders.
AMBIGUITY_LIMIT = 100
LEGACY_COMMAND_WEIGHT = 0.5


@dataclass
class QueryEntities:
    """Entities a query and its context point at: directly, and through the code graph."""

    direct: dict[str, float] = field(default_factory=dict)
    expanded: dict[str, int] = field(default_factory=dict)
    surfaces: dict[str, str] = field(default_factory=dict)
    named: dict[str, float] = field(default_factory=dict)
    context: set[str] = field(default_factory=set)  # resolved from the files and symbols given
    inside: set[str] = field(default_factory=set)  # symbols in the files: for the query to name


def query_entities(store: Store, mentions: Sequence[Any], files: Sequence[str],
                   symbols: Sequence[str], hops: int, query: str = "",
                   context_weights: Mapping[str, float] | None = None) -> QueryEntities:
    """`context_weights`: a share (0..1] per file or symbol of the context, by the name given
    (live context weighs what the agent touched longer ago less); 1 for the rest."""
    found = QueryEntities()
    code_mentions = [m for m in mentions if m.kind != "concept"]
    shares = context_weights or {}
    given = {*files, *symbols}
    for resolved in link.resolve(code_mentions, store, files, symbols,
                                 ambiguity_limit=AMBIGUITY_LIMIT):
        weight = resolved.weight * shares.get(resolved.surface, 1.0)
        found.direct[resolved.entity.id] = max(found.direct.get(resolved.entity.id, 0.0), weight)
        if resolved.surface in given:
            found.context.add(resolved.entity.id)
        found.surfaces[resolved.entity.id] = resolved.surface
    _add_legacy_commands(store, found)
    if hops > 0 and found.direct:
        code = [e for e in found.direct if e.startswith(("file:", "symbol:"))]
        paths = [row["path"] for row in store.code_entities(
            [e for e in found.direct if e.startswith("file:")]) if row.get("path")]
        found.inside = {row["id"] for row in (store.find_entities(
            path_suffixes=paths, kinds=["symbol"]) if paths else [])
            if row["id"] not in found.direct and row.get("path") in paths}
        # An item touching a function of a file already matches the file: counting the file's
        # functions again would rank the changes that touched the most of them first.
        found.expanded = {e: d for e, d in store.entity_neighbours(code, hops).items()
                          if d > 0 and e not in found.inside}
    if query and (found.expanded or found.inside) and not symbols:  # named need no guessing
        named = named_symbols(store, query, {**dict.fromkeys(found.inside, 1), **found.expanded})
        found.named = {e: share for e, (share, _) in named.items()}
        found.surfaces.update((e, name) for e, (_, name) in named.items())
    return found


def _add_legacy_commands(store: Store, found: QueryEntities) -> None:
    """A task runner's command also by the name items stored by an older release link to
    (`mise run` for `mise run lint`), weaker: it names the runner, not the task."""
    from graphmem.extract import text

    legacy: dict[str, tuple[float, str]] = {}
    for entity_id, weight in found.direct.items():
        kind, _, norm = entity_id.partition(":")
        old = text.legacy_command_norm(norm) if kind == "command" else ""
        old_id = entity_id_of("command", old) if old else ""
        if old and weight * LEGACY_COMMAND_WEIGHT > legacy.get(old_id, (0.0, ""))[0]:
            legacy[old_id] = (weight * LEGACY_COMMAND_WEIGHT, found.surfaces.get(entity_id, old))
    for row in store.get_entities([e for e in legacy if e not in found.direct]) if legacy else []:
        found.direct[row["id"]], found.surfaces[row["id"]] = legacy[row["id"]]


def named_symbols(store: Store, query: str, candidates: Mapping[str, int]
                  ) -> dict[str, tuple[float, str]]:
    """Symbols among `candidates` whose names share words with the query: (the share of the
    query's word weight, IDF over item texts, their names carry; the name). "fix redirect
    handling" names `resolve_redirects`: items that touched it are likelier what the agent needs."""
    from graphmem.extract import text

    wanted = store.term_weights(" ".join(text.code_terms(query)))
    total = sum(wanted.values())
    if total <= 0:
        return {}
    named: dict[str, tuple[float, str]] = {}
    for row in store.code_entities([e for e in candidates if e.startswith("symbol:")]):
        name = str(row.get("qualname") or row.get("name") or "").rpartition("::")[2]
        shared = _name_stems(name) & wanted.keys()
        if shared:
            named[row["id"]] = (sum(wanted[w] for w in shared) / total, name)
    return named


@functools.lru_cache(maxsize=65_536)
def _name_stems(name: str) -> frozenset[str]:
    """The stemmed words of an identifier (`Session.get_adapter` -> session, get, adapt)."""
    from graphmem.extract import text

    return frozenset(_STEMMER(" ".join(text.code_terms(name))))


_STEMMER = Tokenizer()


def _entity_idf(rows: list[tuple[str, str, float]], total: int) -> dict[str, float]:
    """IDF of each entity over the visible items that mention it."""
    frequency = Counter(entity_id for _, entity_id, _ in rows)
    return {entity_id: fusion.idf(df, total) for entity_id, df in frequency.items()}


def entity_channel(store: Store, entities: QueryEntities, flt: ItemFilter,
                   symbol_specificity: float = 2.0, use_idf: bool = True, total: int = 0,
                   name_weight: float = 0.0, breadth: float = 0.0
                   ) -> tuple[Scored, dict[str, list[str]]]:
    """Items linked to the query's entities: summed link weight × specificity × IDF per entity.

    A symbol match is worth `symbol_specificity` file matches; a rarer entity (fewer items
    mention it) is worth more than a common one. A symbol the query names only by its words
    (`entities.named`) adds `name_weight` × its share of the query's words, once per item.
    An item about many files is less about each: its score is divided by files ** `breadth`.
    """
    if not entities.direct:
        return [], {}
    scores, why = _summed_links(store, entities.direct, flt, use_idf, total, lambda e, w, f: (
        w * entities.direct[e] * (symbol_specificity if e.startswith("symbol:") else 1.0) * f))
    if entities.named and name_weight > 0:
        # The best-named symbol counts, not how many: a sweeping change touches many of them.
        best: dict[str, float] = {}
        for item_id, entity_id, weight in store.items_mentioning(list(entities.named), flt):
            best[item_id] = max(best.get(item_id, 0.0), weight * entities.named[entity_id])
            why.setdefault(item_id, []).append(entity_id)
        for item_id, value in best.items():
            scores[item_id] = scores.get(item_id, 0.0) + name_weight * symbol_specificity * value
    if breadth > 0:
        files = store.file_counts(scores)
        scores = {i: s / max(1, files[i]) ** breadth for i, s in scores.items()}
    return sorted(scores.items(), key=lambda p: -p[1]), why


def graph_channel(store: Store, entities: QueryEntities, flt: ItemFilter, decay: float,
                  use_idf: bool = True, total: int = 0) -> tuple[Scored, dict[str, list[str]]]:
    """Items linked to entities one or more code-graph hops away, decayed per hop, IDF-weighted."""
    if not entities.expanded:
        return [], {}
    scores, why = _summed_links(store, entities.expanded, flt, use_idf, total,
                                lambda e, w, f: w * decay ** entities.expanded[e] * f)
    return sorted(scores.items(), key=lambda p: -p[1]), why


def _summed_links(store: Store, weights: Mapping[str, float], flt: ItemFilter, use_idf: bool,
                  total: int, term: Callable[[str, float, float], float]
                  ) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Items linked to these entities, each scored by the sum over its links of
    term(entity id, link weight, the entity's IDF or 1), with the entities that scored it."""
    rows = store.items_mentioning(list(weights), flt)
    idf = _entity_idf(rows, total) if use_idf else {}
    scores: dict[str, float] = {}
    why: dict[str, list[str]] = {}
    for item_id, entity_id, weight in rows:
        scores[item_id] = scores.get(item_id, 0.0) + term(entity_id, weight, idf.get(entity_id, 1.0))
        why.setdefault(item_id, []).append(entity_id)
    return scores, why


def keyword_channel(store: Store, query: str, terms: Sequence[str], k: int, flt: ItemFilter) -> Scored:
    return store.keyword_search(" ".join([query, *terms]), k, flt)


def vector_channel(store: Store, vector: Sequence[float] | None, k: int, flt: ItemFilter) -> Scored:
    return store.vector_search(vector, k, flt) if vector is not None else []


# ----- context: items recorded just before and after an item --------------------------------
@dataclass
class Timeline:
    """A project's items in creation order (ids, times, sessions), for context expansion."""

    count: int
    ids: list[str]
    times: list[float]
    sessions: list[str]
    position: dict[str, int]

    @classmethod
    def from_rows(cls, rows: Sequence[dict]) -> Timeline:
        ordered = sorted(rows, key=lambda r: (float(r.get("created_at") or 0.0), r["id"]))
        ids = [r["id"] for r in ordered]
        return cls(count=len(ids), ids=ids,
                   times=[float(r.get("created_at") or 0.0) for r in ordered],
                   sessions=[r.get("session_id") or "" for r in ordered],
                   position={item_id: n for n, item_id in enumerate(ids)})

    def add(self, rows: Sequence[dict]) -> None:
        """Insert items not yet known, keeping creation order."""
        for row in sorted(rows, key=lambda r: (float(r.get("created_at") or 0.0), r["id"])):
            if row["id"] in self.position:
                continue
            at = float(row.get("created_at") or 0.0)
            index = bisect.bisect_right(self.times, at)
            self.ids.insert(index, row["id"])
            self.times.insert(index, at)
            self.sessions.insert(index, row.get("session_id") or "")
            if index < len(self.ids) - 1:
                self.position = {item_id: n for n, item_id in enumerate(self.ids)}
            else:
                self.position[row["id"]] = index
        self.count = len(self.ids)

    def time_of(self, item_id: str) -> float | None:
        n = self.position.get(item_id)
        return self.times[n] if n is not None else None

    def count_before(self, before: float | None) -> int:
        """Items created before `before` (all when None)."""
        return self.count if before is None else bisect.bisect_left(self.times, before)

    def neighbours(self, item_id: str, gap: float) -> tuple[str | None, str | None]:
        """The items just before and after, if recorded within `gap` seconds in the same session."""
        n = self.position.get(item_id)
        if n is None:
            return None, None
        out: list[str | None] = []
        for m in (n - 1, n + 1):
            ok = 0 <= m < len(self.ids) and abs(self.times[m] - self.times[n]) <= gap and (
                not self.sessions[m] or not self.sessions[n] or self.sessions[m] == self.sessions[n])
            out.append(self.ids[m] if ok else None)
        return out[0], out[1]


_TIMELINES: weakref.WeakKeyDictionary[Store, dict[str, Timeline]] = weakref.WeakKeyDictionary()
_TIMELINE_LOCK = threading.Lock()
_REFRESH_SLACK = 64


def timeline(store: Store, project: str) -> Timeline:
    """The project's timeline, cached per store and refreshed when its item count changes.

    Growth is read incrementally (the newest items); anything else (deletions, back-dated
    imports) rebuilds the timeline from the store.
    """
    everything = ItemFilter(project=project, statuses=None)
    count = store.count_visible(everything)
    with _TIMELINE_LOCK:
        cached = _TIMELINES.setdefault(store, {}).get(project)
        if cached is not None and cached.count == count:
            return cached
        if cached is not None and count > cached.count:
            grown = count - cached.count
            newest = store.list_items(everything, limit=grown + _REFRESH_SLACK, order="created_at")
            cached.add([r for r in newest if r["id"] not in cached.position])
            if cached.count == count:
                return cached
        fresh = Timeline.from_rows(store.list_items(everything, limit=count + _REFRESH_SLACK,
                                                    order="created_at"))
        _TIMELINES[store][project] = fresh
        return fresh
