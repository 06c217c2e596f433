"""Retrieval channels on a real store: symbols named by the query's words."""

from __future__ import annotations

import time

from graphmem import Memory
from graphmem.config import RetrievalWeights
from graphmem.extract import text
from graphmem.retrieve import channels

SESSIONS = "src/shop/sessions.py"
TOUCHED = {  # oldest first, same words each: only the symbol can lift the redirect change
    "resolve_redirects": "Session.resolve_redirects",
    "merge_environment_settings": "Session.merge_environment_settings",
    "prepare_request": "Session.prepare_request",
}


def _history(memory: Memory) -> dict[str, str]:
    ids = {}
    start = time.time() - 3 * 86_400
    for n, (short, qualname) in enumerate(TOUCHED.items()):
        item = memory.add("Small cleanup", kind="note", files=[SESSIONS],
                          symbols=[f"{SESSIONS}::{qualname}"], dedupe=False,
                          created_at=start + n * 86_400)
        ids[short] = item.id
    return ids


def test_symbols_in_context_files_are_named_by_the_query_words(memory: Memory) -> None:
    _history(memory)
    found = channels.query_entities(memory.store, text.extract("fix redirect handling",
                                                               concepts=False),
                                    [SESSIONS], [], hops=1, query="fix redirect handling")
    named = {found.surfaces[e]: share for e, share in found.named.items()}
    assert set(named) == {"Session.resolve_redirects"}
    assert 0 < named["Session.resolve_redirects"] < 1  # "fix" and "handling" are not in the name


def test_the_named_symbol_lifts_the_item_that_touched_it(memory: Memory) -> None:
    ids = _history(memory)
    result = memory.search("fix redirect handling", files=[SESSIONS], explain=True)
    assert result.hits[0].item.id == ids["resolve_redirects"]
    assert any("resolve_redirects" in why for why in result.hits[0].why)
    memory.config.weights = RetrievalWeights(symbol_name=0.0)
    unnamed = memory.rank("fix redirect handling", files=[SESSIONS])
    assert unnamed[0] != ids["resolve_redirects"]


def test_query_words_absent_from_every_item_name_nothing(memory: Memory) -> None:
    _history(memory)
    found = channels.query_entities(memory.store, [], [SESSIONS], [], hops=1,
                                    query="zanzibarquux frobnication")
    assert found.inside and not found.named


def test_an_item_about_one_file_outranks_a_sweep_over_twenty(memory: Memory) -> None:
    start = time.time() - 2 * 86_400
    focused = memory.add("Small cleanup", kind="note", files=[SESSIONS], dedupe=False,
                         created_at=start)
    sweep = memory.add("Small cleanup", kind="note", dedupe=False, created_at=start + 86_400,
                       files=[SESSIONS, *(f"src/shop/module_{n}.py" for n in range(19))])
    assert memory.rank("cleanup", files=[SESSIONS])[:2] == [focused.id, sweep.id]
    memory.config.weights = RetrievalWeights(breadth=0.0)
    assert memory.rank("cleanup", files=[SESSIONS])[:2] == [sweep.id, focused.id]  # newer wins


def test_what_was_recorded_about_the_context_files_comes_before_the_rest(memory: Memory) -> None:
    """files→BM25 puts every item sharing a context file first; graphmem never ranks below that
    baseline because it does the same, ordering each tier by all its channels."""
    start = time.time() - 2 * 86_400
    on_file = memory.add("Session cookies are merged before the redirect is followed",
                         kind="note", files=[SESSIONS], dedupe=False, created_at=start)
    elsewhere = memory.add("Fix redirect handling: follow a redirect loop only thirty times",
                           kind="note", files=["src/shop/adapters.py"], dedupe=False,
                           symbols=[f"{SESSIONS}::Session.resolve_redirects"],
                           created_at=start + 86_400)
    ranked = memory.rank("fix redirect handling loop", files=[SESSIONS])
    assert ranked[:2] == [on_file.id, elsewhere.id]
    assert memory.rank("fix redirect handling loop")[0] == elsewhere.id  # no context, no tier
