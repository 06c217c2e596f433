"""Keep stored tool output small: drop progress noise, condense stack traces, cut huge text.

Whenever anything is dropped, the full (already redacted) text is written once to
`<store>/evidence/<sha256>.txt` and the event carries `evidence_ref = "sha256:<hex>"`, so memory
can always be traced back to exactly what the agent saw. Stdlib only (hook fast path).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import NamedTuple

from graphmem import env
from graphmem.paths import private_dir, private_opener

FRAMES_KEPT = 3


class Trimmed(NamedTuple):
    """What to store, the evidence reference ("" when nothing was dropped) and the input size."""

    text: str
    evidence_ref: str
    original_bytes: int


def limit_from_env() -> int:
    """GRAPHMEM_TRIM_BYTES, else 8 KB."""
    return max(512, env.integer("trim_bytes"))


def evidence_limit_from_env() -> int:
    """GRAPHMEM_EVIDENCE_BYTES, else 128 KB: the most of one output the hook keeps at all."""
    return max(4096, env.integer("evidence_bytes"))


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.:@%")


def clip(text: str, limit: int) -> str:
    """Head and tail of `text` within about `limit` characters, cut where no word or token is
    split (a half secret would no longer look like one), around a marker naming what was cut.

    Run before redaction and trimming so their cost does not grow with what is thrown away."""
    if len(text) <= limit:
        return text
    head_end = _token_start(text, limit // 2)
    tail_start = _token_end(text, len(text) - limit // 2)
    marker = f"\n[… {tail_start - head_end} characters cut before storing]\n"
    return text[:head_end] + marker + text[tail_start:]


def _token_start(text: str, at: int) -> int:
    """`at`, moved back to the start of the token it falls in; a token of 4 KB or more is cut
    where it is (what is left of it is as long and as random as a whole one)."""
    start = at
    while start > 0 and at - start < 4096 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    return start if at - start < 4096 else at


def _token_end(text: str, at: int) -> int:
    end = at
    while end < len(text) and end - at < 4096 and text[end] in _TOKEN_CHARS:
        end += 1
    return end if end - at < 4096 else at


def trim(text: str, *, limit: int | None = None, evidence_dir: Path | None = None) -> Trimmed:
    """Clean `text` and fit it into `limit` bytes; keep the full text as evidence if it changed."""
    limit = limit or limit_from_env()
    size = len(text.encode("utf-8", "replace"))
    cleaned = condense_traces(drop_progress(text))
    if cleaned == text and size <= limit:
        return Trimmed(text, "", size)
    ref = evidence_ref(text)
    if evidence_dir is not None:
        write_evidence(evidence_dir, text, ref)
    if len(cleaned.encode("utf-8", "replace")) > limit:
        cleaned = cut(cleaned, limit, ref)
    return Trimmed(cleaned, ref, size)


def evidence_ref(text: str) -> str:
    """`sha256:<hex>` of the text's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def evidence_path(evidence_dir: Path, ref: str) -> Path:
    """Where the evidence for `ref` lives."""
    return evidence_dir / (ref.split(":", 1)[-1] + ".txt")


def write_evidence(evidence_dir: Path, text: str, ref: str | None = None) -> str:
    """Store `text` under its hash, atomically (temp file + rename); returns the reference."""
    ref = ref or evidence_ref(text)
    target = evidence_path(evidence_dir, ref)
    if target.exists():
        return ref
    private_dir(evidence_dir)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb", opener=private_opener) as handle:
        handle.write(text.encode("utf-8", "replace"))
    os.replace(tmp, target)
    return ref


def cut(text: str, limit: int, ref: str) -> str:
    """Head and tail of `text` around a marker naming the omitted bytes and the evidence."""
    data = text.encode("utf-8", "replace")
    budget = max(64, limit - 120)
    head = _line_floor(data[: budget * 3 // 5])
    tail = _line_ceil(data[len(data) - (budget - len(head)) :])
    omitted = len(data) - len(head) - len(tail)
    marker = f"[… {omitted} bytes omitted, full output: evidence {ref}]"
    head_text = head.decode("utf-8", "ignore").rstrip("\n")
    tail_text = tail.decode("utf-8", "ignore").lstrip("\n")
    return f"{head_text}\n{marker}\n{tail_text}"


def _line_floor(chunk: bytes) -> bytes:
    """Cut back to the last newline unless that loses more than a fifth of the chunk."""
    newline = chunk.rfind(b"\n")
    return chunk[: newline + 1] if newline >= len(chunk) * 4 // 5 else chunk


def _line_ceil(chunk: bytes) -> bytes:
    newline = chunk.find(b"\n")
    return chunk[newline + 1 :] if 0 <= newline <= len(chunk) // 5 else chunk


# --- progress noise -----------------------------------------------------------------------------

# Progress patterns, grouped by the hint that finds their lines; each compiled on first use.
_PERCENT = (
    r"\d{1,3}(?:\.\d+)?%\s*(?:\||\[[=#>\-\s.]{3,}\])"  # tqdm 45%|██▌ |, wget 45%[====>  ]
    r"|\[[=#>\-\s.]{4,}\]\s*\d{1,3}(?:\.\d+)?%"  # [=====>    ] 45%
    r"|^\s*\d+K(?:\s+\.{10})+\s+\d+%"  # wget dots
    r"|^\s*%\s+Total\s+%\s+Received"  # curl progress meter header
)
_BARS = r"[━╸╺]{6,}|[█▉▊▋▌▍▎▏░▒▓]{3,}"  # pip / rich / block-character bars
_SPINNER = r"^\s*[⠀-⣿]\s"  # braille spinners (npm, ora)
_CHATTER = (
    r"^\s*(?:Downloading|Downloaded|Progress\s*\(\d+\))"  # pip, maven, cargo, npm
    r"|^[0-9a-f]{12}:\s+(?:Downloading|Extracting|Waiting|Verifying Checksum|Download complete"
    r"|Pulling fs layer|Pull complete|Already exists)"  # docker pull
)
_CURL = (
    r"^\s*Dload\s+Upload\s+Total"
    r"|^\s*\d+\s+[\d.]+[kMG]?\s+\d+\s+[\d.]+[kMG]?\s+\d+\s+\d+\s+[\d.]+[kMG]?\s+[\d.]+[kMG]?\s+[-\d:]+"
)
_HINT_CHARS = re.compile(r"[%━╸╺█▉▊▋▌▍▎▏░▒▓⠀-⣿]")
_HINT_WORDS = (
    ("Download", _CHATTER),
    ("Progress", _CHATTER),
    ("Pull", _CHATTER),
    ("Extracting", _CHATTER),
    ("Waiting", _CHATTER),
    ("Verifying", _CHATTER),
    ("Already exists", _CHATTER),
    ("Dload", _CURL),
    ("--:--:--", _CURL),
    ("..........", _PERCENT),
)


def _hints(text: str) -> list[tuple[int, str]]:
    """(position, pattern) pairs worth a closer look, in text order."""
    hints = []
    for match in _HINT_CHARS.finditer(text):
        char = match.group()
        pattern = _PERCENT if char == "%" else _SPINNER if char >= "⠀" else _BARS
        hints.append((match.start(), pattern))
    for word, pattern in _HINT_WORDS:
        at = text.find(word)
        while at != -1:
            hints.append((at, pattern))
            at = text.find(word, at + len(word))
    return sorted(hints)


def drop_progress(text: str) -> str:
    """Text as a terminal would finally show it, without progress bars and download chatter."""
    if "\r" in text:
        text = "\n".join(_overwritten(line) for line in text.split("\n"))
    spans: list[tuple[int, int]] = []
    checked: set[tuple[int, str]] = set()
    for hint, pattern in _hints(text):
        start = text.rfind("\n", 0, hint) + 1
        if (start, pattern) in checked or (spans and spans[-1][0] == start):
            continue
        checked.add((start, pattern))
        end = text.find("\n", hint)
        end = len(text) if end == -1 else end
        if re.compile(pattern, re.MULTILINE).search(text, start, end):
            spans.append((start, min(end + 1, len(text))))
    if not spans:
        return text
    parts = []
    cursor = 0
    for start, end in sorted(spans):
        parts.append(text[cursor:start])
        cursor = end
    parts.append(text[cursor:])
    kept = "".join(parts)
    marker = f"[… {len(spans)} progress lines dropped]"
    return f"{kept}{marker}\n" if kept.endswith("\n") or not kept else f"{kept}\n{marker}"


def _overwritten(line: str) -> str:
    """What a terminal shows after carriage returns overwrote the line."""
    return line.rstrip("\r").rsplit("\r", 1)[-1]


# --- stack traces -------------------------------------------------------------------------------

_PY_FRAME = re.compile(r'^(\s*)File "[^"]+", line \d+')
_AT_FRAME = re.compile(r"^(\s+)at\s+\S")  # Java, JavaScript, .NET
_GO_FUNC = re.compile(r"^[\w./*()\[\]{}-]+\(.*\)$")
_GO_FILE = re.compile(r"^\t\S+\.go:\d+")
_RUBY_FRAME = re.compile(r"^(\s+)from\s+\S+:\d+:in\s")


def condense_traces(text: str, keep: int = FRAMES_KEPT) -> str:
    """Stack traces as exception type + message + top `keep` and bottom `keep` frames."""
    if not any(key in text for key in ('File "', "\tat ", "    at ", ".go:", "  from ")):
        return text
    lines = text.split("\n")
    frames = _frames(lines)
    if not frames:
        return text
    out: list[str] = []
    cursor = 0
    for run in _runs(frames):
        if len(run) <= 2 * keep:
            continue
        first_dropped, last_dropped = run[keep][0], run[-keep - 1][1]
        out.extend(lines[cursor:first_dropped])
        indent = re.match(r"\s*", lines[run[0][0]]).group()  # type: ignore[union-attr]
        out.append(f"{indent}[… {len(run) - 2 * keep} frames omitted]")
        cursor = last_dropped
    if cursor == 0:
        return text
    out.extend(lines[cursor:])
    return "\n".join(out)


def _frames(lines: list[str]) -> list[tuple[int, int, str]]:
    """Every frame as (first line, line after it, language), in order."""
    frames: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        py = _PY_FRAME.match(line) if 'File "' in line else None
        if py:
            depth = len(py.group(1))
            end = i + 1
            while end < len(lines) and _is_py_frame_body(lines[end], depth):
                end += 1
            frames.append((i, end, "py"))
            i = end
            continue
        if "at " in line and _AT_FRAME.match(line):
            frames.append((i, i + 1, "at"))
        elif "from " in line and _RUBY_FRAME.match(line):
            frames.append((i, i + 1, "rb"))
        elif i + 1 < len(lines) and ".go:" in lines[i + 1] and _is_go_frame(line, lines[i + 1]):
            frames.append((i, i + 2, "go"))
            i += 2
            continue
        i += 1
    return frames


def _is_go_frame(line: str, following: str) -> bool:
    return bool(_GO_FUNC.match(line) and _GO_FILE.match(following))


def _is_py_frame_body(line: str, depth: int) -> bool:
    """Source and caret lines under a `File "...", line N` frame are indented deeper."""
    stripped = line.lstrip()
    return bool(stripped) and len(line) - len(stripped) > depth and not _PY_FRAME.match(line)


def _runs(frames: list[tuple[int, int, str]]) -> list[list[tuple[int, int]]]:
    """Groups of frames that directly follow each other in the same language."""
    runs: list[list[tuple[int, int]]] = []
    previous_end, previous_kind = -1, ""
    for start, end, kind in frames:
        if start == previous_end and kind == previous_kind:
            runs[-1].append((start, end))
        else:
            runs.append([(start, end)])
        previous_end, previous_kind = end, kind
    return runs
