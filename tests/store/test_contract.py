"""The store contract: the verbs the rest of graphmem uses, which every engine must pass.

Kuzu and Ladybug cannot share a process (both register the same native types), so this module
runs on the engine GRAPHMEM_ENGINE selects (kuzu by default), and `test_contract_on_other_engines`
runs it again in a child process for each other installed engine: one `pytest` covers them all.
Each contract test also runs on PostgreSQL (a real server from the pgserver wheel, a fresh
database per test).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphmem import Config
from graphmem.errors import GraphmemError, InvalidInput, StoreCorrupt, StoreUnavailable
from graphmem.store import kuzu as kz
from graphmem.store import ops
from graphmem.store.base import ItemFilter, Store
from graphmem.store.kuzu import ENGINES, KuzuStore, default_engine
from graphmem.store.postgres import PostgresStore, migrations
from graphmem.store.schema import ITEM_COLUMNS, LINK_TABLES

ENGINE = default_engine()
ROOT = Path(__file__).resolve().parents[2]


def item(i: int, project: str = "p", **extra) -> dict:
    return {"id": f"i{i}", "project": project, "title": f"item {i}", "body": f"body of item {i}",
            "search_text": f"item {i} " + extra.pop("words", ""), "created_at": float(i),
            "tags": [f"t{i}"], **extra}


def unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


def vector_rows(*ids: int) -> list[dict]:
    return [{"id": f"i{i}", "vec": unit(i), "model": "m", "text_hash": f"h{i}"} for i in ids]


@pytest.fixture(params=[ENGINE, "postgres"])
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest):
    if engine == "postgres":
        s: Store = PostgresStore(request.getfixturevalue("postgres_url"))
    else:
        s = KuzuStore(tmp_path / "g.kuzu", engine=engine)
    yield s
    s.close()


@pytest.fixture
def linked(store: Store) -> Store:
    """Two items of project p and one of q, code entities, observations and every link kind."""
    store.apply(ops.PutItems([item(1), item(2, kind="pitfall"), item(3, "q")]))
    store.apply(ops.PutEntities([
        {"id": "file:a.py", "kind": "file", "name": "a.py", "path": "src/a.py", "hash": "ha"},
        {"id": "symbol:a.py::f", "kind": "symbol", "name": "f", "path": "src/a.py",
         "qualname": "a.py::f", "hash": "hf"},
        {"id": "file:b.py", "kind": "file", "name": "b.py", "path": "src/b.py", "hash": "hb"},
        {"id": "concept:retry", "kind": "concept", "name": "retry", "resolved": False}]))
    store.apply(ops.PutObservations([
        {"id": "o1", "project": "p", "session_id": "s1", "tool": "Edit", "files": ["src/a.py"],
         "evidence_ref": "ev1", "tool_input": {"path": "src/a.py"}, "ts": 1.0, "cwd": "/w",
         "transcript_path": "/w/t.jsonl", "extra": {"turn_id": "7"}},
        {"id": "o2", "project": "p", "session_id": "s1", "tool": "Bash", "command": "pytest",
         "exit_code": 1, "is_error": True, "ts": 2.0},
        {"id": "o3", "project": "p", "session_id": "s1", "tool": "Write", "files": ["src/b.py"],
         "ts": 3.0}]))
    links = {
        "MENTIONS": [{"source": "i1", "target": "symbol:a.py::f", "weight": 1.0, "surface": "f()"},
                     {"source": "i1", "target": "concept:retry", "weight": 0.5, "surface": "retry"},
                     {"source": "i2", "target": "file:b.py", "weight": 0.5, "surface": "b.py"},
                     {"source": "i2", "target": "concept:retry", "weight": 0.5, "surface": "retry"}],
        "ANCHORED_TO": [{"source": "i1", "target": "file:a.py", "hash": "ha", "commit": "c1",
                         "at": 5.0}],
        "DEFINED_IN": [{"source": "symbol:a.py::f", "target": "file:a.py"}],
        "CONTAINS": [{"source": "file:a.py", "target": "symbol:a.py::f"}],
        "IMPORTS": [{"source": "file:a.py", "target": "file:b.py"}],
        "TOUCHES": [{"source": "file:b.py", "target": "file:a.py"}],
        "DERIVED_FROM": [{"source": "i1", "target": "o1"}, {"source": "i1", "target": "o2"}],
        "SUPERSEDES": [{"source": "i2", "target": "i1", "at": 9.0, "surface": "newer"}],
    }
    assert set(links) == set(LINK_TABLES)
    for kind, rows in links.items():
        store.apply(ops.PutLinks(kind, rows))
    return store


# ----- items ------------------------------------------------------------------------------------
def test_schema_version_and_applied_seq(store: Store, engine: str) -> None:
    assert store.engine == engine
    version = len(migrations()) if engine == "postgres" else kz.SCHEMA_VERSION
    assert store.schema_version == version and store.applied_seq == 0
    store.apply(ops.PutItems([item(1)]), seq=7)
    assert store.applied_seq == 7


def test_items_round_trip_every_column(store: Store) -> None:
    full = {**item(1), "branch": "main", "kind": "decision", "tags": ["a", "b"], "importance": 0.9,
            "confidence": 0.4, "verified": True, "source": "user", "hit_count": 3,
            "updated_at": 2.0, "last_used_at": 3.0, "expire_at": 4.0, "pinned": True,
            "status": "stale", "stale_reason": "moved", "session_id": "s1"}
    store.apply(ops.PutItems([full, {"id": "bare"}]))
    got, bare = store.get_items(["i1", "bare"])
    assert got == {k: full.get(k, v) for k, v in ITEM_COLUMNS.items()}
    assert bare == {**ITEM_COLUMNS, "id": "bare"}


def test_item_reads_and_writes(store: Store) -> None:
    store.apply(ops.PutItems([item(1), item(2, kind="pitfall"), item(3, "q")]))
    assert [r["id"] for r in store.get_items(["i2", "i1", "nope"])] == ["i2", "i1"]
    assert [r["id"] for r in store.get_items([f"i{n}" for n in (3, 2, 1)] * 20)][:3] == \
        ["i3", "i2", "i1"]  # past POINT_LOOKUPS: one query, order kept
    assert [r["id"] for r in store.list_items(ItemFilter(project="p"))] == ["i2", "i1"]
    assert [r["id"] for r in store.list_items(ItemFilter(), limit=1, offset=1)] == ["i2"]
    assert [r["id"] for r in store.list_items(ItemFilter(kinds=("pitfall",)))] == ["i2"]
    assert store.count_items(ItemFilter(project="p")) == 2
    with pytest.raises(InvalidInput):
        store.list_items(ItemFilter(), order="title; DROP")
    store.apply(ops.UpdateItems(["i1"], {"importance": 0.1, "pinned": True}))
    assert store.get_items(["i1"])[0]["importance"] == 0.1
    store.apply(ops.SetItemStatus([{"id": "i1", "status": "stale",
                                                    "stale_reason": "gone"}]))
    assert (store.get_items(["i1"])[0]["status"], store.get_items(["i1"])[0]["stale_reason"]) == \
        ("stale", "gone")
    assert store.count_items(ItemFilter(project="p", statuses=("active",))) == 1
    store.apply(ops.BumpItems([{"id": "i2", "n": 2, "at": 50.0}]))
    assert (store.get_items(["i2"])[0]["hit_count"], store.get_items(["i2"])[0]["last_used_at"]) \
        == (2, 50.0)
    assert store.group_counts("kind") == {"note": 2, "pitfall": 1}
    assert store.group_counts("status", project="p") == {"stale": 1, "active": 1}
    with pytest.raises(InvalidInput):
        store.group_counts("body")
    store.apply(ops.DeleteItems(["i1"]))
    assert store.get_items(["i1"]) == [] and store.counts()["Item"] == 2


def test_failed_op_rolls_back_whole(store: Store) -> None:
    with pytest.raises(InvalidInput):
        store.apply(ops.UpdateItems(["i1"], {"nope": 1}))
    store.apply(ops.PutItems([item(1)]))
    store.apply(ops.PutVectors(vector_rows(1)))
    twice = [{**vector_rows(1)[0], "text_hash": "new"}] * 2
    with pytest.raises(GraphmemError):  # the copy fails (a key twice): the delete is undone
        store.apply(ops.PutVectors(twice))
    assert store.vectors(["i1"])["i1"]["text_hash"] == "h1"
    with pytest.raises(InvalidInput, match="unknown journal operation"):
        ops.decode({"op": "no_such_op", "seq": 1})


# ----- vectors and the retrieval mirror -----------------------------------------------------------
def test_vectors_and_mirror_search(store: Store) -> None:
    store.apply(ops.PutItems([item(1, words="proxy timeout"),
                                             item(2, words="cookie jar"),
                                             item(3, "q", words="proxy timeout"),
                                             item(4, words="unembedded")]))
    store.apply(ops.PutVectors(vector_rows(1, 2, 3)))
    got = store.vectors(["i1", "i4"])
    assert set(got) == {"i1"} and got["i1"]["text_hash"] == "h1"
    assert np.allclose(got["i1"]["vec"], unit(1), atol=1e-6)
    assert store.items_without_vectors() == ["i4"]
    assert [i for i, _ in store.keyword_search("proxy", 5, ItemFilter(project="p"))] == ["i1"]
    assert store.keyword_search("  ", 5, ItemFilter()) == []
    assert set(store.term_weights("proxy cookie")) == {"proxi", "cooki"}  # stemmed
    assert store.vector_search(unit(1), 1, ItemFilter(project="p"))[0][0] == "i1"
    assert {i for i, _ in store.vector_search(unit(3), 5, ItemFilter(project="p"))} == {"i1", "i2"}
    assert store.count_visible(ItemFilter(project="p")) == 3
    assert store.visible_ids(["i3", "i2", "i1"], ItemFilter(project="p")) == ["i2", "i1"]
    rows = store.item_rows(["i1", "nope"])
    assert set(rows) == {"i1"} and rows["i1"]["title"] == "item 1"
    # The mirror follows writes, and a fresh mirror (built from the graph) agrees with it (on
    # PostgreSQL there is no mirror: both searches are queries, and must agree too).
    store.apply(ops.PutVectors([{**vector_rows(2)[0], "vec": unit(1)}]))
    store.apply(ops.DeleteItems(["i1"]))
    followed = store.vector_search(unit(1), 5, ItemFilter())
    if isinstance(store, KuzuStore):
        store._hot = None
    rebuilt = store.vector_search(unit(1), 5, ItemFilter())
    assert [i for i, _ in rebuilt] == [i for i, _ in followed]
    assert [s for _, s in rebuilt] == pytest.approx([s for _, s in followed])
    assert followed[0][0] == "i2" and store.counts()["ItemVector"] == 2


def test_bulk_vectors(store: Store) -> None:
    n = 1500
    store.apply(ops.PutItems([item(i) for i in range(n)]))
    store.apply(ops.PutVectors(vector_rows(*range(n))))
    assert store.counts()["ItemVector"] == n
    assert store.vector_search(unit(7), 1, ItemFilter())[0][0] == "i7"


# ----- entities, links, observations ------------------------------------------------------------
def test_entities(linked: Store) -> None:
    assert [e["id"] for e in linked.get_entities(["file:b.py", "nope", "file:a.py"])] == \
        ["file:b.py", "file:a.py"]
    assert [e["id"] for e in linked.find_entities(path_suffixes=["a.py"], kinds=["file"])] == \
        ["file:a.py"]
    assert {e["id"] for e in linked.find_entities(names=["f", "a.py::f"])} == {"symbol:a.py::f"}
    assert [e["hash"] for e in linked.code_entities(["symbol:a.py::f", "concept:retry"])] == ["hf"]
    assert {e["id"] for e in linked.entities_by_kind("file")} == {"file:a.py", "file:b.py"}
    linked.apply(ops.DeleteEntities(["file:b.py"]))
    assert linked.get_entities(["file:b.py"]) == [] and linked.counts()["IMPORTS"] == 0
    assert linked.find_entities(path_suffixes=["b.py"]) == []


@pytest.mark.parametrize(("names", "suffixes", "kinds", "found"), [
    ([], ["a.py"], None, ["file:a.py", "file:lib/a.py", "symbol:a.py::f"]),
    ([], ["src/a.py"], None, ["file:a.py", "symbol:a.py::f"]),
    ([], ["lib/a.py", "xa.py"], ["file"], ["file:lib/a.py", "file:xa.py"]),
    ([], ["rc/a.py", "a.py/"], None, []),  # a suffix starts at a '/'; a directory names no file
    (["f"], ["lib/a.py"], None, ["file:lib/a.py", "symbol:a.py::f"]),
    (["a.py"], ["a.py"], ["file"], ["file:a.py", "file:lib/a.py"]),  # once each
    (["retry"], [], None, []),  # concepts are not code
])
def test_code_entities_by_name_and_path_suffix(linked: Store, names: list[str],
                                               suffixes: list[str], kinds: list[str] | None,
                                               found: list[str]) -> None:
    linked.apply(ops.PutEntities([
        {"id": "file:lib/a.py", "kind": "file", "name": "a.py", "path": "lib/a.py"},
        {"id": "file:xa.py", "kind": "file", "name": "xa.py", "path": "xa.py"},
        {"id": "file:nowhere", "kind": "file", "name": "nowhere"}]))
    rows = linked.find_entities(names=names, path_suffixes=suffixes, kinds=kinds)
    assert sorted(e["id"] for e in rows) == found


def test_links(linked: Store) -> None:
    counts = linked.counts()
    assert {t: counts[t] for t in LINK_TABLES} == {
        "MENTIONS": 4, "ANCHORED_TO": 1, "DEFINED_IN": 1, "CONTAINS": 1, "IMPORTS": 1,
        "TOUCHES": 1, "DERIVED_FROM": 2, "SUPERSEDES": 1}
    linked.apply(ops.PutLinks("MENTIONS", [  # replay: no second edge
        {"source": "i1", "target": "symbol:a.py::f", "weight": 0.25, "surface": "f"}]))
    assert linked.counts()["MENTIONS"] == 4
    by_kind = {(ln["kind"], ln.get("entity", {}).get("id") or ln.get("target")): ln
               for ln in linked.item_links("i1")}
    assert by_kind[("MENTIONS", "symbol:a.py::f")]["weight"] == 0.25
    assert by_kind[("ANCHORED_TO", "file:a.py")]["commit"] == "c1"
    assert by_kind[("SUPERSEDED_BY", "i2")]["surface"] == "newer"
    assert [ln["target"] for ln in linked.item_links("i2") if ln["kind"] == "SUPERSEDES"] == ["i1"]
    assert linked.entity_neighbours(["symbol:a.py::f"], hops=2) == {
        "symbol:a.py::f": 0, "file:a.py": 1, "file:b.py": 2}
    assert sorted(linked.items_mentioning(["concept:retry"], ItemFilter())) == [
        ("i1", "concept:retry", 0.5), ("i2", "concept:retry", 0.5)]
    assert linked.file_counts(["i1", "i2"]) == {"i1": 1, "i2": 1}  # a.py once: f lies in it
    mentioned = linked.mentioned_symbols(["i1", "i2", "nope"])
    assert {i: [(e["id"], e["path"], e["qualname"]) for e in rows] for i, rows in mentioned.items()} == {
        "i1": [("symbol:a.py::f", "src/a.py", "a.py::f")], "i2": [], "nope": []}
    shared = {e["id"]: e["shared_items"] for e in linked.entity_items_neighbours("concept:retry")}
    assert shared == {"symbol:a.py::f": 1, "file:a.py": 1, "file:b.py": 1}
    assert linked.entity_items_neighbours("concept:retry", project="q") == []
    assert linked.entities_only_linked_from({"concept:retry", "file:a.py"}, {"i1"}) == []
    assert linked.entities_only_linked_from({"concept:retry"}, {"i1", "i2"}) == ["concept:retry"]
    linked.apply(ops.DeleteLinks("MENTIONS", ["i1"], ["concept:retry"]))
    linked.apply(ops.DeleteLinks("DERIVED_FROM", ["i1"]))
    assert (linked.counts()["MENTIONS"], linked.counts()["DERIVED_FROM"]) == (3, 0)
    with pytest.raises(InvalidInput):
        linked.apply(ops.PutLinks("LIKES", []))


def test_observations(linked: Store) -> None:
    first, second = linked.item_observations("i1")
    assert (first["id"], first["tool_input"], first["files"]) == ("o1", {"path": "src/a.py"},
                                                                   ["src/a.py"])
    assert (first["cwd"], first["transcript_path"], first["extra"]) == ("/w", "/w/t.jsonl",
                                                                        {"turn_id": "7"})
    assert (second["exit_code"], second["is_error"], second["tool_input"]) == (1, True, {})
    assert (second["cwd"], second["transcript_path"], second["extra"]) == ("", "", {})
    assert [o["id"] for o in linked.session_observations("s1")] == ["o1", "o2", "o3"]
    assert linked.session_files("s1", ["Edit", "Write"]) == ["src/b.py", "src/a.py"]
    assert linked.observation_users("o2") == ["i1"]
    assert linked.evidence_in_use(["ev1", "ev2"]) == {"ev1"}
    linked.apply(ops.DeleteObservations(["o1"]))
    assert [o["id"] for o in linked.item_observations("i1")] == ["o2"]


def test_anchors_and_staleness_queries(linked: Store) -> None:
    assert linked.anchors() == linked.anchors(["i1"]) == [
        {"item": "i1", "entity": "file:a.py", "kind": "file", "path": "src/a.py", "qualname": "",
         "hash": "ha", "commit": "c1", "status": "active"}]
    assert linked.anchors(["i2"]) == []
    on_path = linked.anchors_on_paths(["src/a.py"])
    assert [(r["item"], r["seen"], r["current"]) for r in on_path] == [("i1", "ha", "ha")]
    assert linked.anchors_of_items(None) == linked.anchors_of_items(["i1"]) \
        == on_path
    assert linked.existing_item_ids(["i1", "i9"]) == {"i1"}
    assert linked.entity_hashes(["file:a.py", "nope"]) == {"file:a.py": "ha"}
    assert linked.linked_entity_ids(["file:a.py", "file:b.py", "file:none"]) == \
        {"file:a.py", "file:b.py"}
    assert linked.mentions_of(["file:b.py"]) == [
        {"item": "i2", "entity": "file:b.py", "weight": 0.5, "surface": "b.py"}]


def test_project_counts_export_and_graph_rows(linked: Store) -> None:
    linked.apply(ops.PutVectors(vector_rows(1, 3)))
    assert linked.project_counts("p") == {
        "entities": 4, "observations": 3, "vectors": 1,
        "links": {"MENTIONS": 4, "ANCHORED_TO": 1, "DERIVED_FROM": 2, "SUPERSEDES": 1}}
    exported = linked.export_rows()
    assert [r["id"] for r in exported["Item"]] == ["i1", "i2", "i3"]
    assert exported["ItemVector"] == [{"id": "i1", "model": "m", "text_hash": "h1"},
                                      {"id": "i3", "model": "m", "text_hash": "h3"}]
    assert linked.graph_rows() == exported
    sub = linked.graph_rows(["i2"])
    assert [r["id"] for r in sub["Item"]] == ["i2"]
    assert {r["id"] for r in sub["Entity"]} == {"file:b.py", "concept:retry"}
    assert sub["SUPERSEDES"] == [{"source": "i2", "target": "i1", "at": 9.0, "surface": "newer"}]


# ----- the database file ------------------------------------------------------------------------
def test_reopen_read_only_and_probe(tmp_path: Path) -> None:
    path = tmp_path / "g.kuzu"
    store = KuzuStore(path, engine=ENGINE)
    store.apply(ops.PutItems([item(1)]), seq=1)
    store.close()
    assert kz.closed_cleanly(path)
    reader = KuzuStore(path, read_only=True, engine=ENGINE)
    try:
        assert [r["id"] for r in reader.get_items(["i1"])] == ["i1"]
        with pytest.raises(StoreUnavailable, match="read-only"):
            reader.apply(ops.PutItems([item(2)]))
    finally:
        reader.close()
    kz._clean_record(path).unlink()  # as after a crash: the next open probes in a child first
    store = KuzuStore(path, engine=ENGINE)
    try:
        store.check()
        assert store.applied_seq == 1
    finally:
        store.close()
    assert kz.closed_cleanly(path)


def test_damaged_file_is_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "g.kuzu"
    path.write_bytes(b"this is not a graph database" * 100)
    with pytest.raises(StoreCorrupt, match="rebuild"):
        KuzuStore(path, engine=ENGINE)


# ----- engines ----------------------------------------------------------------------------------
def test_other_engine_refused_in_this_process() -> None:
    for other in set(ENGINES) - {ENGINE}:
        with pytest.raises(GraphmemError, match="cannot share a process"):
            kz.engine_module(other)
    with pytest.raises(InvalidInput, match="unknown graph engine"):
        kz.engine_module("neo4j")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRAPHMEM_ENGINE", "neo4j")
        with pytest.raises(InvalidInput, match="engine"):
            Config.from_env()
        with pytest.raises(InvalidInput, match="unknown graph engine"):
            KuzuStore(Path("/nonexistent/g.kuzu"))


OTHERS = sorted(set(ENGINES) - {ENGINE})


def run_on(engine: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env={**os.environ, "GRAPHMEM_ENGINE": engine}, timeout=120,
                          check=False)


@pytest.mark.parametrize("other", OTHERS)
def test_contract_on_other_engines(other: str) -> None:
    if importlib.util.find_spec(other) is None:
        pytest.skip(f"engine {other!r} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
         "not on_other_engines and not files_of_another_engine and not postgres", __file__],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "GRAPHMEM_ENGINE": other},
        timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("other", OTHERS)
def test_files_of_another_engine(tmp_path: Path, other: str) -> None:
    """Neither engine opens the other's file: a clear StoreCorrupt (never a crash), and the
    journal rebuilds the graph for the engine now configured."""
    if importlib.util.find_spec(other) is None:
        pytest.skip(f"engine {other!r} is not installed")
    from graphmem import Memory

    config = Config(home=tmp_path / "home", cwd=tmp_path, project="demo", embed=False,
                    engine=ENGINE)
    with Memory(config) as memory:
        memory.add("Ladybug is the maintained fork of Kuzu", kind="decision")
    done = run_on(other, f"""
        import json
        from graphmem import Config, Memory, StoreCorrupt
        config = Config(home={str(tmp_path / "home")!r}, cwd={str(tmp_path)!r}, project="demo",
                        embed=False)
        try:
            Memory(config).close()
        except StoreCorrupt as exc:
            print(json.dumps(str(exc)))
        with Memory(config, rebuild=True) as memory:
            print(json.dumps([i.title for i in memory.list()]))
        """)
    assert done.returncode == 0, done.stderr[-3000:]
    error, titles = (json.loads(line) for line in done.stdout.splitlines())
    assert f"not a database {other} can open" in error and "graphmem rebuild" in error
    assert titles == ["Ladybug is the maintained fork of Kuzu"]
