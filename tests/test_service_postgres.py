"""A project's memory on PostgreSQL, chosen by configuration, through the service as the CLI and
MCP use it: the same writes and searches as on the embedded store, nothing in a graph file or a
local journal (the server's op log is the journal, shared by every machine), and rebuild and
forget inside the database."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from graphmem import Config, GraphmemError, Memory, NotFound
from graphmem.paths import DB_NAME, JOURNAL_NAME
from graphmem.store.journal import Journal
from graphmem.store.postgres import PostgresStore
from graphmem.store.serverlog import ServerWriter
from graphmem.store.writer import Writer
from tests.store.test_postgres import tables_holding


def test_memory_writes_and_searches_on_the_server(postgres_url: str, repo: Path, home: Path,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(Config(home=home, cwd=repo, database_url=postgres_url)) as memory:
        assert isinstance(memory.writer.writer, ServerWriter)
        pitfall = memory.add("The proxy times out after 30 s", "Retry it with exponential backoff.",
                             kind="pitfall", files=["src/net.py"])
        memory.add("Release notes go in CHANGELOG.md", kind="decision")
        found = memory.search("why does the proxy time out?")
        assert found.hits[0].item.id == pitfall.id
        assert {"vector", "keyword"} <= set(found.hits[0].channels)
        by_file = memory.search("backoff", files=["src/net.py"])
        assert by_file.hits[0].item.id == pitfall.id and "entity" in by_file.hits[0].channels
        data_dir = memory.dir
    assert not (data_dir / DB_NAME).exists() and not (data_dir / JOURNAL_NAME).exists()
    server = PostgresStore(postgres_url)
    try:
        assert (server.counts()["Item"], server.counts()["ItemVector"]) == (2, 2)
        assert server.applied_seq == len(server.records()) > 0
    finally:
        server.close()
    # A teammate's machine (its own home), configured by the environment variable.
    monkeypatch.setenv("GRAPHMEM_DATABASE_URL", postgres_url)
    with Memory(Config.from_env().model_copy(update={"home": tmp_path / "other", "cwd": repo})) \
            as teammate:
        assert teammate.config.database_url == postgres_url
        assert teammate.search("proxy timeout").hits[0].item.id == pitfall.id


def test_two_machines_share_one_op_log(postgres_url: str, repo: Path, tmp_path: Path) -> None:
    """Two homes (two machines) write at once: one sequence of ops, each once, in the order the
    tables changed, so a rebuild from it gives the tables they left."""
    memories = [Memory(Config(home=tmp_path / name, cwd=repo, database_url=postgres_url,
                              embed=False)) for name in ("a", "b")]
    shared = memories[0].add("Everyone edits this one shared fact", kind="fact")
    errors: list[BaseException] = []

    def work(memory: Memory, name: str) -> None:
        try:
            for n in range(15):
                item = memory.add(f"{name} note {n} about the shared cache", kind="note")
                memory.update(item.id, importance=0.1 + n / 100)
                memory.update(shared.id, body=f"last edited by {name}, edit {n}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(m, n)) for m, n in zip(memories, "ab")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    try:
        a, b = memories
        assert not a.writer.behind and not b.writer.behind
        records = a.store.records()
        assert [r["seq"] for r in records] == sorted({r["seq"] for r in records})
        assert len(a.list(kind="note", limit=100)) == 30
        before = a.store.export_rows()
        done = b.rebuild()
        assert done["ops"] == len(records) and a.store.export_rows() == before
        history = b.history(shared.id)  # each machine's writes of it, from the op log
        edits = [h["fields"]["body"] for h in history if "body" in h.get("fields", {})]
        assert history[0]["op"] == "put_items" and len(edits) == 30
        assert {e.split(",")[0] for e in edits} == {"last edited by a", "last edited by b"}
        last = edits[-1]
        assert a.get_item(shared.id).body == last
    finally:
        for memory in memories:
            memory.close()


def test_forget_on_the_server_leaves_nothing_in_any_table(postgres_url: str, repo: Path,
                                                          home: Path) -> None:
    with Memory(Config(home=home, cwd=repo, database_url=postgres_url)) as memory:
        keep = memory.add("Run make test before pushing", kind="convention", files=["Makefile"])
        gone = memory.add("The staging password rotation happens on zanzibarquux day",
                          "Ask ops for the quokkavault token.", kind="note", files=["ops/rotate.sh"])
        memory.search("zanzibarquux")
        memory.flush_use()
        assert set(tables_holding(memory.store, "zanzibarquux")) >= {"items", "op_log"}
        done = memory.forget(gone.id)
        assert done["items"] == 1 and done["journal_records_rewritten"] > 0
        with pytest.raises(NotFound):
            memory.get_item(gone.id)
        for needle in ("zanzibarquux", "quokkavault", gone.id, "ops/rotate.sh"):
            assert tables_holding(memory.store, needle) == [], needle
        assert all(b"zanzibarquux" not in p.read_bytes() for p in home.rglob("*") if p.is_file())
        left = memory.store.export_rows()
        memory.rebuild()
        assert memory.store.export_rows() == left
        assert memory.get_item(keep.id).title == "Run make test before pushing"


def test_a_writer_for_a_server_url_is_a_server_writer(postgres_url: str, tmp_path: Path) -> None:
    journal = Journal(tmp_path / JOURNAL_NAME)
    assert type(Writer(tmp_path, journal)) is Writer
    writer = Writer(tmp_path, journal, database_url=postgres_url)
    assert isinstance(writer, ServerWriter)
    writer.open()
    try:
        from graphmem.store import ops

        writer.signed("api", "req-1").write(ops.PutItems([{"id": "i1", "project": "p", "title": "t"}]))
        assert writer.requested("req-1") == {"stored": True, "ids": ["i1"]}
        assert writer.requested("req-2") == {"stored": False, "ids": []}
        assert not journal.path.exists()
    finally:
        writer.close()


def test_a_team_through_the_service_and_the_grant_command(team, repo: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Alice writes a private and a team item through Memory; `graphmem grant` (as the owner)
    lets Bob read the project: his searches find the team item only, and cost no write."""
    from graphmem.cli import main

    owner, names, urls = team
    project = "shop"
    assert main(["grant", names["alice"], "write", "--project", project,
                 "--url", owner.url]) == 0

    def config(who: str, **extra: object) -> Config:
        return Config(home=tmp_path / who, cwd=repo, project=project, database_url=urls[who],
                      **extra)

    with Memory(config("alice", visibility="private")) as alice:
        secret = alice.add("The staging password rotates on zanzibarquux day", kind="note")
    with Memory(config("alice")) as alice:
        shared = alice.add("Staging deploys need the VPN", kind="convention")
    capsys.readouterr()
    assert main(["grant", names["bob"], "read", "--project", project, "--url", owner.url,
                 "--json"]) == 0
    assert {(g["member"], g["access"]) for g in json.loads(capsys.readouterr().out)} == {
        (names["alice"], "write"), (names["bob"], "read")}
    with Memory(config("bob")) as bob:
        for _ in range(3):
            assert [h.item.id for h in bob.search("staging rotation VPN").hits] == [shared.id]
        with pytest.raises(NotFound):
            bob.get_item(secret.id)
        with pytest.raises(GraphmemError, match="not allowed"):
            bob.add("Bob's note", kind="note")
    assert owner._one("SELECT count(*) FROM op_log WHERE applied_by = %s", (names["bob"],)) == 0
    assert main(["grant", names["bob"], "none", "--project", project, "--url", owner.url]) == 0
    with Memory(config("bob")) as bob:
        assert bob.search("staging VPN").hits == []


def test_a_runners_old_command_name_matches_on_the_server_too(postgres_url: str, repo: Path, home: Path) -> None:
    # the legacy entity lookup (`mise run` for `mise run lint`) goes through the server's get_entities
    with Memory(Config(home=home, cwd=repo, database_url=postgres_url)) as memory:
        old = memory.add("Before a release, always `mise run` the whole task list, then tag", kind="convention")
        hit = next(h for h in memory.search("`mise run lint` fails again with ireturn", k=5).hits if h.item.id == old.id)
        assert "entity" in hit.channels
