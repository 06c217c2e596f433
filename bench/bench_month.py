"""A simulated month of coding-agent sessions: what the lifecycle (supersession, TTL, decay,
sweep) keeps out of the brief and the searches, beside the same month without it.

The replay is scripted from templates filled with real names from the `psf/requests` history
(`items.jsonl` of the repohist-requests bench data: file paths, functions, error names), so
entity extraction and linking see realistic code names. Over 30 days, 8 sessions a day:

- conventions change mid-month (how to install dev dependencies, the test command, the formatter,
  the target branch), env facts change (a port, a CA-bundle env var, the CI Python version, a
  proxy), decisions are reversed; about half of the changes say so with a cue ("now", "instead",
  "reversed"), the rest only state the new value ("port 8081"),
- pitfalls (real error names in real functions) get a fix, then a newer fix,
- tasks are opened and most are closed with a "Done: ..." note,
- stable facts about real functions are recorded and later restated in other words (repeats),
- every session writes a summary and runs one search (which counts as use),
- a backlog from before the month: old tasks long done, old summaries, old notes (some obsolete).

Every generated text knows whether it is still true at the end of the month. A stored item is
judged by its stored text (a merge keeps one of the texts it folded together).

WITH lifecycle: `add_items` per session (dedupe + supersession), TTLs per kind, `sweep(now=day
end)` after every simulated day. WITHOUT: the same adds with `supersede=False`, every TTL 0
(never expires) and no sweep. Merging of repeats (dedupe) stays on in both, and the brief's
confidence-decay floor cannot be switched off (it never bites within a month). Reported at the
end of the month: items by status and bytes on disk; the share of brief lines still true; the
no-longer-true items shown in the brief and in the top 5 of one search per changed fact.

Run: .venv/bin/python bench/bench_month.py [--data DIR] [--days 30] [--sessions 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["GRAPHMEM_OWNER"] = "never"
os.environ["GRAPHMEM_NO_WORKER"] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem import lifecycle
from graphmem import models as m
from graphmem.config import Config
from graphmem.service import Memory

DAY = lifecycle.DAY
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "repohist-requests"


# ----- the script ------------------------------------------------------------------------------
@dataclass
class Statement:
    """One thing a session records; `true_at_end` is the ground truth at the end of the month."""

    text: str
    kind: str
    day: float            # days since the month started (negative: the backlog)
    true_at_end: bool
    slot: str = ""        # a fact that changes over the month; its last version is true
    source: str = "agent"


@dataclass
class Script:
    sessions: list[list[Statement]] = field(default_factory=list)
    session_days: list[float] = field(default_factory=list)
    session_queries: list[str] = field(default_factory=list)
    backlog: list[Statement] = field(default_factory=list)
    probes: list[tuple[str, str]] = field(default_factory=list)  # (query, slot) asked at the end

    def statements(self) -> list[Statement]:
        return self.backlog + [s for session in self.sessions for s in session]


def load_names(data: Path, rng: random.Random) -> dict[str, list[Any]]:
    """Real functions (file, qualname) and error names from the requests history."""
    functions: Counter[tuple[str, str]] = Counter()
    errors: Counter[str] = Counter()
    for line in (data / "items.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for fn in row["functions"]:
            path, _, qual = fn.partition("::")
            if path.startswith("src/requests/") and qual and not qual.startswith("_"):
                functions[(path, qual)] += 1
        errors.update(re.findall(r"\b[A-Z]\w+(?:Error|Exception)\b", row["text"]))
    common = [f for f, n in functions.most_common(400) if "." in f[1] or n > 3]
    rng.shuffle(common)
    return {"functions": common, "errors": [e for e, _ in errors.most_common(16)]}


CHANGING: list[tuple[str, str, str, list[tuple[int, str]]]] = [
    # slot, kind, the question asked at the end, versions (day, text); the last one is true
    ("install", "convention", "how do I install the dev dependencies", [
        (0, "Install the dev dependencies with `pip install -r requirements-dev.txt`"),
        (9, ("We now install the dev dependencies with uv: `uv pip install -r "
             "requirements-dev.txt`, not pip")),
        (21, "Dev dependencies are managed by hatch now: run `hatch env create` instead of uv")]),
    ("test command", "convention", "how do I run the test suite", [
        (0, "Run the test suite with `pytest tests/`"),
        (14, "Run the test suite with `tox -e py312` from now on; plain pytest misses the extras")]),
    ("formatter", "convention", "which code formatter do we use", [
        (0, "Format the code with black before committing"),
        (17, "Format the code with ruff format before committing; black was dropped")]),
    ("branch", "convention", "which branch do pull requests target", [
        (0, "Open pull requests against the master branch"),
        (6, "The default branch was renamed from master to main; open pull requests against main")]),
    ("httpbin port", "env", "which port does the local httpbin for the tests listen on", [
        (0, "The local httpbin for the tests listens on port 8080"),
        (11, "The local httpbin for the tests listens on port 8081"),
        (24, "The local httpbin for the tests listens on port 9000")]),
    ("ca bundle", "env", "which env var points the SSL tests at the CA bundle", [
        (0, "Set REQUESTS_CA_BUNDLE to certs/dev-ca.pem for the SSL tests"),
        (16, "The SSL tests read CURL_CA_BUNDLE instead of REQUESTS_CA_BUNDLE")]),
    ("python", "env", "which Python version does CI run", [
        (0, "CI runs the test matrix on Python 3.11"),
        (19, "CI runs the test matrix on Python 3.12")]),
    ("proxy", "env", "which proxy do the integration tests use", [
        (0, "HTTPS_PROXY must point at proxy.dev.local:3128 for the integration tests"),
        (8, "HTTPS_PROXY for the integration tests is proxy.dev.local:3129")]),
    ("urllib3", "decision", "may we depend on urllib3 2", [
        (0, "Decision: keep urllib3 pinned below 2.0 until the adapters are ported"),
        (13, "Reversed: urllib3 2.x is allowed now that HTTPAdapter.send is ported")]),
    ("chardet", "decision", "which library detects the response encoding", [
        (0, "Decision: use chardet for encoding detection in Response.text"),
        (22, ("Decision reversed: charset_normalizer replaces chardet for encoding detection "
              "in Response.text"))]),
    ("docs", "convention", "how are the docs built", [
        (0, "Build the docs with `make -C docs html`"),
        (12, "Build the docs with `mkdocs build`; the Sphinx Makefile was removed")]),
    ("timeout", "convention", "what timeout do outgoing calls in the tests use", [
        (0, "Every outgoing call in the tests passes timeout=5"),
        (18, "Every outgoing call in the tests passes timeout=10")]),
]
FIXES = ["guard against a None body before reading it", "decode with response.encoding first",
         "catch it and retry once with a fresh connection", "pass timeout=(3.05, 27)",
         "strip the trailing slash from the URL", "close the pool manager in the test teardown",
         "read the raw stream with decode_content=False", "copy the headers dict before mutating",
         "normalise the proxy URL scheme to lower case", "reset the redirect counter per hop"]
CAUSES = ["the root cause is a stale pooled connection", "it comes from a mutated default dict",
          "the real cause is the charset guess on empty bodies",
          "the cause is a proxy that drops the CONNECT response",
          "it is triggered by a relative Location header"]
STABLE = ["is on the hot path of every request", "must stay backwards compatible (public API)",
          "is covered by tests/test_requests.py", "has no type hints yet",
          "is patched by several third-party plugins", "logs through the urllib3 logger",
          "is where most redirect bugs were fixed", "copies its settings from the Session"]
REPHRASE = ["Note: {qual} ({path}) {what}", "{qual} in {path} {what}, as a reminder",
            "Remember that {qual} from {path} {what}"]
TASK_VERBS = ["add type hints to {qual} in {path}", "write a regression test for {qual}",
              "split {qual} out of {path}", "document the return value of {qual}",
              "remove the Python 2 branch in {qual}", "profile {qual} on large bodies"]


def build_script(names: dict[str, list[Any]], days: int, per_day: int, seed: int) -> Script:
    rng = random.Random(seed)
    functions = list(names["functions"])
    errors = names["errors"]
    script = Script()
    scheduled: dict[int, list[Statement]] = {d: [] for d in range(days)}

    # Facts that change: each version goes out on its day; older versions are false at the end.
    for slot, kind, question, versions in CHANGING:
        for n, (day, text) in enumerate(versions):
            source = "user" if kind == "convention" and n else "agent"
            scheduled[min(day, days - 1)].append(Statement(text, kind, day, n == len(versions) - 1,
                                                           slot, source))
        script.probes.append((question, slot))

    # Pitfalls fixed, then fixed again (some newer fixes say so, some only differ).
    for n in range(10):
        path, qual = functions.pop()
        error = errors[n % len(errors)]
        first, second = rng.randrange(0, days // 2), rng.randrange(days // 2 + 1, days)
        fix_a, fix_b = rng.sample(FIXES, 2)
        slot = f"pitfall {n}"
        scheduled[first].append(Statement(f"{error} in {qual}() ({path}): {fix_a}", "pitfall",
                                          first, False, slot))
        newer = (f"{error} in {qual}() ({path}): newer fix, {fix_b}" if n % 2 else
                 f"{error} in {qual}() ({path}): {rng.choice(CAUSES)}; {fix_b}")
        scheduled[second].append(Statement(newer, "pitfall", second, True, slot))
        script.probes.append((f"how to fix {error} in {qual.split('.')[-1]}", slot))

    # Tasks: opened, most closed later with a note.
    for n in range(14):
        path, qual = functions.pop()
        what = rng.choice(TASK_VERBS).format(qual=qual, path=path)
        opened = rng.randrange(0, days - 6)
        closed = n % 4 != 3
        slot = f"task {n}"
        scheduled[opened].append(Statement(f"Task: {what}", "task", opened, not closed, slot))
        if closed:
            day = rng.randrange(opened + 2, days)
            scheduled[day].append(Statement(f"Done: {what}; task closed", "task", day, True, slot))
            script.probes.append((f"task {what}", slot))

    # Stable facts, some restated later in other words (repeats that should merge).
    stable: list[tuple[str, str, str]] = []
    for n in range(70):
        path, qual = functions.pop()
        stable.append((path, qual, rng.choice(STABLE)))

    # The backlog from before the month (the store was already in use).
    for n in range(12):
        path, qual = functions.pop()
        age = rng.uniform(50, 200)
        script.backlog.append(Statement(f"Task: {rng.choice(TASK_VERBS).format(qual=qual, path=path)}",
                                        "task", -age, False))  # long done, nobody said so
    for n in range(15):
        path, qual = functions.pop()
        script.backlog.append(Statement(f"Session summary: reviewed {qual} in {path} and its tests",
                                        "summary", -rng.uniform(61, 300), True))
    for n, (text, true) in enumerate([
            ("The docs are hosted on Read the Docs under requests.readthedocs.io", True),
            ("The release checklist lives in docs/dev/release.rst", False),
            ("Python 2.7 support is kept in a compat branch", False),
            ("The nightly job runs the test suite against httpbin.org", False),
            ("HISTORY.md is updated by hand for every release", True),
            ("Travis CI runs the slow tests", False),
            ("The maintainers review pull requests on Tuesdays", True),
            ("The Makefile target `ci` runs flake8 and pytest", False)]):
        script.backlog.append(Statement(text, "note", -rng.uniform(190, 400), true))

    # The sessions.
    known: list[Statement] = []
    current: dict[str, Statement] = {}
    queries = [q for q, _ in script.probes] + [f"what do we know about {q}" for _, q, _ in stable]
    for day in range(days):
        todo = list(scheduled[day])
        for index in range(per_day):
            when = day + (9 + index) / 24
            session: list[Statement] = []
            if index == 0:
                session += todo
            # New stable facts early in the month, repeats of known ones later.
            if stable and rng.random() < 0.45:
                path, qual, what = stable.pop()
                fact = Statement(f"{qual} in {path} {what}", "fact", when, True)
                session.append(fact)
                known.append(fact)
            elif known and rng.random() < 0.35:
                path, qual, what = _parts(rng.choice(known).text)
                session.append(Statement(rng.choice(REPHRASE).format(qual=qual, path=path,
                                                                     what=what),
                                         "fact", when, True))
            for s in session:
                s.day = when
                if s.slot and s.kind != "task" and not s.slot.startswith("pitfall"):
                    current[s.slot] = s  # today's change is what later sessions repeat
            # Re-learning the current version of a changing fact (also a repeat).
            said = {s.slot for s in session}
            candidates = [c for c in current.values() if c.slot not in said]
            if candidates and rng.random() < 0.2:
                again = rng.choice(candidates)
                session.append(Statement(again.text, again.kind, when, again.true_at_end,
                                         again.slot, again.source))
            path, qual = rng.choice(names["functions"])
            summary_true = True  # a summary describes what happened: it stays true
            session.append(Statement(f"Session summary (day {day + 1}, #{index + 1}): worked on "
                                     f"{qual} in {path}", "summary", when, summary_true))
            script.sessions.append(session)
            script.session_days.append(when)
            script.session_queries.append(rng.choice(queries))
    return script


def _parts(text: str) -> tuple[str, str, str]:
    qual, rest = text.split(" in ", 1)
    path, what = rest.split(" ", 1)
    return path, qual, what


# ----- the replay ------------------------------------------------------------------------------
def replay(script: Script, directory: Path, lifecycle_on: bool, month_start: float) -> dict[str, Any]:
    ttl: dict[str, float | None] = (dict(lifecycle.DEFAULT_TTL_DAYS) if lifecycle_on else
                                    {k: 0.0 for k in lifecycle.DEFAULT_TTL_DAYS})  # 0: never
    config = Config(home=directory / "home", data_dir=directory / "store", project="bench-month",
                    cwd=directory, ttl_days=ttl)
    truth = {s.text: s.true_at_end for s in script.statements()}
    timings = {"add": 0.0, "sweep": 0.0, "search": 0.0}
    swept: Counter[str] = Counter()
    with Memory(config) as memory:
        memory.embedder.load()
        memory.actor = "bench"

        def add(batch: list[Statement]) -> None:
            started = time.perf_counter()
            items = [m.MemoryItem(project=memory.project, kind=m.ItemKind(s.kind), title=s.text,
                                  source=m.Source(s.source),
                                  confidence=0.9 if s.source == "user" else 0.75,
                                  created_at=month_start + s.day * DAY,
                                  updated_at=month_start + s.day * DAY) for s in batch]
            memory.add_items(items, supersede=lifecycle_on)
            timings["add"] += time.perf_counter() - started

        def sweep(now: float) -> None:
            if lifecycle_on:
                started = time.perf_counter()
                plan = memory.sweep(now=now)
                for key in ("archive_expired", "archive_cold", "purge"):
                    swept[key] += len(plan[key])
                timings["sweep"] += time.perf_counter() - started

        for statement in sorted(script.backlog, key=lambda s: s.day):
            add([statement])
        sweep(month_start)
        day_seen = 0
        for session, when, query in zip(script.sessions, script.session_days,
                                        script.session_queries):
            while int(when) > day_seen:
                sweep(month_start + (day_seen + 1) * DAY)
                day_seen += 1
            add(session)
            started = time.perf_counter()
            memory.search(query, k=5)
            timings["search"] += time.perf_counter() - started
        sweep(month_start + (day_seen + 1) * DAY)

        def judge(ids: list[str]) -> list[bool | None]:
            rows = {r["id"]: r for r in memory.store.get_items(ids)}
            out = []
            for i in ids:
                row = rows[i]
                text = row["title"] if not row["body"] else f"{row['title']}\n{row['body']}"
                out.append(truth.get(text))
            return out

        brief = memory.brief()
        brief_truth = judge(brief.item_ids)
        search_false, top1_true, current_found, probe_rows = 0, 0, 0, []
        for question, slot in script.probes:
            hits = [h.item for h in memory.search(question, k=5, log=False).hits]
            verdicts = judge([h.id for h in hits])
            search_false += sum(1 for v in verdicts if v is False)
            top1_true += bool(verdicts and verdicts[0])
            true_texts = {s.text for s in script.statements() if s.slot == slot and s.true_at_end}
            current_found += any(h.title in true_texts for h in hits)
            probe_rows.append({"query": question, "verdicts": verdicts,
                               "titles": [h.title[:70] for h in hits]})
        stats = memory.stats()
        live = memory.store.list_items(memory._filter(), limit=10**6)
        live_false = sum(1 for v in judge([r["id"] for r in live]) if v is False)
    disk = sum(p.stat().st_size for p in (directory / "store").rglob("*") if p.is_file())
    return {
        "items": stats["items"], "by_status": stats["by_status"], "bytes_on_disk": disk,
        "live_items": len(live), "live_not_true": live_false,
        "brief_lines": len(brief.item_ids),
        "brief_true": sum(1 for v in brief_truth if v), "brief_not_true": sum(
            1 for v in brief_truth if v is False),
        "brief_unjudged": sum(1 for v in brief_truth if v is None),
        "probes": len(script.probes), "top5_not_true": search_false, "top1_true": top1_true,
        "current_truth_in_top5": current_found, "swept": dict(swept),
        "seconds": {k: round(v, 1) for k, v in timings.items()}, "probe_rows": probe_rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=8, help="sessions per simulated day")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print every probe's top 5")
    parser.add_argument("--keep", type=Path, help="keep the two stores under this directory")
    parser.add_argument("--only", choices=["with", "without"], help="replay one side only")
    args = parser.parse_args(argv)
    if not (args.data / "items.jsonl").exists():
        parser.error(f"no items.jsonl under {args.data}")
    started = time.perf_counter()
    rng = random.Random(args.seed)
    script = build_script(load_names(args.data, rng), args.days, args.sessions, args.seed)
    statements = script.statements()
    month_start = time.time() - args.days * DAY
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-month-") as tmp:
        root = args.keep or Path(tmp)
        for name, on in (("without", False), ("with", True)):
            if args.only in (None, name):
                results[name] = replay(script, root / name, on, month_start)
    if args.only:
        print(json.dumps({k: v for k, v in results[args.only].items() if k != "probe_rows"},
                         indent=2))
        return 0
    total = time.perf_counter() - started
    if args.json:
        print(json.dumps({"sessions": len(script.sessions), "statements": len(statements),
                          "seconds": round(total, 1),
                          **{k: {kk: vv for kk, vv in v.items() if kk != "probe_rows"}
                             for k, v in results.items()}}, indent=2))
        return 0
    without, with_ = results["without"], results["with"]
    true_count = sum(s.true_at_end for s in statements)
    print(f"simulated month: {len(script.sessions)} sessions over {args.days} days, "
          f"{len(statements)} statements ({true_count} still true at the end, "
          f"{len(statements) - true_count} not), {len(script.backlog)} from the backlog; "
          f"{len(script.probes)} end-of-month probes; {total:.0f} s")
    rows = [
        ("items stored", "items"),
        ("live items (active/stale, not expired)", "live_items"),
        ("  of which no longer true", "live_not_true"),
        ("bytes on disk", "bytes_on_disk"),
        ("brief lines", "brief_lines"),
        ("  still true", "brief_true"),
        ("  no longer true", "brief_not_true"),
        ("probes: no-longer-true items in top 5 (sum)", "top5_not_true"),
        ("probes: top 1 still true", "top1_true"),
        ("probes: current truth in top 5", "current_truth_in_top5"),
    ]
    print(f"\n{'':<46}{'WITHOUT lifecycle':>20}{'WITH lifecycle':>18}")
    for label, key in rows:
        print(f"{label:<46}{without[key]:>20,}{with_[key]:>18,}")
    for label, key in (("brief: share of lines still true", "brief_true"),):
        share = [r[key] / max(r["brief_lines"], 1) for r in (without, with_)]
        print(f"{label:<46}{share[0]:>20.0%}{share[1]:>18.0%}")
    print(f"{'items by status':<46}{_fmt(without['by_status']):>20}{_fmt(with_['by_status']):>18}")
    print(f"\nsweeps (with lifecycle): {with_['swept']}; seconds without/with: "
          f"{without['seconds']} / {with_['seconds']}")
    if args.verbose:
        for name in ("without", "with"):
            print(f"\nprobes {name} lifecycle:")
            for row in results[name]["probe_rows"]:
                print(f"  {row['query']}")
                for verdict, title in zip(row["verdicts"], row["titles"]):
                    mark = {True: "+", False: "x", None: "?"}[verdict]
                    print(f"    {mark} {title}")
    return 0


def _fmt(counts: dict[str, int]) -> str:
    return " ".join(f"{k[:3]}:{v}" for k, v in sorted(counts.items()))


if __name__ == "__main__":
    raise SystemExit(main())
