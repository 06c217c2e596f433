"""Who can reach a store, and what its files let others read: real processes, a second uid.

The second uid is `nobody` (65534), reached by a child process that subprocess starts as that user;
without root those tests skip and say why.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import Config
from graphmem.errors import OwnerUnavailable
from graphmem.owner.client import open_memory
from graphmem.owner.rendezvous import socket_address
from graphmem.service import Memory
from tests.conftest import stop_owner

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="a second uid needs root to drop to (setuid nobody)")


AS_NOBODY: dict[str, Any] = {"user": NOBODY, "group": NOBODY, "extra_groups": []}


def graphmem_env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBED": "false",
            "GRAPHMEM_OWNER_IDLE": "60", **extra}


def cli(home: Path, repo: Path, *argv: str, umask: int | None = None,
        **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", *argv], cwd=repo,
                          env=graphmem_env(home, **env), capture_output=True, text=True,
                          timeout=180, umask=-1 if umask is None else umask, check=False)


# A client that knows the protocol and runs as another user: stdlib only, no graphmem import
# (nobody cannot read our venv). It prints what the socket answered to two requests.
FOREIGN_CLIENT = """
import json, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(10)
sock.connect(sys.argv[1].replace("@", "\\0", 1))
got = b""
try:
    for method in ("ping", "export_items"):
        sock.sendall(json.dumps({"method": method, "args": [], "kwargs": {},
                                 "context": {}}).encode() + b"\\n")
        chunk = sock.recv(1 << 16)
        got += chunk
        if not chunk:
            break
except OSError as exc:
    print("error:", type(exc).__name__)
print("answer:", repr(got))
"""


@pytest.fixture
def config(home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("GRAPHMEM_EMBED", "false")
    monkeypatch.setenv("GRAPHMEM_OWNER_IDLE", "60")
    return Config.from_env(home=home, cwd=repo)


# ----- the owner's socket --------------------------------------------------------------------
@needs_root
def test_the_owner_serves_nothing_to_another_uid(config: Config, home: Path, repo: Path) -> None:
    data_dir = Memory.data_dir_for(config)
    try:
        with open_memory(config, owner=True) as memory:
            memory.add("The staging password rotates every Monday", kind="fact")
            address = socket_address(data_dir)
            foreign = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", FOREIGN_CLIENT,
                                      address.replace("\0", "@", 1)], **AS_NOBODY,
                                     capture_output=True, text=True, timeout=60, check=False,
                                     cwd="/")
            assert foreign.returncode == 0, foreign.stderr
            assert "answer: b''" in foreign.stdout, foreign.stdout  # closed, nothing served
            assert "staging" not in foreign.stdout
            # and the owner still serves its own user
            assert [r["title"] for r in memory.export_items()] == [
                "The staging password rotates every Monday"]
        log = (data_dir / "logs" / "owner.log").read_text().splitlines()
        refused = [json.loads(line) for line in log if '"refused"' in line]
        assert refused and f"uid {NOBODY}" in refused[0]["error"]["message"]
    finally:
        stop_owner(home, repo)


IMPOSTOR = """
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1].replace("@", "\\0", 1))
server.listen(5)
server.settimeout(30)  # for the client's first connection
print("listening", flush=True)
received = b""
try:
    while True:
        conn, _ = server.accept()
        server.settimeout(1)  # then: anything else it sends soon after
        conn.settimeout(2)
        try:
            received += conn.recv(1 << 16)
        except OSError:
            pass
        conn.close()
except OSError:
    pass
print("received:", repr(received), flush=True)
"""


@needs_root
def test_a_client_never_talks_to_an_owner_address_held_by_another_uid(config: Config) -> None:
    """The abstract namespace is shared by all users: one could take a store's address first
    and collect what our tools send (titles, bodies, queries)."""
    address = socket_address(Memory.data_dir_for(config)).replace("\0", "@", 1)
    impostor = subprocess.Popen(["/usr/bin/python3", "-I", "-S", "-c", IMPOSTOR, address],
                                **AS_NOBODY, stdout=subprocess.PIPE, text=True,
                                cwd="/")
    try:
        assert impostor.stdout is not None and impostor.stdout.readline() == "listening\n"
        started = time.monotonic()
        with pytest.raises(OwnerUnavailable, match="uid 65534"), \
                open_memory(config, owner=True) as memory:
            memory.add("The deploy key lives in vault path ops/deploy", kind="fact")
        assert time.monotonic() - started < 10
        out, _ = impostor.communicate(timeout=30)
    finally:
        if impostor.poll() is None:
            impostor.kill()
            impostor.wait()
    assert "received: b''" in out, out


# ----- serve --http --------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}


@pytest.fixture
def http_server(home: Path, repo: Path, tmp_path: Path) -> Any:
    port = free_port()
    log = tmp_path / "serve.stderr"
    with log.open("wb") as stderr:
        server = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--http",
                                   f"127.0.0.1:{port}"], cwd=repo,
                                  env=graphmem_env(home, FASTMCP_LOG_LEVEL="WARNING"),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("serve --http did not start: " + log.read_text())
                time.sleep(0.1)
        yield port, log
    finally:
        server.terminate()
        server.wait(timeout=20)
        stop_owner(home, repo)


def post(port: int, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, timeout=30,
                      headers={"Accept": "application/json, text/event-stream", **headers})


def test_http_wants_the_token_and_loopback_names(http_server: Any, home: Path) -> None:
    port, log = http_server
    token_file = next(home.rglob("http.token"))
    token = token_file.read_text().strip()
    assert len(token) >= 32 and stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token in log.read_text()  # printed for the user to hand to the client
    bearer = {"Authorization": f"Bearer {token}"}

    assert post(port, {}).status_code == 401
    assert post(port, {"Authorization": "Bearer " + "x" * len(token)}).status_code == 401
    assert post(port, {**bearer, "Host": "evil.example"}).status_code == 403
    assert post(port, {**bearer, "Host": "evil.example:" + str(port)}).status_code == 403
    assert post(port, {**bearer, "Origin": "http://evil.example"}).status_code == 403
    assert post(port, {**bearer, "Origin": "null"}).status_code == 403
    for fine in ({}, {"Origin": f"http://localhost:{port}"}, {"Host": f"localhost:{port}"}):
        answer = post(port, {**bearer, **fine})
        assert answer.status_code == 200, (fine, answer.text)
        assert "serverInfo" in answer.text


def test_http_token_from_the_environment(home: Path, repo: Path, tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--http",
                               f"[::1]:{port}" if socket.has_ipv6 else f"127.0.0.1:{port}"],
                              cwd=repo, env=graphmem_env(home, GRAPHMEM_HTTP_TOKEN="s3cret-token-"
                                                         "from-env-0123456789"),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        host = "[::1]" if socket.has_ipv6 else "127.0.0.1"
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.post(f"http://{host}:{port}/mcp", json=INITIALIZE, timeout=30,
                                    headers={"Accept": "application/json, text/event-stream",
                                             "Authorization": "Bearer s3cret-token-from-env-"
                                                              "0123456789"})
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert answer.status_code == 200
        wrong = httpx.post(f"http://{host}:{port}/mcp", json=INITIALIZE, timeout=30,
                           headers={"Accept": "application/json, text/event-stream",
                                    "Authorization": "Bearer s3cret-token-from-env-0123456780"})
        assert wrong.status_code == 401
        assert not list(home.rglob("http.token"))
    finally:
        server.terminate()
        server.wait(timeout=20)
        stop_owner(home, repo)


def test_http_refuses_a_public_bind_unless_allowed(home: Path, repo: Path) -> None:
    from graphmem.mcp import parse_http_address

    refused = cli(home, repo, "serve", "--http", "0.0.0.0:8765")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert parse_http_address("0.0.0.0:8765", allow_remote=True) == ("0.0.0.0", 8765)


# ----- file modes ----------------------------------------------------------------------------
def loose_modes(root: Path) -> list[str]:
    """Every path under root whose mode is not exactly 0600 (files) or 0700 (directories)."""
    wrong = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o700 if path.is_dir() else 0o600
        if not path.is_symlink() and mode != expected:
            wrong.append(f"{oct(mode)} {path.relative_to(root)}")
    return wrong


def post_tool_payload(repo: Path, output: str) -> bytes:
    return json.dumps({"session_id": "s-modes", "transcript_path": "", "cwd": str(repo),
                       "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "pytest -x"},
                       "tool_response": {"stdout": output, "stderr": "", "interrupted": False},
                       }).encode()


def test_every_file_is_private_whatever_the_umask(home: Path, repo: Path,
                                                  tmp_path: Path) -> None:
    never = {"GRAPHMEM_OWNER": "never"}
    output = "\n".join(f"FAILED tests/test_db.py::test_{n} - ConnectionError: pool closed"
                       for n in range(400))
    hook = subprocess.run([sys.executable, "-m", "graphmem", "hook", "post-tool"], cwd=repo,
                          input=post_tool_payload(repo, output), capture_output=True,
                          env=graphmem_env(home, GRAPHMEM_NO_WORKER="1"), timeout=120,
                          umask=0, check=False)
    assert hook.returncode == 0
    assert list(home.rglob("evidence/*")), "the large output should have left evidence"
    steps: list[tuple[str, ...]] = [
        ("add", "--json", "The db pool closes when the worker exits early"),
        ("add", "--json", "Use make dev before running the API locally"),
        ("ingest",), ("search", "pool closes"), ("brief",), ("import-git", "--no-embed"),
        ("export", "-o", str(tmp_path / "export.jsonl")),
    ]
    ids = []
    for argv in steps:
        done = cli(home, repo, *argv, umask=0, **never)
        assert done.returncode == 0, (argv, done.stderr)
        if argv[0] == "add":
            ids.append(json.loads(done.stdout)["id"])
    assert stat.S_IMODE((tmp_path / "export.jsonl").stat().st_mode) == 0o600
    for argv in (("forget", ids[0]), ("rebuild",), ("sweep",),
                 ("import", str(tmp_path / "export.jsonl"))):
        done = cli(home, repo, *argv, umask=0, **never)
        assert done.returncode == 0, (argv, done.stderr)
    served = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--http",
                               f"127.0.0.1:{free_port()}"], cwd=repo, env=graphmem_env(home),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, umask=0)
    try:
        deadline = time.monotonic() + 60
        while not list(home.rglob("http.token")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        served.terminate()
        served.wait(timeout=20)
        stop_owner(home, repo)
    names = {p.name for p in home.rglob("*")}
    assert {"graph.kuzu", "journal.jsonl", "retrieval.jsonl", "brief.txt", "http.token",
            "evidence", "spool", "logs"} <= names, names
    assert loose_modes(home) == []


def test_doctor_repairs_wider_modes(home: Path, repo: Path) -> None:
    assert cli(home, repo, "add", "Releases are cut from the main branch",
               GRAPHMEM_OWNER="never").returncode == 0
    store = next(home.rglob("journal.jsonl")).parent
    os.chmod(store, 0o755)
    os.chmod(store / "journal.jsonl", 0o644)
    os.chmod(store / "graph.kuzu", 0o666)
    report = cli(home, repo, "doctor", "--json")
    assert report.returncode == 0, report.stderr
    repaired = json.loads(report.stdout)["repaired_modes"]
    assert {Path(p).name for p in repaired} >= {store.name, "journal.jsonl", "graph.kuzu"}
    assert loose_modes(home) == []
    again = json.loads(cli(home, repo, "doctor", "--json").stdout)
    assert again["repaired_modes"] == []
