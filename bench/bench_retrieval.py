"""Retrieval benchmark: quality on the dev datasets beside BM25 and pure-vector baselines, and
warm search latency at 10k / 100k items.

    python bench/bench_retrieval.py --data ../shared/bench-data [--quick] [--ablations]

Quality: each dataset is loaded once into a fresh graphmem store (the real ingest path:
extraction, linking, MiniLM embeddings); graphmem (all channels) runs with each query context,
"vector-only" is our vector channel alone on the same store, and "BM25" is an independent bm25s
index (English stopwords, Snowball stemmer), restricted to the query's scope and as-of time like
everything else. Latency: Memory.search (k=10, no logging), warm, in-process, query embedding
included, over synthetic items (see `synthetic_items`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from graphmem import evaluate as ev
from graphmem.config import Config, RetrievalWeights
from graphmem.store import ops

HISTORY_CONTEXTS = ("none", "files", "files+functions", "live")
DATASETS = {"locomo-dev": ("none",), "repohist-requests": HISTORY_CONTEXTS}
PUBLISHED = [("locomo-dev", "DRAGON (paper, 10 convs)", "none", 56.7, 66.2, None, None)]
TARGETS = [("locomo-dev", "target: > DRAGON, no LLM", "none", 56.7, 66.2, None, None),
           ("repohist-requests", "target", "files", None, None, 0.90, 0.70),
           ("repohist-requests", "target: clearly > BM25", "none", None, None, None, None)]
# One feature off at a time (defaults otherwise): what each retrieval change is worth.
ABLATIONS: dict[str, dict[str, Any]] = {
    "- context expansion": {"context_next": 0.0, "context_previous": 0.0},
    "- as-of recency": {"query_recency": 0.0},
    "+ entity IDF (off by default)": {"entity_idf": True},
    "- symbol specificity (1)": {"symbol_specificity": 1.0},
    "- graph (file→functions)": {"graph": 0.0},
    "- score fusion (RRF)": {"fusion": "rrf"},
    "seed pipeline (RRF 1/.5/1/1)": {"fusion": "rrf", "entity": 1.0, "graph": 0.5, "vector": 1.0,
                                     "keyword": 1.0, "context_next": 0.0,
                                     "context_previous": 0.0, "query_recency": 0.0,
                                     "entity_idf": False},
}
Row = tuple[str, str, str, float | None, float | None, float | None, float | None]


# ----- baselines ---------------------------------------------------------------------------------
def _stemmer() -> tuple[Any, str]:
    try:
        import Stemmer

        return Stemmer.Stemmer("english"), "stemmed"
    except ImportError:  # PyStemmer missing: an unstemmed baseline, labelled as such
        return None, "unstemmed"


def bm25_run(items: Sequence[dict], queries: Sequence[dict], context: str = "none"
             ) -> tuple[dict[str, list[str]], str]:
    """bm25s per scope; with context 'files', items sharing a query file come first (each item's
    files as named today, `files_canonical`, when it has them: what graphmem links to too)."""
    import bm25s

    stemmer, label = _stemmer()
    by_scope: dict[str, list[dict]] = {}
    for item in items:
        by_scope.setdefault(item["scope"], []).append(item)
    indexes = {}
    for scope, rows in by_scope.items():
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([r["text"] for r in rows], stopwords="en", stemmer=stemmer,
                                       show_progress=False), show_progress=False)
        indexes[scope] = retriever
    run: dict[str, list[str]] = {}
    for query in queries:
        rows = by_scope.get(query["scope"], [])
        if not rows:
            run[query["qid"]] = []
            continue
        tokens = bm25s.tokenize([query["text"]], stopwords="en", stemmer=stemmer, show_progress=False)
        scores = np.zeros(len(rows)) if not tokens.vocab else \
            indexes[query["scope"]].get_scores([t for t in tokens.vocab if t])
        as_of = query.get("as_of_unix")
        times = [ev.item_time(r) for r in rows]
        files = set(query.get("files") or []) if context != "none" else set()
        keyed = []
        for n, row in enumerate(rows):
            if as_of is not None and (times[n] is None or times[n] >= as_of):
                continue
            same_file = bool(files & set(row.get("files_canonical") or row.get("files") or []))
            keyed.append((not same_file, -scores[n], n))
        run[query["qid"]] = [rows[n]["id"] for _, _, n in sorted(keyed)[:100]]
    return run, label


# ----- quality -----------------------------------------------------------------------------------
Context = tuple[list[str], list[str], dict[str, float]]


def _as_context(entries: Sequence[Any]) -> Context:
    return ([e.name for e in entries if e.kind == "file"],
            [e.name for e in entries if e.kind == "symbol"], {e.name: e.weight for e in entries})


def live_context(query: dict) -> Context:
    """A history query's context as the live derivation weighs it (retrieve/live.py `derive`,
    which the prompt hook and memory_search run): the commit's files as if read, then each
    edited, its diff's functions (the dataset's `functions`) standing for the edits' spans."""
    from graphmem.retrieve import live

    files = [str(f) for f in query.get("files") or []]
    functions = [str(f) for f in query.get("functions") or []]
    touches = [live.Touch(f, "read", float(n)) for n, f in enumerate(files)]
    touches += [live.Touch(f, "edit", float(len(files) + n),
                           symbols=tuple(q for q in functions if q.startswith(f + "::")))
                for n, f in enumerate(files)]
    return _as_context(live.derive(touches, lambda path, spans: []))


def work_tree_contexts(repo: Path, queries: Sequence[dict]) -> dict[str, Context]:
    """Each history query's live context derived end to end, as in a session: a clone at the
    commit's parent with the commit's diff applied and not committed (the work tree's
    uncommitted change: git diff, hunks, functions by the parser) and a spool where the session
    read each of the commit's files. Needs the repository the set was built from."""
    from graphmem import git
    from graphmem.capture.event import HookEvent
    from graphmem.capture.spool import Spool
    from graphmem.retrieve import live

    out: dict[str, Context] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-live-") as tmp:
        work = Path(tmp) / "work"
        git.run(["clone", "-q", "--shared", str(repo), str(work)], tmp)
        for n, query in enumerate(queries):
            sha = str(query["sha"])
            git.run(["checkout", "-q", "-f", "--detach", f"{sha}^"], work)
            git.run(["clean", "-q", "-fdx"], work)
            patch = git.run(["diff", "--binary", f"{sha}^", sha], work).stdout
            git.run(["apply", "--index", "-"], work, input=patch)
            spool = Spool(Path(tmp) / f"spool-{n}")
            for at, path in enumerate(query.get("files") or []):
                if (work / path).exists():
                    spool.append(HookEvent("post-tool", session_id="bench", cwd=str(work),
                                           tool="Read", files=[str(work / path)], ts=float(at)))
            out[query["qid"]] = _as_context(live.LiveContext(work, spool.directory)
                                            .entries("bench"))
    return out


def rank_live(memory: Any, queries: Sequence[dict], contexts: dict[str, Context] | None = None,
              k: int = 100) -> dict[str, list[str]]:
    run = {}
    for query in queries:
        files, symbols, weights = (contexts[query["qid"]] if contexts is not None
                                   else live_context(query))
        as_of = query.get("as_of_unix")
        run[query["qid"]] = memory.rank(query["text"], files=files, symbols=symbols, k=k,
                                        as_of=float(as_of) if as_of is not None else None,
                                        project=str(query["scope"]), context_weights=weights)
    return run


def rank(memory: Any, queries: Sequence[dict], context: str,
         contexts: dict[str, Context] | None = None) -> dict[str, list[str]]:
    if context == "live":
        return rank_live(memory, queries, contexts)
    return ev.rank_queries(memory, queries, context=context)


def _source_repo(folder: Path) -> Path | None:
    """The repository a build_history.py set came from, when it is here."""
    try:
        repo = Path(json.loads((folder / "stats.json").read_text())["repository"])
    except (OSError, ValueError, KeyError):
        return None
    return repo if (repo / ".git").exists() else None


def quality(data: Path, ablations: bool, server_url: str | None = None,
            histories: Sequence[Path] = (), only: Sequence[str] = ()
            ) -> tuple[list[Row], list[str]]:
    """With `server_url`, graphmem runs a second time on each dataset with its store on that
    PostgreSQL server (a fresh database per dataset), printed beside the embedded store.
    `histories`: more repohist sets (bench/build_history.py), measured like requests."""
    from graphmem.service import Memory

    rows: list[Row] = []
    notes: list[str] = []
    sets = [(data / name, name, contexts) for name, contexts in DATASETS.items()]
    sets += [(Path(h), Path(h).name, HISTORY_CONTEXTS) for h in histories]
    for folder, name, contexts in sets:
        if only and name not in only:
            continue
        if not folder.is_dir():
            notes.append(f"{name}: not found under {data}, skipped")
            continue
        items = ev.load_items(folder / "items.jsonl")
        queries = ev.load_queries(folder / "queries.jsonl")
        repo = _source_repo(folder) if "live" in contexts else None
        derived = work_tree_contexts(repo, queries) if repo is not None else None
        if "live" in contexts:
            notes.append(f"{name} live: " + (
                f"derived end to end in a clone of {repo} (each commit's diff uncommitted on "
                "its parent, its files read in a spooled session)" if derived is not None else
                "the commit's files read then edited, its functions as the edits' spans "
                "(retrieve/live.derive; the repository is not here)"))

        def add(system: str, context: str, run: dict[str, list[str]],
                name: str = name, queries: list[dict] = queries) -> None:
            m, _ = ev.score_run(run, queries)
            rows.append((name, system, context, 100 * m.recall_at_5, 100 * m.recall_at_10,
                         m.hit_at_10, m.mrr))
            print(f"  {name:18} {system:44} {context:16} R@5 {100 * m.recall_at_5:5.1f} "
                  f"R@10 {100 * m.recall_at_10:5.1f} hit@10 {m.hit_at_10:.3f} MRR {m.mrr:.3f}",
                  file=sys.stderr, flush=True)

        run, label = bm25_run(items, queries)
        add(f"BM25 (bm25s, {label})", "none", run)
        if "files" in contexts:
            add(f"files→BM25 (bm25s, {label})", "files", bm25_run(items, queries, "files")[0])
        if server_url is not None:
            from bench_postgres import fresh_database

            url = fresh_database(server_url, "quality_" + name.replace("-", "_"))
            with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as tmp, \
                    Memory(ev.eval_config(tmp).model_copy(update={"database_url": url})) as memory:
                started = time.perf_counter()
                ev.load_store(memory, items)
                notes.append(f"{name} on postgres: {len(items)} items loaded in "
                             f"{time.perf_counter() - started:.0f} s")
                for context in contexts:
                    started = time.perf_counter()
                    add("graphmem on postgres", context, rank(memory, queries, context, derived))
                    notes.append(f"{name} graphmem on postgres {context}: "
                                 f"{1000 * (time.perf_counter() - started) / len(queries):.0f} "
                                 "ms/query")
        with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as tmp, \
                Memory(ev.eval_config(tmp)) as memory:
            started = time.perf_counter()
            ev.load_store(memory, items)
            notes.append(f"{name}: {len(items)} items loaded (extract + link + embed) in "
                         f"{time.perf_counter() - started:.0f} s; {len(queries)} queries")
            # the vector channel alone: no context expansion, no as-of recency
            memory.config.weights = RetrievalWeights(context_next=0.0, context_previous=0.0,
                                                     query_recency=0.0)
            add("vector-only (MiniLM)", "none",
                ev.rank_queries(memory, queries, channels=["vector"]))
            memory.config.weights = RetrievalWeights()
            for context in contexts:
                started = time.perf_counter()
                add("graphmem", context, rank(memory, queries, context, derived))
                notes.append(f"{name} graphmem {context}: "
                             f"{1000 * (time.perf_counter() - started) / len(queries):.0f} ms/query")
            if ablations:
                for label_, change in ABLATIONS.items():
                    memory.config.weights = RetrievalWeights(**change)
                    for context in contexts:
                        add(f"graphmem {label_}", context,
                            rank(memory, queries, context, derived))
                memory.config.weights = RetrievalWeights()
    return rows, notes


def format_quality(rows: Sequence[Row]) -> str:
    def cell(value: float | None, fmt: str) -> str:
        return format(value, fmt) if value is not None else "–".rjust(int(fmt.split(".")[0]))

    head = (f"{'dataset':<18} {'system':<44} {'context':<16} {'R@5':>6} {'R@10':>6} "
            f"{'Hit@10':>7} {'MRR':>6}")
    lines = [head]
    everything = list(rows) + list(PUBLISHED) + list(TARGETS)
    order = {name: n for n, name in enumerate(DATASETS)}
    for dataset, system, context, r5, r10, hit, mrr in sorted(
            everything, key=lambda r: (order.get(r[0], 99), r[0])):
        lines.append(f"{dataset:<18} {system[:44]:<44} {context:<16} {cell(r5, '6.1f')} "
                     f"{cell(r10, '6.1f')} {cell(hit, '7.3f')} {cell(mrr, '6.3f')}")
    return "\n".join(lines)


# ----- latency -----------------------------------------------------------------------------------
AREAS = ("config", "session", "retry", "proxy", "auth", "cookie", "redirect", "stream", "cache",
         "upload", "tls", "pool", "hooks", "logging", "cli", "migration", "schema", "router")
VERBS = ("fix", "handle", "refactor", "document", "guard", "speed up", "test", "rename", "log",
         "validate")
ERRORS = ("KeyError", "TimeoutError", "ConnectionResetError", "HTTP 503", "exit 137",
          "UnicodeDecodeError", "ValueError", "SSLError")
TEMPLATES = (
    "{verb} {area} when {error} is raised in {func}() of {path}",
    "Decision: {area} uses {other} instead of a custom {thing}; see {path}",
    "Pitfall: {func}() in {path} swallows {error}; wrap the {thing} call",
    "Convention: every {area} helper lives in {path} and is named {func}",
    "{verb} {thing} handling in {path}: {func} now retries {n} times on {error}",
    "Env: set {env}={n} before running the {area} tests (pytest -k {area})",
)
THINGS = ("parser", "client", "adapter", "pool", "header map", "queue", "serializer", "loader")
ENVS = ("APP_TIMEOUT", "HTTP_PROXY", "LOG_LEVEL", "DATABASE_URL", "CACHE_DIR")


def synthetic_items(n: int, project: str, seed: int = 7) -> list[dict[str, Any]]:
    """Realistic-ish coding memories from templates: files, functions, errors, env vars."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        area, other = rng.choice(AREAS, 2, replace=False)
        path = f"src/{area}/{rng.choice(AREAS)}_{int(rng.integers(0, 40))}.py"
        func = f"{rng.choice(('load', 'send', 'parse', 'get', 'build', 'close'))}_{area}"
        text = str(rng.choice(TEMPLATES)).format(
            verb=rng.choice(VERBS), area=area, other=other, error=rng.choice(ERRORS), func=func,
            path=path, thing=rng.choice(THINGS), n=int(rng.integers(2, 9)), env=rng.choice(ENVS))
        rows.append({"id": f"s{i:06d}", "scope": project, "text": text[0].upper() + text[1:],
                     "ts_unix": 1_700_000_000 + 60 * i, "files": [path],
                     "functions": [f"{path}::{func}"]})
    return rows


def bulk_write(memory: Any, rows: Sequence[dict[str, Any]], vectors: np.ndarray,
               batch: int = 5000) -> None:
    """Write items, vectors, file/symbol entities and their links with the store ops
    add_items ends with (no journal; extraction and per-mention linking skipped: ingest cost,
    not search cost); search_text is built by the service's own row builder."""
    items, _, _ = ev.to_memory_items(rows)
    model = memory.embedder.model_id
    seen: set[str] = set()
    for start in range(0, len(items), batch):
        chunk = range(start, min(start + batch, len(items)))
        memory.store.apply(ops.PutItems([memory._item_row(items[i]) for i in chunk]))
        memory.store.apply(ops.PutVectors([
            {"id": items[i].id, "vec": vectors[i].tolist(), "model": model,
             "text_hash": items[i].text_hash} for i in chunk]))
        entities, links = [], []
        for i in chunk:
            for path in rows[i]["files"]:
                links.append({"source": items[i].id, "target": f"file:?{path}", "weight": 1.0,
                              "surface": path})
                if f"file:?{path}" not in seen:
                    seen.add(f"file:?{path}")
                    entities.append({"id": f"file:?{path}", "kind": "file", "name": path,
                                     "path": path, "resolved": False})
            for qual in rows[i]["functions"]:
                links.append({"source": items[i].id, "target": f"symbol:?{qual}", "weight": 1.0,
                              "surface": qual})
                if f"symbol:?{qual}" not in seen:
                    seen.add(f"symbol:?{qual}")
                    path, name = qual.split("::", 1)
                    entities.append({"id": f"symbol:?{qual}", "kind": "symbol", "name": name,
                                     "path": path, "qualname": qual, "resolved": False})
        if entities:
            memory.store.apply(ops.PutEntities(entities))
        memory.store.apply(ops.PutLinks("MENTIONS", links))


def latency(scales: Sequence[int], queries: int = 200) -> tuple[list[str], list[str]]:
    from graphmem.service import Memory

    config = Config.from_env()
    distinct = min(10_000, max(scales))
    base_rows = synthetic_items(distinct, "bench")
    rng = np.random.default_rng(11)
    probes = synthetic_items(queries + 20, "probe", seed=99)
    head = (f"{'items':>8} {'p50 ms':>8} {'p95 ms':>8} {'p50 +files':>11} {'p95 +files':>11} "
            f"{'target p95':>11} {'load s':>8}")
    lines = [head]
    notes: list[str] = []
    base: np.ndarray | None = None
    for scale in scales:
        with tempfile.TemporaryDirectory(prefix="graphmem-lat-") as tmp, \
                Memory(ev.eval_config(tmp)) as memory:
            if base is None:
                started = time.perf_counter()
                base = memory.embedder.encode([r["text"] for r in base_rows])
                notes.append(f"embedded {distinct:,} distinct synthetic texts with MiniLM in "
                             f"{time.perf_counter() - started:.0f} s "
                             f"({config.embed_threads} thread(s))")
            rows = synthetic_items(scale, "bench")
            vectors = np.empty((scale, base.shape[1]), dtype=np.float32)
            for i, row in enumerate(rows):
                vectors[i] = base[i % distinct]
                if i >= distinct:  # copy n of a text: tagged text, base vector + small noise
                    row["text"] = f"{row['text']} (#{i // distinct})"
                    noisy = vectors[i] + rng.normal(0, 0.02, size=base.shape[1])
                    vectors[i] = noisy / np.linalg.norm(noisy)
            started = time.perf_counter()
            bulk_write(memory, rows, vectors)
            load_seconds = time.perf_counter() - started
            for probe in probes[:20]:  # warm: model, HNSW index build, FTS, timeline
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
        target = "30" if scale <= 10_000 else "80"
        lines.append(f"{scale:>8,} {_pct(plain, 50):>8.1f} {_pct(plain, 95):>8.1f} "
                     f"{_pct(with_files, 50):>11.1f} {_pct(with_files, 95):>11.1f} "
                     f"{target:>11} {load_seconds:>8.0f}")
        print(f"  {lines[-1]}", file=sys.stderr, flush=True)
    notes.append(f"items: template texts (files, functions, errors, env vars) in one project; "
                 f"beyond the first {distinct:,} they repeat, tagged with a copy number, with "
                 "the base text's MiniLM vector + N(0, 0.02) noise, renormalised; loaded "
                 "with the store's write ops (items, vectors, file/symbol entities, "
                 "MENTIONS links), skipping per-item extraction; 'load s' excludes embedding. "
                 "Probes: 200 other template texts, embedded live by MiniLM, '+files' passes "
                 "the probe's file as context")
    return lines, notes


def _pct(values: Sequence[float], p: float) -> float:
    return 1000 * statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 \
        else 1000 * values[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/bench-data", help="bench-data folder")
    parser.add_argument("--scale", default="10000,100000", help="latency store sizes")
    parser.add_argument("--quick", action="store_true", help="skip sizes above 10k")
    parser.add_argument("--ablations", action="store_true", help="one feature off at a time")
    parser.add_argument("--history", action="append", default=[], help="another repohist set "
                        "(a folder bench/build_history.py wrote); repeatable")
    parser.add_argument("--only", action="append", default=[], help="only these datasets "
                        "(folder names); repeatable")
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--postgres", action="store_true",
                        help="quality on the PostgreSQL store too, beside the embedded one")
    parser.add_argument("--database-url", help="with --postgres: the server (default: a "
                        "throwaway pgserver PostgreSQL)")
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scale.split(",") if s.strip()]
    if args.quick:
        scales = [s for s in scales if s <= 10_000] or [10_000]
    if not args.no_quality:
        with contextlib.ExitStack() as stack:
            server_url = None
            if args.postgres:
                from bench_postgres import server

                server_url = stack.enter_context(server(args.database_url))
            rows, notes = quality(Path(args.data), args.ablations, server_url,
                                  [Path(h) for h in args.history], args.only)
        print("\n== retrieval quality (recall in %, MRR over the top 100) ==")
        print(format_quality(rows))
        for note in notes:
            print(f"  {note}")
    if not args.no_latency:
        lines, notes = latency(scales)
        print("\n== search latency: Memory.search k=10, warm, in-process, query embedding "
              "included ==")
        print("\n".join(lines))
        for note in notes:
            print(f"  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
