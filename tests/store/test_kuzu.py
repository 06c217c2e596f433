"""The Kuzu store against a real database in a temp dir."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphmem.errors import StoreCorrupt, StoreUnavailable
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.kuzu import SCHEMA_VERSION, KuzuStore, engine_module, schema_statements


def item(i: int, project: str = "p", **extra) -> dict:
    return {"id": f"i{i}", "project": project, "title": f"item {i}", "body": "",
            "search_text": f"item {i} " + extra.pop("words", ""), "created_at": float(i), **extra}


def unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


@pytest.fixture
def store(tmp_path: Path):
    s = KuzuStore(tmp_path / "g.kuzu")
    yield s
    s.close()


def test_schema_version_recorded(store: KuzuStore) -> None:
    assert store.schema_version == SCHEMA_VERSION == 2


def test_a_version_1_store_gets_the_hook_field_columns_and_its_rows_lifted(tmp_path: Path) -> None:
    """Schema 1 kept an observation's cwd, transcript path and extra in tool_input under
    reserved keys; opening such a store adds the columns and moves them there."""
    path = tmp_path / "old.kuzu"
    driver = engine_module("kuzu")
    db = driver.Database(str(path))
    conn = driver.Connection(db)
    version_1 = [s.replace(", cwd STRING, transcript_path STRING,\n  extra STRING", "")
                 for s in schema_statements()]
    assert not any("transcript_path" in s for s in version_1)
    for statement in version_1:
        conn.execute(statement)
    conn.execute("MERGE (m:Meta {key: 'schema_version'}) SET m.value = '1'")
    conn.execute("CREATE (:Observation {id: 'o1', session_id: 's', tool_input: $t, ts: 1.0})",
                 {"t": '{"path": "a.py", "_cwd": "/w", "_transcript_path": "/w/t.jsonl", '
                       '"_extra": {"turn_id": "7"}}'})
    conn.execute("CREATE (:Observation {id: 'o2', session_id: 's', tool_input: '{}', ts: 2.0})")
    conn.close()
    db.close()
    store = KuzuStore(path, checked=True, engine="kuzu")
    try:
        assert store.schema_version == 2
        first, second = store.session_observations("s")
        assert (first["tool_input"], first["cwd"], first["transcript_path"], first["extra"]) == (
            {"path": "a.py"}, "/w", "/w/t.jsonl", {"turn_id": "7"})
        assert (second["tool_input"], second["cwd"], second["extra"]) == ({}, "", {})
    finally:
        store.close()


def test_a_journal_record_of_schema_1_decodes_with_the_hook_fields_as_columns() -> None:
    record = {"op": "put_observations", "rows": [
        {"id": "o1", "tool_input": {"path": "a.py", "_cwd": "/w", "_extra": {"k": 1}}},
        {"id": "o2", "tool_input": {"path": "b.py"}, "cwd": "/x"}]}
    first, second = ops.decode(record).rows  # type: ignore[attr-defined]
    assert first == {"id": "o1", "tool_input": {"path": "a.py"}, "cwd": "/w", "extra": {"k": 1}}
    assert second == record["rows"][1]


def test_put_get_list_update_delete(store: KuzuStore) -> None:
    store.apply(ops.PutItems([item(1), item(2, kind="pitfall"), item(3, "q")]))
    assert [r["id"] for r in store.get_items(["i2", "i1", "nope"])] == ["i2", "i1"]
    assert [r["id"] for r in store.list_items(ItemFilter(project="p"))] == ["i2", "i1"]
    assert [r["id"] for r in store.list_items(ItemFilter(project="p", kinds=("pitfall",)))] == ["i2"]
    store.apply(ops.UpdateItems(["i1"], {"status": "stale"}))
    assert store.get_items(["i1"])[0]["status"] == "stale"
    assert store.count_items(ItemFilter(project="p", statuses=("active",))) == 1
    store.apply(ops.DeleteItems(["i1"]))
    assert store.get_items(["i1"]) == []


def test_keyword_and_vector_search_respect_scope(store: KuzuStore) -> None:
    store.apply(ops.PutItems([item(1, words="proxy timeout"),
                                             item(2, words="cookie jar"),
                                             item(3, "other", words="proxy timeout")]))
    store.apply(ops.PutVectors([{"id": f"i{i}", "vec": unit(i), "model": "m",
                                                "text_hash": "h"} for i in (1, 2, 3)]))
    assert [i for i, _ in store.keyword_search("proxy", 5, ItemFilter(project="p"))] == ["i1"]
    nearest = store.vector_search(unit(3), 5, ItemFilter(project="p"))
    assert {i for i, _ in nearest} == {"i1", "i2"}
    assert store.vector_search(unit(1), 1, ItemFilter(project="p"))[0][0] == "i1"


def test_deleted_item_leaves_both_indexes(store: KuzuStore) -> None:
    store.apply(ops.PutItems([item(1, words="zebracorn")]))
    store.apply(ops.PutVectors([{"id": "i1", "vec": unit(1), "model": "m",
                                                "text_hash": "h"}]))
    store.apply(ops.DeleteItems(["i1"]))
    assert store.keyword_search("zebracorn", 5, ItemFilter()) == []
    assert store.vector_search(unit(1), 5, ItemFilter()) == []
    assert store.counts()["ItemVector"] == 0


def test_bulk_vectors_rebuild_index(store: KuzuStore) -> None:
    n = 2100
    store.apply(ops.PutItems([item(i) for i in range(n)]))
    store.apply(ops.PutVectors([{"id": f"i{i}", "vec": unit(i), "model": "m",
                                                "text_hash": "h"} for i in range(n)]))
    assert store.vector_search(unit(7), 1, ItemFilter())[0][0] == "i7"


def test_entities_links_and_neighbours(store: KuzuStore) -> None:
    store.apply(ops.PutItems([item(1), item(2)]))
    store.apply(ops.PutEntities([
        {"id": "file:a.py", "kind": "file", "name": "a.py", "path": "a.py"},
        {"id": "symbol:a.py::f", "kind": "symbol", "name": "f", "path": "a.py", "qualname": "a.py::f"},
        {"id": "file:b.py", "kind": "file", "name": "b.py", "path": "b.py"}]))
    store.apply(ops.PutLinks("DEFINED_IN", [{"source": "symbol:a.py::f",
                                                                    "target": "file:a.py"}]))
    store.apply(ops.PutLinks("IMPORTS", [{"source": "file:a.py",
                                                                 "target": "file:b.py"}]))
    store.apply(ops.PutLinks("MENTIONS", [
        {"source": "i1", "target": "symbol:a.py::f", "weight": 1.0, "surface": "f()"},
        {"source": "i2", "target": "file:b.py", "weight": 0.5, "surface": "b.py"}]))
    assert store.entity_neighbours(["symbol:a.py::f"], hops=2) == {
        "symbol:a.py::f": 0, "file:a.py": 1, "file:b.py": 2}
    assert store.items_mentioning(["file:b.py"], ItemFilter()) == [("i2", "file:b.py", 0.5)]
    assert [e["id"] for e in store.find_entities(path_suffixes=["a.py"], kinds=["file"])] == ["file:a.py"]
    # Links are idempotent under replay.
    store.apply(ops.PutLinks("MENTIONS", [
        {"source": "i1", "target": "symbol:a.py::f", "weight": 1.0, "surface": "f()"}]))
    assert store.counts()["MENTIONS"] == 2


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "g.kuzu"
    path.write_bytes(b"this is not a kuzu database" * 100)
    with pytest.raises(StoreCorrupt, match="rebuild"):
        KuzuStore(path)


def test_database_held_by_another_process_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "g.kuzu"
    KuzuStore(path).close()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from graphmem.store.kuzu import KuzuStore
        s = KuzuStore(__import__('pathlib').Path({str(path)!r}))
        print('open', flush=True)
        time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreUnavailable, match="in use"):
            KuzuStore(path)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
