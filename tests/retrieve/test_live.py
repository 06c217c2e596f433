"""Live context: what a session read and edited (its spooled hook events) and the work tree's
uncommitted changes, mapped to functions by the real parser, in a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import Memory
from graphmem.capture.event import HookEvent
from graphmem.capture.spool import Spool
from graphmem.cli import main
from graphmem.retrieve import live
from tests.conftest import git

SESSIONS = "src/sessions.py"
SOURCE = '''"""Sessions."""


def resolve_redirects(resp, limit=30):
    seen = 0
    while resp.is_redirect:
        resp = follow(resp)
        seen += 1
    return resp


def merge_settings(request_setting, session_setting):
    merged = dict(session_setting)
    merged.update(request_setting)
    return merged
'''
REDIRECTS_LOOP = ("resolve_redirects() can loop forever: a redirect that points back at the same "
                  "URL is followed again and again; count the hops and stop at the limit")
SETTINGS_LOOP = ("merge_settings() can loop forever: a settings mapping that refers to itself is "
                 "walked again and again; copy it before the loop")
HOP_CHECK = "        if seen > limit:\n            raise TooManyRedirects(seen)\n"


@pytest.fixture
def code_repo(repo: Path) -> Path:
    (repo / "src").mkdir()
    (repo / SESSIONS).write_text(SOURCE)
    (repo / "src/api.py").write_text("def get(url):\n    return url\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "sessions")
    return repo


def edit_redirects(repo: Path) -> str:
    """Add the hop check inside resolve_redirects, as an agent's Edit would; its spooled text."""
    path = repo / SESSIONS
    path.write_text(path.read_text().replace("        seen += 1\n", "        seen += 1\n" + HOP_CHECK))
    return "\n".join(["-        seen += 1", "+        seen += 1",
                      *(f"+{line}" for line in HOP_CHECK.splitlines())])


def spool(tmp_path: Path, *events: HookEvent) -> Path:
    directory = tmp_path / "spool"
    for event in events:
        Spool(directory).append(event)
    return directory


def tool(repo: Path, name: str, path: str, text: str = "", ts: float = 0.0,
         session: str = "s-1") -> HookEvent:
    return HookEvent("post-tool", agent="claude-code", session_id=session, cwd=str(repo),
                     tool=name, files=[str(repo / path)], text=text, ts=ts or None)


def by_name(entries: list[live.ContextEntry]) -> dict[str, live.ContextEntry]:
    return {e.name: e for e in entries}


def test_an_edit_names_the_function_it_changed_and_a_read_only_its_file(
        code_repo: Path, tmp_path: Path) -> None:
    text = edit_redirects(code_repo)
    git(code_repo, "commit", "-q", "-am", "hop check")  # no diff: only the session speaks
    directory = spool(tmp_path, tool(code_repo, "Read", "src/api.py", ts=100.0),
                      tool(code_repo, "Edit", SESSIONS, text, ts=200.0))
    found = by_name(live.LiveContext(code_repo, directory).entries("s-1"))
    assert set(found) == {SESSIONS, "src/api.py", f"{SESSIONS}::resolve_redirects"}
    assert found[f"{SESSIONS}::resolve_redirects"].source.startswith("edited in this session")
    assert found[SESSIONS].weight == 1.0
    assert found["src/api.py"].weight < found[SESSIONS].weight  # read, and touched earlier


def test_recency_orders_files_and_other_sessions_do_not_count(code_repo: Path,
                                                              tmp_path: Path) -> None:
    git(code_repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    directory = spool(tmp_path, tool(code_repo, "Read", SESSIONS, ts=300.0),
                      tool(code_repo, "Read", "src/api.py", ts=100.0),
                      tool(code_repo, "Read", "README.md", ts=50.0, session="other"))
    found = live.LiveContext(code_repo, directory).entries("s-1")
    assert [e.name for e in found] == [SESSIONS, "src/api.py"]
    assert found[0].weight > found[1].weight


def test_codex_apply_patch_hunks_map_to_functions(code_repo: Path, tmp_path: Path) -> None:
    path = code_repo / SESSIONS
    path.write_text(path.read_text().replace("merged.update(request_setting)",
                                             "merged.update(request_setting or {})"))
    git(code_repo, "commit", "-q", "-am", "patched")
    patch = ("*** Begin Patch\n*** Update File: src/sessions.py\n@@ def merge_settings\n"
             "     merged = dict(session_setting)\n-    merged.update(request_setting)\n"
             "+    merged.update(request_setting or {})\n*** End Patch")
    event = HookEvent("post-tool", agent="codex", session_id="s-1", cwd=str(code_repo),
                      tool="apply_patch", text=patch, files=[SESSIONS])
    found = by_name(live.LiveContext(code_repo, spool(tmp_path, event)).entries("s-1"))
    assert f"{SESSIONS}::merge_settings" in found
    assert f"{SESSIONS}::resolve_redirects" not in found


def test_uncommitted_changes_map_to_functions_and_git_runs_only_when_something_changed(
        code_repo: Path, tmp_path: Path) -> None:
    edit_redirects(code_repo)
    context = live.LiveContext(code_repo, tmp_path / "spool")
    found = by_name(context.entries())
    assert found[f"{SESSIONS}::resolve_redirects"].source.startswith("uncommitted change")
    assert f"{SESSIONS}::merge_settings" not in found
    context.entries()
    assert context.diff.runs == 1  # nothing changed: the diff is not read again
    api = code_repo / "src/api.py"
    api.write_text(api.read_text() + "\n\ndef post(url):\n    return url\n")
    git(code_repo, "add", "src/api.py")  # the index changed
    assert "src/api.py::post" in by_name(context.entries())
    assert context.diff.runs == 2


def test_a_session_without_file_events_gives_way_to_the_latest_of_the_checkout(
        code_repo: Path, tmp_path: Path) -> None:
    git(code_repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    directory = spool(tmp_path, tool(code_repo, "Read", SESSIONS, session="agent-7"))
    found = live.LiveContext(code_repo, directory).entries("an-id-from-before-a-clear")
    assert [e.name for e in found] == [SESSIONS]


def test_search_explains_where_each_context_entity_came_from(
        memory: Memory, code_repo: Path) -> None:
    memory.index_code()
    redirects = memory.add(REDIRECTS_LOOP, kind="pitfall", session_id="a")
    memory.add(SETTINGS_LOOP, kind="pitfall", session_id="b")
    text = edit_redirects(code_repo)
    Spool(memory.dir / "spool").append(tool(code_repo, "Edit", SESSIONS, text))
    result = memory.search("why does this loop forever?", live=True, session_id="s-1",
                           explain=True)
    assert result.hits[0].item.id == redirects.id
    sources = {c["name"]: c["source"] for c in result.context or []}
    assert sources[f"{SESSIONS}::resolve_redirects"].startswith("edited in this session")
    given = memory.search("loop", files=["src/api.py"], live=True, explain=True)
    assert given.context == [{"kind": "file", "name": "src/api.py", "weight": 1.0,
                              "source": "given"}]  # explicit context wins


def test_the_cli_explain_shows_the_live_context(capsys: pytest.CaptureFixture[str],
                                                home: Path, code_repo: Path) -> None:
    assert main(["add", "--kind", "pitfall", "--cwd", str(code_repo),
                 "resolve_redirects() can loop forever on a redirect to itself"]) == 0
    edit_redirects(code_repo)
    capsys.readouterr()
    assert main(["search", "loop forever", "--live", "--explain", "--cwd", str(code_repo)]) == 0
    out = capsys.readouterr().out
    assert f"symbol   0.80  {SESSIONS}::resolve_redirects  (uncommitted change ({SESSIONS}))" in out


def test_the_spool_is_read_incrementally_and_follows_a_rotation(code_repo: Path,
                                                                tmp_path: Path) -> None:
    git(code_repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    directory = spool(tmp_path, tool(code_repo, "Read", SESSIONS, ts=100.0))
    context = live.LiveContext(code_repo, directory)
    assert [e.name for e in context.entries("s-1")] == [SESSIONS]
    Spool(directory).append(tool(code_repo, "Read", "src/api.py", ts=200.0))
    assert [e.name for e in context.entries("s-1")] == ["src/api.py", SESSIONS]
    (directory / "events.jsonl").rename(directory / "events.1.jsonl")  # what ingest's rotation does
    Spool(directory).append(tool(code_repo, "Read", "README.md", ts=300.0))
    assert [e.name for e in context.entries("s-1")] == ["README.md", "src/api.py", SESSIONS]


def test_a_caller_that_cannot_wait_never_runs_git_twice_for_one_change(code_repo: Path,
                                                                       tmp_path: Path) -> None:
    edit_redirects(code_repo)
    context = live.LiveContext(code_repo, tmp_path / "spool")
    context.entries(wait=False)  # the prompt hook: git reads in the background
    assert f"{SESSIONS}::resolve_redirects" in by_name(context.entries(wait=True))
    assert context.diff.runs == 1
