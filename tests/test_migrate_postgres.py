"""`graphmem migrate`: an embedded store moves to a PostgreSQL server and back, item for item,
with anchors, links, observations, vectors and its history (journal, then op log, then journal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import Config, Memory
from graphmem.cli import main
from graphmem.paths import JOURNAL_NAME
from graphmem.store import ops
from graphmem.store.journal import Journal
from graphmem.store.postgres import PostgresStore
from graphmem.store.schema import LINK_TABLES


def _fill(memory: Memory) -> None:
    """Something in every table, written as graphmem writes: items with files, a supersede, an
    update, an observation an item derives from, an anchor, code links, a forgotten item."""
    first = memory.add("Use psycopg 3 for OrderService", kind="decision", files=["src/api.py"])
    second = memory.add("Switch OrderService to asyncpg with a pool", kind="decision",
                        files=["src/api.py"])
    gone = memory.add("Temporary note about zanzibarquux", kind="note")
    memory.update(first.id, status="stale", stale_reason="api.py changed")
    memory.search("psycopg pool")
    memory.flush_use()
    memory.writer.write(
        ops.PutEntities([{"id": "file:src/api.py", "kind": "file", "name": "api.py",
                          "path": "src/api.py", "hash": "h1"},
                         {"id": "symbol:src/api.py::connect", "kind": "symbol", "name": "connect",
                          "path": "src/api.py", "qualname": "connect", "hash": "h2"},
                         {"id": "file:src/db.py", "kind": "file", "name": "db.py",
                          "path": "src/db.py", "hash": "h3"}]),
        ops.PutObservations([{"id": "obs1", "project": memory.project, "session_id": "s1",
                              "tool": "Bash", "command": "pytest", "text": "1 failed",
                              "tool_input": {"command": "pytest"}, "ts": 5.0}]),
        ops.PutLinks("DERIVED_FROM", [{"source": first.id, "target": "obs1"}]),
        ops.PutLinks("ANCHORED_TO", [{"source": first.id, "target": "file:src/api.py",
                                      "hash": "h1", "commit": "abc123", "at": 6.0}]),
        ops.PutLinks("DEFINED_IN", [{"source": "symbol:src/api.py::connect",
                                     "target": "file:src/api.py"}]),
        ops.PutLinks("CONTAINS", [{"source": "file:src/api.py",
                                   "target": "symbol:src/api.py::connect"}]),
        ops.PutLinks("IMPORTS", [{"source": "file:src/api.py", "target": "file:src/db.py"}]),
        ops.PutLinks("TOUCHES", [{"source": "file:src/db.py", "target": "file:src/api.py"}]),
        ops.PutLinks("SUPERSEDES", [{"source": second.id, "target": first.id, "at": 7.0,
                                     "surface": "switch"}]))
    memory.forget(gone.id)


def _snapshot(store) -> tuple[dict, dict]:
    rows = store.export_rows()
    return rows, store.vectors([r["id"] for r in rows["Item"]])


def test_embedded_to_server_and_back(postgres_url: str, repo: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GRAPHMEM_DATABASE_URL", raising=False)
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "laptop"))
    with Memory(Config(cwd=repo)) as memory:
        _fill(memory)
        rows, vectors = _snapshot(memory.store)
        journal = list(memory.journal.records())
        history = memory.history(rows["Item"][0]["id"])
    assert all(rows[t] for t in ("Item", "Entity", "Observation", "ItemVector", *LINK_TABLES))
    assert "zanzibarquux" not in str(journal) and len(journal) > 10

    assert main(["migrate", "--to", postgres_url, "--cwd", str(repo)]) == 0
    assert "moved" in capsys.readouterr().out
    server = PostgresStore(postgres_url)
    try:
        assert _snapshot(server) == (rows, vectors)
        assert server.records() == journal  # seq, time, actor, request and op, each
    finally:
        server.close()
    assert main(["migrate", "--to", "file", "--cwd", str(repo)]) == 2  # not on a server yet
    assert "not on a server" in capsys.readouterr().err

    monkeypatch.setenv("GRAPHMEM_DATABASE_URL", postgres_url)
    assert main(["migrate", "--to", "file", "--cwd", str(repo)]) == 2
    assert "move them aside" in capsys.readouterr().err  # the laptop's files are there
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "desktop"))
    with Memory(Config.from_env(cwd=repo)) as on_server:  # the server's history, from its op log
        assert on_server.history(rows["Item"][0]["id"]) == history
    assert main(["migrate", "--to", "file", "--cwd", str(repo)]) == 0
    monkeypatch.delenv("GRAPHMEM_DATABASE_URL")
    with Memory(Config(cwd=repo)) as back:
        assert _snapshot(back.store) == (rows, vectors)
        assert list(Journal(back.dir / JOURNAL_NAME).records()) == journal
        assert back.history(rows["Item"][0]["id"]) == history


def test_moving_into_a_server_in_use_appends(postgres_url: str, repo: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A second laptop's store joins a server that holds another's: appended after it."""
    monkeypatch.delenv("GRAPHMEM_DATABASE_URL", raising=False)
    for n, name in enumerate(("one", "two")):
        monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / name))
        with Memory(Config(cwd=repo, embed=False)) as memory:
            memory.add(f"Note {n} from laptop {name}", kind="note")
        assert main(["migrate", "--to", postgres_url, "--cwd", str(repo)]) == 0
    server = PostgresStore(postgres_url)
    try:
        assert sorted(r["title"] for r in server.export_rows()["Item"]) == [
            "Note 0 from laptop one", "Note 1 from laptop two"]
        seqs = [r["seq"] for r in server.records()]
        assert seqs == list(range(1, len(seqs) + 1))
    finally:
        server.close()
