"""Resolve mentions to graph entities: exact names, then unique short names, then path suffixes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from graphmem.models import Entity, EntityKind, entity_id

CODE_KINDS = ("file", "symbol")
AMBIGUOUS_WEIGHT = 0.5
CONCEPTS_PER_ITEM = 4


class MentionLike(Protocol):
    kind: str
    text: str
    norm: str
    bare: bool


class EntityLookup(Protocol):
    def find_entities(self, *, names: Iterable[str] = (), kinds: Sequence[str] | None = None,
                      path_suffixes: Iterable[str] = ()) -> list[dict]: ...


@dataclass(frozen=True)
class Resolved:
    """One link from an item to an entity."""

    entity: Entity
    weight: float
    surface: str
    anchor: bool


def _unresolved(kind: str, norm: str) -> Entity:
    """A code name the index does not know (yet); path/qualname kept so later mentions find it."""
    path = norm if kind == "file" else norm.split("::", 1)[0] if "::" in norm else ""
    qualname = norm if "::" in norm else ""
    name = norm.rsplit("::", 1)[-1].rsplit(".", 1)[-1] if kind == "symbol" else norm
    return Entity(id=entity_id(kind, f"?{norm}"), kind=EntityKind(kind), name=name, path=path,
                  qualname=qualname, resolved=False)


class _Named(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def norm(self) -> str: ...


M = TypeVar("M", bound=_Named)


def select_concepts(per_item: Sequence[Sequence[M]], lookup: EntityLookup,
                    known: Iterable[str] = (), cap: int = CONCEPTS_PER_ITEM) -> list[list[M]]:
    """Keep the concepts that carry meaning: a phrase that recurs across the items, is already a
    concept of the store (`known` ids) or names the project's code (a file or symbol called
    `retry_backoff`, `RetryBackoff` or `backoff`); at most `cap` per item, those first."""
    known_ids = set(known)
    items_with: dict[str, int] = {}
    for mentions in per_item:
        for norm in {m.norm for m in mentions if m.kind == "concept"}:
            items_with[norm] = items_with.get(norm, 0) + 1
    forms = {norm: _code_forms(norm) for norm in items_with}
    code_names = {r["name"] for r in lookup.find_entities(
        names={f for fs in forms.values() for f in fs}, kinds=list(CODE_KINDS))}

    def score(norm: str) -> tuple[int, int, int]:
        in_code = not code_names.isdisjoint(forms[norm])
        recurs = items_with[norm] > 1 or entity_id("concept", norm) in known_ids
        return (2 * in_code + recurs, items_with[norm], norm.count(" "))

    out = []
    for mentions in per_item:
        ranked = sorted({m.norm for m in mentions if m.kind == "concept" and score(m.norm)[0]},
                        key=score, reverse=True)[:cap]
        out.append([m for m in mentions if m.kind != "concept" or m.norm in ranked])
    return out


def _code_forms(norm: str) -> set[str]:
    """How code would spell a concept: `retry backoff` -> retry_backoff, RetryBackoff, retryBackoff,
    and each of its words alone."""
    words = norm.split()
    camel = "".join(w.capitalize() for w in words)
    return {"_".join(words), "-".join(words), camel, camel[:1].lower() + camel[1:], *words,
            *(w.capitalize() for w in words)}


_ENTITY_FIELDS = frozenset(Entity.model_fields)  # each read of model_fields runs a pydantic descriptor


def _as_entity(row: dict) -> Entity:
    return Entity(**{k: v for k, v in row.items() if k in _ENTITY_FIELDS})


def resolve_code(kind: str, norm: str, surface: str, lookup: EntityLookup, *,
                 ambiguity_limit: int | None = None, near: Sequence[str] = ()) -> list[Resolved]:
    """A file or symbol mention → the code entities it names (all candidates when ambiguous).

    `ambiguity_limit` (a search's bound): a name more entities hold than this says little about
    which is meant, so only its candidates in the files of `near` (the files the query names or
    its context gives) are kept, none when it has none there; they keep the weight of an
    ambiguous match."""
    if kind == "file":
        exact = [r for r in lookup.find_entities(names=[norm], kinds=["file"]) if r["path"] == norm]
        candidates = exact or lookup.find_entities(path_suffixes=[norm], kinds=["file"])
    else:
        short = norm.rsplit("::", 1)[-1]
        exact = lookup.find_entities(names=[norm], kinds=["symbol"])
        exact = [r for r in exact if r["qualname"] == norm or r["qualname"].endswith("::" + norm)]
        candidates = exact or [r for r in lookup.find_entities(names=[short.rsplit(".", 1)[-1]],
                                                               kinds=["symbol"])
                               if _symbol_matches(r, short)]
        path = norm.split("::", 1)[0] if "::" in norm else ""
        if not exact and ("/" in path or re.search(r"\.\w+$", path)):
            # `src/b.py::send_tls` says which file: another file's send_tls is not it
            candidates = [r for r in candidates if _in_files(r.get("path") or "", [path])]
    # An earlier mention's placeholder is not a second candidate once the code is indexed.
    candidates = [r for r in candidates if r.get("resolved")] or candidates
    if not candidates:
        return [Resolved(_unresolved(kind, norm), 1.0, surface, anchor=False)]
    weight = 1.0 if len(candidates) == 1 else AMBIGUOUS_WEIGHT
    anchor = len(candidates) == 1
    if ambiguity_limit is not None and len(candidates) > ambiguity_limit:
        candidates = [r for r in candidates if _in_files(r.get("path") or "", near)]
    return [Resolved(_as_entity(r), weight, surface, anchor=anchor and bool(r["hash"]))
            for r in candidates]


def _in_files(path: str, files: Sequence[str]) -> bool:
    """Whether `path` is one of the files (each a path or a path's suffix at a '/')."""
    return bool(path) and any(path == f or path.endswith("/" + f) for f in files)


def _symbol_matches(row: dict, short: str) -> bool:
    qual = re.sub(r"/\d+$", "", row["qualname"].rsplit("::", 1)[-1])  # Elixir's `Mod.fun/2`
    return qual == short or qual.endswith("." + short) or row["name"] == short


def resolve(mentions: Iterable[MentionLike], lookup: EntityLookup,
            explicit_files: Sequence[str] = (), explicit_symbols: Sequence[str] = (),
            code_indexed: bool = False, ambiguity_limit: int | None = None) -> list[Resolved]:
    """Every mention and explicit file/symbol → entity links, merged by entity id. Once the
    project's code is indexed (`code_indexed`), a bare CamelCase name the index does not know
    is not a symbol (product names look the same) and gets no link. `ambiguity_limit`: see
    resolve_code; the files named among the mentions and given explicitly are `near`."""
    merged: dict[str, Resolved] = {}
    pairs = [(m.kind, m.norm, m.text, m.bare) for m in mentions]
    pairs += [("file", f.removeprefix("./"), f, False) for f in explicit_files]
    pairs += [("symbol", s, s, False) for s in explicit_symbols]
    near = [norm for kind, norm, _, _ in pairs if kind == "file" and norm]
    for kind, norm, surface, bare in pairs:
        if not norm:
            continue
        if kind in CODE_KINDS:
            found = resolve_code(kind, norm, surface, lookup, ambiguity_limit=ambiguity_limit,
                                 near=near)
            if not found or bare and code_indexed and not found[0].entity.resolved:
                continue
        else:
            found = [Resolved(Entity.make(kind, norm), 1.0 if kind != "concept" else 0.3, surface,
                              anchor=False)]
        for link in found:
            previous = merged.get(link.entity.id)
            if previous is None or link.weight > previous.weight:
                merged[link.entity.id] = link
    return list(merged.values())
