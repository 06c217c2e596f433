"""Every notebook runs top to bottom (nbclient, a kernel on this venv's python) in under 60 s
against a realistic store (a replayed Claude Code session + imported git history, staled by the
post-commit update) and against bad input: an empty store, a stale-only store, 100k items.

After the notebook's own cells the test runs one probe cell in the same kernel that reads back
what the figures contain (matplotlib axes texts, tick labels, titles, legends) and the values
the notebook computed, so each figure is checked for the nodes and bars it should show.

The runs the selected tests need are started when the first of them asks, two kernels at a time
(each run still gets a fresh kernel of its own; runs on one store go one after another), while
the stores are built: a kernel mostly keeps one core busy and the test process waits, so the
second core took the next run. The tests then check each run as before.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")  # before jupyter_core is imported

import nbformat
import pytest

from graphmem.config import Config
from graphmem.service import Memory
from tests import notebook_fixture as fixture

NOTEBOOKS = fixture.NOTEBOOKS
BENCH = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-data"
# third-party chatter a kernel may print on stderr (not ours, not an error)
ALLOWED_STDERR = (re.compile(r"TqdmWarning: IProgress not found"),
                  re.compile(r"from \.autonotebook import tqdm as notebook_tqdm"))

PROBE = '''
import json as _json

def _texts(fig):
    out = []
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return [t for t in out if t]
'''
PROBES = {
    "01_tour": PROBE + '''print("PROBE " + _json.dumps({
    "figure": _texts(fig_counts), "total": total, "kinds": counts,
    "brief_lines": brief.lines, "brief_tokens": brief.tokens, "budget": brief.budget,
    "explain": explain[:20], "hits": len(result.hits)}))''',
    "02_graph": PROBE + '''print("PROBE " + _json.dumps({
    "file": [t.get_text() for t in fig_neighbourhoods.axes[0].texts],
    "error": [t.get_text() for t in fig_neighbourhoods.axes[1].texts],
    "titles": [ax.get_title() for ax in fig_neighbourhoods.axes[:2]],
    "centrality": _texts(fig_centrality), "hot": _texts(fig_hot),
    "graph": dict(whole.graph), "nodes": whole.number_of_nodes(),
    "duplicates": duplicates["clusters"], "orphans": orphans}))''',
    "03_staleness": PROBE + '''print("PROBE " + _json.dumps({
    "figure": _texts(fig_stale), "total": total, "stale_total": stale_total,
    "shown": [e["item"].id for e in stale], "candidate": candidate["item"].id if candidate else None,
    "verified": verified.model_dump(mode="json") if verified else None}))''',
    "04_eval": PROBE + '''print("PROBE " + _json.dumps({
    "figure": _texts(fig_recall), "recall": recall, "data": str(data) if data else None}))''',
}


@pytest.fixture(scope="session")
def kernel_specs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return fixture.kernel_specs(tmp_path_factory.mktemp("jupyter"))


class Run:
    """An executed notebook: its cells' text outputs, the probe's values and the time it took."""

    def __init__(self, nb: Any, seconds: float) -> None:
        self.nb = nb
        self.seconds = seconds
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", ())]
        self.stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
        self.stderr = [o["text"] for o in outputs if o.get("name") == "stderr"]
        self.markdown = [o["data"]["text/markdown"] for o in outputs
                         if "text/markdown" in o.get("data", {})]
        line = next(x for x in self.stdout.splitlines() if x.startswith("PROBE "))
        self.probe: dict[str, Any] = json.loads(line[len("PROBE "):])


def run_notebook(runs: Runs, store: str, name: str) -> Run:
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert not any(c.get("outputs") or c.get("execution_count") for c in committed.cells
                   if c.cell_type == "code"), f"{name} is committed with outputs"
    run = runs.get(store, name)
    noise = [line for text in run.stderr for line in text.splitlines()
             if line.strip() and not any(p.search(line) for p in ALLOWED_STDERR)]
    assert not noise, f"{name} wrote to stderr: {noise}"
    return run


# ----- stores and runs ------------------------------------------------------------------------------
def build_realistic(root: Path) -> dict[str, Any]:
    built = fixture.build_realistic(root)
    with Memory(Config(home=built["home"], cwd=built["repo"], embed=False), read_only=True) as mem:
        built["stale"] = sorted(i.id for i in mem.list(status="stale", limit=1000))
    return built


def build_bench(root: Path) -> dict[str, Any]:
    if (BENCH / "repohist-requests" / "items.jsonl").is_file():
        return {"env": {"GRAPHMEM_BENCH_DATA": str(BENCH)}}
    # the repository's tiny set, laid out like the bench data
    shutil.copytree(Path(__file__).parent / "data" / "eval_tiny", root / "tiny")
    return {"env": {"GRAPHMEM_BENCH_DATA": str(root), "GRAPHMEM_NOTEBOOK_DATASET": "tiny"}}


def build_no_bench(root: Path) -> dict[str, Any]:
    return {"env": {"GRAPHMEM_BENCH_DATA": str(root / "none")}}


# What each store is built by, in the order they are built: the runs of one store are handed to
# the kernels as soon as it is built ("bench" and "no-bench" are 04_eval's data, not stores).
# The 100k store's runs take longest, so it is built early; the realistic store takes longest
# to build, so the others' runs keep the kernels busy meanwhile.
BUILDS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "empty": fixture.build_empty, "no-bench": build_no_bench, "100k": fixture.build_big,
    "bench": build_bench, "stale-only": fixture.build_stale_only, "realistic": build_realistic,
}


def run_env(store: str, name: str, built: dict[str, Any], out: Path) -> dict[str, str]:
    """The environment a test runs a notebook with."""
    if store == "100k":  # opened by its directory; the others as a project
        return {"GRAPHMEM_NOTEBOOK_STORE": str(built["data_dir"])}
    if (store, name) == ("realistic", "01_tour"):
        return {**built["env"], "GRAPHMEM_NOTEBOOK_QUERY": "KeyError when running pytest -k orders"}
    if (store, name) == ("realistic", "02_graph"):
        return {**built["env"], "GRAPHMEM_NOTEBOOK_FILE": "src/shop/db.py",
                "GRAPHMEM_NOTEBOOK_OUT": str(out)}
    return dict(built["env"])


def run_key(item: pytest.Item) -> tuple[str, str] | None:
    """The (store, notebook) run a test of this module checks."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {"test_tour": ("realistic", "01_tour"), "test_graph": ("realistic", "02_graph"),
            "test_staleness": ("realistic", "03_staleness"),
            "test_eval_on_a_dev_benchmark_sample": ("bench", "04_eval"),
            "test_eval_without_benchmark_data_says_so": ("no-bench", "04_eval"),
            "test_bad_input_still_runs_and_says_what_it_shows": (params.get("kind"),
                                                                 params.get("name")),
            }.get(getattr(item, "originalname", item.name))


class Runs:
    """The stores, and the runs started on them: a test takes its run with get()."""

    def __init__(self, out: Path) -> None:
        self.out = out  # 02_graph's picture on the realistic store
        self.stores: dict[str, dict[str, Any]] = {}
        self.futures: dict[tuple[str, str], Future[Run]] = {}

    def get(self, store: str, name: str) -> Run:
        return self.futures[(store, name)].result()


def run_in_turn(specs: Any, jobs: list[tuple[Future[Run], str, dict[str, str]]]) -> None:
    """One store's runs, one after another, each in a fresh kernel."""
    for future, name, env in jobs:
        try:
            future.set_result(Run(*fixture.execute(name, env, specs, extra_cells=(PROBES[name],))))
        except BaseException as exc:  # noqa: BLE001 - the test that takes this run raises it
            future.set_exception(exc)


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, kernel_specs: Any,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    selected = {key for item in request.session.items
                if getattr(item, "module", None) is request.module
                and (key := run_key(item)) is not None}
    result = Runs(tmp_path_factory.mktemp("graph-out"))
    kernels = ThreadPoolExecutor(max_workers=2, thread_name_prefix="notebook")
    try:
        for store, build in BUILDS.items():
            names = sorted(name for s, name in selected if s == store)
            if not names:
                continue
            jobs = [(Future(), name) for name in names]
            for future, name in jobs:
                result.futures[(store, name)] = future
            try:
                built = result.stores[store] = build(tmp_path_factory.mktemp(store))
            except Exception as exc:  # noqa: BLE001 - each test of this store raises it
                for future, _ in jobs:
                    future.set_exception(exc)
                continue
            kernels.submit(run_in_turn, kernel_specs, [
                (future, name, run_env(store, name, built, result.out)) for future, name in jobs])
        yield result
    finally:  # every run was taken by its test by now, unless the session was cut short
        kernels.shutdown(wait=True, cancel_futures=True)


# ----- the realistic store ------------------------------------------------------------------------
def test_tour(runs) -> None:
    run = run_notebook(runs, "realistic", "01_tour")
    realistic = runs.stores["realistic"]
    probe = run.probe
    assert probe["total"] == realistic["stats"]["items"]
    assert sum(probe["kinds"]["pitfall"].values()) == realistic["stats"]["by_kind"]["pitfall"]
    for text in ("pitfall", "history", "summary", "active", "stale", "today",
                 "items by kind and status"):
        assert text in probe["figure"], text
    assert probe["brief_lines"] and probe["brief_tokens"] <= probe["budget"]
    assert "graphmem: what this project remembers" in run.stdout
    rows = probe["explain"]
    pitfall = next(r for r in rows if r["title"].startswith("KeyError: 'DATABASE_URL'"))
    assert pitfall["status"] == "stale" and pitfall["entity_rank"] is not None
    assert {"entity_rank", "graph_rank", "vector_rank", "keyword_rank"} <= set(rows[0])
    table = run.markdown[0]
    assert table.startswith("| rank | score | entity | graph | vector | keyword |")
    assert "KeyError: 'DATABASE_URL'" in table


def test_graph(runs) -> None:
    run = run_notebook(runs, "realistic", "02_graph")
    probe = run.probe
    # the file's neighbourhood: the file, its functions, the commits that touched it, the items
    # anchored there (stale ones marked), and what those items speak of
    for label in ("src/shop/db.py", "connect()", "ConfigError()", "DATABASE_URL", "KeyError"):
        assert label in probe["file"], label
    assert any(t.endswith("(stale)") and "KeyError" in t for t in probe["file"])
    assert any(re.fullmatch(r"[0-9a-f]{7}", t) for t in probe["file"])  # a commit
    assert probe["titles"][0].startswith("src/shop/db.py")
    for label in ("KeyError", "DATABASE_URL", "tests/conftest.py", "pytest"):
        assert label in probe["error"], label
    assert any("(stale)" in t for t in probe["error"])
    assert "src/shop/payments.py (file)" in probe["centrality"]
    assert "KeyError (error)" in probe["centrality"]
    assert {"src/shop/db.py", "connect()", "tests/conftest.py"} <= set(probe["hot"])
    assert not probe["graph"]["sampled"] and probe["nodes"] > 100
    titles = [[m["title"] for m in c] for c in probe["duplicates"]]
    assert any(any("payments webhook" in t for t in c) for c in titles)
    picture = runs.out / "explore.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 50_000


def test_staleness(runs) -> None:
    run = run_notebook(runs, "realistic", "03_staleness")
    realistic = runs.stores["realistic"]
    probe = run.probe
    assert probe["stale_total"] == len(realistic["stale"]) > 0
    assert sorted(probe["shown"]) == realistic["stale"]
    commits = realistic["commits"]
    # each stale item is listed under the commit that staled it, with that commit's message
    assert re.search(f"commit {commits[2][:7]}: [0-9]+ item\\(s\\) stale — 'Migrate payments to "
                     "ChargeV2", run.stdout)
    assert re.search(f"commit {commits[0][:7]}: [0-9]+ item\\(s\\) stale — 'Fix KeyError in the "
                     "orders tests", run.stdout)
    assert "pitfall" in probe["figure"] and "stale items by kind" in probe["figure"]
    verified = probe["verified"]
    assert verified["id"] == probe["candidate"] and verified["status"] == "active"
    assert verified["verified"] is True
    # verified on a scratch copy: the store itself still has it stale
    with Memory(Config(home=realistic["home"], cwd=realistic["repo"], embed=False),
                read_only=True) as mem:
        assert mem.get_item(probe["candidate"]).status.value == "stale"


def test_eval_on_a_dev_benchmark_sample(runs) -> None:
    run = run_notebook(runs, "bench", "04_eval")  # the bench data, else the repository's tiny set
    recall = run.probe["recall"]
    assert set(recall) == {"entity", "graph", "vector", "keyword", "fused"}
    assert all(0.0 <= v <= 1.0 for r in recall.values() for v in r.values())
    assert all(list(r.values()) == sorted(r.values()) for r in recall.values())  # grows with k
    for text in ("entity", "graph", "vector", "keyword", "fused", "recall@k", "50"):
        assert text in run.probe["figure"], text
    assert re.search(r"sample: \d+ of the dataset's items", run.stdout)


def test_eval_without_benchmark_data_says_so(runs) -> None:
    run = run_notebook(runs, "no-bench", "04_eval")
    assert "No benchmark data at" in run.stdout and run.probe["recall"] == {}
    assert "no benchmark data: nothing evaluated" in run.probe["figure"]


# ----- bad input --------------------------------------------------------------------------------------
SAYS = {
    ("empty", "01_tour"): ["This store is empty", "(empty: there is nothing to brief yet)",
                           "No memory matches"],
    ("empty", "02_graph"): ["0 nodes, 0 edges", "the store is empty",
                            "No file is linked to any item yet"],
    ("empty", "03_staleness"): ["This store is empty: no memories, so none can be stale",
                                "Nothing to verify"],
    ("stale-only", "01_tour"): ["2 items; stale: 2 (100%)", "none of the 2 is active"],
    ("stale-only", "02_graph"): ["No error is linked to any item yet"],
    ("stale-only", "03_staleness"): ["2 of 2 items are stale (100%)",
                                     "every item: the whole store needs review"],
    ("100k", "01_tour"): ["100,000 items"],
    ("100k", "02_graph"): ["(a random sample of 5,000 of 100,000 items)",
                           "not computed on a sampled store"],
    ("100k", "03_staleness"): ["the 1,000 most recently changed are shown"],
}


@pytest.mark.parametrize("kind", ["empty", "stale-only", "100k"])
@pytest.mark.parametrize("name", ["01_tour", "02_graph", "03_staleness"])
def test_bad_input_still_runs_and_says_what_it_shows(runs, kind: str, name: str) -> None:
    # the 100k store is opened by its directory (GRAPHMEM_NOTEBOOK_STORE), the others as a project
    run = run_notebook(runs, kind, name)
    built = runs.stores[kind]
    shown = run.stdout + "\n".join(run.markdown)
    for text in SAYS[(kind, name)]:
        assert text in shown, (text, shown[-2000:])
    probe = run.probe
    if name == "01_tour":
        assert probe["total"] == built["stats"]["items"]
        assert ("no items" in probe["figure"]) == (kind == "empty")
    if name == "02_graph":
        if kind == "empty":
            assert probe["file"] == probe["error"] == ["nothing to draw"]
        if kind == "stale-only":
            assert "billing.py" in probe["file"] and "total()" in probe["file"]
            assert sum(t.endswith("(stale)") for t in probe["file"]) == 2
            assert {"billing.py", "total()", "tax()"} <= set(probe["hot"])
        if kind == "100k":
            assert probe["graph"]["sampled"] and probe["graph"]["items_shown"] == 5000
            assert "(sampled from" in probe["titles"][0] and len(probe["file"]) <= 60
            assert any(t.endswith("(error)") for t in probe["centrality"])
    if name == "03_staleness":
        assert probe["stale_total"] == built["stats"]["by_status"].get("stale", 0)
        assert len(probe["shown"]) == min(probe["stale_total"], 1000)
        assert (probe["verified"] is None) == (kind == "empty")
        if probe["verified"]:
            assert probe["verified"]["status"] == "active"
