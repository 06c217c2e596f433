"""Hook payloads of any depth and size, in bounded time: deep JSON is kept (its depths cut to a
marker), a 5 MB output is cut before it is redacted or trimmed, and no cut splits a secret."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from graphmem.capture.trim import clip

from . import claude_post_tool_bash, realistic_output
from .test_hooks import problems, spooled

GITHUB = "ghp_" + "Zq8Wn3Lx5Kv7Jt2Rm9Pb4Hc6Yd1Fs0Ga" + "Ue7T"


def hook(payload: bytes, cwd: Path, home: Path, **env: str) -> tuple[float, float]:
    """Run the real `graphmem hook post-tool` process; (wall, CPU) seconds."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment.update(GRAPHMEM_HOME=str(home), GRAPHMEM_NO_WORKER="1",
                       PYTHONPYCACHEPREFIX=str(home.parent / "pycache"), **env)
    with tempfile.TemporaryFile() as source, tempfile.TemporaryFile() as errors:
        source.write(payload)
        source.seek(0)
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "graphmem", "hook", "post-tool"],
                                stdin=source, stdout=subprocess.DEVNULL, stderr=errors,
                                cwd=cwd, env=environment)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        errors.seek(0)
        stderr = errors.read()
    assert proc.returncode == 0 and not stderr, stderr
    return wall, usage.ru_utime + usage.ru_stime


def deep_payload(cwd: Path, depth: int) -> bytes:
    nested = '{"a": ' * (depth // 2) + "[" * (depth // 2) + '"leaf"' + "]" * (depth // 2) \
        + "}" * (depth // 2)
    return (f'{{"session_id": "s1", "cwd": {json.dumps(str(cwd))}, "hook_event_name": '
            f'"PostToolUse", "tool_name": "Edit", "tool_input": {{"file_path": "src/a.py", '
            f'"deep": {nested}}}, "tool_response": {{"stdout": "edited"}}}}').encode()


@pytest.mark.parametrize("depth", [900, 5000, 100_000])
def test_a_deeply_nested_payload_is_kept(repo: Path, home: Path, depth: int) -> None:
    hook(deep_payload(repo, depth), repo, home)
    events = spooled(repo, home)
    assert len(events) == 1, problems(home)
    assert events[0]["tool_input"]["file_path"] == "src/a.py"
    assert "nested too deep" in json.dumps(events[0]["tool_input"]["deep"])


def test_a_deep_payload_cut_short_is_salvaged(repo: Path, home: Path) -> None:
    payload = deep_payload(repo, 5000)
    hook(payload, repo, home, GRAPHMEM_HOOK_MAX_BYTES=str(len(payload) - 100))
    events = spooled(repo, home)
    assert len(events) == 1, problems(home)
    assert events[0]["tool"] == "Edit"


def test_five_megabytes_of_output_take_bounded_time(repo: Path, home: Path) -> None:
    output = realistic_output(2_500_000) + f"\nexport GITHUB_TOKEN={GITHUB}\n" \
        + realistic_output(2_500_000, seed=3)
    payload = claude_post_tool_bash(str(repo), output)
    hook(payload, repo, home)  # warm-up: .pyc files
    runs = [hook(payload, repo, home) for _ in range(3)]
    cpu = statistics.median(c for _, c in runs)
    print(f"\n5 MB hook: wall {[round(w * 1000) for w, _ in runs]} ms, CPU median "
          f"{cpu * 1000:.0f} ms")
    assert cpu < 0.3
    events = spooled(repo, home)
    assert len(events) == 4
    evidence = list(home.rglob("evidence/*.txt"))
    assert evidence and all(p.stat().st_size < 150_000 for p in evidence)
    assert all(GITHUB not in p.read_text() for p in evidence)


@pytest.mark.parametrize("offset", range(-40, 41, 8))
@pytest.mark.parametrize("where", ["half", "limit", "tail"])
def test_a_cut_never_leaves_part_of_a_secret(where: str, offset: int) -> None:
    limit, size = 4096, 20_000
    at = {"half": limit // 2, "limit": limit, "tail": size - limit // 2}[where] + offset
    text = ("x " * size)[:size]
    text = text[:at] + GITHUB + text[at + len(GITHUB):]
    clipped = clip(text, limit)
    assert len(clipped) < limit + 200
    assert GITHUB in clipped or not any(GITHUB[i:i + 8] in clipped
                                        for i in range(len(GITHUB) - 7))
