"""How far can `--context files` go on repohist? A learned ranker as a ceiling estimate.

For every query, the candidates are the earlier items that touched one of the query's files
(every expected item is among them). Each candidate gets the signals a retriever could use
with files as context, and a gradient-boosted ranker is trained and scored with 5-fold
cross-validation over queries: a generous estimate of what these signals carry, since it is
fitted to this very dataset. Needs scikit-learn (installed with sentence-transformers).

    python bench/repohist_ceiling.py --data ../shared/bench-data
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np

from graphmem.embed import Embedder
from graphmem.store.keywords import Tokenizer

CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
FEATURES = ("files shared", "share of the query's files", "1 / files of the item",
            "query words in a touched symbol's name (IDF)", "text words shared (IDF)",
            "MiniLM cosine", "log age", "1 / (1 + recency rank on the file)",
            "log symbols touched in the query's files", "log symbols touched")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def features(data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    items = sorted(_rows(data / "items.jsonl"), key=lambda r: r["ts_unix"])
    queries = _rows(data / "queries.jsonl")
    times = [r["ts_unix"] for r in items]
    tokenize = Tokenizer()

    def words(text: str) -> set[str]:
        return set(tokenize(CAMEL.sub(" ", text)))

    item_words = [words(r["text"]) for r in items]
    df = Counter(w for ws in item_words for w in ws)

    def idf(w: str) -> float:
        return math.log(1 + len(items) / (df[w] + 1))

    embedder = Embedder(threads=2)
    item_vectors = embedder.encode([r["text"] for r in items])
    query_vectors = embedder.encode([q["text"] for q in queries])
    rows, labels, groups = [], [], []
    for qn, query in enumerate(queries):
        visible = bisect.bisect_left(times, query["as_of_unix"])
        qfiles, qwords, expected = set(query["files"]), words(query["text"]), set(query["expected"])
        seen: Counter[str] = Counter()
        recency_rank = {}
        for n in range(visible - 1, -1, -1):
            shared = set(items[n]["files_canonical"]) & qfiles
            if shared:
                recency_rank[n] = min(seen[f] for f in shared)
                seen.update(shared)
        for n, rank in recency_rank.items():
            item = items[n]
            shared = set(item["files_canonical"]) & qfiles
            symbols = [s for s in item["functions"] if s.split("::")[0] in qfiles]
            named = max((sum(idf(w) for w in qwords & words(s.split("::")[1])) for s in symbols),
                        default=0.0)
            age = max(0.0, (query["as_of_unix"] - item["ts_unix"]) / 86_400)
            rows.append([len(shared), len(shared) / len(qfiles), 1 / max(1, len(item["files_canonical"])),
                         named, sum(idf(w) for w in qwords & item_words[n]),
                         float(item_vectors[n] @ query_vectors[qn]), math.log1p(age), 1 / (1 + rank),
                         math.log1p(len(symbols)), math.log1p(len(item["functions"]))])
            labels.append(item["id"] in expected)
            groups.append(qn)
    return np.array(rows), np.array(labels), np.array(groups)


def score(scores: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    hits = reciprocal = 0.0
    queries = np.unique(groups)
    for q in queries:
        chosen = groups == q
        order = np.argsort(-scores[chosen], kind="stable")
        found = np.flatnonzero(labels[chosen][order])
        if len(found):
            rank = found[0] + 1
            hits += rank <= 10
            reciprocal += 1 / rank if rank <= 100 else 0
    return hits / len(queries), reciprocal / len(queries)


def main() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/bench-data")
    data = Path(parser.parse_args().data) / "repohist-requests"
    x, y, groups = features(data)
    folds = [np.unique(groups)[i::5] for i in range(5)]
    for name, columns in [("all signals", list(range(len(FEATURES)))),
                          *((f"without {f}", [c for c in range(len(FEATURES)) if c != k])
                            for k, f in enumerate(FEATURES))]:
        predicted = np.zeros(len(y))
        for fold in folds:
            test = np.isin(groups, fold)
            model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0)
            model.fit(x[~test][:, columns], y[~test])
            predicted[test] = model.predict_proba(x[test][:, columns])[:, 1]
        hit, mrr = score(predicted, y, groups)
        print(f"{name:<55} hit@10 {hit:.3f}  MRR {mrr:.3f}", flush=True)
    print(f"{len(y):,} candidates for {len(np.unique(groups))} queries; targets hit@10 0.90, MRR 0.70")


if __name__ == "__main__":
    main()
