"""Learned tagger experiment (issue #18 round 9): a spaCy NER trained on the labelled lines, with the rules.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 env PYTHONPATH=. .venv/bin/python bench/extraction_tagger.py
    ... bench/extraction_tagger.py --folds dev7 --epochs 15      # fewer folds / epochs

Leave-one-set-out over the tuning sets dev … dev7 (heldout.jsonl and heldout7.jsonl are never read).
For each held fold H (default dev7, dev6, dev5):

  (a) rules alone: ``graphmem.extract.text.extract(text, concepts=False)``;
  (b) tagger: ``spacy.blank("en")`` with a code tokenizer (runs of [A-Za-z0-9_] and single other
      characters, so paths, dotted names, ``@versions`` and ``::`` never straddle a token boundary;
      the whitespace before a token is given to the model as the SPACY attribute), plus an ``ner``
      pipe (HashEmbed CNN tok2vec, trained from scratch, fixed seed) trained on the six other sets;
  (c) combinations of (a) and (b) (``COMBOS``), the one used on H chosen on H's training sets only:
      those six sets are split in two halves, a tagger is trained on each half and tags the other,
      and the combination with the best pooled micro F1 over the six sets wins.

Scoring is bench_extraction's exact score: same kind and surface, multiset. Per-line inference is
process time of one ``nlp(text)`` call per line on one thread.

    ... bench/extraction_tagger.py --out /tmp/tag.json    # keep the tagger spans, then
    ... bench/extraction_tagger.py --rescore /tmp/tag.json  # re-score them without training

Each fold is scored against two rule bases: today's rules ("now", tuned on every dev set, the held
fold included, so tuned figures) and the rules at the commit where the fold was first looked at as a
fresh held-out set (``LOOK``: never tuned on it, so unseen figures, like the tagger's).

Results (3 December 2026, base 69f47a8, 20 epochs, seed 18, width 64, depth 4, window 1; exact
micro P/R/F1 | package F1 | symbol P | command F1 on the held fold; see
bench/data/extraction-fresh/README.md, "Learned tagger experiment (round 9)"):

    fold  (a) rules now            (b) tagger               (c) chosen on the 6 training sets
    dev7  .887/.798/.840|.791|.674|.906  .649/.352/.457|.149|.500|.578  rules (= a)
    dev6  .910/.853/.881|.802|.824|.886  .735/.599/.660|.462|.654|.707  rules (= a)
    dev5  .903/.889/.896|.849|.781|.887  .710/.558/.625|.484|.489|.713  rules (= a)
    rules at the fold's look:
    dev7  4a8165a .802/.636/.710|.357|.534|.734                          rules (= a)
    dev6  2614ba6 .863/.787/.823|.734|.730|.785                          rules (= a)
    dev5  00c1cc3 .844/.743/.790|.592|.639|.754                          union-pkg-cue .844/.774/.807|.689|.639|.754

At 35 epochs (dev7, dev5): tagger micro F1 .493 / .677, the choice is the rules on both folds and bases.
The tagger does not beat the rules: (c) equals (a) on five of six fold/base pairs; the one gain
(+0.017, against rules two rounds old) is gone with today's rules. Cost: 163-167 s CPU to train
(20 epochs, ~3,000 lines), model 3.96 MB, 2.3-3.3 ms per line against the rules' 0.21-0.23 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_extraction as b

SETS = ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7")
KINDS = b.KINDS
SEED = 18
# The commit at which each held fold was first looked at as a fresh held-out set: its rules had never
# been tuned on it. Today's rules were tuned on every dev set, so their figures on a fold are tuned ones.
LOOK = {"dev7": "4a8165a", "dev6": "2614ba6", "dev5": "00c1cc3"}
_DUMP = """
import json, sys
from graphmem.extract.text import extract_many
texts = json.load(sys.stdin)
kinds = set(sys.argv[1].split(","))
print(json.dumps({s: [[(m.kind, m.start, m.end) for m in ms if m.kind in kinds]
                      for ms in extract_many(t, concepts=False)] for s, t in texts.items()}))
"""
_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")


def load(name: str) -> list[dict]:
    assert name in SETS, name  # never the held-out files
    return b.load(b.DATA / f"{name}.jsonl")


# ---------------------------------------------------------------- tagger

def make_nlp():
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.blank("en")

    class CodeTokenizer:
        def __init__(self, vocab):
            self.vocab = vocab

        def __call__(self, text):
            words, spaces = [], []
            pos = 0
            for m in _TOKEN_RE.finditer(text):
                gap = text[pos:m.start()]
                if gap:  # whitespace: one plain space is the previous token's, the rest is a token
                    if words and not spaces[-1] and gap[0] == " ":
                        spaces[-1], gap = True, gap[1:]
                    if gap:
                        words.append(gap)
                        spaces.append(False)
                words.append(m.group())
                spaces.append(False)
                pos = m.end()
            gap = text[pos:]
            if gap:
                if words and gap[0] == " ":
                    spaces[-1], gap = True, gap[1:]
                if gap:
                    words.append(gap)
                    spaces.append(False)
            if not words:
                return Doc(self.vocab, words=[], spaces=[])
            doc = Doc(self.vocab, words=words, spaces=spaces)
            return doc

        def to_disk(self, path, **kw):
            pass

        def from_disk(self, path, **kw):
            return self

        def to_bytes(self, **kw):
            return b""

        def from_bytes(self, data, **kw):
            return self

    nlp.tokenizer = CodeTokenizer(nlp.vocab)
    return nlp


def ner_config(width: int, depth: int, window: int) -> dict:
    return {"model": {
        "@architectures": "spacy.TransitionBasedParser.v2", "state_type": "ner",
        "extra_state_tokens": False, "hidden_width": 64, "maxout_pieces": 2, "use_upper": True, "nO": None,
        "tok2vec": {
            "@architectures": "spacy.Tok2Vec.v2",
            "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": width,
                      "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE", "SPACY"],
                      "rows": [5000, 1000, 2500, 2500, 50], "include_static_vectors": False},
            "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": width, "depth": depth,
                       "window_size": window, "maxout_pieces": 3}}}}


def examples(nlp, rows: list[dict], stats: Counter | None = None):
    """spaCy Examples with non-overlapping gold spans (longest first); counts what cannot align."""
    from spacy.training import Example

    out = []
    for row in rows:
        doc = nlp.make_doc(row["text"])
        spans = sorted(b.gold_spans(row), key=lambda s: (-(s[2] - s[1]), s[1]))
        taken: list[tuple[int, int]] = []
        ents = []
        for kind, start, end in spans:
            if stats is not None:
                stats["gold"] += 1
            if doc.char_span(start, end) is None:  # first occurrence inside a word: try the others
                text, n = row["text"][start:end], row["text"].find(row["text"][start:end])
                while n >= 0 and doc.char_span(n, n + len(text)) is None:
                    n = row["text"].find(text, n + 1)
                if n >= 0:
                    start, end = n, n + len(text)
            if doc.char_span(start, end) is None:
                if stats is not None:
                    stats["misaligned"] += 1
                continue
            if any(start < e and s < end for s, e in taken):
                if stats is not None:
                    stats["overlap"] += 1  # e.g. a file inside a command: one of the two is dropped
                continue
            taken.append((start, end))
            ents.append((start, end, kind))
        out.append(Example.from_dict(doc, {"entities": ents}))
    return out


def train(rows: list[dict], epochs: int, width: int = 64, depth: int = 4, window: int = 1,
          log=None):
    import spacy
    from spacy.training import Example  # noqa: F401
    from spacy.util import fix_random_seed, minibatch

    fix_random_seed(SEED)
    nlp = make_nlp()
    ner = nlp.add_pipe("ner", config=ner_config(width, depth, window))
    for k in KINDS:
        ner.add_label(k)
    stats: Counter = Counter()
    exs = examples(nlp, rows, stats)
    optimizer = nlp.initialize(lambda: exs)
    rng = random.Random(SEED)
    t0 = time.process_time()
    for epoch in range(epochs):
        rng.shuffle(exs)
        losses: dict = {}
        for batch in minibatch(exs, size=16):
            nlp.update(batch, sgd=optimizer, drop=0.2, losses=losses)
        if log:
            log(f"    epoch {epoch + 1}/{epochs} loss {losses.get('ner', 0):.0f} "
                f"({time.process_time() - t0:.0f}s)")
    del spacy
    return nlp, stats, time.process_time() - t0


def tag(nlp, texts: list[str]) -> list[list[tuple[str, int, int]]]:
    return [[(e.label_, e.start_char, e.end_char) for e in doc.ents] for doc in nlp.pipe(texts, batch_size=64)]


def rules(texts: list[str]) -> list[list[tuple[str, int, int]]]:
    from graphmem.extract.text import extract_many

    return [[(m.kind, m.start, m.end) for m in ms if m.kind in KINDS]
            for ms in extract_many(texts, concepts=False)]


def rules_at(commit: str, data: dict[str, list[dict]]) -> dict[str, list]:
    """The rule spans of the extractor as it was at ``commit`` (git archive + a subprocess)."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(root), "archive", commit, "graphmem"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = dict(os.environ, PYTHONPATH=tmp)
        out = subprocess.run([sys.executable, "-c", _DUMP, ",".join(KINDS)], env=env, check=True, cwd=tmp,
                             capture_output=True, text=True,
                             input=json.dumps({s: [r["text"] for r in rows] for s, rows in data.items()})).stdout
    return {s: [[tuple(x) for x in line] for line in v] for s, v in json.loads(out).items()}


def evaluate(held: str, data: dict, inner_t: dict, t_preds: list, bases: dict, log) -> tuple[dict, dict, dict]:
    """Inner choice of the combination on the training sets, then the held fold, for each rule base."""
    train_sets = [s for s in SETS if s != held]
    inner_rows = [r for s in train_sets for r in data[s]]
    inner_tp = [p for s in train_sets for p in inner_t[s]]
    chosen, inner, outer = {}, {}, {}
    for base, rp in bases.items():
        inner_r = [p for s in train_sets for p in rp[s]]
        inner[base] = {c: summary(v) for c, v in combos_counts(inner_rows, inner_r, inner_tp).items()}
        chosen[base] = max(COMBOS, key=lambda c: inner[base][c]["F1"])
        log(f"  [rules {base}] inner choice over {len(COMBOS)} combinations:")
        for c in sorted(COMBOS, key=lambda c: -inner[base][c]["F1"])[:5] + ["rules", "tagger"]:
            log(f"    inner {c:28s} {fmt(inner[base][c])}")
        log(f"    chosen on the training sets: {chosen[base]}")
        outer[base] = {c: summary(v) for c, v in combos_counts(data[held], rp[held], t_preds).items()}
        for c in ("rules", "tagger", chosen[base]):
            log(f"  HELD [rules {base}] {c:28s} {fmt(outer[base][c])}")
        best = max(COMBOS, key=lambda c: outer[base][c]["F1"])
        log(f"  (best on the held fold, for reference only: {best} {outer[base][best]['F1']:.3f})")
        log(f"  (ceiling, a perfect filter over the tagger's spans outside rule spans: {ceiling(data[held], rp[held], t_preds)})")
    return chosen, inner, outer


def ceiling(rows: list[dict], r_preds: list, t_preds: list) -> str:
    """Rule misses the tagger gets exactly right outside every rule span, and the micro F1 if only those were added."""
    misses = rescued = wrong = 0
    for row, r, t in zip(rows, r_preds, t_preds):
        g = Counter((e["kind"], e["text"]) for e in row["entities"])
        missed = g - Counter((k, row["text"][a:e]) for k, a, e in r)
        extra = Counter((k, row["text"][a:e]) for k, a, e in t if not _overlaps((k, a, e), r))
        misses += sum(missed.values())
        rescued += sum((missed & extra).values())
        wrong += sum((extra - missed).values())
    base = [sum(c[i] for c in score(rows, r_preds).values()) for i in range(3)]
    f1 = b.prf(base[0] + rescued, base[1], base[2] - rescued)[2]
    return f"rule misses {misses}, rescued {rescued}, wrong extra {wrong}, micro F1 at most {f1:.3f}"


# ---------------------------------------------------------------- combinations

def _overlaps(s, spans) -> bool:
    return any(s[1] < t[2] and t[1] < s[2] for t in spans)


def _same_kind_overlap(s, spans) -> bool:
    return any(s[0] == t[0] and s[1] < t[2] and t[1] < s[2] for t in spans)


_DEP_CUE_RE = re.compile(r"(?i)\b(?:install\w*|add(?:ed)?|require[sd]?|import(?:ed)?|modules?|packages?|"
                         r"dependenc(?:y|ies)|deps?|librar(?:y|ies)|crates?|gems?|bump\w*|upgrad\w*|updat\w*|"
                         r"pin(?:ned)?|remov\w*|replac\w*|depends|version)\b")


def combo(name: str, r: list, t: list, cue: bool = False) -> list:
    """One line's spans from rule spans r and tagger spans t under combination ``name``."""
    if name == "rules":
        return r
    if name == "tagger":
        return t
    add_kinds = {
        "union": set(KINDS), "union-pkg": {"package"}, "union-pkg-sym": {"package", "symbol"},
        "union-pkg-cmd": {"package", "command"}, "union-nosym": set(KINDS) - {"symbol"},
        "none": set(),
    }
    add_name, _, veto = name.partition("+")
    out = list(r)
    if veto == "veto-sym":  # a rule symbol survives only if the tagger tags an overlapping symbol
        out = [s for s in out if s[0] != "symbol" or _same_kind_overlap(s, t)]
    elif veto == "veto-sym-any":  # ... or it is untagged but the tagger gave nothing else there
        out = [s for s in out if s[0] != "symbol" or _same_kind_overlap(s, t) or not _overlaps(s, t)]
    elif veto == "relabel":  # a rule span the tagger gives the same extent with another kind takes its kind
        new = []
        for s in out:
            same = [x for x in t if x[1] == s[1] and x[2] == s[2]]
            new.append((same[0][0], s[1], s[2]) if same else s)
        out = new
    if add_name == "union-pkg-cue":  # tagger packages only on a line with a dependency cue word
        return out + [s for s in t if s[0] == "package" and not _overlaps(s, r) and cue]
    kinds = add_kinds[add_name]
    out += [s for s in t if s[0] in kinds and not _overlaps(s, r)]
    return out


COMBOS = ["rules", "tagger"] + [f"{a}{v}" for a in ("union", "union-pkg", "union-pkg-sym", "union-pkg-cmd",
                                                     "union-nosym", "none", "union-pkg-cue")
                                for v in ("", "+veto-sym", "+veto-sym-any", "+relabel")
                                if (a, v) != ("none", "")]


# ---------------------------------------------------------------- scoring

def score(rows: list[dict], preds: list[list]) -> dict[str, list[int]]:
    out = {k: [0, 0, 0] for k in KINDS}
    for row, pred in zip(rows, preds):
        g = Counter((e["kind"], e["text"]) for e in row["entities"])
        p = Counter((k, row["text"][s:e]) for k, s, e in pred)
        both = g & p
        for kind in KINDS:
            gk = sum(n for (k, _), n in g.items() if k == kind)
            pk = sum(n for (k, _), n in p.items() if k == kind)
            tk = sum(n for (k, _), n in both.items() if k == kind)
            out[kind][0] += tk
            out[kind][1] += pk - tk
            out[kind][2] += gk - tk
    return out


def summary(counts: dict[str, list[int]]) -> dict[str, float]:
    micro = [sum(c[i] for c in counts.values()) for i in range(3)]
    p, r, f = b.prf(*micro)
    return {"P": p, "R": r, "F1": f, "pkgF1": b.prf(*counts["package"])[2], "pkgR": b.prf(*counts["package"])[1],
            "symP": b.prf(*counts["symbol"])[0], "cmdF1": b.prf(*counts["command"])[2]}


def fmt(s: dict[str, float]) -> str:
    return (f"micro {s['P']:.3f}/{s['R']:.3f}/{s['F1']:.3f}  pkg F1 {s['pkgF1']:.3f} (R {s['pkgR']:.3f})  "
            f"sym P {s['symP']:.3f}  cmd F1 {s['cmdF1']:.3f}")


def combos_counts(rows, r_preds, t_preds) -> dict[str, dict]:
    cues = [bool(_DEP_CUE_RE.search(row["text"])) for row in rows]
    return {c: score(rows, [combo(c, r, t, q) for r, t, q in zip(r_preds, t_preds, cues)]) for c in COMBOS}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", nargs="*", default=["dev7", "dev6", "dev5"])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--inner-epochs", type=int, default=None)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--window", type=int, default=1)
    ap.add_argument("--out", default=None, help="write a JSON of the figures and tagger spans here")
    ap.add_argument("--rescore", default=None, help="no training: score the tagger spans of an --out JSON")
    args = ap.parse_args()
    inner_epochs = args.inner_epochs or args.epochs

    def log(msg: str) -> None:
        print(msg, flush=True)

    data = {s: load(s) for s in SETS}
    rule_preds = {s: rules([r["text"] for r in data[s]]) for s in SETS}
    look_preds = {h: rules_at(LOOK[h], data) for h in args.folds if h in LOOK}
    if args.rescore:
        saved = json.loads(Path(args.rescore).read_text())
        for held in args.folds:
            f = saved[held]
            tp = [[tuple(x) for x in line] for line in f["tagger_pred"]]
            it = {s: [[tuple(x) for x in line] for line in v] for s, v in f["inner_tagger_pred"].items()}
            log(f"== fold {held}: train {f['train_s']:.0f}s CPU, model {f['size'] / 1e6:.2f} MB, per line tagger "
                f"{f['ms_tagger']:.2f} ms, rules {f['ms_rules']:.2f} ms; gold {f['stats']}, held {f['held_stats']}")
            bases = {"now": rule_preds, **({f"look {LOOK[held]}": look_preds[held]} if held in look_preds else {})}
            evaluate(held, data, it, tp, bases, log)
        return
    report = {}
    for held in args.folds:
        train_sets = [s for s in SETS if s != held]
        log(f"== fold {held} (train {', '.join(train_sets)})")
        # inner choice: two halves of the training sets, each tagged by a model trained on the other half
        halves = (train_sets[0::2], train_sets[1::2])
        inner_t: dict[str, list] = {}
        for i, half in enumerate(halves):
            other = halves[1 - i]
            nlp_h, _, secs = train([r for s in other for r in data[s]], inner_epochs, args.width, args.depth,
                                   args.window)
            log(f"  inner model on {other} ({secs:.0f}s) tags {half}")
            for s in half:
                inner_t[s] = tag(nlp_h, [r["text"] for r in data[s]])
        inner_rows = [r for s in train_sets for r in data[s]]
        # outer model on all six training sets
        nlp, stats, secs = train(inner_rows, args.epochs, args.width, args.depth, args.window, log=log)
        rows = data[held]
        texts = [r["text"] for r in rows]
        t0 = time.process_time()
        t_preds = [[(e.label_, e.start_char, e.end_char) for e in nlp(t).ents] for t in texts]
        ms_tagger = (time.process_time() - t0) / len(texts) * 1e3
        t0 = time.process_time()
        rules(texts)
        ms_rules = (time.process_time() - t0) / len(texts) * 1e3
        with tempfile.TemporaryDirectory() as tmp:
            nlp.to_disk(tmp)
            size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
        held_stats: Counter = Counter()
        examples(nlp, rows, held_stats)
        log(f"  train {secs:.0f}s CPU; gold spans {stats['gold']} (misaligned {stats['misaligned']}, "
            f"dropped as overlapping {stats['overlap']}); held misaligned {held_stats['misaligned']}/"
            f"{held_stats['gold']}; model {size / 1e6:.2f} MB; per line: tagger {ms_tagger:.2f} ms, "
            f"rules {ms_rules:.2f} ms")
        bases = {"now": rule_preds, **({f"look {LOOK[held]}": look_preds[held]} if held in look_preds else {})}
        chosen, inner, outer = evaluate(held, data, inner_t, t_preds, bases, log)
        report[held] = {"chosen": chosen, "inner": inner, "outer": outer, "train_s": secs, "ms_tagger": ms_tagger,
                        "ms_rules": ms_rules, "size": size, "stats": dict(stats), "held_stats": dict(held_stats),
                        "tagger_pred": t_preds, "inner_tagger_pred": inner_t}
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
