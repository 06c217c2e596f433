"""A sweep while an agent session is live: through the owner, between other clients' writes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from graphmem import Config
from graphmem.owner.client import open_memory
from tests.conftest import stop_owner


def test_sweep_during_a_live_session_loses_nothing(home: Path, repo: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_EMBED", "false")
    monkeypatch.setenv("GRAPHMEM_OWNER_IDLE", "30")
    config = Config.from_env(home=home, cwd=repo)
    errors: list[BaseException] = []
    added: list[str] = []

    def agent() -> None:
        try:
            with open_memory(config, owner=True) as session:
                for n in range(15):
                    added.append(session.add(f"Live session fact {n}: the kv{n} cache warms lazily",
                                             kind="fact").id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        with open_memory(config, owner=True) as sweeper:
            old = sweeper.add("Task: close the stale ticket about the print spooler", kind="task",
                              created_at=time.time() - 400 * 86_400)
            writer = threading.Thread(target=agent)
            writer.start()
            plans = [sweeper.sweep() for _ in range(3)]
            writer.join(timeout=120)
            assert not errors, errors
            assert old.id in plans[0]["archive_expired"]
            live = {i.id for i in sweeper.list(limit=100)}
            assert set(added) <= live and len(added) == 15
            assert sweeper.get_item(old.id).status.value == "archived"
    finally:
        stop_owner(home, repo)
