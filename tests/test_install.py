"""`graphmem install claude-code` keeps the user's settings and is idempotent; uninstall undoes only ours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.errors import InvalidInput
from graphmem.install import codex_snippet, install_claude_code, uninstall_claude_code

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
