"""The owner under faults: killed in the middle of writes, clients that hang up mid-call.

Afterwards every write a client saw succeed is there exactly once, the graph agrees with the
journal, and a rebuild from the journal equals the live store.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from graphmem import Config
from graphmem.errors import OwnerUnavailable
from graphmem.owner.client import open_memory
from graphmem.owner.rendezvous import socket_address
from graphmem.service import Memory
from tests.conftest import stop_owner


@pytest.fixture
def config(home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("GRAPHMEM_EMBED", "false")
    monkeypatch.setenv("GRAPHMEM_OWNER_IDLE", "60")
    return Config.from_env(home=home, cwd=repo)


def assert_consistent(config: Config, expected: set[str]) -> None:
    """No owner running: the journal and graph agree, and a rebuild changes nothing."""
    with Memory(config) as memory:
        assert memory.journal.last_seq() == memory.store.applied_seq
        live = memory.export_items()
        titles = [r["title"] for r in live]
        assert len(titles) == len(set(titles)), "an item landed twice"
        assert expected <= {r["id"] for r in live}
        counts = memory.store.counts()
        memory.rebuild()
        assert memory.export_items() == live
        assert memory.store.counts() == counts


def test_an_owner_killed_mid_write_loses_no_acknowledged_write(config: Config, home: Path,
                                                                repo: Path) -> None:
    acknowledged: set[str] = set()
    lost_in_flight: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set() and n < 200:
            with open_memory(config, owner=True) as session:
                try:
                    while not stop.is_set() and n < 200:
                        title = f"Fact {n}: worker pool {n} drains its queue before exit"
                        n += 1
                        acknowledged.add(session.add(title, kind="fact").id)
                except OwnerUnavailable as exc:  # the kill: this one write's fate is unknown
                    lost_in_flight.append(str(exc))

    try:
        with open_memory(config, owner=True) as first:
            pid = first.ping()["pid"]
        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        thread.join(timeout=120)
        assert not thread.is_alive()
        assert len(acknowledged) >= 60  # the next call started a new owner and went on
        with open_memory(config, owner=True) as after:
            assert after.ping()["pid"] != pid
            present = {i.id for i in after.list(limit=1000)}
        assert acknowledged <= present
    finally:
        stop_owner(home, repo)
    assert_consistent(config, acknowledged)


def _send_and_hang_up(address: str, payload: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(address)
        sock.sendall(payload)


def test_clients_hanging_up_mid_call_leave_the_owner_up_and_writes_whole(
        config: Config, home: Path, repo: Path) -> None:
    try:
        with open_memory(config, owner=True) as session:
            kept = session.add("Decision: retries back off exponentially in src/http.py",
                               kind="decision")
            pid = session.ping()["pid"]
            address = socket_address(session.dir)
            request = {"method": "add", "args": ["Pitfall: the CI cache breaks on pip upgrades"],
                       "kwargs": {"kind": "pitfall"},
                       "context": {"project": session.project, "branch": session.branch,
                                   "actor": "test"}}
            _send_and_hang_up(address, (json.dumps(request) + "\n").encode())  # no reading
            _send_and_hang_up(address, b'{"method": "search", "args": ["half a')  # torn
            search = {**request, "method": "search", "args": ["CI cache"], "kwargs": {}}
            _send_and_hang_up(address, (json.dumps(search) + "\n").encode())
            deadline = time.monotonic() + 30
            titles: list[str] = []
            while time.monotonic() < deadline:
                titles = [i.title for i in session.list(limit=100)]
                if any(t.startswith("Pitfall: the CI cache") for t in titles):
                    break
                time.sleep(0.1)
            assert session.ping()["pid"] == pid  # the same owner answers
            assert sum(t.startswith("Pitfall: the CI cache") for t in titles) == 1
            assert session.search("CI cache pip").hits
    finally:
        stop_owner(home, repo)
    assert_consistent(config, {kept.id})
