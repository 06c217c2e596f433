"""No secret is stored by any write path: CLI add, MCP memory_add, import (JSONL and markdown),
the hook path with its evidence files. Each test greps every byte the store wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from graphmem import Config, Memory
from graphmem.exporting import to_markdown
from graphmem.mcp import build_server
from tests.capture import claude_post_tool_bash, realistic_output
from tests.conftest import stop_owner

# Built at run time so the repository never holds them whole.
GITHUB = "ghp_" + "Zq8Wn3Lx5Kv7Jt2Rm9Pb4Hc6Yd1Fs0Ga" + "Ue7T"
DB_PASSWORD = "pr0d" + "Passw0rd" + "x7Q"
AWS_KEY = "AKIA" + "Z3MSJV4WQ7DHXN2K"
SECRETS = (GITHUB, DB_PASSWORD, AWS_KEY)
FACT = (f"CI pushes with {GITHUB}; the prod db is postgres://app:{DB_PASSWORD}@db.acme.internal"
        f":5432/app and deploys use key {AWS_KEY}")


def leaks(root: Path, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """`path: secret` for every file under `root` that holds a secret's bytes."""
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {s}" for s in secrets if s.encode() in data]
    return found


def env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBED": "false",
            "GRAPHMEM_NO_WORKER": "1", **extra}


def graphmem(*args: str, cwd: Path, home: Path, stdin: bytes | None = None,
             **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=180, check=False, env=env(home, **extra))


@pytest.fixture
def owned(home: Path, repo: Path) -> Any:
    yield home
    stop_owner(home, repo)


def test_cli_add_stores_no_secret(owned: Path, repo: Path) -> None:
    done = graphmem("add", "--kind", "env", FACT, cwd=repo, home=owned)
    assert done.returncode == 0, done.stderr
    assert b"[REDACTED:" in done.stdout
    done = graphmem("add", "--title", "deploy notes", "-", cwd=repo, home=owned,
                    stdin=f"remember: {FACT}".encode())
    assert done.returncode == 0, done.stderr
    assert "db.acme.internal" in graphmem("export", cwd=repo, home=owned).stdout.decode()
    stop_owner(owned, repo)
    assert leaks(owned) == []


def test_user_patterns_and_allow_list_reach_every_write(owned: Path, repo: Path) -> None:
    extra, allow = json.dumps([r"ACME-INTERNAL-\d{6}"]), json.dumps([r"ops@acme\.io"])
    done = graphmem("add", "ticket ACME-INTERNAL-123456, mail ops@acme.io or dev@acme.io",
                    cwd=repo, home=owned, GRAPHMEM_REDACT_EXTRA=extra,
                    GRAPHMEM_REDACT_ALLOW=allow)
    assert done.returncode == 0, done.stderr
    stop_owner(owned, repo)
    assert leaks(owned, ("ACME-INTERNAL-123456", "dev@acme.io")) == []
    assert leaks(owned, ("ops@acme.io",))  # allowed: stored as typed


def test_config_patterns_apply_to_the_service(home: Path, repo: Path) -> None:
    config = Config(home=home, cwd=repo, embed=False, redact_extra=[r"tenant-(\d{5})"],
                    redact_allow=[r"AKIA[A-Z0-9]{16}"])
    with Memory(config) as memory:
        item = memory.add(f"tenant-73911 uses {AWS_KEY} and {GITHUB}")
    assert item.title == "tenant-[REDACTED:custom] uses " + AWS_KEY + " and [REDACTED:github_token]"


@pytest.mark.anyio
async def test_mcp_memory_add_stores_no_secret(home: Path, repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        async with Client(build_server(lambda: memory)) as client:
            result = await client.call_tool("memory_add", {
                "title": f"deploy key {AWS_KEY}", "body": FACT, "kind": "env"})
            assert "[REDACTED:" in json.dumps(result.structured_content)
        data_dir = memory.dir
    assert leaks(data_dir) == []


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
def test_import_stores_no_secret(owned: Path, repo: Path, tmp_path: Path, fmt: str) -> None:
    record = {"id": "0123456789abcdef", "project": "elsewhere", "kind": "env", "title":
              f"deploy key {AWS_KEY}", "body": FACT, "tags": [f"token-{GITHUB}"],
              "status": "active", "confidence": 0.9, "source": "user"}
    path = tmp_path / f"in.{fmt}"
    path.write_text(to_markdown("elsewhere", [record]) if fmt == "markdown"
                    else json.dumps(record) + "\n")
    done = graphmem("import", str(path), cwd=repo, home=owned)
    assert done.returncode == 0, done.stderr
    stop_owner(owned, repo)
    assert leaks(owned) == []


ISSUE_FORMS = {
    "prose": "the password CorrectHorseBatteryStaple9 works for staging",
    "env": "DB_PWD=Xk29sleepyOtter7",
    "block": "db:\n  password: |\n    Bl0ckScalarSecretLine\n  host: db",
    "wrapped": "DATABASE_URL=cG9zdGdyZXM6Ly9hcHA6UzNjcmV0UGFzc3cwcmRAZGIuaW50ZXJuYWw6NTQzMi9hcHA=",
}
ISSUE_SECRETS = ("CorrectHorseBatteryStaple9", "Xk29sleepyOtter7", "Bl0ckScalarSecretLine",
                 "cG9zdGdyZXM6Ly9hcHA6UzNjcmV0UGFzc3cwcmRAZGIuaW50ZXJuYWw6NTQzMi9hcHA=",
                 *SECRETS)


def test_hook_path_and_evidence_store_no_secret(owned: Path, repo: Path) -> None:
    forms = "\n".join(ISSUE_FORMS.values())
    small = claude_post_tool_bash(str(repo), f"$ cat notes\n{forms}\n{FACT}\n")
    big = claude_post_tool_bash(str(repo), realistic_output(30_000) + f"\n{forms}\n{FACT}\n"
                                + realistic_output(30_000, seed=9))
    for payload in (small, big):
        done = subprocess.run([sys.executable, "-m", "graphmem", "hook", "post-tool"],
                              input=payload, cwd=repo, env=env(owned), capture_output=True,
                              timeout=60, check=False)
        assert done.returncode == 0
    assert list(owned.rglob("evidence/*.txt")), "the big output should have left evidence"
    done = graphmem("ingest", cwd=repo, home=owned)
    assert done.returncode == 0, done.stderr
    stop_owner(owned, repo)
    assert leaks(owned, ISSUE_SECRETS) == []


def test_feedback_notes_store_no_secret(home: Path, repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        item = memory.add("Deploys need the staging key")
        memory.feedback(item.id, "wrong", f"no, it is {AWS_KEY} now")
        memory.update(item.id, tags=[f"key-{GITHUB}"])
        assert "[REDACTED:aws_access_key_id]" in memory.get_item(item.id).stale_reason
        data_dir = memory.dir
    assert leaks(data_dir) == []


def test_a_search_for_a_secret_leaves_no_secret_in_the_retrieval_log(home: Path,
                                                                    repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.add("Deploys need the staging key")
        memory.search(f"where is {GITHUB} used")
        data_dir = memory.dir
    assert (data_dir / "retrieval.jsonl").exists()
    assert leaks(data_dir) == []
