"""Linking a bare CamelCase name (no code cue: a class or a product alike) on a real Kuzu store
whose code was indexed by the real tree-sitter indexer: the code index decides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graphmem import Config, Memory
from tests.conftest import git, stop_owner

# DolphinScheduler is a product (CVEProject/cvelist#7865), RetryPolicy the project's class.
SAID = "remember that DolphinScheduler retries a failed task through RetryPolicy"


def _symbols(memory: Memory, item_id: str) -> list[str]:
    return sorted(link["entity"]["id"] for link in memory.store.item_links(item_id)
                  if link["kind"] == "MENTIONS" and link["entity"]["kind"] == "symbol")


def _with_code(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "retry.py").write_text("class RetryPolicy:\n    attempts = 3\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "retry policy")


def test_the_code_index_keeps_a_bare_camelcase_name_only_if_it_knows_it(memory: Memory,
                                                                        repo: Path) -> None:
    before = memory.add(SAID, kind="note", dedupe=False)
    # Nothing indexed yet: both names wait as placeholders for the code that may define them.
    assert _symbols(memory, before.id) == ["symbol:?DolphinScheduler", "symbol:?RetryPolicy"]
    _with_code(repo)
    memory.index_code()
    after = memory.add(SAID + " (again)", kind="note", dedupe=False)
    assert _symbols(memory, after.id) == ["symbol:src/retry.py::RetryPolicy"]


def test_a_name_with_a_code_cue_stays_a_symbol_without_the_index(memory: Memory,
                                                                 repo: Path) -> None:
    _with_code(repo)
    memory.index_code()
    item = memory.add("the `DolphinScheduler` class retries through RetryPolicy", dedupe=False)
    assert _symbols(memory, item.id) == ["symbol:?DolphinScheduler",
                                         "symbol:src/retry.py::RetryPolicy"]


def _hook(home: Path, repo: Path, event: str, name: str, **fields: object) -> None:
    payload = json.dumps({"session_id": "sym18-live", "transcript_path": "", "cwd": str(repo),
                          "permission_mode": "default", "hook_event_name": name, **fields})
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1"}
    done = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent", "claude-code"],
                          input=payload.encode(), capture_output=True, env=env, cwd=repo,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_live_path_links_a_prompt_to_indexed_code_and_not_to_a_product(home: Path,
                                                                           repo: Path) -> None:
    """Hook processes spool the prompt; the project's owner (or ingest) derives the user's item
    and links it."""
    _with_code(repo)
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.index_code()
    _hook(home, repo, "user-prompt", "UserPromptSubmit", prompt=SAID)
    _hook(home, repo, "session-end", "SessionEnd", reason="exit")
    stop_owner(home, repo)
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.ingest()
        said = [i for i in memory.list() if "DolphinScheduler" in i.title + i.body]
        assert sorted(i.kind.value for i in said) == ["fact", "summary"]  # the user's, the session's
        for item in said:
            assert "symbol:?DolphinScheduler" not in _symbols(memory, item.id)
        [fact] = [i for i in said if i.kind.value == "fact"]
        assert _symbols(memory, fact.id) == ["symbol:src/retry.py::RetryPolicy"]


def test_a_symbol_given_with_its_file_never_links_another_files_namesake(memory: Memory,
                                                                        repo: Path) -> None:
    (repo / "src").mkdir()
    for name in ("a", "b"):
        (repo / "src" / f"{name}.py").write_text(f"def send_tls(x):\n    return x  # {name}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two send_tls")
    memory.index_code()
    given = memory.add("Closing the pool leaks a socket", kind="pitfall",
                       symbols=["src/b.py::send_tls"], dedupe=False)
    assert _symbols(memory, given.id) == ["symbol:src/b.py::send_tls"]
    # a file the index does not hold: a placeholder for it, not both send_tls of other files
    elsewhere = memory.add("Closing the pool leaks a socket, too", kind="pitfall",
                           symbols=["src/tls/pool_0.py::send_tls"], dedupe=False)
    assert _symbols(memory, elsewhere.id) == ["symbol:?src/tls/pool_0.py::send_tls"]
