"""The graph store protocol, in domain verbs; backends live beside it (kuzu.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from graphmem.store import ops

Row = dict[str, Any]



@dataclass(frozen=True)
class ItemFilter:
    """Which items a read may see; None means no restriction on that field."""

    project: str | None = None
    kinds: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = ("active", "stale")
    created_before: float | None = None
    now: float | None = None
    ids: tuple[str, ...] | None = None
    session_id: str | None = None

    def terms(self) -> list[tuple[str, Any]]:
        """(field, value) of each condition the filter sets, values as the engines bind them; an
        empty list of kinds or statuses restricts nothing."""
        out: list[tuple[str, Any]] = []
        for field, convert in _TERM_TYPES:
            value = getattr(self, field)
            if value is None or (convert is list and not value):
                continue
            out.append((field, convert(value)))
        return out

    def conditions(self, clauses: dict[str, str], **names: str) -> tuple[list[str], dict[str, Any]]:
        """An engine's clause for each term (a template of `clauses`, filled with `names`) and
        the parameters they bind, each named `f_<field>`."""
        terms = self.terms()
        return ([clauses[field].format(**names) for field, _ in terms],
                {f"f_{field}": value for field, value in terms})


_TERM_TYPES: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("project", str), ("kinds", list), ("statuses", list), ("created_before", float),
    ("now", float), ("ids", list), ("session_id", str))


class Store(Protocol):
    """The verbs graphmem needs of a storage engine: the only view of a store outside store/.

    Writes arrive as typed journal ops (store/ops.py) through `apply`, which the Writer calls;
    everything else reads. Rows are plain dicts keyed by the columns in store/schema.py. A new
    engine implements these and passes tests/store/test_contract.py."""

    @property
    def schema_version(self) -> int:
        """The schema version the store was created with."""
        ...

    def close(self) -> None:
        """Release the database (a clean close is recorded so the next open skips the probe)."""
        ...

    def check(self) -> None:
        """Read every column of every node and edge (the probe's work: a damaged page shows)."""
        ...

    def apply(self, op: ops.Op, seq: int | None = None) -> None:
        """Apply one journal operation atomically, recording its journal sequence number."""
        ...

    @property
    def applied_seq(self) -> int:
        """The journal sequence number of the last op applied (catch-up starts after it)."""
        ...

    def get_items(self, ids: Sequence[str]) -> list[Row]:
        """Item rows for the ids that exist, in the given order."""
        ...

    def list_items(self, flt: ItemFilter, limit: int = 100, order: str = "created_at",
                   offset: int = 0) -> list[Row]:
        """Item rows the filter lets through, newest first by `order`."""
        ...

    def count_items(self, flt: ItemFilter) -> int:
        """How many items the filter lets through."""
        ...

    def counts(self) -> dict[str, int]:
        """Rows per node and link table."""
        ...

    def group_counts(self, field: str, project: str | None = None) -> dict[str, int]:
        """Items per value of one field (kind, status, ...)."""
        ...

    def keyword_search(self, query: str, k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """BM25 over item text, from the in-memory mirror (store/keywords.py)."""
        ...

    def term_weights(self, text: str) -> dict[str, float]:
        """The text's stemmed words, each with its IDF over all item texts."""
        ...

    def vector_search(self, vector: Sequence[float], k: int, flt: ItemFilter) -> list[tuple[str,
                      float]]:
        """Nearest visible items by cosine similarity (exact, from the in-memory mirror)."""
        ...

    def count_visible(self, flt: ItemFilter) -> int:
        """How many items the filter lets through (from the mirror: no query)."""
        ...

    def visible_ids(self, ids: Sequence[str], flt: ItemFilter) -> list[str]:
        """The ids the filter lets through, in the given order."""
        ...

    def item_rows(self, ids: Sequence[str]) -> dict[str, Row]:
        """Live items as ranking reads them and search shows them, by id, from the mirror: bodies
        are cut to their first BODY_PREFIX characters (`body_cut` says which were)."""
        ...

    def prepare(self) -> None:
        """Build the in-memory retrieval mirror now rather than in the first search."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, Row]:
        """Vector rows {id, vec, model, text_hash} of the ids that have one."""
        ...

    def vector_stamps(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(model, text_hash) of these items' vectors: what made each and from which text."""
        ...

    def get_entities(self, ids: Sequence[str]) -> list[Row]:
        """Entity rows for the ids that exist."""
        ...

    def find_entities(self, *, names: Iterable[str] = (), kinds: Sequence[str] | None = None,
                      path_suffixes: Iterable[str] = ()) -> list[Row]:
        """Code entities (files, symbols) whose name/qualname equals one of `names` or whose path
        ends with a suffix; answered from an in-memory index (linking asks per mention)."""
        ...

    def code_entities(self, ids: Sequence[str]) -> list[Row]:
        """File and symbol entities by id, from the in-memory code index."""
        ...

    def entities_by_kind(self, kind: str, limit: int = 100_000) -> list[Row]:
        """Entity rows of one kind."""
        ...

    def item_links(self, item_id: str) -> list[Row]:
        """Edges of an item with their targets: its entities, what it supersedes and what
        supersedes it (SUPERSEDED_BY), with the edges' properties."""
        ...

    def item_observations(self, item_id: str) -> list[Row]:
        """The observations an item derives from."""
        ...

    def items_without_vectors(self) -> list[str]:
        """Ids of items that have no vector (written with embedding off, or a write cut short)."""
        ...

    def item_ids(self) -> list[str]:
        """Every item's id."""
        ...

    def vectors_not_of(self, model: str) -> dict[str, str]:
        """{item id: model} of the vectors another model made."""
        ...

    def evidence_in_use(self, refs: Sequence[str]) -> set[str]:
        """The evidence references some observation in the store still points at."""
        ...

    def entities_only_linked_from(self, entity_ids: set[str], items: set[str]) -> list[str]:
        """Entities no other item links to and the code index does not hold (text-derived)."""
        ...

    def session_observations(self, session_id: str) -> list[Row]:
        """A session's observations in time order."""
        ...

    def session_files(self, session_id: str, tools: Sequence[str], limit: int = 40) -> list[str]:
        """The files a session's latest tool calls of these kinds touched, most recent first."""
        ...

    def observation_users(self, observation_id: str) -> list[str]:
        """Ids of the items derived from an observation."""
        ...

    def anchors(self, item_ids: Sequence[str] | None = None) -> list[Row]:
        """ANCHORED_TO links (of these items, or all) with the hash each saw."""
        ...

    def items_mentioning(self, entity_ids: Sequence[str], flt: ItemFilter) -> list[tuple[str,
                         str, float]]:
        """(item id, entity id, weight) for items linked to any of the entities."""
        ...

    def mentioned_symbols(self, item_ids: Iterable[str]) -> dict[str, list[Row]]:
        """The symbol entities each item MENTIONS, as entity rows."""
        ...

    def file_counts(self, item_ids: Iterable[str]) -> dict[str, int]:
        """How many files each item is linked to (from the mirror)."""
        ...

    def entity_neighbours(self, entity_ids: Sequence[str], hops: int = 1) -> dict[str, int]:
        """Entities within `hops` code edges (DEFINED_IN, CONTAINS, IMPORTS, TOUCHES), by distance."""
        ...

    def entity_items_neighbours(self, entity_id: str, limit: int = 50,
                                project: str | None = None) -> list[Row]:
        """Entities co-mentioned with this one by items (of one project, when given)."""
        ...

    def project_counts(self, project: str) -> dict[str, Any]:
        """Entities, observations, vectors and links that belong to one project's items."""
        ...

    def export_rows(self) -> dict[str, list[Row]]:
        """Every node and edge, as plain rows (tests compare rebuilt and live stores with it)."""
        ...

    def graph_rows(self, item_ids: Sequence[str] | None = None) -> dict[str, list[Row]]:
        """Nodes and edges for analytics (networkx export); all when item_ids is None."""
        ...

    def anchors_on_paths(self, paths: Sequence[str]) -> list[Row]:
        """ANCHORED_TO edges whose File/Symbol lies in one of the paths, with both hashes."""
        ...

    def anchors_of_items(self, item_ids: Sequence[str] | None) -> list[Row]:
        """ANCHORED_TO edges of the items (all items when None): seen hash vs current entity hash."""
        ...

    def existing_item_ids(self, item_ids: Sequence[str]) -> set[str]:
        """Which of the ids exist as items."""
        ...

    def entity_hashes(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Entity id -> hash, for the ids that exist."""
        ...

    def linked_entity_ids(self, entity_ids: Sequence[str]) -> set[str]:
        """Those of the entities some item mentions or is anchored to."""
        ...

    def mentions_of(self, entity_ids: Sequence[str]) -> list[Row]:
        """MENTIONS edges into the entities (to move them when code is renamed)."""
        ...
