"""PostgreSQL backend with pgvector, for a store a team shares: the only module importing psycopg
or pgvector; all SQL lives here and in schema/postgres/ (numbered migrations).

There is no in-memory mirror: every read, searches included, is a query, so a store larger than
one process's memory works and any number of processes share it. Vector search runs on an HNSW
index (cosine), keyword search on a generated tsvector column with a GIN index.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from graphmem.errors import GraphmemError, InvalidInput, StoreUnavailable
from graphmem.store import ops
from graphmem.store.base import ItemFilter, Row
from graphmem.store.hot import BODY_PREFIX, CODE_LINKS, ITEM_LINKS, ROW_FIELDS
from graphmem.store.journal import scrub_record
from graphmem.store.schema import (
    ENTITY_COLUMNS,
    ITEM_COLUMNS,
    LINK_ENDPOINTS,
    LINK_PROPS,
    LINK_TABLES,
    OBSERVATION_COLUMNS,
    OBSERVATION_JSON_COLUMNS,
    typed,
)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "schema" / "postgres"
VECTOR_DIM = 384
NODE_TABLES = {"Item": "items", "Entity": "entities", "Observation": "observations"}
PROP_TYPES = {"weight": "float8", "surface": "text", "hash": "text", "commit": "text",
              "at": "float8"}
# pg_advisory_xact_lock key held while migrating, so two first opens do not both create tables.
MIGRATION_LOCK = 0x67726D656D  # "grmem"
WRITE_LOCK = 0x67726D6577  # "grmew": held by each op log append until it commits
BULK_VECTORS = 1000
BULK_ROWS = 1000  # an upsert of this many rows goes through COPY
ANALYZE_GROWTH = 0.2  # of a table's rows written in bulk since its statistics were taken
WORD_DEPTH = 1  # keyword search reads this many × k postings of each query word
DEFAULT_EF_SEARCH, MAX_EF_SEARCH = 40, 1000  # pgvector's default and largest hnsw.ef_search
ORDERS = ("created_at", "updated_at", "last_used_at", "importance", "hit_count")
GROUPS = ("kind", "status", "source", "branch", "project")
VISIBILITIES = ("team", "private")
WORD_TABLES = ("item_words", "word_counts", "item_counts")  # kept from items by triggers (0006)


def migrations() -> list[tuple[int, str, str]]:
    """(number, name, DDL) of every migration file, in order."""
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        match = re.fullmatch(r"(\d{4})_(\w+)\.sql", path.name)
        if match:
            found.append((int(match[1]), match[2], path.read_text(encoding="utf-8")))
    return found


def shown(url: str) -> str:
    """The URL without its password (for messages)."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1@", url)


def _link(kind: str) -> str:
    if kind not in LINK_ENDPOINTS:
        raise InvalidInput(f"unknown link kind {kind!r}")
    return kind.lower()


def _complete(rows: Iterable[Row], columns: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Rows as tuples of every column, in `columns` order, defaults filled in."""
    return [tuple(typed(row.get(c), d) for c, d in columns.items()) for row in rows]


_PUT_TABLES: dict[type[ops.Op], str] = {
    ops.PutItems: "items", ops.PutEntities: "entities", ops.PutVectors: "item_vectors",
    ops.PutObservations: "observations"}


def _written_table(op: ops.Op) -> str:
    """The table a put op fills ("" for other ops)."""
    if isinstance(op, ops.PutLinks):
        return _link(op.kind)
    return _PUT_TABLES.get(type(op), "")


# Tables triggers fill from another's rows: their statistics are taken with it.
_FILLED_WITH = {"items": ("item_words", "word_counts")}


def _link_prop(row: Row, prop: str) -> Any:
    value = row.get(prop)
    if value is not None:
        return value
    return 1.0 if prop == "weight" else 0.0 if prop == "at" else ""


def _names(columns: Iterable[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f'{prefix}"{c}"' for c in columns)


ITEM_SELECT = _names(ITEM_COLUMNS, "i")
ENTITY_SELECT = _names(ENTITY_COLUMNS, "e")
OBSERVATION_SELECT = _names(OBSERVATION_COLUMNS, "o")
# The links from items to entities, as one relation (source item, target entity, weight).
ITEM_ENTITY_LINKS = ("(SELECT source, target, weight FROM mentions "
                     "UNION ALL SELECT source, target, 1.0 FROM anchored_to)")
# A path's last component, as entities_file_name indexes it (migration 0007).
_FILE_NAME = "regexp_replace({}, '^.*/', '')"
# The items this role sees and their average length in words, as BM25 wants them.
_CORPUS = ("corpus AS (SELECT coalesce(sum(items), 0)::float8 AS documents, "
           "greatest(coalesce(sum(length)::float8 / nullif(sum(items), 0), 1), 1) AS average "
           "FROM item_counts)")
_ANCHOR_KEYS = ("item", "entity", "kind", "path", "qualname", "seen", "current", "commit", "at",
                "status", "reason", "title")
_ANCHOR_SELECT = ('SELECT i.id AS item, e.id AS entity, e.kind, e.path, e.qualname, l.hash AS seen, '
                  'e.hash AS current, l."commit", l.at, i.status, i.stale_reason AS reason, i.title '
                  "FROM anchored_to l JOIN items i ON i.id = l.source "
                  "JOIN entities e ON e.id = l.target")


_FILTER_CLAUSES = {
    "project": "{a}.project = %(f_project)s",
    "kinds": "{a}.kind = ANY(%(f_kinds)s)",
    "statuses": "{a}.status = ANY(%(f_statuses)s)",
    "created_before": "{a}.created_at < %(f_created_before)s",
    "now": "({a}.expire_at = 0 OR {a}.expire_at > %(f_now)s)",
    "ids": "{a}.id = ANY(%(f_ids)s)",
    "session_id": "{a}.session_id = %(f_session_id)s",
}


def _where(flt: ItemFilter, alias: str = "i") -> tuple[str, dict[str, Any]]:
    """The filter as an SQL condition on the items aliased `alias`, with its parameters."""
    clauses, params = flt.conditions(_FILTER_CLAUSES, a=alias)
    return " AND ".join(clauses) or "TRUE", params


def _needles(ids: Iterable[str]) -> list[str]:
    """Each id as a JSON string, as it appears in an op log record's text."""
    return sorted({json.dumps(i, ensure_ascii=False) for i in ids})


def _without(record: Row, gone: set[str]) -> Row | None:
    """The record without rows naming a gone id (None when none is left; the record itself
    when nothing changed): the journal's scrub."""
    cleaned = scrub_record(record, gone)
    return record if cleaned == record else cleaned


def _journal_record(seq: int, record: Row) -> Row:
    """An op log row as the journal writes it: seq, ts, by, req, then the op's fields in their
    order (jsonb keeps its own order of keys)."""
    head: Row = {"seq": seq, **{k: record[k] for k in ("ts", "by", "req") if k in record}}
    cls = ops.OPS.get(record.get("op", ""))
    names = ["op", *(f.name for f in dataclasses.fields(cls))] if cls else []  # type: ignore[arg-type]
    return {**head, **{k: record[k] for k in names if k in record},
            **{k: v for k, v in record.items() if k not in head and k not in names}}


def _observation(row: Row) -> Row:
    row = dict(row)
    for column in OBSERVATION_JSON_COLUMNS:
        try:
            row[column] = json.loads(row.get(column) or "{}")
        except ValueError:
            row[column] = {}
    return row


def _translate(exc: psycopg.Error, url: str) -> GraphmemError:
    text = " ".join(str(exc).split())
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreUnavailable(f"store {shown(url)} is open read-only ({text})")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreUnavailable(f"store {shown(url)}: not allowed ({text})")
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"store {shown(url)} is unavailable ({text})")
    return GraphmemError(f"postgres query failed: {text}")


class PostgresStore:
    """A project's memory in a PostgreSQL database (with the pgvector extension)."""

    engine = "postgres"

    def __init__(self, url: str, *, read_only: bool = False, vector_model: str | None = None,
                 visibility: str = "team") -> None:
        """`url`: a libpq connection string (postgresql://user@host:port/dbname); the schema is
        created or migrated on a read-write open. `vector_model`: vector search sees only the
        vectors this model made (None: all). `visibility`: of the items this store adds,
        'team' (every reader of the project sees them) or 'private' (only their author)."""
        if visibility not in VISIBILITIES:
            raise InvalidInput(f"visibility is one of {', '.join(VISIBILITIES)}, not {visibility!r}")
        self.url = url
        self.read_only = read_only
        self.vector_model = vector_model
        self.visibility = visibility
        self._lock = threading.RLock()  # one connection: a transaction must not take in reads
        self._bulk = False  # a rebuild: the vector index is built once at its end
        self._written: dict[str, int] = {}  # rows bulk ops wrote per table since its ANALYZE
        self._ef_search: tuple[psycopg.Connection[Row], str] | None = None
        self._conn = self._connect()
        who = self._rows("SELECT current_user AS role, "
                         "coalesce(row_security_active('item_vectors'), false) AS rls")[0]
        self.role: str = who["role"]
        self.row_security: bool = who["rls"]  # this role's reads and writes are narrowed
        self._author = (self.role, visibility)  # what items added now record; a rebuild's vary

    # ----- connection and schema ------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Row]:
        try:
            conn = psycopg.connect(self.url, autocommit=True, row_factory=dict_row)
        except psycopg.Error as exc:
            raise _translate(exc, self.url) from exc
        try:
            if self.read_only:
                found = conn.execute("SELECT to_regclass('schema_migrations') AS t").fetchone()
                if found is None or found["t"] is None:
                    raise StoreUnavailable(f"store {shown(self.url)} holds no graphmem schema yet; "
                                           "open it read-write once to create it")
                conn.execute("SET default_transaction_read_only = on")
            else:
                self._migrate(conn)
            register_vector(conn)
        except psycopg.Error as exc:
            conn.close()
            raise _translate(exc, self.url) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: psycopg.Connection[Row]) -> None:
        """Apply the migrations not yet recorded (a member of a team, who may not create
        tables, opens an up-to-date schema without trying)."""
        if conn.execute("SELECT to_regclass('schema_migrations') AS t").fetchone()["t"]:  # type: ignore[index]
            done = {r["version"] for r in conn.execute("SELECT version FROM schema_migrations")}
            if {number for number, _, _ in migrations()} <= done:
                return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                         "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
            done = {r["version"] for r in conn.execute("SELECT version FROM schema_migrations")}
            for number, name, ddl in migrations():
                if number not in done:
                    conn.execute(ddl)  # type: ignore[arg-type]  # several statements, no parameters
                    conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                                 (number, name))

    def _connection(self) -> psycopg.Connection[Row]:
        """The connection, opened again when the server dropped it."""
        if self._conn.closed or self._conn.broken:
            self._conn = self._connect()
        return self._conn

    def _rows(self, query: str, params: dict[str, Any] | Sequence[Any] | None = None) -> list[Row]:
        with self._lock:
            try:
                return self._connection().execute(query, params).fetchall()  # type: ignore[arg-type]
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc

    def _exec(self, query: str | sql.Composable, params: dict[str, Any] | Sequence[Any] | None = None) -> None:
        with self._lock:
            try:
                self._connection().execute(query, params)  # type: ignore[arg-type]
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc

    def _exec_many(self, query: str | sql.Composable, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._lock:
            try:
                with self._connection().cursor() as cursor:
                    cursor.executemany(query, rows)  # type: ignore[arg-type]
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc

    def _one(self, query: str, params: dict[str, Any] | Sequence[Any] | None = None) -> Any:
        row = self._rows(query, params)[0]
        return next(iter(row.values()))

    @property
    def schema_version(self) -> int:
        return int(self._one("SELECT coalesce(max(version), 0) FROM schema_migrations"))

    def close(self) -> None:
        """Release the connection."""
        with self._lock:
            self._conn.close()

    def check(self) -> None:
        """Read every column of every table (the server reports a damaged page as an error)."""
        tables = ["meta", "item_vectors", *NODE_TABLES.values(), *(_link(t) for t in LINK_TABLES),
                  *WORD_TABLES]
        for table in tables:
            self._rows(f"SELECT count(*), max(hashtext(t::text)) FROM {table} t")

    # ----- the op log: the journal of a store on a server -----------------------------------------
    def apply(self, op: ops.Op, seq: int | None = None) -> None:
        """Log one op and apply it, in one transaction (`seq`: the op log's number for it, past
        the last one; None: the next)."""
        self.append(op, seq=seq)

    def append(self, op: ops.Op, *, seq: int | None = None, by: str = "",
               req: str | None = None) -> int:
        """Log one op (`by`: the actor, `req`: the client request, as the journal records them)
        and apply it, in one transaction; returns its sequence number in the op log.

        Appends take a lock that commits release: the op log's order is the order in which
        the tables changed, so a rebuild from it gives the same tables."""
        self._handler(op)
        record = {"ts": time.time(), "by": by, **({"req": req} if req else {}), **op.record()}
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    seq = self._append_locked(op, record, seq)
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc
            self._analyze_grown()
        return seq

    def _append_locked(self, op: ops.Op, record: Row, seq: int | None) -> int:
        """Log and apply one op (in the caller's transaction, the write lock held); 0 when
        row-level security left nothing of it."""
        reached = self._reachable(op)
        if reached is None:
            return 0
        if reached is not op:
            meta = {k: record[k] for k in ops.RECORD_META if k in record}
            op, record = reached, {**meta, **reached.record()}
        seq = self._log({k: v for k, v in record.items() if k not in ("seq", "crc")}, seq)
        self._handler(op)(op)
        rows, table = len(getattr(op, "rows", ())), _written_table(op)
        if rows >= BULK_ROWS and table:
            self._written[table] = self._written.get(table, 0) + rows
        return seq

    def _analyze_grown(self) -> None:
        """Fresh planner statistics for the tables bulk writes grew by ANALYZE_GROWTH or more.
        Autovacuum gets there within a minute or so; until then a search right after a
        migration was planned on the empty tables' statistics (an entity lookup by file name
        read all 56k symbols instead of its index: 45 ms instead of under 1 ms at 100k items)."""
        if not self._written:
            return
        sizes = {r["relname"]: max(float(r["reltuples"]), 0.0) for r in self._rows(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)", (list(self._written),))}
        for table, written in list(self._written.items()):
            if written < ANALYZE_GROWTH * sizes.get(table, 0.0):
                continue
            del self._written[table]
            try:  # the owner's right; a member's ANALYZE only warns, and autovacuum still runs
                self._connection().execute(sql.SQL("ANALYZE {t}").format(
                    t=sql.SQL(", ").join(map(sql.Identifier, (table, *_FILLED_WITH.get(table, ()))))))
            except psycopg.Error:
                continue

    def load(self, records: Iterable[Row]) -> int:
        """Append journal records moved here from an embedded store, in one transaction: each is
        logged with its time, actor and request and applied; into an empty op log with their
        sequence numbers too. Returns records appended."""
        loaded = 0
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    keep = self.applied_seq == 0
                    with self._vector_index_deferred():
                        for record in records:
                            seq = self._append_locked(ops.decode(record), record,
                                                      record["seq"] if keep else None)
                            loaded += seq > 0
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc
            self._analyze_grown()
        return loaded

    @contextlib.contextmanager
    def _vector_index_deferred(self) -> Iterator[None]:
        """Many vectors written in the caller's transaction: the HNSW index is dropped first and
        built once at the end (building it costs a fraction of inserting into it)."""
        index = self._one("SELECT pg_get_indexdef('item_vectors_hnsw'::regclass)")
        self._exec("DROP INDEX item_vectors_hnsw")
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
        self._exec(index)

    def _reachable(self, op: ops.Op) -> ops.Op | None:
        """The op without what row-level security keeps this role from changing (None when
        nothing is left), so that the op log records what the op changed and a rebuild, which
        the tables' owner runs, changes the same. Ops that add rows are not narrowed: the
        database refuses them whole."""
        if not self.row_security:
            return op
        if isinstance(op, ops.UpdateItems | ops.SetItemStatus | ops.BumpItems | ops.DeleteItems):
            return op.without(set(op.written_ids()) - self._writable("items", op.written_ids()))
        if isinstance(op, ops.DeleteObservations):
            return op.without(set(op.ids) - self._writable("observations", op.ids))
        if isinstance(op, ops.PutLinks) and LINK_ENDPOINTS[op.kind][0] == "Item":
            sources = self._writable("items", [r["source"] for r in op.rows])
            target_table = NODE_TABLES[LINK_ENDPOINTS[op.kind][1]]
            targets = {r["id"] for r in self._rows(f"SELECT id FROM {target_table} WHERE id = ANY(%s)",
                                                    ([r["target"] for r in op.rows],))}
            rows = [r for r in op.rows if r["source"] in sources and r["target"] in targets]
            return None if not rows else op if len(rows) == len(op.rows) else ops.PutLinks(op.kind, rows)
        if isinstance(op, ops.DeleteLinks) and LINK_ENDPOINTS[op.kind][0] == "Item":
            return op.without(set(op.sources) - self._writable("items", op.sources))
        return op

    def _writable(self, table: str, ids: Iterable[str]) -> set[str]:
        """Those of the ids of items (or observations) this role may change."""
        check = ("graphmem_can_write(project)" if table == "items"
                 else "author = current_user AND graphmem_can_write(project)")
        return {r["id"] for r in self._rows(f"SELECT id FROM {table} WHERE id = ANY(%s) AND {check}",
                                            (sorted(set(ids)),))}

    def _handler(self, op: ops.Op) -> Any:
        name = APPLIERS.get(type(op))
        if name is None:
            raise InvalidInput(f"the postgres store has no applier for {type(op).__name__}")
        if self.read_only:
            raise StoreUnavailable(f"store {shown(self.url)} is open read-only")
        return getattr(self, name)

    def _log(self, record: Row, seq: int | None) -> int:
        """Append one op log row as this role (in the caller's transaction, through
        graphmem_log: it checks the role may make every change the op names); its sequence
        number."""
        if seq is not None and seq <= (last := self.applied_seq):
            raise InvalidInput(f"op log sequence number {seq} is not past the last one, {last}")
        return int(self._one("SELECT graphmem_log(%s, %s, %s)",
                             (Jsonb(record), self.visibility, seq)))

    @property
    def member(self) -> bool:
        """Whether this role was ever granted a project here (else it may read no table)."""
        return bool(self._one("SELECT has_table_privilege('op_log', 'SELECT')"))

    @property
    def may_write(self) -> bool:
        """Whether this role may write at all (a member granted only 'read' may not)."""
        return not self.read_only and bool(self._one("SELECT has_table_privilege('items', 'INSERT')"))

    def grant(self, member: str, project: str, access: str) -> None:
        """Let a role (a user, or a group role) read or write a project (run as the tables'
        owner); the database's row-level security enforces it."""
        if access not in ("read", "write"):
            raise InvalidInput(f"access is read or write, not {access!r}")
        self._exec("SELECT graphmem_grant(%s, %s, %s)", (member, project, access))

    def revoke(self, member: str, project: str) -> None:
        """Take a role's access to a project away."""
        self._exec("SELECT graphmem_revoke(%s, %s)", (member, project))

    def grants(self) -> list[Row]:
        """{project, member, access} of every grant this role may see."""
        return self._rows("SELECT project, member::text AS member, access FROM project_grants "
                          "ORDER BY project, member")

    @property
    def applied_seq(self) -> int:
        """The sequence number of the last op in the op log."""
        return int(self._one("SELECT coalesce(max(seq), 0) FROM op_log"))

    def records(self, after: int = 0) -> list[Row]:
        """Op log rows after a sequence number as the journal records them ({seq, ts, by,
        req?, op, ...}), in order."""
        rows = self._rows("SELECT seq, record FROM op_log WHERE seq > %s ORDER BY seq", (after,))
        return [_journal_record(r["seq"], r["record"]) for r in rows]

    def log_size(self) -> tuple[int, int]:
        """(records, last sequence number) of the op log this role sees."""
        row = self._rows("SELECT count(*) AS n, coalesce(max(seq), 0) AS last FROM op_log")[0]
        return int(row["n"]), int(row["last"])

    def records_naming(self, ids: Iterable[str]) -> list[Row]:
        """Op log records whose text holds one of these ids as a JSON string, in order."""
        rows = self._rows("SELECT seq, record FROM op_log WHERE EXISTS (SELECT 1 FROM "
                          "unnest(%s::text[]) n WHERE strpos(record::text, n) > 0) ORDER BY seq",
                          (_needles(ids),))
        return [_journal_record(r["seq"], r["record"]) for r in rows]

    def records_of_request(self, request: str) -> list[Row]:
        """Op log records written for one client request, in order."""
        rows = self._rows("SELECT seq, record FROM op_log WHERE record ->> 'req' = %s ORDER BY seq",
                          (request,))
        return [_journal_record(r["seq"], r["record"]) for r in rows]

    def rebuild(self) -> dict[str, int]:
        """Derive every table again from the op log, in one transaction (readers see the old
        tables until it commits); returns ops replayed and rows per table."""
        if self.read_only:
            raise StoreUnavailable(f"store {shown(self.url)} is open read-only")
        tables = ["item_vectors", *(_link(t) for t in LINK_TABLES), *NODE_TABLES.values()]
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    conn.execute(f"TRUNCATE {', '.join(tables)}")
                    replayed = self._replay_log()
                counts = self.counts()
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc
        return {"ops": replayed, **counts}

    def _replay_log(self) -> int:
        """Apply every op log row in order, consecutive ops joined where they can be (in the
        caller's transaction)."""
        replayed = 0
        with self._vector_index_deferred(), \
                self._conn.cursor(name="graphmem_replay") as cursor:
            cursor.itersize = 500
            cursor.execute("SELECT seq, record, applied_by, visibility FROM op_log ORDER BY seq")

            def logged(run: Iterable[Row]) -> Iterable[tuple[int, ops.Op]]:
                nonlocal replayed
                for row in run:
                    replayed += 1
                    yield row["seq"], ops.decode(row["record"])

            try:  # ops of one author are joined; each run adds items as its author wrote them
                for author, run in itertools.groupby(
                        cursor, key=lambda r: (r["applied_by"], r["visibility"])):
                    self._author = author
                    for _, op in ops.batched(logged(run)):
                        self._handler(op)(op)
            finally:
                self._author = (self.role, self.visibility)
        return replayed

    def scrub(self, ids: Iterable[str]) -> int:
        """Take every trace of these ids out of the op log (each op without them, as the journal's
        scrub does; an op left empty is dropped) and delete their rows, in one transaction;
        returns op log records dropped."""
        if self.read_only:
            raise StoreUnavailable(f"store {shown(self.url)} is open read-only")
        gone = set(ids)
        dropped = 0
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    for record in self.records_naming(gone):
                        seq = record.pop("seq")
                        cleaned = _without(record, gone)
                        if cleaned is None:
                            self._exec("SELECT graphmem_relog(%s, NULL)", (seq,))
                            dropped += 1
                        elif cleaned is not record:
                            self._exec("SELECT graphmem_relog(%s, %s)", (seq, Jsonb(cleaned)))
                    every = sorted(gone)
                    for table in ("item_vectors", *NODE_TABLES.values()):
                        self._exec(f"DELETE FROM {table} WHERE id = ANY(%s)", (every,))
                    left = int(self._one("SELECT graphmem_traces(%s)", (every,)))
                    if left:
                        raise InvalidInput(
                            f"{left} op log records or rows of other members name what this "
                            f"forget deletes, and {self.role} may not change them: nothing "
                            "was deleted; the tables' owner can forget it")
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc
        return dropped

    def _upsert(self, table: str, columns: dict[str, Any], rows: Sequence[Row],
                fixed: dict[str, Any]) -> None:
        """Rows inserted, or their columns updated; `fixed` columns are set when a row is added
        and kept after (who wrote it first)."""
        updates = sql.SQL(", ").join(sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c))
                                     for c in columns if c != "id")
        names = [*columns, *fixed]
        cols = sql.SQL(", ").join(map(sql.Identifier, names))
        values = [(*row, *fixed.values()) for row in _complete(rows, columns)]
        if len(values) < BULK_ROWS:
            self._exec_many(sql.SQL("INSERT INTO {t} ({cols}) VALUES ({values}) ON CONFLICT (id) "
                                    "DO UPDATE SET {updates}").format(
                t=sql.Identifier(table), cols=cols,
                values=sql.SQL(", ").join([sql.Placeholder()] * len(names)), updates=updates),
                values)
            return
        # Many rows: COPY into a staging table, then one upsert from it. A row id twice keeps
        # its first place and its last values, as the row-at-a-time upsert does.
        last = {row[0]: row for row in values}
        stage = sql.Identifier(f"graphmem_stage_{table}")
        with self._lock:
            try:
                conn = self._connection()
                conn.execute(sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {s} AS SELECT {cols} FROM {t} "
                                     "WITH NO DATA").format(s=stage, cols=cols,
                                                            t=sql.Identifier(table)))
                conn.execute(sql.SQL("TRUNCATE {s}").format(s=stage))
                with conn.cursor() as cursor, cursor.copy(sql.SQL("COPY {s} ({cols}) FROM STDIN").format(
                        s=stage, cols=cols)) as copy:
                    for row in last.values():
                        copy.write_row(row)
                conn.execute(sql.SQL("INSERT INTO {t} ({cols}) SELECT {cols} FROM {s} "
                                     "ON CONFLICT (id) DO UPDATE SET {updates}").format(
                    t=sql.Identifier(table), cols=cols, s=stage, updates=updates))
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc

    def _op_put_items(self, op: ops.PutItems) -> None:
        author, visibility = self._author
        self._upsert("items", ITEM_COLUMNS, op.rows, {"author": author, "visibility": visibility})

    def _op_update_items(self, op: ops.UpdateItems) -> None:
        fields = op.fields
        if not fields:
            return
        query = sql.SQL("UPDATE items SET {sets} WHERE id = ANY(%s)").format(
            sets=sql.SQL(", ").join(sql.SQL("{c} = %s").format(c=sql.Identifier(f)) for f in fields))
        self._exec(query, [*(typed(v, ITEM_COLUMNS[f]) for f, v in fields.items()), list(op.ids)])

    def _op_set_item_status(self, op: ops.SetItemStatus) -> None:
        """Rows of {id, status, stale_reason}: only those two columns are written."""
        self._exec_many("UPDATE items SET status = %s, stale_reason = %s WHERE id = %s",
                        [(r["status"], r.get("stale_reason") or "", r["id"]) for r in op.rows])

    def _op_bump_items(self, op: ops.BumpItems) -> None:
        """Use counts: rows of {id, n, at}."""
        self._exec_many("UPDATE items SET hit_count = hit_count + %s, last_used_at = %s WHERE id = %s",
                        [(int(r["n"]), float(r["at"]), r["id"]) for r in op.rows])

    def _op_compact(self, op: ops.Compact) -> None:
        """Marker after a journal scrub: nothing changes here (the op log records it)."""

    def _op_delete_items(self, op: ops.DeleteItems) -> None:
        ids = list(op.ids)
        self._exec("DELETE FROM item_vectors WHERE id = ANY(%s)", (ids,))
        self._exec("DELETE FROM items WHERE id = ANY(%s)", (ids,))

    def _op_put_vectors(self, op: ops.PutVectors) -> None:
        """The old vectors deleted, the new ones written by one binary COPY (an id twice fails
        the COPY, and with it the op).

        A batch of at least BULK_VECTORS that is at least as large as the table (a rebuild, a
        migration) drops the HNSW index and builds it again after the COPY: inserting into the
        index costs ~5 ms a vector, building it ~0.7 ms. Readers wait for that transaction."""
        self._exec("DELETE FROM item_vectors WHERE id = ANY(%s)", ([r["id"] for r in op.rows],))
        rebuild = None
        if not self._bulk and len(op.rows) >= BULK_VECTORS and len(op.rows) >= int(
                self._one("SELECT count(*) FROM item_vectors")):
            rebuild = self._one("SELECT pg_get_indexdef('item_vectors_hnsw'::regclass)")
            self._exec("DROP INDEX item_vectors_hnsw")
        rows = [(r["id"], np.asarray(r["vec"], dtype=np.float32), r.get("model") or "",
                 r.get("text_hash") or "") for r in op.rows]
        if self.row_security:  # COPY is refused where row-level security applies
            self._exec_many("INSERT INTO item_vectors (id, vec, model, text_hash) "
                            "VALUES (%s, %s, %s, %s)", rows)
        else:
            with self._connection().cursor() as cursor, cursor.copy(
                    "COPY item_vectors (id, vec, model, text_hash) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["text", "vector", "text", "text"])
                for row in rows:
                    copy.write_row(row)
        if rebuild is not None:
            self._exec(rebuild)

    def _op_put_entities(self, op: ops.PutEntities) -> None:
        self._upsert("entities", ENTITY_COLUMNS, op.rows, {})

    def _op_delete_entities(self, op: ops.DeleteEntities) -> None:
        self._exec("DELETE FROM entities WHERE id = ANY(%s)", (list(op.ids),))

    def _op_put_observations(self, op: ops.PutObservations) -> None:
        """JSON keys sorted: the op log's jsonb keeps its own order of keys, so a
        rebuild writes the same text."""
        self._upsert("observations", OBSERVATION_COLUMNS,
                     [{**r, **{c: json.dumps(r.get(c) or {}, sort_keys=True)
                               for c in OBSERVATION_JSON_COLUMNS}}
                      for r in op.rows],
                     {"author": self._author[0]})

    def _op_delete_observations(self, op: ops.DeleteObservations) -> None:
        self._exec("DELETE FROM observations WHERE id = ANY(%s)", (list(op.ids),))

    def _op_put_links(self, op: ops.PutLinks) -> None:
        """Links whose both ends exist, one per (source, target): a later row for the pair
        replaces its properties (replay writes no second link)."""
        table = _link(op.kind)
        source_table, target_table = (NODE_TABLES[end] for end in LINK_ENDPOINTS[op.kind])
        props = LINK_PROPS.get(op.kind, ())
        last = {(r["source"], r["target"]): r for r in op.rows}
        if not last:
            return
        columns = ("source", "target", *props)
        types = ("text", "text", *(PROP_TYPES[p] for p in props))
        arrays = [[s for s, _ in last], [t for _, t in last],
                  *([typed(_link_prop(r, p), 0.0 if PROP_TYPES[p] == "float8" else "")
                     for r in last.values()] for p in props)]
        unnest = ", ".join(f"%s::{t}[]" for t in types)
        conflict = ("DO UPDATE SET " + ", ".join(f'"{p}" = EXCLUDED."{p}"' for p in props)
                    if props else "DO NOTHING")
        self._exec(f"INSERT INTO {table} ({_names(columns)}) SELECT {_names(columns, 'r')} "
                   f"FROM unnest({unnest}) AS r({_names(columns)}) "
                   f"JOIN {source_table} a ON a.id = r.source JOIN {target_table} b ON b.id = r.target "
                   f"ON CONFLICT (source, target) {conflict}", arrays)

    def _op_delete_links(self, op: ops.DeleteLinks) -> None:
        table = _link(op.kind)
        if op.targets is None:
            self._exec(f"DELETE FROM {table} WHERE source = ANY(%s)", (list(op.sources),))
            return
        self._exec(f"DELETE FROM {table} l USING unnest(%s::text[], %s::text[]) AS r(s, t) "
                   "WHERE l.source = r.s AND l.target = r.t", (list(op.sources), list(op.targets)))

    # ----- items ------------------------------------------------------------------------------
    def get_items(self, ids: Sequence[str]) -> list[Row]:
        if not ids:
            return []
        rows = self._rows(f"SELECT {ITEM_SELECT} FROM items i WHERE i.id = ANY(%s)", (list(ids),))
        by_id = {r["id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_items(self, flt: ItemFilter, limit: int = 100, order: str = "created_at",
                   offset: int = 0) -> list[Row]:
        if order not in ORDERS:
            raise InvalidInput(f"cannot order by {order!r}")
        where, params = _where(flt)
        return self._rows(f"SELECT {ITEM_SELECT} FROM items i WHERE {where} "
                          f"ORDER BY i.{order} DESC, i.id LIMIT {int(limit)} OFFSET {int(offset)}",
                          params)

    def count_items(self, flt: ItemFilter) -> int:
        where, params = _where(flt)
        return int(self._one(f"SELECT count(*) FROM items i WHERE {where}", params))

    def counts(self) -> dict[str, int]:
        tables = {"Item": "items", "ItemVector": "item_vectors", "Entity": "entities",
                  "Observation": "observations", **{t: _link(t) for t in LINK_TABLES}}
        row = self._rows("SELECT " + ", ".join(f"(SELECT count(*) FROM {table}) AS \"{name}\""
                                               for name, table in tables.items()))[0]
        return {name: int(row[name]) for name in tables}

    def group_counts(self, field: str, project: str | None = None) -> dict[str, int]:
        if field not in GROUPS:
            raise InvalidInput(f"cannot group by {field!r}")
        where, params = _where(ItemFilter(project=project, statuses=None))
        rows = self._rows(f"SELECT i.{field} AS value, count(*) AS n FROM items i WHERE {where} "
                          f"GROUP BY i.{field}", params)
        return {r["value"]: int(r["n"]) for r in rows}

    # ----- search -------------------------------------------------------------------------------
    def keyword_search(self, query: str, k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """Items holding any of the query's words (graphmem_words: English stemming, split at
        punctuation), best first by BM25 as the embedded store ranks them: IDF and average
        length over the items this role sees.

        Bounded: each word's WORD_DEPTH × k best visible postings by impact are read from
        item_words (migration 0006), and only the items found so are scored, on all their query
        words."""
        if not query.strip() or k <= 0:
            return []
        where, params = _where(flt)
        mine = "p.project = %(f_project)s AND " if flt.project is not None else ""
        rows = self._rows(
            f"WITH {_CORPUS}, words AS (SELECT DISTINCT lexeme AS word "
            "  FROM unnest(graphmem_words(%(query)s))), "
            "weights AS (SELECT w.word, graphmem_idf(coalesce(sum(c.items), 0), corpus.documents) "
            "  AS idf FROM words w CROSS JOIN corpus LEFT JOIN word_counts c ON c.word = w.word "
            "  GROUP BY w.word, corpus.documents), "
            "found AS (SELECT DISTINCT best.item, best.ord FROM words w CROSS JOIN LATERAL ("
            "  SELECT p.item, p.ord FROM item_words p JOIN items i ON i.id = p.item "
            f"  WHERE {mine}p.word = w.word AND {where} ORDER BY p.impact DESC, p.ord "
            "  LIMIT %(depth)s) best) "
            "SELECT f.item AS id, sum(weights.idf * graphmem_impact(p.tf, p.length, "
            "  corpus.average)) AS score FROM found f JOIN item_words p ON p.item = f.item "
            "  JOIN weights ON weights.word = p.word, corpus "
            f"GROUP BY f.ord, f.item ORDER BY score DESC, f.ord LIMIT {int(k)}",
            {**params, "query": query, "depth": WORD_DEPTH * int(k)})
        return [(r["id"], float(r["score"])) for r in rows]

    def term_weights(self, text: str) -> dict[str, float]:
        """The text's stemmed words, each with its BM25 IDF over the items this role sees."""
        if not text.strip():
            return {}
        rows = self._rows(
            f"WITH {_CORPUS} SELECT t.lexeme, graphmem_idf(coalesce((SELECT sum(c.items) "
            "FROM word_counts c WHERE c.word = t.lexeme), 0), corpus.documents) AS idf "
            "FROM unnest(graphmem_words(%(text)s)) t, corpus ORDER BY t.positions[1]",
            {"text": text})
        return {r["lexeme"]: float(r["idf"]) for r in rows}

    def vector_search(self, vector: Sequence[float], k: int, flt: ItemFilter) -> list[tuple[str,
                      float]]:
        """Nearest visible items by cosine similarity, on the HNSW index; when the index yields
        fewer than k (a filter that lets few items through), exactly over the visible items."""
        if k <= 0:
            return []
        query, params = self._nearest(vector, k, flt)
        ef_search = str(min(MAX_EF_SEARCH, max(DEFAULT_EF_SEARCH, k)))
        with self._lock:  # the index yields at most hnsw.ef_search rows: as many as asked for
            try:
                conn = self._connection()
                if self._ef_search != (conn, ef_search):  # set once per connection and value
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (ef_search,))
                    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                    self._ef_search = (conn, ef_search) if idle else None  # a rollback undoes it
                rows = conn.execute(query, params).fetchall()  # type: ignore[arg-type]
            except psycopg.Error as exc:
                raise _translate(exc, self.url) from exc
        if len(rows) < k:
            query, params = self._nearest(vector, k, flt, exact=True)
            rows = self._rows(query, params)
        return [(r["id"], float(r["score"])) for r in rows]

    def _nearest(self, vector: Sequence[float], k: int, flt: ItemFilter,
                 exact: bool = False) -> tuple[str, dict[str, Any]]:
        """The nearest-vectors query: on the HNSW index, or `exact` over the visible items."""
        where, params = _where(flt)
        params = {**params, "q": np.asarray(vector, dtype=np.float32)}
        if self.vector_model is not None:
            where += " AND v.model = %(model)s"
            params["model"] = self.vector_model
        visible = f"FROM item_vectors v JOIN items i ON i.id = v.id WHERE {where}"
        if exact:  # MATERIALIZED: distances computed for the visible items, no index scan
            query = (f"WITH d AS MATERIALIZED (SELECT v.id, v.vec <=> %(q)s AS distance {visible}) "
                     f"SELECT id, 1 - distance AS score FROM d ORDER BY distance, id LIMIT {int(k)}")
        else:
            query = (f"SELECT v.id, 1 - (v.vec <=> %(q)s) AS score {visible} "
                     f"ORDER BY v.vec <=> %(q)s LIMIT {int(k)}")
        return query, params

    def count_visible(self, flt: ItemFilter) -> int:
        """How many items the filter lets through; a whole project's from item_counts, which
        the writes keep (a search reads it for its timeline: no count(*) of the project)."""
        if flt.terms() == [("project", flt.project)]:
            return int(self._one("SELECT coalesce(sum(items), 0) FROM item_counts WHERE project = %s",
                                 (flt.project,)))
        return self.count_items(flt)

    def visible_ids(self, ids: Sequence[str], flt: ItemFilter) -> list[str]:
        """The ids the filter lets through, in the given order."""
        if not ids:
            return []
        where, params = _where(flt)
        rows = self._rows(f"SELECT i.id FROM items i WHERE i.id = ANY(%(ids)s) AND {where}",
                          {**params, "ids": list(ids)})
        found = {r["id"] for r in rows}
        return [i for i in ids if i in found]

    def item_rows(self, ids: Sequence[str]) -> dict[str, Row]:
        """Items as ranking reads them and search shows them, by id: bodies cut to their first
        BODY_PREFIX characters (`body_cut` says which were)."""
        if not ids:
            return {}
        fields = ("id", "project", "kind", "status", "session_id", "created_at", "expire_at",
                  *ROW_FIELDS)
        rows = self._rows(f"SELECT {_names(fields, 'i')}, left(i.body, {BODY_PREFIX}) AS body, "
                          f"length(i.body) > {BODY_PREFIX} AS body_cut FROM items i "
                          "WHERE i.id = ANY(%s)", (list(ids),))
        by_id = {r["id"]: r for r in rows}
        return {i: by_id[i] for i in ids if i in by_id}

    def prepare(self) -> None:
        """Nothing to build: every read is a query."""

    # ----- vectors ------------------------------------------------------------------------------
    def vectors(self, ids: Sequence[str]) -> dict[str, Row]:
        rows = self._rows("SELECT id, vec, model, text_hash FROM item_vectors WHERE id = ANY(%s)",
                          (list(ids),))
        return {r["id"]: {"vec": r["vec"].to_list(), "model": r["model"],
                          "text_hash": r["text_hash"]} for r in rows}

    def vector_stamps(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(model, text_hash) of these items' vectors: what made each and from which text."""
        rows = self._rows("SELECT id, model, text_hash FROM item_vectors WHERE id = ANY(%s)",
                          (list(ids),))
        return {r["id"]: (r["model"], r["text_hash"]) for r in rows}

    def items_without_vectors(self) -> list[str]:
        """Ids of items that have no vector (written with embedding off, or a write cut short)."""
        rows = self._rows("SELECT i.id FROM items i WHERE NOT EXISTS "
                          "(SELECT 1 FROM item_vectors v WHERE v.id = i.id) ORDER BY i.id")
        return [r["id"] for r in rows]

    def item_ids(self) -> list[str]:
        return [r["id"] for r in self._rows("SELECT id FROM items ORDER BY id")]

    def vectors_not_of(self, model: str) -> dict[str, str]:
        """{item id: model} of the vectors another model made."""
        rows = self._rows("SELECT id, model FROM item_vectors WHERE model <> %s", (model,))
        return {r["id"]: r["model"] for r in rows}

    # ----- entities -----------------------------------------------------------------------------
    def get_entities(self, ids: Sequence[str]) -> list[Row]:
        rows = self._rows(f"SELECT {ENTITY_SELECT} FROM entities e WHERE e.id = ANY(%s)",
                          (list(ids),))
        by_id = {r["id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def find_entities(self, *, names: Iterable[str] = (), kinds: Sequence[str] | None = None,
                      path_suffixes: Iterable[str] = ()) -> list[Row]:
        """Code entities (files, symbols) whose name/qualname equals one of `names` or whose
        path is a suffix or ends with '/' and the suffix."""
        wanted = [n for n in names if n]
        suffixes = [s for s in path_suffixes if s and not s.endswith("/")]
        if not wanted and not suffixes:
            return []
        code = "e.kind IN ('file', 'symbol')" + (" AND e.kind = ANY(%(kinds)s)" if kinds else "")
        found = []  # each part on its own index (an OR of them read every entity)
        if wanted:
            found.append(f"SELECT {ENTITY_SELECT} FROM entities e WHERE {code} "
                         "AND (e.name = ANY(%(names)s) OR e.qualname = ANY(%(names)s))")
        if suffixes:
            found.append(f"SELECT {ENTITY_SELECT} FROM unnest(%(suffixes)s::text[]) s "
                         f"JOIN entities e ON {_FILE_NAME.format('e.path')} = "
                         f"{_FILE_NAME.format('s')} AND e.path <> '' WHERE {code} "
                         "AND (e.path = s OR right(e.path, length(s) + 1) = '/' || s)")
        return self._rows(f"SELECT DISTINCT ON (id) * FROM ({' UNION ALL '.join(found)}) e "
                          "ORDER BY id", {"kinds": list(kinds or ()), "names": wanted,
                                          "suffixes": suffixes})

    def code_entities(self, ids: Sequence[str]) -> list[Row]:
        """File and symbol entities by id."""
        if not ids:
            return []
        rows = self._rows(f"SELECT {ENTITY_SELECT} FROM entities e WHERE e.id = ANY(%s) "
                          "AND e.kind IN ('file', 'symbol')", (list(ids),))
        by_id = {r["id"]: r for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def entities_by_kind(self, kind: str, limit: int = 100_000) -> list[Row]:
        return self._rows(f"SELECT {ENTITY_SELECT} FROM entities e WHERE e.kind = %s "
                          f"ORDER BY e.id LIMIT {int(limit)}", (kind,))

    def entity_hashes(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Entity id -> hash, for the ids that exist."""
        rows = self._rows("SELECT id, hash FROM entities WHERE id = ANY(%s)", (list(entity_ids),))
        return {r["id"]: r["hash"] for r in rows}

    # ----- links ----------------------------------------------------------------------------------
    def item_links(self, item_id: str) -> list[Row]:
        """Edges of an item with their targets: its entities, what it supersedes and what
        supersedes it (SUPERSEDED_BY), with the edges' properties."""
        out: list[Row] = []
        for kind in ITEM_LINKS:
            props = LINK_PROPS[kind]
            rows = self._rows(f"SELECT {ENTITY_SELECT}, {_names(props, 'l')} FROM {_link(kind)} l "
                              "JOIN entities e ON e.id = l.target WHERE l.source = %s "
                              "ORDER BY e.id", (item_id,))
            for r in rows:
                out.append({"kind": kind, "entity": {c: r[c] for c in ENTITY_COLUMNS},
                            **{p: r[p] for p in props}})
        for kind, mine, other in (("SUPERSEDES", "source", "target"),
                                  ("SUPERSEDED_BY", "target", "source")):
            for r in self._rows(f"SELECT {other} AS other, at, surface FROM supersedes "
                                f"WHERE {mine} = %s ORDER BY {other}", (item_id,)):
                out.append({"kind": kind, "target": r["other"], "at": r["at"],
                            "surface": r["surface"]})
        return out

    def items_mentioning(self, entity_ids: Sequence[str], flt: ItemFilter) -> list[tuple[str,
                         str, float]]:
        """(item id, entity id, weight) for items linked to any of the entities, newest item
        first."""
        if not entity_ids:
            return []
        where, params = _where(flt)
        # OFFSET 0: each link's item read by its key; a hash join read all the project's items
        # when the planner expected a few thousand links.
        rows = self._rows(f"SELECT l.source, l.target, l.weight FROM {ITEM_ENTITY_LINKS} l "
                          "CROSS JOIN LATERAL (SELECT i.created_at, i.ord FROM items i "
                          f"WHERE i.id = l.source AND {where} OFFSET 0) i "
                          "WHERE l.target = ANY(%(e)s) "
                          "ORDER BY i.created_at DESC, i.ord DESC, l.target, l.weight",
                          {**params, "e": list(entity_ids)})
        return [(r["source"], r["target"], float(r["weight"])) for r in rows]

    def mentioned_symbols(self, item_ids: Iterable[str]) -> dict[str, list[Row]]:
        """The symbol entities each item MENTIONS."""
        ids = list(item_ids)
        found: dict[str, list[Row]] = {i: [] for i in ids}
        if ids:
            for r in self._rows(f"SELECT l.source AS item, {ENTITY_SELECT} FROM mentions l "
                                "JOIN entities e ON e.id = l.target WHERE l.source = ANY(%s) "
                                "AND e.kind = 'symbol' ORDER BY l.source, e.id", (ids,)):
                found[r.pop("item")].append(r)
        return found

    def file_counts(self, item_ids: Iterable[str]) -> dict[str, int]:
        """How many files each item is linked to."""
        ids = list(item_ids)
        if not ids:
            return {}
        # Each table filtered on its own: its (source, target) key answers without the rows.
        files = " UNION ALL ".join(f"SELECT source, target FROM {table} WHERE source = ANY(%(i)s) "
                                   "AND starts_with(target, 'file:')"
                                   for table in ("mentions", "anchored_to"))
        rows = self._rows(f"SELECT l.source, count(DISTINCT l.target) AS n FROM ({files}) l "
                          "GROUP BY l.source", {"i": ids})
        found = {r["source"]: int(r["n"]) for r in rows}
        return {i: found.get(i, 0) for i in ids}

    def entity_neighbours(self, entity_ids: Sequence[str], hops: int = 1) -> dict[str, int]:
        """Entities within `hops` code edges (DEFINED_IN, CONTAINS, IMPORTS, TOUCHES), by distance."""
        seen = {e: 0 for e in entity_ids}
        frontier = list(entity_ids)
        both_ways = " UNION ".join(
            f"SELECT target AS id FROM {_link(t)} WHERE source = ANY(%(f)s) "
            f"UNION SELECT source FROM {_link(t)} WHERE target = ANY(%(f)s)" for t in CODE_LINKS)
        for depth in range(1, hops + 1):
            if not frontier:
                break
            reached = {r["id"] for r in self._rows(both_ways, {"f": frontier})} - seen.keys()
            for entity in reached:
                seen[entity] = depth
            frontier = sorted(reached)
        return seen

    def entity_items_neighbours(self, entity_id: str, limit: int = 50,
                                project: str | None = None) -> list[Row]:
        """Entities co-mentioned with this one by items (of one project, when given)."""
        clause = "AND i.project = %(p)s " if project is not None else ""
        rows = self._rows(
            f"SELECT {ENTITY_SELECT}, count(DISTINCT a.source) AS shared_items "
            f"FROM {ITEM_ENTITY_LINKS} a JOIN items i ON i.id = a.source "
            f"JOIN {ITEM_ENTITY_LINKS} b ON b.source = a.source JOIN entities e ON e.id = b.target "
            f"WHERE a.target = %(id)s AND b.target <> %(id)s {clause}"
            f"GROUP BY e.id ORDER BY shared_items DESC, e.id LIMIT {int(limit)}",
            {"id": entity_id, "p": project})
        return [{**r, "shared_items": int(r["shared_items"])} for r in rows]

    def entities_only_linked_from(self, entity_ids: set[str], items: set[str]) -> list[str]:
        """Entities no other item links to and the code index does not hold (text-derived)."""
        if not entity_ids:
            return []
        rows = self._rows(
            "SELECT e.id FROM entities e WHERE e.id = ANY(%(ids)s) "
            "AND NOT (e.kind IN ('file', 'symbol') AND e.resolved) AND NOT EXISTS "
            f"(SELECT 1 FROM {ITEM_ENTITY_LINKS} l WHERE l.target = e.id "
            "AND NOT l.source = ANY(%(items)s)) ORDER BY e.id",
            {"ids": sorted(entity_ids), "items": sorted(items)})
        return [r["id"] for r in rows]

    def linked_entity_ids(self, entity_ids: Sequence[str]) -> set[str]:
        """Those of the entities some item mentions or is anchored to."""
        rows = self._rows(f"SELECT DISTINCT l.target FROM {ITEM_ENTITY_LINKS} l "
                          "WHERE l.target = ANY(%s)", (list(entity_ids),))
        return {r["target"] for r in rows}

    def mentions_of(self, entity_ids: Sequence[str]) -> list[Row]:
        """MENTIONS edges into the entities (to move them when code is renamed)."""
        return self._rows("SELECT source AS item, target AS entity, weight, surface FROM mentions "
                          "WHERE target = ANY(%s) ORDER BY source, target", (list(entity_ids),))

    # ----- observations ---------------------------------------------------------------------------
    def item_observations(self, item_id: str) -> list[Row]:
        """The observations an item derives from, in time order."""
        rows = self._rows(f"SELECT {OBSERVATION_SELECT} FROM derived_from l "
                          "JOIN observations o ON o.id = l.target WHERE l.source = %s "
                          "ORDER BY o.ts, o.id", (item_id,))
        return [_observation(r) for r in rows]

    def session_observations(self, session_id: str) -> list[Row]:
        rows = self._rows(f"SELECT {OBSERVATION_SELECT} FROM observations o "
                          "WHERE o.session_id = %s ORDER BY o.ts, o.id", (session_id,))
        return [_observation(r) for r in rows]

    def session_files(self, session_id: str, tools: Sequence[str], limit: int = 40) -> list[str]:
        """The files a session's latest tool calls of these kinds touched, most recent first."""
        rows = self._rows("SELECT files FROM observations WHERE session_id = %s AND tool = ANY(%s) "
                          "AND cardinality(files) > 0 ORDER BY ts DESC LIMIT %s",
                          (session_id, list(tools), int(limit)))
        seen: dict[str, None] = {}
        for r in rows:
            seen.update((f, None) for f in r["files"] if f not in seen)
        return list(seen)

    def observation_users(self, observation_id: str) -> list[str]:
        rows = self._rows("SELECT source FROM derived_from WHERE target = %s ORDER BY source",
                          (observation_id,))
        return [r["source"] for r in rows]

    def evidence_in_use(self, refs: Sequence[str]) -> set[str]:
        """The evidence references some observation in the store still points at."""
        rows = self._rows("SELECT DISTINCT evidence_ref FROM observations "
                          "WHERE evidence_ref = ANY(%s)", (list(refs),))
        return {r["evidence_ref"] for r in rows}

    # ----- anchors and staleness ----------------------------------------------------------------
    def anchors(self, item_ids: Sequence[str] | None = None) -> list[Row]:
        """ANCHORED_TO links (of these items, or all) with the hash each saw."""
        where = "WHERE l.source = ANY(%s) " if item_ids is not None else ""
        return self._rows('SELECT l.source AS item, e.id AS entity, e.kind, e.path, e.qualname, '
                          'l.hash, l."commit", i.status FROM anchored_to l '
                          "JOIN items i ON i.id = l.source JOIN entities e ON e.id = l.target "
                          f"{where}ORDER BY l.source, l.target",
                          (list(item_ids),) if item_ids is not None else None)

    def anchors_on_paths(self, paths: Sequence[str]) -> list[Row]:
        """ANCHORED_TO edges whose File/Symbol lies in one of the paths, with both hashes."""
        return self._rows(f"{_ANCHOR_SELECT} WHERE e.path = ANY(%s) ORDER BY i.id, e.id",
                          (list(paths),))

    def anchors_of_items(self, item_ids: Sequence[str] | None) -> list[Row]:
        """ANCHORED_TO edges of the items (all items when None): seen hash vs current entity hash."""
        if item_ids is None:
            return self._rows(f"{_ANCHOR_SELECT} ORDER BY i.id, e.id")
        return self._rows(f"{_ANCHOR_SELECT} WHERE i.id = ANY(%s) ORDER BY i.id, e.id",
                          (list(item_ids),))

    def existing_item_ids(self, item_ids: Sequence[str]) -> set[str]:
        """Which of the ids exist as items."""
        return {r["id"] for r in self._rows("SELECT id FROM items WHERE id = ANY(%s)",
                                            (list(item_ids),))}

    # ----- whole-store reads --------------------------------------------------------------------
    def project_counts(self, project: str) -> dict[str, Any]:
        """Entities, observations, vectors and links that belong to one project's items."""
        links = {t: int(self._one(f"SELECT count(*) FROM {_link(t)} l JOIN items i ON i.id = l.source "
                                  "WHERE i.project = %s", (project,)))
                 for t in LINK_TABLES if LINK_ENDPOINTS[t][0] == "Item"}
        return {
            "entities": int(self._one(f"SELECT count(DISTINCT l.target) FROM {ITEM_ENTITY_LINKS} l "
                                      "JOIN items i ON i.id = l.source WHERE i.project = %s",
                                      (project,))),
            "observations": int(self._one("SELECT count(*) FROM observations WHERE project = %s",
                                          (project,))),
            "vectors": int(self._one("SELECT count(*) FROM item_vectors v JOIN items i "
                                     "ON i.id = v.id WHERE i.project = %s", (project,))),
            "links": links}

    def export_rows(self) -> dict[str, list[Row]]:
        """Every node and edge, as plain rows (tests compare rebuilt and live stores with it)."""
        out: dict[str, list[Row]] = {
            "Item": self._rows(f"SELECT {ITEM_SELECT} FROM items i ORDER BY i.id"),
            "Entity": self._rows(f"SELECT {ENTITY_SELECT} FROM entities e ORDER BY e.id"),
            "Observation": self._rows(f"SELECT {OBSERVATION_SELECT} FROM observations o "
                                      "ORDER BY o.id"),
            "ItemVector": self._rows("SELECT id, model, text_hash FROM item_vectors ORDER BY id")}
        for table in LINK_TABLES:
            out[table] = self._edges(table)
        return out

    def graph_rows(self, item_ids: Sequence[str] | None = None) -> dict[str, list[Row]]:
        """Nodes and edges for analytics (networkx export); all when item_ids is None."""
        if item_ids is None:
            return self.export_rows()
        ids = sorted(set(item_ids))
        out: dict[str, list[Row]] = {
            "Item": self._rows(f"SELECT {ITEM_SELECT} FROM items i WHERE i.id = ANY(%s) "
                               "ORDER BY i.id", (ids,)),
            "Observation": []}
        for table in LINK_TABLES:
            if LINK_ENDPOINTS[table][0] == "Item":
                out[table] = self._edges(table, "l.source = ANY(%(s)s)", {"s": ids})
        entity_ids = sorted({e["target"] for t in ITEM_LINKS for e in out[t]})
        out["Entity"] = self._rows(f"SELECT {ENTITY_SELECT} FROM entities e WHERE e.id = ANY(%s) "
                                   "ORDER BY e.id", (entity_ids,))
        for table in LINK_TABLES:
            if LINK_ENDPOINTS[table][0] == "Entity":
                out[table] = self._edges(table, "l.source = ANY(%(s)s) AND l.target = ANY(%(s)s)",
                                         {"s": entity_ids})
        return {t: out[t] for t in ("Item", "Entity", "Observation", *LINK_TABLES)}

    def _edges(self, kind: str, where: str = "TRUE", params: dict[str, Any] | None = None) -> list[Row]:
        """Rows {source, target, ...properties} of one link table, by source and target."""
        columns = ("source", "target", *LINK_PROPS.get(kind, ()))
        return self._rows(f"SELECT {_names(columns, 'l')} FROM {_link(kind)} l WHERE {where} "
                          "ORDER BY l.source, l.target", params)


APPLIERS: dict[type[ops.Op], str] = {cls: f"_op_{cls.name}" for cls in ops.OPS.values()}
