"""Item vectors kept in step with the configured model: encode only text whose vector is missing
or stale (the stored `model` and `text_hash` say), give items without a vector one, and re-embed
what another model made (at open, in the owner's background, or `graphmem rebuild --reembed`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphmem import models as m
from graphmem.store import ops

if TYPE_CHECKING:
    from graphmem.service import Memory

BATCH = 256


def row(memory: Memory, item: m.MemoryItem, vector: Any) -> dict[str, Any]:
    """The PutVectors row of an item's vector: which model made it from which text."""
    return {"id": item.id, "vec": vector.tolist(), "model": memory.embedder.model_id,
            "text_hash": item.text_hash}


def encode_new(memory: Memory, items: Sequence[m.MemoryItem],
               existing: dict[str, Any]) -> dict[int, Any]:
    """Vectors by position in `items`, encoded only for texts that have none yet: a stored item
    whose vector the configured model made from the same text keeps it."""
    model = memory.embedder.model_id
    known = [i.id for i in items if i.id in existing]
    stamps = memory.store.vector_stamps(known) if known else {}
    todo = [n for n, item in enumerate(items) if stamps.get(item.id) != (model, item.text_hash)]
    encoded = memory.embedder.encode([items[n].text for n in todo])
    return dict(zip(todo, encoded))


def put_one(memory: Memory, item: m.MemoryItem, vector: Any = None) -> None:
    """Store an item's vector (encoded now unless given) when embedding is on."""
    if not memory.config.embed:
        return
    if vector is None:
        vector = memory.embedder.encode([item.text])[0]
    memory.writer.write(ops.PutVectors([row(memory, item, vector)]))


def embed_items(memory: Memory, ids: Sequence[str]) -> None:
    """Encode these stored items now and store their vectors."""
    items = [m.MemoryItem.from_row(r) for r in memory.store.get_items(ids)]
    encoded = memory.embedder.encode([i.text for i in items])
    memory.writer.write(ops.PutVectors([row(memory, i, v) for i, v in zip(items, encoded)]))


def embed_missing(memory: Memory) -> int:
    """Give items without a vector one (a store written with embedding off, or cut short)."""
    if not memory.config.embed:
        return 0
    missing = memory.store.items_without_vectors()
    for start in range(0, len(missing), BATCH):
        embed_items(memory, missing[start:start + BATCH])
    return len(missing)


def reembed(memory: Memory, everything: bool = False, limit: int | None = None) -> dict[str, int]:
    """Embed with the configured model the items whose vector another model made (every item
    with `everything`), in batches, a progress line on stderr after each; at most `limit` of
    them. {"embedded": how many, "left": how many it did not reach}."""
    if not memory.config.embed or memory.read_only:
        return {"embedded": 0, "left": 0}
    model = memory.embedder.model_id
    others = memory.store.vectors_not_of(model)
    todo = memory.store.item_ids() if everything else sorted(others)
    if not todo:
        return {"embedded": 0, "left": 0}
    chosen = todo[:limit]
    was = ", ".join(sorted(set(others.values()))) or model
    for start in range(0, len(chosen), BATCH):
        embed_items(memory, chosen[start:start + BATCH])
        done = min(start + BATCH, len(chosen))
        print(f"graphmem: re-embedding with {model} (stored vectors: {was}): {done:,} done, "
              f"{len(todo) - done:,} left", file=sys.stderr, flush=True)
    return {"embedded": len(chosen), "left": len(todo) - len(chosen)}


def fill(memory: Memory, everything: bool = False) -> int:
    """What a rebuilt graph needs before it is swapped in: vectors of the configured model."""
    return reembed(memory, everything=everything)["embedded"] + embed_missing(memory)
