"""Forget means gone: a marker planted in a hook event's large tool output (so it also lands in
evidence) is, after `forget` or a sweep purge of the items it produced, in no byte of any file
under GRAPHMEM_HOME (Kuzu's included), and re-ingesting the spool does not bring it back."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import Config, Memory
from graphmem.lifecycle import DAY
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from tests.capture import realistic_output

MARKER = "pelican_quasar_total"
SESSION = "5b2e7f10-3c4d-4e5f-8a9b-0c1d2e3f4a5b"


def _payload(repo: Path, name: str, **fields: object) -> bytes:
    return json.dumps({"session_id": SESSION, "transcript_path": "", "cwd": str(repo),
                       "permission_mode": "default", "hook_event_name": name, **fields}).encode()


def _hook(repo: Path, home: Path, event: str, payload: bytes) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1"}
    result = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent",
                             "claude-code"], input=payload, capture_output=True, env=env,
                            cwd=repo, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result


def _session(repo: Path, home: Path) -> None:
    """A failing test run whose big output names the marker, an edit, a passing run, the end."""
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "orders.py").write_text("def total(order):\n    return order['sum']\n")
    failing = ("Exit code 1\n" + realistic_output(20_000)
               + "\n    def test_total():\n>       assert total(ORDER) == 3\n"
               f"E       KeyError: '{MARKER}'\n\nsrc/orders.py:2: KeyError\n"
               f"FAILED tests/test_orders.py::test_total - KeyError: '{MARKER}'\n"
               "========================= 1 failed in 0.12s =========================\n")
    command = {"command": "pytest -x tests/test_orders.py", "description": "Run the tests"}
    events = [
        ("user-prompt", _payload(repo, "UserPromptSubmit",
                                 prompt="pytest -x tests/test_orders.py fails with a KeyError, fix it")),
        ("post-tool", _payload(repo, "PostToolUseFailure", tool_name="Bash", tool_input=command,
                               tool_use_id="toolu_01FailingRun", error=failing)),
        ("post-tool", _payload(repo, "PostToolUse", tool_name="Edit",
                               tool_input={"file_path": str(repo / "src" / "orders.py"),
                                           "old_string": "order['sum']",
                                           "new_string": "order.get('total', 0)"},
                               tool_response={"filePath": str(repo / "src" / "orders.py")},
                               tool_use_id="toolu_01TheEdit")),
        ("post-tool", _payload(repo, "PostToolUse", tool_name="Bash", tool_input=command,
                               tool_response={"stdout": "1 passed in 0.05s\n", "stderr": "",
                                              "interrupted": False, "isImage": False},
                               tool_use_id="toolu_01PassingRun")),
        ("session-end", _payload(repo, "SessionEnd", reason="exit")),
    ]
    for event, payload in events:
        _hook(repo, home, event, payload)


def _files_holding(home: Path, needle: str) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")
                  if p.is_file() and needle.encode() in p.read_bytes())


def _produced(memory: Memory) -> list[str]:
    """Items that hold the marker or derive from an observation (or evidence) that does."""
    rows = memory.store.list_items(ItemFilter(project=memory.project, statuses=None), limit=1000)
    out = []
    for row in rows:
        observations = memory.store.item_observations(row["id"])
        if MARKER in row["title"] + row["body"] or any(
                MARKER in o["text"] or (o["evidence_ref"] and MARKER in _evidence(memory, o))
                for o in observations):
            out.append(row["id"])
    return out


def _evidence(memory: Memory, observation: dict) -> str:
    path = memory.dir / "evidence" / (observation["evidence_ref"].split(":", 1)[-1] + ".txt")
    return path.read_text() if path.exists() else ""


@pytest.fixture
def captured(repo: Path, home: Path):
    """The session through real hook processes, ingested; the marker is all over the store."""
    _session(repo, home)
    memory = Memory(Config(home=home, cwd=repo, embed=False))
    memory.ingest()
    produced = _produced(memory)
    assert produced, "the session produced no item from the marked output"
    hits = memory.search(f"KeyError {MARKER}").hits
    assert {h.item.id for h in hits} & set(produced)
    memory.search("orders total")  # a log line that stays unless it returned a forgotten item
    where = _files_holding(home, MARKER)
    assert any(w.startswith(("evidence", "spool")) or "/evidence/" in w for w in where), where
    assert any(w.endswith("journal.jsonl") for w in where), where
    assert any("graph.kuzu" in w for w in where), where
    yield memory, produced
    memory.close()


def _assert_gone(memory: Memory, home: Path, repo: Path, produced: list[str],
                 titles: list[str]) -> None:
    assert memory.store.get_items(produced) == []
    memory.close()
    assert _files_holding(home, MARKER) == []
    for needle in [*produced, *(t[:40] for t in titles)]:
        assert _files_holding(home, needle) == [], needle
    started = _hook(repo, home, "session-start", _payload(repo, "SessionStart", source="startup"))
    for needle in [MARKER, *(t[:40] for t in titles)]:
        assert needle.encode() not in started.stdout


def test_forget_leaves_no_byte_of_the_marker(captured, home: Path, repo: Path) -> None:
    memory, produced = captured
    brief_before = (memory.dir / "brief.txt").read_text()
    forgotten_titles = [r["title"] for r in memory.store.get_items(produced)]
    logged = [json.loads(line) for line in
              (memory.dir / "retrieval.jsonl").read_text().splitlines()]
    for item_id in produced:
        memory.forget(item_id)
    # The retrieval log loses the lines that returned a forgotten item, and only those.
    kept = [json.loads(line) for line in (memory.dir / "retrieval.jsonl").read_text().splitlines()]
    expected = [r for r in logged if not set(r["returned"]) & set(produced)]
    assert kept[:len(expected)] == expected
    assert all(not set(r["returned"]) & set(produced) for r in kept)
    assert any(title[:40] in brief_before for title in forgotten_titles)
    _assert_gone(memory, home, repo, produced, forgotten_titles)


def test_sweep_purge_leaves_no_byte_of_the_marker(captured, home: Path, repo: Path) -> None:
    memory, produced = captured
    others = [r["id"] for r in memory.store.list_items(
        ItemFilter(project=memory.project, statuses=None), limit=1000) if r["id"] not in produced]
    titles = [r["title"] for r in memory.store.get_items(produced)]
    for item_id in produced:
        memory.update(item_id, status="archived")
    plan = memory.sweep(now=time.time() + 31 * DAY)
    assert sorted(plan["purge"]) == sorted(produced)
    assert {r["id"] for r in memory.store.get_items(others)} == set(others)
    _assert_gone(memory, home, repo, produced, titles)


def test_a_forget_cut_short_is_finished_on_the_next_open(captured, home: Path, repo: Path) -> None:
    memory, produced = captured
    titles = [r["title"] for r in memory.store.get_items(produced)]
    observations = {i: memory.store.item_observations(i) for i in produced}
    linked = {ln["entity"]["id"] for i in produced for ln in memory.store.item_links(i)
              if "entity" in ln}
    plan = {"owners": {i: [o["id"] for o in obs] for i, obs in observations.items()},
            "entities": memory.store.entities_only_linked_from(linked, set(produced)),
            "evidence": sorted({o["evidence_ref"] for obs in observations.values() for o in obs
                                if o["evidence_ref"]})}
    # What forget writes first, then its journal rewrite; then the process dies.
    (memory.dir / "forget.pending").write_text(json.dumps(plan))
    memory.journal.scrub(set(produced), {o for ids in plan["owners"].values() for o in ids})
    memory.journal.append(ops.Compact())
    memory.flush_use()
    memory.store.close()
    assert _files_holding(home, MARKER), "spool and evidence still hold it"
    again = Memory(Config(home=home, cwd=repo, embed=False))
    assert not (again.dir / "forget.pending").exists()
    _assert_gone(again, home, repo, produced, titles)


def test_forgotten_items_do_not_come_back_on_reingest(captured, home: Path, repo: Path) -> None:
    memory, produced = captured
    spool = memory.dir / "spool"
    saved = (spool / "events.jsonl").read_bytes()
    memory.forget_many(produced)
    (spool / "consumed.offset").unlink(missing_ok=True)
    memory.ingest()
    assert memory.store.get_items(produced) == []
    # Even the very events they came from, put back (a spool restored from a backup), do not
    # bring the items or their observations back: the ids are tombstoned.
    (spool / "events.jsonl").write_bytes(saved)
    (spool / "consumed.offset").unlink(missing_ok=True)
    assert memory.ingest()["events"] > 0
    assert memory.store.get_items(produced) == []
    memory.close()
    assert _files_holding(home, MARKER) == [str((spool / "events.jsonl").relative_to(home))]
    # Restoring on purpose: lift the tombstones, then ingest again.
    with Memory(Config(home=home, cwd=repo, embed=False)) as again:
        assert again.unforget(produced) == len(produced)
        (spool / "consumed.offset").unlink(missing_ok=True)
        again.ingest()
        assert {r["id"] for r in again.store.get_items(produced)} == set(produced)


def test_the_retrieval_log_loses_lines_by_returned_id_not_by_substring(home: Path,
                                                                         repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        a = memory.add("Use ruff for linting in this repository", kind="convention")
        b = memory.add("The staging database is called orders_staging", kind="env")
        memory.search("ruff linting")
        memory.search(f"what was {a.id} about", kinds=["env"])  # names a, returns no a
        memory.get(b.id)
        before = [json.loads(line) for line in
                  (memory.dir / "retrieval.jsonl").read_text().splitlines()]
        assert [a.id in r["returned"] for r in before] == [True, False, False]
        memory.forget(a.id)
        after = [json.loads(line) for line in
                 (memory.dir / "retrieval.jsonl").read_text().splitlines()]
        assert after[:2] == before[1:]


def test_an_import_does_not_bring_a_forgotten_item_back_unless_asked(home: Path,
                                                                      repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        kept = memory.add("Releases are tagged vMAJOR.MINOR.PATCH", kind="convention")
        gone = memory.add("The old VPN host was vpn-legacy.internal", kind="env")
        export = memory.export_items()
        memory.forget(gone.id)
        assert memory.import_items(export) == 1
        assert memory.store.get_items([gone.id]) == []
        assert memory.get_item(kept.id)
        assert memory.import_items(export, restore_forgotten=True) == 2
        assert memory.get_item(gone.id).title == gone.title
        memory.forget(gone.id)
        assert memory.import_items(export) == 1  # forgotten again: tombstoned again


def test_dropping_spool_events_keeps_the_consumer_offset_on_the_same_events(tmp_path: Path) -> None:
    from graphmem.capture.event import HookEvent
    from graphmem.capture.spool import Spool

    spool = Spool(tmp_path / "spool")
    events = [HookEvent(event="post-tool", agent="generic", session_id="s", text=f"output {n}")
              for n in range(5)]
    for event in events:
        spool.append(event)
    _, offset = spool.read_from(0, max_bytes=1)
    _, offset = spool.read_from(offset, max_bytes=1)
    _, offset = spool.read_from(offset, max_bytes=1)
    spool.commit(offset)  # the first three are ingested
    assert spool.drop_events({events[1].id, events[3].id}) == 2
    pending, _ = spool.read_from(spool.committed())
    assert [e.id for e in pending] == [events[4].id]
    everything, _ = spool.read_from(0)
    assert [e.id for e in everything] == [events[i].id for i in (0, 2, 4)]
    assert stat.S_IMODE(spool.path.stat().st_mode) == 0o600
