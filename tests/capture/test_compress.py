"""Rule-based compression: a recorded Claude Code session → the atomic memories it should leave."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem.capture.adapters import normalise
from graphmem.capture.compress import (
    TITLE_MAX,
    Draft,
    command_key,
    compress_session,
    parse_command,
)
from graphmem.capture.event import HookEvent
from graphmem.capture.redact import redact, redact_obj
from graphmem.models import ItemKind

DATA = Path(__file__).parent.parent / "data"
REPLAY = DATA / "session_replay.jsonl"
TRANSCRIPT = DATA / "transcript_sample.jsonl"
T0 = 1_795_946_400.0  # 2026-11-29, mid-morning UTC
SID = "sess-unit"


def load_replay(root: Path) -> tuple[list[HookEvent], list[str], dict[str, Any]]:
    """The recorded payloads as the capture path stores them: normalised, redacted, timed."""
    lines = [json.loads(line) for line in REPLAY.read_text().splitlines() if line.strip()]
    secrets, expected = lines[0]["planted_secrets"], lines[-1]
    events = []
    for i, record in enumerate(lines[1:-1]):
        payload = json.loads(json.dumps(record["payload"]).replace("/REPO", str(root)))
        event = normalise(payload, record["event"])
        event.project, event.branch, event.ts = str(root), "main", T0 + 7 * i
        for name in HookEvent.FIELDS:
            value = getattr(event, name)
            if isinstance(value, str) and value:
                setattr(event, name, redact(value))
            elif isinstance(value, (dict, list)):
                setattr(event, name, redact_obj(value))
        events.append(event)
    return events, secrets, expected


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[HookEvent], list[str], dict[str, Any]]:
    return load_replay(tmp_path_factory.mktemp("proj") / "repo")


@pytest.fixture(scope="module")
def drafts(replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> list[Draft]:
    return compress_session(replay[0])


def by_kind(drafts: list[Draft], kind: str) -> list[Draft]:
    return [d for d in drafts if d.kind == kind]


def find(drafts: list[Draft], kind: str, *needles: str) -> Draft:
    for d in by_kind(drafts, kind):
        text = f"{d.title}\n{d.body}".lower()
        if all(n.lower() in text for n in needles):
            return d
    raise AssertionError(f"no {kind} with {needles}: {[d.title for d in drafts]}")


def ev(event: str, *, ts: float, tool: str = "", command: str = "", text: str = "",
       files: list[str] | None = None, exit_code: int | None = None, is_error: bool | None = None,
       **kw: Any) -> HookEvent:
    return HookEvent(event=event, agent="claude-code", session_id=SID, cwd="/proj", project="/proj",
                     tool=tool, command=command, text=text, files=files or [], exit_code=exit_code,
                     is_error=is_error, ts=ts, id=kw.pop("id", f"e{ts:g}"), **kw)


def bash(ts: float, command: str, text: str = "", code: int | None = None, **kw: Any) -> HookEvent:
    return ev("post-tool", ts=ts, tool="Bash", command=command, text=text, exit_code=code,
              is_error=True if code not in (None, 0) else None, **kw)


def edit(ts: float, path: str, old: str, new: str) -> HookEvent:
    diff = "\n".join([*(f"-{line}" for line in old.splitlines()), *(f"+{line}" for line in new.splitlines())])
    return ev("post-tool", ts=ts, tool="Edit", text=diff, files=[f"/proj/{path}"])


def prompt(ts: float, text: str) -> HookEvent:
    return ev("user-prompt", ts=ts, text=text)


# --- the recorded session --------------------------------------------------------------------


def test_replay_has_what_the_lead_needs(replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> None:
    events, secrets, expected = replay
    assert len(events) >= 60
    assert {e.event for e in events} >= {"session-start", "user-prompt", "pre-tool", "post-tool", "session-end"}
    assert len(secrets) >= 4 and expected["expected_items"]
    raw = REPLAY.read_text()
    assert all(secret in raw for secret in secrets)  # planted in the payloads...
    stored = json.dumps([e.to_json() for e in events])
    assert not [s for s in secrets if s in stored]  # ...and masked by capture


def test_expected_items_are_produced(drafts: list[Draft],
                                     replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> None:
    expected = replay[2]
    for spec in expected["expected_items"]:
        candidates = [d for d in by_kind(drafts, spec["kind"])
                      if all(n.lower() in f"{d.title}\n{d.body}".lower() for n in spec["must_contain"])]
        assert candidates, f"missing {spec}: {[(d.kind, d.title) for d in drafts]}"
        if spec.get("files"):
            assert any(set(spec["files"]) <= set(d.files) for d in candidates), (spec, candidates)
    for kind, count in expected["exactly"].items():
        assert len(by_kind(drafts, kind)) == count


def test_failure_fix_pitfall_is_conclusion_first_with_provenance(
        drafts: list[Draft], replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> None:
    events = replay[0]
    pitfall = find(drafts, "pitfall", "DATABASE_URL")
    assert pitfall.title.startswith("KeyError: 'DATABASE_URL' in `pytest -k orders`: fixed by adding "
                                    "`database_url` in tests/conftest.py")
    assert pitfall.files[0] == "tests/conftest.py" and "src/shop/db.py" in pitfall.files
    assert {"database_url", "connect"} <= set(pitfall.symbols)
    assert "Raised at: src/shop/db.py:9 in connect()" in pitfall.body
    assert "monkeypatch.setenv" in pitfall.body and "7 passed" in pitfall.body
    assert pitfall.source == "rule" and pitfall.confidence == pytest.approx(0.8)  # verified by tests
    by_id = {e.id: e for e in events}
    sources = [by_id[i] for i in pitfall.observation_ids]
    assert [(e.tool, e.is_error) for e in sources] == [("Bash", True), ("Edit", None), ("Bash", None)]


def test_package_manager_switch_is_the_fix(drafts: list[Draft]) -> None:
    pitfall = find(drafts, "pitfall", "ERESOLVE")
    assert pitfall.title == ("ERESOLVE unable to resolve dependency tree in `npm install` in admin/: "
                             "fixed by using `pnpm install` instead of `npm`")


def test_unresolved_failure_becomes_an_open_task(drafts: list[Draft]) -> None:
    task = find(drafts, "task", "Unresolved")
    assert task.title.startswith('Unresolved: `mypy src/shop` fails with Module has no attribute "ChargeV1"')
    assert task.files == ["src/shop/payments.py"] and "handoff" in task.tags


def test_user_statements_keep_their_words(drafts: list[Draft]) -> None:
    titles = {d.title: d for d in drafts if d.source == "user"}
    assert titles["We use pnpm, not npm, for the admin frontend"].kind == "convention"
    assert titles["Never commit .env files"].kind == "convention"
    assert titles["Migrate src/shop/payments.py to the v2 client next time"].kind == "task"
    assert titles["The payments webhook still calls the v1 charges API"].kind == "fact"
    decision = find(drafts, "decision", "SQLite")
    assert decision.title == ("We decided to keep SQLite for the test suite because spinning up "
                              "Postgres in CI doubled the run time")
    assert all(d.confidence == 0.9 for d in titles.values())
    assert not any("check the API" in d.title for d in drafts)  # questions are not facts


def test_environment_facts(drafts: list[Draft]) -> None:
    assert find(drafts, "env", "Python 3.11.9").title == "Python 3.11.9 in this environment (`python --version`)"
    assert find(drafts, "env", "node v20.11.1")
    port = find(drafts, "env", "localhost:8000")
    assert port.title == ("localhost:8000 is served by `uvicorn shop.app:app --port 8000` "
                          "(refused connections until it was started)")
    var = find(drafts, "env", "DATABASE_URL must be set")
    assert var.title == ("DATABASE_URL must be set: src/shop/db.py:9 connect() raises KeyError without it; "
                         "tests/conftest.py now sets it")


def test_exactly_one_informative_summary_first(drafts: list[Draft]) -> None:
    summary = drafts[0]
    assert summary.kind == "summary" and len(by_kind(drafts, "summary")) == 1
    day = datetime.fromtimestamp(T0).strftime("%Y-%m-%d")
    assert summary.title == (f"Session {day}: fixed KeyError in pytest -k orders, fixed ERESOLVE in npm "
                             f"install; 2 files changed; 2 open tasks")
    assert summary.body.startswith("Asked: `pytest -k orders` fails locally with a KeyError")
    assert "Open:\n- Unresolved: `mypy src/shop`" in summary.body
    assert set(summary.files) == {"tests/conftest.py", ".gitignore"}


def test_confidence_orders_user_over_verified_over_plain_rules(drafts: list[Draft]) -> None:
    user = find(drafts, "convention", "pnpm").confidence
    verified = find(drafts, "pitfall", "DATABASE_URL").confidence
    unverified = find(drafts, "task", "Unresolved").confidence
    assert user > verified > unverified == 0.6


def test_shape_of_every_draft(drafts: list[Draft],
                              replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> None:
    ids = {e.id for e in replay[0]}
    kinds = {k.value for k in ItemKind}
    for d in drafts:
        assert d.kind in kinds and d.source in ("rule", "user")
        assert 0 < len(d.title) <= TITLE_MAX and len(d.body) <= 1500
        assert 0.0 <= d.confidence <= 1.0 and 0.0 <= d.importance <= 1.0
        assert d.observation_ids and set(d.observation_ids) <= ids
        assert not any(f.startswith("/") for f in d.files)
    assert len({d.key for d in drafts}) == len(drafts)
    assert len({(d.kind, d.title.lower()) for d in drafts}) == len(drafts)


def test_no_planted_secret_reaches_a_draft(drafts: list[Draft],
                                           replay: tuple[list[HookEvent], list[str], dict[str, Any]]) -> None:
    blob = json.dumps([d.as_dict() for d in drafts])
    assert not [s for s in replay[1] if s in blob]


def test_keys_are_idempotent_across_runs_and_fresh_event_ids(tmp_path: Path, drafts: list[Draft]) -> None:
    again, _, _ = load_replay(tmp_path / "other" / "repo")  # new uuids, another checkout path
    second = compress_session(again)
    assert [(d.key, d.title) for d in second] == [(d.key, d.title) for d in drafts]


def test_order_duplicates_and_growth(replay: tuple[list[HookEvent], list[str], dict[str, Any]],
                                     drafts: list[Draft]) -> None:
    events = list(replay[0])
    shuffled = events + [e.copy() for e in events[::3]]  # duplicates: same id
    random.Random(7).shuffle(shuffled)
    assert [(d.key, d.title) for d in compress_session(shuffled)] == [(d.key, d.title) for d in drafts]
    half = compress_session(events[: len(events) // 2])  # compressed again at a later `stop`
    full_keys = {d.key for d in drafts}
    assert drafts[0].key == half[0].key  # the summary is replaced, not duplicated
    assert {d.key for d in half if d.source == "user"} <= full_keys


def test_transcript_adds_the_users_words_redacted() -> None:
    result = compress_session([], transcript=str(TRANSCRIPT))
    conventions = {d.title for d in by_kind(result, "convention")}
    assert "We always run `make lint` before pushing" in conventions
    note = find(result, "note", "staging deploy token")
    assert "ghp_" not in note.title + note.body and "[REDACTED:github_token]" in note.title
    assert all(d.observation_ids == [] and "transcript" in d.tags for d in result if d.source == "user")
    summary = by_kind(result, "summary")
    # A transcript's `summary` record may title an older session: the agent's closing words do not.
    assert len(summary) == 1 and "Fix DATABASE_URL KeyError in orders tests" not in summary[0].title
    assert "tests/conftest.py now sets DATABASE_URL" in summary[0].title
    assert "Agent's last message: Fixed: tests/conftest.py" in summary[0].body
    assert "Search the repo" not in json.dumps([d.as_dict() for d in result])  # sub-agent prompt


def test_transcript_and_prompts_do_not_double_count() -> None:
    events = [prompt(1, "We always run `make lint` before pushing.")]
    result = compress_session(events, transcript=TRANSCRIPT.read_text())
    matches = [d for d in result if d.title == "We always run `make lint` before pushing"]
    assert len(matches) == 1 and matches[0].observation_ids == [events[0].id]


# --- rules in isolation ----------------------------------------------------------------------


def test_env_prefix_that_turns_failure_into_success() -> None:
    events = [
        bash(1, "pytest tests/test_api.py", "E   RuntimeError: APP_ENV is not set\n1 failed in 0.1s", 1),
        bash(2, "APP_ENV=test pytest tests/test_api.py -q", "3 passed in 0.2s"),
    ]
    result = compress_session(events)
    pitfall = find(result, "pitfall", "APP_ENV")
    assert pitfall.title == "RuntimeError: APP_ENV is not set in `pytest tests/test_api.py`: fixed by setting APP_ENV"
    assert pitfall.confidence == pytest.approx(0.8)
    env = find(result, "env", "APP_ENV must be set")
    assert "passed once APP_ENV was set" in env.body


def test_export_between_runs_and_piped_failure_output() -> None:
    events = [
        bash(1, "pytest -q 2>&1 | tail -3", "FAILED tests/test_x.py::test_a - ValueError: bad\n1 failed, 2 passed"),
        bash(2, "export FEATURE_FLAGS=all"),
        bash(3, "pytest -q", "3 passed in 0.1s"),
    ]
    pitfall = find(compress_session(events), "pitfall")
    assert pitfall.title.startswith("ValueError: bad in `pytest -q`: fixed by setting FEATURE_FLAGS")


def test_rerun_without_changes_is_a_low_confidence_flaky_pitfall() -> None:
    events = [bash(1, "pytest -k slow", "E   TimeoutError: read timed out\n1 failed", 1),
              bash(2, "pytest -k slow", "1 passed")]
    pitfall = find(compress_session(events), "pitfall")
    assert "flaky" in pitfall.title and pitfall.confidence == 0.5 and "flaky" in pitfall.tags


def test_changed_error_resolves_the_first_and_leaves_the_second_open() -> None:
    events = [
        bash(1, "python scripts/migrate.py", "Traceback (most recent call last):\n"
             '  File "/proj/scripts/migrate.py", line 3, in <module>\n'
             "ModuleNotFoundError: No module named 'alembic'", 1),
        bash(2, "pip install alembic==1.13.2", "Successfully installed alembic-1.13.2 Mako-1.3.5"),
        bash(3, "python scripts/migrate.py", "Traceback (most recent call last):\n"
             '  File "/proj/scripts/migrate.py", line 9, in run\n'
             "sqlalchemy.exc.OperationalError: no such table: orders", 1),
    ]
    result = compress_session(events)
    pitfall = find(result, "pitfall", "ModuleNotFoundError")
    assert "fixed by running `pip install alembic==1.13.2`" in pitfall.title
    assert pitfall.confidence == 0.6  # nothing verified it
    task = find(result, "task", "OperationalError")
    assert task.title == ("Unresolved: `python scripts/migrate.py` fails with OperationalError: no such "
                          "table: orders (scripts/migrate.py:9)")
    install = find(result, "env", "alembic==1.13.2")
    assert "Mako==1.3.5" in install.title


def test_port_refused_and_read_only_failures() -> None:
    events = [
        bash(1, "curl -s http://127.0.0.1:5432", "curl: (7) Failed to connect to 127.0.0.1 port 5432: Connection refused", 7),
        bash(2, "grep -rn TODO src/", "", 1),
        bash(3, "ls missing/", "ls: cannot access 'missing/': No such file or directory", 2),
        bash(4, "cat nope.txt", "cat: nope.txt: No such file or directory", 1),
    ]
    result = compress_session(events)
    assert [d.kind for d in result] == ["summary", "env"]
    assert result[1].title.startswith("localhost:5432 refused connections")


def test_dev_server_port_from_its_output() -> None:
    events = [bash(1, "pnpm dev", "  VITE v5.4.2  ready in 301 ms\n\n  ➜  Local:   http://localhost:5173/\n")]
    assert find(compress_session(events), "env", "localhost:5173").title == "localhost:5173 is served by `pnpm dev`"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("pytest -k orders", "pytest -q -k orders -x", True),
        ("pytest -k orders", "DATABASE_URL=sqlite:// pytest -k orders", True),
        ("python -m pytest tests/test_a.py", ".venv/bin/pytest ./tests/test_a.py", True),
        ("uv run pytest -x tests", "pytest tests/", True),
        ("cd admin && npm install", "cd admin && pnpm i", True),
        ("npm run build", "pnpm build", True),
        ("pytest 2>&1 | tail -20", "pytest", True),
        ("export A=1 && make test", "make test", True),
        ("pytest -k orders", "pytest -k payments", False),
        ("cd admin && npm install", "npm install", False),
        ("git push", "git pull", False),
        ("pytest tests/a.py", "pytest tests/b.py", False),
    ],
)
def test_command_identity(a: str, b: str, same: bool) -> None:
    assert (command_key(a) == command_key(b)) is same


@pytest.mark.parametrize(
    ("line", "exe", "sub", "env"),
    [
        ("FOO=1 BAR=2 python3.11 -m pytest -q", "pytest", "", {"FOO": "1", "BAR": "2"}),
        ("sudo -E env X=1 docker compose up -d db", "docker", "compose", {"X": "1"}),
        ("npx --yes vitest run src", "vitest", "", {}),
        ("pnpm --dir admin run lint", "pnpm", "run lint", {}),
        ("echo start; cargo test -p core", "cargo", "test", {}),
        ("pytest -k 'orders and not slow", "pytest", "", {}),  # unbalanced quote: still parsed
        ("", "", "", {}),
    ],
)
def test_parse_command(line: str, exe: str, sub: str, env: dict[str, str]) -> None:
    cmd = parse_command(line)
    assert (cmd.exe, cmd.sub, cmd.env) == (exe, sub, env)


@pytest.mark.parametrize(
    ("said", "kind", "title"),
    [
        ("use ruff instead of flake8", "convention", "Use ruff instead of flake8"),
        ("Please always run migrations with `make migrate`.", "convention",
         "Please always run migrations with `make migrate`"),
        ("we prefer dataclasses over attrs", "convention", "We prefer dataclasses over attrs"),
        ("Don't touch the legacy/ folder", "convention", "Don't touch the legacy/ folder"),
        ("We went with Kuzu over Neo4j because it embeds", "decision", "We went with Kuzu over Neo4j because it embeds"),
        ("remember that staging uses port 8443", "fact", "Staging uses port 8443"),
        ("FYI: the CI cache is flaky on Mondays", "note", "The CI cache is flaky on Mondays"),
        ("TODO add retries to the webhook client", "task", "Add retries to the webhook client"),
        ("we still need to backfill the orders table", "task", "We still need to backfill the orders table"),
        ("don't worry about the docs", None, None),
        ("why does this never work?", None, None),
        ("can you fix the build", None, None),
        ("I have never seen this error", None, None),
        # entire-cli 03a1382e and cde341db, verbatim: what the person reports of the system's history
        ("we did a migration from entire/sessions to entire/checkpoints/v1", "fact",
         "We did a migration from entire/sessions to entire/checkpoints/v1"),
        (("hmm, we made a change recently to shadow tracking where we replaced go-git with git status, "
         "could this be related?"), "fact",
         "We made a change recently to shadow tracking where we replaced go-git with git status"),
        ("It is definitely solved when i disable telemetry with ENTIRE_TELEMETRY_OPTOUT.", "fact",
         "It is definitely solved when i disable telemetry with ENTIRE_TELEMETRY_OPTOUT"),
        ("I moved the file, can you check?", None, None),
        ("we replaced it, is that ok?", None, None),
        ("switch to the other branch", None, None),
        # review of the rules above: a change or cure names something, and is neither asked nor bid
        ("I switched to the feature branch, rebase it on main", None, None),
        ("It was fixed by your last change", None, None),
        ("have we upgraded React already, is that done?", None, None),
        ("I moved from Berlin to Paris", None, None),
        ("ok so we always use pnpm, never npm", "convention", "We always use pnpm, never npm"),
        ("we don't need the cache layer anymore", "convention", "We don't need the cache layer anymore"),
        # held-out review 29, verbatim: a later clause's "does not" is no "use X, not Y"; "going to use"
        # decides; what the person keeps for themselves is how to work with them
        (("we usually use random.org, but every time you load it, it does not remember the bounds of the "
          "randomization"), None, None),
        ("We use Postgres because SQLite does not support concurrent writers", "convention",
         "We use Postgres because SQLite does not support concurrent writers"),
        ("use pnpm here, not npm", "convention", "Use pnpm here, not npm"),
        ("We're going to use React, though I'm more agnostic on the framework.", "decision",
         "We're going to use React, though I'm more agnostic on the framework"),
        ("we are going to use a lot of RAM", None, None),
        (("I will run commands like git init and git commit myself, so that I can verify things before commiting; "
          "make changes in an unstaged state."), "convention",
         "I will run commands like git init and git commit myself, so that I can verify things before commiting"),
        ("I'll do it myself this time", None, None),
        ("Okay, I'm aligned on Astro 6 + Bun.", "decision", "I'm aligned on Astro 6 + Bun"),
        # held-out review 29, vertumnus, verbatim: what the person points out is a note
        (("It's probably worth noting that we're not only creating the poster page itself, but also the /about "
          "page."), "note", "We're not only creating the poster page itself, but also the /about page"),
        ("Is it worth noting?", None, None),
        ("Heads up: I've disabled 2FA.", "note", "I've disabled 2FA"),
        # review of the rules above: a rule with a clause in it stays; one occasion is no rule
        ("Use pytest when writing new tests, not unittest.", "convention", "Use pytest when writing new tests, not unittest"),
        ("use ruff for formatting, but not on the generated files", "convention",
         "Use ruff for formatting, but not on the generated files"),
        ("I'll fix that flaky test myself after lunch.", None, None),
        ("We'll deploy it ourselves once QA signs off.", None, None),
        ("We're using 90% of the disk on the build box.", None, None),
        ("We're using way too much memory in the worker.", None, None),
        ("If we're using Redis here then the session store needs a TTL.", None, None),
        # second review: a clause of its own after "but" is no "use X, not Y"; a lead before "we'll use"
        ("We were using MySQL, but it's not supported on the new host.", None, None),
        ("For the backend we'll use FastAPI.", "decision", "For the backend we'll use FastAPI"),
        ("We're using 2 spaces for indentation.", "decision", "We're using 2 spaces for indentation"),
        # held-out review 32 (vertumnus, verbatim): the request is done in the session, the deferred clause is open
        (("Yes, let's go ahead and wire up tailwind and migrate all css to that, and we'll tackle the lint in a "
          "follow up commit"), "task", "We'll tackle the lint in a follow up commit"),
        ("FYI: I've set DATABASE_URL in .env.local for the tests", "note", "I've set DATABASE_URL in .env.local for the tests"),
        # held-out review 38 (SuperGrok1.5 80b51e31, verbatim): a preference, a meaning, how the files
        # are meant to be, a limit set on what the person approves, the tool to build with
        ("To be honest, I would actually prefer fable class work.", "convention",
         "I would actually prefer fable class work"),
        ("By the roofline number, I mean how much of the peak flops are we using as a percentage.", "decision",
         "By the roofline number, I mean how much of the peak flops are we using as a percentage"),
        (("All of the optimizer and model files are supposed to be portable to any other project as well (assuming "
          "an h100 of course)."), "convention",
         "All of the optimizer and model files are supposed to be portable to any other project as well (assuming an h100 of course)"),
        # (the second review of session 26: "Sounds good, just make sure it doesn't break the tests" is this shape
        # too, and asks for this task only: a limit on what the person approves is no convention by its shape)
        ("Running the 30 minute watchdog is good, just make sure it doesn’t throttle anything on the gpu.", None, None),
        ("Sounds good, just make sure it doesn't break the tests.", None, None),
        ("I'd prefer we ship this today.", None, None),
        ("You should also be compiling with the compile file, as it is designed to be better than regular nvcc.",
         "convention", "You should also be compiling with the compile file, as it is designed to be better than regular nvcc"),
        ("Because truth by told, I have 80 gb vram, 200 gb ram, and 30 gb disk space.", "env",
         "I have 80 gb vram, 200 gb ram, and 30 gb disk space"),
        ("I have 2 questions about the 3 GB upload limit.", None, None),
        ("This machine has 16 GB of RAM.", "env", "This machine has 16 GB of RAM"),
        # the second review of session 26: the memory named by what holds it
        ("I have 80 GB of GPU memory and 30 GB of disk.", "env", "I have 80 GB of GPU memory and 30 GB of disk"),
        ("Do I have 10 GB free?", None, None),
        # held-out review 40 (verbatim): the cache to use, and what the person says once again
        (("Ok good. And make sure you are using the cache so you can recompile super fast."), "convention",
         "Make sure you are using the cache so you can recompile super fast"),
        ("Once again, why does the build fail?", None, None),
        # held-out review 43 (verbatim): what the person does not want, and what they want instead
        ("I don’t want to be claude-bound, I want the hardware to be the constraint.", "convention",
         "I don’t want to be claude-bound, I want the hardware to be the constraint"),
        ("I don't want that, I want the other one.", None, None),
        # the review of session 26: what follows "once again" is judged as it stands; a rule given with the
        # machine as its reason stays a rule; one-off choices, orders of work and bug reports are none
        ("Once again, the tests fail with the same error.", None, None),
        ("Like I said, never push to main.", "convention", "Never push to main"),
        ("Always build with -j8 since I have 8 cores.", "convention", "Always build with -j8 since I have 8 cores"),
        ("I have a 10 GB CSV file that the importer chokes on.", None, None),
        ("I have 2 gpus but only one shows up in nvidia-smi.", None, None),
        ("I'd prefer option B.", None, None),
        # held-out review 44 (verbatim): the person holds the agent to what they said before
        ("I said it should be 4D parallelism with ZeRO-3.", "decision", "I said it should be 4D parallelism with ZeRO-3"),
        ("I said hello to the team.", None, None),
        # held-out review 49 (verbatim): what the machine throws away
        (("When the instance is closed, everything outside of /workspace will be deleted, so please prep the instance for "
         "closure."), "env", "When the instance is closed, everything outside of /workspace will be deleted"),
        ("When I run the script, everything in build/ gets deleted.", None, None),
        # the review of session 27: what the person reports still goes wrong, takes back or sets a date for, and an
        # app's own behaviour, are no decision and no machine fact
        ("I said it should redirect to /home after login, but it still goes to /dashboard.", None, None),
        ("Earlier I said it should use 4 workers, forget that.", None, None),
        ("I said the tests should pass, and they still don't.", None, None),
        ("I told you it has to be done today.", None, None),
        ("When a workspace is deleted, all its files are deleted too.", None, None),
        ("When the session is closed, the data is lost and they have to retype everything.", None, None),
        ("If the server is restarted, the files in the upload queue are lost.", None, None),
        ("When the pod is restarted, /tmp is wiped.", "env", "When the pod is restarted, /tmp is wiped"),
        ("Did I say it should be async?", None, None),
        ("I'd prefer you fix the login bug first.", None, None),
        ("This function is supposed to return a list, it returns None.", None, None),
        ("The login button is supposed to redirect to /home after sign in. Right now it does nothing.", None, None),
        (("Currently the CI takes twenty minutes on every push, which is far too slow for the small fixes we do. "
          "All of the model files are supposed to be portable to any other project."), "convention",
         "All of the model files are supposed to be portable to any other project"),
        ("Go ahead and refactor it, just make sure it doesn't break the tests.", None, None),
        ("You should use the --force flag.", None, None),
        ("Make sure you are using the latest version of the file.", None, None),
        # ... and what they are not: a bug told, a standard for this task, a choice offered
        ("The export is supposed to include archived rows, but it skips them.", None, None),
        ("Make sure it is not only working, but also maximally performant.", None, None),
        ("Which would you prefer, the table or the chart?", None, None),
        ("It was supposed to be done yesterday.", None, None),
    ],
)
def test_user_statement_rules(said: str, kind: str | None, title: str | None) -> None:
    result = [d for d in compress_session([prompt(1, said)]) if d.source == "user"]
    if kind is None:
        assert result == []
    else:
        assert [(d.kind, d.title) for d in result] == [(kind, title)]


def test_the_items_of_what_the_thing_built_should_do_are_no_statements() -> None:
    # held-out review 29 (apanloco/random, prompt 1 verbatim): "1. remember lower bounds and upper
    # bounds" finishes "it should", and became the fact "Lower bounds and upper bounds" in the brief
    said = ("hi!\nwere in a new folder called \"random\"\nthis will be a new project!\nhosted at random.akerud.se\n"
            "the goal is simple\nwhen me and our friends play dominion every monday, we need a way to randomize who "
            "starts\nwe usually use random.org, but every time you load it, it does not remember the bounds of the "
            "randomization\nso what we need is a super simple beautiful clean pixel art inspired randomization page\n"
            "it should\n1. remember lower bounds and upper bounds\n2. have a button for GENERATE\n3. some kind of "
            "simlpe animation so it's to make it mezmerizing\nnothing else for now")
    assert [d.title for d in compress_session([prompt(1, said)]) if d.source == "user"] == []
    # review: a rule stays a rule whatever the lead ("it should:\n1. never return raw SQL errors")
    kept = "When you add a new endpoint, it should:\n1. never return raw SQL errors to the client\n2. add a route"
    assert [d.title for d in compress_session([prompt(1, kept)]) if d.source == "user"] == [
        "Never return raw SQL errors to the client"]
    assert compress_session([prompt(1, "it should" + " " * 100_000 + "x")]) is not None  # no backtracking
    rules = "Code in this repo should:\n1. remember that staging uses port 8443\n2. never call the API from tests"
    assert sorted(d.title for d in compress_session([prompt(1, rules)]) if d.source == "user") == [
        "Never call the API from tests", "Staging uses port 8443"]


def test_compound_sentences_split_into_atomic_items() -> None:
    result = compress_session([prompt(1, "Use pnpm and never run npm in admin/; always pin versions.\n"
                                         "```\nnever parse this code block\n```")])
    titles = sorted(d.title for d in result if d.source == "user")
    assert titles == ["Always pin versions", "Never run npm in admin/"]  # "Use pnpm" alone states no rule


# --- junk ------------------------------------------------------------------------------------


HUGE = "x" * 3_000_000 + "\nE   MemoryError: boom\n"

JUNK: list[Any] = [
    [],
    None,
    [None, 1, "text", 3.5, object()],
    [{"event": "post-tool", "command": "pytest", "exit_code": "1", "text": None, "ts": "soon"}],
    [HookEvent(event="post-tool", tool="Bash", command="make", text=None, files="a.py",  # type: ignore[arg-type]
               tool_input="oops", extra=None, exit_code="2", ts=float("nan"), id=None)],  # type: ignore[arg-type]
    [HookEvent(event="post-tool", tool="Bash", command="pytest", text=HUGE, exit_code=1, ts=1)],
    [HookEvent(event="user-prompt", text="never " * 20_000, ts=1)],
    [HookEvent(event="post-tool", tool="FancyNewTool", tool_input={"deep": [[[{}]]]}, text="{}", ts=1)],
    [HookEvent(event="weird-event", text="TODO: something", ts=1)],
    [HookEvent(event="post-tool", tool="Edit", files=[None, 3], text="+", ts=1)],  # type: ignore[list-item]
    [HookEvent(event="post-tool", tool="Bash", command="'unterminated && | ; >", exit_code=1, ts=1)],
    [HookEvent(event="session-start", ts=1), HookEvent(event="session-end", ts=2)],
    [HookEvent(event="post-tool", tool="Bash", command="pytest", text="E   KeyError: 'A_B'", exit_code=1,
               ts=float("inf"))] * 3,
]


@pytest.mark.parametrize("events", JUNK, ids=range(len(JUNK)))
def test_junk_never_raises(events: Any) -> None:
    start = time.perf_counter()
    result = compress_session(events)
    assert time.perf_counter() - start < 5
    assert isinstance(result, list) and all(isinstance(d, Draft) for d in result)
    assert len(by_kind(result, "summary")) <= 1
    for d in result:
        assert d.title and len(d.title) <= TITLE_MAX and len(d.body) <= 1500
    assert len({d.key for d in result}) == len(result)


@pytest.mark.parametrize("transcript", ["", "not json\n", "{}", "/no/such/file.jsonl", "\x00" * 10])
def test_junk_transcripts_never_raise(transcript: str) -> None:
    result = compress_session([bash(1, "pytest", "1 passed")], transcript=transcript)
    assert len(by_kind(result, "summary")) == 1


def test_empty_session_leaves_nothing() -> None:
    assert compress_session([HookEvent(event="session-start", session_id="s"),
                             HookEvent(event="session-end", session_id="s")]) == []


def test_a_rule_that_ends_on_a_quoted_value_keeps_its_quote_marks() -> None:
    # Held-out review 131 (PackmindHub/context-evaluator 4a/ff29dfc8d7, MIT, verbatim): the title lost the closing
    # mark and read 'but instead "Copilot instructions'
    from graphmem.capture.compress import _sentences

    prompt = 'We should not display "AGENTS.md" for GitHub Copilot instructions, but instead "Copilot instructions"'
    assert list(_sentences(prompt)) == [prompt]
    assert list(_sentences('"Never push to main"')) == ["Never push to main"]
    assert list(_sentences("don't use 'foo'")) == ["don't use 'foo'"]
    assert list(_sentences('"Never push. Always rebase first')) == ["Never push.", "Always rebase first"]
