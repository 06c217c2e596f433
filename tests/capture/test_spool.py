"""Spool: whole lines under concurrent writers, resumable reads, torn tails, rotation."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem.capture.event import HookEvent
from graphmem.capture.spool import Spool


def events(n: int, prefix: str = "e") -> list[HookEvent]:
    return [HookEvent(event="post-tool", text=f"{prefix}{i}", id=f"{prefix}{i}") for i in range(n)]


def test_append_then_read_everything_back(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for event in events(5):
        spool.append(event)
    got, offset = spool.read_from(0)
    assert [e.id for e in got] == [f"e{i}" for i in range(5)]
    assert offset == spool.path.stat().st_size
    assert spool.read_from(offset) == ([], offset)


def test_reads_resume_from_the_committed_offset(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for event in events(3):
        spool.append(event)
    first, offset = spool.read_from(spool.committed())
    spool.commit(offset)
    spool.append(HookEvent(event="stop", id="late"))
    assert spool.pending_bytes() > 0
    second, end = spool.read_from(Spool(tmp_path / "spool").committed())
    assert [e.id for e in first] == ["e0", "e1", "e2"] and [e.id for e in second] == ["late"]
    spool.commit(end)
    assert spool.pending_bytes() == 0
    assert not list(spool.directory.glob(".consumed*"))  # the offset was replaced atomically


def test_torn_final_line_waits_until_it_is_complete(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.append(HookEvent(event="post-tool", id="whole"))
    line = HookEvent(event="post-tool", id="torn").to_json() + "\n"
    with open(spool.path, "ab") as handle:
        handle.write(line[:25].encode())
    got, offset = spool.read_from(0)
    assert [e.id for e in got] == ["whole"]
    with open(spool.path, "ab") as handle:
        handle.write(line[25:].encode())
    rest, _ = spool.read_from(offset)
    assert [e.id for e in rest] == ["torn"]


def test_a_line_glued_to_a_dead_writers_fragment_is_recovered(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.directory.mkdir(parents=True)
    spool.path.write_bytes(b'{"event":"post-tool","te')  # a writer died mid-line
    spool.append(HookEvent(event="post-tool", id="after"))
    with spool.path.open("ab") as handle:
        handle.write(b"not json at all\n")
    got, _ = spool.read_from(0)
    assert [e.id for e in got] == ["after"]
    assert spool.skipped == 1


def test_max_bytes_reads_in_batches_without_splitting_lines(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for event in events(50):
        spool.append(event)
    seen, offset = [], 0
    while True:
        batch, offset = spool.read_from(offset, max_bytes=700)
        if not batch:
            break
        seen += [e.id for e in batch]
    assert seen == [f"e{i}" for i in range(50)]


def test_rotation_happens_only_when_everything_is_consumed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for event in events(20):
        spool.append(event)
    assert not spool.rotate_if_consumed(threshold=100)  # nothing consumed yet
    _, offset = spool.read_from(0)
    spool.commit(offset)
    assert not spool.rotate_if_consumed(threshold=10**9)  # small enough to keep
    assert spool.rotate_if_consumed(threshold=100)
    assert spool.previous_path.exists() and not spool.path.exists()
    assert spool.committed() == 0 and spool.pending_bytes() == 0
    spool.append(HookEvent(event="stop", id="fresh"))
    got, _ = spool.read_from(spool.committed())
    assert [e.id for e in got] == ["fresh"]


def test_writer_blocked_during_rotation_lands_in_the_new_file(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.append(HookEvent(event="post-tool", id="old"))
    _, offset = spool.read_from(0)
    spool.commit(offset)
    fd = os.open(spool.path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # hold the lock the way rotation does
    code = (
        "import sys; from pathlib import Path; from graphmem.capture.spool import Spool; "
        "from graphmem.capture.event import HookEvent; "
        "Spool(Path(sys.argv[1])).append(HookEvent(event='stop', id='waited'))"
    )
    writer = subprocess.Popen([sys.executable, "-c", code, str(spool.directory)])
    time.sleep(0.5)
    assert writer.poll() is None  # it waits for the lock
    os.replace(spool.path, spool.previous_path)
    os.close(fd)
    assert writer.wait(timeout=20) == 0
    got, _ = spool.read_from(0)
    assert [e.id for e in got] == ["waited"]
    assert "waited" not in spool.previous_path.read_text()


WRITER = """
import sys
from pathlib import Path
from graphmem.capture.spool import Spool
spool, proc, count, size = Spool(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for i in range(count):
    spool.append_line('{"event":"post-tool","id":"%s-%d","text":"%s"}' % (proc, i, proc * size))
"""


def test_concurrent_writers_of_big_lines_never_interleave(tmp_path: Path) -> None:
    directory = tmp_path / "spool"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(directory), name, "60", "100000"])
        for name in "abcd"
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = (directory / "events.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    ids = [json.loads(line)["id"] for line in lines[:-1]]  # every line parses: none torn
    assert sorted(ids) == sorted(f"{p}-{i}" for p in "abcd" for i in range(60))


def test_lock_costs_microseconds(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    line = HookEvent(event="post-tool", text="x" * 2000).to_json()
    spool.append_line(line)
    n = 300
    start = time.perf_counter()
    for _ in range(n):
        spool.append_line(line)
    locked = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for _ in range(n):
        fd = os.open(spool.path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, (line + "\n").encode())
        os.close(fd)
    bare = (time.perf_counter() - start) / n
    print(
        f"\nspool append: {locked * 1e6:.0f} µs with flock + inode check, {bare * 1e6:.0f} µs bare"
    )
    assert locked < bare + 500e-6


def test_missing_spool_reads_as_empty(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "nowhere")
    assert spool.read_from(0) == ([], 0)
    assert spool.committed() == 0 and spool.pending_bytes() == 0
    assert not spool.rotate_if_consumed()


def test_sync_append_is_durable_and_readable(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.append(HookEvent(event="session-end", id="end"), sync=True)
    assert [e.id for e in spool.read_from(0)[0]] == ["end"]


@pytest.mark.parametrize(
    "text", ["line\nbreak", "emoji 🎉", "nul \x00 byte", "lone \udc80 surrogate"]
)
def test_awkward_text_stays_on_one_valid_line(tmp_path: Path, text: str) -> None:
    spool = Spool(tmp_path / "spool")
    spool.append(HookEvent(event="post-tool", text=text))
    assert spool.path.read_bytes().count(b"\n") == 1
    got, _ = spool.read_from(0)
    assert len(got) == 1 and got[0].text.startswith(text.split()[0])


def test_a_copied_store_resumes_where_its_spool_was_consumed(tmp_path: Path) -> None:
    import shutil

    original = Spool(tmp_path / "a" / "spool")
    for n in range(3):
        original.append(HookEvent("post-tool", session_id="s", text=f"run {n}"))
    events, offset = original.read_from(0, 1 << 20)
    original.commit(offset)
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # new inodes, same records
    copy = Spool(tmp_path / "b" / "spool")
    assert len(events) == 3 and copy.committed() == offset and copy.pending_bytes() == 0
    (tmp_path / "b" / "spool" / "events.jsonl").write_text("")  # another spool under that name
    copy.append(HookEvent("post-tool", session_id="s", text="new"))
    assert copy.committed() == 0
