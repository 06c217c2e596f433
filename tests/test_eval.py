"""graphmem.evaluate: metrics on fixed rankings, and a real run on a tiny two-scope dataset."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from graphmem import evaluate as ev
from graphmem.errors import InvalidInput

DATA = Path(__file__).parent / "data" / "eval_tiny"
ITEMS, QUERIES = DATA / "items.jsonl", DATA / "queries.jsonl"
BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench-data"


# ----- metric functions on fixed rankings ---------------------------------------------------------
@pytest.mark.parametrize(("ranked", "expected", "r5", "r10", "hit10", "rr"), [
    (["a", "b", "c"], ["a"], 1.0, 1.0, 1.0, 1.0),
    (["x", "y", "a", "b"], ["a", "b", "z"], 2 / 3, 2 / 3, 1.0, 1 / 3),
    ([f"x{i}" for i in range(7)] + ["a"], ["a"], 0.0, 1.0, 1.0, 1 / 8),
    ([f"x{i}" for i in range(20)] + ["a"], ["a", "b"], 0.0, 0.0, 0.0, 1 / 21),
    ([f"x{i}" for i in range(100)] + ["a"], ["a"], 0.0, 0.0, 0.0, 0.0),
    ([], ["a"], 0.0, 0.0, 0.0, 0.0),
])
def test_metric_functions(ranked: list[str], expected: list[str], r5: float, r10: float,
                          hit10: float, rr: float) -> None:
    assert ev.recall_at(ranked, expected, 5) == pytest.approx(r5)
    assert ev.recall_at(ranked, expected, 10) == pytest.approx(r10)
    assert ev.hit_at(ranked, expected, 10) == hit10
    assert ev.reciprocal_rank(ranked, expected) == pytest.approx(rr)


def test_score_run_averages_overall_and_per_category() -> None:
    queries = [{"qid": "1", "expected": ["a"], "category": 2, "category_name": "temporal"},
               {"qid": "2", "expected": ["b", "c"], "category": 2, "category_name": "temporal"},
               {"qid": "3", "expected": ["d"], "category": 4},
               {"qid": "4", "expected": [], "category": 4}]  # nothing expected: not scored
    run = {"1": ["a"], "2": ["x", "c", "y", "z", "w", "b"], "3": ["q"] * 12 + ["d"]}
    overall, by = ev.score_run(run, queries)
    assert overall.n == 3
    assert overall.recall_at_5 == pytest.approx((1 + 0.5 + 0) / 3)
    assert overall.recall_at_10 == pytest.approx((1 + 1 + 0) / 3)
    assert overall.hit_at_10 == pytest.approx(2 / 3)
    assert overall.mrr == pytest.approx((1 + 1 / 2 + 1 / 13) / 3)
    assert set(by) == {"temporal", "4"}
    assert by["temporal"].n == 2 and by["temporal"].mrr == pytest.approx(0.75)
    assert by["4"].n == 1 and by["4"].recall_at_10 == 0.0


def test_item_conversion_times_titles_and_entities() -> None:
    rows = ev.load_items(ITEMS)
    items, files, symbols = ev.to_memory_items(rows)
    by_id = {i.id: i for i in items}
    assert by_id["a01"].created_at == 1700000000 and by_id["a01"].project == "acme/app"
    assert by_id["a16"].created_at == pytest.approx(1701424800)  # parsed from ISO `ts`
    assert by_id["a16"].title == "Switch to httpx for the HTTP client"
    assert by_id["a16"].text == rows[-1]["text"]  # title + rest of the text, nothing repeated
    # no timestamp: file order, one second apart, after the previous line
    assert by_id["b02"].created_at - by_id["b01"].created_at == 1.0
    assert files["a11"] == ["setup.cfg", "src/app/cli.py"]
    assert symbols["a04"] == ["src/app/http.py::Client.send", "src/app/http.py::backoff"]
    assert ev.title_and_body({"text": "x" * 300})[0] == "x" * 200


def test_canonical_files_stand_for_renamed_paths() -> None:
    rows = [{"id": "x", "scope": "s", "text": "moved", "files": ["pkg/a.py"],
             "files_canonical": ["src/pkg/a.py"]},
            {"id": "y", "scope": "s", "text": "plain", "files": ["pkg/b.py"]}]
    _, files, _ = ev.to_memory_items(rows)
    assert files == {"x": ["src/pkg/a.py"], "y": ["pkg/b.py"]}


def test_loaders_reject_bad_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "scope": "s"}\n')
    with pytest.raises(InvalidInput, match="missing text"):
        ev.load_items(bad)
    bad.write_text("not json\n")
    with pytest.raises(InvalidInput, match="not JSON"):
        ev.load_queries(bad)
    with pytest.raises(InvalidInput, match="unknown context"):
        ev.query_context({"files": []}, "everything")


def test_query_context_selects_files_and_functions() -> None:
    query = {"files": ["a.py"], "functions": ["a.py::f"]}
    assert ev.query_context(query, "none") == ([], [])
    assert ev.query_context(query, "files") == (["a.py"], [])
    assert ev.query_context(query, "files+functions") == (["a.py"], ["a.py::f"])


# ----- a real run (real Kuzu, real MiniLM) -------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ev.EvalReport, dict[str, list[str]]]:
    out = tmp_path_factory.mktemp("eval") / "run.jsonl"
    report = ev.run_eval(ITEMS, QUERIES, context="files", run_out=out)
    run = {r["qid"]: r["ranked"] for r in map(json.loads, out.read_text().splitlines())}
    return report, run


def test_run_eval_scores_the_tiny_dataset(tiny_run: tuple[ev.EvalReport, dict]) -> None:
    report, run = tiny_run
    assert report.items == 31 and report.queries == 10 and set(run) == {f"q{i:02d}" for i in range(1, 11)}
    queries = ev.load_queries(QUERIES)
    overall, by_category = ev.score_run(run, queries)
    assert report.overall == overall and report.by_category == by_category  # the file is the run
    assert set(report.by_category) == {"code", "single-hop", "multi-hop"}
    assert report.overall.hit_at_10 >= 0.9 and report.overall.mrr >= 0.6
    table = report.format_table()
    assert "overall" in table and "single-hop" in table and "MRR" in table


def test_scope_isolation(tiny_run: tuple[ev.EvalReport, dict]) -> None:
    _, run = tiny_run
    scope = {r["id"]: r["scope"] for r in ev.load_items(ITEMS)}
    for query in ev.load_queries(QUERIES):
        ranked = run[query["qid"]]
        assert ranked, query["qid"]
        assert {scope[i] for i in ranked} == {query["scope"]}, query["qid"]


def test_as_of_is_respected(tiny_run: tuple[ev.EvalReport, dict]) -> None:
    _, run = tiny_run
    times = {r["id"]: ev.item_time(r) for r in ev.load_items(ITEMS)}
    dated = [q for q in ev.load_queries(QUERIES) if q.get("as_of_unix")]
    assert dated
    for query in dated:
        ranked = run[query["qid"]]
        assert all(times[i] is not None and times[i] < query["as_of_unix"] for i in ranked)
        assert "a12" not in ranked  # the later migration the query's file names
        assert ranked[0] == "a05"


def test_main_prints_json_and_writes_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    code = ev.main([str(ITEMS), str(QUERIES), "--context", "none", "--channels", "keyword,vector",
                    "--run-out", str(out), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["context"] == "none" and report["channels"] == ["keyword", "vector"]
    assert report["overall"]["n"] == 10 and 0.0 <= report["overall"]["mrr"] <= 1.0
    assert len(out.read_text().splitlines()) == 10


def test_main_reports_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ev.main([str(tmp_path / "missing.jsonl"), str(QUERIES)]) == 2
    assert "graphmem eval:" in capsys.readouterr().err


# ----- the real bench-data formats -------------------------------------------------------------------
@pytest.mark.skipif(not BENCH.is_dir(), reason=f"no bench data at {BENCH}")
@pytest.mark.parametrize("dataset", ["locomo-dev", "repohist-requests"])
def test_reads_the_real_bench_formats(dataset: str, tmp_path: Path) -> None:
    folder = BENCH / dataset
    for name in ("items.jsonl", "queries.jsonl"):
        with open(folder / name, encoding="utf-8") as handle:
            (tmp_path / name).write_text("".join(islice(handle, 20)))
    items = ev.load_items(tmp_path / "items.jsonl")
    queries = ev.load_queries(tmp_path / "queries.jsonl")
    assert len(items) == 20 and len(queries) == 20
    converted, _, _ = ev.to_memory_items(items)
    assert [i.id for i in converted] == [r["id"] for r in items]
    assert all(q["text"] and q["expected"] for q in queries)
