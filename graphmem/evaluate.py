"""Retrieval evaluation: load an items/queries JSONL pair into a fresh store, rank, score.

Format (the one of ../shared/bench-data): `items.jsonl` has one memory per line (`id`, `scope`,
`text`, optional `ts`/`ts_unix`, `files`, `functions`, `title`, `kind`, ...); `queries.jsonl`
one query per line (`qid`, `scope`, `text` or `question`, `expected`, optional `files`,
`functions`, `as_of_unix`, `category`/`category_name`). Retrieval is restricted to the query's
scope and, with `as_of_unix`, to items created before it. Metrics: recall@k = |expected ∩ top-k|
/ |expected|, hit@k = any expected in the top k, MRR = 1 / rank of the first expected id within
the top 100 (else 0); averaged over queries that have expected ids.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem.config import Config, RetrievalWeights
from graphmem.errors import GraphmemError, InvalidInput
from graphmem.exporting import json_object
from graphmem.retrieve.fusion import CHANNELS as CHANNEL_NAMES

CONTEXTS = ("none", "files", "files+functions")
BATCH = 512
MRR_DEPTH = 100
TITLE_CHARS = 200


# ----- reading ----------------------------------------------------------------------------------
# The fields eval reads, by the type they must have when present.
_STRINGS = ("scope", "text", "question", "title", "kind")
_IDS = ("id", "qid")
_LISTS = ("expected", "files", "files_canonical", "functions")
_NUMBERS = ("ts_unix", "as_of_unix")


def _read_jsonl(path: str | Path, required: Sequence[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    rows.append(_row(line, f"{path}:{number}", required))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text") from exc
    return rows


def _row(line: str, where: str, required: Sequence[str]) -> dict[str, Any]:
    row = json_object(line, where)
    missing = [name for name in required if not row.get(name) and row.get(name) != 0]
    if missing:
        raise InvalidInput(f"{where}: missing {', '.join(missing)}")
    checks = ((_STRINGS, (str,), "a string"), (_IDS, (str, int), "a string or a number"),
              (_LISTS, (list,), "a list"), (_NUMBERS, (int, float), "a number"))
    for names, kinds, what in checks:
        for name in names:
            value = row.get(name)
            if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
                raise InvalidInput(f"{where}: {name} must be {what}, not {type(value).__name__}")
    for name in _LISTS:
        if any(not isinstance(v, (str, int)) for v in row.get(name) or []):
            raise InvalidInput(f"{where}: {name} must hold strings")
    return row


def load_items(path: str | Path) -> list[dict[str, Any]]:
    """Items JSONL → dicts (each needs `id`, `scope`, `text`)."""
    return _read_jsonl(path, ("id", "scope", "text"))


def load_queries(path: str | Path) -> list[dict[str, Any]]:
    """Queries JSONL → dicts with `text` filled from `question` when needed."""
    rows = _read_jsonl(path, ("qid", "scope"))
    for number, row in enumerate(rows, 1):
        row["text"] = row.get("text") or row.get("question") or ""
        if not row["text"].strip() and not row.get("files") and not row.get("functions"):
            raise InvalidInput(f"{path}: query {row['qid']!r} has no text, question or context")
        row["expected"] = [str(e) for e in row.get("expected") or []]
    return rows


def item_time(row: Mapping[str, Any]) -> float | None:
    """`ts_unix`, else `ts` parsed as ISO 8601, else None."""
    if row.get("ts_unix") is not None:
        return float(row["ts_unix"])
    ts = row.get("ts")
    if isinstance(ts, (int, float)):
        return float(ts)
    if isinstance(ts, str) and ts.strip():
        try:
            return datetime.fromisoformat(ts.strip()).timestamp()
        except ValueError:
            return None
    return None


def title_and_body(row: Mapping[str, Any]) -> tuple[str, str]:
    """`title`, else the text's first line (≤ 200 chars); the body keeps the rest of the text."""
    text = str(row["text"]).strip()
    if row.get("title"):
        return str(row["title"]).strip()[:TITLE_CHARS], text
    first, _, rest = text.partition("\n")
    if first.strip() and len(first) <= TITLE_CHARS:
        return first.strip(), rest.rstrip() if rest.strip() else ""
    return text[:TITLE_CHARS].strip(), text


def to_memory_items(rows: Sequence[Mapping[str, Any]]) -> tuple[list[Any], dict[str, list[str]],
                                                                   dict[str, list[str]]]:
    """Eval rows → MemoryItems (external ids, project = scope) with their files and symbols.

    An item without a timestamp is taken to follow the previous line by one second (a JSONL
    without times is a stream in file order), so creation order and as-of filters still work.
    Files come from `files_canonical` when a row has it: each path as it is named today, which is
    what a live store holds after its anchors followed the renames (`files` keeps the old names).
    """
    from graphmem.models import ItemKind, MemoryItem

    kinds = {k.value for k in ItemKind}
    items, files, symbols = [], {}, {}
    previous = 0.0
    for row in rows:
        created = item_time(row)
        created = previous + 1.0 if created is None else created
        previous = created
        title, body = title_and_body(row)
        kind = str(row.get("kind") or "note")
        item = MemoryItem(id=str(row["id"]), project=str(row["scope"]), title=title, body=body,
                          kind=ItemKind(kind if kind in kinds else "note"), created_at=created,
                          updated_at=created)
        items.append(item)
        files[item.id] = [str(f) for f in row.get("files_canonical") or row.get("files") or []]
        symbols[item.id] = [str(f) for f in row.get("functions") or []]
    return items, files, symbols


# ----- metrics (pure) -----------------------------------------------------------------------------
def recall_at(ranked: Sequence[str], expected: Iterable[str], k: int) -> float:
    """|expected ∩ top-k| / |expected| (0 when nothing is expected)."""
    wanted = set(expected)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def hit_at(ranked: Sequence[str], expected: Iterable[str], k: int) -> float:
    """1 if any expected id is in the top k."""
    return 1.0 if set(expected) & set(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], expected: Iterable[str], depth: int = MRR_DEPTH) -> float:
    """1 / rank of the first expected id within `depth`, else 0."""
    wanted = set(expected)
    for rank, item_id in enumerate(ranked[:depth], 1):
        if item_id in wanted:
            return 1.0 / rank
    return 0.0


@dataclass
class Metrics:
    """Averages over n queries."""

    n: int = 0
    recall_at_5: float = 0.0
    recall_at_10: float = 0.0
    hit_at_10: float = 0.0
    mrr: float = 0.0

    @classmethod
    def of(cls, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> Metrics:
        """Metrics of (ranked, expected) pairs; pairs without expected ids are ignored."""
        scored = [(r, e) for r, e in pairs if e]
        n = len(scored)
        if not n:
            return cls()
        return cls(n=n,
                   recall_at_5=sum(recall_at(r, e, 5) for r, e in scored) / n,
                   recall_at_10=sum(recall_at(r, e, 10) for r, e in scored) / n,
                   hit_at_10=sum(hit_at(r, e, 10) for r, e in scored) / n,
                   mrr=sum(reciprocal_rank(r, e) for r, e in scored) / n)


def category_of(query: Mapping[str, Any]) -> str | None:
    """`category_name`, else `category` as text, else None."""
    name = query.get("category_name")
    if name:
        return str(name)
    return str(query["category"]) if query.get("category") is not None else None


def score_run(run: Mapping[str, Sequence[str]], queries: Sequence[Mapping[str, Any]]
              ) -> tuple[Metrics, dict[str, Metrics]]:
    """Overall and per-category metrics of a run ({qid: ranked ids})."""
    pairs = [(list(run.get(q["qid"], [])), list(q["expected"])) for q in queries]
    groups: dict[str, list[tuple[list[str], list[str]]]] = {}
    for query, pair in zip(queries, pairs):
        category = category_of(query)
        if category is not None:
            groups.setdefault(category, []).append(pair)
    return Metrics.of(pairs), {c: Metrics.of(p) for c, p in sorted(groups.items())}


# ----- the report ---------------------------------------------------------------------------------
@dataclass
class EvalReport:
    """What one evaluation measured, with the settings that produced it."""

    items_path: str
    queries_path: str
    context: str
    k: int
    channels: list[str]
    items: int
    queries: int
    overall: Metrics
    by_category: dict[str, Metrics] = field(default_factory=dict)
    load_seconds: float = 0.0
    query_seconds: float = 0.0
    run_out: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format_table(self) -> str:
        """Aligned text: one line overall, then one per category."""
        head = f"{'':<16}{'n':>6}{'R@5':>8}{'R@10':>8}{'Hit@10':>8}{'MRR':>8}"
        title = (f"{self.queries_path}  context={self.context}  channels={','.join(self.channels)}"
                 f"  items={self.items}  load {self.load_seconds:.1f}s  queries "
                 f"{self.query_seconds:.1f}s")
        lines = [title, head]
        rows = [("overall", self.overall), *self.by_category.items()]
        for name, m in rows:
            lines.append(f"{name[:15]:<16}{m.n:>6}{100 * m.recall_at_5:>8.1f}"
                         f"{100 * m.recall_at_10:>8.1f}{m.hit_at_10:>8.3f}{m.mrr:>8.3f}")
        return "\n".join(lines)


# ----- running --------------------------------------------------------------------------------------
def eval_config(directory: str | Path, weights: RetrievalWeights | None = None) -> Config:
    """A store under `directory` where items never expire (evaluated items are history)."""
    from graphmem.models import ItemKind

    overrides: dict[str, Any] = {"data_dir": Path(directory) / "store", "project": "eval",
                                 "cwd": Path(directory), "ttl_days": {k.value: None for k in ItemKind}}
    if weights is not None:
        overrides["weights"] = weights
    return Config.from_env(**overrides)


def load_store(memory: Any, rows: Sequence[Mapping[str, Any]], batch: int = BATCH) -> int:
    """Bulk-load eval items into a Memory in batches, embeddings included."""
    items, files, symbols = to_memory_items(rows)
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        memory.add_items(chunk, files={i.id: files[i.id] for i in chunk},
                         symbols={i.id: symbols[i.id] for i in chunk}, dedupe=False, embed=True)
    return len(items)


def query_context(query: Mapping[str, Any], context: str) -> tuple[list[str], list[str]]:
    """(files, symbols) a query passes under --context."""
    if context not in CONTEXTS:
        raise InvalidInput(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}")
    files = [str(f) for f in query.get("files") or []] if context != "none" else []
    symbols = [str(f) for f in query.get("functions") or []] if context == "files+functions" else []
    return files, symbols


def rank_queries(memory: Any, queries: Sequence[Mapping[str, Any]], *, context: str = "none",
                 k: int = 100, channels: Sequence[str] | None = None) -> dict[str, list[str]]:
    """{qid: ranked ids} for every query, each inside its scope and as-of time."""
    run: dict[str, list[str]] = {}
    for query in queries:
        files, symbols = query_context(query, context)
        as_of = query.get("as_of_unix")
        run[query["qid"]] = memory.rank(query["text"], files=files, symbols=symbols, k=k,
                                        as_of=float(as_of) if as_of is not None else None,
                                        project=str(query["scope"]), channels_on=channels)
    return run


def write_run(run: Mapping[str, Sequence[str]], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"qid": qid, "ranked": list(ranked)}) + "\n"
                          for qid, ranked in run.items())


def run_eval(items_path: str | Path, queries_path: str | Path, *, context: str = "none",
             k: int = 100, channels: Sequence[str] | None = None,
             data_dir: str | Path | None = None, run_out: str | Path | None = None,
             weights: RetrievalWeights | None = None) -> EvalReport:
    """Load items into a fresh temporary store, run every query, score the run."""
    from graphmem.service import Memory

    if context not in CONTEXTS:
        raise InvalidInput(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}")
    chosen = list(channels) if channels else list(CHANNEL_NAMES)
    unknown = sorted(set(chosen) - set(CHANNEL_NAMES))
    if unknown:
        raise InvalidInput(f"unknown channel(s) {', '.join(unknown)}; use {', '.join(CHANNEL_NAMES)}")
    rows = load_items(items_path)
    queries = load_queries(queries_path)
    own_dir = data_dir is None
    if data_dir is not None and (Path(data_dir) / "store").exists():
        raise InvalidInput(f"{Path(data_dir) / 'store'} exists; evaluation needs a fresh store")
    directory = Path(data_dir) if data_dir is not None else Path(
        tempfile.mkdtemp(prefix="graphmem-eval-"))
    try:
        with Memory(eval_config(directory, weights)) as memory:
            started = time.perf_counter()
            count = load_store(memory, rows)
            loaded = time.perf_counter()
            run = rank_queries(memory, queries, context=context, k=k, channels=chosen)
            finished = time.perf_counter()
    finally:
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)
    if run_out:
        write_run(run, run_out)
    overall, by_category = score_run(run, queries)
    return EvalReport(items_path=str(items_path), queries_path=str(queries_path), context=context,
                      k=k, channels=chosen, items=count, queries=len(queries), overall=overall,
                      by_category=by_category, load_seconds=round(loaded - started, 3),
                      query_seconds=round(finished - loaded, 3),
                      run_out=str(run_out) if run_out else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate retrieval on an items/queries JSONL pair (recall@5/10, hit@10, MRR)."""
    parser = argparse.ArgumentParser(prog="graphmem eval", description=main.__doc__)
    parser.add_argument("items", help="items JSONL (id, scope, text, ...)")
    parser.add_argument("queries", help="queries JSONL (qid, scope, text|question, expected, ...)")
    parser.add_argument("--context", choices=CONTEXTS, default="none",
                        help="query context passed to retrieval (default: none)")
    parser.add_argument("--run-out", help="write the run ({qid, ranked} per line) here")
    parser.add_argument("--channels", help="comma-separated subset of " + ",".join(CHANNEL_NAMES))
    parser.add_argument("-k", type=int, default=100, help="ranked ids kept per query (default 100)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    channels = [c.strip() for c in args.channels.split(",") if c.strip()] if args.channels else None
    try:
        report = run_eval(args.items, args.queries, context=args.context, k=args.k,
                          channels=channels, run_out=args.run_out)
    except (GraphmemError, OSError) as exc:
        print(f"graphmem eval: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.format_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
