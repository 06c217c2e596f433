"""Graph analytics over the typed memory graph (`graph.to_networkx`): pure functions.

- `centrality`: PageRank over the item–entity graph: which files, functions, errors... the
  memory revolves around. (Measured as a retrieval prior on the dev benchmarks it changed
  nothing beyond noise, so ranking does not use it.)
- `hot_spots`: files and functions with the most pitfall items, and how many of their items
  are stale.
- `near_duplicates` / `duplicate_clusters`: items whose vectors are close (cosine ≥ threshold),
  grouped into connected components for review.
- `orphans`: entities no item links to and no code edge touches (prunable).

networkx itself stays in graph.py; these read the graph through its plain API.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from graphmem import graph as g

CODE_TYPES = ("file", "symbol")


def centrality(graph: Any, *, types: Collection[str] | None = None,
               alpha: float = 0.85) -> dict[str, float]:
    """PageRank of every entity over the undirected item–entity graph, summing to 1 over the
    entities (items take part in the walk but are left out of the result). `types` keeps only
    entities of those types (e.g. without `concept`)."""
    bipartite = g.item_entity_graph(graph, types)
    ranks = g.pagerank(bipartite, alpha=alpha)
    entities = {n: r for n, r in ranks.items() if graph.nodes[n]["type"] != g.ITEM}
    total = sum(entities.values())
    return {n: r / total for n, r in sorted(entities.items(), key=lambda p: -p[1])} if total else {}


def top_entities(graph: Any, scores: Mapping[str, float], n: int = 15) -> list[dict[str, Any]]:
    """The n most central entities with their type, label and item count."""
    out = []
    for entity, score in sorted(scores.items(), key=lambda p: -p[1])[:n]:
        data = graph.nodes[entity]
        items = {u for u, _, key in graph.in_edges(entity, keys=True) if key in g.ITEM_EDGES}
        out.append({"entity": entity, "type": data["type"], "label": data["label"],
                    "score": score, "items": len(items)})
    return out


def _linked_items(graph: Any, entity: str) -> set[str]:
    return {u for u, _, key in graph.in_edges(entity, keys=True)
            if key in g.ITEM_EDGES and graph.nodes[u]["type"] == g.ITEM}


def hot_spots(graph: Any, *, kinds: Collection[str] = ("pitfall",),
              types: Collection[str] = CODE_TYPES, top: int = 10, roll_up: bool = True,
              resolved_only: bool = True) -> list[dict[str, Any]]:
    """Files and functions ranked by their items of `kinds` (pitfalls), then by stale share.

    A file counts the items linked to it and (with `roll_up`) to the symbols defined in it.
    Each row: entity, type, label, items (distinct, any kind), `kinds` hits, stale count and
    stale share. Text mentions no code matched (unresolved entities) are left out unless
    `resolved_only` is False.
    """
    rows = []
    for entity, data in graph.nodes(data=True):
        if data["type"] not in types or (resolved_only and not data.get("resolved", True)):
            continue
        items = _linked_items(graph, entity)
        if roll_up and data["type"] == "file":
            for symbol, _, key in graph.in_edges(entity, keys=True):
                if key == "DEFINED_IN":
                    items |= _linked_items(graph, symbol)
        if not items:
            continue
        hits = sum(1 for i in items if graph.nodes[i]["kind"] in kinds)
        stale = sum(1 for i in items if graph.nodes[i]["status"] == "stale")
        rows.append({"entity": entity, "type": data["type"], "label": data["label"],
                     "items": len(items), "hits": hits, "stale": stale,
                     "stale_share": stale / len(items)})
    rows.sort(key=lambda r: (-r["hits"], -r["stale_share"], -r["items"], r["entity"]))
    return rows[:top]


def near_duplicates(vectors: Mapping[str, Sequence[float]], threshold: float = 0.9,
                    block: int = 1024) -> list[list[str]]:
    """Groups of ids whose vectors are within `threshold` cosine of another in the group
    (connected components of the ≥ threshold pairs), biggest first; singletons left out."""
    ids = sorted(vectors)
    if len(ids) < 2:
        return []
    raw = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    matrix = (raw / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    pairs: list[tuple[str, str]] = []
    for start in range(0, len(ids), block):
        sims = matrix[start:start + block] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        pairs += [(ids[start + r], ids[c]) for r, c in zip(rows.tolist(), cols.tolist())
                  if start + r < c]
    if not pairs:
        return []
    groups = g.components({i for pair in pairs for i in pair}, pairs)
    return sorted((sorted(c) for c in groups), key=lambda c: (-len(c), c[0]))


def duplicate_clusters(memory: Any, threshold: float = 0.9, *, statuses: Sequence[str] = ("active", "stale"),
                       max_items: int = 20_000) -> dict[str, Any]:
    """Near-duplicate clusters among the project's live items, from their stored vectors.

    Looks at the `max_items` most recently updated items (says so in `sampled`); items without
    a vector of the configured model (stored with embeddings off, or not re-embedded yet) are
    counted in `without_vector`.
    """
    from graphmem.store.base import ItemFilter

    flt = ItemFilter(project=memory.project, statuses=tuple(statuses))
    total = memory.store.count_items(flt)
    rows = memory.store.list_items(flt, limit=max_items, order="updated_at")
    ids = [r["id"] for r in rows]
    vectors: dict[str, Sequence[float]] = {}
    model = memory.embedder.model_id  # another model's vectors are not comparable with these
    for start in range(0, len(ids), 2000):
        found = memory.store.vectors(ids[start:start + 2000])
        vectors.update({i: v["vec"] for i, v in found.items() if v["model"] == model})
    clusters = near_duplicates(vectors, threshold)
    by_id = {r["id"]: r for r in rows}
    return {"threshold": threshold, "items": total, "compared": len(vectors),
            "without_vector": len(ids) - len(vectors), "sampled": total > len(ids),
            "clusters": [[{"id": i, "kind": by_id[i]["kind"], "status": by_id[i]["status"],
                           "title": by_id[i]["title"]} for i in c] for c in clusters]}


def orphans(graph: Any, *, include_code: bool = False) -> list[str]:
    """Entities with no item link (MENTIONS/ANCHORED_TO) and no code edge, on the whole store's
    graph: candidates to prune. Files and functions the code index found mirror the repository
    and come back on the next index, so they are listed only with `include_code`."""
    out = []
    for node, data in graph.nodes(data=True):
        if data["type"] in (g.ITEM, g.OBSERVATION):
            continue
        if not include_code and data["type"] in CODE_TYPES and data.get("resolved", True):
            continue
        keys = {k for *_, k in graph.in_edges(node, keys=True)}
        keys |= {k for *_, k in graph.out_edges(node, keys=True)}
        if not keys & {*g.ITEM_EDGES, *g.CODE_EDGES}:
            out.append(node)
    return sorted(out)


def type_counts(graph: Any) -> dict[str, int]:
    """Nodes per type, in the order of graph.NODE_TYPES."""
    counts: dict[str, int] = {}
    for _, data in graph.nodes(data=True):
        counts[data["type"]] = counts.get(data["type"], 0) + 1
    return {t: counts[t] for t in g.NODE_TYPES if t in counts}
