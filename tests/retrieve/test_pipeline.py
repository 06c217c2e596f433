"""The retrieval pipeline on a real store: what context expansion and graph expansion count."""

from __future__ import annotations

import time

import pytest

from graphmem import Memory

SESSIONS = "src/shop/sessions.py"
FILLER = ("Document the release checklist", "Rename the billing fixtures",
          "Pin the linter version in CI", "Translate the settings page", "Speed up image thumbnails",
          "Drop the unused logo assets", "Explain the cache headers in the README",
          "Sort the imports of the admin views")


def _filler(memory: Memory, start: float) -> None:
    for n, text in enumerate(FILLER):
        memory.add(text, kind="note", files=[f"src/misc/part_{n}.py"], dedupe=False,
                   created_at=start - (n + 10) * 86_400)


@pytest.mark.parametrize("code", [True, False], ids=["changes-to-code", "turns"])
def test_only_turns_of_an_exchange_lend_each_other_their_score(memory: Memory,
                                                               code: bool) -> None:
    """A commit history records items minutes apart: the change after a match is not its
    answer. Items about no file (turns of a conversation) still are each other's context."""
    start = time.time() - 5 * 86_400
    _filler(memory, start)
    memory.add("Retry the upload when the proxy resets the connection", kind="note",
               files=["src/upload.py"] if code else [], dedupe=False, created_at=start)
    after = memory.add("Bump the version for the spring release", kind="note",
                       files=["CHANGELOG.md"] if code else [], dedupe=False,
                       created_at=start + 60)
    weaker = memory.add("Log each upload attempt made through the proxy", kind="note",
                        files=["src/log.py"], dedupe=False, created_at=start - 2 * 86_400)
    ranked = memory.rank("retry the upload when the proxy resets the connection")
    assert (ranked.index(weaker.id) < ranked.index(after.id)) == code


def test_touching_more_functions_of_a_context_file_is_no_more_evidence(memory: Memory) -> None:
    """Every item that touched a function of the file already matches the file; counting its
    functions again put the widest change first, whatever the query said."""
    start = time.time() - 3 * 86_400
    wide = memory.add("Small cleanup", kind="note", files=[SESSIONS], dedupe=False,
                      created_at=start, symbols=[f"{SESSIONS}::Session.{name}" for name in (
                          "send", "close", "mount", "request", "get_adapter", "rebuild_auth")])
    focused = memory.add("Small cleanup", kind="note", files=[SESSIONS], dedupe=False,
                         created_at=start + 86_400,
                         symbols=[f"{SESSIONS}::Session.merge_environment_settings"])
    assert memory.rank("cleanup", files=[SESSIONS])[:2] == [focused.id, wide.id]  # newer first
