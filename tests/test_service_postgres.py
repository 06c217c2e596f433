"""A project's memory on PostgreSQL, chosen by configuration, through the service as the CLI and
MCP use it: the same writes and searches as on the embedded store, and nothing in a graph file."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import Config, InvalidInput, Memory
from graphmem.paths import DB_NAME
from graphmem.store.postgres import PostgresStore


def test_memory_writes_and_searches_on_the_server(postgres_url: str, repo: Path, home: Path,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(Config(home=home, cwd=repo, database_url=postgres_url)) as memory:
        pitfall = memory.add("The proxy times out after 30 s", "Retry it with exponential backoff.",
                             kind="pitfall", files=["src/net.py"])
        memory.add("Release notes go in CHANGELOG.md", kind="decision")
        found = memory.search("why does the proxy time out?")
        assert found.hits[0].item.id == pitfall.id
        assert {"vector", "keyword"} <= set(found.hits[0].channels)
        by_file = memory.search("backoff", files=["src/net.py"])
        assert by_file.hits[0].item.id == pitfall.id and "entity" in by_file.hits[0].channels
        with pytest.raises(InvalidInput, match="PostgreSQL"):  # refused before anything changed
            memory.forget(pitfall.id)
        assert memory.get(pitfall.id).item.title == "The proxy times out after 30 s"
        data_dir = memory.dir
    assert not (data_dir / DB_NAME).exists()
    server = PostgresStore(postgres_url)
    try:
        assert (server.counts()["Item"], server.counts()["ItemVector"]) == (2, 2)
        assert server.applied_seq == memory.journal.last_seq() > 0
    finally:
        server.close()
    # A teammate's machine (its own home and journal), configured by the environment variable.
    monkeypatch.setenv("GRAPHMEM_DATABASE_URL", postgres_url)
    with Memory(Config.from_env().model_copy(update={"home": tmp_path / "other", "cwd": repo})) \
            as teammate:
        assert teammate.config.database_url == postgres_url
        assert teammate.search("proxy timeout").hits[0].item.id == pitfall.id
