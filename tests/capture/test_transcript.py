"""Claude Code transcripts: every record shape read, anything broken counted and skipped."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.capture.transcript import parse_transcript, read_transcript_text

SAMPLE = Path(__file__).parent.parent / "data" / "transcript_sample.jsonl"


def test_sample_transcript_messages_by_role() -> None:
    transcript = parse_transcript(SAMPLE)
    assert transcript.skipped == 4  # a cut line, a JSON list, an assistant without message, prose
    assert transcript.session_id == "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    roles = [m.role for m in transcript]
    assert roles[0] == "summary" and transcript[0].text == "Fix DATABASE_URL KeyError in orders tests"
    assert {"user", "assistant", "tool_result", "system", "summary"} == set(roles)
    prompts = [m.text for m in transcript.user_prompts]
    assert prompts == [
        "`pytest -k orders` fails locally with a KeyError, please find out why and fix it.",
        prompts[1],
        "We always run `make lint` before pushing.",
    ]
    assert prompts[1].startswith("FYI the staging deploy token is ghp_")
    assert "system-reminder" not in prompts[1]  # injected reminders are not the user's words


def test_tool_uses_and_results_are_paired_by_id() -> None:
    transcript = parse_transcript(SAMPLE)
    uses = {u.id: u for m in transcript if m.role == "assistant" for u in m.tool_uses}
    assert uses["toolu_01Repro"].name == "Bash"
    assert uses["toolu_01Repro"].input["command"] == "pytest -k orders"
    results = {m.tool_use_id: m for m in transcript if m.role == "tool_result"}
    assert results["toolu_01Repro"].is_error is True
    assert "KeyError: 'DATABASE_URL'" in results["toolu_01Repro"].text
    assert results["toolu_01Task"].text == "src/shop/db.py reads DATABASE_URL in connect()."  # list content
    assert results["toolu_01Edit"].is_error is False


def test_meta_sidechain_and_timestamps() -> None:
    transcript = parse_transcript(SAMPLE)
    meta = [m.text[:20] for m in transcript if m.meta and m.role == "user"]
    assert len(meta) == 3  # caveat, /clear echo, interrupt notice
    side = [m for m in transcript if m.sidechain]
    assert [m.role for m in side] == ["user", "assistant"]
    first_prompt = transcript.user_prompts[0]
    expected = datetime(2026, 11, 29, 10, 2, 11, 512000, tzinfo=UTC).timestamp()
    assert first_prompt.ts == pytest.approx(expected)  # ISO 8601 with Z → epoch
    thinking_free = next(m for m in transcript if m.role == "assistant" and m.tool_uses)
    assert "Run the failing tests first" not in thinking_free.text


def test_path_text_and_bytes_give_the_same_messages() -> None:
    text = SAMPLE.read_text()
    by_path = parse_transcript(str(SAMPLE))
    by_text = parse_transcript(text)
    by_bytes = parse_transcript(text.encode())
    assert [m.text for m in by_path] == [m.text for m in by_text] == [m.text for m in by_bytes]
    assert read_transcript_text(SAMPLE) == text


@pytest.mark.parametrize(
    ("source", "messages", "skipped"),
    [
        (None, 0, 0),
        ("", 0, 0),
        (12345, 0, 0),
        ("/no/such/transcript.jsonl", 0, 0),
        ("{not json\n", 0, 1),
        ('{"type": "user"}\n', 0, 1),
        ('{"type": "user", "message": {"role": "user", "content": 7}}\n', 0, 1),
        ('{"type": "user", "message": "plain string message"}\n', 1, 0),
        ('{"type": "assistant", "message": {"content": [null, 3, "raw", {"type": "image"}]}}\n', 1, 0),
        ('{"type": "brand-new-record", "x": 1}\n', 0, 0),
        ('{"type": 5}\n"just a string"\n', 0, 2),
        ('{"type": "user", "timestamp": "yesterday", "message": {"role": "user", "content": "hi there"}}\n', 1, 0),
        ('{"type": "user", "timestamp": 1795946531512, "message": {"content": [{"type": "text", "text": "ms"}]}}', 1, 0),
        ('{"type": "summary"}\n{"type": "system"}\n', 0, 0),
        (b"\xff\xfe{\n", 0, 1),
    ],
)
def test_junk_never_raises(source: object, messages: int, skipped: int) -> None:
    transcript = parse_transcript(source)
    assert len(transcript) == messages
    assert transcript.skipped == skipped


def test_timestamps_in_milliseconds_and_bad_ones() -> None:
    t = parse_transcript('{"type": "user", "timestamp": 1795946531512, "message": {"content": "x y"}}\n'
                         '{"type": "user", "timestamp": "yesterday", "message": {"content": "x z"}}\n')
    assert t[0].ts == pytest.approx(1795946531.512)
    assert t[1].ts is None


def test_huge_transcript_file_reads_only_its_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 1000}})
    with open(path, "w") as handle:
        handle.writelines(line + "\n" for _ in range(3000))
        handle.write(json.dumps({"type": "user", "message": {"content": "the last words"}}) + "\n")
    text = read_transcript_text(path, max_bytes=100_000)
    assert text is not None and len(text) <= 100_000
    transcript = parse_transcript(text)
    assert transcript.skipped == 0  # the cut first line is dropped, not counted as broken
    assert transcript[-1].text == "the last words"
