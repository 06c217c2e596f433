"""`graphmem install claude-code`: hooks in .claude/settings.json, the MCP server in .mcp.json.

Idempotent, keeps every setting of the user's, and `uninstall` removes only what carries our
marker (the `graphmem-hook` command or the `graphmem` MCP server entry).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput

MARKER = "graphmem-hook"
SERVER_NAME = "graphmem"
CLAUDE_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt",
    "PostToolUse": "post-tool",
    "PostToolUseFailure": "post-tool",
    "PreCompact": "pre-compact",
    "SessionEnd": "session-end",
}


def hook_command(event: str) -> str:
    """The lean hook entry point next to this interpreter, with a marker we can find again."""
    script = Path(sys.executable).parent / "graphmem-hook"
    if script.exists():
        return f"{shlex.quote(str(script))} {event} --agent claude-code"
    return (f"{shlex.quote(sys.executable)} -m graphmem.hooks {event} --agent claude-code "
            f"# {MARKER}")


def server_entry() -> dict[str, Any]:
    script = Path(sys.executable).parent / "graphmem"
    if script.exists():
        return {"command": str(script), "args": ["serve"]}
    return {"command": sys.executable, "args": ["-m", "graphmem", "serve"]}


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it by hand first, "
                           "graphmem will not overwrite it") from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _is_ours(hook: dict[str, Any]) -> bool:
    return MARKER in str(hook.get("command", "")) or "graphmem.hooks" in str(hook.get("command", ""))


def _without_ours(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = []
    for group in groups:
        hooks = [h for h in group.get("hooks", []) if not _is_ours(h)]
        if hooks:
            kept.append({**group, "hooks": hooks})
    return kept


def install_claude_code(root: Path) -> dict[str, Any]:
    settings_path = root / ".claude" / "settings.json"
    mcp_path = root / ".mcp.json"
    settings = _load(settings_path)
    mcp = _load(mcp_path)
    hooks = settings.setdefault("hooks", {})
    for claude_event, our_event in CLAUDE_EVENTS.items():
        groups = _without_ours(hooks.get(claude_event, []))
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": hook_command(our_event),
                                            "timeout": 10}]}
        if claude_event.startswith(("PostToolUse", "PreToolUse")):
            entry = {"matcher": "*", **entry}
        hooks[claude_event] = [*groups, entry]
    enabled = settings.setdefault("enabledMcpjsonServers", [])
    if SERVER_NAME not in enabled:
        enabled.append(SERVER_NAME)
    mcp.setdefault("mcpServers", {})[SERVER_NAME] = server_entry()
    _save(settings_path, settings)
    _save(mcp_path, mcp)
    return {"settings": str(settings_path), "mcp": str(mcp_path), "events": list(CLAUDE_EVENTS),
            "codex_snippet": codex_snippet()}


def uninstall_claude_code(root: Path) -> dict[str, Any]:
    settings_path = root / ".claude" / "settings.json"
    mcp_path = root / ".mcp.json"
    removed = 0
    if settings_path.exists():
        settings = _load(settings_path)
        hooks = settings.get("hooks", {})
        for event in list(hooks):
            before = sum(len(g.get("hooks", [])) for g in hooks[event])
            hooks[event] = _without_ours(hooks[event])
            removed += before - sum(len(g.get("hooks", [])) for g in hooks[event])
            if not hooks[event]:
                del hooks[event]
        if "hooks" in settings and not settings["hooks"]:
            del settings["hooks"]
        enabled = settings.get("enabledMcpjsonServers")
        if isinstance(enabled, list) and SERVER_NAME in enabled:
            enabled.remove(SERVER_NAME)
            if not enabled:
                del settings["enabledMcpjsonServers"]
        _save(settings_path, settings)
    if mcp_path.exists():
        mcp = _load(mcp_path)
        if mcp.get("mcpServers", {}).pop(SERVER_NAME, None) is not None:
            removed += 1
        if not mcp.get("mcpServers"):
            mcp.pop("mcpServers", None)
        if mcp:
            _save(mcp_path, mcp)
        else:
            mcp_path.unlink()
    return {"removed": removed}


def codex_snippet() -> str:
    """What to add to ~/.codex/config.toml for Codex CLI."""
    entry = server_entry()
    args = ", ".join(json.dumps(a) for a in entry["args"])
    return (f"[mcp_servers.{SERVER_NAME}]\ncommand = {json.dumps(entry['command'])}\n"
            f"args = [{args}]\n")
