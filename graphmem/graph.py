"""The memory as a networkx graph: typed nodes and edges to analyse, draw and export.

The only module importing networkx. `to_networkx` reads the store once (`graph_rows`) and builds
a `MultiDiGraph` (`from_rows` builds several views from one read). Node ids are the store's ids
(items, `kind:key` entities, observations); nodes carry `type` (item, file, symbol, error, commit,
package, envvar, command, url, concept, observation), a short `label` and the stored fields.
Edges are keyed by their `type` (MENTIONS, ANCHORED_TO, DEFINED_IN, CONTAINS, IMPORTS, TOUCHES,
DERIVED_FROM, SUPERSEDES) and carry its properties (ANCHORED_TO its `hash`, `commit` and `at`).
Every attribute is a str, int, float or bool (lists are JSON-encoded, missing values take the
column's default), so GraphML, GEXF and node-link JSON exports read back the same graph.
Drawing imports matplotlib on use only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import networkx as nx

from graphmem.errors import GraphmemError, InvalidInput, NotFound
from graphmem.models import EntityKind, Scope
from graphmem.store.schema import (
    ENTITY_COLUMNS,
    ITEM_COLUMNS,
    LINK_PROPS,
    LINK_TABLES,
    OBSERVATION_COLUMNS,
    typed,
)

ITEM = "item"
OBSERVATION = "observation"
ENTITY_TYPES = tuple(k.value for k in EntityKind)
NODE_TYPES = (ITEM, *ENTITY_TYPES, OBSERVATION)
EDGE_TYPES = LINK_TABLES
ITEM_EDGES = ("MENTIONS", "ANCHORED_TO")
CODE_EDGES = ("DEFINED_IN", "CONTAINS", "IMPORTS", "TOUCHES")
FORMATS = ("graphml", "gexf", "json")
LINK_DEFAULTS: dict[str, Any] = {"weight": 1.0, "surface": "", "hash": "", "commit": "", "at": 0.0}
_ITEM_SKIP = {"id", "search_text"}  # search_text is derived from title, body and tags
LABEL_CHARS = 36

# Colours by node type (matplotlib names), used by `draw` and its legend.
TYPE_COLOURS = {
    "item": "#f2c14e", "file": "#4c78a8", "symbol": "#72b7b2", "error": "#e45756",
    "commit": "#9d755d", "package": "#b279a2", "envvar": "#54a24b", "command": "#ff9da6",
    "url": "#bab0ac", "concept": "#d8d8d8", "observation": "#eeeeee",
}
STALE_COLOUR = "#c0392b"


# ----- building --------------------------------------------------------------------------------
Rows = Mapping[str, Sequence[Mapping[str, Any]]]


def to_networkx(memory: Any, scope: str | Scope | None = None, kinds: Iterable[str] | None = None,
                entity: str | Sequence[str] | None = None, hops: int = 1, *,
                statuses: Iterable[str] | None = None, observations: bool = True,
                max_items: int | None = None, seed: int = 0) -> nx.MultiDiGraph:
    """The store, or a neighbourhood of it, as a typed MultiDiGraph (see `from_rows`)."""
    return from_rows(memory.store.graph_rows(None), scope, kinds, entity, hops, statuses=statuses,
                     observations=observations, max_items=max_items, seed=seed)


def from_rows(rows: Rows, scope: str | Scope | None = None, kinds: Iterable[str] | None = None,
              entity: str | Sequence[str] | None = None, hops: int = 1, *,
              statuses: Iterable[str] | None = None, observations: bool = True,
              max_items: int | None = None, seed: int = 0) -> nx.MultiDiGraph:
    """A typed MultiDiGraph from the store's rows (`store.graph_rows()`: read them once, then
    build several views without reading the store again).

    Unfiltered, the graph holds every node and edge. `scope` keeps the items of one project (a
    `Scope` with a branch: of that branch too), `kinds` and `statuses` items of those kinds and
    statuses; a filtered graph holds the kept items, the entities and observations they link
    to, and the edges among those. `entity` (an id such as `file:src/db.py`, a path or its tail,
    a function name, an error code) narrows it to that entity's neighbourhood: its code
    neighbours within `hops` code edges, the items linked to any of them and what those items
    link to; node attribute `hop` is the distance from the seeds. With more items than
    `max_items` a random sample of them is kept (`seed`), and the graph's `sampled`,
    `items_total` and `items_shown` attributes say so.
    """
    if hops < 0:
        raise InvalidInput("hops must be 0 or more")
    if max_items is not None and max_items < 1:
        raise InvalidInput("max_items must be a positive number")
    project, branch = _scope(scope)
    kept_kinds = set(kinds) if kinds is not None else None
    kept_statuses = set(statuses) if statuses is not None else None
    items = [r for r in rows.get("Item", ())
             if (project is None or r["project"] == project) and (not branch or r["branch"] == branch)
             and (kept_kinds is None or r["kind"] in kept_kinds)
             and (kept_statuses is None or r["status"] in kept_statuses)]
    whole = len(items) == len(rows.get("Item", ()))
    seeds: list[str] = []
    code: dict[str, int] = {}
    if entity is not None:
        skeleton = code_graph(rows)
        seeds = resolve(skeleton, entity)
        code = code_neighbours(skeleton, seeds, hops)
        linked = {r["source"] for table in ITEM_EDGES for r in rows.get(table, ())
                  if r["target"] in code}
        items = [r for r in items if r["id"] in linked]
        whole = False
    total = len(items)
    if max_items is not None and total > max_items:
        items = random.Random(seed).sample(items, max_items)
        whole = False
    keep = {r["id"] for r in items}
    if whole:
        entities = {r["id"] for r in rows.get("Entity", ())}
        notes = {r["id"] for r in rows.get("Observation", ())}
    else:
        entities = {r["target"] for table in ITEM_EDGES for r in rows.get(table, ())
                    if r["source"] in keep} | set(code)
        notes = {r["target"] for r in rows.get("DERIVED_FROM", ()) if r["source"] in keep}
    graph = nx.MultiDiGraph()
    for row in items:
        graph.add_node(row["id"], **item_attrs(row))
    for row in rows.get("Entity", ()):
        if row["id"] in entities:
            graph.add_node(row["id"], **entity_attrs(row))
    if observations:
        for row in rows.get("Observation", ()):
            if row["id"] in notes:
                graph.add_node(row["id"], **observation_attrs(row))
    for table in EDGE_TYPES:
        for row in rows.get(table, ()):
            if row["source"] in graph and row["target"] in graph:
                graph.add_edge(row["source"], row["target"], key=table, **edge_attrs(table, row))
    if entity is not None:
        _set_hops(graph, code, hops)
    graph.graph.update({"project": project or "", "branch": branch,
                        "kinds": ",".join(sorted(kept_kinds or ())),
                        "statuses": ",".join(sorted(kept_statuses or ())),
                        "seeds": json.dumps(seeds), "hops": hops if entity is not None else 0,
                        "items_total": total, "items_shown": len(items),
                        "sampled": len(items) < total})
    return graph


def _set_hops(graph: nx.MultiDiGraph, code: Mapping[str, int], hops: int) -> None:
    """Node attribute `hop`: code nodes their distance from the seeds, an item one more than its
    nearest code node, what items link to one more than its nearest item."""
    distance: dict[str, int] = dict(code)
    items = set(nodes_of_type(graph, ITEM))
    for item in items:
        near = [code[v] for _, v, key in graph.out_edges(item, keys=True)
                if key in ITEM_EDGES and v in code]
        distance[item] = min(near, default=hops) + 1
    for item in items:
        for _, v in graph.out_edges(item):
            if v not in code and v not in items:
                distance[v] = min(distance.get(v, distance[item] + 1), distance[item] + 1)
    for node in graph:
        graph.nodes[node]["hop"] = distance.get(node, hops + 2)


def code_graph(rows: Rows) -> nx.MultiDiGraph:
    """Entities and the code edges among them only (cheap: no items)."""
    graph = nx.MultiDiGraph()
    for row in rows.get("Entity", ()):
        graph.add_node(row["id"], **entity_attrs(row))
    for table in CODE_EDGES:
        for row in rows.get(table, ()):
            if row["source"] in graph and row["target"] in graph:
                graph.add_edge(row["source"], row["target"], key=table, type=table)
    return graph


def _value(value: Any, default: Any) -> Any:
    """A GraphML-safe value with the column's type: lists and dicts become JSON text."""
    if isinstance(default, list) or isinstance(value, (list, tuple, dict)):
        return json.dumps(list(value) if isinstance(value, tuple) else (value or []),
                          ensure_ascii=False)
    value = typed(value, default)
    return value if isinstance(value, (bool, int, float)) else str(value)


def _fields(row: Mapping[str, Any], columns: Mapping[str, Any], skip: Collection[str]) -> dict[str, Any]:
    return {name: _value(row.get(name), default) for name, default in columns.items()
            if name not in skip}


def item_attrs(row: Mapping[str, Any]) -> dict[str, Any]:
    fields = _fields(row, ITEM_COLUMNS, _ITEM_SKIP)
    return {"type": ITEM, "label": short(fields["title"]), **fields}


def entity_attrs(row: Mapping[str, Any]) -> dict[str, Any]:
    fields = _fields(row, ENTITY_COLUMNS, {"id"})
    kind = fields["kind"] if fields["kind"] in ENTITY_TYPES else "concept"
    return {"type": kind, "label": entity_label(row["id"], fields), **fields}


def observation_attrs(row: Mapping[str, Any]) -> dict[str, Any]:
    fields = _fields(row, OBSERVATION_COLUMNS, {"id"})
    what = " ".join(p for p in (fields["event"], fields["tool"]) if p)
    return {"type": OBSERVATION, "label": short(what or "observation"), **fields}


def edge_attrs(table: str, row: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": table, **{p: _value(row.get(p), LINK_DEFAULTS[p])
                              for p in LINK_PROPS.get(table, ())}}


def short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def entity_label(entity_id: str, fields: Mapping[str, Any]) -> str:
    """How an entity reads on a drawing: a path, `Class.method()`, a short sha, a name."""
    kind = fields.get("kind")
    key = entity_id.split(":", 1)[1] if ":" in entity_id else entity_id
    unresolved = key.startswith("?")
    key = key.lstrip("?")
    if kind == "symbol":
        local = (fields.get("qualname") or key).split("::")[-1]
        text = f"{local}()"
    elif kind == "file":
        text = fields.get("path") or key
    elif kind == "commit":
        text = key[:7]
    else:
        text = fields.get("name") or key
    return short(text + (" ?" if unresolved else ""))


def _scope(scope: str | Scope | None) -> tuple[str | None, str]:
    if scope is None:
        return None, ""
    if isinstance(scope, Scope):
        return scope.project, scope.branch
    return str(scope), ""


# ----- selecting ---------------------------------------------------------------------------------
def nodes_of_type(graph: nx.MultiDiGraph, *types: str) -> list[str]:
    return [n for n, d in graph.nodes(data=True) if d.get("type") in types]


def resolve(graph: nx.MultiDiGraph, entity: str | Sequence[str]) -> list[str]:
    """Entity node ids for an id, a path (or its tail), a symbol name or an error code."""
    wanted = [entity] if isinstance(entity, str) else list(entity)
    found: list[str] = []
    for text in wanted:
        text = text.strip()
        if text in graph and graph.nodes[text]["type"] != ITEM:
            found.append(text)
            continue
        bare = text.rstrip("()")
        matches = []
        for node, data in graph.nodes(data=True):
            kind = data["type"]
            if kind in (ITEM, OBSERVATION):
                continue
            path, qualname, name = data.get("path", ""), data.get("qualname", ""), data.get("name", "")
            if (node in (f"{kind}:{text}", f"{kind}:{bare}") or (path and kind == "file" and (
                    path == text or path.endswith("/" + text)))
                    or (kind == "symbol" and qualname.endswith(("::" + bare, "." + bare)))
                    or (kind not in ("file", "symbol") and name == text)):
                matches.append(node)
        resolved = [n for n in matches if graph.nodes[n].get("resolved", True)]
        found += resolved or matches
    if not found:
        raise NotFound(f"no entity matches {', '.join(map(repr, wanted))}")
    return list(dict.fromkeys(found))


def code_neighbours(graph: nx.MultiDiGraph, seeds: Iterable[str], hops: int) -> dict[str, int]:
    """Entities within `hops` code edges (either direction) of the seeds, with their distance."""
    seen = {s: 0 for s in seeds}
    frontier = list(seen)
    for depth in range(1, hops + 1):
        nxt = []
        for node in frontier:
            for u, v, key in [*graph.out_edges(node, keys=True), *graph.in_edges(node, keys=True)]:
                other = v if u == node else u
                if key in CODE_EDGES and other not in seen:
                    seen[other] = depth
                    nxt.append(other)
        frontier = nxt
    return seen


# ----- exporting ---------------------------------------------------------------------------------
def export(graph: nx.MultiDiGraph, target: str | Path | BinaryIO, format: str = "graphml") -> Any:
    """Write the graph as GraphML, GEXF (edge type in the edge label) or node-link JSON, to a
    path or an open binary file; returns the target."""
    fmt = _format(format)
    if fmt == "graphml":
        nx.write_graphml(graph, target)
    elif fmt == "gexf":
        copy = graph.copy()
        for _, _, data in copy.edges(data=True):
            data["label"] = data.pop("type")  # GEXF reserves an edge's "type" (directed...)
        nx.write_gexf(copy, target)
    else:
        text = json.dumps(to_data(graph), ensure_ascii=False).encode("utf-8")
        if isinstance(target, (str, Path)):
            Path(target).write_bytes(text)
        else:
            target.write(text)
    return Path(target) if isinstance(target, str) else target


def load(path: str | Path, format: str = "graphml") -> nx.MultiDiGraph:
    """Read back a graph written by `export`."""
    fmt = _format(format)
    source = Path(path)
    if not source.is_file():
        raise InvalidInput(f"no such file: {source}")
    if fmt == "graphml":
        graph = nx.read_graphml(source, force_multigraph=True)
        for name in ("node_default", "edge_default"):
            graph.graph.pop(name, None)
    elif fmt == "gexf":
        graph = nx.read_gexf(source)
        graph.graph.clear()
        for _, _, data in graph.edges(data=True):
            data.pop("id", None)
            data["type"] = data.pop("label")
    else:
        graph = from_data(json.loads(source.read_text(encoding="utf-8")))
    if not isinstance(graph, nx.MultiDiGraph):
        graph = nx.MultiDiGraph(graph)
    return graph


def to_data(graph: nx.MultiDiGraph) -> dict[str, Any]:
    """Node-link data (plain JSON values): how a graph crosses a process boundary."""
    return dict(nx.node_link_data(graph, edges="edges"))


def from_data(data: Mapping[str, Any]) -> nx.MultiDiGraph:
    """The graph back from `to_data`."""
    graph = nx.node_link_graph(dict(data), directed=True, multigraph=True, edges="edges")
    return graph if isinstance(graph, nx.MultiDiGraph) else nx.MultiDiGraph(graph)


def _format(format: str) -> str:
    fmt = format.lower().lstrip(".")
    fmt = "json" if fmt in ("node-link", "nodelink") else fmt
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown graph format {format!r}; use one of {', '.join(FORMATS)}")
    return fmt


# ----- algorithms the analytics need (networkx stays in this module) ----------------------------
def item_entity_graph(graph: nx.MultiDiGraph, types: Collection[str] | None = None) -> nx.Graph:
    """Undirected item–entity graph: an edge per linked pair (MENTIONS/ANCHORED_TO), weighted by
    the strongest link; `types` keeps only entities of those types."""
    out = nx.Graph()
    for u, v, key, data in graph.edges(keys=True, data=True):
        if key not in ITEM_EDGES or (types is not None and graph.nodes[v]["type"] not in types):
            continue
        weight = float(data.get("weight", 1.0))
        if out.has_edge(u, v):
            out[u][v]["weight"] = max(out[u][v]["weight"], weight)
        else:
            out.add_edge(u, v, weight=weight)
    return out


def pagerank(graph: nx.Graph, alpha: float = 0.85, weight: str | None = "weight") -> dict[str, float]:
    if graph.number_of_nodes() == 0:
        return {}
    return nx.pagerank(graph, alpha=alpha, weight=weight)


def components(nodes: Iterable[str], pairs: Iterable[tuple[str, str]]) -> list[set[str]]:
    """Connected components of the pairs' graph (nodes without a pair are singletons)."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(pairs)
    return [set(c) for c in nx.connected_components(g)]


# ----- drawing (matplotlib is imported only here, on use) ------------------------------------------
def draw(graph: nx.MultiDiGraph, ax: Any = None, *, hide: Collection[str] = ("concept", "observation"),
         unresolved: bool = False, title: str | None = None, max_nodes: int = 60,
         seed: int = 7) -> dict[str, Any]:
    """Draw a (neighbourhood) graph: colour by node type, items as squares, stale items outlined
    in red and labelled "(stale)", seeds larger. Types in `hide` and (unless `unresolved`) text
    mentions no code matched are left out; past `max_nodes`, the nodes nearest the seeds stay.
    Returns what was drawn: node ids and their labels."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError as exc:
        raise GraphmemError("drawing needs matplotlib: pip install matplotlib") from exc

    shown = graph.subgraph([n for n, d in graph.nodes(data=True) if d["type"] not in hide
                            and (unresolved or d.get("resolved", True))]).copy()
    note = ""
    if shown.number_of_nodes() > max_nodes:
        ranked = sorted(shown.nodes, key=lambda n: (shown.nodes[n].get("hop", 0), -shown.degree(n), n))
        shown = shown.subgraph(ranked[:max_nodes]).copy()
        note = f" (nearest {max_nodes} of {len(ranked)} nodes)"
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 8))
    ax.set_axis_off()
    if title is not None or note:
        ax.set_title((title or "") + note, fontsize=12)
    if shown.number_of_nodes() == 0:
        ax.text(0.5, 0.5, "nothing to draw", ha="center", va="center", transform=ax.transAxes)
        return {"nodes": [], "labels": []}
    seeds = set(json.loads(graph.graph.get("seeds") or "[]"))
    simple = nx.Graph(shown)
    positions = _spread(nx.spring_layout(simple, seed=seed, iterations=300,
                                         k=2.2 / max(1, simple.number_of_nodes()) ** 0.5))
    nx.draw_networkx_edges(simple, positions, ax=ax, edge_color="#aaaaaa", width=0.8, arrows=False)
    for shape, group in (("s", [n for n in shown if shown.nodes[n]["type"] == ITEM]),
                         ("o", [n for n in shown if shown.nodes[n]["type"] != ITEM])):
        if not group:
            continue
        stale = [shown.nodes[n].get("status") == "stale" for n in group]
        nx.draw_networkx_nodes(shown, positions, nodelist=group, ax=ax, node_shape=shape,
                               node_color=[TYPE_COLOURS.get(shown.nodes[n]["type"], "#cccccc")
                                           for n in group],
                               node_size=[700 if n in seeds else 260 for n in group],
                               edgecolors=[STALE_COLOUR if s else "#555555" for s in stale],
                               linewidths=[2.8 if s else 0.6 for s in stale])
    labels = {n: display_label(shown.nodes[n]) for n in shown}
    ys = [y for _, y in positions.values()]
    drop = 0.025 * ((max(ys) - min(ys)) or 1.0)
    for node, text in labels.items():
        x, y = positions[node]
        ax.text(x, y - drop, text, ha="center", va="top", fontsize=7.5, zorder=5,
                fontweight="bold" if node in seeds else "normal",
                color=STALE_COLOUR if shown.nodes[node].get("status") == "stale" else "#222222")
    ax.margins(0.12)
    types = sorted({shown.nodes[n]["type"] for n in shown}, key=NODE_TYPES.index)
    handles = [Line2D([], [], marker="s" if t == ITEM else "o", linestyle="", markersize=8,
                      markerfacecolor=TYPE_COLOURS[t], markeredgecolor="#555555", label=t)
               for t in types]
    if any(shown.nodes[n].get("status") == "stale" for n in shown):
        handles.append(Line2D([], [], marker="s", linestyle="", markersize=8,
                              markerfacecolor=TYPE_COLOURS[ITEM], markeredgecolor=STALE_COLOUR,
                              markeredgewidth=2.4, label="stale item"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=6, fontsize=8,
              frameon=False)
    return {"nodes": list(shown), "labels": [labels[n] for n in shown]}


def _spread(positions: dict[str, Any], gap: float = 0.2, aspect: float = 2.5,
            rounds: int = 80) -> dict[str, Any]:
    """Push apart nodes whose labels would overlap (labels are wider than tall: a horizontal
    distance counts `aspect` times less), so every label stays readable."""
    nodes = sorted(positions)
    points = {n: [float(positions[n][0]), float(positions[n][1])] for n in nodes}
    for _ in range(rounds):
        moved = False
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                dx = (points[b][0] - points[a][0]) / aspect
                dy = points[b][1] - points[a][1]
                distance = (dx * dx + dy * dy) ** 0.5
                if distance >= gap:
                    continue
                if distance < 1e-9:
                    dx, dy, distance = 0.0, 1.0, 1.0
                push = (gap - distance) / 2 / distance
                points[a][0] -= dx * push * aspect
                points[a][1] -= dy * push
                points[b][0] += dx * push * aspect
                points[b][1] += dy * push
                moved = True
        if not moved:
            break
    return {n: tuple(p) for n, p in points.items()}


def display_label(data: Mapping[str, Any]) -> str:
    """A node's label on a drawing, on at most two lines; stale items say so."""
    text = data.get("label", "")
    if data.get("type") == ITEM:
        text = short(text, 32) + (" (stale)" if data.get("status") == "stale" else "")
    if len(text) > 20:
        cut = text.rfind(" ", 8, 24)
        if cut > 0:
            text = text[:cut] + "\n" + text[cut + 1:]
    return text
