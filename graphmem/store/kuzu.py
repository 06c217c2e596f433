"""Kuzu backend, on Kuzu itself or its maintained fork Ladybug (`engine`): the only module
importing either; all Cypher lives here."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from graphmem import env
from graphmem.errors import (
    GraphmemError,
    InvalidInput,
    NoSpace,
    StoreCorrupt,
    StoreIOError,
    StoreUnavailable,
)
from graphmem.paths import FILE_MODE, private_dir, write_private
from graphmem.store import ops
from graphmem.store.base import ItemFilter, Row
from graphmem.store.schema import (
    ENTITY_COLUMNS,
    ITEM_COLUMNS,
    LINK_ENDPOINTS,
    LINK_PROPS,
    LINK_TABLES,
    OBSERVATION_COLUMNS,
    OBSERVATION_JSON_COLUMNS,
)

if TYPE_CHECKING:  # numpy stays off the git hook's path until a search needs the mirror
    from graphmem.store.hot import HotIndex

SCHEMA_VERSION = 2
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "graph.cypher"
VECTOR_DIM = 384
# Kuzu's default buffer pool is most of the machine's RAM; a memory store needs far less. The pool
# is a cap, not an allocation (pages are touched as used), but a write fails when the pool is full:
# a 100k-item store's commit of its vectors did at 256 MB. So the cap grows with the database file.
BUFFER_POOL_BYTES = 512 * 1024 * 1024


def buffer_pool_bytes(path: Path) -> int:
    """The pool cap for a database file: the floor, or three times the file's size."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    return max(BUFFER_POOL_BYTES, 3 * size)

# Kuzu plans `UNWIND $ids ... MATCH (n {id: x})` as a hash join over a scan of the whole table
# (7 ms at 10k items, 24 ms at 100k, for ten ids), while one primary-key lookup costs 0.3 ms: up
# to this many ids are fetched one lookup each.
POINT_LOOKUPS = 32

# The engines this module runs on, each name also its Python module's. Ladybug is Kuzu's fork
# (Kuzu was archived upstream in Oct 2025), same Cypher and Python API; its wheel ships no VECTOR
# or FTS extension, and graphmem loads none on either (vector search is exact in the mirror,
# keywords are keywords.py). The two cannot share a process (both register the same native
# types) and neither opens the other's files.
ENGINES = ("kuzu", "ladybug")
DEFAULT_ENGINE = "kuzu"


def default_engine() -> str:
    """The engine GRAPHMEM_ENGINE names (Config.engine's variable), else kuzu. Read through
    env.py, not Config: the git hook's lean path opens the store without pydantic;
    engine_module refuses a name it does not know."""
    return env.text("engine") or DEFAULT_ENGINE


def engine_module(engine: str) -> Any:
    """The engine's Python module, imported on first use; a clear error when it is not installed
    or the process already runs the other engine (importing both breaks the second import and
    then segfaults the process at exit)."""
    if engine not in ENGINES:
        raise InvalidInput(f"unknown graph engine {engine!r} (known: {', '.join(ENGINES)})")
    if engine in sys.modules:
        return sys.modules[engine]
    other = next((name for name in ENGINES if name != engine and name in sys.modules), None)
    if other is not None:
        raise GraphmemError(f"graph engine {engine!r} cannot load: this process already runs "
                            f"{other!r}, and the two cannot share a process")
    _wipe_freed_memory()
    try:
        if engine == "ladybug":
            import ladybug

            return ladybug
        import kuzu
    except ImportError as exc:
        hint = " (pip install 'graphmem[ladybug]')" if engine == "ladybug" else ""
        raise GraphmemError(f"graph engine {engine!r} is not installed{hint}: {exc}") from exc
    return kuzu


M_PERTURB = -6  # glibc mallopt: fill each block malloc hands out, and each block freed


def _wipe_freed_memory() -> None:
    """Kuzu writes whole pages from buffers it does not clear: the bytes a page's data leaves
    unused are whatever the process's heap held there before, such as a secret read and then
    redacted, or the text of an item just forgotten. Measured: a string only ever held in
    Python, never given to the engine, was in the database file after 10 of 20 fresh
    databases. With glibc told to fill every block it hands out and every block freed, the
    padding is filler (0 of 20). Other C libraries have no such switch: nothing to do there."""
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(M_PERTURB, 0xA5)  # the process's own symbols: libc's
    except (OSError, AttributeError):
        pass


# Numbered migrations: MIGRATIONS[n] moves a store from version n-1 to n (statements, then the
# KuzuStore method of that name, if any, for what Cypher alone cannot do).
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 2: an observation's cwd, transcript path and extra hook fields are columns (they rode
    # inside tool_input under reserved keys); rows written before are lifted by _migrate_2.
    2: ("ALTER TABLE Observation ADD IF NOT EXISTS cwd STRING DEFAULT ''",
        "ALTER TABLE Observation ADD IF NOT EXISTS transcript_path STRING DEFAULT ''",
        "ALTER TABLE Observation ADD IF NOT EXISTS extra STRING DEFAULT '{}'"),
}


SHADOW_WAIT_SECONDS = 5.0
_SHADOW_RACE = re.compile(r"(?:Error removing|Cannot open) (?:directory or )?file \S*\.shadow\b|"
                          r"replay shadow pages")


def open_database(driver: Any, path: Path, read_only: bool,
                  seconds: float = SHADOW_WAIT_SECONDS) -> Any:
    """The engine's Database at `path`. A process closing the database removes its checkpoint's
    shadow file after it has let go of the lock, so an open in that moment trips over the file
    ("Error removing … graph.kuzu.shadow"; read-only: "Couldn't replay shadow pages"). Measured:
    1 open in 3,000 beside two writers that open, write and close. It is gone a moment later:
    try again for up to `seconds`."""
    deadline = time.monotonic() + seconds
    delay = 0.02
    while True:
        try:
            return driver.Database(str(path), read_only=read_only,
                                   buffer_pool_size=buffer_pool_bytes(path))
        except RuntimeError as exc:
            said = str(exc).replace(str(path), "").replace(os.path.realpath(path), "")
            if not _SHADOW_RACE.search(said) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def _translate(exc: Exception, path: Path, engine: str = DEFAULT_ENGINE) -> GraphmemError:
    text = str(exc)
    if "not a valid" in text and "database file" in text:  # the other engine's file (or junk)
        return StoreCorrupt(f"store corrupt: {path} is not a database {engine} can open "
                            f"({text.strip()}); if another engine wrote it, set GRAPHMEM_ENGINE "
                            f"back, or run `graphmem rebuild` to replay the journal into {engine}")
    if "lock" in text.lower():
        return StoreUnavailable(f"store {path} is in use by another process ({text.strip()})")
    if "read-only" in text.lower() or "Permission denied" in text or "permission" in text.lower():
        return StoreUnavailable(f"store {path} is not writable ({text.strip()})")
    return StoreCorrupt(f"store corrupt: {path} cannot be opened ({text.strip()}); "
                        "run `graphmem rebuild`")


# ----- a damaged file must not crash graphmem -------------------------------------------------
# Kuzu trusts its file: a truncated or bit-flipped graph.kuzu can make it segfault, which no
# `except` catches. So each clean close records the files' fingerprint; an open that finds them
# as they were left opens at once, and any other (a crash, a change made outside graphmem, the
# first open after an upgrade) first opens and reads the database in a child process (which, for a
# read-write open, also writes to a copy of it): a child that dies by a signal, hangs or meets a
# damaged page means "store corrupt", not a dead graphmem. Cost: ~1 ms a clean open and close;
# a probe ~0.2 s read-only, ~0.5 s read-write (0.3 / 0.7 s with 10k items and vectors).
CLEAN_SUFFIX = ".clean"
PROBE_COPY = ".probe"  # the copy a probe writes to (removed after it)
_PROBE_CODES: dict[int, type[GraphmemError]] = {
    StoreUnavailable.exit_code: StoreUnavailable, NoSpace.exit_code: NoSpace,
    StoreIOError.exit_code: StoreIOError, StoreCorrupt.exit_code: StoreCorrupt}


def _fingerprint(path: Path) -> list[list[int] | None] | None:
    """Size and modification time (ns) of the database file and its WAL (None: no WAL); None when
    they cannot be read. A copy that keeps both (`cp -a`, a backup restored) is the same file."""
    out: list[list[int] | None] = []
    for own in (path, path.with_name(path.name + ".wal")):
        try:
            info = own.stat()
        except FileNotFoundError:
            out.append(None)
            continue
        except OSError:
            return None
        out.append([info.st_size, info.st_mtime_ns])
    return out


def _clean_record(path: Path) -> Path:
    return path.with_name(path.name + CLEAN_SUFFIX)


def closed_cleanly(path: Path) -> bool:
    """Whether the database files are as graphmem's last clean close left them (or absent)."""
    if not path.exists():
        return True
    try:
        recorded = json.loads(_clean_record(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    current = _fingerprint(path)
    return current is not None and recorded == current


def _mark_clean(path: Path) -> None:
    current = _fingerprint(path)
    if current is None or current[0] is None:
        return
    try:
        write_private(_clean_record(path), json.dumps(current))
    except OSError:
        pass  # no record only costs the next open a check


def _forget_clean(path: Path) -> None:
    try:
        _clean_record(path).unlink(missing_ok=True)
    except OSError:
        pass


def replace_database(fresh: Path, path: Path) -> None:
    """Move a closed database (and its WAL) over `path`, keeping the record of a clean close."""
    clean = closed_cleanly(fresh)
    _forget_clean(path)
    for own in (path, path.with_name(path.name + ".wal")):
        if own.is_dir():  # an old Kuzu's database directory
            import shutil

            shutil.rmtree(own)
        elif own.exists():
            own.unlink()
    fresh.rename(path)
    wal = fresh.with_name(fresh.name + ".wal")
    if wal.exists():
        wal.rename(path.with_name(path.name + ".wal"))
    _forget_clean(fresh)
    if clean:
        _mark_clean(path)


def probe(path: Path, read_only: bool = False, engine: str = DEFAULT_ENGINE) -> None:
    """Open and read the whole database in a child process first; raise StoreCorrupt when that
    crashes the child or meets a damaged page (StoreUnavailable when it is in use)."""
    argv = [sys.executable, "-m", "graphmem.store.kuzu", "--probe", str(path), "--engine", engine]
    if read_only:
        argv.append("--read-only")
    fix = "run `graphmem rebuild` (it rebuilds the graph from the journal)"
    seconds = env.number("probe_seconds")
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        _, stderr = child.communicate(timeout=seconds)
    except subprocess.TimeoutExpired as exc:
        child.kill()
        child.communicate()
        raise StoreCorrupt(f"store corrupt: {path}: the database engine did not finish reading it "
                           f"in {seconds:g} s (GRAPHMEM_PROBE_SECONDS); {fix}") from exc
    finally:
        _remove_probe_copy(path, child.pid)  # what a probe that crashed left
    code = child.returncode
    if code == 0:
        return
    said = [ln for ln in stderr.splitlines() if ln.startswith("graphmem-probe: ")]
    last = said[-1].removeprefix("graphmem-probe: ") if said else stderr.strip()[-300:]
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        raise StoreCorrupt(f"store corrupt: {path} crashes the database engine ({name}); {fix}")
    error = _PROBE_CODES.get(code)
    if error is None:  # not the database's fault (a broken install, say): say what happened
        raise GraphmemError(f"could not check the store {path}: {last or code}")
    raise error(last)


class KuzuStore:
    """A project's graph: items, vectors, entities, observations and their edges."""

    def __init__(self, path: Path, *, read_only: bool = False, checked: bool = False,
                 vector_model: str | None = None, engine: str | None = None) -> None:
        """`checked`: the caller knows the files are sound (the probe itself); otherwise files
        not left by a clean close are probed in a child process before Kuzu sees them here.
        `vector_model`: vector search sees only the vectors this model made (None: all).
        `engine`: a name in ENGINES (default: GRAPHMEM_ENGINE, else kuzu)."""
        self.path = path
        self.read_only = read_only
        self.vector_model = vector_model
        self.engine = engine or default_engine()
        driver = engine_module(self.engine)
        self._code_entities: _CodeEntityIndex | None = None
        self._hot: HotIndex | None = None
        self._mark = False  # record a clean close (set once the files are known to be sound)
        if not checked and not closed_cleanly(path):
            probe(path, read_only, self.engine)
            self._mark = read_only  # nothing changes the files while it is open read-only
        try:
            if not read_only:
                private_dir(path.parent)
            self._db = open_database(driver, path, read_only)
            if not read_only:
                _forget_clean(path)  # until the close: a crash while open leaves no record
                self._mark = not checked
                for own in (path, path.with_name(path.name + ".wal")):
                    if own.is_file():
                        os.chmod(own, FILE_MODE)
            self._conn = driver.Connection(self._db)
            if not read_only:
                self._ensure_schema()
        except GraphmemError:
            raise
        except (RuntimeError, OSError, MemoryError) as exc:  # a damaged file: std::bad_alloc
            raise _translate(exc, path, self.engine) from exc

    # ----- schema -------------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        for statement in schema_statements():
            self._conn.execute(statement)
        version = self._meta("schema_version")
        current = int(version) if version else 0
        if current == 0:
            current = SCHEMA_VERSION
        for number in sorted(n for n in MIGRATIONS if n > current):
            for statement in MIGRATIONS[number]:
                self._conn.execute(statement)
            step = getattr(self, f"_migrate_{number}", None)
            if step is not None:
                step()
            current = number
        self._set_meta("schema_version", str(current))

    def _migrate_2(self) -> None:
        """Observations that kept cwd, transcript path and extra inside tool_input get them as
        columns, as the journal's records of them now decode (ops.lift_hook_fields)."""
        rows = [_observation(r[0]) for r in self._rows("MATCH (o:Observation) RETURN o")]
        lifted = [ops.lift_hook_fields(r) for r in rows]
        changed = [r for r, old in zip(lifted, rows) if r is not old]
        if changed:
            self._op_put_observations(ops.PutObservations(changed))

    def _meta(self, key: str) -> str | None:
        rows = self._rows("MATCH (m:Meta {key: $k}) RETURN m.value", {"k": key})
        return rows[0][0] if rows else None

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    @property
    def schema_version(self) -> int:
        return int(self._meta("schema_version") or 0)

    # ----- low level ----------------------------------------------------------------------
    def _rows(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        try:
            result = self._conn.execute(query, params or {})
        except RuntimeError as exc:
            raise _translate_query(exc) from exc
        assert not isinstance(result, list)
        rows = []
        while result.has_next():
            rows.append(result.get_next())
        return cast("list[list[Any]]", rows)  # rows are dicts only after rows_as_dict()

    def _exec(self, query: str, params: dict[str, Any] | None = None) -> None:
        if self.read_only:
            raise StoreUnavailable(f"store {self.path} is open read-only")
        try:
            self._conn.execute(query, params or {})
        except RuntimeError as exc:
            raise _translate_query(exc) from exc

    def close(self) -> None:
        closing = getattr(self, "_db", None) is not None
        for attr in ("_conn", "_db"):
            obj = getattr(self, attr, None)
            if obj is not None:
                obj.close()
                setattr(self, attr, None)
        if closing and self._mark:
            _mark_clean(self.path)

    def check(self) -> None:
        """Read every column of every node and edge (the probe's work: a damaged page shows).

        The largest hash, taken inside Kuzu, reads the data without making Python objects of
        it (10k items with vectors: 0.08 s instead of 0.6 s); `hash(n)` of a whole node reads
        nothing. Not their sum: in Ladybug a sum of UINT64 hashes is a UINT128 it cannot return."""
        def summed(match: str, fields: dict[str, str]) -> str:
            return f"{match} RETURN max(hash({{{', '.join(f'{k}: {v}' for k, v in fields.items())}}}))"

        columns = {"Meta": ("key", "value"), "Item": ITEM_COLUMNS, "Entity": ENTITY_COLUMNS,
                   "Observation": OBSERVATION_COLUMNS,
                   "ItemVector": ("id", "vec", "model", "text_hash")}
        queries = [summed(f"MATCH (n:{t})", {c: f"n.{c}" for c in cols})
                   for t, cols in columns.items()]
        for table in LINK_TABLES:
            source, target = LINK_ENDPOINTS[table]
            queries.append(summed(f"MATCH (a:{source})-[l:{table}]->(b:{target})",
                                  {"s": "a.id", "t": "b.id",
                                   **{p: f"l.{p}" for p in LINK_PROPS.get(table, ())}}))
        for query in queries:
            try:
                result = self._conn.execute(query)
                assert not isinstance(result, list)
                while result.has_next():
                    result.get_next()
            except RuntimeError as exc:
                raise StoreCorrupt(f"store corrupt: {self.path} has a damaged page "
                                   f"({str(exc).strip()}); run `graphmem rebuild`") from exc

    # ----- mutations: one journal op each -------------------------------------------------
    def apply(self, op: ops.Op, seq: int | None = None) -> None:
        """Apply one journal operation atomically, recording its journal sequence number.

        The recorded number lets a store that crashed between journal and graph catch up.
        """
        name = APPLIERS.get(type(op))
        if name is None:
            raise InvalidInput(f"the graph has no applier for {type(op).__name__}")
        handler = getattr(self, name)
        self._exec("BEGIN TRANSACTION")
        try:
            handler(op)
            if seq is not None:
                self._exec("MERGE (m:Meta {key: 'applied_seq'}) SET m.value = $v", {"v": str(seq)})
        except BaseException:
            self._exec("ROLLBACK")
            raise
        self._exec("COMMIT")
        self._follow(op)

    def _follow(self, op: ops.Op) -> None:
        """Keep the retrieval mirror current; drop it (rebuilt on next read) if it cannot follow."""
        if self._hot is None:
            return
        if isinstance(op, ops.PutItems):  # MERGE ... SET writes every column, defaults included
            op = ops.PutItems(_complete(op.rows, ITEM_COLUMNS))
        try:
            followed = self._hot.apply(op)
        except (KeyError, TypeError, ValueError):
            followed = False
        if not followed:
            self._hot = None

    @property
    def applied_seq(self) -> int:
        return int(self._meta("applied_seq") or 0)

    def _op_put_items(self, op: ops.PutItems) -> None:
        rows = _complete(op.rows, ITEM_COLUMNS)
        assignments = ", ".join(f"i.{f} = r.{f}" for f in ITEM_COLUMNS if f != "id")
        self._exec(f"UNWIND $rows AS r MERGE (i:Item {{id: r.id}}) SET {assignments}", {"rows": rows})

    def _op_update_items(self, op: ops.UpdateItems) -> None:
        fields = op.fields
        assignments = ", ".join(f"i.{f} = ${f}" for f in fields)
        self._exec(f"UNWIND $ids AS x MATCH (i:Item {{id: x}}) SET {assignments}",
                   {"ids": list(op.ids), **fields})

    def _op_set_item_status(self, op: ops.SetItemStatus) -> None:
        """Rows of {id, status, stale_reason}: only those two columns are written (a put_items
        of whole rows rewrites every column, and in stores with a full-text index, the index)."""
        rows = [{"id": r["id"], "status": r["status"], "reason": r.get("stale_reason", "")}
                for r in op.rows]
        self._exec("UNWIND $rows AS r MATCH (i:Item {id: r.id}) "
                   "SET i.status = r.status, i.stale_reason = r.reason", {"rows": rows})

    def _op_bump_items(self, op: ops.BumpItems) -> None:
        """Use counts: rows of {id, n, at}."""
        rows = op.rows
        self._exec("UNWIND $rows AS r MATCH (i:Item {id: r.id}) "
                   "SET i.hit_count = i.hit_count + r.n, i.last_used_at = r.at", {"rows": rows})

    def _op_compact(self, op: ops.Compact) -> None:
        """Marker after a journal scrub; the service rewrites the whole database for it."""

    def _op_delete_items(self, op: ops.DeleteItems) -> None:
        params = {"ids": list(op.ids)}
        self._exec("UNWIND $ids AS x MATCH (v:ItemVector {id: x}) DELETE v", params)
        self._exec("UNWIND $ids AS x MATCH (i:Item {id: x}) DETACH DELETE i", params)

    def _op_put_vectors(self, op: ops.PutVectors) -> None:
        rows = op.rows
        ids = [r["id"] for r in rows]
        self._exec("UNWIND $ids AS x MATCH (v:ItemVector {id: x}) DELETE v", {"ids": ids})
        self._copy_vectors(rows)

    def _copy_vectors(self, rows: list[Row]) -> None:
        """Vectors by one COPY from an Arrow table (no per-row conversion); search reads them from
        the mirror, so the graph keeps no vector index (and loads no extension)."""
        import numpy as np
        import pyarrow as pa

        matrix = np.asarray([r["vec"] for r in rows], dtype=np.float32)
        table = pa.table({
            "id": [r["id"] for r in rows],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), VECTOR_DIM),
            "model": [r["model"] for r in rows],
            "text_hash": [r["text_hash"] for r in rows],
        })
        self._exec("COPY ItemVector FROM $t", {"t": table})

    def _op_put_entities(self, op: ops.PutEntities) -> None:
        self._code_entities = None
        rows = _complete(op.rows, ENTITY_COLUMNS)
        assignments = ", ".join(f"e.{f} = r.{f}" for f in ENTITY_COLUMNS if f != "id")
        self._exec(f"UNWIND $rows AS r MERGE (e:Entity {{id: r.id}}) SET {assignments}",
                   {"rows": rows})

    def _op_delete_entities(self, op: ops.DeleteEntities) -> None:
        self._code_entities = None
        self._exec("UNWIND $ids AS x MATCH (e:Entity {id: x}) DETACH DELETE e",
                   {"ids": list(op.ids)})

    def _op_put_observations(self, op: ops.PutObservations) -> None:
        rows = _complete([{**r, **{c: json.dumps(r.get(c) or {}) for c in OBSERVATION_JSON_COLUMNS}}
                          for r in op.rows], OBSERVATION_COLUMNS)
        assignments = ", ".join(f"o.{f} = r.{f}" for f in OBSERVATION_COLUMNS if f != "id")
        self._exec(f"UNWIND $rows AS r MERGE (o:Observation {{id: r.id}}) SET {assignments}",
                   {"rows": rows})

    def _op_delete_observations(self, op: ops.DeleteObservations) -> None:
        self._exec("UNWIND $ids AS x MATCH (o:Observation {id: x}) DETACH DELETE o",
                   {"ids": list(op.ids)})

    def _op_put_links(self, op: ops.PutLinks) -> None:
        table = _link_table(op.kind)
        source_label, target_label = LINK_ENDPOINTS[table]
        props = LINK_PROPS.get(table, ())
        rows = [{"s": r["source"], "t": r["target"], **{p: _link_prop(r, p) for p in props}}
                for r in op.rows]
        # MERGE keeps links idempotent under journal replay; SET refreshes their properties.
        # Both ends matched in one pattern plan as a cross product (5 s for 1,000 links at 40k
        # items); matching one end, then the other through a scalar, takes 0.2 s.
        assignments = (" SET " + ", ".join(f"l.{p} = r.{p}" for p in props)) if props else ""
        self._exec(f"UNWIND $rows AS r MATCH (a:{source_label} {{id: r.s}}) WITH a, r, r.t AS t "
                   f"MATCH (b:{target_label} {{id: t}}) MERGE (a)-[l:{table}]->(b){assignments}",
                   {"rows": rows})

    def _op_delete_links(self, op: ops.DeleteLinks) -> None:
        table = _link_table(op.kind)
        source_label, target_label = LINK_ENDPOINTS[table]
        if op.targets is None:
            self._exec(f"UNWIND $ids AS x MATCH (a:{source_label} {{id: x}})-[l:{table}]->"
                       f"(:{target_label}) DELETE l", {"ids": list(op.sources)})
            return
        rows = [{"s": s, "t": t} for s, t in zip(op.sources, op.targets)]
        self._exec(f"UNWIND $rows AS r MATCH (a:{source_label} {{id: r.s}})-[l:{table}]->"
                   f"(b:{target_label} {{id: r.t}}) DELETE l", {"rows": rows})

    # ----- reads ----------------------------------------------------------------------------
    def get_items(self, ids: Sequence[str]) -> list[Row]:
        if len(ids) <= POINT_LOOKUPS:
            found = (self._rows("MATCH (i:Item {id: $x}) RETURN i", {"x": i}) for i in dict.fromkeys(ids))
            by_id = {r[0][0]["id"]: _clean(r[0][0]) for r in found if r}
        else:
            rows = self._rows("UNWIND $ids AS x MATCH (i:Item {id: x}) RETURN i", {"ids": list(ids)})
            by_id = {r[0]["id"]: _clean(r[0]) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_items(self, flt: ItemFilter, limit: int = 100, order: str = "created_at",
                   offset: int = 0) -> list[Row]:
        if order not in ("created_at", "updated_at", "last_used_at", "importance", "hit_count"):
            raise InvalidInput(f"cannot order by {order!r}")
        where, params = _where(flt)
        rows = self._rows(f"MATCH (i:Item) {where} RETURN i ORDER BY i.{order} DESC, i.id "
                          f"SKIP {int(offset)} LIMIT {int(limit)}", params)
        return [_clean(r[0]) for r in rows]

    def count_items(self, flt: ItemFilter) -> int:
        where, params = _where(flt)
        return int(self._rows(f"MATCH (i:Item) {where} RETURN count(i)", params)[0][0])

    def counts(self) -> dict[str, int]:
        tables = ("Item", "ItemVector", "Entity", "Observation")
        out = {t: int(self._rows(f"MATCH (n:{t}) RETURN count(n)")[0][0]) for t in tables}
        for table in LINK_TABLES:
            out[table] = int(self._rows(f"MATCH ()-[l:{table}]->() RETURN count(l)")[0][0])
        return out

    def group_counts(self, field: str, project: str | None = None) -> dict[str, int]:
        if field not in ("kind", "status", "source", "branch", "project"):
            raise InvalidInput(f"cannot group by {field!r}")
        where, params = _where(ItemFilter(project=project, statuses=None))
        rows = self._rows(f"MATCH (i:Item) {where} RETURN i.{field}, count(i)", params)
        return {r[0]: int(r[1]) for r in rows}

    def keyword_search(self, query: str, k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """BM25 over item text, from the in-memory mirror (store/keywords.py)."""
        return self.hot.keyword_top(query, int(k), flt) if query.strip() else []

    def term_weights(self, text: str) -> dict[str, float]:
        """The text's stemmed words, each with its IDF over all item texts."""
        return self.hot.keywords.term_weights(text) if text.strip() else {}

    def vector_search(self, vector: Sequence[float], k: int, flt: ItemFilter) -> list[tuple[str, float]]:
        """Nearest visible items by cosine similarity (exact, from the in-memory mirror)."""
        return self.hot.nearest(vector, int(k), flt)

    def count_visible(self, flt: ItemFilter) -> int:
        """How many items the filter lets through (from the mirror: no query)."""
        return self.hot.count(flt)

    def visible_ids(self, ids: Sequence[str], flt: ItemFilter) -> list[str]:
        """The ids the filter lets through, in the given order."""
        return self.hot.visible(ids, flt)

    def item_rows(self, ids: Sequence[str]) -> dict[str, Row]:
        """Live items as ranking reads them and search shows them, by id, from the mirror:
        bodies are cut to their first BODY_PREFIX characters (`body_cut` says which were)."""
        hot = self.hot
        found = ((i, hot.item_row(i)) for i in ids)
        return {i: row for i, row in found if row is not None}

    def prepare(self) -> None:
        """Build the in-memory retrieval mirror now rather than in the first search."""
        self.hot  # noqa: B018 - the property builds it

    @property
    def hot(self) -> HotIndex:
        """The retrieval mirror, built from the graph on first use."""
        if self._hot is None:
            self._hot = self._build_hot()
        return self._hot

    def _build_hot(self) -> HotIndex:
        import numpy as np

        from graphmem.store.hot import CODE_LINKS, ROW_FIELDS, HotIndex

        def table(query: str) -> dict[str, list[Any]]:
            result = self._conn.execute(query)
            assert not isinstance(result, list)
            return result.get_as_arrow(chunk_size=-1).to_pydict()

        hot = HotIndex(VECTOR_DIM, capacity=int(self._rows("MATCH (i:Item) RETURN count(i)")[0][0]),
                       model=self.vector_model)
        fields = ("id", "project", "kind", "status", "session_id", "created_at", "expire_at",
                  "search_text", "body", *ROW_FIELDS)
        items = table("MATCH (i:Item) RETURN " + ", ".join(f"i.{f} AS {f}" for f in fields))
        hot.put_items(dict(zip(fields, values)) for values in zip(*(items[f] for f in fields)))
        result = self._conn.execute("MATCH (v:ItemVector) RETURN v.id, v.vec, v.model")
        assert not isinstance(result, list)
        vectors = result.get_as_arrow(chunk_size=-1)
        if vectors.num_rows:
            column = vectors.column(1).combine_chunks()
            whole = column.offset == 0 and len(column.values) == vectors.num_rows * VECTOR_DIM
            # .flatten() would import pyarrow.compute: about a second of a cold owner's start
            flat = (column.values if whole else column.flatten()).to_numpy()
            matrix = np.asarray(flat, dtype=np.float32).reshape(vectors.num_rows, VECTOR_DIM)
            hot.put_vectors({"id": i, "vec": v, "model": model} for i, v, model in zip(
                vectors.column(0).to_pylist(), matrix, vectors.column(2).to_pylist()))
        mentions = table("MATCH (i:Item)-[l:MENTIONS]->(e:Entity) RETURN i.id AS s, e.id AS t, "
                         "l.weight AS w")
        hot.put_links("MENTIONS", ({"source": s, "target": t, "weight": w}
                                   for s, t, w in zip(mentions["s"], mentions["t"], mentions["w"])))
        anchors = table("MATCH (i:Item)-[:ANCHORED_TO]->(e:Entity) RETURN i.id AS s, e.id AS t")
        hot.put_links("ANCHORED_TO", ({"source": s, "target": t}
                                      for s, t in zip(anchors["s"], anchors["t"])))
        for kind in CODE_LINKS:
            edges = table(f"MATCH (a:Entity)-[:{kind}]->(b:Entity) RETURN a.id AS s, b.id AS t")
            hot.put_links(kind, ({"source": s, "target": t} for s, t in zip(edges["s"], edges["t"])))
        return hot

    def vectors(self, ids: Sequence[str]) -> dict[str, Row]:
        rows = self._rows("UNWIND $ids AS x MATCH (v:ItemVector {id: x}) RETURN v.id, v.vec, v.model, "
                          "v.text_hash", {"ids": list(ids)})
        return {r[0]: {"vec": r[1], "model": r[2], "text_hash": r[3]} for r in rows}

    def vector_stamps(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(model, text_hash) of these items' vectors: what made each and from which text."""
        rows = self._rows("UNWIND $ids AS x MATCH (v:ItemVector {id: x}) RETURN v.id, v.model, "
                          "v.text_hash", {"ids": list(ids)})
        return {r[0]: (r[1], r[2]) for r in rows}

    def get_entities(self, ids: Sequence[str]) -> list[Row]:
        rows = self._rows("UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN e", {"ids": list(ids)})
        return [_clean(r[0]) for r in rows]

    def find_entities(self, *, names: Iterable[str] = (), kinds: Sequence[str] | None = None,
                      path_suffixes: Iterable[str] = ()) -> list[Row]:
        """Code entities (files, symbols) whose name/qualname equals one of `names` or whose
        path ends with a suffix; answered from an in-memory index (linking asks per mention)."""
        index = self._code_index()
        wanted = set(kinds) if kinds else None
        found: dict[str, Row] = {}
        for name in names:
            for entity_id in index.by_name.get(name, ()):
                found[entity_id] = index.rows[entity_id]
        for suffix in path_suffixes:
            for entity_id in index.by_basename.get(suffix.rsplit("/", 1)[-1], ()):
                path = index.rows[entity_id]["path"]
                if path == suffix or path.endswith("/" + suffix):
                    found[entity_id] = index.rows[entity_id]
        return [dict(r) for r in found.values() if wanted is None or r["kind"] in wanted]

    def code_entities(self, ids: Sequence[str]) -> list[Row]:
        """File and symbol entities by id, from the in-memory code index."""
        index = self._code_index()
        return [dict(index.rows[i]) for i in ids if i in index.rows]

    def _code_index(self) -> _CodeEntityIndex:
        if self._code_entities is None:
            rows = self._rows("MATCH (e:Entity) WHERE e.kind IN ['file', 'symbol'] RETURN e")
            self._code_entities = _CodeEntityIndex([_clean(r[0]) for r in rows])
        return self._code_entities

    def entities_by_kind(self, kind: str, limit: int = 100_000) -> list[Row]:
        rows = self._rows(f"MATCH (e:Entity {{kind: $k}}) RETURN e LIMIT {int(limit)}", {"k": kind})
        return [_clean(r[0]) for r in rows]

    def item_links(self, item_id: str) -> list[Row]:
        """Edges of an item with their targets: its entities, what it supersedes and what
        supersedes it (SUPERSEDED_BY), with the edges' properties."""
        out = []
        for table in ("MENTIONS", "ANCHORED_TO"):
            props = LINK_PROPS[table]
            rows = self._rows(f"MATCH (i:Item {{id: $id}})-[l:{table}]->(e:Entity) RETURN e, "
                              + ", ".join(f"l.{p}" for p in props), {"id": item_id})
            for r in rows:
                out.append({"kind": table, "entity": _clean(r[0]),
                            **{p: v for p, v in zip(props, r[1:])}})
        for r in self._rows("MATCH (i:Item {id: $id})-[l:SUPERSEDES]->(o:Item) "
                            "RETURN o.id, l.at, l.surface", {"id": item_id}):
            out.append({"kind": "SUPERSEDES", "target": r[0], "at": r[1], "surface": r[2]})
        for r in self._rows("MATCH (n:Item)-[l:SUPERSEDES]->(i:Item {id: $id}) "
                            "RETURN n.id, l.at, l.surface", {"id": item_id}):
            out.append({"kind": "SUPERSEDED_BY", "target": r[0], "at": r[1], "surface": r[2]})
        return out

    def item_observations(self, item_id: str) -> list[Row]:
        rows = self._rows("MATCH (i:Item {id: $id})-[:DERIVED_FROM]->(o:Observation) RETURN o "
                          "ORDER BY o.ts", {"id": item_id})
        return [_observation(r[0]) for r in rows]

    def items_without_vectors(self) -> list[str]:
        """Ids of items that have no vector (written with embedding off, or a write cut short)."""
        items = {r[0] for r in self._rows("MATCH (i:Item) RETURN i.id")}
        return sorted(items - {r[0] for r in self._rows("MATCH (v:ItemVector) RETURN v.id")})

    def item_ids(self) -> list[str]:
        return sorted(r[0] for r in self._rows("MATCH (i:Item) RETURN i.id"))

    def vectors_not_of(self, model: str) -> dict[str, str]:
        """{item id: model} of the vectors another model made."""
        rows = self._rows("MATCH (v:ItemVector) WHERE v.model <> $m RETURN v.id, v.model",
                          {"m": model})
        return {r[0]: r[1] for r in rows}

    def evidence_in_use(self, refs: Sequence[str]) -> set[str]:
        """The evidence references some observation in the store still points at."""
        rows = self._rows("UNWIND $refs AS x MATCH (o:Observation) WHERE o.evidence_ref = x "
                          "RETURN DISTINCT o.evidence_ref", {"refs": list(refs)})
        return {r[0] for r in rows}

    def entities_only_linked_from(self, entity_ids: set[str], items: set[str]) -> list[str]:
        """Entities no other item links to and the code index does not hold (text-derived)."""
        if not entity_ids:
            return []
        rows = self._rows("UNWIND $ids AS x MATCH (e:Entity {id: x}) WHERE NOT (e.kind IN ['file', "
                          "'symbol'] AND e.resolved) OPTIONAL MATCH (i:Item)-[:MENTIONS|ANCHORED_TO]->(e) "
                          "RETURN e.id, collect(i.id)", {"ids": sorted(entity_ids)})
        return [r[0] for r in rows if not {x for x in r[1] if x} - items]

    def session_observations(self, session_id: str) -> list[Row]:
        rows = self._rows("MATCH (o:Observation {session_id: $s}) RETURN o ORDER BY o.ts",
                          {"s": session_id})
        return [_observation(r[0]) for r in rows]

    def session_files(self, session_id: str, tools: Sequence[str], limit: int = 40) -> list[str]:
        """The files a session's latest tool calls of these kinds touched, most recent first."""
        rows = self._rows("MATCH (o:Observation {session_id: $s}) WHERE o.tool IN $tools "
                          "AND size(o.files) > 0 RETURN o.files ORDER BY o.ts DESC LIMIT $n",
                          {"s": session_id, "tools": list(tools), "n": int(limit)})
        seen: dict[str, None] = {}
        for (files,) in rows:
            seen.update((f, None) for f in files or [] if f not in seen)
        return list(seen)

    def observation_users(self, observation_id: str) -> list[str]:
        rows = self._rows("MATCH (i:Item)-[:DERIVED_FROM]->(o:Observation {id: $o}) RETURN i.id",
                          {"o": observation_id})
        return [r[0] for r in rows]

    def anchors(self, item_ids: Sequence[str] | None = None) -> list[Row]:
        start = "UNWIND $ids AS x MATCH (i:Item {id: x})" if item_ids is not None else "MATCH (i:Item)"
        rows = self._rows(f"{start}-[l:ANCHORED_TO]->(e:Entity) "
                          "RETURN i.id, e.id, e.kind, e.path, e.qualname, l.hash, l.commit, i.status",
                          {"ids": list(item_ids)} if item_ids is not None else {})
        keys = ("item", "entity", "kind", "path", "qualname", "hash", "commit", "status")
        return [dict(zip(keys, r)) for r in rows]

    def items_mentioning(self, entity_ids: Sequence[str], flt: ItemFilter) -> list[tuple[str, str, float]]:
        """(item id, entity id, weight) for items linked to any of the entities."""
        return self.hot.items_linked(entity_ids, flt)

    def mentioned_symbols(self, item_ids: Iterable[str]) -> dict[str, list[Row]]:
        """The symbol entities each item MENTIONS, from the in-memory mirror."""
        index = self._code_index()
        return {i: [dict(index.rows[e]) for e in ids if e in index.rows]
                for i, ids in self.hot.mentioned(item_ids, "symbol:").items()}

    def file_counts(self, item_ids: Iterable[str]) -> dict[str, int]:
        """How many files each item is linked to (from the mirror)."""
        return self.hot.file_counts(item_ids)

    def entity_neighbours(self, entity_ids: Sequence[str], hops: int = 1) -> dict[str, int]:
        """Entities within `hops` code edges (DEFINED_IN, CONTAINS, IMPORTS, TOUCHES), by distance."""
        return self.hot.neighbours(entity_ids, hops)

    def entity_items_neighbours(self, entity_id: str, limit: int = 50,
                                project: str | None = None) -> list[Row]:
        """Entities co-mentioned with this one by items (of one project, when given)."""
        clause = "AND i.project = $p " if project is not None else ""
        rows = self._rows("MATCH (e:Entity {id: $id})<-[:MENTIONS|ANCHORED_TO]-(i:Item)"
                          f"-[:MENTIONS|ANCHORED_TO]->(o:Entity) WHERE o.id <> $id {clause}"
                          f"RETURN o, count(DISTINCT i) AS n ORDER BY n DESC LIMIT {int(limit)}",
                          {"id": entity_id, **({"p": project} if project is not None else {})})
        return [{**_clean(r[0]), "shared_items": int(r[1])} for r in rows]

    def project_counts(self, project: str) -> dict[str, Any]:
        """Entities, observations, vectors and links that belong to one project's items."""
        one = lambda q: int(self._rows(q, {"p": project})[0][0])
        links = {t: one(f"MATCH (i:Item {{project: $p}})-[l:{t}]->() RETURN count(l)")
                 for t in LINK_TABLES if LINK_ENDPOINTS[t][0] == "Item"}
        return {
            "entities": one("MATCH (i:Item {project: $p})-[:MENTIONS|ANCHORED_TO]->(e:Entity) "
                            "RETURN count(DISTINCT e)"),
            "observations": one("MATCH (o:Observation {project: $p}) RETURN count(o)"),
            "vectors": one("MATCH (i:Item {project: $p}), (v:ItemVector {id: i.id}) RETURN count(v)"),
            "links": links}

    def export_rows(self) -> dict[str, list[Row]]:
        """Every node and edge, as plain rows (tests compare rebuilt and live stores with it)."""
        out: dict[str, list[Row]] = {}
        for table in ("Item", "Entity", "Observation"):
            out[table] = sorted((_clean(r[0]) for r in self._rows(f"MATCH (n:{table}) RETURN n")),
                                key=lambda r: r["id"])
        out["ItemVector"] = sorted(
            ({"id": r[0], "model": r[1], "text_hash": r[2]}
             for r in self._rows("MATCH (v:ItemVector) RETURN v.id, v.model, v.text_hash")),
            key=lambda r: r["id"])
        for table in LINK_TABLES:
            out[table] = self._edge_rows(f"MATCH (i)-[l:{table}]->(b)", table)
        return out

    def graph_rows(self, item_ids: Sequence[str] | None = None) -> dict[str, list[Row]]:
        """Nodes and edges for analytics (networkx export); all when item_ids is None."""
        return self.export_rows() if item_ids is None else self._subgraph_rows(item_ids)

    def _subgraph_rows(self, item_ids: Sequence[str]) -> dict[str, list[Row]]:
        """The items, their edges, the entities they link to and the code edges among those
        (as export_rows filtered to them), read by id joins instead of a whole export."""
        params = {"ids": sorted(set(item_ids))}
        start = "UNWIND $ids AS x MATCH (i:Item {id: x})"
        out: dict[str, list[Row]] = {
            "Item": sorted((_clean(r[0]) for r in self._rows(f"{start} RETURN i", params)),
                           key=lambda r: r["id"]),
            "Observation": []}
        for table in LINK_TABLES:
            source_label, target_label = LINK_ENDPOINTS[table]
            if source_label == "Item":
                out[table] = self._edge_rows(f"{start}-[l:{table}]->(b:{target_label})", table,
                                             params)
        entity_ids = {e["target"] for t in ("MENTIONS", "ANCHORED_TO") for e in out[t]}
        by_entity = {"ids": sorted(entity_ids)}
        out["Entity"] = sorted(
            (_clean(r[0]) for r in self._rows("UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN e",
                                              by_entity)), key=lambda r: r["id"])
        for table in LINK_TABLES:
            if LINK_ENDPOINTS[table][0] == "Entity":
                edges = self._edge_rows(f"UNWIND $ids AS x MATCH (i:Entity {{id: x}})-[l:{table}]->"
                                        "(b:Entity)", table, by_entity)
                out[table] = [e for e in edges if e["target"] in entity_ids]
        return {t: out[t] for t in ("Item", "Entity", "Observation", *LINK_TABLES)}

    def _edge_rows(self, match: str, table: str, params: dict[str, Any] | None = None) -> list[Row]:
        """Edges of a `match` binding source `i`, edge `l` and target `b`, by source and target."""
        props = LINK_PROPS.get(table, ())
        extra = "".join(f", l.{p}" for p in props)
        rows = self._rows(f"{match} RETURN i.id, b.id{extra}", params)
        return sorted(({"source": r[0], "target": r[1], **dict(zip(props, r[2:]))} for r in rows),
                      key=lambda r: (r["source"], r["target"]))


    # ----- staleness reads (anchors, hashes, mentions of code entities) -----------------
    def anchors_on_paths(self, paths: Sequence[str]) -> list[Row]:
        """ANCHORED_TO edges whose File/Symbol lies in one of the paths, with both hashes."""
        rows = self._rows("MATCH (i:Item)-[l:ANCHORED_TO]->(e:Entity) WHERE e.path IN $paths "
                           + _ANCHOR_RETURN, {"paths": list(paths)})
        return [dict(zip(_ANCHOR_KEYS, r)) for r in rows]

    def anchors_of_items(self, item_ids: Sequence[str] | None) -> list[Row]:
        """ANCHORED_TO edges of the items (all items when None): seen hash vs current entity hash."""
        if item_ids is None:
            rows = self._rows("MATCH (i:Item)-[l:ANCHORED_TO]->(e:Entity) " + _ANCHOR_RETURN)
        else:
            rows = self._rows("UNWIND $ids AS x MATCH (i:Item {id: x})-[l:ANCHORED_TO]->(e:Entity) "
                               + _ANCHOR_RETURN, {"ids": list(item_ids)})
        return [dict(zip(_ANCHOR_KEYS, r)) for r in rows]

    def existing_item_ids(self, item_ids: Sequence[str]) -> set[str]:
        """Which of the ids exist as items."""
        rows = self._rows("UNWIND $ids AS x MATCH (i:Item {id: x}) RETURN i.id", {"ids": list(item_ids)})
        return {r[0] for r in rows}

    def entity_hashes(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Entity id -> hash, for the ids that exist."""
        rows = self._rows("UNWIND $ids AS x MATCH (e:Entity {id: x}) RETURN e.id, e.hash",
                           {"ids": list(entity_ids)})
        return {r[0]: r[1] for r in rows}

    def linked_entity_ids(self, entity_ids: Sequence[str]) -> set[str]:
        """Those of the entities some item mentions or is anchored to."""
        rows = self._rows("UNWIND $ids AS x MATCH (:Item)-[:MENTIONS|ANCHORED_TO]->(e:Entity {id: x}) "
                           "RETURN DISTINCT e.id", {"ids": list(entity_ids)})
        return {r[0] for r in rows}

    def mentions_of(self, entity_ids: Sequence[str]) -> list[Row]:
        """MENTIONS edges into the entities (to move them when code is renamed)."""
        rows = self._rows("UNWIND $ids AS x MATCH (i:Item)-[l:MENTIONS]->(e:Entity {id: x}) "
                           "RETURN i.id, e.id, l.weight, l.surface", {"ids": list(entity_ids)})
        return [{"item": r[0], "entity": r[1], "weight": r[2], "surface": r[3]} for r in rows]

class _CodeEntityIndex:
    """File and symbol entities by name, qualname and path basename (rebuilt after writes)."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = {r["id"]: r for r in rows}
        self.by_name: dict[str, list[str]] = {}
        self.by_basename: dict[str, list[str]] = {}
        for r in rows:
            for key in {r["name"], r["qualname"]} - {""}:
                self.by_name.setdefault(key, []).append(r["id"])
            if r["path"]:
                self.by_basename.setdefault(r["path"].rsplit("/", 1)[-1], []).append(r["id"])


def schema_statements() -> list[str]:
    """The DDL of schema/graph.cypher, without comments, one statement each."""
    lines = [ln for ln in SCHEMA_FILE.read_text().splitlines() if not ln.strip().startswith("//")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _complete(rows: Iterable[Row], columns: dict[str, Any]) -> list[Row]:
    """Rows with every column present and None replaced by the column's default."""
    return [{c: (row.get(c) if row.get(c) is not None else default)
             for c, default in columns.items()} for row in rows]


def _link_prop(row: Row, prop: str) -> Any:
    value = row.get(prop)
    if value is not None:
        return value
    return 1.0 if prop == "weight" else 0.0 if prop == "at" else ""


def _link_table(kind: str) -> str:
    if kind not in LINK_ENDPOINTS:
        raise InvalidInput(f"unknown link kind {kind!r}")
    return kind


def _clean(node: dict[str, Any]) -> Row:
    return {k: v for k, v in node.items() if not k.startswith("_")}


def _observation(node: dict[str, Any]) -> Row:
    row = _clean(node)
    for column in OBSERVATION_JSON_COLUMNS:
        try:
            value = json.loads(row.get(column) or "{}")
        except ValueError:
            value = {}
        row[column] = value if isinstance(value, dict) else {}
    return row


# ItemFilter's fields as Cypher on the item variable {v}: (field, clause, how its value is
# passed). A field that is None is left out, and so is an empty tuple of kinds or statuses (an
# empty tuple of ids matches nothing).
_FILTER_CLAUSES = {
    "project": "{v}.project = $f_project",
    "kinds": "{v}.kind IN $f_kinds",
    "statuses": "{v}.status IN $f_statuses",
    "created_before": "{v}.created_at < $f_created_before",
    "now": "({v}.expire_at = 0 OR {v}.expire_at > $f_now)",
    "ids": "{v}.id IN $f_ids",
    "session_id": "{v}.session_id = $f_session_id",
}


def _where(flt: ItemFilter, var: str = "i") -> tuple[str, dict[str, Any]]:
    clauses, params = flt.conditions(_FILTER_CLAUSES, v=var)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _translate_query(exc: RuntimeError) -> GraphmemError:
    text = str(exc)
    if "lock" in text.lower():
        return StoreUnavailable(text)
    if "Cannot read from file" in text and "numBytesRead: 0 " in text:  # past its end: cut short
        return StoreCorrupt(f"store corrupt: {text.strip()}; run `graphmem rebuild`")
    return GraphmemError(f"graph query failed: {text}")



# ----- staleness queries (used by graphmem/staleness/)
# Id lists go through UNWIND + a primary-key match (a hash join): `id IN $ids` compares every row
# with every listed id, quadratic for the large lists of bulk writes.
_ANCHOR_RETURN = ("RETURN i.id, e.id, e.kind, e.path, e.qualname, l.hash, e.hash, l.commit, l.at, "
                  "i.status, i.stale_reason, i.title")
_ANCHOR_KEYS = ("item", "entity", "kind", "path", "qualname", "seen", "current", "commit", "at",
                "status", "reason", "title")


def _check_writes(path: Path, engine: str) -> None:
    """Write a row to every table of a copy of the database and close it (the checkpoint): some
    damage reads fine but crashes Kuzu when it writes the pages back. Skipped without room."""
    import shutil

    # its own copy: two processes that open the store after a crash probe it at once (a clean-clone run of
    # test_everything_at_once: "Could not set lock on file … graph.kuzu.probe" was told as a corrupt store)
    owner = os.getpid()
    copy = path.with_name(f"{path.name}{PROBE_COPY}.{owner}")
    try:
        if shutil.disk_usage(path.parent).free < 2 * path.stat().st_size + 64 * 1024 * 1024:
            return
        shutil.copyfile(path, copy)
    except OSError:
        _remove_probe_copy(path, owner)
        return
    try:
        store = KuzuStore(copy, checked=True, engine=engine)
        try:
            one = "graphmem-probe"
            ids = {"Item": one, "Entity": f"concept:{one}", "Observation": one}
            store._exec("BEGIN TRANSACTION")  # one commit: each costs a WAL fsync
            store._op_put_items(ops.PutItems([{"id": one}, {"id": one + "-2"}]))
            store._op_put_entities(ops.PutEntities([{"id": ids["Entity"]},
                                                    {"id": ids["Entity"] + "-2"}]))
            store._op_put_observations(ops.PutObservations([{"id": one}]))
            store._exec("CREATE (:ItemVector {id: $id, vec: $vec, model: '', text_hash: ''})",
                        {"id": one, "vec": [0.0] * VECTOR_DIM})  # no COPY: no numpy, no arrow
            for table in LINK_TABLES:
                source, target = LINK_ENDPOINTS[table]
                second = "-2" if source == target else ""
                store._op_put_links(ops.PutLinks(table, [
                    {"source": ids[source], "target": ids[target] + second}]))
            store._exec("COMMIT")
        finally:
            store.close()
    except StoreUnavailable:
        return  # its copy locked or not writable: that says nothing of the store's pages
    except GraphmemError as exc:
        raise StoreCorrupt(f"store corrupt: {path} fails a write ({exc}); run `graphmem rebuild`") \
            from exc
    finally:
        _remove_probe_copy(path, owner)


def _remove_probe_copy(path: Path, owner: int) -> None:
    """Remove the copy the probe of process `owner` wrote, and what probes of processes no longer alive left
    (not another live process's copy, which its probe is writing to now)."""
    for leftover in path.parent.glob(path.name + PROBE_COPY + "*"):
        mark = leftover.name[len(path.name + PROBE_COPY):].lstrip(".").split(".", 1)[0]
        if mark.isdigit() and int(mark) != owner and _alive(int(mark)):
            continue
        try:
            leftover.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: alive
    return True


def _probe_main(argv: list[str]) -> int:
    """`python -m graphmem.store.kuzu --probe PATH [--read-only] [--engine NAME]`: open the
    database and read it all; exit 0, or with the exit code of the error met (a crash kills only
    this process)."""
    usage = "usage: python -m graphmem.store.kuzu --probe PATH [--read-only] [--engine NAME]"
    if len(argv) < 2 or argv[0] != "--probe":
        print(usage, file=sys.stderr)
        return 2
    path = Path(argv[1])
    read_only = "--read-only" in argv[2:]
    engine = DEFAULT_ENGINE
    if "--engine" in argv[2:]:
        at = argv.index("--engine", 2)
        if at + 1 >= len(argv):
            print(usage, file=sys.stderr)
            return 2
        engine = argv[at + 1]
    try:
        store = KuzuStore(path, read_only=read_only, checked=True, engine=engine)
        try:
            store.check()
        finally:
            store.close()
        if not read_only:
            _check_writes(path, engine)
    except GraphmemError as exc:
        print("graphmem-probe: " + " ".join(str(exc).split()), file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(_probe_main(sys.argv[1:]))


APPLIERS: dict[type[ops.Op], str] = {cls: f"_op_{cls.name}" for cls in ops.OPS.values()}
