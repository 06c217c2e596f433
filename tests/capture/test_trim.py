"""Trimming: progress noise, stack-trace condensation, head/tail cuts with evidence by hash."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from graphmem.capture.trim import condense_traces, drop_progress, evidence_path, trim

MARKER = re.compile(r"\[… (\d+) bytes omitted, full output: evidence (sha256:[0-9a-f]{64})\]")


def test_short_clean_text_is_untouched_and_needs_no_evidence(tmp_path: Path) -> None:
    result = trim("3 passed in 0.12s\n", evidence_dir=tmp_path)
    assert result == ("3 passed in 0.12s\n", "", 18)
    assert not any(tmp_path.iterdir())


def test_large_output_keeps_head_and_tail_and_stores_the_whole(tmp_path: Path) -> None:
    text = "".join(f"line {i:05d} of the build log\n" for i in range(3000))
    result = trim(text, limit=4096, evidence_dir=tmp_path)
    assert len(result.text.encode()) <= 4096 + 200
    assert result.text.startswith("line 00000 ")
    assert result.text.rstrip().endswith("line 02999 of the build log")
    marker = MARKER.search(result.text)
    assert marker and marker.group(2) == result.evidence_ref
    kept = len(MARKER.sub("", result.text).encode())
    assert abs(len(text.encode()) - int(marker.group(1)) - kept) <= 2
    stored = evidence_path(tmp_path, result.evidence_ref)
    assert stored.read_text() == text
    assert result.evidence_ref == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert [p.name for p in tmp_path.iterdir()] == [stored.name]  # no temp file left behind


def test_limit_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_TRIM_BYTES", "1024")
    result = trim("x" * 5000, evidence_dir=tmp_path)
    assert MARKER.search(result.text)
    assert len(result.text) < 1300


def test_same_evidence_is_written_once(tmp_path: Path) -> None:
    first = trim("y\n" * 10_000, limit=1024, evidence_dir=tmp_path)
    second = trim("y\n" * 10_000, limit=1024, evidence_dir=tmp_path)
    assert first.evidence_ref == second.evidence_ref
    assert len(list(tmp_path.iterdir())) == 1


def test_multibyte_text_is_cut_on_character_boundaries(tmp_path: Path) -> None:
    text = "日本語のログ行です\n" * 2000
    result = trim(text, limit=2048, evidence_dir=tmp_path)
    result.text.encode("utf-8")  # no broken characters
    assert "日本語" in result.text


@pytest.mark.parametrize(
    ("noisy", "kept"),
    [
        (
            (
                "epoch 1\r  0%|          | 0/10 [00:00<?, ?it/s]\r100%|██████████| 10/10 [00:02<00:00]\n"
                "loss=0.12\n"
            ),
            ["loss=0.12"],
        ),
        (
            (
                "Collecting numpy\n  Downloading numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl (16 MB)\n"
                "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 16.3/16.3 MB 31.2 MB/s eta 0:00:00\n"
                "Successfully installed numpy-2.1.0\n"
            ),
            ["Collecting numpy", "Successfully installed"],
        ),
        (
            (
                "latest: Pulling from library/python\na1b2c3d4e5f6: Pulling fs layer\n"
                "a1b2c3d4e5f6: Downloading [=====>      ]  12.3MB/50MB\na1b2c3d4e5f6: Pull complete\n"
                "Status: Downloaded newer image for python:3.11\n"
            ),
            ["latest: Pulling from library/python", "Status: Downloaded newer image"],
        ),
        ("[=====>        ] 45%\nbuild ok\n", ["build ok"]),
        (
            (
                "Downloading from central: https://repo.maven.apache.org/junit-4.13.pom\n"
                "Downloaded from central: https://repo.maven.apache.org/junit-4.13.pom (25 kB at 90 kB/s)\n"
                "[INFO] BUILD SUCCESS\n"
            ),
            ["[INFO] BUILD SUCCESS"],
        ),
        (
            (
                "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
                "                                 Dload  Upload   Total   Spent    Left  Speed\n"
                "100  1256  100  1256    0     0   5123      0 --:--:-- --:--:-- --:--:--  5126\n"
                '{"ok": true}\n'
            ),
            ['{"ok": true}'],
        ),
        (
            (
                "⠙ reify:lodash: timing reifyNode:node_modules/lodash Completed in 12ms\n"
                "added 1 package in 1s\n"
            ),
            ["added 1 package in 1s"],
        ),
        (
            (
                "     0K .......... .......... .......... .......... ..........  12%  1.2M 0s\n"
                "2025-11-04 10:00:00 (3.1 MB/s) - 'data.csv' saved [421337/421337]\n"
            ),
            ["'data.csv' saved"],
        ),
    ],
)
def test_progress_noise_is_dropped(noisy: str, kept: list[str]) -> None:
    cleaned = drop_progress(noisy)
    for line in kept:
        assert line in cleaned
    assert "%|" not in cleaned and "━━" not in cleaned and "Downloading" not in cleaned
    assert re.search(r"\[… \d+ progress lines dropped\]", cleaned)


def test_progress_removal_keeps_ordinary_percentages() -> None:
    text = "tests/test_a.py::test_x PASSED [ 45%]\ncoverage: 87% of lines\n"
    assert drop_progress(text) == text


def test_dropping_progress_alone_is_recorded_as_evidence(tmp_path: Path) -> None:
    text = "  Downloading torch-2.13.0.whl (200 MB)\nSuccessfully installed torch-2.13.0\n"
    result = trim(text, evidence_dir=tmp_path)
    assert "Downloading" not in result.text and result.evidence_ref
    assert evidence_path(tmp_path, result.evidence_ref).read_text() == text


def python_trace(frames: int) -> str:
    body = "".join(
        f'  File "/app/mod{i}.py", line {i + 1}, in step{i}\n    step{i + 1}()\n    ^^^^^^^^\n'
        for i in range(frames)
    )
    return f"Traceback (most recent call last):\n{body}KeyError: 'user_id'\n"


def java_trace(frames: int) -> str:
    body = "".join(
        f"\tat com.acme.Service{i}.call(Service{i}.java:{i + 10})\n" for i in range(frames)
    )
    return f'Exception in thread "main" java.lang.IllegalStateException: pool closed\n{body}'


def js_trace(frames: int) -> str:
    body = "".join(f"    at handler{i} (/srv/app/src/h{i}.js:{i + 1}:7)\n" for i in range(frames))
    return f"TypeError: Cannot read properties of undefined (reading 'id')\n{body}"


def go_trace(frames: int) -> str:
    body = "".join(
        f"main.step{i}(0xc000012345, {{0x1, 0x2}})\n\t/src/app/main.go:{i + 3} +0x1d\n"
        for i in range(frames)
    )
    header = "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\n"
    return f"{header}{body}exit status 2\n"


@pytest.mark.parametrize(
    ("trace", "header", "first", "last", "frame_lines"),
    [
        (python_trace, "KeyError: 'user_id'", "mod0.py", "mod11.py", 3),
        (java_trace, "IllegalStateException: pool closed", "Service0.call", "Service11.call", 1),
        (js_trace, "TypeError: Cannot read properties", "handler0", "handler11", 1),
        (go_trace, "panic: runtime error", "main.step0", "main.step11", 2),
    ],
)
def test_stack_traces_keep_exception_top_three_and_bottom_three(
    trace, header: str, first: str, last: str, frame_lines: int
) -> None:
    condensed = condense_traces(trace(12))
    assert header in condensed
    assert first in condensed and last in condensed
    assert "[… 6 frames omitted]" in condensed
    for kept in (0, 1, 2, 9, 10, 11):
        assert f"{kept}" in condensed
    for dropped in ("mod5.py", "Service5.", "handler5 ", "main.step5("):
        assert dropped not in condensed
    assert len(condensed.splitlines()) == len(trace(12).splitlines()) - 6 * frame_lines + 1


@pytest.mark.parametrize("trace", [python_trace, java_trace, js_trace, go_trace])
def test_short_stack_traces_are_left_whole(trace) -> None:
    assert condense_traces(trace(6)) == trace(6)


def test_chained_java_causes_are_condensed_separately() -> None:
    text = (
        java_trace(10)
        + "Caused by: java.io.IOException: disk full\n"
        + "".join(f"\tat com.acme.Disk{i}.write(Disk{i}.java:{i})\n" for i in range(9))
        + "\t... 12 more\n"
    )
    condensed = condense_traces(text)
    assert condensed.count("frames omitted") == 2
    assert "Caused by: java.io.IOException: disk full" in condensed
    assert "... 12 more" in condensed
