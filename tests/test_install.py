"""`graphmem install claude-code|codex` writes where the agent reads (a worktree's own files, or
the user's home), keeps the user's settings and is idempotent; uninstall undoes only ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from graphmem.errors import InvalidInput
from graphmem.install import codex_snippet, install_claude_code, uninstall_claude_code
from tests.conftest import git

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command",
                                                             "command": "prettier --write"}]}]},
}


def test_install_twice_then_uninstall_restores_user_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "dbmcp"}}}))
    install_claude_code(tmp_path)
    once = settings.read_text(), (tmp_path / ".mcp.json").read_text()
    install_claude_code(tmp_path)
    assert (settings.read_text(), (tmp_path / ".mcp.json").read_text()) == once
    data = json.loads(settings.read_text())
    assert data["permissions"] == USER_SETTINGS["permissions"]
    post = data["hooks"]["PostToolUse"]
    assert post[0] == USER_SETTINGS["hooks"]["PostToolUse"][0]
    assert "post-tool" in post[1]["hooks"][0]["command"]
    assert {"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd",
            "PostToolUseFailure"} <= set(data["hooks"])
    mcp = json.loads((tmp_path / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"db", "graphmem"}
    assert mcp["mcpServers"]["graphmem"]["args"][-1] == "serve"

    assert uninstall_claude_code(tmp_path)["removed"] == 7
    assert json.loads(settings.read_text()) == USER_SETTINGS
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"db": {"command": "dbmcp"}}}


def test_uninstall_of_a_fresh_install_leaves_no_files_behind(tmp_path: Path) -> None:
    install_claude_code(tmp_path)
    uninstall_claude_code(tmp_path)
    assert not (tmp_path / ".mcp.json").exists()
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == {}


def test_broken_settings_are_not_overwritten(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        install_claude_code(tmp_path)
    assert settings.read_text() == "{ not json"


def test_codex_snippet_is_toml_table() -> None:
    snippet = codex_snippet()
    assert snippet.startswith("[mcp_servers.graphmem]") and 'args = [' in snippet


# ----- real CLI on a temp HOME: worktrees, user scope, Codex ----------------------------------
GRAPHMEM = Path(sys.executable).parent / "graphmem"
CODEX_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt",
                "PostToolUse": "post-tool", "PreCompact": "pre-compact", "Stop": "stop"}
USER_CODEX_TOML = """# my Codex settings
model = "gpt-5-codex"  # keep this comment

[features]
web_search = true

# the database server
[mcp_servers.db]
command = "dbmcp"
args = ["--ro"]

[projects."/srv/app"]
trust_level = "trusted"
"""
USER_CODEX_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}


def cli(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GRAPHMEM), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "userhome"
    home.mkdir()
    clean = {k: v for k, v in os.environ.items()
             if k not in ("CODEX_HOME", "XDG_DATA_HOME", "GRAPHMEM_DATA_DIR", "GRAPHMEM_CWD")}
    return {**clean, "HOME": str(home), "GRAPHMEM_HOME": str(tmp_path / "gmhome"),
            "GRAPHMEM_NO_WORKER": "1"}


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots if root.exists()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


def check_codex_files(base: Path, env: dict[str, str]) -> None:
    hooks = json.loads((base / "hooks.json").read_text())["hooks"]
    assert set(CODEX_EVENTS) <= set(hooks)
    for event, ours in CODEX_EVENTS.items():
        commands = [h["command"] for g in hooks[event] for h in g["hooks"]]
        assert commands[-1].endswith(f"graphmem-hook {ours} --agent codex"), commands
        assert all(h.get("timeout") == 10 for g in hooks[event] for h in g["hooks"]
                   if "graphmem" in h["command"])
    config = tomllib.loads((base / "config.toml").read_text())
    assert config["mcp_servers"]["graphmem"] == {
        "command": str(GRAPHMEM), "args": ["serve"], "env": {"GRAPHMEM_HOME": env["GRAPHMEM_HOME"]}}


@pytest.mark.parametrize("scope", ["project", "user"])
def test_install_codex_is_idempotent_and_uninstall_restores_every_byte(
        repo: Path, env: dict[str, str], scope: str) -> None:
    home = Path(env["HOME"])
    base = repo / ".codex" if scope == "project" else home / ".codex"
    other = home / ".codex" if scope == "project" else repo / ".codex"
    base.mkdir()
    (base / "config.toml").write_text(USER_CODEX_TOML)
    (base / "hooks.json").write_text(json.dumps(USER_CODEX_HOOKS, indent=1))

    first = cli(repo, env, "install", "codex", "--scope", scope)
    assert first.returncode == 0, first.stderr
    assert "/hooks" in first.stdout  # the user is told Codex wants the new hooks trusted
    once = snapshot(base)
    assert cli(repo, env, "install", "codex", "--scope", scope).returncode == 0
    assert snapshot(base) == once
    assert not other.exists()

    check_codex_files(base, env)
    hooks = json.loads((base / "hooks.json").read_text())["hooks"]
    assert hooks["Stop"][0] == USER_CODEX_HOOKS["hooks"]["Stop"][0]
    text = (base / "config.toml").read_text()
    assert text.startswith(USER_CODEX_TOML)  # every comment and table of the user's, in place
    config = tomllib.loads(text)
    assert config["mcp_servers"]["db"] == {"command": "dbmcp", "args": ["--ro"]}
    assert config["projects"] == {"/srv/app": {"trust_level": "trusted"}}

    removed = cli(repo, env, "uninstall", "codex", "--scope", scope, "--json")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["removed"] == len(CODEX_EVENTS) + 1
    assert (base / "config.toml").read_text() == USER_CODEX_TOML
    assert json.loads((base / "hooks.json").read_text()) == USER_CODEX_HOOKS


def test_install_codex_on_a_fresh_home_and_uninstall_leaves_nothing(
        repo: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    assert cli(repo, env, "install", "codex", "--scope", "user").returncode == 0
    check_codex_files(home / ".codex", env)
    assert cli(repo, env, "uninstall", "codex", "--scope", "user").returncode == 0
    assert snapshot(home) == {}


def test_the_installed_codex_hook_spools_a_failing_command_with_its_exit_code(
        repo: Path, env: dict[str, str]) -> None:
    assert cli(repo, env, "install", "codex").returncode == 0
    hooks = json.loads((repo / ".codex" / "hooks.json").read_text())["hooks"]
    command = hooks["PostToolUse"][-1]["hooks"][0]["command"]
    payload = {"session_id": "019a-codex", "transcript_path": None, "cwd": str(repo),
               "hook_event_name": "PostToolUse", "model": "gpt-5-codex", "turn_id": "t-3",
               "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "call_9",
               "tool_input": {"command": "pytest -q"},
               "tool_response": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed\n"}
    subprocess.run(command, shell=True, input=json.dumps(payload), env=env, check=True,
                   capture_output=True, text=True, timeout=60)
    spooled = [json.loads(line) for f in Path(env["GRAPHMEM_HOME"]).rglob("spool/*")
               if f.is_file() for line in f.read_text().splitlines() if line.startswith("{")]
    event = next(e for e in spooled if e.get("event") == "post-tool")
    assert (event["agent"], event["command"], event["exit_code"], event["is_error"]) == (
        "codex", "pytest -q", 1, True)
    assert event["extra"]["turn_id"] == "t-3" and event["transcript_path"] == ""


def test_install_codex_will_not_rewrite_a_server_table_it_cannot_edit(
        repo: Path, env: dict[str, str]) -> None:
    config = repo / ".codex" / "config.toml"
    config.parent.mkdir()
    for text in ('mcp_servers = { graphmem = { command = "old" } }\n', "model = [unclosed\n"):
        config.write_text(text)
        result = cli(repo, env, "install", "codex")
        assert result.returncode == 2 and "by hand" in result.stderr
        assert config.read_text() == text
        assert not (repo / ".codex" / "hooks.json").exists()


def test_install_inside_a_linked_worktree_writes_the_worktrees_own_settings(
        repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    tree = tmp_path / "feature-tree"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    (tree / "lib").mkdir()
    for agent in ("claude-code", "codex"):
        result = cli(tree / "lib", env, "install", agent, "--json")
        assert result.returncode == 0, result.stderr
    settings = json.loads((tree / ".claude" / "settings.json").read_text())
    assert "graphmem-hook user-prompt --agent claude-code" in json.dumps(settings["hooks"])
    assert "graphmem" in json.loads((tree / ".mcp.json").read_text())["mcpServers"]
    check_codex_files(tree / ".codex", env)
    assert snapshot(repo) == {str(repo / "README.md"): b"demo\n"}  # the main checkout untouched

    assert cli(tree, env, "uninstall", "claude-code").returncode == 0
    assert cli(tree, env, "uninstall", "codex").returncode == 0
    assert json.loads((tree / ".claude" / "settings.json").read_text()) == {}
    assert not (tree / ".mcp.json").exists() and not (tree / ".codex" / "hooks.json").exists()


def test_install_claude_code_user_scope_keeps_the_users_files(
        repo: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    claude_json = {"numStartups": 12, "projects": {"/srv/app": {"allowedTools": []}},
                   "mcpServers": {"db": {"type": "stdio", "command": "dbmcp", "args": []}}}
    (home / ".claude.json").write_text(json.dumps(claude_json))

    assert cli(repo, env, "install", "claude-code", "--scope", "user").returncode == 0
    once = snapshot(home)
    assert cli(repo, env, "install", "claude-code", "--scope", "user").returncode == 0
    assert snapshot(home) == once
    assert not (repo / ".claude").exists() and not (repo / ".mcp.json").exists()
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == USER_SETTINGS["permissions"]
    assert "enabledMcpjsonServers" not in settings
    assert {"SessionStart", "UserPromptSubmit", "SessionEnd"} <= set(settings["hooks"])
    state = json.loads((home / ".claude.json").read_text())
    assert state["numStartups"] == 12 and set(state["mcpServers"]) == {"db", "graphmem"}

    assert cli(repo, env, "uninstall", "claude-code", "--scope", "user").returncode == 0
    assert json.loads((home / ".claude" / "settings.json").read_text()) == USER_SETTINGS
    assert json.loads((home / ".claude.json").read_text()) == claude_json
