"""Git hooks: install/uninstall (chained, idempotent, hooksPath, worktrees), never failing or
waiting, and a real commit whose background update lands in the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import Config, InvalidInput, StoreUnavailable
from graphmem.owner.client import RemoteMemory, owner_running
from graphmem.paths import store_dir_from_env
from graphmem.service import Memory
from graphmem.staleness import install as gh
from graphmem.store import ops
from tests.conftest import git, stop_owner

UPDATER = [sys.executable, "-m", "graphmem.staleness"]  # `graphmem stale update` without the CLI


def run_hook(path: Path, *args: str, stdin: str = "", cwd: Path | None = None
             ) -> tuple[int, float]:
    started = time.perf_counter()
    done = subprocess.run([str(path), *args], input=stdin, text=True, capture_output=True,
                          cwd=cwd, timeout=30, check=False)
    return done.returncode, time.perf_counter() - started


def test_install_is_idempotent_and_uninstall_cleans_up(repo):
    first = gh.install_hooks(repo, command=UPDATER)
    hooks = Path(first["hooks_dir"])
    assert hooks == repo / ".git" / "hooks"
    assert first["installed"] == list(gh.HOOKS) and first["chained"] == []
    for hook in gh.HOOKS:
        path = hooks / hook
        assert os.access(path, os.X_OK)
        text = path.read_text()
        assert gh.MARKER in text and sys.executable in text and "stale update" in text
    again = gh.install_hooks(repo, command=UPDATER)
    assert again["installed"] == [] and again["unchanged"] == list(gh.HOOKS)
    assert gh.hook_status(repo)["installed"] == list(gh.HOOKS)
    changed = gh.install_hooks(repo)  # a new command replaces our own scripts in place
    assert changed["installed"] == list(gh.HOOKS) and changed["chained"] == []
    assert gh.default_command()[0] in (hooks / "post-commit").read_text()
    gone = gh.uninstall_hooks(repo)
    assert gone["removed"] == list(gh.HOOKS) and gone["restored"] == []
    assert not any((hooks / h).exists() for h in gh.HOOKS)
    assert gh.uninstall_hooks(repo)["removed"] == []


def test_existing_hooks_are_chained_and_restored(repo, tmp_path):
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "log.txt"
    original = f'#!/bin/sh\necho "$(basename "$0") $*" >> {log}\ncat >> {log}\nexit 3\n'
    for hook in ("post-commit", "post-rewrite"):
        (hooks / hook).write_text(original)
        (hooks / hook).chmod(0o755)
    result = gh.install_hooks(repo, command=["/nonexistent/python", "-m", "graphmem"])
    assert result["chained"] == ["post-commit", "post-rewrite"]
    assert (hooks / "post-commit.graphmem-orig").read_text() == original
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "add a")  # our post-commit runs the original one
    old = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--amend", "-m", "add a, amended")  # post-rewrite, with stdin
    new = git(repo, "rev-parse", "HEAD")
    lines = log.read_text().splitlines()
    assert lines[0] == "post-commit.graphmem-orig "
    assert "post-rewrite.graphmem-orig amend" in lines
    assert f"{old} {new}" in lines
    code, _ = run_hook(hooks / "post-commit", cwd=repo)
    assert code == 3  # the original's status is kept; ours adds nothing
    with pytest.raises(InvalidInput, match="graphmem-orig"):
        (hooks / "post-merge").write_text("#!/bin/sh\n")
        (hooks / "post-merge.graphmem-orig").write_text("#!/bin/sh\n")
        gh.install_hooks(repo)
    (hooks / "post-merge").unlink()
    (hooks / "post-merge.graphmem-orig").unlink()
    result = gh.uninstall_hooks(repo)
    assert result["restored"] == ["post-commit", "post-rewrite"]
    assert (hooks / "post-commit").read_text() == original
    assert not (hooks / "post-commit.graphmem-orig").exists()


@pytest.mark.parametrize("setting", ["relative", "absolute"])
def test_core_hooks_path_is_respected(repo, tmp_path, setting):
    target = tmp_path / "shared-hooks" if setting == "absolute" else repo / ".githooks"
    git(repo, "config", "core.hooksPath", str(target) if setting == "absolute" else ".githooks")
    result = gh.install_hooks(repo / "." , command=UPDATER)
    assert Path(result["hooks_dir"]) == target.resolve()
    assert (target / "post-commit").exists()
    assert not (repo / ".git" / "hooks" / "post-commit").exists()


def test_worktrees_share_the_repository_hooks(repo):
    worktree = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt", str(worktree))
    result = gh.install_hooks(worktree, command=UPDATER)
    assert Path(result["hooks_dir"]) == (repo / ".git" / "hooks").resolve()
    assert gh.hooks_dir(repo / ".") == gh.hooks_dir(worktree)


def test_not_a_repository(tmp_path):
    with pytest.raises(InvalidInput, match="not a git work tree"):
        gh.install_hooks(tmp_path)
    with pytest.raises(InvalidInput, match="not a directory"):
        gh.uninstall_hooks(tmp_path / "missing")


@pytest.mark.parametrize("command", [
    ["/nonexistent/bin/python", "-m", "graphmem"],
    ["graphmem-not-installed-anywhere"],
    ["/bin/sh", "-c", "exec sleep 5", "slow"],
    ["/bin/false"],
], ids=["missing-absolute", "missing-on-path", "slow", "failing"])
def test_hooks_never_fail_or_wait(repo, command):
    hooks = Path(gh.install_hooks(repo, command=command)["hooks_dir"])
    head = git(repo, "rev-parse", "HEAD")
    cases = {"post-commit": ([], ""), "post-merge": (["0"], ""),
             "post-checkout": [[head, head, "1"], ""], "post-rewrite": (["amend"], f"{head} {head}\n")}
    for hook, (args, stdin) in cases.items():
        code, seconds = run_hook(hooks / hook, *args, stdin=stdin, cwd=repo)
        assert code == 0, hook
        assert seconds < 1.0, (hook, seconds)
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    started = time.perf_counter()
    git(repo, "commit", "-q", "-m", "commit with hooks")
    assert time.perf_counter() - started < 2.0


def test_disabled_by_environment(repo, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    hooks = Path(gh.install_hooks(repo, command=["/bin/sh", "-c", f"touch {marker}", "x"])
                 ["hooks_dir"])
    monkeypatch.setenv("GRAPHMEM_DISABLE_GIT_HOOKS", "1")
    assert run_hook(hooks / "post-commit", cwd=repo)[0] == 0
    time.sleep(0.5)
    assert not marker.exists()
    monkeypatch.delenv("GRAPHMEM_DISABLE_GIT_HOOKS")
    assert run_hook(hooks / "post-commit", cwd=repo)[0] == 0
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()


def _status_when_settled(home: Path, repo: Path, item_id: str, want: str,
                         seconds: float = 20.0) -> str:
    """Poll the store (read-only, tolerating the background writer's lock) for a status."""
    deadline = time.monotonic() + seconds
    seen = "?"
    while time.monotonic() < deadline:
        try:
            with Memory(Config(home=home, cwd=repo, embed=False), read_only=True) as memory:
                seen = memory.get_item(item_id).status.value
        except StoreUnavailable:
            pass
        if seen == want:
            return seen
        time.sleep(0.25)
    return seen


@pytest.mark.parametrize("command", [UPDATER, None], ids=["staleness-module", "default-cli"])
def test_a_real_commit_updates_the_store_in_the_background(memory, home, repo, monkeypatch,
                                                          command):
    monkeypatch.setenv("GRAPHMEM_OWNER", "never")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                                  "    return a - b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "calc")
    memory.index_code()
    added = memory.add("add sums two numbers", symbols=["add"]).id
    other = memory.add("sub subtracts", symbols=["sub"]).id
    memory.close()  # one process at a time: the hook's update opens the store itself
    gh.install_hooks(repo, command=command)
    (repo / "calc.py").write_text("def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n"
                                  "    return a - b\n")
    git(repo, "commit", "-q", "-a", "-m", "add via sum")
    assert _status_when_settled(home, repo, added, "stale") == "stale"
    journal = Memory.data_dir_for(Config(home=home, cwd=repo)) / "journal.jsonl"
    last = json.loads(journal.read_text().splitlines()[-1])
    assert (last["op"], last["by"]) == ("set_item_status", "git-hook")
    # amend back to the original code: post-rewrite makes it fresh again
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                                  "    return a - b\n")
    git(repo, "commit", "-q", "-a", "--amend", "--allow-empty", "-m", "no change after all")
    assert _status_when_settled(home, repo, added, "active") == "active"
    assert _status_when_settled(home, repo, other, "active", 1.0) == "active"


def _start_owner(home: Path, repo: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBED": "false",
           "GRAPHMEM_OWNER_IDLE": "60"}
    owner = subprocess.Popen([sys.executable, "-m", "graphmem", "owner"], cwd=repo, env=env,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    data_dir = Memory.data_dir_for(Config(home=home, cwd=repo))
    deadline = time.monotonic() + 30
    while not owner_running(data_dir):
        assert time.monotonic() < deadline, "the owner did not start"
        time.sleep(0.05)
    return owner


def _anchored_calc_item(memory: Memory, repo: Path) -> str:
    """Commit calc.py, index it, record an item anchored to `add`; close the store."""
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "calc")
    memory.index_code()
    added = memory.add("add sums two numbers", symbols=["add"]).id
    memory.close()
    return added


def test_with_an_owner_running_the_commit_is_handed_to_it(memory, home, repo, monkeypatch):
    """The owner has the store open: the hook's process only sends it the commit, importing
    neither pydantic nor Kuzu, tree-sitter or numpy."""
    monkeypatch.setenv("GRAPHMEM_OWNER", "auto")
    added = _anchored_calc_item(memory, repo)
    owner = _start_owner(home, repo)
    try:
        (repo / "calc.py").write_text("def add(a, b):\n    return sum((a, b))\n")
        git(repo, "commit", "-q", "-a", "-m", "add via sum")
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "graphmem", "stale",
                               "update", "--commit", "HEAD"], cwd=repo, capture_output=True,
                              text=True, timeout=60, check=True)
        report = json.loads(done.stdout)
        assert [s["id"] for s in report["stale"]] == [added]
        loaded = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                  for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert not loaded & {"pydantic", "kuzu", "tree_sitter", "numpy", "torch", "spacy"}
        data_dir = Memory.data_dir_for(Config(home=home, cwd=repo))
        served = [json.loads(line)["method"]
                  for line in (data_dir / "logs" / "owner.log").read_text().splitlines()]
        assert served.count("update_stale") == 1
        # the installed hook hands the next commit over the same way
        gh.install_hooks(repo)
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        git(repo, "commit", "-q", "-a", "-m", "back to plus")
        deadline = time.monotonic() + 30
        with RemoteMemory(None, data_dir, str(repo), "main", start=False) as remote:
            while remote.get_item(added).status.value != "active":
                assert time.monotonic() < deadline, "the hook's update did not land"
                time.sleep(0.1)
        journal = (data_dir / "journal.jsonl").read_text().splitlines()
        assert json.loads(journal[-1])["by"] == "git-hook"
    finally:
        stop_owner(home, repo)
        owner.wait(timeout=30)


@pytest.mark.parametrize("env", [{}, {"GRAPHMEM_DATA_DIR": "elsewhere"}, {"GRAPHMEM_CWD": "sub"}])
def test_the_hook_finds_the_store_config_finds(home, repo, monkeypatch, env):
    """stalehook locates the store without pydantic; it must agree with Config."""
    (repo / "sub").mkdir()
    for key, value in env.items():
        monkeypatch.setenv(key, str(repo / value))
    monkeypatch.chdir(repo / "sub")
    assert store_dir_from_env(None) == Memory.data_dir_for(Config.from_env())
    assert store_dir_from_env(str(repo)) == Memory.data_dir_for(Config.from_env(cwd=repo))


def test_a_graph_behind_its_journal_is_caught_up_before_the_update(memory, home, repo,
                                                                    monkeypatch):
    """The lean path only writes to a graph that has every journal record; otherwise Memory's
    catch-up runs first (a crash between journal and graph is healed, not built upon)."""
    from graphmem.staleness import hook as stalehook

    monkeypatch.setenv("GRAPHMEM_OWNER", "never")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "calc")
    memory.index_code()
    added = memory.add("add sums two numbers", symbols=["add"]).id
    memory.journal.append(ops.UpdateItems([added], {"importance": 0.9}))
    memory.close()  # the graph never saw that record, as after a crash
    (repo / "calc.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    git(repo, "commit", "-q", "-a", "-m", "add via sum")
    report = stalehook.update(str(repo), commit="HEAD")
    assert [s["id"] for s in report["stale"]] == [added]
    with Memory(Config(home=home, cwd=repo, embed=False)) as after:
        item = after.get_item(added)
        assert (item.status.value, item.importance) == ("stale", 0.9)
        assert after.store.applied_seq == after.journal.last_seq()


def _update_at_head(checkout: Path) -> dict:
    """What the post-commit hook runs in `checkout`, its report."""
    done = subprocess.run([sys.executable, "-m", "graphmem", "stale", "update", "--commit",
                           "HEAD"], cwd=checkout, capture_output=True, text=True, timeout=60,
                          check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("owner_mode", ["auto", "never"])
def test_a_commit_in_a_linked_worktree_is_read_in_that_worktree(memory, home, repo, monkeypatch,
                                                                 owner_mode):
    """Worktrees share one store and one owner, but each has its own HEAD: the hook's commit is
    the worktree's, whether the owner (started in the main checkout) or the hook applies it."""
    monkeypatch.setenv("GRAPHMEM_OWNER", owner_mode)
    added = _anchored_calc_item(memory, repo)
    worktree = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    owner = _start_owner(home, repo) if owner_mode == "auto" else None
    try:
        (worktree / "calc.py").write_text("def add(a, b):\n    return sum((a, b))\n")
        git(worktree, "commit", "-q", "-a", "-m", "add via sum")
        report = _update_at_head(worktree)
        assert [s["id"] for s in report["stale"]] == [added]
        assert report["target"] == git(worktree, "rev-parse", "HEAD").strip()
        if owner is not None:  # the owner re-anchors to the caller's checkout too
            from graphmem.owner.client import open_memory

            with open_memory(Config(home=home, cwd=worktree)) as remote:
                assert isinstance(remote, RemoteMemory)
                assert remote.verify(added)["commit"] == report["target"]
    finally:
        if owner is not None:
            stop_owner(home, repo)
            owner.wait(timeout=30)


def test_a_commit_on_another_branch_does_not_undo_this_ones_staleness(memory, home, repo,
                                                                       monkeypatch):
    """The store remembers the last commit it applied; a worktree on another branch must not
    diff from there (that diff would carry the other branch's change back)."""
    monkeypatch.setenv("GRAPHMEM_OWNER", "never")
    added = _anchored_calc_item(memory, repo)
    worktree = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    (repo / "calc.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    git(repo, "commit", "-q", "-a", "-m", "add via sum")
    assert [s["id"] for s in _update_at_head(repo)["stale"]] == [added]
    (worktree / "README.md").write_text("docs\n")
    git(worktree, "commit", "-q", "-a", "-m", "docs")
    assert added not in [f["id"] for f in _update_at_head(worktree)["fresh"]]
    with Memory(Config(home=home, cwd=repo)) as again:
        assert again.get_item(added).status.value == "stale"
