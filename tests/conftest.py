"""Shared fixtures: real Kuzu stores in temp dirs, the real MiniLM model, real git repos."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ["GRAPHMEM_NO_WORKER"] = "1"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit on branch main."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("demo\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial commit")
    return root


def minilm_variant(directory: Path, **pooling: bool) -> str:
    """The packaged MiniLM with another pooling (a real sentence-transformers model made offline,
    unlike the numpy one): CLS pooling gives other 384-d vectors, CLS and mean 768-d ones."""
    from graphmem.embed import default_model_path

    source = Path(default_model_path())
    directory.mkdir()
    for entry in source.iterdir():
        if entry.name != "1_Pooling":
            (directory / entry.name).symlink_to(entry)
    config = json.loads((source / "1_Pooling" / "config.json").read_text())
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({**config, **pooling}))
    return str(directory)


@pytest.fixture(scope="session")
def cls_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return minilm_variant(tmp_path_factory.mktemp("models") / "minilm-cls",
                          pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("GRAPHMEM_HOME", str(path))
    return path


@pytest.fixture
def memory(home: Path, repo: Path):
    from graphmem import Config, Memory

    with Memory(Config(home=home, cwd=repo)) as mem:
        yield mem


def stop_owner(home: Path, repo: Path) -> None:
    """Stop the project's owner process (by its pid) and wait until it is gone."""
    from graphmem.config import Config
    from graphmem.errors import OwnerUnavailable
    from graphmem.owner.client import RemoteMemory, owner_running
    from graphmem.service import Memory

    config = Config(home=home, cwd=repo)
    data_dir = Memory.data_dir_for(config)
    try:
        with RemoteMemory(config, data_dir, str(repo), "main", start=False) as remote:
            pid = remote.ping()["pid"]
    except OwnerUnavailable:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while owner_running(data_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not owner_running(data_dir), "the owner did not stop"


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL with pgvector (the pgserver wheel) on 127.0.0.1 for the session; the
    tests that need it skip, saying why, only when it cannot start on this platform."""
    from tests.postgres_server import Cluster

    try:
        cluster = Cluster()
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server: str, request: pytest.FixtureRequest):
    """A fresh, empty database on the session's server (dropped after the test)."""
    import re

    import psycopg

    from tests.postgres_server import database_url

    name = "t_" + re.sub(r"\W", "_", request.node.name.lower())[:40] + f"_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield database_url(postgres_server, name)
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def team(postgres_url: str):
    """The owner's store (the superuser who migrated) and the URLs of three plain roles."""
    import psycopg

    from graphmem.store.postgres import PostgresStore

    suffix = postgres_url.rsplit("/", 1)[1][-12:]
    names = {who: f"{who}_{suffix}" for who in ("alice", "bob", "carol")}
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f'CREATE ROLE "{name}" LOGIN')
    owner = PostgresStore(postgres_url)
    host = postgres_url.split("@", 1)[1]
    urls = {k: f"postgresql://{v}@{host}" for k, v in names.items()}
    yield owner, names, urls
    owner.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(f'DROP OWNED BY "{name}"')
            admin.execute(f'DROP ROLE "{name}"')
