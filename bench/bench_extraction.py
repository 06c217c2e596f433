"""Extraction precision/recall on the fresh labelled set, per kind, exact and lenient, and its speed.

    python bench/bench_extraction.py                      # dev, dev2 and held-out tables, timing
    python bench/bench_extraction.py --against /tmp/main  # side by side with another checkout
                                  # (e.g. `git archive main | tar -x -C /tmp/main`)
    python bench/bench_extraction.py --errors             # false positives/negatives on dev only
    python bench/bench_extraction.py --errors dev2        # ... on the second dev set
    python bench/bench_extraction.py --heldout heldoutN   # also an unseen split, named explicitly

Exact: same kind and surface text (multiset). Lenient: same kind and overlapping spans (one-to-one).
Speed: per-item CPU time (process time: the machine is shared) of ``extract_many`` over the set's
lines and the tuned set's lines, concepts on as at ingest; with --against, both checkouts'
text.py (since round 9 it imports graphmem.extract.vocabulary, from this PYTHONPATH: two round 9
checkouts share one table) are loaded into one process and timed in alternating rounds,
so load swings hit both alike; min and median of the rounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "extraction-fresh"
TUNED = ROOT / "tests" / "data" / "entities.jsonl"
KINDS = ("file", "symbol", "error", "commit", "package", "envvar", "command", "url")
SPLITS = ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "heldout")
TUNING = ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8")


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def gold_spans(row: dict) -> list[tuple[str, int, int]]:
    """Each label's span: the n-th occurrence of a surface labelled n times."""
    seen: Counter[tuple[str, str]] = Counter()
    spans = []
    for ent in row["entities"]:
        start = -1
        for _ in range(seen[(ent["kind"], ent["text"])] + 1):
            start = row["text"].find(ent["text"], start + 1)
        seen[(ent["kind"], ent["text"])] += 1
        start = start if start >= 0 else row["text"].find(ent["text"])
        spans.append((ent["kind"], start, start + len(ent["text"])))
    return spans


def lenient_matches(gold: list[tuple[str, int, int]], pred: list[tuple[str, int, int]]) -> int:
    """One-to-one matches of same-kind overlapping spans, greedy by overlap size."""
    pairs = sorted(((min(g[2], p[2]) - max(g[1], p[1]), gi, pi)
                    for gi, g in enumerate(gold) for pi, p in enumerate(pred)
                    if g[0] == p[0] and g[1] < p[2] and p[1] < g[2]), reverse=True)
    used_g: set[int] = set()
    used_p: set[int] = set()
    for _, gi, pi in pairs:
        if gi not in used_g and pi not in used_p:
            used_g.add(gi)
            used_p.add(pi)
    return len(used_g)


def count(rows: list[dict]) -> dict[str, dict[str, list[int]]]:
    """Per kind: exact [tp, fp, fn] and lenient [tp, fp, fn]."""
    from graphmem.extract.text import extract_many

    predicted = extract_many([r["text"] for r in rows], concepts=False)
    out = {mode: {k: [0, 0, 0] for k in KINDS} for mode in ("exact", "lenient")}
    for row, mentions in zip(rows, predicted):
        pred = [(m.kind, m.start, m.end) for m in mentions if m.kind in KINDS]
        gold = gold_spans(row)
        g_text = Counter((e["kind"], e["text"]) for e in row["entities"])
        p_text = Counter((m.kind, m.text) for m in mentions if m.kind in KINDS)
        for kind in KINDS:
            g = sum(n for (k, _), n in g_text.items() if k == kind)
            p = sum(n for (k, _), n in p_text.items() if k == kind)
            tp = sum(n for (k, _), n in (g_text & p_text).items() if k == kind)
            out["exact"][kind] = [a + b for a, b in zip(out["exact"][kind], (tp, p - tp, g - tp))]
            gk = [s for s in gold if s[0] == kind]
            pk = [s for s in pred if s[0] == kind]
            lt = lenient_matches(gk, pk)
            out["lenient"][kind] = [a + b for a, b in
                                    zip(out["lenient"][kind], (lt, len(pk) - lt, len(gk) - lt))]
    return out


def timing(roots: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    """CPU microseconds per item of each checkout's extract_many, rounds alternating."""
    texts = [r["text"] for split in SPLITS for r in load(DATA / f"{split}.jsonl")]
    texts += [r["text"] for r in load(TUNED)]
    modules = {}
    for name, root in roots.items():
        spec = importlib.util.spec_from_file_location(f"text_{name}", root / "graphmem/extract/text.py")
        assert spec is not None and spec.loader is not None
        modules[name] = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = modules[name]
        spec.loader.exec_module(modules[name])
        modules[name].extract_many(texts)
    runs: dict[str, list[float]] = {name: [] for name in roots}
    for _ in range(rounds):
        for name, module in modules.items():
            t0 = time.process_time()
            module.extract_many(texts)
            runs[name].append((time.process_time() - t0) / len(texts) * 1e6)
    return runs


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def table(results: dict[str, dict], split: str) -> str:
    names = list(results)
    head = f"{'kind':<9}{'n':>5}" + "".join(
        f"  {name[:14]:>14} {'P':>5} {'R':>5} {'F1':>5} {'lenF1':>5}" for name in names)
    lines = [f"== {split} ==", head]
    for kind in (*KINDS, "micro"):
        cells = ""
        support = 0
        for name in names:
            ex, le = results[name][split]["exact"], results[name][split]["lenient"]
            kinds = KINDS if kind == "micro" else (kind,)
            e = [sum(ex[k][i] for k in kinds) for i in range(3)]
            ln = [sum(le[k][i] for k in kinds) for i in range(3)]
            support = e[0] + e[2]
            p, r, f = prf(*e)
            cells += f"  {'':>14} {p:5.2f} {r:5.2f} {f:5.2f} {prf(*ln)[2]:5.2f}"
        lines.append(f"{kind:<9}{support:>5}{cells}")
    return "\n".join(lines)


def errors(split: str = "dev") -> None:
    from graphmem.extract.text import extract_many

    rows = load(DATA / f"{split}.jsonl")
    for row, mentions in zip(rows, extract_many([r["text"] for r in rows], concepts=False)):
        gold = Counter((e["kind"], e["text"]) for e in row["entities"])
        pred = Counter((m.kind, m.text) for m in mentions if m.kind in KINDS)
        if gold != pred:
            print(row["id"], repr(row["text"][:160]))
            print("   missed:", sorted((gold - pred).elements()))
            print("   extra: ", sorted((pred - gold).elements()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="another checkout to score side by side (its graphmem)")
    parser.add_argument("--errors", nargs="?", const="dev", choices=TUNING,
                        help="list mismatches of a tuning split (never held-out)")
    parser.add_argument("--rounds", type=int, default=20, help="alternating timing rounds")
    parser.add_argument("--heldout", action="append", default=[], metavar="SPLIT",
                        help="also score this unseen split (its one measurement: name it here)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.errors:
        errors(args.errors)
        return
    if args.json:
        splits = (*SPLITS, *args.heldout)
        print(json.dumps({split: count(load(DATA / f"{split}.jsonl")) for split in splits}))
        return
    checkouts = {"this": ROOT}
    if args.against:
        checkouts = {Path(args.against).name or "against": Path(args.against).resolve(), **checkouts}

    def run(root: Path, *flags: str) -> Any:
        env = {**os.environ, "PYTHONPATH": str(root)}
        return json.loads(subprocess.run([sys.executable, __file__, *flags], env=env, check=True,
                                         capture_output=True, text=True).stdout)

    extra = [f"--heldout={split}" for split in args.heldout]
    results: dict[str, dict] = {name: run(root, "--json", *extra) for name, root in checkouts.items()}
    for name, runs in timing(checkouts, args.rounds).items():
        results[name]["us"] = (min(runs), statistics.median(runs))
    print("columns:", ", ".join(results))
    for split in (*SPLITS, *args.heldout):
        print(table(results, split))
    print(f"per-item extraction, CPU us over {args.rounds} alternating rounds (min / median):",
          ", ".join(f"{name} {res['us'][0]:.0f} / {res['us'][1]:.0f}" for name, res in results.items()))
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
