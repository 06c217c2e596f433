"""The learned avenue of issue #18 round 6, and round 7's rules, measured leave-one-set-out on the tuning sets.

    python bench/extraction_loso.py            # the rules as they are: micro F1, symbol P, package F1 per set
    python bench/extraction_loso.py --rules    # round 7's grammar shapes judged leave-one-set-out (below)
    python bench/extraction_loso.py --rules --round 8  # the same for round 8's shapes over dev … dev6
    python bench/extraction_loso.py --rules --round 9  # round 9's vocabulary parts over dev … dev7
    python bench/extraction_loso.py --rules --round 10  # round 10's dependency cues over dev … dev8
    python bench/extraction_loso.py --learned  # + a logistic filter over symbol / package candidates, and
                                               #   liberal package candidates in dependency contexts + a scorer
    python bench/extraction_loso.py --learned --fixed 0.8  # the same at a fixed threshold

Each fold trains on three of dev, dev2, dev3, dev4 and scores the fourth; the decision threshold is
picked on the three training sets by an inner leave-one-set-out (best pooled micro F1), so no figure
of a fold has seen its own set. Logistic regression with L2 (numpy), binary features of the
candidate's shape and its line (cue words before/after, backticks, quotes, parentheses, line kind:
frame / log / prompt / code / changelog / prose, casing, lexicons). Only the tuning sets are read.

--rules: each shape of round 7's grammars (``ROUND7``) is switched off in turn to find the sets whose
errors it fixes; in the fold of a set, a shape is on only if it fixes an error in another set. Before
is ``--base`` (the commit before round 7), whose installer code stands in for "installer" off.

Result (round 6, see bench/data/extraction-fresh/README.md): neither filter nor the liberal package
candidates beat the rules on the folds, so the extractor does not use them; this script keeps the
experiment repeatable.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_extraction as b

from graphmem.extract import text as tx

SETS = ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8")
KINDS = b.KINDS
L2 = 1.0
MIN_COUNT = 2
LEX = {
    "ext": tx.FILE_EXTS, "brand": tx.BRANDS | tx.JS_BRANDS, "pkg": tx._LEXICON, "exe": tx.EXECUTABLES,
    "env": tx.ENV_WELL_KNOWN,
    "dep": tx._words("""install installed installing add added require requires required import imported
        module modules package packages dependency dependencies dep deps library libraries crate crates
        gem gems wheel bump bumps bumped upgrade upgraded update updated pin pinned version"""),
}

_WORD_BEFORE_RE = re.compile(r"([A-Za-z]+)[^A-Za-z\n]{0,3}$")
_WORD_AFTER_RE = re.compile(r"[^A-Za-z\n]{0,3}([A-Za-z]+)")
_FRAME_LINE_RE = re.compile(r"^\s*(?:at\s|File \"|#\d+\s|\d+:\s+0x|\S+\.\w+:\d+:?\s)")
_LOG_LINE_RE = re.compile(r"\b(?:INFO|ERROR|WARN|WARNING|DEBUG|TRACE|FATAL)\b|^\s*\[?\d{2,4}[-/:]\d\d")
_PROMPT_LINE_RE = re.compile(r"^\s*(?:[$#%>]|>>>)\s")
_CODE_LINE_RE = re.compile(r"[;{}]\s*$|^\s*(?:def|class|import|from|let|const|var|fn|func|public|private|return)\s|\s=\s")
_ERROR_LINE_RE = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\b", re.IGNORECASE)
_CHANGELOG_RE = re.compile(r"^\s*[-*]\s+(?:\*\*[^*]+:\*\*|\w+(?:\([^)]*\))?:)|\(\[[0-9a-f]{7}\]")
_PROSE_WORD_RE = re.compile(r"(?<![\w.`/])[a-z]{2,}(?![\w.`/(])")
_LINE_KINDS = (("l:frame", _FRAME_LINE_RE), ("l:log", _LOG_LINE_RE), ("l:prompt", _PROMPT_LINE_RE),
               ("l:code", _CODE_LINE_RE), ("l:error", _ERROR_LINE_RE), ("l:changelog", _CHANGELOG_RE))


def _char(c: str) -> str:
    if not c:
        return "eol"
    if c.isspace():
        return "sp"
    if c.isalnum():
        return "an"
    return c


def features(text: str, start: int, end: int, lex: dict[str, frozenset[str]], weak: bool = False) -> list[str]:
    """Binary feature names of a candidate ``text[start:end]`` (``weak``: found by its name alone)."""
    word = text[start:end]
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le
    line = text[ls:le]
    before, after = text[ls:start], text[end:le]
    core = word.removesuffix("()")
    f = ["bias", "weak"] if weak else ["bias"]
    if word.endswith("()"):
        f.append("s:empty_call")
    if after[:1] == "(":
        f.append("s:args_call")
    if "." in core:
        f.append("s:dot")
        f.append(f"s:parts{min(core.count('.') + 1, 4)}")
        last = core.rsplit(".", 1)[1]
        if last in lex["ext"]:
            f.append("s:last_ext")
        if last[:1].isupper():
            f.append("s:last_upper")
    if "::" in core:
        f.append("s:colons")
    if "_" in core.strip("_"):
        f.append("s:under")
    if core.startswith("_") or core.endswith("_"):
        f.append("s:edge_under")
    if re.search(r"[a-z][A-Z]", core):
        f.append("s:hump")
    if core[:1].isupper():
        f.append("s:cap")
    if core.isupper():
        f.append("s:allcaps")
    if core.islower() and core.replace("_", "").isalpha():
        f.append("s:lower")
    if any(ch.isdigit() for ch in core):
        f.append("s:digit")
    if re.search(r"[#\\/$<?!]", core):
        f.append("s:punct")
    n = len(core)
    f.append("len:" + ("s" if n <= 4 else "m" if n <= 9 else "l" if n <= 18 else "xl"))
    pc, nc = _char(before[-1:]), _char(after[:1])
    f.append("pc:" + pc)
    f.append("nc:" + nc)
    if pc == "`" and nc == "`":
        f.append("c:tick")
    elif pc in ("'", '"') and pc == nc:
        f.append("c:quoted")
    elif before.count("`") % 2 == 1:
        f.append("c:in_code_span")
    wb = _WORD_BEFORE_RE.search(before)
    if wb:
        f.append("pw:" + wb.group(1).lower())
    wa = _WORD_AFTER_RE.match(after)
    if wa:
        f.append("nw:" + wa.group(1).lower())
    f.extend(label for label, rx in _LINE_KINDS if rx.search(line))
    prose = len(_PROSE_WORD_RE.findall(line))
    f.append("l:prose" + ("0" if prose < 3 else "1" if prose < 8 else "2"))
    low = core.lower()
    for name in ("brand", "pkg", "exe", "env"):
        if low in lex[name] or core in lex[name]:
            f.append("x:" + name)
    if lex["dep"].intersection(w.lower() for w in re.findall(r"[A-Za-z]+", line)):
        f.append("x:dep_line")
    if "c:tick" in f and "s:lower" in f:
        f.append("c:tick_lower")
    if prose >= 8 and ("s:under" in f or "s:hump" in f) and pc == "sp" and nc in ("sp", ",", ".", "eol"):
        f.append("c:prose_plain")
    return f


def probability(feats: list[str], model: dict) -> float:
    """Logistic score of a feature list under ``model`` (``{"w": {...}}``)."""
    w = model["w"]
    z = sum(w.get(x, 0.0) for x in feats)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def train(cands: list[tuple[list[str], int]]) -> dict:
    """L2 logistic regression by Newton steps over binary features seen MIN_COUNT times or more."""
    counts = Counter(f for fs, _ in cands for f in set(fs))
    vocab = sorted(f for f, n in counts.items() if n >= MIN_COUNT)
    idx = {f: i for i, f in enumerate(vocab)}
    X = np.zeros((len(cands), len(vocab)))
    for r, (fs, _) in enumerate(cands):
        for f in fs:
            if f in idx:
                X[r, idx[f]] = 1.0
    y = np.array([c[1] for c in cands], dtype=float)
    w = np.zeros(len(vocab))
    reg = np.full(len(vocab), L2)
    reg[idx["bias"]] = 0.0
    for _ in range(30):
        p = 1 / (1 + np.exp(-(X @ w)))
        step = np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X + np.diag(reg + 1e-6), X.T @ (p - y) + reg * w)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return {"w": dict(zip(vocab, w.tolist()))}


def _counts(gold: Counter, pred: Counter, out: dict) -> None:
    for k in KINDS:
        g = sum(n for (kk, _), n in gold.items() if kk == k)
        p = sum(n for (kk, _), n in pred.items() if kk == k)
        tp = sum(n for (kk, _), n in (gold & pred).items() if kk == k)
        out[k] = [a + c for a, c in zip(out[k], (tp, p - tp, g - tp))]


_CUE_RE = re.compile(r"(?i)\b(install\w*|add(?:ed|ing|s)?|requir\w*|import\w*|modules?|dependenc\w*|wheel|bump\w*|"
                     r"upgrad\w*|updat\w*|using|uses?|librar\w*|packages?|crates?|gems?|deps|plugin\w*|migrat\w*|depends)\b")
_TOK_RE = re.compile(r"(?<![\w@/.\-])[`'\"]?(@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)?[A-Za-z0-9])[`'\"]?(?![\w@/\-])")


def liberal_packages(t: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, list[str]]]:
    """Every free name within 60 characters after (25 before) a dependency cue word, with features."""
    cues = list(_CUE_RE.finditer(t))
    out = []
    for m in _TOK_RE.finditer(t) if cues else ():
        s, e = m.span(1)
        if any(a < e and s < z for a, z in taken) or any(c.start() <= s < c.end() for c in cues):
            continue
        near = [c for c in cues if 0 <= s - c.end() <= 60 or 0 <= c.start() - e <= 25]
        if not near:
            continue
        c = min(near, key=lambda c: s - c.end() if s >= c.end() else c.start() - e)
        gap = t[c.end():s] if s >= c.end() else t[e:c.start()]
        name = m.group(1)
        f = features(t, s, e, LEX) + ["cue:" + c.group(1).lower()[:6], "dir:" + ("after" if s >= c.end() else "before"),
                                      f"gap:{min(len(gap.split()), 4)}"]
        f += [x for x, ok in (("n:digit", re.search(r"\d", name)), ("n:hyphen", "-" in name), ("n:slash", "/" in name),
                              ("n:stop", name.lower() in tx._STOP_WORDS), ("n:lex", name.lower() in tx._LEXICON),
                              ("n:quoted", t[s - 1 : s] in "`'\"")) if ok]
        out.append((s, e, f))
    return out


def collect(split: str) -> dict:
    """Per set: every kind's [tp, fp, fn], and labelled candidates of each experiment."""
    d: dict = {"counts": {k: [0, 0, 0] for k in KINDS}, "symbol": [], "package": [], "liberal": []}
    for row in b.load(b.DATA / f"{split}.jsonl"):
        t = tx._sanitize(row["text"])
        cands = [c for c in tx._extract_doc(None, t, False) if not (c.weak and c.kind == "symbol")]
        gold = Counter((e["kind"], e["text"]) for e in row["entities"])
        pred = Counter((c.kind, t[c.start : c.end]) for c in cands if c.kind in KINDS)
        _counts(gold, pred, d["counts"])
        left = Counter(gold)
        for c in cands:
            if c.kind in ("symbol", "package"):
                key = (c.kind, t[c.start : c.end])
                y = 1 if left[key] > 0 else 0
                left[key] -= y
                d[c.kind].append((features(t, c.start, c.end, LEX, c.weak), y))
        missed = gold - pred
        for s, e, f in liberal_packages(t, [(c.start, c.end) for c in cands]):
            y = 1 if missed[("package", t[s:e])] > 0 else 0
            missed[("package", t[s:e])] -= y
            d["liberal"].append((f, y))
    return d


def after(d: dict, exp: str, model: dict | None, thr: float) -> dict:
    """Counts once the experiment is applied: a filter drops candidates below thr, liberal adds those above."""
    out = {k: list(v) for k, v in d["counts"].items()}
    if model is None:
        return out
    kind = "package" if exp == "liberal" else exp
    for fs, y in d[exp]:
        hit = probability(fs, model) >= thr
        if exp == "liberal" and hit:
            out[kind] = [out[kind][0] + y, out[kind][1] + 1 - y, out[kind][2] - y]
        elif exp != "liberal" and not hit:
            out[kind] = [out[kind][0] - y, out[kind][1] - (1 - y), out[kind][2] + y]
    return out


def figures(c: dict) -> dict[str, float]:
    return {"micro": b.prf(*np.sum([c[k] for k in KINDS], axis=0))[2], "symP": b.prf(*c["symbol"])[0],
            "cmdF": b.prf(*c["command"])[2],
            "symR": b.prf(*c["symbol"])[1], "pkgF": b.prf(*c["package"])[2]}


def threshold(exp: str, train_sets: list[str], data: dict) -> float:
    inner = {s: train([c for o in train_sets if o != s for c in data[o][exp]]) for s in train_sets}
    best = (-1.0, 0.0)
    for thr in np.arange(0.0, 1.0, 0.025):
        thr = float(thr) if exp != "liberal" else 1.0 - float(thr)  # ties: the gentlest threshold wins
        tot = sum(np.sum([after(data[s], exp, inner[s], thr)[k] for k in KINDS], axis=0) for s in train_sets)
        best = max(best, (round(b.prf(*tot)[2], 6), -thr if exp != "liberal" else thr))
    return abs(best[1])


ROUND7 = ("installer", "go", "gradle", "plugin", "gemspec", "cargo", "maven", "frame", "mix", "update", "update-to",
          "replace", "instead", "favour", "move", "dep", "composer", "swift", "make-target", "emphasis", "ruby-ns",
          "dep-phrase", "cued-quote", "go-func", "ld-exit", "installed",
          "member-missing", "logger-name", "env-accessor")
INSTALLER = ("_INSTALL_RE", "_install_names")
# round 8's shapes (text.py, after ``_SHAPES_OFF``); before = all of them off, which is main before round 8
ROUND8 = ("quoted-type", "generated-frame", "mix-task", "go-mod", "go-env", "module-named", "import-binds",
          "name-undefined", "manifest-word", "gradle-path", "ruby-predicate", "prompt",
          "shell-comment", "action-ref", "link-name", "link-sha", "kv-hex", "md-url", "at-range", "cued-program",
          "installer-command", "source-script")
# round 9's vocabulary parts (text.py, ``_switch_shapes``); before = all of them off, which is main before round 9
ROUND9 = ("programs", "installers", "files", "cmdlet", "lone-program", "specifier", "ivy", "lang-install", "dep-constraint",
          "module-missing", "solver", "spaced-prompt", "keywords", "apt-output")
# round 10's dependency cues (text.py, ``_scan_dependency_cues``); before = all of them off, which is main before round 10
ROUND10 = ("dep-list", "switch-from", "artifact", "dep-table", "rebar3", "env-named", "manifest-file", "import-line",
           "pkg-noun", "error-code", "win-set", "prose-import")


def base_module(rev: str):
    """text.py as of ``rev``, loaded as its own module."""
    src = subprocess.run(["git", "show", f"{rev}:graphmem/extract/text.py"], cwd=b.ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "text_base.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("text_base", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["text_base"] = mod
    spec.loader.exec_module(mod)
    return mod


def switch(on: set[str], base, mine: dict) -> None:
    """Round 7's shapes in ``on`` on, the others off (the installer: the base's code)."""
    tx._SHAPES_OFF = frozenset(r for r in ROUND7 if r not in on)
    for attr in INSTALLER:
        setattr(tx, attr, mine[attr] if "installer" in on else getattr(base, attr))


def errors_of(split: str) -> tuple[Counter, dict]:
    """Every error (row, kind, text, fn/fp) of a set, and its per-kind counts."""
    errs: Counter = Counter()
    counts = {k: [0, 0, 0] for k in KINDS}
    rows = b.load(b.DATA / f"{split}.jsonl")
    for row, mentions in zip(rows, tx.extract_many([r["text"] for r in rows], concepts=False)):
        gold = Counter((e["kind"], e["text"]) for e in row["entities"])
        pred = Counter((m.kind, m.text) for m in mentions if m.kind in KINDS)
        _counts(gold, pred, counts)
        errs.update({(row["id"], k, t, "fn"): n for (k, t), n in (gold - pred).items()})
        errs.update({(row["id"], k, t, "fp"): n for (k, t), n in (pred - gold).items()})
    return errs, counts


def judge_rules(rev: str, shapes: tuple[str, ...] = ROUND7) -> None:
    """Each shape of ``shapes`` off in turn, then the folds. Round 7 swaps the installer code for the base's;
    round 8's and 9's are all switched by name (the earlier rounds' stay on)."""
    if shapes == ROUND7:
        base = base_module(rev)
        mine = {attr: getattr(tx, attr) for attr in INSTALLER}

        def switch(on: set[str], _base: object = None, _mine: object = None) -> None:
            globals()["switch"](on, base, mine)
    else:
        base = mine = None

        def switch(on: set[str], _base: object = None, _mine: object = None) -> None:
            tx._switch_shapes(frozenset(r for r in shapes if r not in on))
    every = set(shapes)
    switch(every, base, mine)
    full = {s: errors_of(s) for s in SETS}
    fixes: dict[str, dict[str, int]] = {}
    print(f"{'shape':14} " + " ".join(f"{s:>11}" for s in SETS) + "   (errors fixed / made, each set)")
    for r in shapes:
        switch(every - {r}, base, mine)
        fixes[r] = {}
        cells = []
        for s in SETS:
            off = errors_of(s)[0]
            fixed, made = sum((off - full[s][0]).values()), sum((full[s][0] - off).values())
            fixes[r][s] = fixed
            cells.append(f"{fixed:>5} / {made:<3}")
        print(f"{r:14} " + " ".join(cells))
    switch(set(), base, mine)
    before = {s: figures(errors_of(s)[1]) for s in SETS}
    rows = []
    print(f"\n{'fold':5}  {'micro F1':>15}  {'symbol P':>15}  {'package F1':>15}  {'command F1':>15}  shapes left out")
    for held in SETS:
        on = {r for r in shapes if any(n > 0 for s, n in fixes[r].items() if s != held)}
        switch(on, base, mine)
        a = figures(errors_of(held)[1])
        rows.append(a)
        f0 = before[held]
        print(f"{held:5}  {f0['micro']:.3f} -> {a['micro']:.3f}  {f0['symP']:.3f} -> {a['symP']:.3f}  "
              f"{f0['pkgF']:.3f} -> {a['pkgF']:.3f}  {f0['cmdF']:.3f} -> {a['cmdF']:.3f}  "
              f"{', '.join(sorted(every - on)) or '-'}")
    print("mean   " + "  ".join(f"{np.mean([before[s][k] for s in SETS]):.3f} -> {np.mean([r[k] for r in rows]):.3f}"
                                for k in ("micro", "symP", "pkgF", "cmdF")))
    switch(every, base, mine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learned", action="store_true")
    ap.add_argument("--fixed", type=float, help="a fixed threshold instead of the inner leave-one-set-out one")
    ap.add_argument("--rules", action="store_true", help="judge round 7's shapes leave-one-set-out")
    ap.add_argument("--base", default="6ef2f07", help="the commit before round 7 (--rules)")
    ap.add_argument("--round", type=int, default=7, choices=(7, 8, 9, 10), help="whose shapes --rules judges")
    args = ap.parse_args()
    if args.rules:
        judge_rules(args.base, {7: ROUND7, 8: ROUND8, 9: ROUND9, 10: ROUND10}[args.round])
        return
    data = {s: collect(s) for s in SETS}
    base = {s: figures(data[s]["counts"]) for s in SETS}
    for s in SETS:
        print(f"{s:5} " + "  ".join(f"{k} {v:.3f}" for k, v in base[s].items()))
    print("mean  " + "  ".join(f"{k} {np.mean([base[s][k] for s in SETS]):.3f}" for k in base["dev"]))
    for exp in ("symbol", "package", "liberal") if args.learned else ():
        print(f"== {exp} ({'filter' if exp != 'liberal' else 'liberal package candidates + scorer'}) ==")
        rows = []
        for held in SETS:
            train_sets = [s for s in SETS if s != held]
            model = train([c for s in train_sets for c in data[s][exp]])
            thr = args.fixed if args.fixed is not None else threshold(exp, train_sets, data)
            a = figures(after(data[held], exp, model, thr))
            rows.append(a)
            print(f"{held:5} thr {thr:.3f}  " + "  ".join(f"{k} {base[held][k]:.3f} -> {a[k]:.3f}" for k in a))
        print("mean             " + "  ".join(f"{k} {np.mean([base[s][k] for s in SETS]):.3f} -> "
                                           f"{np.mean([r[k] for r in rows]):.3f}" for k in rows[0]))


if __name__ == "__main__":
    main()
