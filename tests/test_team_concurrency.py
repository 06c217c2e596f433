"""A team at work on one PostgreSQL server: eight processes as three database users add memories,
spool hook events and search at once for a minute, and every acknowledged write is there exactly
once; a server that goes away mid-session loses none of the hook events spooled meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from graphmem.capture.spool import Spool
from graphmem.config import Config
from graphmem.owner.client import owner_running
from graphmem.paths import find_project
from graphmem.service import Memory
from graphmem.store.postgres import PostgresStore
from tests.postgres_server import COMMITS_KEPT, Cluster
from tests.test_prompt_injection import stop_owner, wait_for

SECONDS = 60.0

COMMON = """
import json, sys, time
from pathlib import Path
from graphmem import Config, Memory
home, repo, project, url, deadline, out = sys.argv[1:7]
config = Config(home=Path(home), cwd=Path(repo), project=project, database_url=url)
"""

ADD = COMMON + """
name = Path(out).stem
with Memory(config) as memory, open(out, "a") as acks:
    n = 0
    while time.time() < float(deadline):
        title = f"{name} learnt fact {n}: the zq{name}x{n} flag must stay off"
        item = memory.add(title, kind="fact", dedupe=False)  # alike texts: kept apart
        acks.write(json.dumps({"id": item.id, "title": title}) + "\\n")
        acks.flush()
        n += 1
"""

SEARCH = COMMON + """
searches = hits = 0
with Memory(config) as memory:
    while time.time() < float(deadline):
        hits += len(memory.search("which flag must stay off?").hits)
        searches += 1
Path(out).write_text(json.dumps({"searches": searches, "hits": hits}))
"""

SPOOL = COMMON + """
import os
from graphmem.hooks import main
session, n = Path(out).stem, 0
while time.time() < float(deadline):
    payload = {"session_id": session, "cwd": repo, "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": f"make check {n}"},
               "tool_response": {"stdout": f"check {n} passed", "stderr": ""}}
    read_end, write_end = os.pipe()  # the hook reads fd 0, as it does under an agent
    os.write(write_end, json.dumps(payload).encode())
    os.close(write_end)
    os.dup2(read_end, 0)
    os.close(read_end)
    assert main(["post-tool", "--agent", "claude-code"]) == 0
    n += 1
    time.sleep(0.02)
Path(out).write_text(str(n))
"""

INGEST = COMMON + """
with Memory(config) as memory:  # what the hooks' worker does, over and over
    while time.time() < float(deadline):
        memory.ingest()
        time.sleep(0.5)
"""


def _env(home: Path, url: str) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_DATABASE_URL": url,
            "GRAPHMEM_NO_WORKER": "1", "GRAPHMEM_OWNER": "never"}


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_eight_processes_three_users_for_a_minute(team, repo: Path, tmp_path: Path) -> None:
    owner, names, urls = team
    project = find_project(repo).name
    for who in names.values():
        owner.grant(who, project, "write")
    out = tmp_path / "out"
    out.mkdir()
    # (script, user, output): writers, a machine's hooks and its worker, searchers.
    cast = [(ADD, "alice", "alice1.jsonl"), (ADD, "alice", "alice2.jsonl"),
            (ADD, "bob", "bob1.jsonl"), (ADD, "carol", "carol1.jsonl"),
            (SPOOL, "bob", "spool-bob.txt"), (INGEST, "bob", "ingest.txt"),
            (SEARCH, "carol", "search-carol.json"), (SEARCH, "alice", "search-alice.json")]
    starts = time.time() + 20  # every process loads the model before the minute starts
    deadline = starts + SECONDS
    procs = []
    for script, who, name in cast:
        home = tmp_path / f"home-{who}"
        argv = [str(home), str(repo), project, urls[who], str(deadline), str(out / name)]
        procs.append(subprocess.Popen([sys.executable, "-c", script, *argv], cwd=repo,
                                      env=_env(home, urls[who]), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    for proc, (_, who, name) in zip(procs, cast):
        said, _ = proc.communicate(timeout=SECONDS + 600)
        assert proc.returncode == 0, f"{name} as {who}: {said[-3000:]}"
    # The worker's last run, after the hooks stopped: the CLI command the hooks start.
    bob_home = tmp_path / "home-bob"
    done = subprocess.run([sys.executable, "-m", "graphmem", "ingest"], check=False, cwd=repo,
                          env=_env(bob_home, urls["bob"]), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr

    acked: dict[str, tuple[str, str]] = {}  # id -> (title, role)
    for _, who, name in cast[:4]:
        for line in (out / name).read_text().splitlines():
            ack = json.loads(line)
            assert ack["id"] not in acked
            acked[ack["id"]] = (ack["title"], names[who])
    assert len(acked) >= 4 * 5  # each writer acknowledged several writes in the minute
    items = owner._rows("SELECT id, title, author FROM items WHERE project = %s AND kind = 'fact'",
                        (project,))
    assert {r["id"]: (r["title"], r["author"]) for r in items} == acked
    assert len(items) == len(acked) == len({t for t, _ in acked.values()})
    logged = owner._rows("SELECT r ->> 'id' AS id, count(*) AS n FROM op_log, "
                         "jsonb_array_elements(record -> 'rows') r WHERE op = 'put_items' "
                         "GROUP BY 1")
    assert {r["id"]: r["n"] for r in logged if r["id"] in acked} == dict.fromkeys(acked, 1)

    spooled = int((out / "spool-bob.txt").read_text())
    assert spooled > 100
    observed = owner._rows("SELECT count(*) AS n, count(DISTINCT id) AS ids, "
                           "count(DISTINCT command) AS commands, min(author) AS author "
                           "FROM observations WHERE session_id = 'spool-bob'")[0]
    assert observed == {"n": spooled, "ids": spooled, "commands": spooled, "author": names["bob"]}
    assert Spool.for_project(find_project(repo), bob_home).pending_bytes() == 0
    for name in ("search-carol.json", "search-alice.json"):
        ran = json.loads((out / name).read_text())
        assert ran["searches"] > 10 and ran["hits"] > 0

    before = owner.export_rows()  # the op log's order is the order the tables changed in
    owner.rebuild()
    assert owner.export_rows() == before


def _hook(repo: Path, env: dict[str, str], event: str, n: int) -> None:
    body = {"session_id": "outage", "cwd": str(repo), "hook_event_name": event,
            "tool_name": "Bash", "tool_input": {"command": f"pytest -k case{n}"},
            "tool_response": {"stdout": f"case {n} passed", "stderr": ""}}
    done = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent",
                           "claude-code"], input=json.dumps(body), cwd=repo, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_hook_events_spooled_while_the_server_is_down_arrive(repo: Path, tmp_path: Path) -> None:
    """The session's owner (warmed at session start) drains the spool into the server every few
    seconds; while the server is down its drains fail and the events wait in the spool; when
    the server is back, the owner drains them, each once, with no hook needed to notice."""
    try:
        cluster = Cluster(COMMITS_KEPT)  # what it acknowledged survives its crash
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    home = tmp_path / "home"
    env = {k: v for k, v in _env(home, cluster.url).items()
           if k not in ("GRAPHMEM_NO_WORKER", "GRAPHMEM_OWNER")}
    env.update(GRAPHMEM_OPEN_WAIT="1", GRAPHMEM_OWNER_IDLE="300")
    data_dir = Memory.data_dir_for(Config(home=home, cwd=repo, database_url=cluster.url))
    spool = Spool(data_dir / "spool")

    def observed() -> list[tuple[str, str]]:
        with psycopg.connect(cluster.url) as conn:
            return conn.execute("SELECT event, command FROM observations "  # type: ignore[return-value]
                                "WHERE session_id = 'outage' ORDER BY ts").fetchall()
    try:
        PostgresStore(cluster.url).close()  # the schema, as the first open makes it
        _hook(repo, env, "session-start", 0)
        wait_for(lambda: owner_running(data_dir), 60)
        for n in range(1, 4):
            _hook(repo, env, "post-tool", n)
        wait_for(lambda: len(observed()) == 4, 180)

        cluster.halt()
        for n in range(4, 9):  # the session goes on; its hooks still answer at once
            _hook(repo, env, "post-tool", n)
        _hook(repo, env, "pre-compact", 9)  # its worker finds no server either
        failed = subprocess.run([sys.executable, "-m", "graphmem", "ingest"], check=False,
                                cwd=repo,
                                env=env, capture_output=True, text=True, timeout=120)
        assert failed.returncode != 0 and "unavailable" in failed.stderr
        time.sleep(5)  # the owner's drains (every 2 s) fail meanwhile
        assert spool.pending_bytes() > 0 and owner_running(data_dir)

        cluster.start()
        wait_for(lambda: spool.pending_bytes() == 0 and len(observed()) >= 10, 120)
        rows = observed()
        assert [c for _, c in rows] == [f"pytest -k case{n}" for n in range(10)]
        assert [e for e, _ in rows].count("pre-compact") == 1
    finally:
        stop_owner(data_dir)
        cluster.stop()
