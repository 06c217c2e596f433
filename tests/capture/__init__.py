"""Shared builders for the capture tests: realistic agent payloads, generated deterministically."""

from __future__ import annotations

import json
import random
import string


def realistic_output(size: int = 20_000, seed: int = 7) -> str:
    """Terminal output an agent's Bash tool really returns: pytest, git, pip, a traceback."""
    rng = random.Random(seed)
    hexchars = "0123456789abcdef"
    blocks = []
    while sum(map(len, blocks)) < size:
        sha = "".join(rng.choice(hexchars) for _ in range(40))
        n = rng.randint(1, 400)
        blocks.append(
            f"tests/store/test_kuzu.py::test_bulk_insert[{n}] PASSED                 [{n % 100:3d}%]\n"
            f"tests/retrieve/test_fusion.py::TestReciprocalRankFusion::test_ties FAILED [{n % 97:3d}%]\n"
            f"commit {sha}\nAuthor: dev <dev@localhost>\nDate:   Mon Nov 3 10:{n % 60:02d}:00 2025\n\n"
            f"    Fix off-by-one in SpoolReader.read_from when the final line is torn (#{n})\n\n"
            f"Collecting sentence-transformers>=6.0 (from graphmem==0.1.0)\n"
            f"  Using cached sentence_transformers-6.2.{n % 9}-py3-none-any.whl (480 kB)\n"
            f"Requirement already satisfied: numpy>=1.26 in ./.venv/lib/python3.11/site-packages\n"
            f'  File "/work/main/graphmem/store/kuzu.py", line {n}, in upsert_items\n'
            f'    conn.execute("UNWIND $rows AS r CREATE (:Item {{id: r.id}})", {{"rows": rows}})\n'
            f"RuntimeError: Binder exception: Table Item does not exist (query id {uuid(rng)})\n"
            f"docker  sha256:{''.join(rng.choice(hexchars) for _ in range(64))}  3 weeks ago  1.2GB\n"
            f"src/components/UserProfileSettingsPanel.tsx:{n}:7 - warning: unused variable 'isLoading'\n"
        )
    return "".join(blocks)[:size]


def uuid(rng: random.Random) -> str:
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def claude_post_tool_bash(
    cwd: str, stdout: str, command: str = "pytest -q", **extra: object
) -> bytes:
    """A Claude Code PostToolUse payload for the Bash tool, as the agent writes it to stdin."""
    rng = random.Random(len(stdout))
    payload = {
        "session_id": "4f1c2d3e-5a6b-7c8d-9e0f-a1b2c3d4e5f6",
        "transcript_path": "/home/dev/.claude/projects/-work-main/4f1c2d3e.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the test suite"},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
        "tool_use_id": "toolu_01" + "".join(rng.choice(string.ascii_letters) for _ in range(22)),
    }
    payload.update(extra)
    return json.dumps(payload).encode()
