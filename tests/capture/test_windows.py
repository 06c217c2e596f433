"""A Claude Code session on Windows: its drive paths and backslashes are read as Git Bash writes
them, so files come out relative to the checkout and commands stay the commands that ran."""

from __future__ import annotations

import json

from graphmem.capture.adapters import normalise
from graphmem.capture.compress import compress_session
from graphmem.paths import posix_command, posix_form

CHECKOUT = "C:\\Users\\dev\\proj"
FAILED = "FAILED tests/test_app.py::test_new_user - KeyError: 'name'\n1 failed in 0.12s"
FOUND = ("Found it: `load_user` in `src/app.py` reads `name` before the profile exists, so a new account "
         "raises `KeyError`.")


def windows_session(shell: str) -> list:
    records: list[dict] = []
    events = []
    t = 1_790_000_000.0

    def record(role: str, content: object) -> None:
        nonlocal t
        t += 1
        records.append({"type": role, "uuid": f"u{len(records)}", "sessionId": "w1", "cwd": CHECKOUT,
                        "timestamp": t, "message": {"role": role, "content": content}})

    def tool(name: str, tool_input: dict, output: str, error: bool = False) -> None:
        tid = f"toolu_{len(records)}"
        record("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}])
        record("user", [{"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": error}])
        payload = {"session_id": "w1", "cwd": CHECKOUT, "hook_event_name": "PostToolUse", "tool_name": name,
                   "tool_input": tool_input, "tool_response": {"stdout": output, "stderr": "", "interrupted": False}}
        event = normalise(payload, "post-tool")
        event.project, event.ts, event.exit_code, event.is_error = CHECKOUT, t, 1 if error else 0, error
        events.append(event)

    record("user", "fix the failing test for new users")
    tool(shell, {"command": "pytest tests\\test_app.py"}, FAILED, error=True)
    record("assistant", [{"type": "text", "text": FOUND}])
    tool("Edit", {"file_path": CHECKOUT + "\\src\\app.py", "old_string": "profile.name",
                  "new_string": "profile.get('name')"}, f"The file {CHECKOUT}\\src\\app.py has been updated.")
    tool(shell, {"command": f"cd {CHECKOUT} && pytest tests\\test_app.py"}, "1 passed in 0.10s")
    tool("Write", {"file_path": "C:\\Users\\dev\\notes\\plan.md", "content": "- done"}, "File created")
    end = normalise({"session_id": "w1", "cwd": CHECKOUT, "hook_event_name": "SessionEnd"}, "session-end")
    end.project, end.ts = CHECKOUT, t + 1
    events.append(end)
    return compress_session(events, transcript="\n".join(json.dumps(r) for r in records))


def test_windows_paths_come_out_relative_to_the_checkout() -> None:
    for shell in ("PowerShell", "Bash"):
        drafts = windows_session(shell)
        summary = next(d for d in drafts if d.kind == "summary")
        assert "Files changed: src/app.py" in summary.body, (shell, summary.body)
        assert "Verified: `pytest tests/test_app.py` passed" in summary.body, (shell, summary.body)
        assert not [f for d in drafts for f in d.files if "\\" in f or ":" in f], [d.files for d in drafts]
        assert "src/app.py" in summary.files


def test_only_separating_backslashes_become_slashes() -> None:
    assert posix_form("C:\\Users\\dev\\proj") == posix_form("c:/Users/dev/proj") == "/c/Users/dev/proj"
    assert posix_form("/home/dev/proj") == "/home/dev/proj"
    assert posix_form("src\\app.py") == "src\\app.py"  # no drive: not told apart from an escape
    assert posix_command("type C:\\logs\\run.txt && pytest tests\\test_app.py") == \
        "type /c/logs/run.txt && pytest tests/test_app.py"
    # Git Bash on Windows still escapes: a regex, a printf newline, a path with no extension stay
    bash = "printf 'a\\nb' | grep -E '\\d+' foo\\.bar src\\components"
    assert posix_command(bash) == bash
    # PowerShell escapes with a backquote, so its every backslash separates
    assert posix_command("Get-Content src\\components\\App.tsx", powershell=True) == "Get-Content src/components/App.tsx"
    assert posix_command("curl http://localhost:8080/a") == "curl http://localhost:8080/a"


def test_doubled_backslashes_are_one_separator() -> None:
    # the review of session 28: a path inside double quotes in Git Bash is written with doubled backslashes
    assert posix_form("C:\\\\Users\\\\dev\\\\proj") == "/c/Users/dev/proj"
    assert posix_command('cp "C:\\\\Users\\\\dev\\\\proj\\\\src\\\\a.py" b.py') == 'cp "/c/Users/dev/proj/src/a.py" b.py'


def test_regular_expressions_keep_their_backslashes() -> None:
    # the review of session 28, L5: sed's colon-delimited expression read as drive S:, and
    # PowerShell's regex operands read as paths
    assert posix_command(r"sed -i 's:\.py:.txt:' src\app.py") == r"sed -i 's:\.py:.txt:' src/app.py"
    assert posix_command("sed 's:/usr/lib:/opt/lib:g' paths.txt") == "sed 's:/usr/lib:/opt/lib:g' paths.txt"
    ps = r"""Select-String -Path src\x.py -Pattern 'import\s+os\.path' | % { $_ -replace "\d+\w", 'N' }"""
    assert posix_command(ps, powershell=True) == \
        r"""Select-String -Path src/x.py -Pattern 'import\s+os\.path' | % { $_ -replace "\d+\w", 'N' }"""
    assert posix_command(r"[regex]::Matches($t, 'a\sb') ; type docs\a", powershell=True) == \
        r"[regex]::Matches($t, 'a\sb') ; type docs/a"
    assert posix_command(r"python 'C:\Users\dev\run.py'") == "python '/c/Users/dev/run.py'"
    # the review of session 29: a positional Select-String pattern, a drive inside a regex; and a drive path's
    # own colon (a node id, a mount, a line number) stays a path
    assert posix_command(r"Select-String 'import\s+os\.path' src\x.py", powershell=True) == \
        r"Select-String 'import\s+os\.path' src/x.py"
    assert posix_command(r"sls -Path src\x.py 'def\s+main'", powershell=True) == r"sls -Path src/x.py 'def\s+main'"
    assert posix_command(r"$p -replace 'C:\\Users\\dev', '/w'; type C:\a\b.txt", powershell=True) == \
        r"$p -replace 'C:\\Users\\dev', '/w'; type /c/a/b.txt"
    assert posix_command(r"python -m pytest C:\Users\dev\proj\tests\test_app.py::test_login -x") == \
        "python -m pytest /c/Users/dev/proj/tests/test_app.py::test_login -x"
    assert posix_command(r"docker run -v C:\Users\dev\proj:/app img") == "docker run -v /c/Users/dev/proj:/app img"
    assert posix_command(r"code -g C:\Users\dev\proj\src\app.py:42") == "code -g /c/Users/dev/proj/src/app.py:42"


def test_a_windows_path_in_another_case_is_the_checkouts_file() -> None:
    # the review of session 28: Windows names a file in any case
    for typed in ("c:\\users\\dev\\proj\\src\\app.py", "C:\\Users\\Dev\\Proj\\src\\app.py"):
        edit = {"file_path": typed, "old_string": "a", "new_string": "b"}
        event = normalise({"session_id": "w2", "cwd": CHECKOUT, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                           "tool_input": edit, "tool_response": {"filePath": typed}}, "post-tool")
        end = normalise({"session_id": "w2", "cwd": CHECKOUT, "hook_event_name": "SessionEnd"}, "session-end")
        for n, e in enumerate((event, end)):
            e.project, e.ts = CHECKOUT, 1_790_000_000.0 + n
        summary = next(d for d in compress_session([event, end]) if d.kind == "summary")
        assert "src/app.py" in summary.files, (typed, summary.body)
