"""Error signatures: a failed command's output → (type, message with literals masked, top frame).

Two failures are the same when their signatures' keys are equal: `no :secret_key_base
configuration found in SpotterWeb.Endpoint` and `module LazyHTML is not available` are two
RuntimeErrors with different keys; `The current branch spotter-fum has no upstream branch` and
the same line for another branch share one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Signature", "mask", "signature"]

_NOISE = re.compile(r"^\s*(?:Exit code -?\d+|warning:|hint:|Compiling \d+|Generated \S+ app|"
                    r"Running ExUnit|Getting extensions|Running setup|==> |\.+\s*$|$)", re.IGNORECASE)
_TYPED = [
    re.compile(r"\*\* \((\w[\w.]*)\)\s*(.+)"),                                   # Elixir
    re.compile(r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))(?::\s*(.*))?$"),  # Python, JS
    re.compile(r"^(?:thread '.*' )?(panicked) at (.+)$"),                         # Rust
    re.compile(r"^(error\[E\d+\]):\s*(.+)$"),
    re.compile(r"^(fatal|error|Error|ERROR|FATAL|FAILED|FAIL)(?:\b[^:]{0,40})?:\s*(.+)$"),
    re.compile(r"^✘ \[(ERROR)\]\s*(.+)$"),
    re.compile(r"^npm (?:ERR!|error) (?:code )?(\w+)\s*(.*)$"),
    re.compile(r"^(\S+?\.\w+:\d+(?::\d+)?):\s*(?:error|warning)?:?\s*(.+)$"),     # path:line: message
]
_GENERIC = re.compile(r"(?i)\b(?:error|failed|failure|fatal|cannot|can't|could not|couldn't|unable|"
                      r"not found|denied|refused|no such|invalid|missing|undefined|timed out|"
                      r"exception|unknown|ignored)\b")
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)|^\s*at (?:\S+ )?\(?([^():\s]+\.\w+):\d+|'
                    r"^\s*\(\S+ [\d.]+\) (\S+\.exs?):\d+: (\S+)|^\s*(\S+\.\w+):\d+:?\s")


@dataclass(frozen=True)
class Signature:
    """What failed: its type, its message (literals masked in `key`) and the top frame."""

    type: str
    message: str
    frame: str = ""

    @property
    def text(self) -> str:
        return f"{self.type}: {self.message}" if self.type else self.message

    @property
    def key(self) -> str:
        return f"{self.type.lower()}|{mask(self.message)}"


def mask(message: str) -> str:
    """A message with its literals masked: quoted strings, numbers, paths, hashes, branch names."""
    text = message.lower()
    text = re.sub(r"(['\"`]).*?\1", "<s>", text)
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "<h>", text)
    text = re.sub(r"\S*[/\\]\S*", "<p>", text)
    text = re.sub(r"\b\w+(?:-\w+)+\b", "<w>", text)
    text = re.sub(r"\b[\w.]*\d[\w.]*\b", "<n>", text)
    return " ".join(text.split())[:160]


def signature(output: str) -> Signature | None:
    """The error a failed command's output shows, or None when it shows none."""
    lines = [ln.rstrip() for ln in output[-12000:].splitlines()]
    lines = [ln for ln in lines if ln.strip() and not _NOISE.match(ln)]
    if not lines:
        return None
    frame = _frame(lines)
    for line in lines[:200]:
        stripped = line.strip()
        for pattern in _TYPED:
            match = pattern.search(stripped)
            if match:
                kind, message = match.group(1), (match.group(2) or "").strip()
                if not message:
                    continue
                return Signature(_type_name(kind), _short(message), frame)
    for line in lines[:200]:
        if _GENERIC.search(line):
            return Signature("", _short(line.strip()), frame)
    return Signature("", _short(lines[0].strip()), frame)


def _type_name(kind: str) -> str:
    return "error" if kind.lower() in ("error", "fatal", "failed", "fail") else kind


def _frame(lines: list[str]) -> str:
    for line in lines:
        match = _FRAME.search(line)
        if match:
            return next(g for g in match.groups() if g)
    return ""


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
