"""A project on PostgreSQL has no graph file: the prompt hook still starts an owner and gets the
memories from it (the model stays loaded there), and doctor reports the
server, the role and its grant instead of a local journal."""

from __future__ import annotations

import json
import os
from pathlib import Path

from graphmem import Config, Memory
from graphmem.doctor import diagnose, render
from graphmem.owner.client import owner_running
from graphmem.paths import DB_NAME
from tests.test_prompt_injection import hook, stop_owner, wait_for


def test_prompt_hook_and_doctor_on_a_server(postgres_url: str, repo: Path, home: Path,
                                            team) -> None:
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1",
           "GRAPHMEM_OWNER_IDLE": "60", "GRAPHMEM_DATABASE_URL": postgres_url}
    config = Config(home=home, cwd=repo, database_url=postgres_url)
    with Memory(config) as memory:
        memory.add("`git push` fails with: The current branch has no upstream branch; "
                   "`git push --set-upstream origin <branch>` worked", kind="pitfall")
        memory.add("assets/build.js uses relative entry points: run it from inside assets/ "
                   "(cd assets && node build.js)", kind="env")
        data_dir, project = memory.dir, memory.project
    assert not (data_dir / DB_NAME).exists()
    try:
        prompt = "commit and push the work on this branch"
        assert hook(repo, {**env, "GRAPHMEM_INJECT_COLD_WAIT": "0"}, "user-prompt",
                    prompt=prompt) == ""  # it starts an owner and does not wait for it
        wait_for(lambda: owner_running(data_dir), 60)
        said: list[str] = []
        wait_for(lambda: bool(said.append(hook(repo, env, "user-prompt", prompt=prompt))
                              or said[-1]), 90)
        context = json.loads(said[-1])["hookSpecificOutput"]["additionalContext"]
        assert "--set-upstream origin" in context and "build.js" not in context
    finally:
        stop_owner(data_dir)

    report = diagnose(config)
    assert report["ok"] and report["server"]["owner"] and report["server"]["last_seq"] > 0
    assert "op log:" in render(report) and "journal " not in render(report)
    owner, names, urls = team
    member = Config(home=home, cwd=repo, database_url=urls["bob"])
    report = diagnose(member)
    assert not report["ok"] and f"graphmem grant {names['bob']}" in render(report)
    owner.grant(names["bob"], project, "read")
    report = diagnose(member)
    assert report["ok"] and report["server"]["access"] == ["read"]
    assert report["server"]["records"] == 0  # op log records are seen by who wrote them
    report = diagnose(Config(home=home, cwd=repo,
                             database_url="postgresql://nobody@127.0.0.1:1/x?connect_timeout=2"))
    assert not report["ok"] and "cannot be reached" in render(report)
