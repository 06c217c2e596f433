"""Link mix of a store: share of MENTIONS links per entity kind and the top concepts, as stored and
as this checkout's extractor would link the same items (replayed session by session, in order).

    python bench/bench_link_mix.py /tmp/sb-extract18/runs/spotter/gmhome/projects/*/graph.kuzu
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from graphmem.extract import link
from graphmem.extract.text import extract_many
from graphmem.models import entity_id
from graphmem.store.base import ItemFilter
from graphmem.store.kuzu import KuzuStore


def stored_mix(store: KuzuStore, items: list[dict]) -> Counter[tuple[str, str]]:
    """(kind, name) of every MENTIONS link the store holds."""
    found: Counter[tuple[str, str]] = Counter()
    for item in items:
        for ln in store.item_links(item["id"]):
            if ln["kind"] == "MENTIONS":
                found[(ln["entity"]["kind"], ln["entity"]["name"])] += 1
    return found


def replayed_mix(store: KuzuStore, items: list[dict]) -> Counter[tuple[str, str]]:
    """(kind, norm) of the links this extractor makes, batch by session as ingest does."""
    found: Counter[tuple[str, str]] = Counter()
    known: set[str] = set()
    batches: dict[str, list[dict]] = {}
    for item in sorted(items, key=lambda i: i["created_at"]):
        batches.setdefault(item.get("session_id") or item["id"], []).append(item)
    for batch in batches.values():
        texts = [f"{i['title']}\n{i['body']}".strip() for i in batch]
        per_item = link.select_concepts(extract_many(texts), store, known)
        for mentions in per_item:
            for kind, norm in {(m.kind, m.norm) for m in mentions}:
                found[(kind, norm)] += 1
                if kind == "concept":
                    known.add(entity_id("concept", norm))
    return found


def report(name: str, mix: Counter[tuple[str, str]]) -> None:
    total = sum(mix.values()) or 1
    kinds: Counter[str] = Counter()
    for (kind, _), n in mix.items():
        kinds[kind] += n
    print(f"== {name}: {total} links")
    print("  " + "  ".join(f"{k} {n / total:.0%}" for k, n in kinds.most_common()))
    for kind, top in (("concept", 20), ("symbol", 10), ("command", 6)):
        names = [(n, norm) for (k, norm), n in mix.most_common() if k == kind][:top]
        print(f"  top {kind}s:", ", ".join(f"{norm} ({n})" for n, norm in names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph", type=Path, help="a project's graph.kuzu")
    args = parser.parse_args()
    store = KuzuStore(args.graph, read_only=True)
    items = store.list_items(ItemFilter(statuses=None), limit=1_000_000)
    print(f"{len(items)} items")
    report("stored (the code that ingested them)", stored_mix(store, items))
    report("this checkout's extractor", replayed_mix(store, items))


if __name__ == "__main__":
    main()
