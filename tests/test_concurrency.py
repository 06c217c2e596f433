"""Many clients, one owner: MCP sessions, CLI processes, a hook burst and a git post-commit at
once against one project; nothing lost, nothing doubled, no lock error seen by anyone."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from graphmem.staleness.install import install_hooks
from tests.conftest import git, stop_owner
from tests.test_mcp import serve_argv, server_env

pytestmark = pytest.mark.anyio

SESSIONS, ADDS_PER_SESSION = 4, 6
CLI_PROCESSES, ADDS_PER_CLI = 2, 5
HOOK_PROCESSES, EVENTS_PER_PROCESS = 4, 250

BURST = """
import json, os, sys
from graphmem.hooks import main
worker = int(sys.argv[1])
for n in range({events}):
    payload = {{"session_id": f"burst-{{worker}}", "cwd": sys.argv[2], "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {{"command": f"echo {{worker}}-{{n}}"}},
               "tool_response": {{"stdout": f"burst {{worker}} {{n}}", "stderr": ""}}}}
    read_end, write_end = os.pipe()  # the hook reads fd 0, as it does under an agent
    os.write(write_end, json.dumps(payload).encode())
    os.close(write_end)
    os.dup2(read_end, 0)
    os.close(read_end)
    assert main(["post-tool", "--agent", "claude-code"]) == 0
"""

CLI_ADDS = """
import subprocess, sys
for n in range({adds}):
    r = subprocess.run([sys.executable, "-m", "graphmem", "add", "--kind", "fact",
                        f"cli writer {{sys.argv[1]}} fact number {{n}} about the zq{{sys.argv[1]}}x{{n}} flag"],
                       capture_output=True, text=True)
    print(r.returncode, r.stderr.strip().replace("\\n", " "), flush=True)
"""


async def mcp_session(index: int, repo: Path, home: Path, latencies: list[float]) -> list[str]:
    transport = StdioTransport(command=serve_argv()[0], args=serve_argv()[1:],
                               env=server_env(home), cwd=str(repo), keep_alive=False)
    titles = []
    async with Client(transport, timeout=180) as client:
        for n in range(ADDS_PER_SESSION):
            title = f"session {index} decided item {n}: use the qv{index}y{n} codec"
            for tool, args in (("memory_add", {"kind": "decision", "title": title}),
                               ("memory_search", {"query": f"qv{index}y{n} codec"}),
                               ("memory_brief", {})):
                started = time.perf_counter()
                result = await client.call_tool(tool, args)
                latencies.append(time.perf_counter() - started)
                assert not result.is_error, result
            titles.append(title)
    return titles


async def test_everything_at_once(home: Path, repo: Path, tmp_path: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "codec.py").write_text("def encode(x):\n    return x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "codec")
    env = server_env(home, GRAPHMEM_NO_WORKER="1", GRAPHMEM_OWNER="always")
    install_hooks(repo)
    latencies: list[float] = []
    # Popen returns at once (it does not block the loop); these processes must run while the
    # MCP sessions below do.
    burst = [subprocess.Popen(  # noqa: ASYNC220
                 [sys.executable, "-c", BURST.format(events=EVENTS_PER_PROCESS), str(w), str(repo)],
                 cwd=repo, env=env)
             for w in range(HOOK_PROCESSES)]
    clis = [subprocess.Popen(  # noqa: ASYNC220
                [sys.executable, "-c", CLI_ADDS.format(adds=ADDS_PER_CLI), str(c)],
                cwd=repo, env=env, stdout=subprocess.PIPE, text=True)
            for c in range(CLI_PROCESSES)]
    try:
        sessions = asyncio.gather(*(mcp_session(i, repo, home, latencies)
                                    for i in range(SESSIONS)))
        (repo / "src" / "codec.py").write_text("def encode(x):\n    return x * 2\n")
        git(repo, "commit", "-qam", "double the codec")  # the post-commit hook runs detached
        titles = [t for group in await sessions for t in group]
        cli_lines = []
        for proc in clis:
            out, _ = proc.communicate(timeout=300)
            cli_lines += out.splitlines()
        for proc in burst:
            assert proc.wait(timeout=300) == 0
        assert all(line.startswith("0 ") for line in cli_lines), cli_lines
        assert not any("lock" in line.lower() for line in cli_lines)

        cli = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "graphmem", "ingest", "--json"], cwd=repo,
            env=env, capture_output=True, text=True, timeout=300, check=False)
        assert cli.returncode == 0, cli.stderr
        listed = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "graphmem", "list", "--limit", "1000", "--json"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=True)
        items = json.loads(listed.stdout)
        all_titles = [i["title"] for i in items]
        for title in titles:
            assert all_titles.count(title) == 1, title
        cli_titles = [t for t in all_titles if t.startswith("cli writer")]
        assert len(cli_titles) == len(set(cli_titles)) == CLI_PROCESSES * ADDS_PER_CLI
        stats = json.loads((await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "graphmem", "stats", "--json"], cwd=repo,
            env=env, capture_output=True, text=True, timeout=120, check=True)).stdout)
        assert stats["observations"] == HOOK_PROCESSES * EVENTS_PER_PROCESS
        logs = "".join(p.read_text() for p in home.rglob("*.log")) + "".join(
            p.read_text(errors="replace") for p in home.rglob("*.stderr"))
        assert "Could not set lock" not in logs
    finally:
        for proc in burst + clis:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout:
                proc.stdout.close()
        stop_owner(home, repo)
    p95 = sorted(latencies)[int(len(latencies) * 0.95)]
    print(f"\n{len(latencies)} MCP tool calls under load: p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms")
