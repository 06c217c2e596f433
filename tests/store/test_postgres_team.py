"""A team on one PostgreSQL server: every item records its author, is private or team, and what a
role may read or write per project is enforced by the database's row-level security (checked with
plain SQL as the role, past graphmem's code), granted by the tables' owner."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import psycopg
import pytest

from graphmem.errors import GraphmemError, InvalidInput
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.postgres import WORD_TABLES, PostgresStore, migrations
from tests.store.test_contract import item, unit, vector_rows


def plain(url: str, query: str) -> list[tuple]:
    """A query as that role, with psycopg alone: what the database lets it see."""
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()


def test_private_and_team_items_and_grants_enforced_by_the_database(team) -> None:
    owner, names, urls = team
    owner.grant(names["alice"], "p", "write")
    owner.grant(names["bob"], "q", "write")  # a member of the server, of another project
    alice_private = PostgresStore(urls["alice"], visibility="private")
    alice = PostgresStore(urls["alice"])
    bob = PostgresStore(urls["bob"])
    try:
        alice_private.apply(ops.PutItems([item(1, words="secret rotation")]))
        alice.apply(ops.PutItems([item(2, words="shared rotation")]))
        alice.apply(ops.PutVectors(vector_rows(1, 2)))
        alice.apply(ops.PutObservations([{"id": "o1", "project": "p", "text": "ran it"}]))
        alice.apply(ops.PutLinks("DERIVED_FROM", [{"source": "i1", "target": "o1"}]))
        rows = {r["id"]: (r["author"], r["visibility"]) for r in owner._rows(
            "SELECT id, author, visibility FROM items")}
        assert rows == {"i1": (names["alice"], "private"), "i2": (names["alice"], "team")}

        # No grant on p: Bob sees nothing of it and cannot write to it.
        assert bob.get_items(["i1", "i2"]) == [] and bob.records() == []
        assert plain(urls["bob"], "SELECT count(*) FROM op_log") == [(0,)]
        assert plain(urls["bob"], "SELECT count(*) FROM items") == [(0,)]
        for table in WORD_TABLES:
            assert plain(urls["bob"], f"SELECT count(*) FROM {table}") == [(0,)], table
        assert bob.keyword_search("rotation", 5, ItemFilter()) == []
        assert bob.count_visible(ItemFilter(project="p", statuses=None)) == 0
        with pytest.raises(GraphmemError, match="not allowed"):
            bob.apply(ops.PutItems([item(3)]))
        bob.apply(ops.PutItems([item(5, "q")]))

        # Read: team items only, in every channel; still no writing.
        owner.revoke(names["bob"], "q")
        owner.grant(names["bob"], "p", "read")
        assert [r["id"] for r in bob.get_items(["i1", "i2"])] == ["i2"]
        assert plain(urls["bob"], "SELECT id FROM items") == [("i2",)]
        assert plain(urls["bob"], "SELECT id FROM item_vectors") == [("i2",)]
        assert plain(urls["bob"], "SELECT count(*) FROM observations") == [(0,)]
        assert plain(urls["bob"], "SELECT applied_by FROM op_log") == [(names["bob"],)]
        assert [i for i, _ in bob.vector_search(unit(1), 5, ItemFilter())] == ["i2"]
        assert [i for i, _ in bob.keyword_search("rotation", 5, ItemFilter())] == ["i2"]
        assert [i for i, _ in bob.keyword_search("rotation", 5, ItemFilter(project="p"))] == ["i2"]
        assert plain(urls["bob"], "SELECT DISTINCT item FROM item_words") == [("i2",)]
        assert plain(urls["bob"], "SELECT count(*) FROM word_counts WHERE word = 'secret'") == [(0,)]
        assert bob.term_weights("secret")["secret"] == bob.term_weights("unheard")["unheard"]
        assert bob.count_visible(ItemFilter(project="p", statuses=None)) == 1
        assert alice.count_visible(ItemFilter(project="p", statuses=None)) == 2
        assert bob.item_observations("i1") == []
        bob.apply(ops.UpdateItems(["i2"], {"title": "bob was here"}))  # changes nothing
        bob.apply(ops.DeleteItems(["i2"]))
        assert alice.get_items(["i2"])[0]["title"] == "item 2"

        # Write: Bob adds to p and changes team items, never Alice's private one.
        owner.grant(names["bob"], "p", "write")
        bob.apply(ops.PutItems([item(3)]))
        bob.apply(ops.UpdateItems(["i1", "i2"], {"title": "bob was here"}))
        titles = {r["id"]: r["title"] for r in owner._rows("SELECT id, title FROM items WHERE project = 'p'")}
        assert titles == {"i1": "item 1", "i2": "bob was here", "i3": "item 3"}
        with pytest.raises(GraphmemError, match="not allowed"):
            bob.apply(ops.PutItems([item(4, "q")]))  # a project Bob has no grant on
        assert [r["author"] for r in owner._rows("SELECT author FROM items WHERE id = 'i3'")] == [
            names["bob"]]

        # The owner's rebuild from the whole op log keeps who wrote what, and who sees it.
        before = owner._rows("SELECT id, author, visibility, title FROM items ORDER BY id")
        owner.rebuild()
        assert owner._rows("SELECT id, author, visibility, title FROM items ORDER BY id") == before
        assert [r["id"] for r in bob.list_items(ItemFilter(), order="created_at")] == ["i3", "i2"]
        assert bob.get_items(["i5"]) == []  # q's item: Bob's grant on q is gone

        owner.revoke(names["bob"], "p")
        assert bob.get_items(["i2", "i3"]) == []
        assert owner.grants() == [{"project": "p", "member": names["alice"], "access": "write"}]
    finally:
        for store in (alice_private, alice, bob):
            store.close()


def test_a_member_forgets_only_what_no_one_else_wrote(team) -> None:
    owner, names, urls = team
    for name in names.values():
        owner.grant(name, "p", "write")
    alice = PostgresStore(urls["alice"])
    bob = PostgresStore(urls["bob"])
    try:
        alice.apply(ops.PutItems([item(1, words="zanzibarquux"), item(2)]))
        bob.apply(ops.UpdateItems(["i1"], {"importance": 0.9}))  # Bob's record names i1
        with pytest.raises(InvalidInput, match="nothing was deleted"):
            alice.scrub({"i1"})
        assert [r["id"] for r in alice.get_items(["i1"])] == ["i1"]
        assert alice.scrub({"i2"}) == 0  # only Alice's record names i2, beside i1
        assert owner.get_items(["i2"]) == [] and owner._one("SELECT graphmem_traces(%s)", (["i2"],)) == 0
        owner.scrub({"i1"})  # the owner reaches every record
        assert owner._one("SELECT count(*) FROM op_log WHERE strpos(record::text, 'zanzibarquux') > 0") == 0
        assert owner._one("SELECT graphmem_traces(%s)", (["i1", "i2"],)) == 0
    finally:
        alice.close()
        bob.close()


def test_a_reader_gets_no_table_to_write(team) -> None:
    owner, names, urls = team
    with pytest.raises(InvalidInput, match="read or write"):
        owner.grant(names["bob"], "p", "admin")
    owner.grant(names["bob"], "p", "read")
    bob = PostgresStore(urls["bob"])
    try:
        assert not bob.may_write
        with pytest.raises(GraphmemError, match="not allowed"):
            bob.apply(ops.PutItems([item(1)]))
    finally:
        bob.close()


OP_LOG_BY_FUNCTION = 5  # the migration that takes INSERT on op_log from members


def forged(op: str, **fields) -> str:
    """An op log record as JSON text, written by hand."""
    return json.dumps({"op": op, "ts": 1.0, "by": "psql", **fields})


def refused(url: str, query: str, params: tuple = ()) -> str:
    """The database's refusal of a statement run as that role (the test fails if it runs)."""
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege) as caught:
        conn.execute(query, params)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_member_writes_the_op_log_only_through_graphmem_log(team) -> None:
    owner, names, urls = team
    owner.grant(names["alice"], "p", "write")
    owner.grant(names["bob"], "q", "write")
    alice = PostgresStore(urls["alice"])
    bob = PostgresStore(urls["bob"])
    try:
        # graphmem's own writes as a member: add, change, link, vectors, forget.
        alice.apply(ops.PutItems([item(1, words="rotation"), item(2), item(9)]))
        alice.apply(ops.PutVectors(vector_rows(1, 2)))
        alice.apply(ops.UpdateItems(["i1"], {"importance": 0.9}))
        alice.apply(ops.PutObservations([{"id": "o1", "project": "p", "text": "ran it"}]))
        alice.apply(ops.PutLinks("DERIVED_FROM", [{"source": "i1", "target": "o1"}]))
        alice.apply(ops.PutEntities([{"id": "file:a.py", "kind": "file", "path": "a.py"}]))
        alice.apply(ops.PutLinks("MENTIONS", [{"source": "i2", "target": "file:a.py"}]))
        assert alice.scrub({"i9"}) == 0  # its record also added i1 and i2: narrowed, not dropped
        bob.apply(ops.PutItems([item(5, "q")]))
        assert [(r["applied_by"], r["op"]) for r in owner._rows(
            "SELECT applied_by, op FROM op_log ORDER BY seq")] == [
            *[(names["alice"], op) for op in ("put_items", "put_vectors", "update_items",
                                              "put_observations", "put_links", "put_entities",
                                              "put_links")], (names["bob"], "put_items")]

        # Past graphmem, with psql: no row goes into op_log but through graphmem_log, which
        # refuses a change Alice may not make to the tables herself.
        evil = forged("put_items", rows=[{"id": "evil", "project": "q", "title": "planted"}])
        assert "permission denied for table op_log" in refused(
            urls["alice"], "INSERT INTO op_log (op, record) VALUES ('put_items', %s)", (evil,))
        assert "permission denied" in refused(urls["alice"], "UPDATE op_log SET record = %s", (evil,))
        assert "permission denied" in refused(urls["alice"], "DELETE FROM op_log")
        assert "may not log item evil" in refused(
            urls["alice"], "SELECT graphmem_log(%s::jsonb)", (evil,))
        for op, fields in (("update_items", {"ids": ["i5"], "fields": {"title": "planted"}}),
                           ("delete_items", {"ids": ["i5"]}),
                           ("update_items", {"ids": ["i1"], "fields": {"project": "q"}}),
                           ("put_vectors", {"rows": [{"id": "i5", "vec": "", "model": "m"}]}),
                           ("put_links", {"kind": "SUPERSEDES",
                                          "rows": [{"source": "i5", "target": "i1"}]}),
                           ("put_observations", {"rows": [{"id": "o9", "project": "q"}]}),
                           ("drop_tables", {})):
            assert "graphmem_log" in refused(urls["alice"], "SELECT graphmem_log(%s::jsonb)",
                                             (forged(op, **fields),))
        assert "may not write as" in refused(
            urls["alice"], "SELECT graphmem_log(%s::jsonb, who => %s)",
            (forged("put_items", rows=[{"id": "i7", "project": "q"}]), names["bob"]))
        bob_seq = owner._one("SELECT max(seq) FROM op_log WHERE applied_by = %s", (names["bob"],))
        assert "not one" in refused(urls["alice"], "SELECT graphmem_relog(%s, NULL)", (bob_seq,))
        first = owner._one("SELECT min(seq) FROM op_log")
        assert "holds what the old one did not" in refused(
            urls["alice"], "SELECT graphmem_relog(%s, %s::jsonb)", (first, evil))

        # What graphmem_log lets through is what Alice could do to the tables herself, and
        # the owner's rebuild from the op log gives the tables they had.
        with psycopg.connect(urls["alice"]) as conn:
            conn.execute("SELECT graphmem_log(%s::jsonb)",
                         (forged("update_items", ids=["i2"], fields={"title": "by hand"}),))
            conn.execute("UPDATE items SET title = 'by hand' WHERE id = 'i2'")
        before = owner.export_rows()
        owner.rebuild()
        assert owner.export_rows() == before
        assert owner.get_items(["evil"]) == [] and owner.get_items(["i5"])[0]["title"] == "item 5"
        assert owner._one("SELECT count(*) FROM op_log WHERE applied_by <> ALL(%s)",
                          (list(names.values()),)) == 0
    finally:
        alice.close()
        bob.close()


@contextlib.contextmanager
def granted_before(postgres_url: str, migration: int, access: str, *setup: str) -> Iterator[str]:
    """A database just before `migration` in which a role was granted `access` on project p
    (as the migrations before granted it), and the owner ran `setup`; yields that role's URL."""
    role = f"early{migration}_" + postgres_url.rsplit("/", 1)[1][-12:]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
                      "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
        for number, name, ddl in [m for m in migrations() if m[0] < migration]:
            admin.execute(ddl)  # type: ignore[arg-type]
            admin.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                          (number, name))
        admin.execute("SELECT graphmem_grant(%s, 'p', %s)", (role, access))
        for statement in setup:
            admin.execute(statement)  # type: ignore[arg-type]
    try:
        yield postgres_url.replace("postgres@", f"{role}@", 1)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{role}"')
            admin.execute(f'DROP ROLE "{role}"')


@pytest.fixture
def granted_before_migration_5(postgres_url: str):
    """A role granted write on project p as 0003 granted it (INSERT on op_log too)."""
    with granted_before(postgres_url, OP_LOG_BY_FUNCTION, "write") as url:
        yield url


def test_migration_5_takes_the_op_log_from_members_granted_before(
        granted_before_migration_5: str, postgres_url: str) -> None:
    carol = granted_before_migration_5
    planted = forged("put_items", rows=[{"id": "evil", "project": "q"}])
    with psycopg.connect(carol) as conn:  # the gap migration 5 closes
        conn.execute("INSERT INTO op_log (op, record) VALUES ('put_items', %s)", (planted,))
        conn.rollback()
    owner = PostgresStore(postgres_url)
    member = PostgresStore(carol)
    try:
        assert owner.schema_version == migrations()[-1][0] >= OP_LOG_BY_FUNCTION
        assert "permission denied" in refused(
            carol, "INSERT INTO op_log (op, record) VALUES ('put_items', %s)", (planted,))
        member.apply(ops.PutItems([item(1)]))
        assert [r["id"] for r in owner.get_items(["i1"])] == ["i1"]
        assert member.may_write and member.records()[0]["op"] == "put_items"
    finally:
        member.close()
        owner.close()


WORD_POSTINGS = 6  # the migration that adds the word tables


def test_migration_6_indexes_the_items_already_there_for_members_granted_before(
        postgres_url: str) -> None:
    with granted_before(postgres_url, WORD_POSTINGS, "read",
                        "INSERT INTO items (id, project, search_text) VALUES "
                        "('i1', 'p', 'proxy rotation'), ('i2', 'p', 'cookie jar'), "
                        "('i3', 'q', 'proxy elsewhere')") as early:
        owner = PostgresStore(postgres_url)
        member = PostgresStore(early)
        try:
            assert owner.schema_version >= WORD_POSTINGS
            assert [i for i, _ in owner.keyword_search("proxy", 5, ItemFilter(project="p"))] == ["i1"]
            assert owner._one("SELECT count(DISTINCT item) FROM item_words") == 3
            assert [i for i, _ in member.keyword_search("proxy", 5, ItemFilter())] == ["i1"]
            assert member.count_visible(ItemFilter(project="p", statuses=None)) == 2
        finally:
            member.close()
            owner.close()
