"""Nothing of project A reaches project B: API verbs, exports, logs, stats and the CLI, both for
two projects under one GRAPHMEM_HOME (one store each) and for two projects sharing one data dir
(one store, told apart only by the item's project field: the harder case)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from graphmem import Config, Memory, NotFound
from graphmem import models as m
from graphmem.cli import main
from graphmem.exporting import to_markdown
from tests.conftest import git

SECRET_WORDS = ("zorblax", "quimbly")  # planted in A only, case-insensitive
A_FILE = "src/zorblax/queue.py"
A_SYMBOL = "flush_zorblax_queue"
A_ERROR = "ZorblaxTimeoutError"
A_ENVVAR = "ZORBLAX_TIMEOUT_SECONDS"
SHARED_TEXT = "We use npm for the admin frontend"  # said in A and, later, in B
DAY = 86_400.0


@dataclass
class World:
    variant: str
    home: Path
    config_a: Config
    config_b: Config
    cli_b: list[str]          # CLI arguments that select B
    env_b: dict[str, str]     # environment the CLI needs to select B
    a_ids: set[str] = field(default_factory=set)
    b_ids: set[str] = field(default_factory=set)
    a_state: dict[str, tuple[str, int]] = field(default_factory=dict)
    b_reference_stats: dict[str, Any] = field(default_factory=dict)


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("demo\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial commit")
    return root


def plant_a(memory: Memory) -> set[str]:
    """Distinctive items of every kind and status, with evidence, a search and a get logged."""
    obs = m.Observation(project=memory.project, event="PostToolUse", tool="Bash",
                        command="pytest", text="$ pytest\nZorblaxTimeoutError: quimbly sync timed out")
    memory.put_observations([obs])
    pitfall = memory.add(f"{A_ERROR} in {A_SYMBOL}(): raise {A_ENVVAR} to 30 before the quimbly sync",
                         kind="pitfall", files=[A_FILE], symbols=[A_SYMBOL], observations=[obs.id])
    shared = memory.add(SHARED_TEXT, kind="convention")
    convention = memory.add("Run the zorblax linter with `make quimbly-lint` before pushing",
                            kind="convention")
    task = memory.add("Task: move the zorblax importer into src/zorblax/importer.py", kind="task")
    flags = memory.add("Feature flags live in config/zorblax-flags.yaml", kind="decision")
    served = memory.add("Feature flags are served by the quimbly client now; "
                        "config/zorblax-flags.yaml was removed", kind="decision")
    wrong = memory.add("The quimbly cache is flushed hourly by zorblax-cron", kind="fact")
    for _ in range(3):
        memory.feedback(wrong.id, "wrong")
    memory.search("zorblax queue timeout")
    memory.get(pitfall.id)
    assert memory.get_item(flags.id).status is m.ItemStatus.superseded
    assert memory.get_item(wrong.id).status is m.ItemStatus.archived
    return {pitfall.id, shared.id, convention.id, task.id, flags.id, served.id, wrong.id}


def plant_b(memory: Memory) -> set[str]:
    """Ordinary items; one repeats A's text word for word, one supersedes that statement."""
    items = [memory.add("Run make test before pushing", kind="convention"),
             memory.add("Local Postgres listens on localhost:5433", kind="env"),
             memory.add("KeyError: 'DATABASE_URL' in connect(): export DATABASE_URL before pytest",
                        kind="pitfall", files=["src/shop/db.py"]),
             memory.add(SHARED_TEXT, kind="convention"),
             memory.add("We now use pnpm, not npm, for the admin frontend", kind="convention")]
    memory.search("which package manager for the admin frontend")
    return {i.id for i in items}


def _state(memory: Memory, ids: set[str]) -> dict[str, tuple[str, int]]:
    return {r["id"]: (r["status"], r["hit_count"]) for r in memory.store.get_items(sorted(ids))}


def _comparable(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if k not in ("project", "branch", "data_dir",
                                                         "journal_bytes")}


@pytest.fixture(scope="module", params=["separate", "shared"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp(request.param)
    home = base / "home"
    repo_a, repo_b = _repo(base / "project-a"), _repo(base / "project-b")
    if request.param == "separate":
        world = World("separate", home, Config(home=home, cwd=repo_a),
                      Config(home=home, cwd=repo_b), ["--cwd", str(repo_b)], {})
    else:
        shared = base / "shared-store"
        world = World("shared", home, Config(home=home, cwd=repo_a, data_dir=shared, project="A"),
                      Config(home=home, cwd=repo_b, data_dir=shared, project="B"),
                      ["--cwd", str(repo_b), "--project", "B"],
                      {"GRAPHMEM_DATA_DIR": str(shared)})
    with Memory(world.config_a) as a:
        world.a_ids = plant_a(a)
    with Memory(world.config_b) as b:
        world.b_ids = plant_b(b)
        assert b.project != Memory.data_dir_for(world.config_a).name
    with Memory(world.config_a) as a:
        world.a_state = _state(a, world.a_ids)
    with Memory(Config(home=home, data_dir=base / "reference-b", project="B", cwd=repo_b)) as ref:
        plant_b(ref)
        world.b_reference_stats = _comparable(ref.stats())
    yield world


def leaks(data: Any, a_ids: set[str]) -> list[str]:
    """Secret words or A's ids found anywhere in an output (JSON-dumped first)."""
    text = data if isinstance(data, str) else json.dumps(_plain(data), ensure_ascii=False)
    lowered = text.lower()
    return [w for w in SECRET_WORDS if w in lowered] + [i for i in a_ids if i in text]


def _plain(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    return data


A_QUERY = "zorblax queue timeout"  # A's own logged search; B must never see it


def _search_view(result: Any) -> Any:
    """What a search shows besides the echoed query: hits and the explain table."""
    return {"hits": _plain(result.hits), "explain": result.explain}


def _log_leaks(records: list[dict[str, Any]], own_queries: set[str], a_ids: set[str]) -> list[str]:
    problems = [r["query"] for r in records if r["query"] not in own_queries]
    problems += [i for r in records for i in r["returned"] if i in a_ids]
    return problems


def test_b_outputs_hold_nothing_of_a(world: World) -> None:
    queries = {"zorblax quimbly queue timeout", "timeout before the sync", "flush the queue",
               A_ERROR, SHARED_TEXT}
    with Memory(world.config_b) as b:
        outputs: dict[str, Any] = {
            "brief": b.brief(),
            "search": _search_view(b.search("zorblax quimbly queue timeout", k=50, explain=True)),
            "search files": _search_view(b.search("timeout before the sync", files=[A_FILE],
                                                  k=50, explain=True)),
            "search symbols": _search_view(b.search("flush the queue", symbols=[A_SYMBOL], k=50)),
            "search error": _search_view(b.search(A_ERROR, k=50)),
            "search shared text": _search_view(b.search(SHARED_TEXT, k=50)),
            "rank": b.rank("zorblax queue", files=[A_FILE], k=50),
            "list": b.list(limit=1000),
            "list archived": b.list(status="archived"),
            "list superseded": b.list(status="superseded"),
            "export": b.export_items(),
            "markdown": to_markdown(b.project, b.export_items()),
            "stats by kind/status": {k: b.stats()[k] for k in ("items", "by_kind", "by_status")},
            "history": [b.history(i) for i in sorted(world.b_ids)],
        }
        log = b.retrieval_log(limit=1000)
        assert {i.id for i in b.list(limit=1000)} | {i.id for i in b.list(status="superseded")} \
            == world.b_ids
        assert {r["id"] for r in b.export_items()} == world.b_ids
        assert b.stats()["items"] == len(world.b_ids)
    own = queries | {"which package manager for the admin frontend", ""}
    own |= {i for i in world.b_ids}  # `get` logs the id as its query
    assert _log_leaks(log, own, world.a_ids) == []
    assert A_QUERY not in json.dumps(log)
    found = {name: leaks(out, world.a_ids) for name, out in outputs.items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_b_cannot_reach_a_items_by_id(world: World) -> None:
    with Memory(world.config_b) as b:
        for item_id in sorted(world.a_ids):
            for verb in (b.get, b.get_item, b.evidence, b.history, b.entities, b.forget,
                         b.restore, lambda i: b.feedback(i, "wrong"),
                         lambda i: b.update(i, status="archived")):
                with pytest.raises(NotFound):
                    verb(item_id)
    with Memory(world.config_a) as a:
        assert _state(a, world.a_ids) == world.a_state


@pytest.mark.parametrize("entity", [A_FILE, A_SYMBOL, A_ERROR, A_ENVVAR])
def test_related_in_b_shows_nothing_of_a(world: World, entity: str,
                                         request: pytest.FixtureRequest) -> None:
    with Memory(world.config_b) as b:
        try:
            out = b.related(entity)
        except NotFound:
            return
    assert leaks(out, world.a_ids) == []


def test_stats_of_b_count_only_b(world: World, request: pytest.FixtureRequest) -> None:
    with Memory(world.config_b) as b:
        stats = _comparable(b.stats())
    assert stats == world.b_reference_stats


def test_all_projects_is_the_explicit_opt_in(world: World) -> None:
    with Memory(world.config_b) as b:
        listed = {i.id for i in b.list(all_projects=True, limit=1000)}
        # log=False: a logged opt-in search would (rightly) put A's ids into B's log and count
        # a use of A's items; the later tests check B's log and A's counters.
        found = {h.item.id for h in b.search("zorblax quimbly timeout", all_projects=True,
                                             log=False).hits}
        exported = {r["id"] for r in b.export_items(all_projects=True)}
    if world.variant == "shared":
        assert world.a_ids & listed and world.a_ids & found and world.a_ids <= exported
    else:  # one store per project: there is no other project in B's store to opt into
        assert not (world.a_ids & (listed | found | exported))


@pytest.mark.parametrize("variant", [
    "separate", "shared"])
def test_forget_many_from_b_deletes_nothing_of_a(variant: str, tmp_path: Path) -> None:
    repo_a, repo_b = _repo(tmp_path / "a"), _repo(tmp_path / "b")
    extra: dict[str, Any] = {"data_dir": tmp_path / "store"} if variant == "shared" else {}
    with Memory(Config(home=tmp_path / "home", cwd=repo_a, project="A", **extra)) as a:
        planted = a.add("The zorblax relay restarts at midnight", kind="fact")
    with Memory(Config(home=tmp_path / "home", cwd=repo_b, project="B", **extra)) as b:
        assert b.forget_many([planted.id])["items"] == 0
    with Memory(Config(home=tmp_path / "home", cwd=repo_a, project="A", **extra)) as a:
        assert a.get_item(planted.id).title == planted.title


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_outputs_for_b_hold_nothing_of_a(world: World, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_HOME", str(world.home))
    for key, value in world.env_b.items():
        monkeypatch.setenv(key, value)
    outputs = {}
    for args in (["brief", "--json"], ["list", "--json"], ["export"],
                 ["export", "--format", "markdown"]):
        code, out, err = _cli(capsys, *args, *world.cli_b)
        assert code == 0, (args, err)
        outputs[" ".join(args)] = out + err
    for args in (["search", "zorblax quimbly", "--json", "--explain"],
                 ["search", "timeout", "--file", A_FILE, "--symbol", A_SYMBOL, "--json"]):
        code, out, err = _cli(capsys, *args, *world.cli_b)
        assert code == 0, (args, err)
        result = json.loads(out)
        outputs[" ".join(args)] = {"hits": result["hits"], "explain": result["explain"]}
    code, out, err = _cli(capsys, "log", "--json", "--limit", "1000", *world.cli_b)
    assert code == 0 and A_QUERY not in out
    assert [i for r in json.loads(out) for i in r["returned"] if i in world.a_ids] == []
    for item_id in sorted(world.a_ids)[:1]:
        for verb in ("get", "evidence", "history", "forget"):
            code, out, err = _cli(capsys, verb, item_id, *world.cli_b)
            assert code != 0 and "no memory with id" in err, (verb, out, err)
            outputs[f"{verb} A"] = out
    code, out, err = _cli(capsys, "list", "--all-projects", "--json", "--limit", "1000",
                          *world.cli_b)
    opted_in = {r["id"] for r in json.loads(out)}
    assert bool(world.a_ids & opted_in) == (world.variant == "shared")
    found = {name: leaks(out, world.a_ids) for name, out in outputs.items()}
    assert {k: v for k, v in found.items() if v} == {}
    with Memory(world.config_a) as a:
        state = _state(a, world.a_ids)
    assert state == world.a_state


def test_b_writes_never_touch_a(world: World) -> None:
    """Runs last for each variant: B repeats, supersedes, sweeps, purges and forgets; A keeps all."""
    with Memory(world.config_b) as b:
        repeat = b.add(SHARED_TEXT + ".", kind="convention")
        assert repeat.id not in world.a_ids
        b.add("Run the zorblax linter with `make lint` instead of make quimbly-lint",
              kind="convention", dedupe=True)
        now = time.time()
        b.sweep(now=now + 20 * 365 * DAY)
        purged = b.sweep(now=now + 21 * 365 * DAY)["purge"]
        assert purged and not set(purged) & world.a_ids
        for item in b.list(limit=1000):
            b.forget(item.id)
    with Memory(world.config_a) as a:
        assert _state(a, world.a_ids) == world.a_state
        assert len(a.evidence(next(i for i in world.a_ids if a.get_item(i).kind.value ==
                                   "pitfall"))) == 1
        hits = {h.item.id for h in a.search("zorblax linter quimbly-lint").hits}
        assert hits & world.a_ids
