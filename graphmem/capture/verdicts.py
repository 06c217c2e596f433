"""The person's verdicts on the points of the agent's message, given point by point in one reply,
a line each: "1. good." / "2. use period." / "3. yes" under a numbered proposal (ida-hcli e6dd9346), "Labels need more
than undo names. - do whatever that is the simplest." under a review's bold headings (held-out
review 22, JusPrin 28d33b5a), "1. Reply buttons could show up in the main assistant too. - this
is ok, if …" (held-out review 21, JusPrin beca91c5). Each verdict is a decision of the person
about the point it answers; the point's own words say what was decided."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphmem.capture.compress import TITLE_MAX, Draft, session_key
from graphmem.capture.compress import short as _short
from graphmem.capture.compress import unbold as _unbold

_NUMBERED = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?(\d{1,2})[.)]\s+(.+)$")
_BOLD_LEAD = re.compile(r"^\s*(?:[-*]\s+)?\*\*([^*\n]{3,120}?)\*\*")
_HEADING = re.compile(r"^#{1,4}\s+(.{3,120})$")
_REFERENCE = re.compile(r"^\s*(?:#(\d{1,2})|\((\d{1,2})\)|(\d{1,2})\s*[.):–-])\s*(.*)$")
_SEPARATOR = re.compile(r"^\s*(?:[-–—:.,]+\s*)+")
# a verdict that starts a sequence of new work is the person's own list ("1. first add a test")
_OWN_STEPS = re.compile(r"(?i)^(?:first|then|next|also|finally|after that|and)\b")
MAX_VERDICT_WORDS = 12  # without its point's words repeated: "use period", "do the routine work"
# the agent asked for the person's call, so a numbered reply answers its points
_ASKS = re.compile(r"(?i)\?|\b(?:your call|yours to (?:make|decide)|(?:once|when) you(?:'ve| have)? decided|"
                   r"let me know|which (?:one|option)|do you want|want me to)\b")
MAX_POINT = 400


@dataclass
class _Point:
    number: int | None
    label: str
    text: str


def verdicts(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """A decision per reply that answers two or more of the agent's points one by one."""
    drafts = []
    said = ""
    for msg in transcript:
        if msg.sidechain or getattr(msg, "compact", False):
            continue
        if msg.role == "assistant" and msg.text.strip():
            said = msg.text
        elif msg.role == "user" and not msg.meta and not msg.tool_use_id and msg.text.strip():
            answered = _answered(_points(said), msg.text, bool(_ASKS.search(said[-400:]))) if said else []
            if len(answered) >= 2:
                drafts.append(_draft(answered, session_id))
            said = ""
    return drafts


def _points(text: str) -> list[_Point]:
    """The points of a message: its numbered items (the last list of them) and its bold or
    heading lead-ins, each with the words under it."""
    points: list[_Point] = []
    current: _Point | None = None
    for line in text.splitlines():
        numbered, bold, heading = _NUMBERED.match(line), _BOLD_LEAD.match(line), _HEADING.match(line)
        if numbered or bold or heading:
            number = int(numbered.group(1)) if numbered else None
            lead = bold.group(1) if bold else heading.group(1) if heading else ""
            if numbered and not bold:
                lead = _BOLD_LEAD.sub(lambda m: m.group(1), numbered.group(2))
            lead = re.sub(r"^\d{1,2}[.)]\s*", "", lead)
            label = re.split(r"\s+(?:--|—|–)\s+|:\s|\.\s", lead.strip(), maxsplit=1)[0].strip(" .:*")
            body = " ".join(_unbold(line).split())
            current = _Point(number, label, re.sub(r"^(?:[-*]\s+)?\d{1,2}[.)]\s+|^#+\s+", "", body))
            points.append(current)
        elif current is not None and line.strip():
            current.text = f"{current.text} {' '.join(_unbold(line).split())}"
    return points


def _norm(text: str) -> str:
    """Lowercase words of any script (compress.norm keeps ASCII only; a heading may be "**Метки.**")."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _answered(points: list[_Point], reply: str, asked: bool) -> list[tuple[_Point, str]]:
    """Each point the reply answers with its verdict; none unless the reply opens with one."""
    runs: list[list[_Point]] = []
    for point in points:
        if point.number is not None:
            if point.number == 1 or not runs:
                runs.append([])
            runs[-1].append(point)
    named = [p for p in points if len(_norm(p.label)) >= 6]
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    answered: list[tuple[_Point, str]] = []
    restated = False
    for n, line in enumerate(lines):
        answer: _Point | None = None
        rest = ""
        restated_here = False
        ref = _REFERENCE.match(line)
        if ref:
            number = int(ref.group(1) or ref.group(2) or ref.group(3))
            run = next((r for r in reversed(runs) if any(p.number == number for p in r)), [])
            answer = next((p for p in run if p.number == number), None)
            rest = ref.group(4)
            if answer is not None and _norm(answer.label) and _norm(rest).startswith(_norm(answer.label)):
                rest, restated = _after_label(rest, answer.label), True
                restated_here = True
        else:
            answer = next((p for p in named if _norm(line).startswith(_norm(p.label))), None)
            if answer is not None:
                rest, restated = _after_label(line, answer.label), True
                restated_here = True
        if answer is None:
            if n == 0:
                return []  # a reply of its own that goes on to mention a point answers nothing
            break  # past the answers: what the person asks next, a pasted passage
        verdict = _verdict(rest)
        if verdict and not restated_here and (_OWN_STEPS.match(verdict) or len(verdict.split()) > MAX_VERDICT_WORDS):
            return []  # a list of the person's own asks, numbered like the agent's points
        if verdict:
            answered.append((answer, verdict))
    if not restated and not asked:
        return []  # a numbered list of the person's own, under a message that asked nothing
    return answered


def _after_label(line: str, label: str) -> str:
    """The line past the words of the label it repeats, and the separator after them."""
    words = len(_norm(label).split())
    found = re.match(r"\W*" + r"\W+".join([r"\w+"] * words), line)
    return _SEPARATOR.sub("", line[found.end():] if found else line)


def _verdict(text: str) -> str:
    """What the person decided, without a question they asked back ("are you good now?")."""
    text = " ".join(_SEPARATOR.sub("", text[:2000]).split())
    for _ in range(5):
        if not text.endswith("?"):
            break
        end = max(text.rfind(mark, 0, len(text) - 1) for mark in ".!?")
        text = text[:end + 1].strip() if end >= 0 else ""
    return text.strip(" -–—:").rstrip(".")


def _draft(answered: list[tuple[_Point, str]], session_id: str) -> Draft:
    title = "The user decided:"
    for point, verdict in answered:
        said = f" {_short(point.label, 50)} → {_short(verdict, 60)};"
        if len(title) + len(said) > TITLE_MAX:
            break
        title += said
    body = ["The user answered the agent's points one by one:"]
    body += [f"- {_short(_verdict(point.text), MAX_POINT)} → the user: {verdict}" for point, verdict in answered]
    return Draft(
        kind="decision", title=title.rstrip(";"), body="\n".join(body),
        confidence=0.9, importance=0.8, source="user",
        key=session_key(session_id, "verdicts", _norm(answered[0][0].label)), tags=["user-stated", "verdicts"])
