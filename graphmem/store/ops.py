"""The journal's vocabulary: every change to a store is one of these ops.

An op is checked when it is made (an unknown link kind or item field is an error at write time,
never a silent skip at replay), written to the journal as a record (`encode`), read back from one
(`decode`), and applied by each engine (the graph, the retrieval mirror), which declares one
applier per op class. `without` is the op with forgotten ids taken out (the journal's scrub),
`written_ids` what it names (audit trail, a lost write's report), `joined` the batching of
consecutive ops at replay.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from graphmem.errors import InvalidInput
from graphmem.store.schema import ITEM_FIELDS, LINK_TABLES

Row = dict[str, Any]
RECORD_META = ("seq", "ts", "by", "req", "crc")  # who/when/framing fields of a record, not the op


class Op:
    """One store change. Subclasses are frozen dataclasses named by `name` in the journal."""

    name: ClassVar[str]

    def record(self) -> Row:
        """The op as the journal stores it (JSON-ready)."""
        return {"op": self.name, **{f.name: getattr(self, f.name) for f in fields(self)}}  # type: ignore[arg-type]

    def written_ids(self) -> list[str]:
        return []

    def without(self, gone: AbstractSet[str]) -> Op | None:
        """This op with every row naming a gone id taken out; None when nothing is left."""
        return self

    def joined(self, other: Op) -> Op | None:
        """One op doing this and then `other`, or None when they cannot be batched."""
        return None


@dataclass(frozen=True, slots=True)
class _Rows(Op):
    """Rows keyed by `id`: a later row for the same id wins."""

    rows: list[Row]

    def written_ids(self) -> list[str]:
        return [r["id"] for r in self.rows]

    def without(self, gone: AbstractSet[str]) -> Op | None:
        rows = [r for r in self.rows if r["id"] not in gone]
        return type(self)(rows) if rows else None

    def joined(self, other: Op) -> Op | None:
        if type(other) is not type(self):
            return None
        merged = {r["id"]: r for r in [*self.rows, *other.rows]}  # type: ignore[attr-defined]
        return type(self)(list(merged.values()))


@dataclass(frozen=True, slots=True)
class _Ids(Op):
    ids: list[str]

    def written_ids(self) -> list[str]:
        return list(self.ids)

    def without(self, gone: AbstractSet[str]) -> Op | None:
        ids = [i for i in self.ids if i not in gone]
        return type(self)(ids) if ids else None


@dataclass(frozen=True, slots=True)
class PutItems(_Rows):
    name = "put_items"


@dataclass(frozen=True, slots=True)
class SetItemStatus(_Rows):
    """Rows of {id, status, stale_reason}: only those columns change."""

    name = "set_item_status"


@dataclass(frozen=True, slots=True)
class BumpItems(_Rows):
    """Use counts: rows of {id, n, at}."""

    name = "bump_items"

    def joined(self, other: Op) -> Op | None:
        if not isinstance(other, BumpItems):
            return None
        total: dict[str, Row] = {}
        for row in [*self.rows, *other.rows]:  # counts add up; the last use stays the last
            seen = total.get(row["id"])
            total[row["id"]] = row if seen is None else {
                "id": row["id"], "n": seen["n"] + row["n"], "at": max(seen["at"], row["at"])}
        return BumpItems(list(total.values()))


@dataclass(frozen=True, slots=True)
class PutVectors(_Rows):
    """Rows of {id, vec, model, text_hash}; the journal keeps `vec` as base64 float32."""

    name = "put_vectors"

    def record(self) -> Row:
        return {"op": self.name, "rows": [{**r, "vec": _encode_vector(r["vec"])} for r in self.rows]}


@dataclass(frozen=True, slots=True)
class PutEntities(_Rows):
    name = "put_entities"


@dataclass(frozen=True, slots=True)
class PutObservations(_Rows):
    name = "put_observations"


@dataclass(frozen=True, slots=True)
class UpdateItems(Op):
    """The same field values written to every listed item."""

    name = "update_items"
    ids: list[str]
    fields: Row

    def __post_init__(self) -> None:
        unknown = set(self.fields) - set(ITEM_FIELDS)
        if unknown or "id" in self.fields:
            raise InvalidInput(f"cannot update item fields {sorted(unknown | {'id'} & set(self.fields))}")

    def written_ids(self) -> list[str]:
        return list(self.ids)

    def without(self, gone: AbstractSet[str]) -> Op | None:
        ids = [i for i in self.ids if i not in gone]
        return UpdateItems(ids, self.fields) if ids else None


@dataclass(frozen=True, slots=True)
class DeleteItems(_Ids):
    name = "delete_items"


@dataclass(frozen=True, slots=True)
class DeleteEntities(_Ids):
    name = "delete_entities"


@dataclass(frozen=True, slots=True)
class DeleteObservations(_Ids):
    name = "delete_observations"


@dataclass(frozen=True, slots=True)
class PutLinks(Op):
    """Rows of {source, target, ...the link table's properties} in one link table."""

    name = "put_links"
    kind: str
    rows: list[Row]

    def __post_init__(self) -> None:
        _check_kind(self.kind)

    def written_ids(self) -> list[str]:
        return [i for r in self.rows for i in (r["source"], r["target"])]

    def without(self, gone: AbstractSet[str]) -> Op | None:
        rows = [r for r in self.rows if r["source"] not in gone and r["target"] not in gone]
        return PutLinks(self.kind, rows) if rows else None

    def joined(self, other: Op) -> Op | None:
        if not isinstance(other, PutLinks) or other.kind != self.kind:
            return None
        return PutLinks(self.kind, [*self.rows, *other.rows])


@dataclass(frozen=True, slots=True)
class DeleteLinks(Op):
    """Links of one table from each source (to the paired target; to any when targets is None)."""

    name = "delete_links"
    kind: str
    sources: list[str]
    targets: list[str] | None = None

    def __post_init__(self) -> None:
        _check_kind(self.kind)
        if self.targets is not None and len(self.targets) != len(self.sources):
            raise InvalidInput("delete_links: sources and targets differ in length")

    def written_ids(self) -> list[str]:
        return [*self.sources, *(self.targets or [])]

    def without(self, gone: AbstractSet[str]) -> Op | None:
        ends: list[str | None] = list(self.targets) if self.targets is not None else [None] * len(self.sources)
        pairs = [(s, t) for s, t in zip(self.sources, ends) if s not in gone and t not in gone]
        if not pairs:
            return None
        targets = None if self.targets is None else [t for _, t in pairs]
        return DeleteLinks(self.kind, [s for s, _ in pairs], targets)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Compact(Op):
    """Marker after a journal scrub: the graph is rebuilt from the journal for it."""

    name = "compact"


OPS: dict[str, type[Op]] = {cls.name: cls for cls in (
    PutItems, UpdateItems, SetItemStatus, BumpItems, DeleteItems, PutVectors, PutEntities,
    DeleteEntities, PutObservations, DeleteObservations, PutLinks, DeleteLinks, Compact)}


def decode(record: Row) -> Op:
    """The op a journal record holds (its seq/ts/by/req/crc left aside)."""
    name = record.get("op")
    cls = OPS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise InvalidInput(f"unknown journal operation {name!r}")
    if cls is BumpItems and "rows" not in record:  # journals before per-item counts
        return BumpItems([{"id": i, "n": 1, "at": record["at"]} for i in record["ids"]])
    if cls is PutVectors:
        return PutVectors([{**r, "vec": _decode_vector(r["vec"])} for r in record["rows"]])
    if cls is PutObservations:
        return PutObservations([lift_hook_fields(r) for r in record["rows"]])
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    try:
        return cls(**{k: v for k, v in record.items() if k in names})
    except TypeError as exc:
        raise InvalidInput(f"journal operation {name!r} is malformed: {exc}") from exc


def batched(ops: Iterable[tuple[int, Op]]) -> Iterable[tuple[int, Op]]:
    """Consecutive ops joined where they can be (one engine call each): (last seq, op)."""
    pending: tuple[int, Op] | None = None
    for seq, op in ops:
        if pending is not None:
            joined = pending[1].joined(op)
            if joined is not None:
                pending = (seq, joined)
                continue
            yield pending
        pending = (seq, op)
    if pending is not None:
        yield pending


# Before schema 2 an observation's cwd, transcript path and extra hook fields rode inside its
# tool_input under these keys (journals and graphs of that time still hold them so).
RESERVED_INPUT_KEYS = {"_cwd": "cwd", "_transcript_path": "transcript_path", "_extra": "extra"}


def lift_hook_fields(row: Row) -> Row:
    """An observation row with the hook fields an older row kept in tool_input as columns."""
    tool_input = row.get("tool_input")
    if not isinstance(tool_input, dict) or not RESERVED_INPUT_KEYS.keys() & tool_input.keys():
        return row
    lifted = {column: tool_input[key] for key, column in RESERVED_INPUT_KEYS.items()
              if key in tool_input}
    rest = {k: v for k, v in tool_input.items() if k not in RESERVED_INPUT_KEYS}
    return {**row, **lifted, "tool_input": rest}


def _check_kind(kind: str) -> None:
    if kind not in LINK_TABLES:
        raise InvalidInput(f"unknown link kind {kind!r}")


def _encode_vector(vector: Sequence[float] | str) -> str:
    if isinstance(vector, str):
        return vector
    import numpy as np  # only vector ops need it: the git hooks' updater never loads numpy

    return base64.b64encode(np.asarray(list(vector), dtype=np.float32).tobytes()).decode()


def _decode_vector(text: str | Sequence[float]) -> list[float]:
    if not isinstance(text, str):
        return list(text)
    import numpy as np

    return np.frombuffer(base64.b64decode(text), dtype=np.float32).tolist()
