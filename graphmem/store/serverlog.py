"""The Writer of a store on a PostgreSQL server, where the server's op log is the journal: each
write appends its op and applies it in one transaction (store/postgres.py), numbered by the op
log, which every machine writing to the server shares. Nothing is journalled locally, so there is
nothing to catch up; a rebuild derives the tables again from the op log inside the database, and
a scrub takes the forgotten ids out of the op log and their rows out of the tables at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInput
from graphmem.store import ops
from graphmem.store.writer import Writer

if TYPE_CHECKING:  # importing postgres.py loads psycopg
    from graphmem.store.postgres import PostgresStore


class ServerWriter(Writer):
    """Writes, rebuilds and scrubs a store on a PostgreSQL server (`database_url`)."""

    store: PostgresStore

    def open(self, read_only: bool = False, path: Path | None = None) -> PostgresStore:
        """The store on the server (`path` has no meaning there)."""
        from graphmem.store.postgres import PostgresStore

        assert self.database_url is not None
        self.store = PostgresStore(self.database_url, read_only=read_only,
                                   vector_model=self.vector_model, visibility=self.visibility)
        return self.store

    def write(self, *changes: ops.Op, by: str | None = None, request: str | None = None) -> None:
        """Each op logged and applied in one transaction: stored whole, or not at all. Use
        counts of a member who may only read are dropped (a ranking hint, as on a full disk)."""
        for op in changes:
            if self.guard is not None:
                self.guard()
            if isinstance(op, ops.BumpItems) and not self.store.may_write:
                continue
            self.store.append(op, by=by or self.actor, req=request)

    @property
    def behind(self) -> bool:
        """Never: the op log and the tables change together."""
        return False

    def catch_up(self, fill: Callable[[], int] | None = None) -> None:
        """Nothing to catch up: no op is logged that the tables did not take."""

    def rebuild(self, fill: Callable[[], int] | None = None) -> dict[str, int]:
        """Derive the tables again from the op log, inside the database; then `fill` (vectors
        of the configured model)."""
        counts = self.store.rebuild()
        embedded = fill() if fill is not None else 0
        return {"ops": counts["ops"], "embedded": embedded,
                **{k: v for k, v in counts.items() if k in ("Item", "Entity", "ItemVector")}}

    def rebuild_file(self, fill: Callable[[], int] | None = None) -> dict[str, int]:
        """The rebuild, before the store is opened for use (a rebuilding open)."""
        self.open()
        try:
            return self.rebuild(fill)
        finally:
            self.store.close()

    def scrub(self, ids: AbstractSet[str], fill: Callable[[], int] | None = None,
              by: str | None = None) -> int:
        """Take these ids out of the op log and their rows out of the tables, in one
        transaction; returns op log records dropped."""
        return self.store.scrub(ids)

    def requested(self, request: str) -> dict[str, Any]:
        """Whether the op log holds writes of a client request, and the ids they wrote."""
        records = self.store.records_of_request(request)
        written = [i for r in records for i in _written(r)]
        return {"stored": bool(records), "ids": [i for i in dict.fromkeys(written) if i]}

    def touching(self, item_id: str) -> Iterable[dict[str, Any]]:
        """Op log records that wrote or changed an item (its audit trail)."""
        return [r for r in self.store.records_naming([item_id]) if item_id in _written(r)]


def _written(record: dict[str, Any]) -> list[str]:
    try:
        return ops.decode(record).written_ids()
    except InvalidInput:
        return []
