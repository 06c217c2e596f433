"""Sessions ingested into a real store: lessons met again are one item, marked as recurring, and
the brief shows it; items are keyed, not merged by similarity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphmem.capture.event import HookEvent
from graphmem.ingest import compress_session, event_of, observation_of
from graphmem.store.base import ItemFilter
from tests.capture.test_lessons import PUSH_FAIL, ROOT, ZOIA_EVENTS, Session


def ingest(memory: Any, session: Session, tmp_path: Path) -> None:
    path = tmp_path / f"{session.sid}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in session.records))
    events = [*session.events, HookEvent("session-end", "claude-code", session.sid, ROOT, ROOT,
                                         ts=session.t + 1)]
    for event in events:
        event.transcript_path, event.project = str(path), memory.project
    memory.put_observations([observation_of(e) for e in events])
    compress_session(memory, session.sid)


def test_hook_fields_are_observation_columns_and_come_back_to_the_compressor(memory: Any) -> None:
    """cwd, transcript path and the agent's extra fields are stored as the observation's own
    columns, not smuggled through tool_input, and the compressor's event has them again."""
    event = HookEvent("post-tool", "codex", "s9", "/work/app", memory.project, tool="Bash",
                      tool_input={"timeout": 5}, command="pytest", transcript_path="/t/s9.jsonl",
                      extra={"turn_id": "3", "model": "m"})
    memory.put_observations([observation_of(event)])
    row, = memory.store.session_observations("s9")
    assert (row["cwd"], row["transcript_path"], row["extra"], row["tool_input"]) == (
        "/work/app", "/t/s9.jsonl", {"turn_id": "3", "model": "m"}, {"timeout": 5})
    back = event_of(row)
    assert (back.cwd, back.transcript_path, back.extra, back.tool_input) == (
        event.cwd, event.transcript_path, event.extra, event.tool_input)


def live(memory: Any) -> list[dict[str, Any]]:
    return memory.store.list_items(ItemFilter(project=memory.project, statuses=("active",)), limit=100)


def test_a_pitfall_met_in_two_sessions_is_one_recurring_item_the_brief_shows(memory: Any,
                                                                             tmp_path: Path) -> None:
    for sid, branch in (("s-a", "spotter-fum"), ("s-b", "spotter-dov")):
        session = (Session(sid).run("git push 2>&1", "Exit code 128\n" + PUSH_FAIL.replace("spotter-fum", branch),
                                    error=True)
                   .run(f"git push --set-upstream origin {branch} 2>&1", "branch set up"))
        ingest(memory, session, tmp_path)
    pushes = [r for r in live(memory) if "no upstream branch" in r["title"]]
    assert len(pushes) == 1 and "recurring" in pushes[0]["tags"]
    brief = memory.brief()
    assert brief.lines[0].startswith("- last session (")
    assert any(pushes[0]["id"] in line for line in brief.lines[1:3])


def test_a_recurring_pitfall_keeps_what_each_session_said_of_it(memory: Any, tmp_path: Path) -> None:
    # spotter 258c7280 then 8463c716 (compaction summaries): credo's `length/1` warning, first in
    # a guard over message_ids, then in tests; the later text replaced the earlier, and the prompt
    # about message_ids found nothing.
    head = ("This session is being continued from a previous conversation that ran out of context.\n"
            "Summary:\n1. Primary Request and Intent:\n   Work on the task.\n\n4. Errors and fixes:\n")
    bullets = {"s-a": "   - **Credo warning about `length/1` in guard**: Changed `when length(message_ids) > 0` "
                      "to pattern match `[_ | _] = message_ids`.\n",
               "s-b": "   - **Credo `length/1` warnings** in tests: Changed `length(thinking_lines) > 0` and "
                      "`length(result) > 0` to `thinking_lines != []` and `result != []`.\n"}
    for sid, bullet in bullets.items():
        session = (Session(sid).user("continue the task")
                   .user(head + bullet + "\n5. Problem Solving:\n   - done\n", isCompactSummary=True)
                   .say("Continuing."))
        ingest(memory, session, tmp_path)
    credo = [r for r in live(memory) if "length/1" in r["title"]]
    assert len(credo) == 1 and "recurring" in credo[0]["tags"]
    assert credo[0]["title"].startswith("Credo `length/1` warnings in tests")
    assert "[_ | _] = message_ids" in credo[0]["body"] and "result != []" in credo[0]["body"]


def test_two_lessons_about_one_test_file_stay_two_items(memory: Any, tmp_path: Path) -> None:
    session = (Session("s-c")
               .run("mix test test/live_test.exs", "Exit code 2\n** (RuntimeError) no :secret_key_base "
                    "configuration found in SpotterWeb.Endpoint.", error=True)
               .say("The test config is missing `secret_key_base` for SpotterWeb.Endpoint.")
               .edit("config/test.exs", "import Config", "import Config\nconfig :spotter, SpotterWeb.Endpoint")
               .run("mix test test/live_test.exs", "Exit code 2\n** (RuntimeError) Phoenix LiveView requires "
                    "lazy_html as a test dependency.", error=True)
               .say("Need `lazy_html` as a test dependency for LiveView tests.")
               .edit("mix.exs", "deps", "deps {:lazy_html, only: :test}")
               .run("mix test test/live_test.exs", "5 tests, 0 failures"))
    ingest(memory, session, tmp_path)
    titles = [r["title"] for r in live(memory) if r["kind"] == "pitfall"]
    assert len(titles) == 2, titles


def test_the_prompt_context_follows_the_files_the_session_is_editing(memory: Any) -> None:
    client = memory.add("The retry loop never stops when the proxy answers 407: cap the attempts",
                        kind="pitfall", files=["src/net/client.py"])
    export = memory.add("The export loop never stops when a font is missing: check fonts first",
                        kind="pitfall", files=["src/report/pdf.py"])
    prompt = "why does this loop never stop?"
    for path, wanted, other in (("src/net/client.py", client, export), ("src/report/pdf.py", export, client)):
        session = f"s-{path}"
        edit = HookEvent("post-tool", "claude-code", session, str(memory.ref.root), memory.project,
                         tool="Edit", files=[str(memory.ref.root / path)], text="-a\n+b")
        memory.put_observations([observation_of(edit)])
        context = memory.prompt_context(prompt, session_id=session)
        entries = context.split("\n- ")
        assert wanted.id in entries[1] and other.id not in entries[1], context


def test_a_long_body_shows_the_lines_the_prompt_is_about(memory: Any) -> None:
    filler = [f"- Update scripts/hook_{n}.sh to send the session id in the POST body" for n in range(8)]
    body = "\n".join([*filler, ("- Tracing never blocks a hook: a malformed traceparent header is "
                      "dropped and the request goes on without a trace")])
    item = memory.add("feat: propagate traceparent headers in the plugin hook scripts", body=body,
                      kind="fact")
    context = memory.prompt_context("what happens when a hook sends a malformed traceparent header?")
    entry = next(e for e in context.split("\n- ") if item.id in e)
    assert "malformed traceparent header is dropped" in entry
    assert len(entry) <= 500


def test_a_session_summary_is_injected_only_where_it_clearly_bears_on_the_prompt(memory: Any) -> None:
    # entire-cli cde341db's summary was the one place the telemetry fix was said.
    body = "\n".join([
        "Asked: there's a few hundred millis delay before my shell prompt returns after every command",
        "Reported done:",
        "- Added `runtime/trace` support via `ENTIRE_TRACE` env var in `main.go` (for future profiling)",
        "- Fixed PostHog telemetry blocking CLI exit by setting:",
        "- `ShutdownTimeout: 100ms` - caps how long `Close()` waits",
        "Files changed: " + ", ".join(f"cmd/entire/cli/file_{n}.go" for n in range(12))])  # as summaries write it
    summary = memory.add("Session 2026-01-16: changed cmd/entire/main.go, cmd/entire/cli/telemetry/telemetry.go",
                         body=body, kind="summary")
    context = memory.prompt_context("every entire command, even `entire help`, waits a noticeable fraction "
                                    "of a second before the shell prompt comes back")  # sessbench's probe
    entry = next(e for e in context.split("\n- ") if summary.id in e)
    assert entry.startswith("session summary: Session 2026-01-16") and "ShutdownTimeout" in entry
    assert len(entry) <= 500
    assert summary.id not in memory.prompt_context("rename the payment webhook handler and update its tests")


def test_an_injected_entry_spends_no_room_on_markdown_headings_or_fences(memory: Any) -> None:
    # entire-cli 03a1382e: a Linear issue's description, stored as the open task's body.
    body = ("Filed in Linear as ENT-242 (team Entire, project Troy).\n## Problem\n"
            "go-git's `worktree.Status()` rewrites the worktree index file.\n```\n"
            "fatal: unable to read e53647ba1f1e5203bedff558b482f178db045555\n```\n### Fix\n"
            "Replace `getStagedFiles`' `worktree.Status()` with `git diff --cached --name-only`.")
    task = memory.add("Open Linear issue ENT-242: Replace go-git worktree.Status() with git CLI", body=body,
                      kind="task")
    context = memory.prompt_context("git status: fatal: unable to read e53647ba1f1e5203bedff558b482f178db045555")
    entry = next(e for e in context.split("\n- ") if task.id in e)
    assert "fatal: unable to read" in entry
    assert not any(line.strip().startswith(("#", "```")) for line in entry.splitlines())


def test_an_entry_shows_the_short_line_that_answers_before_a_long_one_that_shares_more_words() -> None:
    # entire-cli's telemetry session summary: the tracing line is short; the agent's last message
    # is long and holds "start" ("cold start") only because it is long. Weights as the store
    # gave sessbench's probe.
    from graphmem.models import ItemKind, MemoryItem
    from graphmem.retrieve.render import inject_entry

    body = ("Asked: there's a few hundred millis delay before my shell prompt returns after every command\n"
            "Reported done:\n"
            "- Added `runtime/trace` support via `ENTIRE_TRACE` env var in `main.go` (for future profiling)\n"
            "- Fixed PostHog telemetry blocking CLI exit by setting:\n"
            "Agent's last message: Without telemetry: ~15ms. With telemetry: ~135ms (100ms is the shutdown "
            "timeout). The remaining ~20ms is the `machineid.ProtectedID()` call. The fix is working - down "
            "from ~800ms to ~135ms consistently after the first run (and ~700ms cold start, which is the "
            "network connection).")
    item = MemoryItem(project="p", kind=ItemKind.summary, body=body,
                      title="Session 2026-12-02: changed cmd/entire/main.go; 2 files changed")
    weights = {"goe": 4.48, "start": 3.38, "want": 2.87, "trace": 2.87, "see": 2.08, "time": 2.08,
               "built": 2.08, "cli": 0.92}
    entry = inject_entry(item, max_chars=480, weights=weights)
    assert "ENTIRE_TRACE" in entry, entry
    assert len(entry) <= 480


def test_an_answer_cut_short_in_its_title_keeps_the_rest_in_the_entry() -> None:
    # entire-cli 03a1382e: the answer's start became the title ("… { "strategy_options": {
    # "summarize"…"), and the body line holding all of it was dropped as said by the title, so
    # the injected entry never showed the setting `"enabled": true`.
    from graphmem.models import ItemKind, MemoryItem
    from graphmem.retrieve.render import inject_entry

    answer = ('In `.entire/settings.json` (or `.entire/settings.local.json`): { "strategy_options": '
              '{ "summarize": { "enabled": true } } }')
    item = MemoryItem(project="p", kind=ItemKind.fact,
                      title=("what are the settings I need to enable auto-summarization? In "
                             '`.entire/settings.json` (or `.entire/settings.local.json`): { '
                             '"strategy_options": { "summarize"…'),
                      body=("Asked: what are the settings I need to enable auto-summarization?\n"
                            f"The agent answered: {answer}"))
    entry = inject_entry(item, max_chars=480, weights={"summari": 3.0, "setting": 2.0})
    assert '"enabled": true' in entry, entry
    assert entry.count("strategy_options") == 1, entry  # the rest only, not the whole line again
    whole = MemoryItem(project="p", kind=ItemKind.fact, title="Asked: what are the settings",
                       body="Asked: what are the settings")
    assert inject_entry(whole).count("what are the settings") == 1


def test_a_long_memory_written_in_one_piece_keeps_past_its_title_in_the_entry(memory: Any) -> None:
    # sessbench, gold statements stored as memories (as an agent writes them through memory_add):
    # the first sentence became the title, the body line that starts with it was dropped as
    # said by the title, and the entry lost the fix ("EnsureEntireGitignore", "helpers ...").
    # Injection of those statements: 42 -> 55 of 73 with this.
    from graphmem.retrieve.render import inject_entry

    split = memory.add(
        "maintidx flagged handleOpencodeStop (cyclomatic complexity 30) in "
        "cmd/entire/cli/hooks_opencode_handlers.go; it was split into helpers parseOpencodeStopInput, "
        "setupOpencodeSession and saveOpencodeCheckpoint (revive's redefines-builtin-id was fixed by "
        "renaming a `new` return value to `added`).", kind="pitfall")
    assert split.title.endswith("hooks_opencode_handlers.go;")
    assert "parseOpencodeStopInput" in inject_entry(split)
    assert inject_entry(split).count("handleOpencodeStop") == 1  # the rest only
    unbroken = memory.add(
        "`entire enable --agent <agent>` (non-interactive path setupAgentHooksNonInteractive in "
        "cmd/entire/cli/setup.go) never created .entire/.gitignore - only the interactive and --strategy "
        "paths call setupEntireDirectory, fixed by calling strategy.EnsureEntireGitignore() right after "
        "the agent hooks are installed", kind="pitfall")
    assert unbroken.title.endswith("…") and len(unbroken.title) <= 160, unbroken.title
    assert "EnsureEntireGitignore" in inject_entry(unbroken)
    coded = memory.add(
        ".golangci.yaml sets `fix: true` and enables nolintlint, so a local `mise run lint` silently "
        "strips //nolint directives it considers unused from the working tree - a nolint added only "
        "for a CI-only finding (staticcheck SA5011) never survives a local lint run.", kind="pitfall")
    assert coded.title.startswith(".golangci.yaml sets `fix: true` and enables nolintlint"), coded.title


def test_a_second_item_that_holds_the_fix_is_shortened_to_fit_not_dropped(memory: Any) -> None:
    # entire-cli 03a1382e: in the replayed store the filed issue came first and filled most of the
    # budget; the finding that says how to repair the worktree came second and was left out whole.
    task = memory.add(
        "Open Linear issue ENT-242: Replace go-git worktree.Status() with git CLI to prevent index corruption",
        body=("Filed in Linear as ENT-242 (team Entire, project Troy, priority 1, labels Bug).\n## Problem\n"
              "go-git's `worktree.Status()` reads **and rewrites** the worktree index file. When called "
              "from the `PostCommit` hook path, this rewrites the index with stale cache-tree entries "
              "that reference objects pruned by a previous GC. This causes worktree index corruption:\n"
              "```\nfatal: unable to read e53647ba1f1e5203bedff558b482f178db045555\n```\n### Root Cause\n"
              "**Two-hit combo:**\n1. **GC prunes objects** that the index cache-tree references (hit 1)\n"
              "2. **go-git's `worktree.Status()` rewrites the index**, preserving the stale cache-tree "
              "entries (hit 2)\nBoth are required for corruption. GC alone doesn't break things (native "
              "git commands read but don't rewrite the stale cache-tree). The go-git rewrite materializes "
              "the corruption.\n### Confirmed via instrumentation\nDebug hooks added to "
              "`prepare-commit-msg`, `post-commit`, and `pre-push` logged index md5 checksums "
              "before/after each hook. The post-commit hook was confirmed to change the index."),
        kind="task")
    fact = memory.add(
        "The worktree index references a missing object (`e53647ba...`) in its cache-tree — this is "
        "what `git status` tries to read and fails on.",
        body=("The problem is a corrupted index file in this worktree.\n"
              "There are also 19+ missing blobs — these were likely objects that existed temporarily "
              "(perhaps from shadow branch operations or a GC in the main repo) and got cleaned up.\n"
              "The branch ref itself (`febabe6a`) is fine — your commits are intact.\n"
              "The fix is to rebuild the worktree's index.\n"
              "Reset the index with `git read-tree HEAD` — loses staged changes but fixes the issue"),
        kind="fact")
    # With the room of two full entries neither is cut; with less the second is shortened.
    for budget in (memory.config.inject_budget, 200):
        context = memory.prompt_context("git status: fatal: unable to read e53647ba1f1e5203bedff558b482f178db045555",
                                        budget=budget)
        assert task.id in context and fact.id in context, (budget, context)
        assert memory.tokens.count(context) <= budget


def test_a_session_compressed_again_replaces_its_own_lines_and_keeps_the_earlier_sessions() -> None:
    # Review: after the first merge the item is this session's; compressing it again kept its old
    # "Fix: unknown" beside the new "Fix: edits in lib/b.ex".
    from graphmem.ingest import _with_earlier

    class Draft:
        title = "`mix test` fails with KeyError"
        body = "Fix: edits in lib/b.ex"

    before = {"session_id": "s-b", "title": "`mix test` fails with KeyError",
              "body": "Fix: unknown (the command passed later)\nMet before:\nFix: edits in lib/a.ex"}
    assert _with_earlier(Draft(), before, "s-b") == "Fix: edits in lib/b.ex\nMet before:\nFix: edits in lib/a.ex"
    first = {"session_id": "s-a", "title": "`mix test` fails with KeyError: 'x'", "body": "Fix: edits in lib/a.ex"}
    assert _with_earlier(Draft(), first, "s-b") == (
        "Fix: edits in lib/b.ex\nMet before:\n`mix test` fails with KeyError: 'x'\nFix: edits in lib/a.ex")


def _statuses(memory: Any) -> dict[str, str]:
    rows = memory.store.list_items(ItemFilter(project=memory.project, kinds=("task",),
                                              statuses=("active", "superseded")), limit=100)
    return {r["title"]: r["status"] for r in rows}


def test_a_task_an_earlier_session_left_open_is_done_when_a_later_one_passes_it(memory: Any, tmp_path: Path) -> None:
    failing = "FAILED tests/test_mapping.py::test_slugs - KeyError: 'minimax-m2-5'\n1 failed in 0.3s"
    first = (Session("s-1").user("fix the mapping test").run("pytest tests/test_mapping.py", failing, error=True)
             .say("The mapping has no slug for MiniMax M2.5, so `test_slugs` raises KeyError."))
    ingest(memory, first, tmp_path)
    opened = [t for t, status in _statuses(memory).items() if t.startswith("Unresolved") and status == "active"]
    assert len(opened) == 1
    unrelated = Session("s-2").user("update the docs").run("pytest tests/test_docs.py", "1 passed in 0.1s")
    ingest(memory, unrelated, tmp_path)
    assert _statuses(memory)[opened[0]] == "active"  # another test passing closes nothing
    later = Session("s-3").user("add the MiniMax slug").edit("config/model-mapping.json", "{", '{"minimax": 1,') \
        .run("pytest tests/test_mapping.py", "1 passed in 0.2s")
    ingest(memory, later, tmp_path)
    assert _statuses(memory)[opened[0]] == "superseded"
    row = next(r for r in memory.store.list_items(ItemFilter(project=memory.project, statuses=("superseded",)),
                                                 limit=10) if r["title"] == opened[0])
    assert row["stale_reason"] == "done in session s-3: `pytest tests/test_mapping.py` passed"


def test_steps_left_to_the_person_are_done_when_a_later_session_runs_them_all(memory: Any, tmp_path: Path) -> None:
    commands = ("I opened PR #3.\n\nBefore the first run, you need to:\n```bash\ngh secret set AA_API_KEY\n"
                "gh workflow run daily.yml\n```\n")
    ingest(memory, Session("s-1").user("open a PR").say(commands), tmp_path)
    task, = [t for t in _statuses(memory) if t.startswith("Left to the user")]
    half = Session("s-2").user("start the workflow").run("gh workflow run daily.yml --ref main", "Created event")
    half.t += 60
    ingest(memory, half, tmp_path)
    assert _statuses(memory)[task] == "active"  # the secret is not shown set
    both = Session("s-3").user("set it up").run("gh secret set AA_API_KEY", "✓ Set secret").run(
        "gh workflow run daily.yml", "Created event")
    both.t += 120
    ingest(memory, both, tmp_path)
    assert _statuses(memory)[task] == "superseded"


def test_a_step_in_words_is_never_shown_done_by_a_command(memory: Any, tmp_path: Path) -> None:
    last = ("Before the first run, you need to:\n1. Add the `AA_API_KEY` repository secret.\n2. Start the first run "
            "by hand:\n```bash\ngh workflow run daily.yml\n```\n")
    ingest(memory, Session("s-1").user("open a PR").say(last), tmp_path)
    later = Session("s-2").user("start it").run("gh workflow run daily.yml", "Created event")
    later.t += 60
    ingest(memory, later, tmp_path)
    assert [s for t, s in _statuses(memory).items() if t.startswith("Left to the user")] == ["active"]


def _failing_mapping(sid: str) -> Session:
    failing = "FAILED tests/test_mapping.py::test_slugs - KeyError: 'minimax-m2-5'\n1 failed in 0.3s"
    return (Session(sid).user("fix the mapping test").run("pytest tests/test_mapping.py", failing, error=True)
            .say("The mapping has no slug for MiniMax M2.5, so `test_slugs` raises KeyError."))


def test_a_pass_before_the_task_was_left_or_narrowed_to_other_tests_closes_nothing(memory: Any, tmp_path: Path) -> None:
    earlier = Session("s-old").user("run the tests").run("pytest tests/test_mapping.py", "4 passed in 0.2s")
    earlier.t -= 5 * 86_400  # an older session, ingested after the task was left
    ingest(memory, _failing_mapping("s-new"), tmp_path)
    ingest(memory, earlier, tmp_path)
    narrowed = Session("s-k").user("check aliases").run("pytest tests/test_mapping.py -k test_aliases",
                                                        "1 passed, 3 deselected in 0.1s")
    narrowed.t += 60
    ingest(memory, narrowed, tmp_path)
    again = Session("s-again").user("fix it").run("pytest tests/test_mapping.py", "4 passed").edit(
        "src/map.py", "a", "b").run("pytest tests/test_mapping.py", "FAILED test_slugs\n1 failed", error=True)
    again.t += 120
    ingest(memory, again, tmp_path)  # passed, then failed again: not done
    left = [s for t, s in _statuses(memory).items() if t.startswith("Unresolved")]
    assert left and set(left) == {"active"}  # s-new's, and s-again's own


def test_work_left_unpushed_is_done_when_a_later_session_pushes(memory: Any, tmp_path: Path) -> None:
    # Held-out review 7 (obs-alert 29dd77ed): "Two commits ahead of origin now. Push?"
    ingest(memory, Session("s-1").user("tag images with the build date")
           .say("Committed.\n\nTwo commits ahead of origin now. Push?"), tmp_path)
    task, = [t for t in _statuses(memory) if t.startswith("Left to the user: Two commits ahead")]
    for n, (line, done) in enumerate([("git push --dry-run origin main", "active"),
                                      ("git push origin --delete old-branch", "active"),
                                      ("git push --tags", "active"),
                                      ("git push origin v1.4.0", "active"),
                                      ("git -C ../infra push", "active"),
                                      ("git push -u origin main", "superseded")]):
        later = Session(f"s-{n + 2}").user("push it").run(line, "To github.com:x/obs-alert.git\n   1a2b..5d6e  main -> main")
        later.t += 60 * (n + 1)
        ingest(memory, later, tmp_path)
        assert _statuses(memory)[task] == done, line


def test_a_session_cut_short_is_finished_when_a_later_one_runs_its_commands_clean(memory: Any, tmp_path: Path) -> None:
    # Second review of session 17: an Unfinished task stayed in the brief after the pod was fixed.
    describe = "kubectl describe pod -n ai ollama-78d46fcb8f-dc7tq | sed -n '/Events:/,$p'"
    ingest(memory, Session("s-1").user("Pull is accepted, but it's stalled out.")
           .say("Checking the server side:").run(describe, ZOIA_EVENTS), tmp_path)
    task, = [t for t in _statuses(memory) if t.startswith("Unfinished: Pull is accepted")]
    fixed = ("Events:\n  Normal  Pulled  12s  kubelet  Successfully pulled image \"ollama/ollama:0.12.3\"\n"
             "  Normal  Started  10s  kubelet  Started container ollama")
    for n, (line, output, status) in enumerate([
            (describe, ZOIA_EVENTS, "active"),  # exit 0, and still failing
            (describe + " | grep -c 'Failed to pull'", "1", "active"),  # narrowed: its output proves nothing
            (describe, fixed, "superseded")]):
        later = Session(f"s-{n + 2}")
        later.t += 60 * (n + 1)
        ingest(memory, later.user("is the pod up now?").run(line, output).say("Checked."), tmp_path)
        assert _statuses(memory)[task] == status, line


def test_work_blocked_on_approval_is_in_the_brief(memory: Any, tmp_path: Path) -> None:
    # Held-out review 9, acmebank: three sessions lost to edits and `npm test` never approved; the
    # next session should hear of it before it tries again.
    session = (Session("s-a").user("pode fazer as alterações")
               .run("npm test", "This command requires approval", error=True)
               .say("Preciso de permissão para rodar os testes."))
    ingest(memory, session, tmp_path)
    assert any("Waited for the person's approval and never ran: `npm test`" in line
               for line in memory.brief().lines)


def _finding_session(sid: str, finding: str) -> Session:
    return (Session(sid).user("pode fazer as alterações")
            .run("npm test", "Expected: 'Usuário já existe.'\nTests: 1 failed", error=True)
            .say(finding + " Vou corrigir o teste.")
            .edit("src/modules/user/tests/user.service.spec.ts", "Usuário já existe.",
                  "O nome de usuário já está em uso.")
            .say("Teste atualizado."))


def test_a_finding_met_again_in_another_session_is_the_earlier_item_marked_recurring(memory: Any,
                                                                                    tmp_path: Path) -> None:
    # Held-out review 9, acmebank (verbatim): one root cause, found anew and worded anew in three sessions.
    said = {"s-a": "O arquivo `user.service.spec.ts` tem o erro esperado `'Usuário já existe.'` mas o service "
                   "agora lança `'O nome de usuário já está em uso.'`.",
            "s-b": "O teste `user.service.spec.ts` espera a mensagem `'Usuário já existe.'` mas o "
                   "`user.service.ts` agora lança `ConflictException('O nome de usuário já está em uso.')`."}
    for sid, finding in said.items():
        ingest(memory, _finding_session(sid, finding), tmp_path)
        ingest(memory, _finding_session(sid, finding), tmp_path)  # compressed again at its next stop
    found = [r for r in live(memory) if "discovery" in r["tags"]]
    assert len(found) == 1, [r["title"] for r in found]
    assert found[0]["session_id"] == "s-a" and "recurring" in found[0]["tags"]
    assert found[0]["title"].startswith("O arquivo `user.service.spec.ts` tem o erro esperado")
    assert found[0]["body"].count("Found again in session s-b: O teste `user.service.spec.ts` espera") == 1
    # found anew by another session: evidence enough for the brief, which a finding alone is not
    assert any(found[0]["id"] in line for line in memory.brief().lines)


def test_findings_that_share_only_names_stay_apart(memory: Any, tmp_path: Path) -> None:
    # The rule's first form folded findings that shared `Dashboard.tsx` and `useEffect` into one.
    said = {"s-a": "The chart is empty because `Dashboard.tsx` calls `useEffect` without the range "
                   "dependency, so `'Last 7 days'` never reloads.",
            "s-b": "The header flickers because `Dashboard.tsx` runs `useEffect` on every render, so "
                   "the `'Loading…'` state shows each time."}
    for sid, finding in said.items():
        session = (Session(sid).user("fix the dashboard")
                   .say(finding + " Let me fix it.")
                   .edit("src/Dashboard.tsx", "useEffect(load)", "useEffect(load, [range])")
                   .say("Fixed."))
        ingest(memory, session, tmp_path)
    found = [r for r in live(memory) if "discovery" in r["tags"]]
    assert len(found) == 2 and not any("recurring" in r["tags"] for r in found), [r["title"] for r in found]


@pytest.mark.parametrize("edited", [True, False])
def test_work_that_waited_for_approval_is_closed_once_a_later_session_made_every_call(
        memory: Any, tmp_path: Path, edited: bool) -> None:
    # Held-out review 9, acmebank: the item said "never ran" for good, though a later session with
    # the approval in hand would run the tests and edit the spec.
    spec = "src/modules/user/tests/user.service.spec.ts"
    refusal = f"Claude requested permissions to write to {ROOT}/{spec}, but you haven't granted it yet."
    blocked = Session("s-a").user("pode fazer as alterações").run("npm test", "This command requires approval",
                                                                   error=True)
    blocked.call("Edit", {"file_path": f"{ROOT}/{spec}", "old_string": "a", "new_string": "b"}, refusal)
    blocked.records[-1]["message"]["content"][0]["is_error"] = True
    blocked.events[-1].is_error, blocked.events[-1].exit_code = True, None
    ingest(memory, blocked.say("Preciso de permissão."), tmp_path)
    [waited] = [r for r in live(memory) if "permissions" in r["tags"]]
    assert waited["title"].startswith("Waited for the person's approval and never ran: `npm test`, Edit of ")
    assert waited["title"].endswith(spec)
    later = Session("s-b").user("aprovado, pode rodar")
    later.t += 60
    later.run("npm test 2>&1 | tail -20", "Exit code 1\nTests: 1 failed, 11 passed", error=True)
    if edited:
        later.edit(spec, "a", "b")
    ingest(memory, later.say("Rodei os testes."), tmp_path)
    assert (waited["id"] in {r["id"] for r in live(memory)}) is not edited
    assert any("Waited for the person's approval" in line for line in memory.brief().lines) is not edited


def test_of_the_persons_answers_in_one_session_the_brief_shows_the_later_first(memory: Any,
                                                                               tmp_path: Path) -> None:
    # Held-out review 10, cipher-box f337a126: 27 answers of one session tied in the brief, which
    # then showed the first seven by item id, the settled answers and the early ones in hash order.
    session = Session("s-a").user("/gsd:discuss-phase 12.6")
    asked = [("Since this is before the vault wipe, clean break or dual-schema?",
              ["Clean break (v2-only)", "Dual-schema support"]),
             ("Where do size and mimeType live?", ["File record only", "Both records"]),
             ("Should the desktop FUSE client be updated in this phase?", ["Defer to a follow-up", "Update now"]),
             ("Add a versionHistory field now?", ["Not now, Phase 13 adds it", "Add it now"])]
    for question, options in asked:
        session.ask(question, options, options[0])
    ingest(memory, session.say("Context captured."), tmp_path)
    decisions = [line for line in memory.brief().lines if line.startswith("- decision:")]
    assert [line.split(":", 2)[1].strip() for line in decisions] == [
        "Not now, Phase 13 adds it", "Defer to a follow-up", "File record only", "Clean break (v2-only)"]


def test_findings_that_share_only_commands_stay_apart(memory: Any, tmp_path: Path) -> None:
    # Review of the rule: two root causes both naming `npm run build` and `npm run preview` were one.
    said = {"s-a": "The build fails because `vite.config.ts` sets `base: '/app/'` so `npm run build` emits "
                   "absolute paths and `npm run preview` serves nothing.",
            "s-b": "The build fails because `tsconfig.json` lacks `\"jsx\": \"react-jsx\"`, so `npm run build` "
                   "rejects every component that `npm run preview` would serve."}
    for sid, finding in said.items():
        session = (Session(sid).user("fix the build")
                   .run("npm run build", "error TS17004: Cannot use JSX", error=True)
                   .say(finding + " Let me fix it.")
                   .edit("vite.config.ts", "a", "b").say("Fixed."))
        ingest(memory, session, tmp_path)
    assert len([r for r in live(memory) if "discovery" in r["tags"]]) == 2


def test_the_earlier_finding_keeps_who_found_it_again_when_its_session_is_compressed_again(
        memory: Any, tmp_path: Path) -> None:
    said = {"s-a": "O arquivo `user.service.spec.ts` tem o erro esperado `'Usuário já existe.'` mas o service "
                   "agora lança `'O nome de usuário já está em uso.'`.",
            "s-b": "O teste `user.service.spec.ts` espera a mensagem `'Usuário já existe.'` mas o "
                   "`user.service.ts` agora lança `ConflictException('O nome de usuário já está em uso.')`."}
    for sid in ("s-a", "s-b", "s-a"):  # s-a's next stop compresses it again
        ingest(memory, _finding_session(sid, said[sid]), tmp_path)
    [found] = [r for r in live(memory) if "discovery" in r["tags"]]
    assert "recurring" in found["tags"] and found["body"].count("Found again in session s-b:") == 1


def _refused(sid: str, command: str, t: float) -> Session:
    session = Session(sid).user("go")
    session.t = t
    return session.run(command, "This command requires approval", error=True).say("Need permission.")


def test_an_approval_item_two_sessions_waited_on_closes_only_when_both_lists_ran(memory: Any,
                                                                                 tmp_path: Path) -> None:
    start = Session().t
    ingest(memory, _refused("s-a", "npm test", start), tmp_path)
    ingest(memory, _refused("s-b", "npm run lint", start + 60), tmp_path)
    later = Session("s-c").user("approved")
    later.t = start + 120
    ingest(memory, later.run("npm run lint", "ok").say("Ran lint."), tmp_path)
    assert [r for r in live(memory) if "permissions" in r["tags"]], "`npm test` never ran"


def test_an_approval_item_is_not_closed_by_a_run_made_before_the_refusal(memory: Any, tmp_path: Path) -> None:
    earlier = Session("s-b").user("run tests").run("npm test", "Tests: 12 passed")
    ingest(memory, _refused("s-a", "npm test", earlier.t + 600), tmp_path)
    [waited] = [r for r in live(memory) if "permissions" in r["tags"]]
    ingest(memory, earlier.say("All green."), tmp_path)  # s-b stops after s-a was refused
    assert waited["id"] in {r["id"] for r in live(memory)}


def test_room_left_in_the_brief_tells_the_sessions_before_the_last(memory: Any, tmp_path: Path) -> None:
    # Held-out review 11 (iptvnator): the root cause of the first session's crash was kept, but the
    # next session's brief held one line, and 323 of its 400 tokens went unused.
    start = Session().t
    for n, (sid, path) in enumerate((("s-a", "src/channel-list.ts"), ("s-b", "src/favorites.ts"),
                                     ("s-c", "src/xtream-import.ts"))):
        session = Session(sid).user(f"fix {path}")
        session.t = start + 3600 * n
        ingest(memory, session.edit(path, "a", "b").run("npm test", "Tests: 3 passed").say("Fixed."), tmp_path)
    summary = {r["session_id"]: r["id"] for r in live(memory) if r["kind"] == "summary"}
    lines = memory.brief().lines
    assert lines[0].startswith("- last session (") and summary["s-c"] in lines[0]
    earlier = [line for line in lines if line.startswith("- earlier session (")]
    assert [summary["s-b"] in earlier[0], summary["s-a"] in earlier[1]] == [True, True]


def test_a_commit_that_never_came_back_is_closed_by_a_later_look_at_the_history(memory: Any, tmp_path: Path) -> None:
    # Review: the task asked to rerun the exact heredoc commit; a later `git log` showing it landed
    # (then "nothing to commit") never closed it.
    cut = Session("s-a").user("commit the scaffold").edit("src/a.ts", "a", "b").say("Committing.")
    cut._record("assistant", [{"type": "tool_use", "id": "toolu_pending", "name": "Bash", "input": {
        "command": "git commit -q -m \"$(cat <<'EOF'\nfeat: scaffold\nEOF\n)\""}}])
    ingest(memory, cut, tmp_path)
    assert [r for r in live(memory) if "unfinished" in r["tags"]]
    later = Session("s-b").user("did the scaffold commit land?")
    later.t += 60
    ingest(memory, later.run("git log --oneline -3", "1a2b3c4 feat: scaffold").say("It landed."), tmp_path)
    assert not [r for r in live(memory) if "unfinished" in r["tags"]]


# entire-cli f022dad1 and b9bdbf44, as the replayed store held them: five lint lessons that each
# name `mise run lint` and //nolint, and the one finding that says why a nolint vanishes.
LINT_LESSONS = [
    (("`mise run lint` flags goconst: string `user` has 5 occurrences, but such constant "
     "`transcriptTypeUser` already exists…"),
     ("cmd/entire/cli/hooks_opencode_transcript.go:95: string `user` has 5 occurrences, but such constant "
     "`transcriptTypeUser` already exists (goconst)\nFixed: fix the goconst errors by using the existing "
     "constants from transcript.go.\nThen `mise run lint` passed.")),
    ("`mise run lint` flags gocritic: ifElseChain: rewrite if-else to switch statement",
     ("cmd/entire/cli/hooks_opencode_transcript.go:128: ifElseChain: rewrite if-else to switch statement "
     "(gocritic)\nFixed: converting the if-else chain to a switch statement.\nThen `mise run lint` passed.")),
    ("`mise run lint` flags revive: redefines-builtin-id: redefinition of the built-in function new",
     ("cmd/entire/cli/hooks_opencode_transcript.go:111: redefines-builtin-id: redefinition of the built-in "
     "function new (revive)\nFixed: renaming the `new` variable to `added`.\nThen `mise run lint` passed.")),
    ("`mise run lint` flags ireturn: parseOpencodeStopInput returns interface (entire.io/cli/cmd/entire/cli/agent.Agent)",
     ("cmd/entire/cli/hooks_opencode_handlers.go:123: parseOpencodeStopInput returns interface (ireturn)\n"
     "Fixed: since we need to return the interface for proper abstraction, I'll add a nolint comment with "
     "an explanation.\nThe edit added: //nolint:ireturn // Returning agent.Agent interface is intentional "
     "for abstraction\nThen `mise run lint` passed.")),
    ("`mise run fmt && mise run lint` flags gosec: G304: Potential file inclusion via variable; G104: Errors unhandled",
     ("cmd/entire/main.go:19: G304: Potential file inclusion via variable (gosec)\ncmd/entire/main.go:24: "
     "G104: Errors unhandled (gosec)\nThe edit added: //nolint:gosec // G304: trace file path from env var "
     "is intentional for debugging | _ = f.Close()\nThen `mise run fmt && mise run lint` passed.")),
]
VANISHING_NOLINT = (
    ("Ah, it's the `fix: true` in `.golangci.yaml` combined with `nolintlint` - it's removing the nolint "
    "comments because local lint doesn't see the SA5011 issue (so it thinks they're \"unused\")."),
    ("The changes are staged now.\nPer the compaction summary: nolint comments being stripped — Caused by "
    "`nolintlint` with `allow-unused: false` combined with `fix: true`. Local lint doesn't detect SA5011, "
    "so comments appear \"unused\". User suggested restructuring code instead of fighting the linter"))


def test_the_few_injected_slots_go_to_the_items_closest_to_the_prompt(memory: Any) -> None:
    # Injected in search's order, the three slots went to lint lessons that share the prompt's
    # words (`mise run lint`, nolint) and the finding that answers it, ranked lower, was left out.
    finding = memory.add(VANISHING_NOLINT[0], body=VANISHING_NOLINT[1], kind="fact")
    for title, body in LINT_LESSONS:
        memory.add(title, body=body, kind="pitfall")
    # with less room too: an item that cannot fit takes none from the closest one (review)
    for budget in (memory.config.inject_budget, 120):
        context = memory.prompt_context("the //nolint comment I added keeps vanishing from the file after I run "
                                        "mise run lint", budget=budget)
        entries = [line for line in context.splitlines() if line.startswith("- ")]
        assert entries and finding.id in entries[0], (budget, context)
        assert memory.tokens.count(context) <= budget


def test_a_harness_preamble_does_not_change_what_the_prompt_brings(memory: Any) -> None:
    # Held-out review 13 (chkit 2562ce5e): Conductor wraps every first prompt in a <system_instruction>.
    memory.add("fix: create database in e2e fixture to prevent flaky tests",
               body="createFixture now runs CREATE DATABASE IF NOT EXISTS before migrations, so migrate --execute "
                    "no longer fails with 'Database chkit_e2e does not exist' on a fresh ClickHouse.", kind="fact")
    asked = "the live e2e tests fail: migrate --execute says database chkit_e2e does not exist"
    preamble = ("<system_instruction>\nYou are working inside Conductor, a Mac app that lets the user run many coding "
                "agents in parallel. Your work should take place in the workspace directory.\n</system_instruction>\n\n")
    alone = memory.prompt_context(asked)
    assert "create database in e2e fixture" in alone
    assert memory.prompt_context(preamble + asked) == alone


def test_a_sessions_items_belong_to_the_branch_it_ended_on(memory: Any, tmp_path: Path) -> None:
    # Held-out review 13 (chkit 2562ce5e): the session renamed its branch at once
    # (`git branch -m KeKs0r/fix-e2e-create-db`) and its items were stored on the old name.
    session = (Session("s-rename").user("the e2e tests are flaky because the database does not exist yet")
               .run("git branch -m KeKs0r/fix-e2e-create-db", "")
               .run("git commit -q -m 'fix: create database in e2e fixture to prevent flaky tests'", ""))
    for n, event in enumerate(session.events):
        event.branch = "KeKs0r/philadelphia" if n < 2 else "KeKs0r/fix-e2e-create-db"
    ingest(memory, session, tmp_path)
    assert {r["branch"] for r in live(memory)} == {"KeKs0r/fix-e2e-create-db"}
