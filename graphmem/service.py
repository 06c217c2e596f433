"""Memory: the one object every surface (CLI, MCP, hooks, notebooks) calls."""

from __future__ import annotations

import builtins
import copy
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from graphmem import codeindex, exporting, forgetting, lifecycle, retrievallog, space, vectors
from graphmem import models as m
from graphmem.capture.compress import EDIT_TOOLS, short
from graphmem.capture.redact import redact_with
from graphmem.capture.transcript import strip_attached
from graphmem.config import Config
from graphmem.errors import (
    InvalidInput,
    NoSpace,
    NotFound,
    StoreUnavailable,
)
from graphmem.extract import link
from graphmem.git import head_commit
from graphmem.paths import (
    DB_NAME,
    DIR_MODE,
    JOURNAL_NAME,
    ProjectRef,
    find_project,
    graphmem_home,
    private_dir,
    store_dir,
)
from graphmem.retrieve import live as live_mod
from graphmem.retrieve import pipeline, render
from graphmem.scope import CallScope, FromScope
from graphmem.store import ops
from graphmem.store.base import ItemFilter, Store
from graphmem.store.journal import Journal
from graphmem.store.writer import SignedWriter, Writer

SESSION_FILE_TOOLS = tuple(sorted(EDIT_TOOLS | {"Read", "read_file"}))
LIVE = ("active", "stale")
USE_FLUSH_ITEMS = 200
USE_FLUSH_SECONDS = 30.0
WORD_SHARE_WEIGHT = 0.6  # of the prompt's word weight an item holds, in its injection relevance
SUMMARY_MARGIN = 0.1  # over the injection floor, for a session summary
INJECT_ENTRY_CHARS = 480
INJECT_ENTRY_MIN_CHARS = 160
INJECT_MAX_ENTRIES = 3
# search's top hits the floor then sifts: the floor decides what bears on the prompt, not a rank
# among eight (a Credo item at 0.52 fell to ninth behind items the floor turns away anyway)
INJECT_CANDIDATES = 12
_shared_embedders: dict[str, Any] = {}
_shared_tokens: Any = None


def shared_embedder(config: Config) -> Any:
    """One embedder per model and process: the model is the expensive part."""
    embedder = _shared_embedders.get(config.embed_model)
    if embedder is None:
        from graphmem.embed import embedder_for

        embedder = _shared_embedders[config.embed_model] = embedder_for(config.embed_model,
                                                                        config.embed_threads)
    return embedder


def shared_tokens() -> Any:
    global _shared_tokens
    if _shared_tokens is None:
        from graphmem.embed import TokenCounter

        _shared_tokens = TokenCounter()
    return _shared_tokens


def _text_module() -> Any:
    from graphmem.extract import text

    return text


class UseCounts:
    """Uses of items not yet written (a search must not pay a journal fsync for them): flushed
    as one op every USE_FLUSH_ITEMS items or USE_FLUSH_SECONDS. Shared by every scope's view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, float]] = {}
        self._since = time.time()

    def add(self, item_ids: Sequence[str], now: float) -> bool:
        """Count a use of each; True when it is time to flush."""
        with self._lock:
            for item_id in item_ids:
                count, _ = self._counts.get(item_id, (0, now))
                self._counts[item_id] = (count + 1, now)
            return (len(self._counts) >= USE_FLUSH_ITEMS
                    or now - self._since >= USE_FLUSH_SECONDS)

    def take(self) -> builtins.list[dict[str, Any]]:
        """The counted uses as BumpItems rows, and none left."""
        with self._lock:
            rows = [{"id": i, "n": n, "at": at} for i, (n, at) in self._counts.items()]
            self._counts = {}
            self._since = time.time()
            return rows

    def last(self, item_id: str) -> float:
        """When an item was last used and not yet written (0.0: no such use)."""
        with self._lock:
            return self._counts.get(item_id, (0, 0.0))[1]


class Memory:
    """A project's memory: ingest, add, search, get, evidence, brief, forget, stale, stats.

    Every call reads its project, branch, actor and checkout from `scope`, an immutable
    `CallScope`; `scoped` gives a view of the same store with another scope (the owner makes one
    per client call). Apart from `scope`, a Memory's attributes are set once, in __init__, and
    shared by its views: none is ever rebound."""

    def __init__(self, config: Config | None = None, *, read_only: bool = False,
                 rebuild: bool = False, reembed: bool = False,
                 refresh_vectors: bool = True) -> None:
        """`rebuild`: from the journal first; `reembed`: embed every item again (the rebuild's
        vectors too); `refresh_vectors`: now, replace vectors another model made than the
        configured one (the owner does it in the background instead)."""
        self.config = config or Config.from_env()
        self.ref: ProjectRef = find_project(self.config.cwd)
        self.scope = CallScope(project=self.config.project or self.ref.name,
                               branch=self.ref.branch)
        home = self.config.home or graphmem_home()
        self.dir = Path(self.config.data_dir or store_dir(self.ref, home))
        if not read_only:
            try:
                private_dir(self.dir)
                os.chmod(self.dir, DIR_MODE)
            except OSError as exc:
                raise StoreUnavailable(f"cannot create data dir {self.dir}: {exc.strerror}") from exc
        self.journal = Journal(self.dir / JOURNAL_NAME)
        self.no_room = None if read_only else self._shortage()
        if self.no_room is not None:
            if rebuild or not (self.dir / DB_NAME).exists():
                raise NoSpace(f"{self.no_room}; nothing was changed")
            read_only = True  # reads still work; each write says why it cannot be stored
        self.read_only = read_only
        self._writer = Writer(self.dir, self.journal, guard=self.require_room,
                              vector_model=self.embedder.model_id, engine=self.config.engine,
                              database_url=self.config.database_url,
                              visibility=self.config.visibility)
        self.uses = UseCounts()
        if not read_only:
            self.journal.repair_tail()
        if rebuild:
            self.rebuild_result = self._writer.rebuild_file(lambda: vectors.fill(self, reembed))
        self._writer.open(read_only=read_only)
        if not read_only:
            self._writer.catch_up(lambda: vectors.embed_missing(self))
            forgetting.finish_interrupted(self)
            if refresh_vectors or (reembed and not rebuild):
                try:
                    self.reembed(everything=reembed and not rebuild)
                except BaseException:
                    self.store.close()  # the configured model cannot be loaded, say
                    raise

    def scoped(self, scope: CallScope) -> Memory:
        """A view of this memory for one call of `scope`: the same store, config and caches;
        nothing a call on one view reads is changed by a call on another."""
        view = copy.copy(self)
        view.scope = scope
        return view

    @property
    def store(self) -> Store:
        return self._writer.store

    @property
    def writer(self) -> SignedWriter:
        """The store's Writer, recording this scope's actor and request on what it writes."""
        return self._writer.signed(self.scope.actor, self.scope.request)

    project: FromScope[str] = FromScope()
    branch: FromScope[str] = FromScope()
    checkout: FromScope[str | None] = FromScope()  # the caller's work tree, when an owner serves it
    actor: FromScope[str] = FromScope()  # who is acting, recorded on every journal record (audit)

    @property
    def request(self) -> str | None:
        """The owner's client request being served, if any (recorded with its writes)."""
        return self.scope.request

    @staticmethod
    def data_dir_for(config: Config) -> Path:
        """The store directory a config points at, without opening anything."""
        if config.data_dir:
            return Path(config.data_dir)
        return store_dir(find_project(config.cwd), config.home or graphmem_home())

    def close(self) -> None:
        if not self.read_only:
            self.flush_use()
        self.store.close()

    def _count_use(self, item_ids: Sequence[str], now: float) -> None:
        """Use counts are batched: a search must not pay a journal fsync for them."""
        if not self.read_only and self.uses.add(item_ids, now):
            self.flush_use()

    def flush_use(self) -> None:
        rows = self.uses.take()
        if rows:
            present = {r["id"] for r in self.store.get_items([r["id"] for r in rows])}
            rows = [r for r in rows if r["id"] in present]
            if rows:
                try:
                    self.writer.write(ops.BumpItems(rows))
                except NoSpace:
                    pass  # use counts are a ranking hint: a full disk drops them, not the read

    def warm_up(self, extractor: bool = True) -> None:
        """Load the embedding model (all a search needs) and, unless told not to, the prose
        extractor that ingest needs, so later calls are fast."""
        if self.config.embed:
            self.embedder.load()
        if extractor:
            _text_module().extract("warm up")

    def prepare_search(self) -> None:
        """Build the store's in-memory search mirror now rather than in the first search."""
        self.store.prepare()

    @property
    def model_loaded(self) -> bool:
        return bool(self.config.embed and self.embedder.loaded)

    def ping(self) -> dict[str, Any]:
        return {"project": self.project, "data_dir": str(self.dir)}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- writing --------------------------------------------------------------------------
    def request_status(self, request: str) -> dict[str, Any]:
        """Whether the journal holds writes of a client request (asked when its owner died
        before answering), and the ids they wrote."""
        return self._writer.requested(request)

    def require_room(self) -> None:
        """Raise unless a write can go ahead (writable store, room on the disk)."""
        if self.no_room is not None:
            raise NoSpace(f"{self.no_room}; this write was not stored")
        if self.read_only:
            raise StoreUnavailable("this store is open read-only")
        short = self._shortage()
        if short is not None:
            raise NoSpace(f"{short}; this write was not stored")

    def _shortage(self) -> str | None:
        db = self.dir / DB_NAME
        return space.shortage(self.dir, (db, db.with_name(DB_NAME + ".wal"), self.journal.path),
                              self.config.min_free_mb * 1_000_000)

    @property
    def embedder(self) -> Any:
        return shared_embedder(self.config)

    @property
    def tokens(self) -> Any:
        return shared_tokens()

    def _check_text(self, title: str, body: str) -> None:
        if not (title or "").strip():
            raise InvalidInput("empty text: a memory needs at least a title")
        size = len(title) + len(body)
        if size > self.config.max_item_chars:
            raise InvalidInput(f"text too long: {size:,} characters (limit "
                               f"{self.config.max_item_chars:,}); store a summary and keep the "
                               "rest as evidence")
        for value in (title, body):
            if "\x00" in value:
                raise InvalidInput("text contains NUL bytes; is it binary?")

    def _redact(self, value: Any) -> Any:
        """Secrets masked (strings, and every string inside lists and dicts), with the user's
        patterns: every write passes here, whichever surface it came from."""
        return redact_with(self.config, value)

    def _redacted(self, item: m.MemoryItem) -> m.MemoryItem:
        fields = {name: self._redact(getattr(item, name))
                  for name in ("title", "body", "tags", "stale_reason")}
        changed = {k: v for k, v in fields.items() if v != getattr(item, k)}
        return item.model_copy(update=changed) if changed else item

    def add(self, title: str, body: str = "", *, kind: str = "note", tags: Sequence[str] = (),
            files: Sequence[str] = (), symbols: Sequence[str] = (), confidence: float | None = None,
            importance: float = 0.5, source: str = "agent", pinned: bool = False,
            session_id: str = "", observations: Sequence[str] = (), dedupe: bool = True,
            created_at: float | None = None) -> m.MemoryItem:
        """Record one fact; merges into an existing item with the same meaning."""
        title, body = title.strip(), body.strip()
        self._check_text(title, body)
        if len(title) > 200 and not body:
            title, body = _split_title(title)
        try:
            item = m.MemoryItem(project=self.project, branch=self.branch, kind=m.ItemKind(kind),
                                title=title, body=body, tags=list(tags), importance=importance,
                                confidence=confidence if confidence is not None
                                else DEFAULT_CONFIDENCE.get(source, 0.6),
                                source=m.Source(source), pinned=pinned, session_id=session_id,
                                **({"created_at": created_at, "updated_at": created_at}
                                   if created_at else {}))
        except ValueError as exc:
            raise InvalidInput(f"invalid memory: {m.first_error(exc)}") from exc
        saved = self.add_items([item], files={item.id: list(files)},
                               symbols={item.id: list(symbols)}, dedupe=dedupe,
                               observations={item.id: list(observations)})
        return saved[0]

    def add_items(self, items: Sequence[m.MemoryItem], *, files: dict[str, list[str]] | None = None,
                  symbols: dict[str, list[str]] | None = None, dedupe: bool = True,
                  observations: dict[str, list[str]] | None = None,
                  embed: bool | None = None, supersede: bool | None = None,
                  anchors: bool = True, concepts: bool = True) -> list[m.MemoryItem]:
        """Batch write: extract, link, embed, dedupe, supersede, one journal op per table.

        `anchors=False` leaves ANCHORED_TO to the caller (import-git anchors at old commits);
        `concepts=False` links no concepts (an import restores the exported ones: which concepts
        an item gets depends on the items it was ingested with)."""
        if not items:
            return []
        items = [self._redacted(item) for item in items]
        head = head_commit(Path(self.checkout or self.ref.root)) if anchors and self.ref.is_git else ""
        files, symbols, observations = files or {}, symbols or {}, observations or {}
        embed = self.config.embed if embed is None else embed
        existing = {r["id"]: r for r in self.store.get_items([i.id for i in items])}
        texts = [item.text for item in items]
        mentions = _text_module().extract_many(texts, bare=True)
        concept_ids = sorted({m.entity_id("concept", x.norm) for ms in mentions for x in ms
                              if x.kind == "concept"})
        known = {e["id"] for e in self.store.get_entities(concept_ids)} if concept_ids else set()
        mentions = link.select_concepts(mentions, self.store, known, cap=link.CONCEPTS_PER_ITEM
                                        if concepts else 0)
        encoded = vectors.encode_new(self, items, existing) if embed else None
        saved: list[m.MemoryItem] = []
        new_items: list[m.MemoryItem] = []
        new_vectors: list[dict[str, Any]] = []
        entity_rows: dict[str, dict[str, Any]] = {}
        mention_rows: list[dict[str, Any]] = []
        anchor_rows: list[dict[str, Any]] = []
        fresh_links: list[tuple[m.MemoryItem, Any, set[str]]] = []
        code_indexed = (self.dir / codeindex.CACHE_NAME).exists()
        for index, item in enumerate(items):
            resolved = link.resolve(mentions[index], self.store, files.get(item.id, ()),
                                    symbols.get(item.id, ()), code_indexed)
            previous = existing.get(item.id)
            if previous is not None:
                # Re-derived item with a stable id: replace its text, keep its history.
                item = item.model_copy(update={"hit_count": previous["hit_count"],
                                               "created_at": previous["created_at"],
                                               "last_used_at": previous["last_used_at"],
                                               "status": m.ItemStatus(previous["status"]),
                                               "stale_reason": previous.get("stale_reason") or ""})
            if previous is None and not item.expire_at and not item.pinned:
                item = item.model_copy(update={"expire_at": lifecycle.expire_at(
                    item.kind.value, item.created_at, item.pinned, self.config.ttl_days)})
            vector = encoded.get(index) if encoded is not None else None
            target = (self._duplicate_of(item, vector, resolved)
                      if dedupe and previous is None else None)
            if target is not None:
                item = self._merge(target, item, vector)
            else:
                new_items.append(item)
                if previous is None and vector is not None:
                    fresh_links.append((item, vector, {r.entity.id for r in resolved}))
                if vector is not None:
                    new_vectors.append(vectors.row(self, item, vector))
            for res in resolved:
                entity_rows.setdefault(res.entity.id, res.entity.model_dump(mode="json"))
                mention_rows.append({"source": item.id, "target": res.entity.id,
                                     "weight": res.weight, "surface": res.surface[:200]})
                if res.anchor and anchors:
                    anchor_rows.append({"source": item.id, "target": res.entity.id,
                                        "hash": res.entity.hash, "commit": head, "at": time.time()})
            saved.append(item)
        if new_items:
            self.writer.write(ops.PutItems([self._item_row(i) for i in new_items]))
        if new_vectors:
            self.writer.write(ops.PutVectors(new_vectors))
        known = {e["id"] for e in self.store.get_entities(list(entity_rows))}
        fresh = [row for eid, row in entity_rows.items() if eid not in known]
        if fresh:
            self.writer.write(ops.PutEntities(fresh))
        if mention_rows:
            self.writer.write(ops.PutLinks("MENTIONS", mention_rows))
        if anchor_rows:
            self.writer.write(ops.PutLinks("ANCHORED_TO", anchor_rows))
        derived = [{"source": i.id, "target": o} for i in saved for o in observations.get(i.id, ())]
        if derived:
            self.writer.write(ops.PutLinks("DERIVED_FROM", derived))
        if dedupe if supersede is None else supersede:
            batch = {i.id for i in items}
            for item, vector, entity_ids in fresh_links:
                self._supersede_older(item, vector, entity_ids, batch)
        return saved

    def _supersede_older(self, item: m.MemoryItem, vector: Any, entity_ids: set[str],
                         batch: set[str]) -> list[str]:
        """Older live items this one replaces become `superseded`, with a SUPERSEDES edge."""
        rule = lifecycle.SupersessionRule()
        flt = ItemFilter(project=item.project, statuses=("active", "stale"))
        near = [(i, sim) for i, sim in self.store.vector_search(vector.tolist(), 20, flt)
                if i not in batch and sim >= min(rule.cue_similarity, rule.same_error_similarity)]
        replaced = []
        for row in self.store.get_items([i for i, _ in near]):
            if row["created_at"] > item.created_at or row["kind"] in ("summary", "history"):
                continue
            old_entities = {ln["entity"]["id"] for ln in self.store.item_links(row["id"])
                            if "entity" in ln}
            similarity = dict(near)[row["id"]]
            verdict = lifecycle.classify_pair(item.text, f"{row['title']}\n{row['body']}",
                                              similarity, entity_ids & old_entities,
                                              row["kind"] == item.kind.value, rule)
            if verdict.relation != "supersedes":
                continue
            self.writer.write(ops.UpdateItems([row["id"]], {
                "status": "superseded", "updated_at": time.time(),
                "stale_reason": f"superseded by {item.id}: {verdict.reason}"}))
            self.writer.write(ops.PutLinks("SUPERSEDES", [
                {"source": item.id, "target": row["id"], "at": time.time(),
                 "surface": verdict.reason[:200]}]))
            replaced.append(row["id"])
        return replaced

    def _item_row(self, item: m.MemoryItem) -> dict[str, Any]:
        row = item.model_dump(mode="json")
        terms = _text_module().code_terms(item.text)
        row["search_text"] = " ".join([item.text, *terms, *item.tags])
        return row

    def _duplicate_of(self, item: m.MemoryItem, vector: Any,
                      resolved: list[link.Resolved]) -> m.MemoryItem | None:
        """An existing live item of the same kind and meaning, if any."""
        flt = ItemFilter(project=item.project, kinds=(item.kind.value,), statuses=("active",))
        if vector is not None:
            candidates = self.store.vector_search(vector.tolist(), 3, flt)
            close = [i for i, sim in candidates if sim >= self.config.dedupe_similarity]
        else:
            close = [i for i, _ in self.store.keyword_search(item.title, 3, flt)]
        for row in self.store.get_items(close):
            if vector is None and _normal(row["title"]) != _normal(item.title):
                continue
            if not lifecycle.repeats(item.text, f"{row['title']}\n{row['body']}"):
                continue  # "use npm, not pnpm" or "Python 3.12" is no repeat of the old text
            return m.MemoryItem.from_row(row)
        return None

    def _merge(self, old: m.MemoryItem, new: m.MemoryItem, vector: Any) -> m.MemoryItem:
        """Fold a repeat into the existing item: keep the fuller text, count it, trust it more.
        `vector`: the new item's, if embedded (the merged item takes it with the new text)."""
        fuller = new if len(new.text) > len(old.text) else old
        fields = {"hit_count": old.hit_count + 1, "updated_at": time.time(),
                  "confidence": round(min(1.0, max(old.confidence, new.confidence) + 0.05), 4),
                  "tags": sorted(set(old.tags) | set(new.tags))}
        if fuller is new:
            fields.update({"title": new.title, "body": new.body})
        merged = old.model_copy(update=fields)
        row = self._item_row(merged)
        self.writer.write(ops.UpdateItems([old.id], {k: row[k] for k in (*fields, "search_text")}))
        if fuller is new:
            vectors.put_one(self, merged, vector)
        return merged

    def put_observations(self, observations: Sequence[m.Observation]) -> None:
        if observations:
            rows = [o.model_dump(mode="json") for o in observations]
            for row in rows:
                row.update({k: self._redact(row[k]) for k in ("text", "command", "tool_input",
                                                              "cwd", "transcript_path", "extra")})
            self.writer.write(ops.PutObservations(rows))

    def update(self, item_id: str, **fields: Any) -> m.MemoryItem:
        """Change stored fields of one item (status, confidence, pinned, ...)."""
        item = self.get_item(item_id)
        unknown = set(fields) - set(m.MemoryItem.model_fields) | ({"id", "project"} & set(fields))
        if unknown:
            raise InvalidInput(f"cannot update {sorted(unknown)}")
        fields = {k: self._redact(v) if k in ("title", "body", "tags", "stale_reason") else v
                  for k, v in fields.items()}
        try:
            updated = m.MemoryItem.model_validate({**item.model_dump(), **fields,
                                                   "updated_at": time.time()})
        except ValueError as exc:
            raise InvalidInput(f"invalid update: {m.first_error(exc)}") from exc
        row = self._item_row(updated)
        self.writer.write(ops.UpdateItems([item_id], {k: row[k] for k in (*fields, "updated_at")}))
        if updated.text_hash != item.text_hash:
            vectors.put_one(self, updated)
        return updated

    # ----- reading --------------------------------------------------------------------------
    def get_item(self, item_id: str, all_projects: bool = False) -> m.MemoryItem:
        """One item of this project (another project's id is as unknown as a missing one)."""
        rows = self.store.get_items([item_id])
        if not rows or (rows[0]["project"] != self.project and not all_projects):
            raise NotFound(f"no memory with id {item_id!r}")
        return m.MemoryItem.from_row(rows[0])

    def get(self, item_id: str) -> m.ItemDetail:
        """Layer 3: the whole item, its links and status."""
        item = self.get_item(item_id)
        links = self.store.item_links(item_id)
        evidence = self.store.item_observations(item_id)
        tokens = self.tokens.count(item.text)
        self._log("get", item_id, {}, 1, [item_id], tokens)
        return m.ItemDetail(item=item, links=links, evidence_count=len(evidence), tokens=tokens)

    def evidence(self, item_id: str, max_chars: int = 2000) -> list[m.EvidenceExcerpt]:
        """Layer 3: the redacted raw observations an item came from."""
        self.get_item(item_id)
        out = []
        for obs in self.store.item_observations(item_id):
            text = obs["text"]
            if len(text) > max_chars:
                text = text[: max_chars // 2] + "\n[…]\n" + text[-max_chars // 2:]
            out.append(m.EvidenceExcerpt(observation_id=obs["id"], ts=obs["ts"], event=obs["event"],
                                         tool=obs["tool"], command=obs["command"], text=text,
                                         evidence_ref=obs["evidence_ref"]))
        return out

    def list(self, *, kind: str | None = None, status: str | None = None, limit: int = 50,
             all_projects: bool = False) -> list[m.MemoryItem]:
        flt = ItemFilter(project=None if all_projects else self.project,
                         kinds=(kind,) if kind else None,
                         statuses=(status,) if status else LIVE)
        return [m.MemoryItem.from_row(r) for r in self.store.list_items(flt, limit)]

    def _filter(self, *, all_projects: bool = False, kinds: Sequence[str] | None = None,
                as_of: float | None = None, project: str | None = None) -> ItemFilter:
        return ItemFilter(project=None if all_projects else (project or self.project),
                          kinds=tuple(kinds) if kinds else None, statuses=LIVE,
                          created_before=as_of, now=time.time())

    def search(self, query: str, *, files: Sequence[str] = (), symbols: Sequence[str] = (),
               k: int = 10, kinds: Sequence[str] | None = None, budget: int | None = None,
               explain: bool = False, as_of: float | None = None, all_projects: bool = False,
               project: str | None = None, channels_on: Sequence[str] | None = None,
               log: bool = True, live: bool = False, session_id: str = "") -> m.SearchResult:
        """Layer 2: entity + graph + vector + keyword, fused, ranked, inside a token budget.

        `live`: unless files or symbols are given, the context is what the agent's session
        (`session_id`, else the latest of this checkout) read and edited and the work tree's
        uncommitted changes (`live_context`)."""
        context = [live_mod.ContextEntry(kind, name, 1.0, "given")
                   for kind, names in (("file", files), ("symbol", symbols)) for name in names]
        if live and not context:
            context = self.live_context(session_id)
        return self._search(query, context, k=k, kinds=kinds, budget=budget, explain=explain,
                            as_of=as_of, all_projects=all_projects, project=project,
                            channels_on=channels_on, log=log)

    def _search(self, query: str, context: Sequence[live_mod.ContextEntry], *, k: int,
                kinds: Sequence[str] | None, budget: int | None, explain: bool,
                as_of: float | None = None, all_projects: bool = False,
                project: str | None = None, channels_on: Sequence[str] | None = None,
                log: bool = True) -> m.SearchResult:
        query = (query or "").strip()
        if len(query) > 4000:
            query = query[:4000]
        budget = self.config.search_budget if budget is None else max(0, int(budget))
        k = max(1, min(int(k), 200))
        files = [e.name for e in context if e.kind == "file"]
        symbols = [e.name for e in context if e.kind == "symbol"]
        if not query and not files and not symbols:
            return m.SearchResult(query="", hits=[], tokens=0, budget=budget, candidates=0)
        flt = self._filter(all_projects=all_projects, kinds=kinds, as_of=as_of, project=project)
        ranked, explain_rows, why, first = self._rank(query, files, symbols, k, flt, channels_on,
                                                      {e.name: e.weight for e in context})
        now = time.time()
        scored = pipeline.prioritise(self.store, ranked[: k * 3], self.config.weights,
                                     self.branch, as_of, first)
        shown = [i for i, _ in scored] if explain else [i for i, _ in scored[:k]]
        rows = pipeline.hit_rows(self.store, shown, self.tokens)
        hits = [m.Hit(item=m.MemoryItem.from_row(rows[i]), score=round(s, 6),
                      channels=explain_rows.get(i, {}), why=why.get(i, []),
                      stale=rows[i]["status"] == "stale") for i, s in scored[:k] if i in rows]
        hits, tokens, truncated = render.fit_hits(hits, budget, self.tokens)
        result = m.SearchResult(query=query, hits=hits, tokens=tokens, budget=budget,
                                candidates=len(ranked), truncated=truncated,
                                explain=render.explain_table(
                                    [(i, sc) for i, sc in scored if i in rows], explain_rows, rows)
                                if explain else None,
                                context=[e.as_dict() for e in context] if explain else None)
        if log:
            self._log("search", query, {"files": list(files), "symbols": list(symbols)},
                      len(ranked), [h.item.id for h in hits], tokens)
            self._count_use([h.item.id for h in hits], now)
        return result

    def rank(self, query: str, *, files: Sequence[str] = (), symbols: Sequence[str] = (),
             k: int = 10, as_of: float | None = None, project: str | None = None,
             channels_on: Sequence[str] | None = None,
             context_weights: dict[str, float] | None = None) -> builtins.list[str]:
        """Ranked ids only (evaluation): no budget, no logging, no use counting.
        `context_weights`: a share per file or symbol given (as live context weighs them)."""
        flt = self._filter(as_of=as_of, project=project)
        ranked, _, _, first = self._rank(query, files, symbols, k, flt, channels_on,
                                         context_weights)
        return [i for i, _ in pipeline.prioritise(self.store, ranked[: k * 3], self.config.weights,
                                                  self.branch, as_of, first)[:k]]

    def _rank(self, query: str, files: Sequence[str], symbols: Sequence[str], k: int,
              flt: ItemFilter, channels_on: Sequence[str] | None,
              context_weights: dict[str, float] | None = None
              ) -> pipeline.Candidates:
        embed = (lambda texts: self.embedder.encode(texts)) if self.config.embed else None
        return pipeline.candidates(self.store, self.config.weights, embed, query, files, symbols,
                                   k, flt, channels_on, context_weights)

    def live_context(self, session_id: str = "", wait: bool = True
                     ) -> builtins.list[live_mod.ContextEntry]:
        """What the agent is working on: the files and functions its session (`session_id`,
        else the latest session of this checkout) read and edited, and the work tree's
        uncommitted changes, weighted by recency (see retrieve/live.py). `wait=False`: the
        uncommitted changes as last read while git reads them again."""
        root = Path(self.checkout or self.ref.root)
        return live_mod.for_checkout(root, self.dir / "spool").entries(
            session_id, wait, ingested=lambda: self._session_files(session_id, root))

    def _session_files(self, session_id: str, root: Path) -> builtins.list[str]:
        """The files this session's ingested events read or edited, latest first, relative
        to its checkout."""
        prefix = f"{root}/"
        found = self.store.session_files(session_id, SESSION_FILE_TOOLS)
        return builtins.list(dict.fromkeys(p.removeprefix(prefix)
                                           for p in found))[:live_mod.MAX_FILES]

    def prompt_context(self, prompt: str, *, files: Sequence[str] = (), session_id: str = "",
                       budget: int | None = None) -> str:
        """What the prompt hook adds: items that bear on this prompt and on the files the session
        has been reading and editing, inside a small budget; "" when none clears the relevance
        floor. Relevance is the cosine between prompt and item plus a little for the prompt's
        rarer words the item holds: by meaning alone, coding prompts of another project reached
        the floor as often as this project's own did."""
        # what a harness wraps around the typed words (Conductor's <system_instruction>) is not the ask
        prompt = " ".join(strip_attached(prompt or "", " ").split())[:4000]
        budget = self.config.inject_budget if budget is None else max(0, int(budget))
        if len(re.findall(r"[^\W\d_]{3,}", prompt)) < 2 or budget < 30 or not self.config.embed:
            return ""
        flt = self._filter()
        vector = self.embedder.encode([prompt])[0].tolist()
        near = dict(self.store.vector_search(vector, 60, flt))
        live = ([live_mod.ContextEntry("file", f, 1.0, "given") for f in files] or
                (self.live_context(session_id, wait=False) if session_id else []))
        result = self._search(prompt, live, k=INJECT_CANDIDATES, kinds=None, budget=budget * 8,
                              explain=False, log=False)
        context = {e.name for e in live}
        in_functions = any(e.kind == "symbol" for e in live)
        floor = self.config.inject_floor
        weights = self.store.term_weights(prompt)
        header = "graphmem: memories that bear on this prompt (memory_get ID shows the evidence)"
        used = self.tokens.count(header)
        entries: builtins.list[str] = []
        shown: builtins.list[str] = []
        # A hit shows the body's start: pick from all of it (read at once, not item by item).
        whole = {r["id"]: m.MemoryItem.from_row(r) for r in self.store.get_items(
            [h.item.id for h in result.hits if h.item.body.endswith("…") and h.item.id in near])}
        symbols = self.store.mentioned_symbols(
            [h.item.id for h in result.hits if h.item.id in near]) if in_functions else {}
        cleared: builtins.list[tuple[float, m.MemoryItem]] = []
        for hit in result.hits:
            item = whole.get(hit.item.id, hit.item)
            # An item about a file the session is working on needs less of the prompt's words.
            on_files = any(w.startswith("mentions ") and w[9:] in context for w in hit.why)
            if item.id not in near:
                continue
            # Known to be in some functions, the agent is not pushed what was said of others
            # near them (of the same file, say): search still finds it.
            if in_functions and ("graph" in hit.channels and "entity" not in hit.channels
                                 or _about_other_functions(symbols.get(item.id, []), live)):
                continue
            relevance = near[item.id] + WORD_SHARE_WEIGHT * render.word_share(
                f"{item.title}\n{item.body}", weights)
            # A session summary covers many things: it has to bear on the prompt more clearly.
            needed = floor + SUMMARY_MARGIN if item.kind == m.ItemKind.summary else floor - 0.1 * on_files
            if relevance >= needed:
                cleared.append((relevance - needed, item))
        # The few slots go to the items that clear their floor by most, not in search's order:
        # search ranks for a top five (recency, graph neighbours); three slots need the closest.
        chosen: builtins.list[m.MemoryItem] = []
        least: builtins.list[int] = []
        for _, item in sorted(cleared, key=lambda c: -c[0]):
            shortest = self.tokens.count(render.inject_entry(item, INJECT_ENTRY_MIN_CHARS, weights))
            if used + sum(least) + shortest <= budget:  # one that cannot fit takes no room from the rest
                chosen.append(item)
                least.append(shortest)
            if len(chosen) >= INJECT_MAX_ENTRIES:
                break
        # Each entry leaves the items after it room for their shortest entries.
        for n, item in enumerate(chosen):
            entry, cost = self._inject_entry(item, weights, budget - used - sum(least[n + 1:]))
            if not entry:
                continue
            entries.append(entry)
            shown.append(item.id)
            used += cost
        if not entries:
            return ""
        # Logged, not counted as a use: pushing an item into the context proves nothing about it.
        self._log("inject", prompt, {"files": sorted(context)}, len(result.hits), shown, used)
        return "\n".join([header, *entries])

    def _inject_entry(self, item: m.MemoryItem, weights: Mapping[str, float], room: int
                      ) -> tuple[str, int]:
        """The item's entry and its tokens; shortened to the room left (an entry the size of the
        first item's crowded out a second that held the answer), "" when even its head and a
        line do not fit."""
        for max_chars in range(INJECT_ENTRY_CHARS, INJECT_ENTRY_MIN_CHARS - 1, -40):
            entry = render.inject_entry(item, max_chars=max_chars, weights=weights)
            cost = self.tokens.count(entry)
            if cost <= room:
                return entry, cost
        return "", 0

    def brief(self, budget: int | None = None) -> m.Brief:
        """Layer 1: one line per item for the session start, inside the budget."""
        budget = self.config.brief_budget if budget is None else max(0, int(budget))
        if not self.read_only:
            self.flush_use()
        flt = ItemFilter(project=self.project, statuses=("active",), now=time.time())
        candidates = self.store.list_items(flt, limit=300, order="updated_at")
        now = time.time()
        # Items whose confidence decayed below the floor leave the brief; search still finds them.
        items = [m.MemoryItem.from_row(r) for r in candidates
                 if lifecycle.effective_confidence(r, now) >= lifecycle.BRIEF_CONFIDENCE_FLOOR]
        result = render.brief(self.project, items, budget, self.config.brief_line_tokens,
                              self.tokens, branch=self.branch)
        self._log("brief", "", {}, len(items), result.item_ids, result.tokens)
        return result

    def related(self, entity: str, limit: int = 20) -> dict[str, Any]:
        """What we know about an entity (file, function, error code...) and its neighbours."""
        mentions = _text_module().extract(entity, bare=True)
        kinds = {mn.kind for mn in mentions}
        resolved = link.resolve(mentions or [], self.store,
                                [entity] if "file" in kinds or "/" in entity else [],
                                [entity] if not mentions else [])
        entity_ids = [r.entity.id for r in resolved if not r.entity.id.split(":", 1)[1].startswith("?")
                      or self.store.get_entities([r.entity.id])]
        if not entity_ids:
            raise NotFound(f"nothing is known about {entity!r}")
        flt = self._filter()
        neighbours = self.store.entity_neighbours(entity_ids, hops=1)
        item_links = self.store.items_mentioning(list(neighbours), flt)
        if not item_links:
            raise NotFound(f"no memory of this project is about {entity!r}")
        ours = {e for _, e, _ in item_links}  # entities this project's items speak of

        def visible(row: dict[str, Any]) -> bool:
            return row["id"] in ours or (row["kind"] in ("file", "symbol") and row["resolved"])
        direct = {i for i, e, _ in item_links if e in entity_ids}
        item_ids = list(dict.fromkeys(i for i, _, _ in item_links))
        items = [m.MemoryItem.from_row(r) for r in self.store.get_items(item_ids)][:limit]
        self._log("related", entity, {}, len(item_ids), [i.id for i in items], 0)
        return {"entities": [e for e in self.store.get_entities(entity_ids) if visible(e)],
                "neighbours": [e for e in self.store.get_entities(
                    [e for e, d in neighbours.items() if d > 0]) if visible(e)][:limit],
                "co_mentioned": [row for eid in entity_ids for row in
                                 self.store.entity_items_neighbours(eid, limit, self.project)][:limit],
                "items": [{"item": i.model_dump(mode="json"), "direct": i.id in direct}
                          for i in items]}

    def history(self, item_id: str) -> builtins.list[dict[str, Any]]:
        """Who/what created and changed an item, and when (from the journal)."""
        self.get_item(item_id)
        out = []
        for record in self.writer.touching(item_id):
            op = record["op"]
            change: dict[str, Any] = {"ts": record["ts"], "by": record.get("by", ""), "op": op}
            if op == "update_items":
                change["fields"] = {k: v for k, v in record["fields"].items() if k != "search_text"}
            elif op == "put_links":
                change["links"] = [f"{record['kind']} → {r['target']}" for r in record["rows"]
                                   if r["source"] == item_id][:10]
            elif op == "set_item_status":
                row = next(r for r in record["rows"] if r["id"] == item_id)
                change["fields"] = {k: v for k, v in row.items() if k != "id"}
            elif op == "put_items":
                row = next(r for r in record["rows"] if r["id"] == item_id)
                change["fields"] = {k: row[k] for k in ("title", "kind", "status", "confidence",
                                                        "source")}
            out.append(change)
        return out

    def to_networkx(self, scope: Any = None, kinds: Sequence[str] | None = None,
                    entity: str | None = None, hops: int = 1, **options: Any) -> Any:
        """The store (or an entity's neighbourhood) as a typed networkx MultiDiGraph."""
        from graphmem import graph

        return graph.to_networkx(self, scope, kinds, entity, hops, **options)

    def to_networkx_data(self, scope: str | None = None, kinds: Sequence[str] | None = None,
                         entity: str | None = None, hops: int = 1,
                         **options: Any) -> dict[str, Any]:
        """The same graph as node-link JSON (what the owner sends; `graph.from_data` rebuilds it)."""
        from graphmem import graph

        return graph.to_data(self.to_networkx(scope, kinds, entity, hops, **options))

    def entities(self, item_id: str) -> builtins.list[dict[str, Any]]:
        self.get_item(item_id)
        return self.store.item_links(item_id)

    # ----- capture ----------------------------------------------------------------------------
    def ingest(self) -> dict[str, Any]:
        """Move pending hook events from the spool into the graph; compress ended sessions."""
        from graphmem.ingest import ingest_spool

        return ingest_spool(self).as_dict()

    def ingest_pending(self) -> None:
        """The owner's background loop: ingest only when the spool has something."""
        from graphmem.capture.spool import Spool

        if Spool(self.dir / "spool").pending_bytes() > 0:
            self.ingest()

    # ----- code index -----------------------------------------------------------------------
    def index_code(self, root: str | Path | None = None,
                   progress: Any = None) -> dict[str, Any]:
        """Index the project's code (incremental) and link waiting mentions to what it found."""
        return codeindex.index_code(self, root, progress)

    # ----- staleness ------------------------------------------------------------------------
    def update_stale(self, *, commit: str | None = None, rev_range: str | None = None,
                     worktree: bool = False, repo: str | None = None) -> Any:
        """Mark items whose anchored code changed (in a commit, a range or the work tree) stale.

        `repo` is the checkout the revisions are read in (a linked worktree has its own HEAD)."""
        from graphmem.staleness import update as staleness

        return staleness.update_stale(self, commit=commit, rev_range=rev_range, worktree=worktree,
                                      repo=repo)

    def stale_items(self, limit: int = 1000) -> builtins.list[dict[str, Any]]:
        from graphmem.staleness import update as staleness

        return staleness.stale_items(self, limit)

    def verify(self, item_id: str) -> dict[str, Any]:
        """Re-anchor an item to the current code and clear its stale mark."""
        from graphmem.staleness import update as staleness

        self.get_item(item_id)
        return staleness.verify(self, item_id)

    def import_git(self, repo: str | None = None, since: str | None = None,
                   max_commits: int | None = None, progress: Any = None,
                   embed: bool | None = None) -> Any:
        """Bootstrap memory from commit history: one `history` item per meaningful commit."""
        from graphmem.staleness import gitimport as history

        return history.import_git(self.scoped(self.scope.but(actor="import-git")), repo,
                                  since=since, max_commits=max_commits, progress=progress,
                                  embed=embed)

    # ----- lifecycle ------------------------------------------------------------------------
    def feedback(self, item_id: str, verdict: str, note: str = "") -> m.MemoryItem:
        """An agent's or person's verdict: helpful raises trust, wrong lowers it (and archives
        an item that falls below the floor), outdated marks it stale."""
        item = self.get_item(item_id)
        if verdict == "helpful":
            return self.update(item_id, confidence=round(min(1.0, item.confidence + 0.1), 4),
                               hit_count=item.hit_count + 1, last_used_at=time.time())
        if verdict == "wrong":
            confidence = round(max(0.0, item.confidence - 0.3), 4)
            status = "archived" if confidence < 0.2 else item.status.value
            return self.update(item_id, confidence=confidence, status=status,
                               stale_reason=f"reported wrong: {note}"[:300] if note else
                               item.stale_reason)
        if verdict == "outdated":
            return self.update(item_id, status="stale",
                               stale_reason=f"reported outdated: {note}"[:300] if note
                               else "reported outdated")
        raise InvalidInput(f"unknown verdict {verdict!r}: use helpful, wrong or outdated")

    def sweep(self, dry_run: bool = False, now: float | None = None) -> dict[str, Any]:
        """Archive expired and cold items (restorable), purge long-archived ones for real."""
        return forgetting.sweep(self, dry_run, now)

    def restore(self, item_id: str) -> m.MemoryItem:
        """Bring an archived item back into retrieval, with a fresh lifetime."""
        return forgetting.restore(self, item_id)

    def forget(self, item_id: str) -> dict[str, int]:
        """Real deletion: graph, vector and full-text index, evidence, and the journal's history."""
        self.get_item(item_id)
        return self.forget_many([item_id])

    def forget_many(self, item_ids: Sequence[str]) -> dict[str, int]:
        """Delete items for real: graph, mirror, vectors, the observations only they came from
        (their spool events and evidence files too), the brief, the retrieval-log lines that
        returned them, and every journal record of them. Their ids are tombstoned so that
        neither re-ingesting the spool nor an import brings them back (see `unforget`)."""
        return forgetting.forget_many(self, item_ids)

    def unforget(self, item_ids: Sequence[str]) -> int:
        """Lift the tombstones of forgotten items (and of the observations forgotten with them),
        so that an import or a re-ingest of their events may bring them back."""
        return forgetting.unforget(self, item_ids)

    def forgotten(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that `forget` tombstoned."""
        return forgetting.forgotten(self, ids)

    def stats(self) -> dict[str, Any]:
        """Counts for this project only (a shared data dir holds others)."""
        counts = self.store.project_counts(self.project)
        return {"project": self.project, "branch": self.branch, "data_dir": str(self.dir),
                "items": self.store.count_items(ItemFilter(project=self.project, statuses=None)),
                "by_kind": self.store.group_counts("kind", self.project),
                "by_status": self.store.group_counts("status", self.project),
                "entities": counts["entities"], "observations": counts["observations"],
                "vectors": counts["vectors"], "links": counts["links"],
                "journal_bytes": self.journal.path.stat().st_size if self.journal.path.exists() else 0,
                "schema_version": self.store.schema_version}

    def export_items(self, *, all_projects: bool = False) -> builtins.list[dict[str, Any]]:
        """Items as JSON records: fields, files, symbols, supersedes, anchors and mentions."""
        return exporting.export_items(self, all_projects=all_projects)

    def import_items(self, records: Iterable[dict[str, Any]], *,
                     restore_forgotten: bool = False) -> int:
        """Restore exported items (JSON objects) into this project; existing ids are replaced.
        Forgotten items are skipped unless `restore_forgotten`; returns how many were imported."""
        return exporting.import_items(self, records, restore_forgotten=restore_forgotten)

    def rebuild(self, reembed: bool = False) -> dict[str, int]:
        """Recreate the graph from the journal; the old database is replaced only when done.
        `reembed`: embed every item again, not only those without a vector of the model."""
        return self._writer.rebuild(lambda: vectors.fill(self, reembed))

    def reembed(self, everything: bool = False, limit: int | None = None) -> dict[str, int]:
        """Embed with the configured model the items whose vector another model made (every
        item with `everything`); at most `limit` of them. {"embedded", "left"}."""
        return vectors.reembed(self, everything, limit)

    # ----- retrieval log --------------------------------------------------------------------
    def _log(self, verb: str, query: str, context: dict[str, Any], candidates: int,
             returned: builtins.list[str], tokens: int) -> None:
        retrievallog.record(self, verb, query, context, candidates, returned, tokens)

    def retrieval_log(self, limit: int = 20) -> builtins.list[dict[str, Any]]:
        return retrievallog.read(self.dir, self.project, limit)


DEFAULT_CONFIDENCE = {"user": 0.9, "agent": 0.75, "rule": 0.6, "llm": 0.5, "import": 0.7}


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _split_title(text: str) -> tuple[str, str]:
    """A long single text: first sentence (or 160 chars, cut at a word) as title, all of it as
    body. A stop inside a code span (`fix: true`) ends no sentence."""
    head = text.split("\n", 1)[0]
    for stop in (". ", "; ", ": "):
        at = head.find(stop)
        while 0 <= at < 200 and head.count("`", 0, at) % 2:
            at = head.find(stop, at + 1)
        if 0 <= at < 200:
            return head[: at + 1].rstrip(), text
    return short(head, 160), text


def _about_other_functions(named: Sequence[Mapping[str, Any]],
                           live: Sequence[live_mod.ContextEntry]) -> bool:
    """The item names functions of the files being worked on, none of them one being worked
    in."""
    files = {e.name for e in live if e.kind == "file"}
    functions = {e.name for e in live if e.kind == "symbol"}
    functions |= {f.rsplit("::", 1)[-1] for f in functions}
    return (any(e.get("path") in files for e in named)
            and not any({e.get("name"), e.get("qualname")} & functions for e in named))
