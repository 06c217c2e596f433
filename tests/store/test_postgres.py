"""What the PostgreSQL store does beyond the contract: migrations, the op log, the columns row-level
security will key on, search inside the database, and a server that drops or refuses us."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import psycopg
import pytest

from graphmem.errors import GraphmemError, InvalidInput, StoreUnavailable
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.postgres import BULK_ROWS, BULK_VECTORS, WRITE_LOCK, PostgresStore, migrations
from tests.store.test_contract import item, unit, vector_rows


@pytest.fixture
def store(postgres_url: str):
    s = PostgresStore(postgres_url)
    yield s
    s.close()


def test_migrations_are_numbered_and_recorded_once(postgres_url: str) -> None:
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            opened.append(PostgresStore(postgres_url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(3)]  # first opens at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(opened) == 3
    try:
        rows = opened[0]._rows("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["name"]) for r in rows] == [(n, name) for n, name, _ in migrations()]
        assert rows[0] == {"version": 1, "name": "init"}
        assert all(s.schema_version == rows[-1]["version"] for s in opened)
    finally:
        for s in opened:
            s.close()


def test_the_op_log_is_the_journal(store: PostgresStore) -> None:
    written = [ops.PutItems([item(1), item(2)]), ops.PutVectors(vector_rows(1)),
               ops.PutLinks("SUPERSEDES", [{"source": "i2", "target": "i1", "at": 3.0}]),
               ops.DeleteItems(["i2"])]
    seqs = [store.append(op, by="api", req="r1" if n == 1 else None)
            for n, op in enumerate(written)]
    assert seqs == [1, 2, 3, 4] and store.applied_seq == 4
    with pytest.raises(GraphmemError):  # refused whole: no row in the log either
        store.append(ops.PutVectors(vector_rows(1) * 2))
    store.apply(ops.PutItems([item(3)]), seq=10)  # a journal moved here keeps its numbers
    with pytest.raises(InvalidInput, match="past the last"):
        store.apply(ops.PutItems([item(4)]), seq=10)
    assert store.append(ops.PutItems([item(5)])) == 11
    records = store.records()
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 10, 11]
    assert [ops.decode(r) for r in records[:4]] == written  # it replays as it was written
    assert [(r["by"], r.get("req")) for r in records[:2]] == [("api", None), ("api", "r1")]
    assert [r["seq"] for r in store.records(after=4)] == [10, 11]
    assert [r["seq"] for r in store.records_of_request("r1")] == [2]
    assert [r["seq"] for r in store.records_naming(["i2"])] == [1, 3, 4]


def test_appends_wait_for_each_other_to_commit(store: PostgresStore, postgres_url: str) -> None:
    """The op log's order is the order the tables changed in: an append waits while another
    holds the write lock, and takes the next number only then."""
    done: list[int] = []
    with psycopg.connect(postgres_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        other.execute("INSERT INTO op_log (op, record) VALUES ('compact', '{\"op\": \"compact\"}')")
        waiting = threading.Thread(target=lambda: done.append(store.append(ops.PutItems([item(1)]))))
        waiting.start()
        waiting.join(0.5)
        assert done == [] and waiting.is_alive()
        other.commit()
    waiting.join(10)
    assert done == [2] and [r["op"] for r in store.records()] == ["compact", "put_items"]


def test_rebuild_derives_the_tables_from_the_op_log(store: PostgresStore) -> None:
    store.apply(ops.PutItems([item(i) for i in range(BULK_VECTORS + 10)]))
    store.apply(ops.PutVectors(vector_rows(*range(BULK_VECTORS + 10))))
    store.apply(ops.PutEntities([{"id": "file:a.py", "kind": "file", "name": "a.py"}]))
    store.apply(ops.PutLinks("MENTIONS", [{"source": "i1", "target": "file:a.py"}]))
    store.apply(ops.UpdateItems(["i1"], {"title": "renamed"}))
    store.apply(ops.DeleteItems(["i2"]))
    store.apply(ops.PutObservations([{"id": "o1", "project": "p", "cwd": "/r", "tool_input": {
        "timeout": 5, "description": "Build", "command": "make"},
        "extra": {"hook_event_name": "PostToolUse", "agent_id": "a1"}}]))
    before = store.export_rows()
    vectors = store.vectors(["i1", "i5"])
    store._exec("DELETE FROM items WHERE id = 'i3'")  # the tables drift from the log
    store._exec("UPDATE entities SET name = 'drifted'")
    done = store.rebuild()
    assert done["ops"] == 7 and done["Item"] == BULK_VECTORS + 9
    assert store.export_rows() == before and store.vectors(["i1", "i5"]) == vectors
    assert store._rows("SELECT indexname FROM pg_indexes WHERE indexname = 'item_vectors_hnsw'")
    assert store.vector_search(unit(5), 1, ItemFilter())[0][0] == "i5"


def test_scrub_leaves_no_trace_in_any_table(store: PostgresStore) -> None:
    store.apply(ops.PutItems([item(1, words="zanzibarquux"), item(2)]))
    store.apply(ops.PutVectors(vector_rows(1, 2)))
    store.apply(ops.PutObservations([{"id": "o1", "project": "p", "text": "zanzibarquux ran"}]))
    store.apply(ops.PutEntities([{"id": "concept:zanzibarquux", "kind": "concept",
                                  "name": "zanzibarquux", "resolved": False}]))
    store.apply(ops.PutLinks("MENTIONS", [{"source": "i1", "target": "concept:zanzibarquux"},
                                         {"source": "i2", "target": "concept:zanzibarquux"}]))
    store.apply(ops.PutLinks("DERIVED_FROM", [{"source": "i1", "target": "o1"}]))
    store.apply(ops.UpdateItems(["i1", "i2"], {"importance": 0.9}))
    store.apply(ops.DeleteItems(["i2"]))
    assert tables_holding(store, "zanzibarquux")
    dropped = store.scrub({"i1", "o1", "concept:zanzibarquux"})
    assert dropped == 4  # the observation's, the entity's and the two link ops; two were cut
    assert tables_holding(store, "zanzibarquux") == []
    assert tables_holding(store, '"i1"') == tables_holding(store, "body of item 1") == []
    left = store.export_rows()
    assert [ops.decode(r) for r in store.records()][-2:] == [
        ops.UpdateItems(["i2"], {"importance": 0.9}), ops.DeleteItems(["i2"])]
    store.rebuild()
    assert store.export_rows() == left  # what the scrub left is what the log derives


def tables_holding(store: PostgresStore, needle: str) -> list[str]:
    """The tables of the store's schema with a row whose text holds the needle."""
    tables = [r["tablename"] for r in store._rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")]
    assert {"items", "op_log", "item_vectors", "observations", "meta"} <= set(tables)
    return [t for t in tables if store._one(
        f'SELECT count(*) FROM "{t}" t WHERE strpos(t::text, %s) > 0', (needle,))]


def test_many_rows_are_upserted_through_copy_as_one_at_a_time(store: PostgresStore) -> None:
    few = [item(i) for i in range(5)]
    store.apply(ops.PutItems(few))
    many = [item(i, title=f"again {i}") for i in range(3, BULK_ROWS + 3)]
    many.insert(0, item(7, title="first of two"))  # an id twice: first place, last values
    store.apply(ops.PutItems(many))
    assert len(many) > BULK_ROWS
    assert store._one("SELECT to_regclass('pg_temp.graphmem_stage_items')::text") is not None
    rows = store._rows("SELECT id, title, author FROM items ORDER BY ord")
    assert [r["id"] for r in rows] == [f"i{i}" for i in (*range(5), 7, 5, 6,
                                                         *range(8, BULK_ROWS + 3))]
    assert [r["title"] for r in rows[:4]] == ["item 0", "item 1", "item 2", "again 3"]
    assert rows[5]["title"] == "again 7" and {r["author"] for r in rows} == {store.role}
    assert store.keyword_search("item 1002", 1, ItemFilter())[0][0] == "i1002"
    store.apply(ops.PutItems([item(i, title=f"third {i}") for i in range(BULK_ROWS)]))
    assert store.get_items(["i999"])[0]["title"] == "third 999"  # the staging table again


def test_items_record_author_and_visibility(store: PostgresStore) -> None:
    store.apply(ops.PutItems([item(1)]))
    row = store._rows("SELECT author, visibility, current_user AS me FROM items")[0]
    assert (row["author"], row["visibility"]) == (row["me"], "team")
    with pytest.raises(GraphmemError, match="visibility"):
        store._exec("UPDATE items SET visibility = 'everyone'")


def test_keyword_search_any_word_best_first(store: PostgresStore) -> None:
    store.apply(ops.PutItems([
        item(1, words="proxy timeout after E0425 on port 8080"),
        item(2, words="proxy settings"),
        item(3, words="o'reilly wrote C:\\temp\\proxy.log"),
        item(4, words="cookie jar")]))
    found = store.keyword_search("why does the proxy time out with E0425", 5, ItemFilter())
    assert found[0][0] == "i1" and {i for i, _ in found} == {"i1", "i2", "i3"}
    assert all(a >= b > 0 for (_, a), (_, b) in itertools.pairwise(found))
    assert [i for i, _ in store.keyword_search("8080", 5, ItemFilter())] == ["i1"]
    assert [i for i, _ in store.keyword_search("o'reilly \\temp", 5, ItemFilter())] == ["i3"]
    assert store.keyword_search("the and of", 5, ItemFilter()) == []
    everywhere = dict(store.keyword_search("proxy", 5, ItemFilter()))
    assert set(everywhere) == {"i1", "i2", "i3"}  # proxy.log holds the word too
    assert store.keyword_search("proxy", 5, ItemFilter(ids=("i2",))) == [("i2", everywhere["i2"])]
    weights = store.term_weights("proxy cookie zebra")
    assert list(weights) == ["proxi", "cooki", "zebra"]  # in the text's order
    assert weights["zebra"] > weights["cooki"] > weights["proxi"]  # rarer words weigh more


LENGTH = "(SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(i.search_tsv))"
WORD_TABLE_ROWS = {
    "item_words": ("SELECT item, word, project, author, visibility, tf, length FROM item_words",
                   ("SELECT i.id, u.lexeme, i.project, i.author, i.visibility, "
                    f"cardinality(u.positions), {LENGTH} FROM items i, unnest(i.search_tsv) u")),
    "word_counts": ("SELECT word, project, author, visibility, items FROM word_counts",
                    ("SELECT u.lexeme, i.project, i.author, i.visibility, count(*) "
                     "FROM items i, unnest(i.search_tsv) u GROUP BY 1, 2, 3, 4")),
    "item_counts": ("SELECT project, author, visibility, items, length FROM item_counts",
                    ("SELECT project, author, visibility, count(*), "
                     f"sum({LENGTH}) FROM items i GROUP BY 1, 2, 3"))}


def word_tables(store: PostgresStore) -> tuple[dict[str, list], dict[str, list]]:
    """The word tables as the writes kept them, and as the items say they should be."""
    kept, derived = {}, {}
    for table, (held, wanted) in WORD_TABLE_ROWS.items():
        kept[table] = sorted(tuple(r.values()) for r in store._rows(held))
        derived[table] = sorted(tuple(r.values()) for r in store._rows(wanted))
    return kept, derived


def test_the_word_tables_follow_every_write_and_a_rebuild(store: PostgresStore) -> None:
    store.apply(ops.PutItems([item(i, "p" if i % 2 else "q", words=f"proxy {'cookie ' * i}")
                              for i in range(6)]))
    store.apply(ops.PutItems([item(i, words="bulk proxy") for i in range(4, BULK_ROWS + 10)]))
    store.apply(ops.UpdateItems(["i1"], {"search_text": "zebra zebra crossing"}))
    store.apply(ops.UpdateItems(["i2"], {"project": "r"}))
    store.apply(ops.UpdateItems(["i5"], {"importance": 0.9}))  # words unchanged
    store.apply(ops.BumpItems([{"id": "i5", "n": 1, "at": 9.0}]))
    store.apply(ops.DeleteItems(["i3", "i7"]))
    kept, derived = word_tables(store)
    assert kept == derived and all(kept.values())
    assert ("i1", "zebra") in {r[:2] for r in kept["item_words"]}
    assert ("i1", "cooki") not in {r[:2] for r in kept["item_words"]}
    assert not [r for r in kept["word_counts"] if r[0] == "cooki" and r[1] == "p"]  # none left
    store._exec("DELETE FROM word_counts")  # the tables drift from the log
    store._exec("UPDATE item_counts SET items = 0")
    store.rebuild()
    assert word_tables(store) == (derived, derived)
    assert store.count_visible(ItemFilter(project="p", statuses=None)) == store.count_items(
        ItemFilter(project="p", statuses=None))


def test_keyword_search_ranks_by_bm25_as_the_embedded_store(store: PostgresStore) -> None:
    from graphmem.store.keywords import KeywordIndex

    texts = ["proxy proxy rules", "zebra", "proxy zebra crossing timeout", "cookie jar proxy",
             "timeout timeout timeout on the proxy", "rules of the cookie", "crossing"]
    store.apply(ops.PutItems([item(n, words=t) for n, t in enumerate(texts)]))
    embedded = KeywordIndex()
    for n in range(len(texts)):
        embedded.put(n, f"item {n} {texts[n]}")
    for query in ("proxy zebra", "timeout proxy rules", "cookie crossing zebra"):
        scores = embedded.scores(query, len(texts))
        wanted = sorted((n for n in range(len(texts)) if scores[n] > 0), key=lambda n: -scores[n])
        found = store.keyword_search(query, 10, ItemFilter())
        assert [i for i, _ in found] == [f"i{n}" for n in wanted], query
        assert [s for _, s in found] == pytest.approx([scores[n] for n in wanted], rel=1e-5)
    weights = store.term_weights("proxy zebra")
    assert weights == pytest.approx(embedded.term_weights("proxy zebra"), rel=1e-6)


def test_keyword_search_scores_in_float8(store: PostgresStore) -> None:
    """BM25's arithmetic on each posting a search sums is float8 (numeric cost ~9 times as
    much a row), and the stored impact keys are the same formula's."""
    store.apply(ops.PutItems([item(n, words=f"proxy timeout {'retry ' * n}") for n in range(20)]))
    captured: list[tuple] = []
    real = store._rows
    store._rows = lambda q, p=None: captured.append((q, p)) or real(q, p)  # type: ignore[method-assign]
    try:
        store.keyword_search("proxy retry", 10, ItemFilter(project="p"))
    finally:
        del store._rows
    plan = " ".join(r["QUERY PLAN"] for r in store._rows("EXPLAIN (VERBOSE) " + captured[0][0],
                                                         captured[0][1]))
    assert "(p.tf)::double precision" in plan  # graphmem_impact inlined
    assert "(p.tf)::numeric" not in plan and "(p.length)::numeric" not in plan
    assert store._one("SELECT count(*) FROM item_words "
                      "WHERE impact <> graphmem_impact(tf, length, 20)::real") == 0


def test_keyword_search_reads_a_few_postings_of_a_common_word(store: PostgresStore) -> None:
    """Each word's best postings by impact, not every item holding it: in a project where
    every item holds the word, a search reads about k of them."""
    store.apply(ops.PutItems([item(i, words="common " + "filler " * (i % 50)) for i in range(2000)]))
    store._exec("ANALYZE")  # as autovacuum does: else the planner guesses the tables are tiny
    query = "common"
    found = store.keyword_search(query, 3, ItemFilter(project="p"))
    assert [i for i, _ in found] == ["i0", "i50", "i100"]  # the shortest: BM25's best
    captured: list[tuple] = []
    real = store._rows
    store._rows = lambda q, p=None: captured.append((q, p)) or real(q, p)  # type: ignore[method-assign]
    store.keyword_search(query, 3, ItemFilter(project="p"))
    plan = store._one("EXPLAIN (ANALYZE, FORMAT JSON) " + captured[0][0], captured[0][1])

    def rows_read(node: dict) -> int:
        own = node["Actual Rows"] * node["Actual Loops"] if node.get(
            "Relation Name") == "item_words" or node.get("Index Name", "").startswith(
            "item_words") else 0
        return own + sum(rows_read(child) for child in node.get("Plans", ()))

    assert 3 <= rows_read(plan[0]["Plan"]) <= 30  # 2,000 items hold the word


def rows_read(store: PostgresStore, call, table: str) -> int:
    """Rows the first statement `call` sends reads from `table` and its indexes (those a filter
    then drops included), by EXPLAIN ANALYZE."""
    captured: list[tuple] = []
    real = store._rows
    store._rows = lambda q, p=None: captured.append((q, p)) or real(q, p)  # type: ignore[method-assign]
    try:
        call()
    finally:
        del store._rows
    plan = store._one("EXPLAIN (ANALYZE, FORMAT JSON) " + captured[0][0], captured[0][1])

    def read(node: dict) -> int:
        scanned = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        own = scanned * node["Actual Loops"] if table in (
            node.get("Relation Name"), node.get("Index Name", "").split("_")[0]) else 0
        return own + sum(read(child) for child in node.get("Plans", ()))

    return read(plan[0]["Plan"])


def test_code_entities_are_found_by_name_and_path_suffix_on_indexes(
        store: PostgresStore) -> None:
    """A search resolves the files it is given and reaches the symbols in them by a path
    suffix: that reads the few entities sharing the file name, not all of them."""
    store.apply(ops.PutEntities(
        [{"id": f"file:src/m{n}/f{n}.py", "kind": "file", "name": f"f{n}.py",
          "path": f"src/m{n}/f{n}.py"} for n in range(2000)]
        + [{"id": f"symbol:src/m{n}/f{n}.py::g", "kind": "symbol", "name": "g",
            "qualname": f"f{n}.py::g", "path": f"src/m{n}/f{n}.py"} for n in range(2000)]))
    store._exec("ANALYZE")
    assert [e["id"] for e in store.find_entities(path_suffixes=["m7/f7.py"], kinds=["symbol"])] \
        == ["symbol:src/m7/f7.py::g"]
    assert rows_read(store, lambda: store.find_entities(path_suffixes=["m7/f7.py"]),
                     "entities") <= 4
    assert rows_read(store, lambda: store.find_entities(names=["f7.py"], kinds=["file"]),
                     "entities") <= 4


def test_a_bulk_write_leaves_statistics_the_planner_can_use(store: PostgresStore) -> None:
    """Right after a migration's bulk writes a search must not be planned on an empty table's
    statistics: at 100k items the entity lookup by file name read all 56k symbols (45 ms)."""
    store.apply(ops.PutEntities(
        [{"id": f"symbol:src/m{n}/f{n}.py::g{k}", "kind": "symbol", "name": f"g{k}",
          "qualname": f"f{n}.py::g{k}", "path": f"src/m{n}/f{n}.py"}
         for n in range(1000) for k in range(3)]))
    assert store._one("SELECT reltuples FROM pg_class WHERE relname = 'entities'") >= 3000
    assert rows_read(store, lambda: store.find_entities(path_suffixes=["m7/f7.py"],
                                                        kinds=["symbol"]), "entities") <= 6
    store.apply(ops.PutEntities([{"id": "symbol:one", "kind": "symbol", "name": "one",
                                  "path": "one.py"}]))
    assert store._written == {}  # small writes are autovacuum's to count


def test_items_mentioning_reads_the_linked_items_only(store: PostgresStore) -> None:
    """Items of many links are read by their key, not by reading all the project's items."""
    store.apply(ops.PutItems([item(i) for i in range(6000)]))
    store.apply(ops.PutEntities([{"id": f"concept:c{n}", "kind": "concept", "name": f"c{n}"}
                                 for n in range(60)]))
    store.apply(ops.PutLinks("MENTIONS", [{"source": f"i{i}", "target": f"concept:c{i % 60}",
                                           "weight": 1.0} for i in range(6000)]))
    store._exec("ANALYZE")
    wanted = [f"concept:c{n}" for n in range(12)]
    found = store.items_mentioning(wanted, ItemFilter(project="p"))
    assert len(found) == 1200 and found[0][0] == "i5951"
    assert rows_read(store, lambda: store.items_mentioning(wanted, ItemFilter(project="p")),
                     "items") <= 1200


def test_vector_search_on_the_index_and_exactly_under_a_narrow_filter(
        store: PostgresStore) -> None:
    many = BULK_VECTORS + 200
    store.apply(ops.PutItems([item(i, "big") for i in range(many)]
                             + [item(i, "small") for i in range(many, many + 3)]))
    store.apply(ops.PutVectors(vector_rows(*range(many + 3))))
    assert store._rows("SELECT indexname FROM pg_indexes WHERE tablename = 'item_vectors' "
                       "AND indexdef LIKE '%%hnsw%%'") == [{"indexname": "item_vectors_hnsw"}]
    store._exec("ANALYZE")
    query, params = store._nearest(unit(5), 10, ItemFilter(project="big"))
    plan = "\n".join(r["QUERY PLAN"] for r in store._rows("EXPLAIN " + query, params))
    assert "item_vectors_hnsw" in plan
    assert store.vector_search(unit(5), 1, ItemFilter(project="big")) == [
        ("i5", pytest.approx(1.0, abs=1e-5))]
    asked: list[bool] = []
    nearest = store._nearest
    store._nearest = lambda *a, exact=False: asked.append(exact) or nearest(*a, exact=exact)  # type: ignore[method-assign]
    found = store.vector_search(unit(5), 100, ItemFilter(project="big"))
    del store._nearest
    assert asked == [False] and len(found) == 100 and found[0][0] == "i5"  # past ef_search 40
    small = store.vector_search(unit(7), 3, ItemFilter(project="small"))
    assert sorted(i for i, _ in small) == [f"i{n}" for n in range(many, many + 3)]
    query = np.asarray(unit(7))
    expected = sorted(((float(np.dot(query, unit(n))), f"i{n}") for n in range(many, many + 3)),
                      reverse=True)
    assert [i for _, i in expected] == [i for i, _ in small]
    assert [s for s, _ in expected] == pytest.approx([s for _, s in small], abs=1e-5)


def test_a_failed_bulk_vector_write_keeps_the_index(store: PostgresStore) -> None:
    store.apply(ops.PutItems([item(i) for i in range(BULK_VECTORS)]))
    with pytest.raises(GraphmemError):
        store.apply(ops.PutVectors(vector_rows(*range(BULK_VECTORS)) + vector_rows(0)))
    assert store.counts()["ItemVector"] == 0
    assert store._rows("SELECT indexname FROM pg_indexes WHERE indexname = 'item_vectors_hnsw'")


def test_vector_search_sees_only_the_configured_models_vectors(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, vector_model="m2")
    try:
        store.apply(ops.PutItems([item(1), item(2)]))
        store.apply(ops.PutVectors([*vector_rows(1), {**vector_rows(2)[0], "model": "m2"}]))
        assert [i for i, _ in store.vector_search(unit(1), 5, ItemFilter())] == ["i2"]
        assert store.vectors_not_of("m2") == {"i1": "m"}
    finally:
        store.close()


def test_read_only(postgres_url: str) -> None:
    with pytest.raises(StoreUnavailable, match="no graphmem schema"):
        PostgresStore(postgres_url, read_only=True)
    writer = PostgresStore(postgres_url)
    writer.apply(ops.PutItems([item(1)]), seq=1)
    reader = PostgresStore(postgres_url, read_only=True)
    try:
        assert [r["id"] for r in reader.get_items(["i1"])] == ["i1"] and reader.applied_seq == 1
        with pytest.raises(StoreUnavailable, match="read-only"):
            reader.apply(ops.PutItems([item(2)]))
        with pytest.raises(StoreUnavailable, match="read-only"):
            reader._exec("DELETE FROM items")
    finally:
        reader.close()
        writer.close()


def test_a_dropped_connection_is_opened_again(store: PostgresStore, postgres_server: str) -> None:
    store.apply(ops.PutItems([item(1)]))
    pid = store._rows("SELECT pg_backend_pid() AS pid")[0]["pid"]
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(StoreUnavailable):  # the query the drop cut off
        store.get_items(["i1"])
    assert [r["id"] for r in store.get_items(["i1"])] == ["i1"]


def test_an_unreachable_server_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable, match="unavailable") as caught:
        PostgresStore("postgresql://someone:s3cret@127.0.0.1:1/graphmem?connect_timeout=2")
    assert "s3cret" not in str(caught.value) and "someone@127.0.0.1" in str(caught.value)
