"""Concepts only where they carry meaning (issue #18): no verbs or filler, and at ingest only
phrases that recur across items, are known concepts or name the project's code, capped per item."""

from __future__ import annotations

from graphmem import models as m
from graphmem.extract.link import CONCEPTS_PER_ITEM
from graphmem.extract.text import extract
from graphmem.store import ops


def concepts(text: str) -> set[str]:
    return {x.norm for x in extract(text) if x.kind == "concept"}


def test_verbs_filler_and_generic_words_are_not_concepts() -> None:
    # The words the issue found dominating a replayed store's links.
    found = concepts("The user said we should let the session end when the goal is reached; "
                     "the tests failed, so I ran them again.")
    assert found == set()
    assert concepts("Switched the retry backoff to exponential jitter for the webhook "
                    "dispatcher.") == {"retry backoff", "exponential jitter", "webhook dispatcher"}


def linked_concepts(memory, item_id: str) -> set[str]:
    return {ln["entity"]["name"] for ln in memory.store.item_links(item_id)
            if ln["kind"] == "MENTIONS" and ln["entity"]["kind"] == "concept"}


def test_ingest_keeps_recurring_or_code_named_concepts_only(memory) -> None:
    memory.writer.write(ops.PutEntities([{
        "id": m.entity_id("symbol", "src/limits.py::RateLimiter"), "kind": "symbol",
        "name": "RateLimiter", "path": "src/limits.py", "qualname": "src/limits.py::RateLimiter",
        "resolved": True}]))
    first = m.MemoryItem(project=memory.project, kind=m.ItemKind.decision,
                         title="Retry backoff: it doubles up to the rate limiter's window",
                         body="The webhook dispatcher waits on the rate limiter between tries.")
    second = m.MemoryItem(project=memory.project, kind=m.ItemKind.pitfall,
                          title="Without retry backoff the upstream bans the token",
                          body="Seen twice in staging.")
    saved = memory.add_items([first, second], dedupe=False)
    assert linked_concepts(memory, saved[0].id) == {"retry backoff", "rate limiter"}
    assert linked_concepts(memory, saved[1].id) == {"retry backoff"}


def test_concepts_are_capped_per_item(memory) -> None:
    phrases = ["retry backoff", "exponential jitter", "webhook dispatcher", "token bucket",
               "circuit breaker", "dead letter queue"]
    items = [m.MemoryItem(project=memory.project, kind=m.ItemKind.decision,
                          title=f"Design note {n}", body=", ".join(phrases) + ".")
             for n in ("one", "two")]
    saved = memory.add_items(items, dedupe=False)
    for item in saved:
        assert len(linked_concepts(memory, item.id)) == CONCEPTS_PER_ITEM
