"""A call's scope (project, branch, actor, checkout, request) is its own: calls of different scope
on one Memory, interleaved in one process or through one owner, never see each other's."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from graphmem import Config
from graphmem.extract import link
from graphmem.owner.client import open_memory
from graphmem.scope import CallScope
from graphmem.service import Memory
from tests.conftest import stop_owner

SCOPES = {"alpha": ("main", "alpha-agent"), "beta": ("feature/x", "beta-agent")}


@pytest.fixture
def config(home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("GRAPHMEM_EMBED", "false")
    monkeypatch.setenv("GRAPHMEM_OWNER_IDLE", "60")
    return Config.from_env(home=home, cwd=repo)


def test_a_scope_is_frozen_and_a_client_context_makes_a_new_one() -> None:
    base = CallScope(project="p", branch="main")
    with pytest.raises(AttributeError):
        base.project = "q"  # type: ignore[misc]
    call = base.for_client({"project": "q", "actor": "cli:add", "request": "r1"})
    assert (call.project, call.branch, call.actor, call.request) == ("q", "main", "cli:add", "r1")
    assert base == CallScope(project="p", branch="main")
    assert base.for_client({}).request is None  # a request id is never inherited


def test_setting_a_field_gives_that_memory_a_new_scope_and_no_other(config: Config) -> None:
    """`memory.project = ...` (notebooks, the CLI's actor) still works, on that object only."""
    with Memory(config) as memory:
        view = memory.scoped(memory.scope)
        before = memory.scope
        memory.project, memory.branch, memory.actor = "label", "dev", "notebook"
        assert (memory.project, memory.branch, memory.actor) == ("label", "dev", "notebook")
        assert view.scope == before and memory.scope is not before


def test_a_call_interleaved_inside_another_keeps_each_ones_scope(
        config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """View beta's whole write runs in the middle of view alpha's: each item lands in its own
    project and branch, written by its own actor, and the shared Memory's scope is untouched."""
    with Memory(config) as memory:
        base = memory.scope
        alpha = memory.scoped(CallScope("alpha", "main", "alpha-agent", request="req-a"))
        beta = memory.scoped(CallScope("beta", "feature/x", "beta-agent", request="req-b"))
        resolve = link.resolve
        inner: list[str] = []
        started = threading.Event()

        def resolve_then_interleave(*args, **kwargs):  # type: ignore[no-untyped-def]
            if not started.is_set():
                started.set()
                inner.append(beta.add("Beta decision: the queue is drained on shutdown").id)
            return resolve(*args, **kwargs)

        monkeypatch.setattr(link, "resolve", resolve_then_interleave)
        outer = alpha.add("Alpha decision: retries back off exponentially")
        monkeypatch.setattr(link, "resolve", resolve)

        assert (outer.project, outer.branch) == ("alpha", "main")
        inner_item = memory.get_item(inner[0], all_projects=True)
        assert (inner_item.project, inner_item.branch) == ("beta", "feature/x")
        assert alpha.history(outer.id)[0]["by"] == "alpha-agent"
        assert beta.history(inner[0])[0]["by"] == "beta-agent"
        assert memory.request_status("req-a")["ids"][:1] == [outer.id]
        assert memory.request_status("req-b")["ids"][:1] == [inner[0]]
        assert memory.scope == base and memory.request is None
        assert [i.id for i in alpha.list()] == [outer.id]
        assert [i.id for i in beta.list()] == [inner[0]]


def test_two_clients_of_different_scope_through_one_owner_never_see_each_others(
        config: Config, home: Path, repo: Path) -> None:
    """Two clients call one owner over its socket at the same time, call for call (a barrier
    puts both requests in flight together): every answer is in the caller's own scope."""
    rounds = 12
    barrier = threading.Barrier(len(SCOPES), timeout=60)
    seen: dict[str, list[tuple[str, ...]]] = {name: [] for name in SCOPES}
    failures: list[BaseException] = []

    def client(project: str) -> None:
        branch, actor = SCOPES[project]
        try:
            with open_memory(config, owner=True) as remote:
                remote.project, remote.branch, remote.actor = project, branch, actor
                for n in range(rounds):
                    barrier.wait()
                    item = remote.add(f"{project} fact {n}: the {project} pool holds {n} workers")
                    barrier.wait()
                    stats = remote.stats()
                    barrier.wait()
                    by = remote.history(item.id)[0]["by"]
                    seen[project].append((item.project, item.branch, stats["project"],
                                          stats["branch"], by))
                barrier.wait()
                listed = remote.list(limit=100)
                seen[project].append(tuple(sorted({(i.project, i.branch) for i in listed})))
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=client, args=(name,)) for name in SCOPES]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not failures, failures
        for project, (branch, actor) in SCOPES.items():
            *calls, listed = seen[project]
            assert calls == [(project, branch, project, branch, actor)] * rounds
            assert listed == ((project, branch),)
    finally:
        stop_owner(home, repo)
