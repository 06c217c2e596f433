"""Adapters: each agent's real payload shapes become the same HookEvent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.capture.adapters import detect, normalise
from graphmem.capture.event import HookEvent

BASE = {
    "session_id": "4f1c2d3e-5a6b-7c8d-9e0f-a1b2c3d4e5f6",
    "transcript_path": "/home/dev/.claude/projects/-work-app/4f1c2d3e.jsonl",
    "cwd": "/work/app",
    "permission_mode": "default",
}


def claude(event_name: str, **fields: object) -> dict:
    return {**BASE, "hook_event_name": event_name, **fields}


def codex_hook(event_name: str, **fields: object) -> dict:
    return {
        **BASE,
        "hook_event_name": event_name,
        "model": "gpt-5-codex",
        "turn_id": "t-17",
        **fields,
    }


CODEX_NOTIFY = {
    "type": "agent-turn-complete",
    "thread-id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
    "turn-id": "12345",
    "cwd": "/work/app",
    "input-messages": ["Rename `foo` to `bar` and update the callsites."],
    "last-assistant-message": "Rename complete and verified `cargo build` succeeds.",
}


@pytest.mark.parametrize(
    ("payload", "agent"),
    [
        (claude("PostToolUse", tool_name="Bash"), "claude-code"),
        (codex_hook("PostToolUse", tool_name="Bash"), "codex"),
        (CODEX_NOTIFY, "codex"),
        ({"event": "post-tool", "text": "hi"}, "generic"),
        ({}, "generic"),
    ],
)
def test_detects_the_agent_from_payload_keys(payload: dict, agent: str) -> None:
    assert detect(payload) == agent


def test_claude_bash_post_tool() -> None:
    payload = claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "pytest -q tests/test_cart.py", "description": "Run tests"},
        tool_response={
            "stdout": "1 failed, 12 passed",
            "stderr": "warning: slow",
            "interrupted": False,
            "isImage": False,
        },
        tool_use_id="toolu_01ABC",
    )
    event = normalise(payload, "post-tool")
    assert (event.agent, event.tool, event.command) == (
        "claude-code",
        "Bash",
        "pytest -q tests/test_cart.py",
    )
    assert event.text == "1 failed, 12 passed\n[stderr]\nwarning: slow"
    assert event.session_id == BASE["session_id"] and event.cwd == "/work/app"
    assert event.transcript_path == BASE["transcript_path"]
    assert event.extra["tool_use_id"] == "toolu_01ABC"
    assert event.tool_input == {
        "command": "pytest -q tests/test_cart.py",
        "description": "Run tests",
    }


def test_claude_bash_response_as_plain_string_and_interrupt() -> None:
    event = normalise(
        claude(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "ls"},
            tool_response="a.py\nb.py",
        ),
        "post-tool",
    )
    assert event.text == "a.py\nb.py"
    event = normalise(
        claude(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "sleep 9"},
            tool_response={"stdout": "", "stderr": "", "interrupted": True},
        ),
        "post-tool",
    )
    assert event.extra["interrupted"] is True


@pytest.mark.parametrize(
    ("tool", "tool_input", "response", "text"),
    [
        (
            "Edit",
            {"file_path": "/work/app/cart.py", "old_string": "x = 1\ny = 2", "new_string": "x = 3"},
            {"filePath": "/work/app/cart.py", "oldString": "x = 1", "newString": "x = 3"},
            "-x = 1\n-y = 2\n+x = 3",
        ),
        (
            "MultiEdit",
            {
                "file_path": "/work/app/cart.py",
                "edits": [
                    {"old_string": "a", "new_string": "b"},
                    {"old_string": "c", "new_string": "d"},
                ],
            },
            {"filePath": "/work/app/cart.py"},
            "-a\n+b\n-c\n+d",
        ),
        (
            "Write",
            {"file_path": "/work/app/new.py", "content": "print('hi')\n"},
            {"type": "create", "filePath": "/work/app/new.py"},
            "print('hi')\n",
        ),
        (
            "Read",
            {"file_path": "/work/app/cart.py", "offset": 10},
            {"type": "text", "file": {"filePath": "/work/app/cart.py", "content": "x = 3\n"}},
            "",
        ),
        (
            "NotebookEdit",
            {"notebook_path": "/work/app/nb.ipynb", "new_source": "df.head()"},
            {"cell_id": "c1"},
            "df.head()",
        ),
    ],
)
def test_claude_file_tools(tool: str, tool_input: dict, response: dict, text: str) -> None:
    event = normalise(
        claude("PostToolUse", tool_name=tool, tool_input=tool_input, tool_response=response),
        "post-tool",
    )
    assert event.files == [tool_input.get("file_path") or tool_input["notebook_path"]]
    assert event.text == text
    assert event.command == ""
    for bulky in ("content", "old_string", "new_string", "edits", "new_source"):
        assert bulky not in event.tool_input


def test_claude_tool_failure() -> None:
    payload = claude(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "make"},
        tool_use_id="toolu_9",
        error="Exit code 2\nmake: *** [all] Error 1",
        is_interrupt=False,
    )
    event = normalise(payload, "post-tool")
    assert event.is_error is True and event.exit_code == 2
    assert "make: *** [all] Error 1" in event.text
    assert event.extra["is_interrupt"] is False


@pytest.mark.parametrize(
    ("name", "event", "fields", "text", "extra"),
    [
        (
            "UserPromptSubmit",
            "user-prompt",
            {"prompt": "why does the spool test fail?"},
            "why does the spool test fail?",
            {},
        ),
        ("SessionStart", "session-start", {"source": "resume"}, "", {"source": "resume"}),
        (
            "SessionEnd",
            "session-end",
            {"reason": "prompt_input_exit"},
            "",
            {"reason": "prompt_input_exit"},
        ),
        (
            "PreCompact",
            "pre-compact",
            {"trigger": "auto", "custom_instructions": ""},
            "",
            {"trigger": "auto"},
        ),
        ("Stop", "stop", {"stop_hook_active": False}, "", {"stop_hook_active": False}),
        (
            "PreToolUse",
            "pre-tool",
            {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}},
            "",
            {},
        ),
    ],
)
def test_claude_lifecycle_events(
    name: str, event: str, fields: dict, text: str, extra: dict
) -> None:
    result = normalise(claude(name, **fields), event)
    assert result.event == event and result.text == text
    assert extra.items() <= result.extra.items()
    assert result.extra["hook_event_name"] == name


def test_codex_notify_turn() -> None:
    event = normalise(CODEX_NOTIFY, "stop")
    assert event.agent == "codex" and event.event == "stop"
    assert event.session_id == CODEX_NOTIFY["thread-id"] and event.cwd == "/work/app"
    assert (
        event.text.startswith("User: Rename `foo`") and "Assistant: Rename complete" in event.text
    )
    assert event.extra["turn_id"] == "12345"


def test_codex_hook_bash_and_apply_patch() -> None:
    bash = normalise(
        codex_hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "cargo test"},
            tool_response="test result: ok. 12 passed",
            tool_use_id="call_1",
        ),
        "post-tool",
    )
    assert (bash.command, bash.text, bash.extra["turn_id"]) == (
        "cargo test",
        "test result: ok. 12 passed",
        "t-17",
    )
    patch = (
        "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-fn foo()\n+fn bar()\n"
        "*** Add File: src/new.rs\n+pub mod x;\n*** Delete File: src/old.rs\n*** End Patch\n"
    )
    applied = normalise(
        codex_hook(
            "PostToolUse",
            tool_name="apply_patch",
            tool_input={"command": patch},
            tool_response={"output": "Success"},
        ),
        "post-tool",
    )
    assert applied.files == ["src/lib.rs", "src/new.rs", "src/old.rs"]
    assert applied.command == "" and "+fn bar()" in applied.text


def test_codex_hook_prompt_and_stop() -> None:
    prompt = normalise(codex_hook("UserPromptSubmit", prompt="add a flag"), "user-prompt")
    stop = normalise(
        codex_hook("Stop", last_assistant_message="Done.", stop_hook_active=False), "stop"
    )
    assert (prompt.text, stop.text) == ("add a flag", "Done.")
    assert stop.extra["model"] == "gpt-5-codex"


SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "hook-event.schema.json"


def test_generic_payload_follows_the_documented_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    example = schema["examples"][0]
    event = normalise(example, "post-tool", "generic")
    assert (event.agent, event.tool, event.command) == (
        "aider",
        "shell",
        "pytest -q tests/test_cart.py",
    )
    assert (event.files, event.exit_code, event.is_error) == (["tests/test_cart.py"], 1, True)
    documented = set(schema["properties"]) - {"event"}
    assert documented <= set(HookEvent.FIELDS), "schema documents a field HookEvent lacks"


def test_generic_payload_with_wrong_types_is_coerced() -> None:
    event = normalise(
        {
            "files": "a.py",
            "exit_code": "1",
            "is_error": "yes",
            "tool_input": [1],
            "text": {"k": "v"},
        },
        "post-tool",
        "generic",
    )
    assert event.files == ["a.py"] and event.exit_code is None and event.is_error is None
    assert event.tool_input == {} and event.text == '{"k": "v"}'


@pytest.mark.parametrize(
    ("response", "exit_code", "is_error"),
    [
        ("Exit code: 2\nWall time: 1.2 seconds\nOutput:\nerror[E0425]\n", 2, True),
        ("Chunk ID: 4f\nWall time: 0.3 seconds\nProcess exited with code 0\nOutput:\nok\n", 0, False),
        ("Exit code: 0\nOutput:\nExit code: 3\n", 0, False),
    ],
)
def test_codex_bash_exit_code_comes_from_the_output_header(
    response: str, exit_code: int, is_error: bool
) -> None:
    event = normalise(
        codex_hook("PostToolUse", tool_name="Bash", tool_input={"command": "cargo build"},
                   tool_response=response, transcript_path=None),
        "post-tool",
    )
    assert (event.exit_code, event.is_error, event.transcript_path) == (exit_code, is_error, "")


def test_claude_powershell_post_tool_is_a_command() -> None:
    # Held-out review 14 (Claude Code on Windows): the PowerShell tool runs commands as Bash does.
    payload = claude("PostToolUse", tool_name="PowerShell",
                     tool_input={"command": "entire repo clone /gh/keparlak/NumWordify", "description": "Clone"},
                     tool_response={"stdout": "Cloning into 'numwordify'...", "stderr": "", "interrupted": False})
    event = normalise(payload, "post-tool")
    assert (event.tool, event.command) == ("PowerShell", "entire repo clone /gh/keparlak/NumWordify")
