"""The hook as agents run it: a real process per event, fail-open, one whole spool line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import hooks
from graphmem.capture.spool import Spool
from graphmem.paths import find_project, store_dir

from . import claude_post_tool_bash, realistic_output

HEAVY = (
    "pydantic",
    "kuzu",
    "spacy",
    "torch",
    "sentence_transformers",
    "fastmcp",
    "tree_sitter",
    "numpy",
)


def run_hook(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess:
    environment = {**os.environ, "GRAPHMEM_NO_WORKER": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "graphmem.hooks", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=environment,
        timeout=120,
        check=False,
    )


def spooled(repo: Path, home: Path) -> list[dict]:
    spool = Spool.for_project(find_project(repo), home)
    return (
        [json.loads(line) for line in spool.path.read_text().splitlines()]
        if spool.path.exists()
        else []
    )


def problems(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def seeded(repo: Path, home: Path) -> list[dict]:
    """A spool that already holds two events, to prove later failures leave them intact."""
    for command in ("git status", "make lint"):
        result = run_hook("post-tool", stdin=claude_post_tool_bash(str(repo), "ok", command))
        assert result.returncode == 0
    return spooled(repo, home)


def test_realistic_claude_post_tool_is_spooled_redacted_and_silent(repo: Path, home: Path) -> None:
    token = "ghp_" + "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8DcBa"
    output = realistic_output(20_000) + f"\nexport GITHUB_TOKEN={token}\n"
    result = run_hook("post-tool", stdin=claude_post_tool_bash(str(repo), output))
    assert (result.returncode, result.stdout) == (0, b"")
    [event] = spooled(repo, home)
    assert event["agent"] == "claude-code" and event["tool"] == "Bash"
    assert event["project"] == str(repo) and event["branch"] == "main"
    assert token not in json.dumps(event)
    assert event["evidence_ref"].startswith("sha256:") and len(event["text"].encode()) < 9000
    evidence = (
        store_dir(find_project(repo), home) / "evidence" / (event["evidence_ref"][7:] + ".txt")
    )
    full = evidence.read_text()
    assert "GITHUB_TOKEN=[REDACTED:github_token]" in full and token not in full
    assert problems(home) == ""


@pytest.mark.parametrize(
    ("stdin", "logged"),
    [
        (b"", "empty payload"),
        (b"\x00\xff\xfe\x89PNG\r\n\x1a\n" * 100, "invalid or truncated JSON"),
        (b"[1, 2, 3]", "payload is a JSON list"),
    ],
)
def test_unusable_payloads_exit_zero_silently_and_are_logged(
    repo: Path, home: Path, seeded: list[dict], stdin: bytes, logged: str
) -> None:
    result = run_hook("post-tool", stdin=stdin, cwd=repo)
    assert (result.returncode, result.stdout) == (0, b"")
    assert logged in problems(home)
    assert spooled(repo, home) == seeded


def test_truncated_json_keeps_what_arrived(repo: Path, home: Path, seeded: list[dict]) -> None:
    payload = claude_post_tool_bash(str(repo), "collected 12 items\n" * 50, "pytest -x")
    cut = payload[: payload.index(b'"stderr"') - 40]
    result = run_hook("post-tool", stdin=cut)
    assert (result.returncode, result.stdout) == (0, b"")
    events = spooled(repo, home)
    assert events[:2] == seeded and len(events) == 3
    assert events[2]["command"] == "pytest -x" and events[2]["text"].startswith(
        "collected 12 items"
    )
    assert "salvaged: cwd, hook_event_name" in problems(home)


def test_fifty_megabyte_tool_response_is_capped(repo: Path, home: Path, seeded: list[dict]) -> None:
    payload = claude_post_tool_bash(str(repo), "compiling module 0123456789\n" * 1_900_000)
    assert len(payload) > 50_000_000
    started = time.monotonic()
    result = run_hook("post-tool", stdin=payload)
    elapsed = time.monotonic() - started
    assert (result.returncode, result.stdout) == (0, b"")
    events = spooled(repo, home)
    assert events[:2] == seeded and len(events) == 3
    big = events[2]
    assert big["extra"]["payload_truncated_from_bytes"] == len(payload)
    assert big["evidence_ref"] and len(big["text"].encode()) < 9000
    assert "invalid or truncated JSON" in problems(home)
    print(f"\n50 MB payload handled in {elapsed:.2f} s")


def test_unknown_event_is_logged_and_ignored(repo: Path, home: Path, seeded: list[dict]) -> None:
    result = run_hook("post-tool-use-typo", stdin=claude_post_tool_bash(str(repo), "x"))
    assert (result.returncode, result.stdout) == (0, b"")
    assert "unknown hook event 'post-tool-use-typo'" in problems(home)
    assert spooled(repo, home) == seeded


def test_missing_cwd_falls_back_to_the_process_directory(repo: Path, home: Path) -> None:
    payload = json.dumps(
        {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "what broke?"}
    ).encode()
    result = run_hook("user-prompt", stdin=payload, cwd=repo / ".")
    assert (result.returncode, result.stdout) == (0, b"")
    [event] = spooled(repo, home)
    assert event["cwd"] == str(repo) and event["text"] == "what broke?"
    assert "no cwd" in problems(home)


def test_broken_store_directory_still_exits_zero(repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the home directory should be")
    result = run_hook(
        "post-tool", stdin=claude_post_tool_bash(str(repo), "ok"), GRAPHMEM_HOME=str(blocked)
    )
    assert (result.returncode, result.stdout) == (0, b"")


@pytest.mark.parametrize(
    ("agent_args", "payload", "expected"),
    [
        ((), {"hook_event_name": "SessionStart", "source": "startup"}, "claude-json"),
        (
            ("--agent", "codex"),
            {"hook_event_name": "SessionStart", "turn_id": "t", "model": "m"},
            "claude-json",
        ),
        (("--agent", "generic"), {"event": "session-start"}, "plain"),
    ],
)
def test_session_start_prints_the_brief(
    repo: Path, home: Path, agent_args: tuple, payload: dict, expected: str
) -> None:
    brief = "Last session: fixed the torn-line bug in the spool.\nOpen: rotate logs."
    store = store_dir(find_project(repo), home)
    store.mkdir(parents=True)
    (store / "brief.txt").write_text(brief)
    stdin = json.dumps({"session_id": "s2", "cwd": str(repo), **payload}).encode()
    result = run_hook("session-start", *agent_args, stdin=stdin)
    assert result.returncode == 0
    if expected == "plain":
        assert result.stdout.decode().strip() == brief
    else:
        assert json.loads(result.stdout) == {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": brief}
        }
    assert spooled(repo, home)[0]["event"] == "session-start"


def test_session_start_without_a_brief_prints_nothing(repo: Path, home: Path) -> None:
    stdin = json.dumps(
        {"session_id": "s3", "cwd": str(repo), "hook_event_name": "SessionStart"}
    ).encode()
    assert run_hook("session-start", stdin=stdin).stdout == b""


def test_codex_notify_payload_as_argument(repo: Path, home: Path) -> None:
    notify = json.dumps(
        {
            "type": "agent-turn-complete",
            "thread-id": "th-1",
            "turn-id": "7",
            "cwd": str(repo),
            "input-messages": ["fix it"],
            "last-assistant-message": "Fixed.",
        }
    )
    result = run_hook("stop", "--agent", "codex", notify)
    assert (result.returncode, result.stdout) == (0, b"")
    [event] = spooled(repo, home)
    assert event["agent"] == "codex" and event["session_id"] == "th-1"
    assert event["text"] == "User: fix it\n\nAssistant: Fixed."


def test_session_end_starts_a_detached_ingest_worker(
    repo: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "worker.txt"
    fake_python = tmp_path / "fake-python"
    fake_python.write_text(
        f'#!/bin/sh\necho "$@" > {record}.tmp\nps -o sid= -p $$ >> {record}.tmp\n'
        f"echo $$ >> {record}.tmp\nmv {record}.tmp {record}\n"
    )
    fake_python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake_python))
    monkeypatch.delenv("GRAPHMEM_NO_WORKER", raising=False)
    worker = hooks._start_worker(find_project(repo))
    assert worker is not None and worker.wait(timeout=20) == 0
    argv, session, pid = record.read_text().split("\n")[:3]
    assert argv == f"-m graphmem ingest --project {repo}"
    assert session.strip() == pid.strip()  # its own session: the agent's hangup cannot reach it


def test_session_end_with_worker_disabled_only_spools(repo: Path, home: Path) -> None:
    stdin = json.dumps(
        {"session_id": "s4", "cwd": str(repo), "hook_event_name": "SessionEnd", "reason": "clear"}
    ).encode()
    started = time.monotonic()
    result = run_hook("session-end", stdin=stdin)
    assert result.returncode == 0 and time.monotonic() - started < 10
    [event] = spooled(repo, home)
    assert event["event"] == "session-end" and event["extra"]["reason"] == "clear"


LOOP = """
import json, os, sys
from graphmem import hooks
repo, proc, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(count):
    payload = json.dumps({"session_id": proc, "cwd": repo, "hook_event_name": "PostToolUse",
                          "tool_name": "Bash", "tool_input": {"command": f"echo {proc}-{i}"},
                          "tool_response": {"stdout": f"{proc}-{i} " + "x" * (i % 7 * 900),
                                            "stderr": "", "interrupted": False, "isImage": False}})
    read_end, write_end = os.pipe()
    os.write(write_end, payload.encode())
    os.close(write_end)
    os.dup2(read_end, 0)
    os.close(read_end)
    assert hooks.main(["post-tool"]) == 0
"""


def test_four_processes_firing_500_events_each_lose_and_tear_nothing(
    repo: Path, home: Path
) -> None:
    env = {**os.environ, "GRAPHMEM_NO_WORKER": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", LOOP, str(repo), f"p{n}", "500"], env=env)
        for n in range(4)
    ]
    procs += [
        subprocess.Popen(
            [sys.executable, "-m", "graphmem.hooks", "post-tool"], env=env, stdin=subprocess.PIPE
        )
        for _ in range(8)
    ]
    for n, proc in enumerate(procs[4:]):
        proc.communicate(
            claude_post_tool_bash(str(repo), f"whole-process-{n}", f"echo w{n}"), timeout=120
        )
    assert all(p.wait(timeout=600) == 0 for p in procs)
    events = spooled(repo, home)  # json.loads on every line: a torn line would raise here
    commands = sorted(e["command"] for e in events)
    expected = sorted(
        [f"echo p{n}-{i}" for n in range(4) for i in range(500)] + [f"echo w{n}" for n in range(8)]
    )
    assert commands == expected
    assert len({e["id"] for e in events}) == len(events)


def test_fast_path_imports_nothing_heavy(repo: Path, home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "graphmem.hooks", "post-tool"],
        input=claude_post_tool_bash(str(repo), "ok"),
        capture_output=True,
        env={**os.environ, "GRAPHMEM_NO_WORKER": "1"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and result.stdout == b""
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert not imported & set(HEAVY), imported & set(HEAVY)
    assert "subprocess" not in imported  # only session-end / pre-compact start a worker
    assert len(spooled(repo, home)) == 1


def test_recent_problems_and_log_rotation(home: Path) -> None:
    hooks.log_problem("first problem with password=hunter2x", "post-tool")
    hooks.log_problem("second problem", "stop")
    lines = hooks.recent_problems()
    assert len(lines) == 2 and "event=post-tool" in lines[0] and "event=stop" in lines[1]
    assert "hunter2x" not in lines[0] and "[REDACTED:password]" in lines[0]
    log = home / "logs" / "hooks.log"
    log.write_text("old line\n" * 120_000)  # > 1 MB
    hooks.log_problem("after rotation")
    assert log.read_text().count("\n") == 1
    assert (home / "logs" / "hooks.log.1").exists()
    assert hooks.recent_problems(2) == ["old line", hooks.recent_problems(1)[0]]


def test_stdin_left_open_by_the_agent_does_not_hang_the_hook(repo: Path, home: Path) -> None:
    env = {**os.environ, "GRAPHMEM_NO_WORKER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "graphmem.hooks", "post-tool"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(claude_post_tool_bash(str(repo), "still open"))
    proc.stdin.flush()
    started = time.monotonic()
    returncode = proc.wait(timeout=30)  # stdin is still open here
    elapsed = time.monotonic() - started
    proc.stdin.close()
    stdout = proc.stdout.read()
    proc.stdout.close()
    proc.stderr.close()
    assert (returncode, stdout) == (0, b"")
    assert elapsed < 5
    assert [e["text"] for e in spooled(repo, home)] == ["still open"]
    assert "stdin still open" in problems(home)


def test_an_event_from_a_linked_worktree_names_its_checkout(repo: Path, home: Path) -> None:
    worktree = repo.parent / "repo-feature"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "-b", "feature", str(worktree)],
                   check=True)
    result = run_hook("post-tool", stdin=claude_post_tool_bash(str(worktree), "ok", "make test"))
    assert result.returncode == 0
    [event] = spooled(repo, home)
    assert event["project"] == str(repo.resolve()) and event["branch"] == "feature"
    assert event["extra"]["work_tree"] == str(worktree.resolve())
