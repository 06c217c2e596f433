"""What a compaction summary says was fixed: Claude Code's summary of a conversation it compacts
has a fixed outline, and its "Errors and fixes" section lists each error met with its cause and
fix, written by the model after the fact. Those bullets become pitfalls (or enrich the lesson
the session's own events already gave for the same error); the summary stays context, never
the person's words.

Left out: bullets the summary itself calls expected or not real, errors in names the session
was still writing (undefined or unused), corrections of the agent by the person, attempts it
says failed, and errors left unresolved, whose stated cause is a guess (spotter's "Dialyzer
false positive (UNRESOLVED)" was a real bug).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from graphmem.capture.compress import BODY_MAX, Draft, norm, session_key
from graphmem.capture.compress import short as _short
from graphmem.capture.compress import unbold as _unbold

MAX_NEW = 2  # per summary the session holds: the rest are routine or already known
_SECTION = re.compile(r"(?im)^([ \t]*)(?:\d+\.)?[ \t*]*errors?[ \t]+(?:and|&)[ \t]+fix(?:es)?[ \t:*]*$")
_NEXT_SECTION = re.compile(r"(?m)^(?:\d+\.[ \t]+\**[A-Z]|#{1,4} |\*\*[A-Z][^*\n]{2,60}\*\*:?[ \t]*$)")
_BULLET = re.compile(r"^([ \t]*)(?:[-*•]|\d+[.)])[ \t]+(.+)$")
_BOLD_HEAD = re.compile(r"^\*\*(.+?)\*\*[ \t]*(?::[ \t]*)?(.*)$")
_NOT_KNOWLEDGE = re.compile(r"(?i)^\W*(?:user (?:correction|feedback|pushback)|the user (?:said|corrected|asked))\b")
_ROUTINE = re.compile(r"(?i)\bexpected (?:during|while) (?:incremental )?edit(?:ing|s)?\b|\bnot (?:a )?real errors?\b|"
                      r"^\W*(?:compile errors? ?:?\s*)?(?:undefined|unused) (?:function|variable|import|"
                      r"alias|module|attribute)s?\b|^\W*(?:compile errors?|unused \w+|undefined \w+)\W*$|"
                      r"^\W*@\w+ undefined\b|"
                      r"^\W*(?:\w+:? )?(?:nesting depth|(?:cyclomatic |cognitive )?complexity)\b")
_UNRESOLVED = re.compile(r"(?i)\bunresolved\b|\bstill (?:failing|open|broken)\b")
_IN_PROGRESS = re.compile(r"(?i)^\W*(?:current|in progress|ongoing|wip)\s*[:\-–—)]\W*")
_FAILED_TRY = re.compile(r"\bFAILED\b|(?i:\bdid(?:n't| not) work\b|\battempted fix|\bfirst attempt\b|\ball failed\b)")
_CAUSE = re.compile(r"(?i)\b(?:root cause|caused? by|because|due to|doesn't|does not|don't|can't|cannot|isn't|"
                    r"not supported|unsupported|requires?|required|instead of|must|(?:git)?ignored|blocked|"
                    r"rejected|refused|not allowed|forbidden)\b")
_CHECKER = re.compile(r"(?i)\b(?:credo|dialyzer|eslint|staticcheck|clippy|mypy|pyright|ruff|golangci(?:-lint)?|"
                      r"rubocop|tsc|pylint|flake8|sobelow|biome|prettier|gofmt|lint(?:er)?)\b")
_SPECIFIC = re.compile(r"`[^`]+`|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]\w*\.\w+|\b\w+/\d\b|\b[A-Z]{2,}\d+\b|"
                       r"(?<![\w-])[\w-]+\.(?:exs?|ya?ml|json|toml|go|py|ts|js|rb|lock)\b")
_PATH_LIKE = re.compile(r"\.\w{1,5}$|/.*/|/$|^[.~]/")
_TOKEN = re.compile(r"`([^`]+)`|([A-Za-z_][\w.:/-]*\w)")
_WEAK = frozenset(["the", "and", "for", "with", "from", "that", "this", "was", "were", "are", "not", "but", "into", "when", "then", "than", "its", "their", "added", "fixed", "using", "used", "error", "errors", "fix", "fixes", "test", "tests", "file", "files", "function", "functions", "code", "after", "before", "instead", "because", "caused", "needed", "needs", "run", "ran", "running", "missing", "undefined", "unused"])


@dataclass
class Fix:
    """One bullet of the section: the error as the summary names it and what it says of it."""

    error: str
    said: list[str]
    open: bool = False


def errors_and_fixes(text: str) -> list[Fix]:
    """The bullets of a compaction summary's "Errors and fixes" section, sub-bullets folded into
    their parent; [] when it has none."""
    start = _SECTION.search(text)
    if not start:
        return []
    rest = text[start.end():]
    end = _NEXT_SECTION.search(rest)
    fixes: list[Fix] = []
    top = None
    below: int | None = None  # sub-bullets under "attempted fixes that all failed:" are not fixes
    for line in (rest[:end.start()] if end else rest)[:6000].splitlines():
        m = _BULLET.match(line)
        if not m:
            if fixes and line.strip() and top is not None:
                fixes[-1].said.append(" ".join(line.split()))
            continue
        indent, body = len(m.group(1).expandtabs(4)), " ".join(m.group(2).split())
        if below is not None and indent > below:
            continue
        below = None
        if top is None or indent <= top:
            top = indent
            head = _BOLD_HEAD.match(body)
            error, said = (head.group(1), head.group(2)) if head else _split_head(body)
            if head and not re.match(r"\*\*.+?\*\*[ \t]*:", body) and ": " in said:
                more, said = _split_head(said)
                error = f"{error} {more}"
            error = error.strip().rstrip(":").strip()
            fixes.append(Fix(error=error, said=[said.strip()] if said.strip() else []))
        elif fixes:
            fixes[-1].said.append(_unbold(body))
            if _FAILED_TRY.search(body) and body.endswith(":"):
                below = indent
    for fix in fixes:
        if _IN_PROGRESS.match(fix.error):
            fix.error, fix.open = _IN_PROGRESS.sub("", fix.error), True
    return fixes


def _split_head(body: str) -> tuple[str, str]:
    """`error: what was done`, split at the first colon outside a code span."""
    depth = 0
    for i, ch in enumerate(body):
        depth ^= ch == "`"
        if ch == ":" and not depth and body[i + 1:i + 2] in (" ", ""):
            return body[:i], body[i + 1:]
    return body, ""


def worth_keeping(fix: Fix) -> bool:
    whole = " ".join([fix.error, *fix.said])
    if _NOT_KNOWLEDGE.match(fix.error) or _ROUTINE.search(fix.error) or _ROUTINE.search(whole):
        return False
    return not _UNRESOLVED.search(whole)


def statement(fix: Fix) -> tuple[str, list[str]]:
    """Title (the error, then its cause and fix) and body lines; failed attempts left out."""
    said = [s for s in fix.said if s and not _FAILED_TRY.search(s)]
    lead = [s for s in said if re.match(r"(?i)^(?:root cause|caused by|successful fix|fix(?:ed)?(?: identified)?)\b", s)]
    gist = " ".join(lead or said[:1])
    title = f"{fix.error} — {gist}" if gist else fix.error
    if fix.open:
        title = f"{fix.error} (was still being fixed when the conversation was compacted)"
    return title, said


def value(fix: Fix) -> float:
    """How much a later session gains: a cause or constraint stated, code named."""
    whole = " ".join([fix.error, *fix.said])
    return (2.0 * bool(_CAUSE.search(whole)) + min(3, len(_SPECIFIC.findall(whole))) * 0.5
            + 0.5 * bool(fix.said) + 1.0 * bool(_CHECKER.search(fix.error)))


def tokens(text: str) -> set[str]:
    """Distinctive words of a text, lowercase: code spans and identifiers whole and in parts
    (`priv/static/assets/` shares `assets` with "the assets directory")."""
    out: set[str] = set()
    for span, word in _TOKEN.findall(text):
        whole = (span or word).lower().strip(".:/")
        for t in {whole, *re.split(r"[^\w]+|_", whole)}:
            if len(t) >= 4 and t not in _WEAK:
                out.add(t)
    return out


def compaction_drafts(transcript: Iterable[Any], session_id: str, known: list[Draft],
                      clean: Callable[[str], str] = lambda text: text) -> list[Draft]:
    """Pitfalls from the compaction summaries of the session; a bullet about an error a draft in
    `known` already holds is added to that draft's body instead of becoming an item. A later
    summary repeats the earlier one's bullets: the latest wording of each error is used.
    `clean` (redaction, relative paths) runs on each summary before it is read: a secret named
    by its key ("password: …") is masked before the bullet is split at its colon."""
    summaries = [m.text for m in transcript if getattr(m, "compact", False)]
    latest: dict[str, Fix] = {}
    for text in summaries:
        for fix in errors_and_fixes(clean(text)):
            if worth_keeping(fix):
                said_before = norm(fix.error)
                latest.pop(said_before, None)  # kept in the order of its latest wording
                latest[said_before] = fix
    ranked: list[tuple[float, Draft]] = []
    for fix in latest.values():
        title, said = statement(fix)
        line = f"Per the compaction summary: {fix.error} — {' '.join(said)}".strip(" —")
        # a commit's message is the author's, told whole: no bullet goes into it or retitles it
        holder = _holder(tokens(" ".join([fix.error, *said])), [d for d in known if "commit" not in d.tags])
        if holder is not None:
            if line[:80] not in holder.body and len(holder.body) + len(line) < BODY_MAX - 40:
                holder.body = f"{holder.body}\n{_short(line, 400)}".strip()
            if not fix.open and holder.kind in ("fact", "pitfall") and _sharper(title, holder.title):
                holder.body = f"{holder.title}\n{holder.body}"
                holder.title = _short(title, 200)
            continue
        body = [f"From the summary written when the conversation was compacted: {fix.error}", *said]
        ranked.append((value(fix), Draft(
            kind="pitfall", title=_short(title, 200), body="\n".join(body), confidence=0.6,
            importance=0.6, source="rule", key=_key(session_id, fix),
            tags=["compaction", "open" if fix.open else "fixed"])))
    ranked.sort(key=lambda r: -r[0])
    return [d for score, d in ranked if score >= 2.5][:MAX_NEW * len(summaries)]


def _sharper(title: str, held: str) -> bool:
    """The bullet names more of the code than the agent's sentence that holds it ("the issue -
    the configuration format for the batch processor is wrong"); a command's lesson keeps its
    title."""
    return not held.startswith("`") and len(_SPECIFIC.findall(title)) > len(_SPECIFIC.findall(held))


def _key(session_id: str, fix: Fix) -> str:
    """A checker's complaint about one construct (`length/1`, not a file) is one pitfall in every
    session that meets it (spotter's credo `length/1` warning, met in two); other bullets are the
    session's own."""
    checker, span = _CHECKER.search(fix.error), re.search(r"`([^`]+)`", fix.error)
    if checker and span and not _PATH_LIKE.search(span.group(1)):
        return session_key("", "compaction", f"{checker.group(0).lower()}\x1f{span.group(1)}")
    return session_key(session_id, "compaction", norm(fix.error))


def _holder(words: set[str], known: list[Draft]) -> Draft | None:
    """The fact, pitfall or task (not what the person said) already about this error: of the
    distinctive words of the shorter of the two, the other holds three and a third, or two and half."""
    best, best_share = None, 0.0
    for d in known:
        if d.kind not in ("fact", "pitfall", "task") or d.source == "user":
            continue
        held = tokens(f"{d.title}\n{d.body}")
        shared = words & held
        share = len(shared) / max(1, min(len(words), len(held)))
        if (len(shared) >= 3 and share >= 1 / 3 or len(shared) >= 2 and share >= 0.5) and share > best_share:
            best, best_share = d, share
    return best


__all__ = ["Fix", "compaction_drafts", "errors_and_fixes", "statement", "worth_keeping"]
