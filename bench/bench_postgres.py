"""PostgreSQL store benchmark, printed beside the embedded store in the same run: bulk ingest
without embeddings, and warm search latency at 10k and 100k items, query embedding included.

    python bench/bench_postgres.py [--database-url postgresql://…] [--scale 10000,100000]

Without --database-url a throwaway PostgreSQL 16 + pgvector (the pgserver wheel) is started on
127.0.0.1 with full durability (fsync on) and the settings printed below. Each engine gets the same
items (bench_retrieval's synthetic coding memories: 10k distinct texts embedded once by MiniLM,
copies beyond them with noisy vectors), written with the store's ops: items in batches of 5,000
(on PostgreSQL each batch is one op log record, its rows copied into a staging table with COPY and
upserted), vectors (PostgreSQL: binary COPY, the HNSW index built once after), file and symbol
entities and MENTIONS links. Search: Memory.search k=10, warm, in-process, 200 probe texts
embedded live; '+files' passes the probe's file as context.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench.bench_retrieval import _pct, synthetic_items
from graphmem import evaluate as ev
from graphmem.service import Memory
from graphmem.store import ops

BATCH = 5000
SERVER_SETTINGS = ("-c shared_buffers=1GB -c maintenance_work_mem=1GB -c work_mem=16MB "
                   "-c effective_cache_size=4GB -c max_parallel_maintenance_workers=1")


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """The server to measure: `url`, or a throwaway pgserver cluster."""
    if url:
        yield url
        return
    from tests.postgres_server import LOCAL_ONLY, Cluster

    cluster = Cluster(f"{LOCAL_ONLY} {SERVER_SETTINGS}")
    try:
        yield cluster.url
    finally:
        cluster.stop()


def fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def rows_and_vectors(scale: int, base: np.ndarray, distinct: int) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(11)
    rows = synthetic_items(scale, "bench")
    vectors = np.empty((scale, base.shape[1]), dtype=np.float32)
    for i, row in enumerate(rows):
        vectors[i] = base[i % distinct]
        if i >= distinct:
            row["text"] = f"{row['text']} (#{i // distinct})"
            noisy = vectors[i] + rng.normal(0, 0.02, size=base.shape[1])
            vectors[i] = noisy / np.linalg.norm(noisy)
    return rows, vectors


def load(memory: Any, rows: Sequence[dict], vectors: np.ndarray) -> dict[str, float]:
    """Seconds for items, vectors, and entities + links, written with the store's ops."""
    items, _, _ = ev.to_memory_items(rows)
    model = memory.embedder.model_id
    store = memory.store
    took: dict[str, float] = {}
    started = time.perf_counter()
    for start in range(0, len(items), BATCH):
        store.apply(ops.PutItems([memory._item_row(i) for i in items[start:start + BATCH]]))
    took["items"] = time.perf_counter() - started
    started = time.perf_counter()
    deferred = store._vector_index_deferred() if store.engine == "postgres" else nullcontext()
    with deferred:
        for start in range(0, len(items), BATCH):
            store.apply(ops.PutVectors([
                {"id": items[i].id, "vec": vectors[i].tolist(), "model": model,
                 "text_hash": items[i].text_hash}
                for i in range(start, min(start + BATCH, len(items)))]))
    took["vectors"] = time.perf_counter() - started
    started = time.perf_counter()
    entities: dict[str, dict] = {}
    links = []
    for item, row in zip(items, rows):
        for path in row["files"]:
            entities.setdefault(f"file:?{path}", {"id": f"file:?{path}", "kind": "file",
                                                  "name": path, "path": path, "resolved": False})
            links.append({"source": item.id, "target": f"file:?{path}", "weight": 1.0,
                          "surface": path})
        for qual in row["functions"]:
            path, name = qual.split("::", 1)
            entities.setdefault(f"symbol:?{qual}", {"id": f"symbol:?{qual}", "kind": "symbol",
                                                    "name": name, "path": path, "qualname": qual,
                                                    "resolved": False})
            links.append({"source": item.id, "target": f"symbol:?{qual}", "weight": 1.0,
                          "surface": qual})
    store.apply(ops.PutEntities(list(entities.values())))
    for start in range(0, len(links), BATCH):
        store.apply(ops.PutLinks("MENTIONS", links[start:start + BATCH]))
    took["links"] = time.perf_counter() - started
    return took


def channels(memory: Memory, probes: Sequence[dict], vectors: np.ndarray
             ) -> tuple[list[float], list[float]]:
    """Seconds of the store's keyword search and vector search alone (k=50, the project's
    items), each probe's vector made beforehand."""
    from graphmem.store.base import ItemFilter

    flt = ItemFilter(project="bench")
    keyword, vector = [], []
    for probe, vec in zip(probes, vectors):
        t0 = time.perf_counter()
        memory.store.keyword_search(probe["text"], 50, flt)
        t1 = time.perf_counter()
        memory.store.vector_search(vec.tolist(), 50, flt)
        t2 = time.perf_counter()
        keyword.append(t1 - t0)
        vector.append(t2 - t1)
    return keyword, vector


def searches(memory: Memory, probes: Sequence[dict]) -> tuple[list[float], list[float]]:
    for probe in probes[:20]:  # warm: model, caches, the mirror on the embedded store
        memory.search(probe["text"], files=probe["files"], k=10, log=False, project="bench")
    plain, with_files = [], []
    for probe in probes[20:]:
        t0 = time.perf_counter()
        memory.search(probe["text"], k=10, log=False, project="bench")
        t1 = time.perf_counter()
        memory.search(probe["text"], files=probe["files"], k=10, log=False, project="bench")
        t2 = time.perf_counter()
        plain.append(t1 - t0)
        with_files.append(t2 - t1)
    return plain, with_files


def sizes(memory: Memory) -> str:
    """The PostgreSQL relations' sizes, in MB."""
    row = memory.store._rows(
        "SELECT pg_total_relation_size('items') AS items, "
        "pg_relation_size('item_vectors') AS vectors, "
        "pg_relation_size('item_vectors_hnsw') AS hnsw, "
        "pg_total_relation_size('item_words') AS words, "
        "pg_database_size(current_database()) AS db")[0]
    return " ".join(f"{k} {v / 2**20:,.0f}" for k, v in row.items())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="a server to measure (default: a throwaway one)")
    parser.add_argument("--scale", default="10000,100000", help="store sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--engines", default="embedded,postgres",
                        help="which to measure (the embedded store's figures do not change with "
                        "PostgreSQL work: postgres alone halves the run)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the throwaway server too
    scales = [int(s) for s in args.scale.split(",") if s.strip()]
    distinct = min(10_000, max(scales))
    probes = synthetic_items(args.queries + 20, "probe", seed=99)
    lines = [(f"{'engine':<9} {'items':>8} {'items/s':>9} {'+vectors/s':>11} {'links s':>8} "
              f"{'p50 ms':>7} {'p95 ms':>7} {'p50 +files':>11} {'p95 +files':>11} "
              f"{'target p95':>11} {'kw p95':>7} {'vec p95':>7}")]
    notes: list[str] = []
    with server(args.database_url) as url, tempfile.TemporaryDirectory(prefix="graphmem-bench-") as tmp:
        base: np.ndarray | None = None
        for scale in scales:
            for engine in [e for e in ("embedded", "postgres") if e in args.engines.split(",")]:
                directory = Path(tmp) / f"{engine}-{scale}"
                config = ev.eval_config(directory)
                if engine == "postgres":
                    config = config.model_copy(update={"database_url": fresh_database(
                        url, f"bench_{scale}")})
                with Memory(config) as memory:
                    if base is None:
                        started = time.perf_counter()
                        base = memory.embedder.encode(
                            [r["text"] for r in synthetic_items(distinct, "bench")])
                        notes.append(f"embedded {distinct:,} distinct texts with MiniLM in "
                                     f"{time.perf_counter() - started:.0f} s (not in any rate)")
                    rows, vectors = rows_and_vectors(scale, base, distinct)
                    took = load(memory, rows, vectors)
                    plain, with_files = searches(memory, probes)
                    keyword, vector = channels(memory, probes[20:], memory.embedder.encode(
                        [p["text"] for p in probes[20:]]))
                    if engine == "postgres":
                        notes.append(f"postgres {scale:,}: MB {sizes(memory)}")
                target = "30" if engine == "embedded" and scale <= 10_000 else "80"
                lines.append(
                    f"{engine:<9} {scale:>8,} {scale / took['items']:>9,.0f} "
                    f"{scale / (took['items'] + took['vectors']):>11,.0f} {took['links']:>8.1f} "
                    f"{_pct(plain, 50):>7.1f} {_pct(plain, 95):>7.1f} "
                    f"{_pct(with_files, 50):>11.1f} {_pct(with_files, 95):>11.1f} {target:>11} "
                    f"{_pct(keyword, 95):>7.1f} {_pct(vector, 95):>7.1f}")
                print(f"  {lines[-1]}", file=sys.stderr, flush=True)
    print("\n== bulk ingest without embeddings, and Memory.search k=10 warm, query embedding "
          "included ==")
    print("\n".join(lines))
    if not args.database_url:
        notes.append(f"server: pgserver PostgreSQL 16 + pgvector, fsync on, {SERVER_SETTINGS}")
    notes.append("kw p95, vec p95: the store's keyword and vector search alone, k=50, in ms")
    notes.append("ingest target >= 1,000 items/s without embedding (both engines); the "
                 "HNSW index (m 16, ef_construction 64: pgvector's defaults; ef_search: the k "
                 "asked, at least 40) is built once after the vectors' COPY")
    for note in notes:
        print(f"  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
