"""The one write path of a store: journal (fsynced) first, then the graph, whose mirror follows.

Every producer (the service, staleness updates, git import, ingest, the code index, the git
hook's lean updater) writes typed ops through a Writer. It also heals and rewrites: catch-up after
a crash between journal and graph, replay, rebuild (which compacts), and the scrub that real
deletion needs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from graphmem import env
from graphmem.errors import (
    GraphmemError,
    IndexPending,
    InvalidInput,
    StoreUnavailable,
    from_os_error,
)
from graphmem.paths import DB_NAME
from graphmem.store import ops
from graphmem.store.base import Store
from graphmem.store.journal import Journal
from graphmem.store.kuzu import KuzuStore, replace_database

REBUILD_MIN_BYTES = 16 * 1024 * 1024  # a fresh Kuzu file with its indexes, measured ≈ 6 MB


class Writer:
    """Writes, replays and rebuilds one store (its directory holds the journal and the graph).

    `guard` runs before every write and raises when it may not go ahead (no room, read-only);
    each journal record names who wrote it (`by`, audit) and the client request it served
    (`request`, a lost reply's fate): `signed` gives one caller's writer, `actor` is the default."""

    store: Store  # set by open(), or during a rebuild the fresh file being filled

    def __new__(cls, directory: Path, journal: Journal, **options: Any) -> Writer:  # noqa: PYI034
        """A project configured for a PostgreSQL server gets a ServerWriter (store/serverlog.py):
        there the server's op log is the journal ('' as `database_url`: the embedded store)."""
        url = options.get("database_url")
        if cls is Writer and (url if url is not None else env.text("database_url")):
            from graphmem.store.serverlog import ServerWriter

            return super().__new__(ServerWriter)
        return super().__new__(cls)

    def __init__(self, directory: Path, journal: Journal, *,
                 guard: Callable[[], None] | None = None, vector_model: str | None = None,
                 engine: str | None = None, database_url: str | None = None,
                 visibility: str | None = None, actor: str = "api") -> None:
        """`vector_model`: the graph's vector search sees only the vectors this model made;
        `engine`: kuzu or ladybug (None: GRAPHMEM_ENGINE, else kuzu); `database_url`: a
        PostgreSQL server holds the store instead (None: GRAPHMEM_DATABASE_URL, else none);
        `visibility`: there, of the items added (None: GRAPHMEM_VISIBILITY, else team)."""
        self.dir = directory
        self.journal = journal
        self.guard = guard
        self.vector_model = vector_model
        self.engine = engine
        self.database_url = (database_url if database_url is not None
                             else env.text("database_url")) or None
        self.visibility = visibility or env.text("visibility") or "team"
        self.actor = actor

    def open(self, read_only: bool = False, path: Path | None = None) -> Store:
        """The graph file (`path`, else the directory's)."""
        self.store = KuzuStore(path or self.dir / DB_NAME, read_only=read_only,
                               vector_model=self.vector_model, engine=self.engine)
        return self.store

    def signed(self, actor: str, request: str | None = None) -> SignedWriter:
        """This writer, for one caller: its writes are recorded as `actor`'s, for `request`."""
        return SignedWriter(self, actor, request)

    def write(self, *changes: ops.Op, by: str | None = None, request: str | None = None) -> None:
        """Journal first (fsync), then the graph: a crash between them is healed by catch-up.

        An op the journal holds but the graph refused is reported as stored, pending."""
        for op in changes:
            if self.guard is not None:
                self.guard()
            try:
                record = self.journal.append(op, by=by or self.actor, req=request)
            except OSError as exc:
                error = from_os_error(exc, f"writing the journal {self.journal.path}")
                raise type(error)(f"{error}; this write was not stored") from exc
            try:
                self.store.apply(op, seq=record["seq"])
            except InvalidInput:
                raise
            except GraphmemError as exc:
                shown = ", ".join(dict.fromkeys(op.written_ids()))[:200]
                raise IndexPending(f"stored, index pending: journal seq {record['seq']}"
                                   f"{' (' + shown + ')' if shown else ''} is kept, but the graph "
                                   f"refused it ({exc}); `graphmem rebuild` indexes it") from exc

    @property
    def behind(self) -> bool:
        """Whether the graph and the journal disagree (records the graph missed, or a journal
        rewritten since): a catch-up must run before anything else writes."""
        return self.journal.last_seq() != self.store.applied_seq

    def catch_up(self, fill: Callable[[], int] | None = None) -> None:
        """Apply journal records the graph missed (a crash between journal and graph); a missed
        compaction marker means a scrub was cut short: the graph is rebuilt instead."""
        applied = self.store.applied_seq
        if self.journal.last_seq() > applied:
            pending = list(self.journal.ops(after=applied))
            if any(isinstance(op, ops.Compact) for _, op in pending):
                self.rebuild(fill)
            else:
                self.replay(pending)

    def replay(self, records: Iterable[tuple[int, ops.Op]], defer_vectors: bool = False) -> int:
        """Apply journal ops in order, joining consecutive ops one engine call can do.

        With `defer_vectors` (a rebuild into an empty file) every vector is held back and
        written by one COPY at the end: one COPY per small batch made rebuilds slow and big."""
        applied = 0
        last_seq = 0
        vectors: dict[str, dict[str, Any]] = {}

        def counted() -> Iterable[tuple[int, ops.Op]]:
            nonlocal applied, last_seq
            for seq, op in records:
                applied += 1
                last_seq = seq
                if defer_vectors and isinstance(op, ops.PutVectors):
                    vectors.update((r["id"], r) for r in op.rows)
                    continue
                if defer_vectors and isinstance(op, ops.DeleteItems):
                    for item_id in op.ids:
                        vectors.pop(item_id, None)
                yield seq, op

        for seq, op in ops.batched(counted()):
            self.store.apply(op, seq=seq)
        if vectors:
            self.store.apply(ops.PutVectors(list(vectors.values())), seq=last_seq)
        return applied

    def rebuild(self, fill: Callable[[], int] | None = None) -> dict[str, int]:
        """Recreate the graph from the journal; the old database is replaced only when done.

        Room is checked while the store is still open: on a full disk, closing it (a
        checkpoint) and opening it again (a schema check) are writes that Kuzu aborts on."""
        if self.guard is not None:
            self.guard()
        _check_rebuild_space(self.dir, self.dir / DB_NAME, self.journal.path)
        self.store.close()
        try:
            return self.rebuild_file(fill)
        finally:
            self.open()

    def rebuild_file(self, fill: Callable[[], int] | None = None) -> dict[str, int]:
        """Replay the journal into a fresh database file, then swap it in (also compacts: Kuzu
        keeps deleted rows' bytes in its file, so real deletion needs a rewrite). `fill` runs
        on the fresh store before the swap (the service gives items without a vector one).

        Refuses to start without room for the new file; a failure leaves only the old one."""
        db = self.dir / DB_NAME
        fresh = self.dir / (DB_NAME + ".new")
        remove_rebuild_files(self.dir)
        _check_rebuild_space(self.dir, db, self.journal.path)
        try:
            self.open(path=fresh)
            try:
                applied = self.replay(self.journal.ops(), defer_vectors=True)
                embedded = fill() if fill is not None else 0
                counts = self.store.counts()
            finally:
                self.store.close()
        except BaseException:
            remove_rebuild_files(self.dir)
            raise
        replace_database(fresh, db)
        return {"ops": applied, "embedded": embedded,
                **{k: v for k, v in counts.items() if k in ("Item", "Entity", "ItemVector")}}

    def scrub(self, ids: AbstractSet[str], fill: Callable[[], int] | None = None,
              by: str | None = None) -> int:
        """Rewrite the journal and the graph without any trace of these ids; returns journal
        records dropped. A crash before the graph's rewrite is finished by the next catch-up."""
        dropped = self.journal.scrub(ids)
        self.journal.append(ops.Compact(), by=by or self.actor)
        self.rebuild(fill)
        return dropped

    def requested(self, request: str) -> dict[str, Any]:
        """Whether the journal holds writes of a client request, and the ids they wrote."""
        written: list[str] = []
        stored = False
        for record in self.journal.records():
            if record.get("req") == request:
                stored = True
                try:
                    written += ops.decode(record).written_ids()
                except InvalidInput:
                    continue
        return {"stored": stored, "ids": [i for i in dict.fromkeys(written) if i]}

    def touching(self, item_id: str) -> Iterable[dict[str, Any]]:
        """Journal records that wrote or changed an item (its audit trail)."""
        return self.journal.touching(item_id)

    def close(self) -> None:
        self.store.close()


class SignedWriter:
    """One caller's view of a shared Writer: writes and scrubs are recorded as its actor's and
    its request's; everything else (the store, rebuild, catch-up) is the Writer's own."""

    def __init__(self, writer: Writer, actor: str, request: str | None) -> None:
        self.writer = writer
        self.actor = actor
        self.request = request

    @property
    def store(self) -> Store:
        return self.writer.store

    def write(self, *changes: ops.Op) -> None:
        self.writer.write(*changes, by=self.actor, request=self.request)

    def scrub(self, ids: AbstractSet[str], fill: Callable[[], int] | None = None) -> int:
        return self.writer.scrub(ids, fill, by=self.actor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)


def _check_rebuild_space(directory: Path, db: Path, journal: Path) -> None:
    """A rebuild writes a second database before it drops the first: make sure it fits."""
    def size(path: Path) -> int:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size if path.exists() else 0

    need = max(size(db) + size(db.with_name(db.name + ".wal")), 2 * size(journal),
               REBUILD_MIN_BYTES)
    free = shutil.disk_usage(directory).free
    if free < need:
        raise StoreUnavailable(f"not enough free space to rebuild in {directory}: about "
                               f"{need / 1e6:.0f} MB needed, {free / 1e6:.0f} MB free; the "
                               "store is unchanged")


def remove_rebuild_files(directory: Path) -> None:
    """What a rebuild writes before its swap (graph.kuzu.new and Kuzu's files beside it)."""
    for path in directory.glob(DB_NAME + ".new*"):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
