"""A name many code entities hold (`send_tls()` in hundreds of files): a search matches it only
where the query's files say which, on both engines (the bound lives in shared code)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem import Config, Memory
from graphmem.config import RetrievalWeights
from graphmem.extract import text
from graphmem.retrieve import channels
from graphmem.store import ops
from graphmem.store.base import ItemFilter

HELD_BY = 5  # files with a send_tls(), over the limit the tests set
RIGHT = "src/tls/pool_2.py"


@pytest.fixture(params=["embedded", "postgres"])
def memory(request: pytest.FixtureRequest, home: Path, repo: Path) -> Iterator[Memory]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with Memory(Config(home=home, cwd=repo, database_url=url)) as mem:
        yield mem


@pytest.fixture
def history(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An item per file holding a send_tls(), oldest first; the right one is the oldest."""
    monkeypatch.setattr(channels, "AMBIGUITY_LIMIT", HELD_BY - 1, raising=False)
    start = time.time() - 10 * 86_400
    ids = {}
    for n in (2, 0, 1, 3, 4):
        path = f"src/tls/pool_{n}.py"
        ids[path] = memory.add(f"Small cleanup number {n}", kind="note", files=[path],
                               dedupe=False, created_at=start + n * 86_400).id
    # Each file's own send_tls (linking an item's symbols would find the first one by its name).
    memory.store.apply(ops.PutEntities([
        {"id": f"symbol:?{path}::send_tls", "kind": "symbol", "name": "send_tls", "path": path,
         "qualname": f"{path}::send_tls", "resolved": False} for path in ids]))
    memory.store.apply(ops.PutLinks("MENTIONS", [
        {"source": item_id, "target": f"symbol:?{path}::send_tls", "weight": 1.0,
         "surface": f"{path}::send_tls"} for path, item_id in ids.items()]))
    return ids


def _direct(memory: Memory, query: str, files: list[str]) -> set[str]:
    found = channels.query_entities(memory.store, text.extract(query, concepts=False), files, [],
                                    hops=0, query=query)
    return {e for e in found.direct if e.startswith("symbol:")}


def _entity_channel(memory: Memory, query: str, files: list[str]) -> list[str]:
    found = channels.query_entities(memory.store, text.extract(query, concepts=False), files, [],
                                    hops=0, query=query)
    scored, _ = channels.entity_channel(memory.store, found, ItemFilter(project=memory.project))
    return [item_id for item_id, _ in scored]


def test_the_context_files_say_which_of_an_ambiguous_name_is_meant(
        memory: Memory, history: dict[str, str]) -> None:
    query = "send_tls() swallows the SSLError"
    assert _direct(memory, query, [RIGHT]) == {f"symbol:?{RIGHT}::send_tls"}
    assert _entity_channel(memory, query, [RIGHT]) == [history[RIGHT]]
    assert memory.rank(query, files=[RIGHT])[0] == history[RIGHT]


def test_a_file_the_query_names_says_which(memory: Memory, history: dict[str, str]) -> None:
    query = f"send_tls() of {RIGHT} swallows the SSLError"
    assert _direct(memory, query, []) == {f"symbol:?{RIGHT}::send_tls"}
    assert _entity_channel(memory, query, []) == [history[RIGHT]]
    assert memory.rank(query)[0] == history[RIGHT]


def test_an_ambiguous_name_nothing_narrows_matches_no_entity(
        memory: Memory, history: dict[str, str]) -> None:
    query = "send_tls() swallows the SSLError"
    assert _direct(memory, query, []) == set()
    assert _entity_channel(memory, query, []) == []
    assert set(memory.rank(query, k=10)) == set(history.values())  # words and meaning find them


def test_a_name_held_within_the_limit_matches_every_holder(
        memory: Memory, history: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channels, "AMBIGUITY_LIMIT", HELD_BY)
    memory.config.weights = RetrievalWeights()
    query = "send_tls() swallows the SSLError"
    assert _direct(memory, query, []) == {f"symbol:?{path}::send_tls" for path in history}
    assert set(_entity_channel(memory, query, [])) == set(history.values())
