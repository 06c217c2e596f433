"""A recorded Claude Code session through the real hook command, then ingest: the store holds the
expected atomic, linked items, and no planted secret is anywhere on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem import Config, Memory
from tests.conftest import git

REPLAY = Path(__file__).parent / "data" / "session_replay.jsonl"
SOURCES = {
    "src/shop/db.py": "import os\n\n\ndef connect(url=None):\n    return url or os.environ['DATABASE_URL']\n",
    "src/shop/payments.py": "class ChargeV1:\n    pass\n\n\ndef charge(amount):\n    return ChargeV1()\n",
    "tests/conftest.py": "import pytest\n",
}


def load_replay(repo: Path) -> tuple[list[str], list[tuple[str, bytes]], dict]:
    lines = REPLAY.read_text().splitlines()
    secrets = json.loads(lines[0])["planted_secrets"]
    expected = json.loads(lines[-1])
    events = []
    for line in lines[1:-1]:
        record = json.loads(line.replace("/REPO", str(repo)))
        events.append((record["event"], json.dumps(record["payload"]).encode()))
    return secrets, events, expected


@pytest.fixture(scope="module")
def replay_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay") / "home"


@pytest.fixture(scope="module")
def replayed(replay_home: Path, tmp_path_factory: pytest.TempPathFactory):
    home = replay_home
    repo = tmp_path_factory.mktemp("replay-repo")
    git(repo, "init", "-q", "-b", "main")
    for rel, text in SOURCES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop sources")
    secrets, events, expected = load_replay(repo)
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1"}
    for event, payload in events:
        result = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent",
                                 "claude-code"], input=payload, capture_output=True, env=env,
                                cwd=repo, timeout=60, check=False)
        assert result.returncode == 0
        if event != "session-start":
            assert result.stdout == b""
    memory = Memory(Config(home=home, cwd=repo))
    memory.index_code()
    report = memory.ingest()
    yield memory, secrets, expected, report, len(events)
    memory.close()


def _matches(item, spec: dict) -> bool:
    text = (item.title + "\n" + item.body).lower()
    return item.kind.value == spec["kind"] and all(s.lower() in text for s in spec["must_contain"])


def test_replay_produces_expected_items(replayed) -> None:
    memory, _, expected, report, count = replayed
    assert count >= 60 and report["events"] == count
    items = memory.list(limit=500)
    for spec in expected["expected_items"]:
        found = [i for i in items if _matches(i, spec)]
        assert found, f"no {spec['kind']} item containing {spec['must_contain']}"
        if spec.get("files"):
            linked = {ln["entity"]["path"] for i in found for ln in memory.entities(i.id)
                      if "entity" in ln and ln["entity"]["kind"] == "file"}
            assert set(spec["files"]) <= linked, (spec, linked)
    summaries = [i for i in items if i.kind.value == "summary"]
    assert len(summaries) == expected["exactly"]["summary"]


def test_items_are_linked_to_code_and_errors(replayed) -> None:
    memory, *_ = replayed
    pitfall = next(i for i in memory.list(kind="pitfall") if "DATABASE_URL" in i.title + i.body)
    linked = {ln["entity"]["id"] for ln in memory.entities(pitfall.id) if "entity" in ln}
    assert "envvar:DATABASE_URL" in linked
    assert any(e.startswith("error:") for e in linked)
    assert memory.evidence(pitfall.id), "provenance back to the observations"


def test_brief_leads_with_the_session_handoff(replayed) -> None:
    memory, *_ = replayed
    brief = memory.brief()
    assert brief.lines[0].startswith("- last session (")
    assert any("open task" in line for line in brief.lines[1:4])
    assert brief.tokens <= brief.budget


def test_no_planted_secret_anywhere_on_disk(replayed, replay_home: Path) -> None:
    _, secrets, *_ = replayed
    files = [p for p in replay_home.rglob("*") if p.is_file()]
    assert any(p.name == "journal.jsonl" for p in files) and any("spool" in str(p) for p in files)
    for path in files:
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, f"{secret[:6]}… found in {path}"


def test_ingest_again_changes_nothing(replayed) -> None:
    memory, *_ = replayed
    before = memory.store.export_rows()
    assert memory.ingest()["events"] == 0
    assert memory.store.export_rows() == before
