"""A team on one PostgreSQL server: every item records its author, is private or team, and what a
role may read or write per project is enforced by the database's row-level security (checked with
plain SQL as the role, past graphmem's code), granted by the tables' owner."""

from __future__ import annotations

import psycopg
import pytest

from graphmem.errors import GraphmemError, InvalidInput
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.postgres import PostgresStore
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
        with pytest.raises(GraphmemError, match="row-level security"):
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
        with pytest.raises(GraphmemError, match="row-level security"):
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
