"""Issues a session filed in a tracker (Linear, GitHub, Jira, ... through an MCP tool, or `gh` /
`glab issue create`): work someone decided to track, kept in the words it was filed with, and
what the session then did with it (cancelled, closed)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphmem.capture.compress import Draft, session_key
from graphmem.capture.compress import short as _short

_CREATE = re.compile(r"(?i)(?:^|[_.-])(?:create|file|open|new)_?(?:issue|ticket|bug)$")
_UPDATE = re.compile(r"(?i)(?:^|[_.-])(?:update|edit|close|transition)_?(?:issue|ticket)$")
_CLI_CREATE = re.compile(r"(?:^|[;&|]\s*)(gh|glab)\s+issue\s+create\b")
_CLI_CLOSE = re.compile(r"(?:^|[;&|\n]\s*)(gh|glab)\s+issue\s+close\b")
_ISSUE_ARG = re.compile(r"#?(\d+)$|^https?://\S+/(?:-/)?issues/(\d+)")
_CAT_HEREDOC = re.compile(r"\A\$\(cat <<-?\s*'?(\w+)'?\n(.*?)\n\s*\1\s*\)\s*\Z", re.DOTALL)
_CLOSED = re.compile(r"(?i)^(?:cancell?ed|done|closed|completed|resolved|duplicate|won'?t ?(?:fix|do))$")
_KEY = re.compile(r'"(?:identifier|key)"\s*:\s*"([A-Z][A-Z0-9]*-\d+)"')
_URL = re.compile(r"https?://[^\s\"'<>]+/(?:issues|issue|browse|-/issues)/([\w-]+)")
_FIELDS = ("team", "project", "milestone", "priority", "labels", "assignee", "repo", "repository")
DESCRIPTION_MAX = 1400  # a filed issue is written to be read later: nearly all of it


@dataclass
class Ticket:
    ident: str
    title: str
    tracker: str
    description: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    state: str = ""
    filed: bool = True  # by this session; else one it closed
    closing: str = ""  # the comment it was closed with, when this session filed it too


def tracker_of(tool: str) -> str:
    """`mcp__linear-server__create_issue` → "Linear"; `gh` → "GitHub"."""
    server = tool.split("__")[1] if tool.startswith("mcp__") and tool.count("__") >= 2 else tool
    name = re.sub(r"(?i)[-_](?:server|mcp)$|^mcp[-_]", "", server)
    return {"gh": "GitHub", "glab": "GitLab", "github": "GitHub", "gitlab": "GitLab",
            "jira": "Jira", "linear": "Linear"}.get(name.lower(), name.capitalize())


def _ident(result: str) -> str:
    key = _KEY.search(result)
    if key:
        return key.group(1)
    url = _URL.search(result)
    if url:
        return url.group(1) if not url.group(1).isdigit() else f"#{url.group(1)}"
    try:
        data = json.loads(result)
    except ValueError:
        return ""
    number = data.get("number") if isinstance(data, dict) else None
    return f"#{number}" if isinstance(number, int) else ""


def _from_result(ident: str, result: str, tool: str) -> Ticket | None:
    try:
        data = json.loads(result)
    except ValueError:
        return None
    title = data.get("title") if isinstance(data, dict) else None
    if not ident or not isinstance(title, str) or not title.strip():
        return None
    description = data.get("description")
    return Ticket(ident, title.strip(), tracker_of(tool), description if isinstance(description, str) else "",
                  filed=False)


def _field_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value if isinstance(v, str | int))
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""


def _cli_ticket(command: str, result: str) -> Ticket | None:
    found = _CLI_CREATE.search(command)
    ident = _ident(result)
    if found is None or not ident:
        return None
    try:
        words = shlex.split(command[found.start():])
    except ValueError:
        return None
    options: dict[str, str] = {}
    for n, word in enumerate(words[:-1]):
        name = {"-t": "--title", "-b": "--body", "-l": "--label", "-R": "--repo"}.get(word, word)
        if name in ("--title", "--body", "--label", "--repo") and name not in options:
            options[name] = words[n + 1]
    title = options.get("--title", "")
    fields = {k: options[f"--{k}"] for k in ("label", "repo") if f"--{k}" in options}
    return Ticket(ident, title, tracker_of(found.group(1)), options.get("--body", ""), fields) if title else None


def _cli_closed(command: str) -> list[Ticket]:
    """Each `gh issue close 187 --comment "Resolved by PR #189 …"` of a line: the comment says how
    it was settled (held-out review 17: the charger issue a merged PR had fixed); a close with no
    comment says nothing. The comment may come from a heredoc (`--comment "$(cat <<'EOF' …)"`)."""
    out = []
    starts = [m for m in _CLI_CLOSE.finditer(command)]
    for n, found in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(command)
        try:
            words = shlex.split(command[found.start():end].strip(" \n;&|"))
        except ValueError:
            continue
        words = words[: next((k for k, w in enumerate(words) if w in ("&&", "||", ";", "|")), len(words))]
        comment, number, skip = "", "", False
        for k, word in enumerate(words[3:], start=3):
            if skip:
                skip = False
            elif word in ("--comment", "-c") and k + 1 < len(words):
                comment, skip = words[k + 1], True
            elif word.startswith("--comment="):
                comment = word.split("=", 1)[1]
            elif word.startswith("-") and "=" not in word and k + 1 < len(words):
                skip = word in ("-R", "--repo", "-r", "--reason")
            elif (issue := _ISSUE_ARG.search(word)) and not number:
                number = issue.group(1) or issue.group(2)
        heredoc = _CAT_HEREDOC.match(comment.strip())
        said = " ".join((heredoc.group(2) if heredoc else comment).split())
        if not number or len(said.split()) < 4:
            continue
        head = re.split(r"(?<=[.!])\s+(?=[A-Z])", said, maxsplit=1)[0]
        out.append(Ticket(f"#{number}", head, tracker_of(found.group(1)), said, state="closed", filed=False))
    return out


def tickets(calls: Iterable[tuple[str, dict[str, Any], str, bool]]) -> list[Ticket]:
    """The tickets created by the calls (tool name, input, result, errored), in order, with the
    state a later call in the same session gave them. A call without an identifier in its result
    created nothing (the person stopped it, or it failed)."""
    found: dict[str, Ticket] = {}
    for tool, given, result, errored in calls:
        if errored or not isinstance(given, dict):
            continue
        if _CREATE.search(tool):
            ident, title = _ident(result), given.get("title") or given.get("summary") or ""
            if ident and isinstance(title, str) and title.strip():
                fields = {k: text for k in _FIELDS if (text := _field_text(given.get(k)))}
                description = given.get("description") or given.get("body") or ""
                found[ident] = Ticket(ident, title.strip(), tracker_of(tool),
                                      description if isinstance(description, str) else "", fields)
        elif _UPDATE.search(tool):
            ident = str(given.get("id") or given.get("identifier") or given.get("issue_id") or "")
            state = given.get("state") or given.get("status") or ""
            if not (isinstance(state, str) and state):
                continue
            if ident in found:
                found[ident].state = state
            elif _CLOSED.match(state.strip()) and (known := _from_result(ident, result, tool)):
                known.state = state  # filed in an earlier session: closing it updates that item
                found[ident] = known
        elif isinstance(given.get("command"), str):
            ticket = _cli_ticket(given["command"], result)
            if ticket is not None:
                found[ticket.ident] = ticket
            for closed in _cli_closed(given["command"]) if ticket is None else ():
                if closed.ident in found:
                    found[closed.ident].state = "closed"
                    found[closed.ident].closing = closed.description
                else:
                    found[closed.ident] = closed
    return list(found.values())


def drafts(found: list[Ticket], session_id: str) -> list[Draft]:
    """An open ticket is a task; one the session itself cancelled or closed is a decision."""
    out = []
    for t in found:
        where = ", ".join(f"{k} {v}" for k, v in t.fields.items())
        closed = bool(_CLOSED.match(t.state.strip()))
        if t.filed:
            lines = [f"Filed in {t.tracker} as {t.ident}" + (f" ({where})" if where else "") + "."]
            if t.state:
                lines.append(f"Its state was then set to {t.state} in the same session"
                             + (f": {t.closing}" if t.closing else "."))
        else:
            lines = [f"{t.tracker} issue {t.ident}, filed before this session, was set to {t.state} in it."]
        description = "\n".join(ln.rstrip() for ln in t.description.splitlines() if ln.strip())
        if description:
            lines.append(description if len(description) <= DESCRIPTION_MAX
                         else description[:DESCRIPTION_MAX - 1].rstrip() + "…")
        if closed:
            title = f"{t.tracker} issue {t.ident} {t.state.lower()}: {t.title}"
        else:
            title = f"Open {t.tracker} issue {t.ident}: {t.title}"
        out.append(Draft(
            kind="decision" if closed else "task", title=_short(title, 200), body="\n".join(lines),
            confidence=0.8, importance=0.8, source="rule",
            key=session_key("", "ticket", f"{t.tracker}\x1f{t.ident}"),
            tags=["ticket", t.tracker.lower(), "closed" if closed else "handoff"]))
    return out
