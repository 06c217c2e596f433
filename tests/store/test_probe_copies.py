"""Two processes that open a store after a crash probe it at the same moment; each probe writes to a
copy of its own, and neither calls the store corrupt. Seen in CI (test_everything_at_once): "Could not
set lock on file : …/graph.kuzu.probe … run `graphmem rebuild`", when both probes wrote to one copy."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from graphmem.errors import StoreCorrupt, StoreUnavailable
from graphmem.store.kuzu import PROBE_COPY, KuzuStore, closed_cleanly, probe


def _unclean(path: Path) -> None:
    KuzuStore(path).close()
    path.with_name(path.name + ".clean").unlink()  # as after a crash: the next opens probe it
    assert not closed_cleanly(path)


def test_probes_at_the_same_moment_each_write_their_own_copy_and_find_the_store_sound(tmp_path: Path) -> None:
    path = tmp_path / "graph.kuzu"
    _unclean(path)
    outcomes: list[str] = []

    def one() -> None:
        try:
            probe(path)
            outcomes.append("sound")
        except StoreUnavailable:
            outcomes.append("in use")  # another probe holds the store itself: its caller waits and retries
        except StoreCorrupt as exc:
            outcomes.append(f"corrupt: {exc}")
    with ThreadPoolExecutor(max_workers=4) as pool:  # four probe processes at once, ten times over
        list(pool.map(lambda _: one(), range(40)))
    assert not [o for o in outcomes if o.startswith("corrupt")], outcomes
    assert "sound" in outcomes
    assert sorted(p.name for p in tmp_path.glob("graph.kuzu*")) == ["graph.kuzu"]


def test_a_probe_leaves_a_live_probes_copy_and_removes_what_dead_ones_left(tmp_path: Path) -> None:
    from graphmem.store.kuzu import _remove_probe_copy

    path = tmp_path / "graph.kuzu"
    path.write_bytes(b"")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    try:
        names = [f"graph.kuzu{PROBE_COPY}", f"graph.kuzu{PROBE_COPY}.{live.pid}", f"graph.kuzu{PROBE_COPY}.{live.pid}.wal",
                 f"graph.kuzu{PROBE_COPY}.{dead.stdout.strip()}", f"graph.kuzu{PROBE_COPY}.{os.getpid()}"]
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        _remove_probe_copy(path, os.getpid())
        assert sorted(p.name for p in tmp_path.glob("graph.kuzu*")) == sorted(
            ["graph.kuzu", f"graph.kuzu{PROBE_COPY}.{live.pid}", f"graph.kuzu{PROBE_COPY}.{live.pid}.wal"])
    finally:
        live.kill()
        live.wait()


def test_a_copy_another_process_holds_does_not_make_the_store_corrupt(tmp_path: Path) -> None:
    # what the race does, held still: another process has the probe's copy open when this probe writes
    path = tmp_path / "graph.kuzu"
    _unclean(path)
    copy = tmp_path / f"graph.kuzu{PROBE_COPY}"
    copy.write_bytes(path.read_bytes())
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import sys, time\nfrom graphmem.store.kuzu import KuzuStore\n"
         f"s = KuzuStore(__import__('pathlib').Path({str(copy)!r}), checked=True)\nprint('open', flush=True)\n"
         "time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        probe(path)  # sound, not "store corrupt: … fails a write (… Could not set lock …)"
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
