"""Memory end to end on a real store, the real extractor and the real MiniLM model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from graphmem import Config, InvalidInput, Memory, NotFound
from graphmem.store import ops


def test_add_links_entities_and_finds_it(memory: Memory) -> None:
    item = memory.add("KeyError: 'DATABASE_URL' in connect(): export DATABASE_URL before pytest",
                      kind="pitfall", files=["src/shop/db.py"])
    linked = {ln["entity"]["id"] for ln in memory.entities(item.id) if "entity" in ln}
    assert "envvar:DATABASE_URL" in linked
    assert any(e.startswith("file:") and e.endswith("src/shop/db.py") for e in linked)
    result = memory.search("tests fail because the database url variable is missing")
    assert result.hits and result.hits[0].item.id == item.id
    assert 0 < result.tokens <= result.budget


def test_duplicate_meaning_merges(memory: Memory) -> None:
    first = memory.add("Use pnpm, not npm, for the admin frontend", kind="convention")
    again = memory.add("Use pnpm, not npm, for the admin frontend.", kind="convention")
    assert again.id == first.id and again.hit_count == 1
    assert len(memory.list(kind="convention")) == 1


def test_rebuild_from_journal_equals_live(memory: Memory) -> None:
    a = memory.add("We chose psycopg 3 over SQLAlchemy for OrderService", kind="decision",
                   files=["src/shop/api.py"])
    memory.add("Local Postgres listens on localhost:5433 on CI", kind="env")
    memory.update(a.id, status="stale", stale_reason="OrderService changed")
    before = memory.store.export_rows()
    memory.rebuild()
    assert memory.store.export_rows() == before
    assert a.id in [h.item.id for h in memory.search("psycopg").hits]


def test_deleted_database_is_rebuilt_with_nothing_lost(home: Path, repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo)) as mem:
        item = mem.add("Never commit .env files", kind="convention")
        before = mem.store.export_rows()
        db = mem.dir / "graph.kuzu"
    db.unlink()
    with Memory(Config(home=home, cwd=repo)) as mem:
        mem.rebuild()
        assert mem.store.export_rows() == before
        assert mem.get_item(item.id).title == "Never commit .env files"


def test_forget_leaves_no_trace(memory: Memory) -> None:
    keep = memory.add("Run make test before pushing", kind="convention")
    gone = memory.add("The staging password rotation happens on zanzibarquux day", kind="note")
    memory.search("zanzibarquux")
    memory.forget(gone.id)
    with pytest.raises(NotFound):
        memory.get_item(gone.id)
    for path in memory.dir.rglob("*"):
        if path.is_file():
            assert b"zanzibarquux" not in path.read_bytes(), path
    assert all(h.item.id != gone.id for h in memory.search("zanzibarquux rotation").hits)
    memory.rebuild()
    assert memory.get_item(keep.id)
    with pytest.raises(NotFound):
        memory.get_item(gone.id)


@pytest.mark.parametrize("title, error", [
    ("", "empty text"),
    ("   ", "empty text"),
    ("x" * 5_000_000, "too long"),
    ("binary\x00junk", "NUL"),
])
def test_bad_text_is_refused_and_nothing_lost(memory: Memory, title: str, error: str) -> None:
    kept = memory.add("Existing fact stays", kind="fact")
    with pytest.raises(InvalidInput, match=error):
        memory.add(title)
    assert [i.id for i in memory.list()] == [kept.id]


def test_unknown_id_is_not_found(memory: Memory) -> None:
    for call in (memory.get, memory.forget, memory.evidence, memory.entities):
        with pytest.raises(NotFound):
            call("does-not-exist")


@pytest.mark.parametrize(("query", "finds"), [("", False), ("x" * 100_000, None),
                                              ("Wie konfiguriere ich den Proxy?", True),
                                              ("proxy " * 20_000, True), ("🙂" * 50, None)])
def test_odd_queries_answer_sensibly(memory: Memory, query: str, finds: bool | None) -> None:
    item = memory.add("Set HTTPS_PROXY for pip behind the corporate proxy", kind="env")
    result = memory.search(query)
    assert result.tokens <= result.budget
    if finds is not None:
        assert ([h.item.id for h in result.hits][:1] == [item.id]) is finds


def test_an_unknown_scope_finds_nothing_and_raises_nothing(memory: Memory) -> None:
    memory.add("Set HTTPS_PROXY for pip behind the corporate proxy", kind="env")
    assert memory.search("proxy", project="no/such-project").hits == []
    assert memory.search("proxy", files=["nowhere/at/all.py"], symbols=["Nope.nothing"]).hits


@pytest.mark.parametrize("budget", [0, 10**6])
def test_budget_extremes(memory: Memory, budget: int) -> None:
    memory.add("Set HTTPS_PROXY for pip behind the corporate proxy", kind="env")
    result = memory.search("proxy", budget=budget)
    brief = memory.brief(budget)
    assert result.tokens <= budget and brief.tokens <= budget
    assert (len(result.hits) == 0) == (budget == 0)


def test_worktrees_share_one_project(home: Path, repo: Path) -> None:
    from tests.conftest import git

    git(repo, "worktree", "add", "-q", "-b", "feature", str(repo.parent / "wt"))
    with Memory(Config(home=home, cwd=repo)) as a:
        main_dir, main_branch = a.dir, a.branch
    with Memory(Config(home=home, cwd=repo.parent / "wt")) as b:
        assert b.dir == main_dir
        assert (main_branch, b.branch) == ("main", "feature")


def test_data_lives_outside_the_repo(memory: Memory, repo: Path) -> None:
    memory.add("a fact", kind="fact")
    assert not str(memory.dir).startswith(str(repo))
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout == ""


def test_crash_between_journal_and_graph_is_healed_on_open(home: Path, repo: Path) -> None:
    """An owner killed after the journal fsync but before the graph write loses nothing."""
    from graphmem.models import MemoryItem

    with Memory(Config(home=home, cwd=repo)) as mem:
        kept = mem.add("Graph and journal agree before the crash", kind="fact")
        orphan = MemoryItem(project=mem.project, title="Written to the journal, then the owner died")
        mem.journal.append(ops.PutItems([mem._item_row(orphan)]))
    with Memory(Config(home=home, cwd=repo)) as mem:
        assert mem.get_item(orphan.id).title.startswith("Written to the journal")
        assert mem.get_item(kept.id)
        live = mem.store.export_rows()
        assert mem.rebuild()["embedded"] == 1  # the orphan's vector was never written
        rebuilt = mem.store.export_rows()
        assert {r["id"] for r in rebuilt.pop("ItemVector")} == {kept.id, orphan.id}
        live.pop("ItemVector")
        assert rebuilt == live


def test_a_hit_summarises_a_long_body_as_the_full_body_would(memory: Memory) -> None:
    from graphmem.retrieve.render import SUMMARY_TOKENS

    # One 3,000-character word is a single unknown token: the search mirror keeps only the
    # first 1,000 characters of a body, so this summary must come from the whole body.
    odd = memory.add("Deploy key rotation", body="z" * 3000 + " then run make rotate-keys",
                     kind="env", dedupe=False)
    wordy = memory.add("Changelog style", body="Every entry starts with a verb. " * 200,
                       kind="convention", dedupe=False)
    hits = {h.item.id: h.item.body for h in memory.search("deploy key rotation changelog").hits}
    for item in (odd, wordy):
        assert hits[item.id] == memory.tokens.truncate(memory.get_item(item.id).body, SUMMARY_TOKENS)
    assert "rotate-keys" in hits[odd.id]


def test_a_file_mentioned_before_it_was_indexed_is_anchored_once_it_is(memory: Memory,
                                                                        repo: Path) -> None:
    from tests.conftest import git

    item = memory.add("ECONNREFUSED in pytest: run make db-up first", kind="pitfall",
                      files=["src/shop/db.py"])
    (repo / "src" / "shop").mkdir(parents=True)
    (repo / "src" / "shop" / "db.py").write_text("def connect():\n    return None\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "db")
    assert memory.index_code()["resolved_mentions"] == 1
    rows = memory.store.export_rows()
    assert [(r["source"], r["target"]) for r in rows["ANCHORED_TO"]] == [
        (item.id, "file:src/shop/db.py")]
    assert [r["weight"] for r in rows["MENTIONS"] if r["target"].startswith("file:")] == [1.0]


def test_a_brief_with_room_left_lets_its_cut_lines_say_more(memory: Memory) -> None:
    long_title = ("`mix test` needs the Endpoint configured in config/test.exs: secret_key_base, "
                  "server: false and an http port, or every LiveView test fails with a RuntimeError")
    memory.add(long_title, kind="convention")
    memory.add("Use pnpm, not npm, in assets/", kind="convention")
    roomy = memory.brief(400)
    assert "or every LiveView test fails with a RuntimeError" in roomy.text and roomy.tokens <= 400
    tight = memory.brief(60)  # room for the lines at their usual size only
    assert tight.tokens <= 60 and "RuntimeError" not in tight.text


def test_a_brief_line_that_only_repeats_a_line_above_it_is_left_out(memory: Memory) -> None:
    # held-out review (turbodiff): the brief's two lines were the last session's summary, which
    # names its commit, and the commit itself.
    memory.add("Session 2026-09-28: committed \"Drop CLI cost from failed agent runs\"; 2 files changed",
               kind="summary", source="user")
    memory.add("Drop CLI cost from failed agent runs", kind="fact", source="user")
    memory.add("Deploys need check:types, lint and test:integration green", kind="convention", source="user")
    text = memory.brief(400).text
    assert text.count("Drop CLI cost from failed agent runs") == 1, text
    assert "check:types" in text


def test_the_brief_shows_what_the_last_session_handed_over_and_dates_it_by_the_session(memory: Memory) -> None:
    # Held-out review 5 (onion-sellers): the one-time setup left to the person is what the next session needs first.
    memory.add("Session 2026-09-15: I committed the changes and opened PR #3; 5 files changed", kind="summary",
               source="rule", tags=["session-summary", "handoff"])
    memory.add("Left to the user: Before the first run, you need to: Add the `AA_API_KEY` repository secret",
               kind="task", source="rule", tags=["handoff", "left-to-user"])
    memory.add("`git commit` hangs here: Entire's commit hook is waiting for an answer to a prompt", kind="pitfall",
               source="rule", tags=["hang", "git"])
    memory.add("Confirms the pattern: `config/` holds inputs, `data/` holds generated output", kind="fact",
               source="rule", tags=["discovery"])
    memory.add("Unfinished: Pull is accepted, but it's stalled out. — last seen: Failed to pull image "
               "\"ollama/ollama:0.32.8\": not found", kind="task", source="rule", tags=["unfinished"])
    text = memory.brief(400).text
    assert "- last session (2026-09-15): I committed the changes" in text
    assert "AA_API_KEY" in text and "hangs here" in text and "Unfinished: Pull is accepted" in text
    assert "Confirms the pattern" not in text  # a rule's inference with no evidence yet


def test_the_last_session_is_the_latest_by_its_own_day_not_by_when_it_was_stored(memory: Memory) -> None:
    memory.add("Session 2026-12-01: shipped the cron job; 2 files changed", kind="summary", source="rule",
               tags=["session-summary"])
    memory.add("Session 2026-09-15: imported from an old transcript; 1 file changed", kind="summary", source="rule",
               tags=["session-summary"])  # stored later
    assert memory.brief(400).lines[0].startswith("- last session (2026-12-01): shipped the cron job")


def test_a_task_runners_task_names_the_command(memory: Memory) -> None:
    # entire-cli afb1dd35: a question about `mise run test:integration` matched every `mise run lint`
    # finding by the entity `mise run`, and they crowded out the one item that answered it
    for rule in ("ireturn", "revive", "maintidx", "gocritic", "goconst"):
        memory.add(f"`mise run lint` flags {rule}: fix the {rule} errors before committing", kind="pitfall")
    answer = memory.add("Integration tests were slow because 38 top-level tests ran one after another; "
                        "t.Parallel() brought the suite from 209 s to about 50 s", kind="fact")
    result = memory.search("why does `mise run test:integration` take three and a half minutes?", k=3)
    assert result.hits[0].item.id == answer.id, [h.item.title for h in result.hits]


def test_an_item_stored_under_a_runners_old_command_name_still_matches_by_entity(memory: Memory) -> None:
    # Review: releases before the task-runner names linked `mise run lint` to the entity `mise run`;
    # those items lost their entity match. The name the item gives here is that entity.
    old = memory.add("Before a release, always `mise run` the whole task list, then tag", kind="convention")
    result = memory.search("`mise run lint` fails again with ireturn", k=5, explain=True)
    hit = next(h for h in result.hits if h.item.id == old.id)
    assert "entity" in hit.channels
