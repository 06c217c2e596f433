"""Store benchmark: bulk insert with pre-computed vectors, get, 2-hop neighbours, hybrid search."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.kuzu import KuzuStore

WORDS = ["parse", "config", "session", "adapter", "retry", "timeout", "proxy", "auth", "cookie", "redirect", "header", "stream", "chunk", "encoding", "json", "certificate", "pool", "socket", "ssl", "verify", "mount", "hook", "response", "request", "charset", "netrc", "digest", "basic", "tls", "chunked"]


def pct(values: list[float], p: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * p))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    n = args.items
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [{"id": f"i{i}", "project": "bench", "kind": "note",
             "title": " ".join(rng.choice(WORDS, 6)), "body": " ".join(rng.choice(WORDS, 30)),
             "created_at": float(i)} for i in range(n)]
    for row in rows:
        row["search_text"] = row["title"] + " " + row["body"]
    files = [f"src/mod{j}.py" for j in range(n // 20)]
    with tempfile.TemporaryDirectory() as tmp:
        store = KuzuStore(Path(tmp) / "g.kuzu")
        t0 = time.perf_counter()
        store.apply(ops.PutItems(rows))
        t1 = time.perf_counter()
        store.apply(ops.PutVectors([{"id": r["id"], "vec": vectors[i].tolist(),
                                                    "model": "bench", "text_hash": ""}
                                                   for i, r in enumerate(rows)]))
        t2 = time.perf_counter()
        t3 = time.perf_counter()
        store.apply(ops.PutEntities([{"id": f"file:{f}", "kind": "file", "name": f,
                                                     "path": f} for f in files]))
        store.apply(ops.PutLinks("IMPORTS", [
            {"source": f"file:{files[j]}", "target": f"file:{files[(j * 7 + 1) % len(files)]}"}
            for j in range(len(files))]))
        store.apply(ops.PutLinks("MENTIONS", [
            {"source": f"i{i}", "target": f"file:{files[i % len(files)]}", "weight": 1.0,
             "surface": ""} for i in range(n)]))
        t4 = time.perf_counter()
        assert store.hot is not None  # the search mirror: filters, vectors, links, BM25 postings
        t5 = time.perf_counter()
        flt = ItemFilter(project="bench")
        gets, hops, searches = [], [], []
        for q in range(args.queries):
            ids = [f"i{rng.integers(n)}"]
            s = time.perf_counter()
            store.get_items(ids)
            gets.append(time.perf_counter() - s)
            s = time.perf_counter()
            near = store.entity_neighbours([f"file:{files[q % len(files)]}"], hops=2)
            store.items_mentioning(list(near), flt)
            hops.append(time.perf_counter() - s)
            s = time.perf_counter()
            store.keyword_search(" ".join(rng.choice(WORDS, 3)), 20, flt)
            store.vector_search(vectors[rng.integers(n)].tolist(), 20, flt)
            searches.append(time.perf_counter() - s)
        store.close()
    print(f"store benchmark on {store.engine} (GRAPHMEM_ENGINE), {n:,} items (vectors pre-computed), medians over {args.queries} queries")
    print(f"  insert items            {n / (t1 - t0):>10,.0f} items/s   ({t1 - t0:.2f} s)")
    print(f"  insert vectors (COPY)   {n / (t2 - t1):>10,.0f} items/s   ({t2 - t1:.2f} s)")
    print(f"  entities + 10k links    {t4 - t3:>10.2f} s")
    print(f"  build search mirror     {t5 - t4:>10.2f} s")
    print(f"  items/s incl. vectors   {n / (t2 - t0):>10,.0f}         (target >= 1,000 without embedding)")
    print(f"  get p50                 {statistics.median(gets) * 1000:>10.2f} ms")
    print(f"  2-hop + items p50       {statistics.median(hops) * 1000:>10.2f} ms")
    print(f"  keyword+vector p50/p95  {statistics.median(searches) * 1000:>10.2f} / "
          f"{pct(searches, 0.95):.2f} ms  (target p95 <= 30 ms incl. query embedding)")


if __name__ == "__main__":
    main()
