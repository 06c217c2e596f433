"""How memories leave: the sweep archives expired and cold items (restorable) and purges
long-archived ones; `forget` deletes for real (graph, mirror, vectors, evidence, spool events,
retrieval-log lines, every journal record) and tombstones the ids so nothing brings them back
unless `unforget` lifts them. A forget writes its plan first: a crash part-way is finished on the
next open (`finish_interrupted`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from graphmem import lifecycle, retrievallog, vectors
from graphmem import models as m
from graphmem.errors import InvalidInput
from graphmem.paths import write_private
from graphmem.store import ops
from graphmem.store.base import ItemFilter
from graphmem.store.tombstones import Tombstones

if TYPE_CHECKING:
    from graphmem.service import Memory

PLAN = "forget.pending"


def sweep(memory: Memory, dry_run: bool = False, now: float | None = None) -> dict[str, Any]:
    """Archive expired and cold items (restorable), purge long-archived ones for real."""
    now = time.time() if now is None else now
    rows = memory.store.list_items(ItemFilter(project=memory.project, statuses=None), limit=10**9)
    for row in rows:  # uses not yet flushed count too: an item used seconds ago is not cold
        row["last_used_at"] = max(row["last_used_at"], memory.uses.last(row["id"]))
    plan = lifecycle.plan_sweep(rows, now)
    if not dry_run:
        sweeper = memory.scoped(memory.scope.but(actor="sweep"))
        for ids, reason in ((plan.archive_expired, "expired"),
                            (plan.archive_cold, "cold: unused and unverified")):
            if ids:
                sweeper.writer.write(ops.UpdateItems(ids, {
                    "status": "archived", "stale_reason": reason, "updated_at": now}))
        if plan.purge:
            forget_many(sweeper, plan.purge)
    return {"dry_run": dry_run, **plan.as_dict()}


def restore(memory: Memory, item_id: str) -> m.MemoryItem:
    """Bring an archived item back into retrieval, with a fresh lifetime."""
    item = memory.get_item(item_id)
    if item.status is not m.ItemStatus.archived:
        raise InvalidInput(f"{item_id} is {item.status.value}, not archived")
    now = time.time()
    return memory.update(item_id, status="active", stale_reason="", last_used_at=now,
                         expire_at=lifecycle.expire_at(item.kind.value, now, item.pinned,
                                                       memory.config.ttl_days))


def forget_many(memory: Memory, item_ids: Sequence[str]) -> dict[str, int]:
    """Delete this project's items among `item_ids` for real, with the observations only they
    came from (their spool events and evidence files too) and the brief and log lines that
    showed them; their ids are tombstoned."""
    ids = [r["id"] for r in memory.store.get_items(list(dict.fromkeys(item_ids)))
           if r["project"] == memory.project]
    if not ids:
        return {"items": 0, "journal_records_rewritten": 0, "observations": 0}
    memory.require_room()  # it rewrites the journal and the database
    leaving = set(ids)
    linked = {ln["entity"]["id"] for i in ids for ln in memory.store.item_links(i)
              if "entity" in ln}
    orphans = memory.store.entities_only_linked_from(linked, leaving)
    owners: dict[str, list[str]] = {}
    evidence_refs: list[str] = []
    for item_id in ids:
        observations = memory.store.item_observations(item_id)
        mine = [o for o in observations
                if not set(memory.store.observation_users(o["id"])) - leaving]
        evidence_refs += [o["evidence_ref"] for o in mine if o["evidence_ref"]]
        owners[item_id] = [o["id"] for o in mine]
    # What is left to do, written first: a crash part-way is finished on the next open.
    plan = {"owners": owners, "entities": orphans, "evidence": sorted(set(evidence_refs))}
    write_private(memory.dir / PLAN, json.dumps(plan))
    dropped = _carry_out(memory, plan)
    return {"items": len(ids), "journal_records_rewritten": dropped,
            "observations": sum(len(o) for o in owners.values())}


def _carry_out(memory: Memory, plan: dict[str, Any]) -> int:
    """Every step of a forget, each one safe to repeat; returns journal records dropped."""
    from graphmem.capture.spool import Spool
    from graphmem.capture.trim import evidence_path
    from graphmem.ingest import BRIEF_FILE, write_brief_file

    owners: dict[str, list[str]] = plan["owners"]
    ids = set(owners)
    own = {o for observations in owners.values() for o in observations}
    tombstones = Tombstones(memory.dir)
    for item_id, observations in owners.items():
        tombstones.add([item_id, *observations], owner=item_id)
    Spool(memory.dir / "spool").drop_events(own)
    retrievallog.drop_returning(memory.dir, ids)
    dropped = memory.writer.scrub(ids | own | set(plan["entities"]),
                                  lambda: vectors.embed_missing(memory))
    in_use = memory.store.evidence_in_use(plan["evidence"])  # the same output seen elsewhere
    for ref in set(plan["evidence"]) - in_use:
        evidence_path(memory.dir / "evidence", ref).unlink(missing_ok=True)
    if (memory.dir / BRIEF_FILE).exists():
        write_brief_file(memory)
    (memory.dir / PLAN).unlink(missing_ok=True)
    return dropped


def finish_interrupted(memory: Memory) -> None:
    """A forget that a crash interrupted is carried out to the end."""
    try:
        plan = json.loads((memory.dir / PLAN).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except ValueError:  # torn while it was written: nothing had been deleted yet
        (memory.dir / PLAN).unlink(missing_ok=True)
        return
    _carry_out(memory, plan)


def unforget(memory: Memory, item_ids: Sequence[str]) -> int:
    """Lift the tombstones of forgotten items (and of the observations forgotten with them)."""
    return Tombstones(memory.dir).lift(item_ids)


def forgotten(memory: Memory, ids: Iterable[str]) -> set[str]:
    """Those of `ids` that `forget` tombstoned."""
    return Tombstones(memory.dir).buried(ids)
