"""A write whose owner dies before answering is reported by what the journal holds: stored
(exit 0, do not retry) or not stored (exit 6, safe to retry). Real owner processes, real kills.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import Config
from graphmem.owner.client import open_memory
from graphmem.service import Memory
from graphmem.store.base import ItemFilter
from tests.conftest import stop_owner


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    settings = {"GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBED": "false", "GRAPHMEM_OWNER": "always",
                "GRAPHMEM_OWNER_IDLE": "60", "GRAPHMEM_NO_WORKER": "1"}
    # The owner that owner_pid() starts from this process runs as the CLI's would: without
    # these it embedded the 800 imported titles (~10 s) before journaling them.
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **settings}


def owner_pid(home: Path, repo: Path) -> int:
    with open_memory(Config(home=home, cwd=repo), owner=True) as memory:
        return int(memory.ping()["pid"])


def titles(home: Path, repo: Path) -> list[str]:
    """Every item of the project, whatever its status: export_items' own filter, without the
    links it reads for each item (four queries an item: ~8 s for the 800 imported below)."""
    with Memory(Config(home=home, cwd=repo, embed=False), read_only=True) as memory:
        every = ItemFilter(project=memory.project, statuses=None)
        return sorted(r["title"] for r in memory.store.list_items(every, limit=10**9))


def journaled(journal: Path, before: int) -> bool:
    """A whole record was added (a record caught half-written would be cut off, unstored)."""
    try:
        with journal.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size <= before:
                return False
            handle.seek(size - 1)
            return handle.read(1) == b"\n"
    except FileNotFoundError:
        return False


def connected(pid: int, timeout: float = 60.0) -> bool:
    """The process holds a connected unix socket (its call to the owner): waited for, not
    assumed after a fixed sleep, which a loaded machine outlasts before the CLI has imported."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return False  # the process is gone
        inodes = set()
        for fd in fds:
            with contextlib.suppress(OSError):  # closed meanwhile: the CLI opens and closes files as it imports
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        with open("/proc/net/unix", encoding="ascii") as table:
            if any(row.split()[6] in inodes and row.split()[5] == "03" for row in list(table)[1:]):
                return True
        time.sleep(0.05)
    return False


def test_a_write_the_dead_owner_never_read_is_reported_not_stored(home: Path, repo: Path,
                                                                   env: dict[str, str]) -> None:
    pid = owner_pid(home, repo)
    os.kill(pid, signal.SIGSTOP)  # it accepts the connection (the kernel does) but reads nothing
    try:
        adding = subprocess.Popen([sys.executable, "-m", "graphmem", "add",
                                   "Never stored: the owner was frozen"], cwd=repo, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert connected(adding.pid), "the add never connected to the frozen owner"
            time.sleep(1)  # sent; waiting for an answer that will not come
            os.kill(pid, signal.SIGKILL)
            out, err = adding.communicate(timeout=120)
        finally:
            if adding.poll() is None:  # failed above: no process left behind for the next test
                adding.kill()
                adding.communicate()
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert adding.returncode == 6, (adding.returncode, out, err)
    assert "not stored" in err and "safe to retry" in err and "Traceback" not in err
    stop_owner(home, repo)
    assert titles(home, repo) == []


def test_a_write_the_journal_holds_is_reported_stored(home: Path, repo: Path, tmp_path: Path,
                                                      env: dict[str, str]) -> None:
    pid = owner_pid(home, repo)
    journal = Memory.data_dir_for(Config(home=home, cwd=repo)) / "journal.jsonl"

    def size() -> int:
        return journal.stat().st_size if journal.exists() else 0

    before = size()
    export = tmp_path / "many.jsonl"
    export.write_text("".join(json.dumps({"kind": "fact", "title": f"Imported fact {n}: the "
                                          f"service {n} retries {n % 7} times", "body": ""}) + "\n"
                              for n in range(800)))
    importing = subprocess.Popen([sys.executable, "-m", "graphmem", "import", "--json",
                                  str(export)], cwd=repo, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not journaled(journal, before) and time.monotonic() < deadline:
        pass  # kill the owner as soon as the first op of the import is journaled
    os.kill(pid, signal.SIGKILL)
    out, err = importing.communicate(timeout=180)
    assert size() > before, "the import never reached the journal"
    assert importing.returncode == 0, (importing.returncode, out, err)
    assert json.loads(out)["stored"] is True and "do not retry" in json.loads(out)["message"]
    stop_owner(home, repo)
    stored = titles(home, repo)
    assert len(stored) == 800 and stored[0].startswith("Imported fact")
