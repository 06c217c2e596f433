"""A journal that survives: a record torn at any byte, or one corrupted in the middle, never makes
the store unusable, and nothing acknowledged is lost (real Kuzu stores in temp dirs)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from graphmem import Config, Memory
from graphmem.store import ops
from graphmem.store.journal import Journal, frame


def _config(data_dir: Path, repo: Path) -> Config:
    return Config(data_dir=data_dir, cwd=repo, embed=False)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str], bytes]:
    """A closed store holding three acknowledged items, and the line of the record that a crash
    then tears (never acknowledged: the graph does not have it)."""
    root = tmp_path_factory.mktemp("torn")
    repo = root / "repo"
    repo.mkdir()
    store = root / "store"
    with Memory(_config(store, repo)) as memory:
        ids = [memory.add(f"Acknowledged fact {n}: the port of service {n} is {5000 + n}",
                          kind="fact").id for n in range(3)]
    scratch = root / "scratch.jsonl"
    shutil.copy(store / "journal.jsonl", scratch)
    Journal(scratch).append(ops.UpdateItems([ids[0]], {"importance": 0.9}))
    line = scratch.read_bytes().splitlines(keepends=True)[-1]
    return store, repo, ids, line


def _survives(store: Path, repo: Path, acknowledged: list[str]) -> None:
    """add, rebuild and forget work, and every acknowledged item is still there."""
    with Memory(_config(store, repo)) as memory:
        added = memory.add("Written after the damage: the cache lives in /var/cache/demo",
                           kind="fact").id
        for item_id in [*acknowledged, added]:
            assert memory.get_item(item_id)
        memory.rebuild()
        for item_id in [*acknowledged, added]:
            assert memory.get_item(item_id)
        assert memory.forget(acknowledged[-1])["items"] == 1
        for item_id in [*acknowledged[:-1], added]:
            assert memory.get_item(item_id)
        assert memory.store.applied_seq == memory.journal.last_seq()
    for raw in (store / "journal.jsonl").read_bytes().splitlines():
        assert json.loads(raw)["seq"] > 0
    with Memory(_config(store, repo)) as again:  # and again after a fresh open
        assert {i.id for i in again.list(limit=10)} == {*acknowledged[:-1], added}


def test_a_record_cut_at_every_byte_offset(template, tmp_path: Path) -> None:
    """Journal level, every offset: the next append is whole and every earlier record reads."""
    store, _, _, line = template
    original = (store / "journal.jsonl").read_bytes()
    seqs = [r["seq"] for r in Journal(store / "journal.jsonl").records()]
    path = tmp_path / "journal.jsonl"
    for cut in range(len(line)):
        path.write_bytes(original + line[:cut])
        Journal(path).append(ops.BumpItems([{"id": "after", "n": 1, "at": 2.0}]))
        assert path.read_bytes().startswith(original), cut
        records = list(Journal(path).records())
        assert [r["seq"] for r in records] == [*seqs, seqs[-1] + 1], cut
        assert records[-1]["rows"] == [{"id": "after", "n": 1, "at": 2.0}], cut
        torn = tmp_path / "journal.jsonl.torn"
        if cut:
            assert torn.read_bytes() == line[:cut] + b"\n", cut
            assert stat.S_IMODE(torn.stat().st_mode) == 0o600
            torn.unlink()
        else:
            assert not torn.exists()


# A cut one byte into the frame (no JSON at all), and one before the newline (a whole record with
# a valid CRC, only its newline missing: what a repair that read the fragment would keep). The
# other parts of the line (8, 12, 17, 18, 19 bytes in, the middle, -2) took the same path: every
# reader tells a torn tail by the missing newline alone and never reads its bytes (repair_tail
# keeps up to the last newline, last_seq drops what follows it, lines() stops there), and
# test_a_record_cut_at_every_byte_offset still cuts the journal at every byte.
CUTS = [1, -1]


@pytest.mark.parametrize("where", CUTS)
def test_add_rebuild_and_forget_work_after_a_cut(template, tmp_path: Path, where: float) -> None:
    store, repo, ids, line = template
    cut = int(where * len(line)) if isinstance(where, float) else where % len(line)
    work = tmp_path / "work"
    shutil.copytree(store, work)
    with (work / "journal.jsonl").open("ab") as handle:
        handle.write(line[:cut])
    _survives(work, repo, ids)
    assert (work / "journal.jsonl.torn").read_bytes() == line[:cut] + b"\n"


def test_a_complete_last_record_that_fails_its_check_is_cut_off(template, tmp_path: Path) -> None:
    store, repo, ids, line = template
    work = tmp_path / "flipped"
    shutil.copytree(store, work)
    flipped = line.replace(b'"importance":0.9', b'"importance":9.9')
    with (work / "journal.jsonl").open("ab") as handle:
        handle.write(flipped)
    _survives(work, repo, ids)
    assert (work / "journal.jsonl.torn").read_bytes() == flipped


def test_a_corrupt_record_in_the_middle_is_skipped_and_counted(template, tmp_path: Path) -> None:
    store, repo, ids, _ = template
    work = tmp_path / "middle"
    shutil.copytree(store, work)
    with Memory(_config(work, repo)) as memory:
        later = memory.add("Acknowledged after the damaged record: builds run on ubuntu-24.04",
                           kind="env").id
    path = work / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # The put_items record of the second item: a flipped byte inside its title.
    index = next(i for i, raw in enumerate(lines) if b"Acknowledged fact 1" in raw)
    lines[index] = lines[index].replace(b"fact 1", b"fact \x01", 1)
    path.write_bytes(b"".join(lines))
    # Every other acknowledged item survives add, rebuild and forget.
    _survives(work, repo, [ids[0], ids[2], later])
    kept = (work / "journal.jsonl.torn").read_bytes()
    assert b"fact \x01" in kept, "the unreadable record is kept aside, not silently dropped"


def test_unframed_journals_from_before_the_frame_still_read(template, tmp_path: Path) -> None:
    store, repo, ids, _ = template
    work = tmp_path / "old"
    shutil.copytree(store, work)
    path = work / "journal.jsonl"
    records = list(Journal(path).records())
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    assert not path.read_bytes().startswith(b'{"crc"')
    (work / "graph.kuzu").unlink()
    _survives(work, repo, ids)


def test_a_failed_append_leaves_no_fragment(template, tmp_path: Path) -> None:
    """A write cut short (file size limit) is undone, so the next append does not glue onto it."""
    import resource
    import subprocess
    import sys

    store, repo, ids, _ = template
    work = tmp_path / "limited"
    shutil.copytree(store, work)
    path = work / "journal.jsonl"
    size = path.stat().st_size
    script = ("import resource, sys\n"
              "from pathlib import Path\nfrom graphmem.store.journal import Journal\n"
              "from graphmem.store.ops import BumpItems\n"
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({size + 40}, {size + 40}))\n"
              f"Journal(Path(sys.argv[1])).append(BumpItems([{{'id': '{ids[0]}', "
              "'n': 1, 'at': 1.0, 'pad': 'x' * 400}]))\n")
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode != 0 and "nothing was stored" in result.stderr
    assert path.stat().st_size == size
    assert resource.getrlimit(resource.RLIMIT_FSIZE)  # the limit was the child's only
    _survives(work, repo, ids)


def test_frame_is_one_json_line_with_a_crc_of_its_body() -> None:
    from graphmem.store.journal import frame

    line = frame({"seq": 1, "ts": 0.5, "by": "api", "op": "compact"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = json.loads(line)
    assert set(record) == {"crc", "seq", "ts", "by", "op"} and len(record["crc"]) == 8


def test_doctor_reports_set_aside_records_and_applied_seq(template, tmp_path: Path) -> None:
    from graphmem.doctor import diagnose, render

    store, repo, _, line = template
    work = tmp_path / "doctor"
    shutil.copytree(store, work)
    with (work / "journal.jsonl").open("ab") as handle:
        handle.write(line[: len(line) // 2])
    report = diagnose(_config(work, repo))
    journal = report["journal"]
    assert journal["torn_tail_bytes"] == len(line) // 2
    assert journal["applied_seq"] == journal["last_seq"] > 0
    assert "torn" in render(report)
    lines = (work / "journal.jsonl").read_bytes().splitlines(keepends=True)
    index = next(i for i, raw in enumerate(lines) if b"Acknowledged fact 1" in raw)
    lines[index] = lines[index].replace(b"fact 1", b"fact \x01", 1)
    (work / "journal.jsonl").write_bytes(b"".join(lines))
    report = diagnose(_config(work, repo))
    assert report["journal"]["corrupt"] == [index + 1]
    assert "corrupt" in render(report)


def test_a_failed_rebuild_leaves_nothing_behind_and_the_store_works(template,
                                                                    tmp_path: Path) -> None:
    store, repo, ids, _ = template
    work = tmp_path / "failing"
    shutil.copytree(store, work)
    with Memory(_config(work, repo)) as memory:
        with memory.journal.path.open("ab") as journal:  # a newer version's op, say
            journal.write(frame({"seq": memory.journal.last_seq() + 1, "ts": 0.0, "by": "",
                                 "op": "no_such_op"}))
        with pytest.raises(Exception, match="no_such_op"):
            memory.rebuild()
        assert sorted(p.name for p in work.glob("graph.kuzu.new*")) == []
        assert [memory.get_item(i).id for i in ids] == ids


def test_rebuild_embeds_items_that_have_no_vector(tmp_path: Path) -> None:
    from graphmem import MemoryItem

    repo = tmp_path / "repo"
    repo.mkdir()
    with Memory(Config(data_dir=tmp_path / "store", cwd=repo)) as memory:
        item = MemoryItem(project=memory.project, title="Redis runs on port 6380 in staging",
                          kind="env")
        memory.add_items([item], embed=False)
        assert memory.store.items_without_vectors() == [item.id]
        assert memory.rebuild()["embedded"] == 1
        assert memory.store.items_without_vectors() == []
        assert item.id in [h.item.id for h in memory.search("redis staging port").hits]
        assert memory.rebuild()["embedded"] == 0  # the vector is journaled: replay restores it


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 40 MB tmpfs (root only; skipped elsewhere)."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_rebuild_without_room_refuses_and_changes_nothing(small_disk: Path, repo: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "GRAPHMEM_HOME": str(small_disk / "home"), "GRAPHMEM_EMBED": "false",
           "GRAPHMEM_OWNER": "never", "GRAPHMEM_MIN_FREE_MB": "0"}  # rebuild's own check alone

    def graphmem(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    added = graphmem("add", "The deploy key lives in the ops vault", "--kind", "fact")
    assert added.returncode == 0, added.stderr
    free = shutil.disk_usage(small_disk).free
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (free - 4 * 1024 * 1024))
    result = graphmem("rebuild")
    assert result.returncode == 4, (result.returncode, result.stderr)
    assert "not enough free space" in result.stderr
    assert list(small_disk.rglob("graph.kuzu.new*")) == []
    ballast.unlink()
    listed = graphmem("list")
    assert listed.returncode == 0 and "deploy key" in listed.stdout


def test_doctor_says_not_to_rebuild_when_the_graph_is_ahead_of_the_journal(template,
                                                                           tmp_path: Path) -> None:
    from graphmem.doctor import diagnose

    store, repo, _, _ = template
    work = tmp_path / "ahead"
    shutil.copytree(store, work)
    path = work / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # a record the graph applied, then lost on disk
    report = diagnose(_config(work, repo))
    assert report["journal"]["applied_seq"] == report["journal"]["last_seq"] + 1
    assert not report["ok"]
    assert any("journal lost records" in c["what"] and "export" in c["fix"]
               for c in report["checks"])
