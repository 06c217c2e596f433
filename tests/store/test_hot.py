"""The in-memory retrieval mirror: it answers as the graph would, and follows every write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.errors import InvalidInput
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.hot import HotIndex
from graphmem.store.kuzu import KuzuStore
from tests.store.test_kuzu import item, unit


@pytest.fixture
def store(tmp_path: Path):
    s = KuzuStore(tmp_path / "g.kuzu")
    yield s
    s.close()


def snapshot(hot: HotIndex) -> dict[str, Any]:
    """Everything the mirror answers from, keyed by id (slot order is history, not content)."""
    live = [i for i in hot.slot if hot.alive[hot.slot[i]]]
    fields = {i: (hot.codes.text[hot.project[hot.slot[i]]], hot.codes.text[hot.kind[hot.slot[i]]],
                  hot.codes.text[hot.status[hot.slot[i]]], hot.codes.text[hot.session[hot.slot[i]]],
                  float(hot.created_at[hot.slot[i]]), float(hot.expire_at[hot.slot[i]]),
                  tuple(sorted((k, str(v)) for k, v in hot.fields.get(i, {}).items())))
              for i in live}
    vectors = {i: hot.vectors[hot.slot[i]].round(5).tolist() for i in live
               if hot.has_vector[hot.slot[i]]}
    links = {e: dict(sorted(v.items())) for e, v in hot.item_links.items() if v}
    code = {e: sorted(v) for e, v in hot.code_out.items() if v}
    index = hot.keywords
    words = {term: sorted((hot.ids[n], c) for n, c in zip(index.slots[t], index.counts[t]))
             for term, t in index.vocabulary.items() if index.slots[t]}
    return {"fields": fields, "vectors": vectors, "links": links, "code": code, "words": words,
            "lengths": (index.documents, index.total_length)}


def seed(store: KuzuStore) -> None:
    store.apply(ops.PutItems([
        item(1, words="proxy"), item(2, kind="pitfall", session_id="s1"), item(3, "q"),
        item(4, expire_at=50.0), item(5, status="stale")]))
    store.apply(ops.PutVectors([
        {"id": f"i{n}", "vec": unit(n), "model": "m", "text_hash": "h"} for n in range(1, 6)]))
    store.apply(ops.PutEntities([
        {"id": "file:a.py", "kind": "file", "name": "a.py", "path": "a.py"},
        {"id": "file:b.py", "kind": "file", "name": "b.py", "path": "b.py"},
        {"id": "symbol:a.py::f", "kind": "symbol", "name": "f", "path": "a.py"}]))
    store.apply(ops.PutLinks("DEFINED_IN", [{"source": "symbol:a.py::f", "target": "file:a.py"}]))
    store.apply(ops.PutLinks("IMPORTS", [{"source": "file:a.py", "target": "file:b.py"}]))
    store.apply(ops.PutLinks("MENTIONS", [
        {"source": "i1", "target": "file:a.py", "weight": 0.5},
        {"source": "i2", "target": "symbol:a.py::f"}, {"source": "i3", "target": "file:a.py"}]))
    store.apply(ops.PutLinks("ANCHORED_TO", [{"source": "i1", "target": "file:a.py", "hash": "x"}]))


FILTERS = [ItemFilter(), ItemFilter(project="p"), ItemFilter(project="q"),
           ItemFilter(project="nope"), ItemFilter(statuses=("stale",)),
           ItemFilter(kinds=("pitfall", "note")), ItemFilter(created_before=3.0),
           ItemFilter(now=100.0, statuses=None), ItemFilter(ids=("i2", "i5", "zz"), statuses=None),
           ItemFilter(session_id="s1"), ItemFilter(project="p", kinds=("decision",))]


@pytest.mark.parametrize("flt", FILTERS)
def test_filters_agree_with_the_graph(store: KuzuStore, flt: ItemFilter) -> None:
    seed(store)
    everyone = [f"i{n}" for n in range(1, 6)]
    graph = {r["id"] for r in store.list_items(flt, limit=100)}
    assert set(store.visible_ids(everyone, flt)) == graph
    assert store.count_visible(flt) == store.count_items(flt) == len(graph)


def test_nearest_is_exact_and_filtered(store: KuzuStore) -> None:
    seed(store)
    query = np.asarray(unit(2)) + 0.3 * np.asarray(unit(1))
    query = (query / np.linalg.norm(query)).tolist()
    got = store.vector_search(query, 10, ItemFilter(project="p", statuses=None))
    expected = sorted(((f"i{n}", float(np.dot(unit(n), query))) for n in (1, 2, 4, 5)),
                      key=lambda p: -p[1])
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert [i for i, _ in store.vector_search(query, 1, ItemFilter(project="p"))] == ["i2"]
    assert store.vector_search(query, 5, ItemFilter(project="nope")) == []
    assert store.vector_search(query, 0, ItemFilter()) == []


def test_links_and_code_neighbours(store: KuzuStore) -> None:
    seed(store)
    linked = sorted(store.items_mentioning(["file:a.py"], ItemFilter(project="p")))
    assert linked == [("i1", "file:a.py", 0.5), ("i1", "file:a.py", 1.0)]  # mention + anchor
    assert store.entity_neighbours(["symbol:a.py::f"], hops=2) == {
        "symbol:a.py::f": 0, "file:a.py": 1, "file:b.py": 2}


def test_the_mirror_follows_every_write_as_a_fresh_build_sees_it(store: KuzuStore) -> None:
    seed(store)
    built = store.hot  # built now; from here on it follows the ops
    store.apply(ops.UpdateItems(["i1", "i3"], {"status": "stale",
                                                                        "confidence": 0.2}))
    store.apply(ops.SetItemStatus([
        {"id": "i2", "status": "stale", "stale_reason": "`f` in a.py changed in abc1234"},
        {"id": "i3", "status": "active", "stale_reason": ""}]))
    store.apply(ops.BumpItems([{"id": "i2", "n": 3, "at": 9.0}]))
    store.apply(ops.PutItems([item(2, kind="decision")]))  # re-put: defaults again
    store.apply(ops.PutVectors([{"id": "i3", "vec": unit(33), "model": "m",
                                                "text_hash": "h"}]))
    store.apply(ops.DeleteLinks("ANCHORED_TO", ["i1"], ["file:a.py"]))
    store.apply(ops.DeleteLinks("MENTIONS", ["i3"], None))
    store.apply(ops.DeleteLinks("IMPORTS", ["file:a.py"], None))
    store.apply(ops.PutLinks("TOUCHES", [{"source": "file:b.py", "target": "symbol:a.py::f"}]))
    store.apply(ops.DeleteEntities(["symbol:a.py::f"]))
    store.apply(ops.DeleteItems(["i4"]))
    store.apply(ops.PutItems([item(9, "p", words="late")]))
    followed = store.hot
    assert followed is built  # followed, not dropped and rebuilt
    assert snapshot(followed) == snapshot(store._build_hot())
    assert store.entity_neighbours(["file:a.py"], hops=1) == {"file:a.py": 0}
    assert store.items_mentioning(["file:a.py"], ItemFilter(statuses=None)) == [
        ("i1", "file:a.py", 0.5)]


def test_a_failed_write_leaves_the_mirror_as_the_graph(store: KuzuStore) -> None:
    seed(store)
    before = snapshot(store.hot)
    with pytest.raises(InvalidInput):
        store.apply(ops.UpdateItems(["i1"], {"no_such_field": 1}))
    assert snapshot(store.hot) == before == snapshot(store._build_hot())


def test_a_store_reopened_builds_the_same_mirror(tmp_path: Path) -> None:
    first = KuzuStore(tmp_path / "g.kuzu")
    seed(first)
    assert first.hot is not None
    first.apply(ops.DeleteItems(["i2"]))
    followed = snapshot(first.hot)
    first.close()
    again = KuzuStore(tmp_path / "g.kuzu", read_only=True)
    try:
        assert snapshot(again.hot) == followed
    finally:
        again.close()


def test_vector_search_sees_only_the_vectors_of_its_model(tmp_path: Path) -> None:
    store = KuzuStore(tmp_path / "g.kuzu", vector_model="m")
    try:
        seed(store)  # every vector made by "m"
        assert [i for i, _ in store.vector_search(unit(2), 1, ItemFilter())] == ["i2"]
        store.apply(ops.PutVectors([{"id": "i2", "vec": unit(2), "model": "other",
                                     "text_hash": "h"}]))
        followed = [i for i, _ in store.vector_search(unit(2), 5, ItemFilter())]
        assert "i2" not in followed and snapshot(store.hot) == snapshot(store._build_hot())
    finally:
        store.close()
    again = KuzuStore(tmp_path / "g.kuzu", read_only=True, vector_model="other")
    try:
        assert [i for i, _ in again.vector_search(unit(2), 5, ItemFilter())] == ["i2"]
    finally:
        again.close()


def test_service_writes_keep_the_mirror_true(memory: Any) -> None:
    first = memory.add("Use httpx, not requests, for the HTTP client in src/app/http.py",
                       kind="decision")
    gone = memory.add("Timeouts in src/app/http.py: set APP_TIMEOUT=30 before the tests",
                      kind="env")
    memory.forget(gone.id)  # rewrites the database; the mirror starts again from it
    memory.search("http client timeout", files=["src/app/http.py"])  # builds the mirror
    memory.add("The CI cache breaks when pip is upgraded inside the job (see ci.yml)",
               kind="pitfall")
    memory.feedback(first.id, "outdated")
    memory.search("CI cache pip")  # counts uses
    memory.flush_use()
    assert snapshot(memory.store.hot) == snapshot(memory.store._build_hot())
    assert memory.store.hot.fields[first.id]["hit_count"] >= 1


def test_the_owner_builds_the_mirror_in_its_warm_up(memory: Any, monkeypatch: Any) -> None:
    import threading
    import time

    from graphmem.owner import server as owner
    from graphmem.owner.rendezvous import socket_address

    memory.add("Retries in src/app/http.py back off exponentially", kind="decision")
    memory.store._hot = None
    monkeypatch.setattr(owner, "WARM_AFTER_SECONDS", 0.0)
    server = owner.OwnerServer(memory, socket_address(memory.dir) + "-test", 60.0)
    try:
        threading.Thread(target=server.background, kwargs={"every": 3600.0}, daemon=True).start()
        deadline = time.monotonic() + 60
        while memory.store._hot is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with server.lock:
            assert memory.store._hot is not None
            assert memory.store._hot.count(ItemFilter()) == 1
    finally:
        server.server_close()
        with server.lock:  # the warm-up goes on to re-embed and ingest: not into a closed store
            server.closing = True


def test_search_rows_from_the_mirror_equal_the_graph_rows(memory: Any) -> None:
    kept = memory.add("Use httpx, not requests, for the HTTP client", body="Because of HTTP/2.",
                      kind="decision", tags=["http"])
    stale = memory.add("Run the API tests with APP_TIMEOUT=30", kind="env")
    memory.update(stale.id, status="stale", stale_reason="`run_tests` changed")
    memory.search("http client")  # builds the mirror and counts a use
    memory.flush_use()
    memory.feedback(kept.id, "outdated")
    ids = [kept.id, stale.id]
    graph = {r["id"]: {k: v for k, v in r.items() if k != "search_text"}
             for r in memory.store.get_items(ids)}
    mirror = memory.store.item_rows(ids)
    assert {i: {k: v for k, v in row.items() if k != "body_cut"} for i, row in mirror.items()} == graph
    assert not any(row["body_cut"] for row in mirror.values())
