"""Issues filed in a tracker during a session, from entire-cli 03a1382e and f022dad1 (Linear
through its MCP server; payloads verbatim, descriptions shortened) and `gh issue create`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphmem.capture.compress import compress_session
from graphmem.capture.event import HookEvent
from tests.capture.test_lessons import ROOT, Session

ENT_242 = {
    "title": "Replace go-git worktree.Status() with git CLI to prevent index corruption",
    "team": "Entire", "project": "Troy", "priority": 1, "labels": ["Bug"],
    "description": "## Problem\n\ngo-git's `worktree.Status()` reads **and rewrites** the worktree index "
                   "file. When called from the `PostCommit` hook path, this rewrites the index with stale "
                   "cache-tree entries.\n\n### Fix\n\nReplace `getStagedFiles`' `worktree.Status()` with "
                   "`git diff --cached --name-only`."}
ENT_241 = {"title": "Run git gc at safe points to prevent worktree index corruption", "team": "Entire",
           "project": "Troy", "description": "## Problem\n\ngo-git's `SetEncodedObject` creates loose objects."}


def _created(ident: str, title: str) -> str:
    return json.dumps({"id": "619ac239-c691-49d6-977c-a6648e036acd", "identifier": ident, "title": title,
                       "url": f"https://linear.app/entire/issue/{ident.lower()}/x"})


def _tool(session: Session, name: str, given: dict[str, Any], result: str, error: bool = False) -> Session:
    session.n += 1
    tid = f"toolu_{session.n}"
    session._record("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": given}])
    session._record("user", [{"type": "tool_result", "tool_use_id": tid, "is_error": error,
                              "content": [{"type": "text", "text": result}]}])
    session.events.append(HookEvent("post-tool", "claude-code", session.sid, ROOT, ROOT, tool=name,
                                    tool_input=given, text=result, is_error=error, ts=session.t))
    return session


def _linear_session() -> Session:
    session = Session().user("our git status has broken, why?")
    _tool(session, "mcp__linear-server__create_issue", ENT_241, _created("ENT-241", ENT_241["title"]))
    _tool(session, "mcp__linear-server__create_issue", ENT_242, _created("ENT-242", ENT_242["title"]))
    _tool(session, "mcp__linear-server__update_issue", {"id": "ENT-241", "state": "Cancelled"},
          _created("ENT-241", ENT_241["title"]))
    return session


def test_an_issue_filed_in_a_tracker_is_an_open_task_in_the_words_it_was_filed_with() -> None:
    drafts = _linear_session().end()
    [task] = [d for d in drafts if "ticket" in d.tags and d.kind == "task"]
    assert task.title == ("Open Linear issue ENT-242: Replace go-git worktree.Status() with git CLI "
                          "to prevent index corruption")
    assert task.body.startswith("Filed in Linear as ENT-242 (team Entire, project Troy, priority 1, labels Bug).")
    assert "`git diff --cached --name-only`" in task.body


def test_an_issue_the_session_cancelled_is_a_decision_not_open_work() -> None:
    drafts = _linear_session().end()
    [cancelled] = [d for d in drafts if "ticket" in d.tags and d.kind == "decision"]
    assert cancelled.title.startswith("Linear issue ENT-241 cancelled: Run git gc at safe points")
    assert "set to Cancelled in the same session" in cancelled.body
    summary = next(d for d in drafts if d.kind == "summary")
    assert "1 open task" in summary.title


def test_without_a_transcript_the_hook_events_give_the_same_tickets() -> None:
    session = _linear_session()
    session.events.append(HookEvent("session-end", "claude-code", session.sid, ROOT, ROOT, ts=session.t + 1))
    from_events = {(d.kind, d.title) for d in compress_session(session.events) if "ticket" in d.tags}
    assert from_events == {(d.kind, d.title) for d in session.end() if "ticket" in d.tags}
    assert len(from_events) == 2


def test_a_create_call_stopped_by_the_person_or_failing_files_nothing() -> None:
    session = Session().user("file a linear ticket for this")
    _tool(session, "mcp__linear-server__create_issue", {**ENT_242, "project": ""},
          "The user doesn't want to proceed with this tool use. The tool use was rejected.", error=True)
    _tool(session, "mcp__linear-server__create_issue", ENT_242, "Error: Team not found", error=True)
    assert not [d for d in session.end() if "ticket" in d.tags]


def test_gh_issue_create_is_a_github_ticket() -> None:
    command = ('gh issue create --title "Importer drops tool results longer than 5 lines" '
               '--body "TranscriptRenderer truncates tool_result groups silently." --label bug')
    drafts = Session().user("open an issue for that").run(
        command, "https://github.com/acme/spotter/issues/118\n").end()
    [task] = [d for d in drafts if "ticket" in d.tags]
    assert task.title == "Open GitHub issue #118: Importer drops tool results longer than 5 lines"
    assert "(label bug)" in task.body and "truncates tool_result groups" in task.body


def test_an_issue_closed_in_a_later_session_is_no_longer_open_work_in_the_store(memory: Any,
                                                                               tmp_path: Path) -> None:
    from graphmem.store.base import ItemFilter
    from tests.test_session_memory import ingest

    ingest(memory, _tool(Session("s-file").user("file it"), "mcp__linear-server__create_issue", ENT_242,
                         _created("ENT-242", ENT_242["title"])), tmp_path)
    later = Session("s-close").user("ENT-242 is fixed on main, close it")
    done = json.dumps({"identifier": "ENT-242", "title": ENT_242["title"], "description": ENT_242["description"]})
    ingest(memory, _tool(later, "mcp__linear-server__update_issue", {"id": "ENT-242", "state": "Done"}, done),
           tmp_path)
    rows = memory.store.list_items(ItemFilter(project=memory.project, statuses=("active",)), limit=100)
    tickets = [r for r in rows if "ticket" in r["tags"]]
    assert [(r["kind"], r["title"]) for r in tickets] == [
        ("decision", ("Linear issue ENT-242 done: Replace go-git worktree.Status() with git CLI to prevent "
                      "index corruption"))]
    assert "Open Linear issue ENT-242" not in memory.brief().text


def test_an_issue_the_tracker_confirmed_it_filed_is_open_work_the_brief_shows(memory: Any, tmp_path: Path) -> None:
    # entire-cli 03a1382e: ENT-242, filed at the person's request ("Can we log an linear issue (critical
    # priority)"), was left out of the brief for want of evidence; the tracker's reply is that evidence.
    from tests.test_session_memory import ingest

    ingest(memory, _tool(Session("s-file").user("let's not make this change in this branch. Can we log an linear "
                                                 "issue (critical priority), Project: Troy with the details please"),
                         "mcp__linear-server__create_issue", ENT_242, _created("ENT-242", ENT_242["title"])), tmp_path)
    assert "open task: Open Linear issue ENT-242: Replace go-git worktree.Status()" in memory.brief().text


def test_an_issue_closed_with_a_comment_is_a_decision_in_its_words() -> None:
    # Held-out review 17 (daqifi-nyquist-firmware 34458916, BSL-1.1, paraphrased): the issue was
    # filed before the fix was merged; the closing comment says how it was settled.
    comment = ("Resolved by PR #189 (timer-based IINLIM state machine). It now sets 500mA for USB hosts or "
               "2000mA for wall chargers after a 5-second enumeration window.")
    drafts = (Session().user("close 187 if it predates 189")
              .run(f'gh issue close 187 --comment "{comment}" 2>/dev/null', "")
              .run("gh issue close 188", "")  # no word of why: nothing to keep
              .say("Closed #187.").end())
    closed = [d for d in drafts if "ticket" in d.tags]
    assert [(d.kind, d.title) for d in closed] == [
        ("decision", "GitHub issue #187 closed: Resolved by PR #189 (timer-based IINLIM state machine).")]
    assert "2000mA for wall chargers" in closed[0].body and "filed before this session" in closed[0].body


def test_an_issue_filed_then_closed_by_gh_in_a_later_session_leaves_no_open_task(memory: Any,
                                                                                tmp_path: Path) -> None:
    from graphmem.store.base import ItemFilter
    from tests.test_session_memory import ingest

    filed = Session("s-file").user("open an issue for that").run(
        'gh issue create --title "Charger limited to 500mA" --body "Wall chargers only get 500mA."',
        "https://github.com/acme/fw/issues/187\n")
    ingest(memory, filed, tmp_path)
    closing = Session("s-close").user("close 187, the state machine fixed it").run(
        'gh issue close 187 --comment "Resolved by PR #189: wall chargers now get 2000mA."', "")
    ingest(memory, closing, tmp_path)
    rows = memory.store.list_items(ItemFilter(project=memory.project, statuses=("active",)), limit=100)
    assert [(r["kind"], r["title"]) for r in rows if "ticket" in r["tags"]] == [
        ("decision", "GitHub issue #187 closed: Resolved by PR #189: wall chargers now get 2000mA.")]


@pytest.mark.parametrize(("command", "closed"), [
    ("gh issue close 12 && gh issue close 13 --comment \"Fixed by the retry change in PR 40.\"",
     [("#13", "Fixed by the retry change in PR 40.")]),
    ("gh issue close 12 --comment \"dup of 11, same stack trace\"; gh issue close 13 --comment \"Fixed in PR 40 now.\"",
     [("#12", "dup of 11, same stack trace"), ("#13", "Fixed in PR 40 now.")]),
    ("gh issue close 14 --comment \"$(cat <<'EOF'\nFixed in #41: the parser now keeps quotes.\nEOF\n)\"",
     [("#14", "Fixed in #41: the parser now keeps quotes.")]),
    ("gh issue close -R acme/fw https://github.com/acme/fw/issues/16 -c \"Superseded by the new importer design\"",
     [("#16", "Superseded by the new importer design")]),
])
def test_the_ways_gh_closes_an_issue(command: str, closed: list[tuple[str, str]]) -> None:
    from graphmem.capture.tickets import _cli_closed

    assert [(t.ident, t.title) for t in _cli_closed(command)] == closed


def test_an_issue_filed_and_closed_in_one_session_keeps_its_closing_words() -> None:
    drafts = (Session().user("file it, then close it once fixed")
              .run('gh issue create --title "Parser drops quotes"', "https://github.com/acme/fw/issues/41\n")
              .run('gh issue close 41 --comment "Fixed by keeping the quote tokens in the lexer."', "").end())
    [done] = [d for d in drafts if "ticket" in d.tags]
    assert done.kind == "decision" and "keeping the quote tokens" in done.body


REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
           "let's not make this change in this branch. Can we log an linear issue (critical priority), "
           "Project: Troy with the details please")


def test_the_persons_ask_to_file_an_issue_is_told_by_the_issue_it_filed() -> None:
    # entire-cli 03a1382e, in order: ENT-241 filed, the edit turned down with the ask, ENT-241 looked
    # up again, ENT-242 filed: the ask is a line of ENT-242, not a decision of its own.
    session = Session().user("our git status has broken, why?")
    _tool(session, "mcp__linear-server__create_issue", ENT_241, _created("ENT-241", ENT_241["title"]))
    _tool(session, "Edit", {"file_path": f"{ROOT}/cmd/entire/cli/strategy/manual_commit_hooks.go",
                            "old_string": '\t"bufio"', "new_string": '\t"bufio"\n\t"os/exec"'}, REFUSED, error=True)
    _tool(session, "mcp__linear-server__get_issue", {"id": "ENT-241"}, _created("ENT-241", ENT_241["title"]))
    _tool(session, "mcp__linear-server__create_issue", ENT_242, _created("ENT-242", ENT_242["title"]))
    _tool(session, "mcp__linear-server__update_issue", {"id": "ENT-241", "state": "Cancelled"},
          _created("ENT-241", ENT_241["title"]))
    drafts = session.end()
    assert not [d for d in drafts if d.source == "user" and "linear issue" in d.title], [d.title for d in drafts]
    [task] = [d for d in drafts if "ticket" in d.tags and d.kind == "task"]
    assert "let's not make this change in this branch" in task.body.splitlines()[1], task.body
    assert "manual_commit_hooks.go" in task.body.splitlines()[1]
    [cancelled] = [d for d in drafts if "ticket" in d.tags and d.kind == "decision"]
    assert "this branch" not in cancelled.body


def test_an_ask_to_file_an_issue_the_session_did_not_file_stays_the_persons() -> None:
    session = Session().user("our git status has broken, why?")
    _tool(session, "mcp__linear-server__create_issue", ENT_241, _created("ENT-241", ENT_241["title"]))
    _tool(session, "Edit", {"file_path": f"{ROOT}/cmd/entire/cli/strategy/manual_commit_hooks.go",
                            "old_string": '\t"bufio"', "new_string": '\t"bufio"\n\t"os/exec"'}, REFUSED, error=True)
    _tool(session, "mcp__linear-server__get_issue", {"id": "ENT-241"}, _created("ENT-241", ENT_241["title"]))
    drafts = session.end()
    assert [d.kind for d in drafts if d.source == "user" and "linear issue" in d.title] == ["decision"]


def test_a_rule_that_speaks_of_bugs_is_no_ask_to_file_the_issue_filed_later() -> None:
    # The whole-diff review: a convention went into the body of an unrelated issue and was lost.
    drafts = (Session().user("Fix the crash in the CSV importer. Always add a regression test for every bug you fix.")
              .edit("importer/csv.py", "rows = read(f)", "rows = read(f) or []")
              .run('gh issue create --title "Docs site build is slow" --body "Takes 4 minutes on CI."',
                   "https://github.com/acme/fw/issues/41\n")
              .say("Fixed the importer and filed #41 for the slow docs build.").end())
    assert [d.title for d in drafts if d.kind == "convention"] == ["Always add a regression test for every bug you fix"]
    [task] = [d for d in drafts if "ticket" in d.tags]
    assert "regression test" not in task.body
