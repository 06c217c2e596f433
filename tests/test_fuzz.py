"""Seeded fuzzing (hypothesis is not installed) of what graphmem reads from outside: hook
payloads, import files and CLI arguments. Every case ends in a result or one of our clean errors,
never an unexpected exception, and within a time bound. A failure prints its seed and case."""

from __future__ import annotations

import io
import json
import os
import random
import re
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from graphmem import Config, Memory, hooks
from graphmem.capture.adapters import normalise
from graphmem.cli import main as cli_main
from graphmem.errors import GraphmemError
from graphmem.exporting import read_export, to_markdown

SEED = 15
CASE_SECONDS = 2.0
NASTY = ["", " ", "\x00", "\x1b[31m", "\udcff", "\u202e", "../../x", "-", "--", "--json", "{}",
         "[]", "null", "0", "-1", "1e309", "NaN", "x" * 5000, "## heading", "<!-- graphmem: {} -->",
         "ghp_" + "a1B2c3D4e5" * 4, "/", "~", "*", "%s", "$(rm -rf /)", "é", "🙂", "\n\n"]
KEYS = ["session_id", "cwd", "hook_event_name", "tool_name", "tool_input", "tool_response",
        "prompt", "transcript_path", "stdout", "stderr", "command", "file_path", "content",
        "exit_code", "type", "input", "output", "success", "is_error", "last-assistant-message"]


def text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(NASTY)
    size = rng.choice([0, 1, 5, 40, 300, 3000])
    alphabet = string.printable + "éß中🙂\u2028\x00\x07"
    return "".join(rng.choice(alphabet) for _ in range(size))


def value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 6 or roll < 0.35:
        return text(rng)
    if roll < 0.5:
        return rng.choice([None, True, False, 0, -1, 2**70, 3.5, float("1e308")])
    if roll < 0.75:
        return {rng.choice(KEYS + [text(rng)]): value(rng, depth + 1)
                for _ in range(rng.randint(0, 5))}
    return [value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def payload(rng: random.Random, cwd: Path) -> bytes:
    """A hook payload: random, or a real-looking one mutated (cut, flipped, nested, wrong types)."""
    base: dict[str, Any] = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "PostToolUse",
                            "tool_name": "Bash", "tool_input": {"command": "pytest -q"},
                            "tool_response": {"stdout": "1 passed", "stderr": ""}}
    for _ in range(rng.randint(0, 4)):
        base[rng.choice(KEYS)] = value(rng)
    deep = rng.choice([0, 0, 0, 50, 900, 3000])
    base["tool_input"] = {"deep": "DEEP"} if deep else base["tool_input"]
    raw = json.dumps(base, ensure_ascii=rng.random() < 0.5, default=str).encode("utf-8", "replace")
    opened = "".join(rng.choice(['[', '{"k": ']) for _ in range(deep))
    closed = "".join("]" if c == "[" else "}" for c in reversed(opened.replace('{"k": ', "{")))
    raw = raw.replace(b'"DEEP"', f'{opened}"leaf"{closed}'.encode())
    roll = rng.random()
    if roll < 0.2:
        raw = raw[: rng.randint(0, len(raw))]
    elif roll < 0.35:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        raw = bytes(data)
    elif roll < 0.45:
        raw = json.dumps(value(rng)).encode()
    return raw


def test_hook_payloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    rng = random.Random(SEED)
    cwd = tmp_path / "repo"
    cwd.mkdir()
    for case in range(150):
        raw = payload(rng, cwd)
        event = rng.choice(["post-tool", "pre-tool", "user-prompt", "stop", "post-tool"])
        started = time.perf_counter()
        try:
            parsed = hooks._parse_payload(raw, len(raw), event)
            hook_event = normalise(parsed, event, rng.choice(["claude-code", "codex", "generic"]))
            hook_event.cwd = str(cwd)
            hooks._store(hook_event, hooks.find_project(str(cwd)), 0)
        except Exception as exc:  # noqa: BLE001 - the point: report the case that broke
            pytest.fail(f"seed {SEED} case {case}: {type(exc).__name__}: {exc}\n{raw[:300]!r}")
        assert time.perf_counter() - started < CASE_SECONDS, (case, raw[:200])


def export_file(rng: random.Random, tmp_path: Path, case: int) -> Path:
    records = [{"id": f"r{case}x{i}", "kind": rng.choice(["fact", "note", "decision", "bogus"]),
                "title": text(rng) or "t", "body": text(rng), "tags": [text(rng)],
                "status": "active", "confidence": rng.choice([0.5, 2, "x", None]),
                "source": "user", "files": rng.choice([[], ["src/a.py"], "a.py", [1], 5, {"a": 1}])}
               for i in range(rng.randint(1, 3))]
    for record in records:
        for _ in range(rng.randint(0, 2)):
            record[rng.choice(list(record) + KEYS)] = value(rng)
    markdown = rng.random() < 0.5
    try:
        content = (to_markdown("p", records) if markdown
                   else "".join(json.dumps(r, default=str) + "\n" for r in records))
    except (KeyError, TypeError, ValueError, AttributeError):
        content = json.dumps(records, default=str)
    if rng.random() < 0.1:
        content += "[" * 5000 + "]" * 5000 + "\n"
    data = bytearray(content.encode("utf-8", "replace"))
    for _ in range(rng.choice([0, 0, 1, 3])):
        at = rng.randrange(len(data) + 1)
        data[at:at + rng.randint(0, 20)] = text(rng).encode("utf-8", "replace")[:20]
    path = tmp_path / f"case{case}.{'md' if markdown else 'jsonl'}"
    path.write_bytes(bytes(data))
    return path


def test_import_files(home: Path, repo: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.add("Warm up: the text models load once, outside the time bound")
        for case in range(80):
            path = export_file(rng, tmp_path, case)
            started = time.perf_counter()
            try:
                memory.import_items(read_export(path))
            except GraphmemError:
                pass
            except Exception as exc:  # noqa: BLE001 - the point: report the case that broke
                pytest.fail(f"seed {SEED} case {case}: {type(exc).__name__}: {exc}\n"
                            f"{path.read_bytes()[:400]!r}")
            assert time.perf_counter() - started < CASE_SECONDS, (case, path.read_bytes()[:200])


# Commands that serve, install into an agent, or load the embedding model are left out.
CLI_COMMANDS = ["add", "brief", "entities", "evidence", "export", "extract", "feedback", "forget",
                "get", "git", "graph", "history", "list", "log", "redact", "related", "restore",
                "search", "stale", "stats", "sweep", "verify", "where", "init"]
CLI_WORDS = ["--json", "--kind", "--file", "--symbol", "--tag", "-k", "--limit", "--budget",
             "--status", "--title", "--format", "--all-projects", "--dry-run", "--explain",
             "decision", "note", "active", "status", "helpful", "wrong", "markdown", "0", "-5",
             "99999999999999999999", "3.7"]


def test_cli_arguments(home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GRAPHMEM_OWNER", "never")
    monkeypatch.setenv("GRAPHMEM_EMBED", "false")
    monkeypatch.chdir(repo)
    rng = random.Random(SEED)
    cli_main(["add", "Warm up: the text models load once, outside the time bound"])
    for case in range(60):
        argv = [rng.choice([*CLI_COMMANDS, "import", "eval"])]
        if argv[0] in ("import", "eval"):
            argv += [rng.choice([str(export_file(rng, tmp_path, case)), str(tmp_path), "none"])
                     for _ in range(1 + (argv[0] == "eval"))]
        argv += [rng.choice(CLI_WORDS) if rng.random() < 0.5 else text(rng)[:300]
                 for _ in range(rng.randint(0, 4))]
        stdin = text(rng).encode("utf-8", "surrogatepass")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        started = time.perf_counter()
        try:
            code = cli_main(argv)
        except SystemExit as exc:  # argparse's usage error: one line and exit 2
            code = exc.code
        except Exception as exc:  # noqa: BLE001 - the point: report the case that broke
            pytest.fail(f"seed {SEED} case {case}: graphmem {argv!r}: {type(exc).__name__}: {exc}")
        capsys.readouterr()
        assert code in (0, 1, 2, 3, 4, None), (case, argv, code)
        assert time.perf_counter() - started < 3 * CASE_SECONDS, (case, argv)


def test_hook_processes(tmp_path: Path) -> None:
    """A few of the same payloads through the real process: exit 0, nothing on stdout or
    stderr, and no event lost to an exception (the hook logs those instead of failing)."""
    rng = random.Random(SEED + 1)
    cwd = tmp_path / "repo"
    cwd.mkdir()
    env = {**os.environ, "GRAPHMEM_HOME": str(tmp_path / "home"), "GRAPHMEM_NO_WORKER": "1"}
    for case in range(10):
        raw = payload(rng, cwd)
        done = subprocess.run([sys.executable, "-m", "graphmem", "hook", "post-tool"], input=raw,
                              cwd=cwd, env=env, capture_output=True, timeout=30, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (case, raw[:300])
    log = tmp_path / "home" / "logs" / "hooks.log"
    crashes = [line for line in (log.read_text().splitlines() if log.exists() else [])
               if "could not spool" in line or re.search(r"event=\S+ \w+(Error|Exception):", line)]
    assert crashes == []
