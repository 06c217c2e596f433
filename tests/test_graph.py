"""The memory as a networkx graph: typed nodes and edges, filters, neighbourhoods, sampling,
lossless export, and the analytics (centrality, hot spots, near-duplicates, orphans)."""

from __future__ import annotations

import ast
import io
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import analytics, graph
from graphmem import models as m
from graphmem.config import Config
from graphmem.errors import InvalidInput, NotFound
from graphmem.models import Scope
from graphmem.owner import codec
from graphmem.service import Memory
from graphmem.store import ops
from graphmem.store.schema import LINK_TABLES
from tests.conftest import git

DB = '''import os


def connect(url=None):
    return url or os.environ["DATABASE_URL"]


class Pool:
    def get(self):
        return connect()
'''
API = "from app.db import connect\n\n\ndef handler(request):\n    return connect()\n"


@pytest.fixture
def store(tmp_path: Path, repo: Path):
    """A small project: indexed code, linked items (one stale, one superseded by another, one in
    another project), evidence, a commit touching a file, and an orphan entity."""
    (repo / "src" / "app").mkdir(parents=True)
    (repo / "src" / "app" / "__init__.py").write_text("")
    (repo / "src" / "app" / "db.py").write_text(DB)
    (repo / "src" / "app" / "api.py").write_text(API)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "app")
    sha = git(repo, "rev-parse", "HEAD")
    memory = Memory(Config(home=tmp_path / "home", cwd=repo, embed=False))
    memory.index_code()
    obs = m.Observation(project=memory.project, event="post-tool", tool="Bash",
                        command="pytest", text="KeyError: 'DATABASE_URL'", files=["src/app/db.py"])
    memory.put_observations([obs])
    items = {
        "pitfall": memory.add("KeyError: 'DATABASE_URL' in connect() when running pytest",
                              kind="pitfall", files=["src/app/db.py"], symbols=["connect"],
                              observations=[obs.id]),
        "env": memory.add("DATABASE_URL must be set before pytest", kind="env",
                          files=["src/app/db.py"]),
        "old": memory.add("Pool.get opens a new connection each call", kind="fact",
                          files=["src/app/db.py"], symbols=["Pool.get"]),
        "new": memory.add("Pool.get reuses one connection per thread since the pool rewrite",
                          kind="decision", files=["src/app/db.py"], symbols=["Pool.get"]),
        "api": memory.add("handler() in src/app/api.py calls connect() on every request",
                          kind="note", files=["src/app/api.py"]),
    }
    other = m.MemoryItem(project="elsewhere", title="Unrelated project's pitfall with KeyError",
                         kind=m.ItemKind.pitfall)
    memory.add_items([other], dedupe=False)
    memory.update(items["env"].id, status="stale",
                  stale_reason=f"`connect` in src/app/db.py changed in {sha[:7]}: 2 lines")
    memory.update(items["old"].id, status="superseded")
    memory.writer.write(ops.PutLinks("SUPERSEDES", [{"source": items["new"].id, "target": items["old"].id, "at": 1.0,
                             "surface": "pool rewrite"}]))
    memory.writer.write(ops.PutEntities([
        {"id": f"commit:{sha}", "kind": "commit", "name": sha[:12]},
        {"id": "package:left-pad", "kind": "package", "name": "left-pad"}]))
    memory.writer.write(ops.PutLinks("TOUCHES", [{"source": f"commit:{sha}", "target": "file:src/app/db.py"}]))
    yield memory, {k: v.id for k, v in items.items()} | {"other": other.id}, sha
    memory.close()


def _edges(g):
    return sorted((u, v, k, tuple(sorted(d.items()))) for u, v, k, d in g.edges(keys=True, data=True))


def test_nodes_and_edges_are_typed_with_the_stored_fields(store) -> None:
    memory, ids, sha = store
    g = graph.to_networkx(memory)
    assert {d["type"] for _, d in g.nodes(data=True)} <= set(graph.NODE_TYPES)
    pitfall = g.nodes[ids["pitfall"]]
    assert pitfall["type"] == "item" and pitfall["kind"] == "pitfall"
    assert pitfall["title"].startswith("KeyError") and pitfall["status"] == "active"
    assert isinstance(pitfall["confidence"], float) and pitfall["created_at"] > 0
    assert g.nodes[ids["env"]]["stale_reason"].endswith("changed in " + sha[:7] + ": 2 lines")
    assert g.nodes["file:src/app/db.py"]["type"] == "file"
    assert g.nodes["symbol:src/app/db.py::Pool.get"]["label"] == "Pool.get()"
    assert g.nodes[f"commit:{sha}"]["label"] == sha[:7]
    assert any(d["type"] == "observation" for _, d in g.nodes(data=True))
    for u, v, key, data in g.edges(keys=True, data=True):
        assert key == data["type"] and key in LINK_TABLES
    present = {k for *_, k in g.edges(keys=True)}
    assert present == set(LINK_TABLES), present
    anchors = {(a["item"], a["entity"]): a["hash"] for a in memory.store.anchors()}
    for u, v, key, data in g.edges(keys=True, data=True):
        if key == "ANCHORED_TO":
            assert data["hash"] == anchors[(u, v)] and data["hash"]
    assert g.has_edge(ids["new"], ids["old"], "SUPERSEDES")
    assert g.edges[ids["new"], ids["old"], "SUPERSEDES"]["surface"] == "pool rewrite"


def test_the_whole_graph_holds_every_node_and_edge_of_the_store(store) -> None:
    memory, _, _ = store
    g = graph.to_networkx(memory)
    counts = memory.store.counts()
    types = analytics.type_counts(g)
    assert types["item"] == counts["Item"]
    assert types["observation"] == counts["Observation"]
    assert sum(v for t, v in types.items() if t not in ("item", "observation")) == counts["Entity"]
    for table in LINK_TABLES:
        assert sum(1 for *_, k in g.edges(keys=True) if k == table) == counts[table], table
    assert g.graph["items_total"] == counts["Item"] and not g.graph["sampled"]


def _filtered_export(rows: dict, item_ids: list[str]) -> dict:
    """What graph_rows(item_ids) must return: the whole export, filtered to the items."""
    keep = set(item_ids)
    edges = {t: [e for e in rows[t] if e["source"] in keep] for t in LINK_TABLES}
    entity_ids = {e["target"] for t in ("MENTIONS", "ANCHORED_TO") for e in edges[t]}
    for table in graph.CODE_EDGES:
        edges[table] = [e for e in rows[table]
                        if e["source"] in entity_ids and e["target"] in entity_ids]
    return {"Item": [r for r in rows["Item"] if r["id"] in keep],
            "Entity": [r for r in rows["Entity"] if r["id"] in entity_ids],
            "Observation": [], **edges}


@pytest.mark.parametrize("names", [
    [], ["pitfall"], ["new", "old"], ["new"], ["api", "env", "other"], list("xy"),
    ["pitfall", "pitfall", "nope", "api"],
    ["pitfall", "env", "old", "new", "api", "other"],
])
def test_item_subgraph_rows_equal_the_export_filtered_to_the_items(store, names) -> None:
    memory, ids, _ = store
    item_ids = [ids.get(n, n) for n in names]
    rows = memory.store.graph_rows(item_ids)
    assert rows == _filtered_export(memory.store.export_rows(), item_ids)
    assert list(rows) == ["Item", "Entity", "Observation", *LINK_TABLES]
    if "pitfall" in names:
        assert rows["DERIVED_FROM"] and rows["ANCHORED_TO"] and rows["DEFINED_IN"]


def test_every_attribute_is_graphml_safe(store) -> None:
    g = graph.to_networkx(store[0])
    values = [v for _, d in g.nodes(data=True) for v in d.values()]
    values += [v for *_, d in g.edges(data=True) for v in d.values()]
    values += list(g.graph.values())
    assert values and all(type(v) in (str, int, float, bool) for v in values)
    # one type per attribute name, so GraphML declares each key once
    kinds: dict[str, set[type]] = {}
    for _, d in g.nodes(data=True):
        for k, v in d.items():
            kinds.setdefault(k, set()).add(type(v))
    assert all(len(t) == 1 for t in kinds.values()), kinds


@pytest.mark.parametrize("fmt", ["graphml", "json", "gexf"])
def test_export_round_trips(store, tmp_path: Path, fmt: str) -> None:
    g = graph.to_networkx(store[0])
    path = graph.export(g, tmp_path / f"memory.{fmt}", fmt)
    back = graph.load(path, fmt)
    assert set(back.nodes) == set(g.nodes)
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert _edges(back) == _edges(g)
    if fmt != "gexf":  # GEXF has no graph attributes
        assert back.graph == g.graph


@pytest.mark.parametrize("fmt", ["graphml", "json", "gexf"])
def test_export_writes_to_an_open_file(store, tmp_path: Path, fmt: str) -> None:
    g = graph.to_networkx(store[0], entity="KeyError")
    buffer = io.BytesIO()
    graph.export(g, buffer, fmt)
    (tmp_path / "copy").write_bytes(buffer.getvalue())
    assert _edges(graph.load(tmp_path / "copy", fmt)) == _edges(g)


def test_node_link_data_crosses_the_owner_socket(store) -> None:
    """What `Memory.to_networkx_data` returns survives the owner's JSON codec unchanged."""
    g = graph.to_networkx(store[0])
    wire = json.loads(json.dumps(codec.encode(graph.to_data(g))))
    back = graph.from_data(codec.decode(wire))
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert _edges(back) == _edges(g) and back.graph == g.graph


def test_a_neighbourhood_export_round_trips_with_its_hops(store, tmp_path: Path) -> None:
    g = graph.to_networkx(store[0], entity="src/app/db.py")
    back = graph.load(graph.export(g, tmp_path / "n.graphml"), "graphml")
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True)) and _edges(back) == _edges(g)


def test_filters_keep_the_chosen_items_and_what_they_link_to(store) -> None:
    memory, ids, _ = store
    mine = graph.to_networkx(memory, scope=memory.project)
    assert ids["other"] not in mine and ids["pitfall"] in mine
    branch = graph.to_networkx(memory, scope=Scope(project=memory.project, branch="main"))
    assert set(graph.nodes_of_type(branch, "item")) == set(graph.nodes_of_type(mine, "item"))
    assert not graph.nodes_of_type(graph.to_networkx(memory, scope=Scope(project=memory.project,
                                                                         branch="nope")), "item")
    pitfalls = graph.to_networkx(memory, kinds=["pitfall"])
    assert set(graph.nodes_of_type(pitfalls, "item")) == {ids["pitfall"], ids["other"]}
    assert "symbol:src/app/db.py::connect" in pitfalls and "file:src/app/api.py" not in pitfalls
    assert "package:left-pad" not in pitfalls  # linked to no kept item
    stale = graph.to_networkx(memory, statuses=["stale"])
    assert graph.nodes_of_type(stale, "item") == [ids["env"]]
    assert stale.graph["statuses"] == "stale" and stale.graph["items_total"] == 1


@pytest.mark.parametrize("entity, seed", [
    ("src/app/db.py", "file:src/app/db.py"),
    ("app/db.py", "file:src/app/db.py"),
    ("file:src/app/db.py", "file:src/app/db.py"),
    ("connect()", "symbol:src/app/db.py::connect"),
    ("KeyError", "error:KeyError"),
])
def test_neighbourhood_of_an_entity(store, entity: str, seed: str) -> None:
    memory, ids, sha = store
    n = graph.to_networkx(memory, entity=entity, hops=1)
    assert n.nodes[seed]["hop"] == 0
    assert seed in graph.resolve(n, entity)
    if seed == "file:src/app/db.py":
        assert {"symbol:src/app/db.py::connect", "symbol:src/app/db.py::Pool", f"commit:{sha}",
                "file:src/app/api.py"} <= set(n)  # DEFINED_IN, TOUCHES, IMPORTS
        assert {ids["pitfall"], ids["env"], ids["old"], ids["new"]} <= set(n)
        assert ids["api"] in n  # linked to the importing file, one code hop away
        assert n.nodes["symbol:src/app/db.py::connect"]["hop"] == 1
    if seed == "error:KeyError":
        assert ids["pitfall"] in n and ids["other"] in n and ids["api"] not in n
    for item in graph.nodes_of_type(n, "item"):
        assert n.nodes[item]["hop"] >= 1
    assert n.graph["seeds"] == f'["{seed}"]' and n.graph["hops"] == 1


def test_more_hops_reach_further(store) -> None:
    memory, _, _ = store
    near = graph.to_networkx(memory, entity="connect()", hops=0)
    far = graph.to_networkx(memory, entity="connect()", hops=2)
    assert "file:src/app/api.py" not in near or near.nodes["file:src/app/api.py"]["hop"] > 0
    assert set(near) <= set(far) and len(far) > len(near)


def test_bad_input_is_a_clear_error(store, tmp_path: Path) -> None:
    memory, _, _ = store
    with pytest.raises(NotFound, match="no entity matches 'nowhere.py'"):
        graph.to_networkx(memory, entity="nowhere.py")
    with pytest.raises(InvalidInput, match="hops"):
        graph.to_networkx(memory, entity="src/app/db.py", hops=-1)
    with pytest.raises(InvalidInput, match="max_items"):
        graph.to_networkx(memory, max_items=0)
    with pytest.raises(InvalidInput, match="unknown graph format 'dot'"):
        graph.export(graph.to_networkx(memory), tmp_path / "x.dot", "dot")
    with pytest.raises(InvalidInput, match="no such file"):
        graph.load(tmp_path / "missing.graphml")


def test_max_items_samples_and_says_so(store) -> None:
    memory, _, _ = store
    g = graph.to_networkx(memory, max_items=2, seed=1)
    assert len(graph.nodes_of_type(g, "item")) == 2
    assert g.graph["sampled"] and g.graph["items_total"] == 6 and g.graph["items_shown"] == 2
    assert graph.to_networkx(memory, max_items=2, seed=1).nodes == g.nodes  # reproducible
    linked = {v for item in graph.nodes_of_type(g, "item") for _, v in g.out_edges(item)}
    assert "package:left-pad" not in g and linked <= set(g)


def test_an_empty_store_is_an_empty_graph(memory, tmp_path: Path) -> None:
    g = graph.to_networkx(memory)
    assert g.number_of_nodes() == 0 and g.graph["items_total"] == 0
    assert analytics.centrality(g) == {} and analytics.hot_spots(g) == []
    assert analytics.orphans(g) == [] and analytics.duplicate_clusters(memory)["clusters"] == []
    back = graph.load(graph.export(g, tmp_path / "e.graphml"), "graphml")
    assert back.number_of_nodes() == 0 and back.graph == g.graph


def test_centrality_ranks_the_entity_most_items_share(store) -> None:
    memory, _, _ = store
    g = graph.to_networkx(memory)
    scores = analytics.centrality(g)
    assert math.isclose(sum(scores.values()), 1.0)
    assert all(g.nodes[e]["type"] != "item" for e in scores)
    assert next(iter(scores)) == "file:src/app/db.py"  # best first; four items link it
    code = analytics.centrality(g, types=["file", "symbol"])
    assert {g.nodes[e]["type"] for e in code} <= {"file", "symbol"}
    assert math.isclose(sum(code.values()), 1.0)
    top = analytics.top_entities(g, scores, 3)
    assert top[0]["label"] == "src/app/db.py" and top[0]["items"] == 4


def test_hot_spots_rank_files_by_pitfalls_and_stale_share(store) -> None:
    memory, _, _ = store
    g = graph.to_networkx(memory)
    spots = analytics.hot_spots(g)
    first = spots[0]
    assert first["entity"] == "file:src/app/db.py"
    # pitfall, env, old, new name the file; the api note names connect(), defined in it
    assert first["hits"] == 1 and first["items"] == 5 and first["stale"] == 1
    assert first["stale_share"] == pytest.approx(0.2)
    by_entity = {s["entity"]: s for s in spots}
    assert by_entity["symbol:src/app/db.py::connect"]["hits"] == 1
    assert not any(s["entity"].split(":", 1)[1].startswith("?") for s in spots)
    # a file counts its functions' items only when rolled up
    flat = {s["entity"]: s for s in analytics.hot_spots(g, roll_up=False, top=50)}
    assert flat["file:src/app/db.py"]["items"] == 4


def test_near_duplicates_group_connected_pairs() -> None:
    vectors = {"a": [1.0, 0.0, 0.0], "b": [0.99, 0.05, 0.0], "c": [0.97, 0.2, 0.0],
               "d": [0.0, 1.0, 0.0], "e": [0.0, 0.0, 1.0], "f": [0.0, 0.01, 1.0]}
    assert analytics.near_duplicates(vectors, 0.97) == [["a", "b", "c"], ["e", "f"]]
    assert analytics.near_duplicates(vectors, 0.99999) == []
    assert analytics.near_duplicates({"a": [1.0, 0.0]}, 0.5) == []
    # blocks smaller than the matrix find the same pairs
    assert analytics.near_duplicates(vectors, 0.97, block=2) == [["a", "b", "c"], ["e", "f"]]


def test_duplicate_clusters_read_the_stored_vectors(memory) -> None:
    first = memory.add("Run the tests with pytest -x to stop at the first failure", kind="convention")
    second = memory.add("Run the test suite using pytest -x so it stops at the first failure",
                        kind="note", dedupe=False)
    memory.add("The payments webhook still calls the v1 charges API", kind="fact")
    found = analytics.duplicate_clusters(memory, threshold=0.85)
    assert found["compared"] == 3 and found["without_vector"] == 0 and not found["sampled"]
    assert [[x["id"] for x in c] for c in found["clusters"]] == [sorted([first.id, second.id])]


def test_orphans_are_entities_nothing_links(store) -> None:
    memory, _, _ = store
    g = graph.to_networkx(memory)
    assert analytics.orphans(g) == ["package:left-pad"]
    # indexed files with no function, import or item (README.md, an empty __init__.py)
    assert analytics.orphans(g, include_code=True) == [
        "file:README.md", "file:src/app/__init__.py", "package:left-pad"]


def test_draw_marks_stale_items_and_labels_what_it_draws(store) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    memory, _, _ = store
    n = graph.to_networkx(memory, entity="src/app/db.py")
    fig, ax = plt.subplots()
    try:
        drawn = graph.draw(n, ax, title="db.py")
        texts = [t.get_text() for t in ax.texts]
        assert texts == drawn["labels"] and "src/app/db.py" in texts and "connect()" in texts
        assert any(t.endswith("(stale)") for t in texts)
        assert not any(n.nodes[x]["type"] in ("concept", "observation") for x in drawn["nodes"])
        assert ax.get_title() == "db.py"
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "item" in legend and "file" in legend and "stale item" in legend
        ax.clear()
        assert graph.draw(graph.from_rows({}), ax)["labels"] == []
        assert [t.get_text() for t in ax.texts] == ["nothing to draw"]
    finally:
        plt.close(fig)


def test_networkx_and_matplotlib_stay_in_their_module() -> None:
    package = Path(graph.__file__).parent
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import)
               for alias in node.names}
        top |= {node.module.split(".")[0] for node in tree.body
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        if path.name != "graph.py":
            assert "networkx" not in top, path
        assert "matplotlib" not in top, path  # drawing imports it on use only
    code = "import sys, graphmem.graph, graphmem.analytics; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_building_from_rows_is_fast_enough_for_notebooks(store) -> None:
    rows = store[0].store.graph_rows(None)
    started = time.perf_counter()
    for _ in range(20):
        graph.from_rows(rows, entity="src/app/db.py")
    assert time.perf_counter() - started < 2.0
