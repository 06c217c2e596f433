"""The retrieval hot path in memory: item filter fields, vectors and item-entity links.

A search asks the graph for a handful of small things (which items a filter lets through, the
nearest vectors, the items linked to a few entities, the code neighbours of a file); each costs
Kuzu milliseconds of fixed overhead per query. This mirror answers them in microseconds from
numpy columns and dicts. It is built from the store on first use and kept current by the store,
which hands it every journal op after the op committed; an op it cannot follow drops it, and the
next search builds it again. The graph stays the source of truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from graphmem.store import ops
from graphmem.store.base import ItemFilter, Row
from graphmem.store.keywords import KeywordIndex, top

ITEM_LINKS = ("MENTIONS", "ANCHORED_TO")
CODE_LINKS = ("DEFINED_IN", "CONTAINS", "IMPORTS", "TOUCHES")
# Item fields kept beside the filter columns: what ranking reads (fusion.prior,
# effective_confidence) and what a search hit shows, so answering a search reads no graph row.
ROW_FIELDS = ("branch", "importance", "confidence", "verified", "pinned", "hit_count",
              "updated_at", "last_used_at", "title", "tags", "source", "stale_reason")
# A hit shows the body's first ~80 tokens: the mirror keeps this many characters of it.
BODY_PREFIX = 1000


class _Codes:
    """Strings as small ints, so filters compare numpy columns."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {"": 0}
        self.text: list[str] = [""]

    def of(self, value: str) -> int:
        found = self.code.get(value)
        if found is None:
            found = self.code[value] = len(self.text)
            self.text.append(value)
        return found

    def known(self, values: Iterable[str]) -> list[int]:
        return [self.code[v] for v in values if v in self.code]


class HotIndex:
    """Mirror of what retrieval reads; one slot per item id, columns indexed by slot."""

    def __init__(self, dimensions: int, capacity: int = 1024, model: str | None = None) -> None:
        """`model`: only vectors this model made are mirrored (None: every vector)."""
        self.dimensions = dimensions
        self.model = model
        self.size = 0
        self.slot: dict[str, int] = {}
        self.ids: list[str] = []
        self.codes = _Codes()
        self._allocate(max(capacity, 16))
        self.item_links: dict[str, dict[tuple[str, str], float]] = {}  # entity -> {(table, item): w}
        self.links_of_item: dict[str, set[str]] = {}  # item -> entities it links to
        self.code_out: dict[str, set[tuple[str, str]]] = {}  # entity -> {(table, target)}
        self.code_in: dict[str, set[tuple[str, str]]] = {}  # entity -> {(table, source)}
        self.fields: dict[str, dict[str, Any]] = {}
        self.keywords = KeywordIndex()
        self._last_mask: tuple[ItemFilter, np.ndarray] | None = None  # a search asks 5-6 times

    # ----- storage ----------------------------------------------------------------------------
    def _allocate(self, capacity: int) -> None:
        def grow(old: np.ndarray | None, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            new = np.zeros(shape, dtype=dtype)
            if old is not None:
                new[: len(old)] = old
            return new

        def old(name: str) -> np.ndarray | None:
            return getattr(self, name, None)

        self.alive: np.ndarray = grow(old("alive"), (capacity,), bool)
        self.has_vector: np.ndarray = grow(old("has_vector"), (capacity,), bool)
        self.vectors: np.ndarray = grow(old("vectors"), (capacity, self.dimensions), np.float32)
        self.project: np.ndarray = grow(old("project"), (capacity,), np.int32)
        self.kind: np.ndarray = grow(old("kind"), (capacity,), np.int32)
        self.status: np.ndarray = grow(old("status"), (capacity,), np.int32)
        self.session: np.ndarray = grow(old("session"), (capacity,), np.int32)
        self.created_at: np.ndarray = grow(old("created_at"), (capacity,), np.float64)
        self.expire_at: np.ndarray = grow(old("expire_at"), (capacity,), np.float64)

    def _slot_for(self, item_id: str) -> int:
        found = self.slot.get(item_id)
        if found is not None:
            return found
        if self.size == len(self.alive):
            self._allocate(2 * len(self.alive))
        found = self.slot[item_id] = self.size
        self.ids.append(item_id)
        self.size += 1
        return found

    # ----- writes -----------------------------------------------------------------------------
    def put_items(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self._last_mask = None
        for row in rows:
            n = self._slot_for(row["id"])
            self.alive[n] = True
            self._set_fields(n, row)

    def _set_fields(self, n: int, fields: Mapping[str, Any]) -> None:
        for name, column in (("project", self.project), ("kind", self.kind),
                             ("status", self.status), ("session_id", self.session)):
            if name in fields:
                column[n] = self.codes.of(str(fields[name] or ""))
        for name, times in (("created_at", self.created_at), ("expire_at", self.expire_at)):
            if name in fields:
                times[n] = float(fields[name] or 0.0)
        if "search_text" in fields:
            self.keywords.put(n, str(fields["search_text"] or ""))
        kept = {f: fields[f] for f in ROW_FIELDS if f in fields}
        if "body" in fields:
            body = str(fields["body"] or "")
            kept["body"], kept["body_cut"] = body[:BODY_PREFIX], len(body) > BODY_PREFIX
        if kept:
            self.fields.setdefault(self.ids[n], {}).update(kept)

    def update_items(self, ids: Iterable[str], fields: Mapping[str, Any]) -> None:
        self._last_mask = None
        for item_id in ids:
            n = self.slot.get(item_id)
            if n is not None and self.alive[n]:
                self._set_fields(n, fields)

    def bump_items(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            fields = self.fields.get(row["id"])
            if fields is not None:
                fields["hit_count"] = int(fields.get("hit_count") or 0) + int(row["n"])
                fields["last_used_at"] = row["at"]

    def delete_items(self, ids: Iterable[str]) -> None:
        self._last_mask = None
        for item_id in ids:
            n = self.slot.get(item_id)
            if n is None:
                continue
            self.alive[n] = False
            self.keywords.remove(n)
            self.has_vector[n] = False
            self.vectors[n] = 0.0
            self.fields.pop(item_id, None)
            for entity in self.links_of_item.pop(item_id, set()):
                links = self.item_links.get(entity, {})
                for table in ITEM_LINKS:
                    links.pop((table, item_id), None)

    def put_vectors(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Rows of {id, vec, model}; a vector of another model replaced the item's in the graph,
        so the item has none here: a search never compares vectors of two models."""
        for row in rows:
            if self.model is not None and row["model"] != self.model:
                n = self.slot.get(row["id"])
                if n is not None:
                    self.has_vector[n] = False
                continue
            n = self._slot_for(row["id"])
            self.vectors[n] = np.asarray(row["vec"], dtype=np.float32)
            self.has_vector[n] = True

    def put_links(self, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
        if table in ITEM_LINKS:
            for row in rows:
                weight = row.get("weight") if table == "MENTIONS" else None
                self.item_links.setdefault(row["target"], {})[(table, row["source"])] = (
                    float(weight) if weight is not None else 1.0)
                self.links_of_item.setdefault(row["source"], set()).add(row["target"])
        elif table in CODE_LINKS:
            for row in rows:
                self.code_out.setdefault(row["source"], set()).add((table, row["target"]))
                self.code_in.setdefault(row["target"], set()).add((table, row["source"]))

    def delete_links(self, table: str, sources: Sequence[str], targets: Sequence[str] | None) -> None:
        if table in CODE_LINKS:
            pairs_out = zip(sources, targets) if targets is not None else (
                (s, b) for s in sources for t, b in list(self.code_out.get(s, ())) if t == table)
            for source, target in list(pairs_out):
                self.code_out.get(source, set()).discard((table, target))
                self.code_in.get(target, set()).discard((table, source))
            return
        if table not in ITEM_LINKS:
            return
        pairs = zip(sources, targets) if targets is not None else (
            (s, e) for s in sources for e in list(self.links_of_item.get(s, ())))
        for source, target in list(pairs):
            links = self.item_links.get(target, {})
            links.pop((table, source), None)
            if not any((t, source) in links for t in ITEM_LINKS):
                self.links_of_item.get(source, set()).discard(target)

    def delete_entities(self, ids: Iterable[str]) -> None:
        for entity in ids:
            for _, item_id in self.item_links.pop(entity, {}):
                self.links_of_item.get(item_id, set()).discard(entity)
            for table, other in self.code_out.pop(entity, set()):
                self.code_in.get(other, set()).discard((table, entity))
            for table, other in self.code_in.pop(entity, set()):
                self.code_out.get(other, set()).discard((table, entity))

    def apply(self, op: ops.Op) -> bool:
        """Follow one committed journal op; False when the mirror must be rebuilt instead."""
        follow = FOLLOW.get(type(op))
        if follow is None:
            return False
        follow(self, op)
        return True

    # ----- reads ------------------------------------------------------------------------------
    def mask(self, flt: ItemFilter) -> np.ndarray:
        """Which slots the filter lets through (read-only: the last one is reused)."""
        last = self._last_mask
        if last is not None and last[0] == flt and len(last[1]) == self.size:
            return last[1]
        n = self.size
        keep = self.alive[:n].copy()
        if flt.project is not None:
            keep &= self.project[:n] == self.codes.code.get(flt.project, -1)
        if flt.kinds:
            keep &= np.isin(self.kind[:n], self.codes.known(flt.kinds))
        if flt.statuses:
            keep &= np.isin(self.status[:n], self.codes.known(flt.statuses))
        if flt.created_before is not None:
            keep &= self.created_at[:n] < float(flt.created_before)
        if flt.now is not None:
            expire = self.expire_at[:n]
            keep &= (expire == 0.0) | (expire > float(flt.now))
        if flt.session_id is not None:
            keep &= self.session[:n] == self.codes.code.get(flt.session_id, -1)
        if flt.ids is not None:
            chosen = np.zeros(n, dtype=bool)
            chosen[[self.slot[i] for i in flt.ids if i in self.slot]] = True
            keep &= chosen
        keep.flags.writeable = False
        self._last_mask = (flt, keep)
        return keep

    def count(self, flt: ItemFilter) -> int:
        return int(self.mask(flt).sum())

    def visible(self, ids: Iterable[str], flt: ItemFilter) -> list[str]:
        keep = self.mask(flt)
        return [i for i in ids if (n := self.slot.get(i)) is not None and keep[n]]

    def nearest(self, vector: Sequence[float], k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """Exact cosine nearest neighbours among the visible items with a vector."""
        n = self.size
        keep = self.mask(flt) & self.has_vector[:n]
        candidates = np.flatnonzero(keep)
        if not len(candidates) or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        scores = self.vectors[candidates] @ query if len(candidates) < n // 2 else (
            self.vectors[:n] @ query)[candidates]
        top = min(k, len(candidates))
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.ids[candidates[b]], float(scores[b])) for b in best]

    def keyword_top(self, query: str, k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """BM25 best visible items for the query's words."""
        scores = self.keywords.scores(query, self.size)
        return [(self.ids[n], float(scores[n])) for n in top(scores, self.mask(flt), k)]

    def items_linked(self, entity_ids: Iterable[str], flt: ItemFilter) -> list[tuple[str, str, float]]:
        """(item, entity, weight) for each MENTIONS/ANCHORED_TO link of a visible item, newest
        item first: channels that sum these keep that order among equal scores."""
        keep = self.mask(flt)
        found = []
        for entity in entity_ids:
            for (_, item_id), weight in self.item_links.get(entity, {}).items():
                n = self.slot.get(item_id)
                if n is not None and keep[n]:
                    found.append((-self.created_at[n], -n, item_id, entity, weight))
        found.sort()
        return [(item_id, entity, weight) for _, _, item_id, entity, weight in found]

    def mentioned(self, item_ids: Iterable[str], prefix: str) -> dict[str, list[str]]:
        """The entities (ids starting with `prefix`) each item MENTIONS."""
        return {i: sorted(e for e in self.links_of_item.get(i, ()) if e.startswith(prefix)
                          and ("MENTIONS", i) in self.item_links.get(e, {})) for i in item_ids}

    def file_counts(self, item_ids: Iterable[str]) -> dict[str, int]:
        """How many files each item is linked to."""
        return {i: sum(1 for e in self.links_of_item.get(i, ()) if e.startswith("file:"))
                for i in item_ids}

    def neighbours(self, entity_ids: Sequence[str], hops: int) -> dict[str, int]:
        """Entities within `hops` code edges, by distance (0 for the starting ones)."""
        seen = {e: 0 for e in entity_ids}
        frontier = list(entity_ids)
        for depth in range(1, hops + 1):
            reached = {b for a in frontier for edges in (self.code_out, self.code_in)
                       for _, b in edges.get(a, ())} - seen.keys()
            for entity in reached:
                seen[entity] = depth
            frontier = sorted(reached)
        return seen

    def item_row(self, item_id: str) -> Row | None:
        """A live item as ranking reads it and a search hit shows it: every field, the body cut
        to BODY_PREFIX characters (`body_cut` says whether it was)."""
        n = self.slot.get(item_id)
        if n is None or not self.alive[n]:
            return None
        text = self.codes.text
        return {**self.fields.get(item_id, {}), "id": item_id, "project": text[self.project[n]],
                "kind": text[self.kind[n]], "status": text[self.status[n]],
                "session_id": text[self.session[n]], "created_at": float(self.created_at[n]),
                "expire_at": float(self.expire_at[n])}


def _ignore(index: HotIndex, op: Any) -> None:
    """Entities, observations and the compaction marker: nothing mirrored here changes."""


def _set_status(index: HotIndex, op: ops.SetItemStatus) -> None:
    for row in op.rows:
        index.update_items((row["id"],), {"status": row["status"],
                                          "stale_reason": row.get("stale_reason", "")})


# How the mirror follows each op (the graph has one applier per op too; see store/kuzu.py).
FOLLOW: dict[type[ops.Op], Callable[[HotIndex, Any], None]] = {
    ops.PutItems: lambda index, op: index.put_items(op.rows),
    ops.UpdateItems: lambda index, op: index.update_items(op.ids, op.fields),
    ops.SetItemStatus: _set_status,
    ops.BumpItems: lambda index, op: index.bump_items(op.rows),
    ops.DeleteItems: lambda index, op: index.delete_items(op.ids),
    ops.PutVectors: lambda index, op: index.put_vectors(op.rows),
    ops.PutLinks: lambda index, op: index.put_links(op.kind, op.rows),
    ops.DeleteLinks: lambda index, op: index.delete_links(op.kind, op.sources, op.targets),
    ops.DeleteEntities: lambda index, op: index.delete_entities(op.ids),
    ops.PutEntities: _ignore,
    ops.PutObservations: _ignore,
    ops.DeleteObservations: _ignore,
    ops.Compact: _ignore,
}
