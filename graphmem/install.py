"""`graphmem install claude-code|codex [--scope project|user]` and `graphmem uninstall …`.

Where each agent reads its configuration:

- Claude Code, project scope: `<checkout>/.claude/settings.json` (hooks) and `<checkout>/.mcp.json`
  (MCP server), where `<checkout>` is the work tree the command runs in: a linked git worktree's
  own root, not the main checkout's (Claude Code reads the worktree's own files). User scope:
  `~/.claude/settings.json` and `mcpServers` in `~/.claude.json`.
- Codex CLI, project scope: `<checkout>/.codex/` (loaded only once the project is trusted); user
  scope: `$CODEX_HOME`, default `~/.codex/`. Hooks go in `hooks.json`, whose shape is Claude
  Code's: `{"hooks": {"<Event>": [{"matcher"?: …, "hooks": [{"type": "command", "command": …,
  "timeout": <seconds>}]}]}}`, the root holding only `hooks` (and `description`). Sources:
  developers.openai.com/codex/hooks (hooks.json or inline `[hooks]` next to each config layer,
  one form per layer; events SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, …;
  unmanaged hooks run only once reviewed and trusted in `/hooks`, trust keyed to the hook's
  hash) and the schemastore codex-hooks schema. hooks.json rather than inline tables because it
  is JSON we can rewrite without touching the user's TOML. The MCP server is the
  `[mcp_servers.graphmem]` table of `config.toml` (`command`, `args`, `env`), written by a small
  text editor of that one table that keeps every other line, comment and table as it was.
  `env` carries GRAPHMEM_HOME because Codex starts MCP servers with a minimal environment (HOME,
  PATH, …), so a GRAPHMEM_HOME or XDG_DATA_HOME from the shell would not reach the server.

Idempotent (the same definition twice changes no byte, so Codex keeps its trust), keeps every
setting of the user's, and `uninstall` removes only what carries our marker (the `graphmem-hook`
command or the `graphmem` MCP server entry).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

from graphmem import env
from graphmem.errors import InvalidInput

MARKER = "graphmem-hook"
SERVER_NAME = "graphmem"
SCOPES = ("project", "user")
HOOK_TIMEOUT = 10
CLAUDE_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt",
    "PostToolUse": "post-tool",
    "PostToolUseFailure": "post-tool",
    "PreCompact": "pre-compact",
    "SessionEnd": "session-end",
}
CODEX_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt",
    "PostToolUse": "post-tool",
    "PreCompact": "pre-compact",
    "Stop": "stop",
}


def hook_command(event: str, agent: str = "claude-code") -> str:
    """The lean hook entry point next to this interpreter, with a marker we can find again."""
    script = Path(sys.executable).parent / "graphmem-hook"
    if script.exists():
        return f"{shlex.quote(str(script))} {event} --agent {agent}"
    return (f"{shlex.quote(sys.executable)} -m graphmem.hooks {event} --agent {agent} "
            f"# {MARKER}")


def server_entry() -> dict[str, Any]:
    script = Path(sys.executable).parent / "graphmem"
    if script.exists():
        return {"command": str(script), "args": ["serve"]}
    return {"command": sys.executable, "args": ["-m", "graphmem", "serve"]}


def checkout_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The work tree `cwd` is in (a linked worktree's own root), else `cwd` itself."""
    from graphmem.paths import work_tree

    start = Path(cwd or os.getcwd()).expanduser().resolve()
    return work_tree(start) or start


def install(agent: str, root: Path, scope: str = "project") -> dict[str, Any]:
    if agent == "codex":
        return install_codex(root, scope)
    return install_claude_code(root, scope)


def uninstall(agent: str, root: Path, scope: str = "project") -> dict[str, Any]:
    if agent == "codex":
        return uninstall_codex(root, scope)
    return uninstall_claude_code(root, scope)


def describe(result: dict[str, Any]) -> str:
    """What `install` did, for people."""
    lines = [f"hooks ({', '.join(result['events'])}) → {result['hooks']}",
             f"MCP server → {result['mcp']}"]
    return "\n".join([*lines, *result.get("notes", [])])


# ----- JSON files ------------------------------------------------------------------------------
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
    _write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
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


def _hooks_table(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"'hooks' in {path} is not an object; fix it by hand first")
    return hooks


def _add_hooks(hooks: dict[str, Any], events: dict[str, str], agent: str,
               tool_matcher: str | None) -> None:
    for agent_event, our_event in events.items():
        groups = _without_ours(hooks.get(agent_event, []))
        entry: dict[str, Any] = {"hooks": [{"type": "command",
                                            "command": hook_command(our_event, agent),
                                            "timeout": HOOK_TIMEOUT}]}
        if tool_matcher is not None and agent_event.startswith(("PostToolUse", "PreToolUse")):
            entry = {"matcher": tool_matcher, **entry}
        hooks[agent_event] = [*groups, entry]


def _remove_hooks(doc: dict[str, Any]) -> int:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        before = sum(len(g.get("hooks", [])) for g in hooks[event])
        hooks[event] = _without_ours(hooks[event])
        removed += before - sum(len(g.get("hooks", [])) for g in hooks[event])
        if not hooks[event]:
            del hooks[event]
    if not hooks:
        del doc["hooks"]
    return removed


# ----- Claude Code -----------------------------------------------------------------------------
def _claude_paths(root: Path, scope: str) -> tuple[Path, Path]:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json", Path.home() / ".claude.json"
    return root / ".claude" / "settings.json", root / ".mcp.json"


def install_claude_code(root: Path, scope: str = "project") -> dict[str, Any]:
    settings_path, mcp_path = _claude_paths(root, scope)
    settings = _load(settings_path)
    mcp = _load(mcp_path)
    _add_hooks(_hooks_table(settings, settings_path), CLAUDE_EVENTS, "claude-code", "*")
    if scope == "project":
        enabled = settings.setdefault("enabledMcpjsonServers", [])
        if SERVER_NAME not in enabled:
            enabled.append(SERVER_NAME)
    mcp.setdefault("mcpServers", {})[SERVER_NAME] = server_entry()
    _save(settings_path, settings)
    _save(mcp_path, mcp)
    return {"agent": "claude-code", "scope": scope, "hooks": str(settings_path),
            "settings": str(settings_path), "mcp": str(mcp_path), "events": list(CLAUDE_EVENTS),
            "notes": ["For Codex CLI: graphmem install codex"]}


def uninstall_claude_code(root: Path, scope: str = "project") -> dict[str, Any]:
    settings_path, mcp_path = _claude_paths(root, scope)
    removed = 0
    if settings_path.exists():
        settings = _load(settings_path)
        untouched = copy.deepcopy(settings)
        removed += _remove_hooks(settings)
        enabled = settings.get("enabledMcpjsonServers")
        if isinstance(enabled, list) and SERVER_NAME in enabled:
            enabled.remove(SERVER_NAME)
            if not enabled:
                del settings["enabledMcpjsonServers"]
        if settings != untouched:
            _save(settings_path, settings)
    removed += _remove_mcp_json(mcp_path)
    return {"removed": removed}


def _remove_mcp_json(path: Path) -> int:
    if not path.exists():
        return 0
    mcp = _load(path)
    servers = mcp.get("mcpServers")
    if not isinstance(servers, dict) or servers.pop(SERVER_NAME, None) is None:
        return 0
    if not servers:
        del mcp["mcpServers"]
    if mcp:
        _save(path, mcp)
    else:
        path.unlink()
    return 1


# ----- Codex CLI -------------------------------------------------------------------------------
def codex_dir(root: Path, scope: str) -> Path:
    if scope == "user":
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()
    return root / ".codex"


def codex_server() -> dict[str, Any]:
    from graphmem.paths import graphmem_home

    return {**server_entry(), "env": {env.name("home"): str(graphmem_home())}}


def install_codex(root: Path, scope: str = "project") -> dict[str, Any]:
    base = codex_dir(root, scope)
    hooks_path, config_path = base / "hooks.json", base / "config.toml"
    hooks_doc = _load(hooks_path)
    text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    config = _parse_toml(text, config_path)
    _add_hooks(_hooks_table(hooks_doc, hooks_path), CODEX_EVENTS, "codex", None)
    new_text = set_toml_table(text, ("mcp_servers", SERVER_NAME), codex_server(), config_path)
    _save(hooks_path, hooks_doc)
    if new_text != text:
        _write(config_path, new_text)
    notes = ["Codex runs new or changed hooks only after you trust them: open /hooks in Codex."]
    if scope == "project":
        notes.append("Codex loads a project's .codex/ only when the project is trusted.")
    features = config.get("features")
    if isinstance(features, dict) and False in (features.get("hooks"), features.get("codex_hooks")):
        notes.append(f"Hooks are turned off in {config_path} ([features] hooks = false).")
    if "hooks" in config:
        notes.append(f"{config_path} also has inline [hooks]; Codex merges both and warns.")
    return {"agent": "codex", "scope": scope, "hooks": str(hooks_path), "mcp": str(config_path),
            "events": list(CODEX_EVENTS), "notes": notes}


def uninstall_codex(root: Path, scope: str = "project") -> dict[str, Any]:
    base = codex_dir(root, scope)
    hooks_path, config_path = base / "hooks.json", base / "config.toml"
    removed = 0
    if hooks_path.exists():
        hooks_doc = _load(hooks_path)
        ours = _remove_hooks(hooks_doc)
        removed += ours
        if ours and not hooks_doc:
            hooks_path.unlink()
        elif ours:
            _save(hooks_path, hooks_doc)
    if config_path.exists():
        text = config_path.read_text(encoding="utf-8")
        new_text = set_toml_table(text, ("mcp_servers", SERVER_NAME), None, config_path)
        if new_text != text:
            removed += 1
            if new_text.strip():
                _write(config_path, new_text)
            else:
                config_path.unlink()
    return {"removed": removed}


def codex_snippet() -> str:
    """The `[mcp_servers.graphmem]` table `install codex` writes into config.toml."""
    return _render_table(("mcp_servers", SERVER_NAME), codex_server())


# ----- one TOML table, edited as text ----------------------------------------------------------
_KEY = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')'
_HEADER = re.compile(
    rf"^[ \t]*(\[\[?)[ \t]*({_KEY}(?:[ \t]*\.[ \t]*{_KEY})*)[ \t]*\]\]?[ \t]*(?:#[^\n]*)?$",
    re.MULTILINE)
_KEY_PART = re.compile(_KEY)


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it by hand first, "
                           "graphmem will not overwrite it") from exc


def _header_key(dotted: str) -> tuple[str, ...]:
    return tuple(tomllib.loads(f"k = {p}")["k"] if p[0] in "\"'" else p
                 for p in _KEY_PART.findall(dotted))


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        escaped = "".join(
            "\\\\" if c == "\\" else '\\"' if c == '"' else
            f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in value)
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}"
                                for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def _render_table(name: tuple[str, ...], values: dict[str, Any]) -> str:
    lines = [f"[{'.'.join(_toml_key(k) for k in name)}]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _table_spans(text: str, name: tuple[str, ...]) -> list[tuple[int, int]]:
    """[start, end) of the table `name` and its sub-tables: from the header to its last key
    line; blank and comment lines just above the next header stay with that header."""
    headers = list(_HEADER.finditer(text))
    spans = []
    for i, match in enumerate(headers):
        if _header_key(match.group(2))[:len(name)] != name:
            continue
        stop = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[match.start():stop].splitlines(keepends=True)
        while len(body) > 1 and (not body[-1].strip() or body[-1].lstrip().startswith("#")):
            body.pop()
        spans.append((match.start(), match.start() + len("".join(body))))
    return spans


def set_toml_table(text: str, name: tuple[str, ...], values: dict[str, Any] | None,
                   path: Path) -> str:
    """`text` with the table `name` set to `values` (None: removed), every other line as it was.

    The result is parsed again and must mean what `text` meant apart from that table; otherwise
    (say the user wrote the table inline or as dotted keys) nothing is written and the user is
    told to edit the file by hand.
    """
    before = _parse_toml(text, path)
    spans = _table_spans(text, name)
    out = text
    for start, end in reversed(spans[1:] if values is not None else spans):
        head, tail = out[:start], out[end:]
        if not tail.strip():
            head = head.rstrip("\n")
            out = head + "\n" if head else ""
        else:
            out = head + (tail[1:] if head.endswith("\n\n") and tail.startswith("\n") else tail)
    if values is not None:
        block = _render_table(name, values)
        if spans:
            start, end = spans[0]
            out = out[:start] + block + out[end:]
        elif out.strip():
            out = out + ("" if out.endswith("\n") else "\n") + "\n" + block
        else:
            out = block
    try:
        after = tomllib.loads(out)
    except tomllib.TOMLDecodeError:
        after = None
    if after is None or _without_table(after, name) != _without_table(before, name) or \
            _get(after, name) != values:
        raise InvalidInput(f"{path} defines [{'.'.join(name)}] in a form graphmem does not edit "
                           "(inline or dotted keys); change it by hand")
    return out


def _get(data: Any, name: tuple[str, ...]) -> Any:
    for key in name:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _without_table(data: dict[str, Any], name: tuple[str, ...]) -> dict[str, Any]:
    """`data` without the table `name`, nor the parents that held only it."""
    data = copy.deepcopy(data)
    for depth in range(len(name), 0, -1):
        parent = _get(data, name[:depth - 1])
        if not isinstance(parent, dict) or name[depth - 1] not in parent:
            continue
        if depth == len(name) or parent[name[depth - 1]] == {}:
            del parent[name[depth - 1]]
    return data
