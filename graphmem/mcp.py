"""The MCP server: agent tools, resources and a prompt over Memory; the only fastmcp import.

Every tool is a thin wrapper over one Memory verb. `build_server(factory)` takes anything with
Memory's verbs (a Memory in tests, a RemoteMemory talking to the owner in production); `serve`
runs it over stdio, or streamable HTTP on a loopback address. fastmcp is imported lazily so that
`serve` can start the owner (and its model warm-up) while fastmcp itself is still loading.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from graphmem import models as m
from graphmem.access import RequestGuard, http_token, is_loopback
from graphmem.errors import GraphmemError, InvalidInput, NotFound
from graphmem.kinds import WrittenKind
from graphmem.paths import private_dir, private_opener

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from graphmem.config import Config

LOG_NAME = "mcp.log"
# fastmcp 4.2 imports jsonref lazily on the first tools/list (to dereference $refs in schemas).
# `serve` preloads it while the agent is still starting up, with `requests` hidden: jsonref only
# uses it to fetch http(s) $refs, which our schemas never have, and importing it costs ~0.1 s.
FASTMCP_LAZY_MODULES: dict[str, tuple[str, ...]] = {"jsonref": ("requests",)}

INSTRUCTIONS = """\
graphmem is this project's long-term memory: decisions, pitfalls, conventions, environment facts,
open tasks and session summaries that earlier sessions (of any agent) recorded, linked to files,
symbols and error codes. Pull, don't assume:
- At the start, read memory_brief (one line per item) if it is not already in your context.
- Before changing a file, debugging an error or choosing an approach, call memory_search with the
  files/symbols you are touching; it is cheap and often saves a repeated mistake.
- memory_get and memory_evidence open an item and the raw observations behind it.
- When you make a decision, hit a pitfall, learn a convention or leave a task open, record it at
  once with memory_add: one fact per item, conclusion first, with the files it concerns.
- When a memory helped, was wrong or is outdated, say so with memory_feedback; after re-checking a
  stale item against the current code, memory_verify it. memory_forget deletes for good.
Items marked stale may no longer match the code: check before relying on them."""

USE_MEMORY_PROMPT = """\
You have graphmem, this project's memory, as MCP tools. Use it like a careful colleague's notes:

1. Orient: call memory_brief once at the start (skip it if the brief is already in your context).
2. Search before assuming: before editing a file, fixing an error, or choosing between approaches,
   call memory_search with a short query and the files/symbols involved, e.g.
   memory_search(query="why retries are capped", files=["src/net/client.py"]).
   Open promising hits with memory_get (full text, links, status) and memory_evidence (the raw,
   redacted observations the item came from).
3. Record as you go: when you make a decision, discover a pitfall or convention, fix a
   non-obvious bug, or leave work unfinished, call memory_add right then with kind
   decision | pitfall | convention | env | task | fact, a one-line conclusion as the title, the
   reasoning in the body, and the files/symbols it concerns. Repeats are merged automatically.
4. Keep it honest: memory_feedback(id, "helpful" | "wrong" | "outdated", note) after using an
   item; memory_verify(id) when you re-checked a stale item against the current code and it still
   holds; memory_forget(id) only for things that must not be kept (a secret, a mistake).
5. Items labelled stale point at code that changed since they were written: trust them less and
   verify before acting on them.{focus}"""


# ----- typed results -----------------------------------------------------------------------------
class MissingItem(BaseModel):
    """An id that could not be opened, with the reason."""

    id: str
    error: str


class GetResult(BaseModel):
    """Full items for the ids asked for; ids that do not exist are listed in `missing`."""

    items: list[m.ItemDetail]
    missing: list[MissingItem] = Field(default_factory=list)


class EvidenceResult(BaseModel):
    """The redacted raw observations an item was derived from (may be empty)."""

    id: str
    excerpts: list[m.EvidenceExcerpt]


class AddResult(BaseModel):
    """The stored item; `merged` is true when it was folded into an existing item."""

    item: m.MemoryItem
    merged: bool


class RelatedItem(BaseModel):
    item: m.MemoryItem
    direct: bool = Field(description="the item mentions the entity itself, not a neighbour")


class RelatedResult(BaseModel):
    """What memory knows about an entity: matching entities, their neighbours and items."""

    entities: list[dict[str, Any]]
    neighbours: list[dict[str, Any]]
    co_mentioned: list[dict[str, Any]]
    items: list[RelatedItem]


class FeedbackResult(BaseModel):
    """The item after the feedback was applied."""

    item: m.MemoryItem
    verdict: str
    change: str


class VerifyResult(BaseModel):
    """The item after verification and how its code anchors were renewed."""

    item: m.MemoryItem
    anchors: int = Field(description="code anchors renewed to the current content")
    dropped: list[str] = Field(description="anchors dropped: their file or symbol is gone")
    commit: str = Field(description="HEAD when verified (empty outside git)")


class ForgetResult(BaseModel):
    """Confirmation of a real deletion."""

    id: str
    deleted: bool
    observations: int = Field(description="evidence observations deleted with the item")
    journal_records_rewritten: int


# ----- argument types ----------------------------------------------------------------------------
ItemId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$",
                              description="a memory id, as shown in [brackets] or `id` fields")]
PathList = Annotated[list[Annotated[str, Field(min_length=1, max_length=500)]],
                     Field(max_length=50, description="repo-relative file paths involved, e.g. "
                                                      "['src/app/db.py']; they steer ranking")]
SymbolList = Annotated[list[Annotated[str, Field(min_length=1, max_length=300)]],
                       Field(max_length=50, description="functions/classes/methods involved, "
                                                        "e.g. ['Client.retry', 'parse_config']")]
AddKind = WrittenKind


# ----- the server --------------------------------------------------------------------------------
class _Backend:
    """The memory behind the tools: created on first use, one call at a time, every call logged."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._memory: Any = None
        self._lock = threading.RLock()
        self.log_path: Path | None = None

    @property
    def memory(self) -> Any:
        with self._lock:
            if self._memory is None:
                self._memory = self._factory()
                directory = getattr(self._memory, "dir", None)
                if directory is not None:
                    self.log_path = Path(directory) / "logs" / LOG_NAME
            return self._memory

    def call(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        """memory.<verb>(...), with graphmem errors turned into one-line tool errors."""
        from fastmcp.exceptions import ToolError

        try:
            with self._lock:
                return getattr(self.memory, verb)(*args, **kwargs)
        except GraphmemError as exc:
            raise ToolError(_one_line(str(exc)) or type(exc).__name__) from exc
        except ToolError:
            raise
        except Exception as exc:
            self.log({"event": "crash", "verb": verb, "error": f"{type(exc).__name__}: {exc}",
                      "traceback": traceback.format_exc(limit=8)})
            raise ToolError(f"internal error in {verb}: {type(exc).__name__}: "
                            f"{_one_line(str(exc))}") from exc

    def log(self, record: dict[str, Any]) -> None:
        """Append one JSON line to <store>/logs/mcp.log (once the memory is open)."""
        if self.log_path is None:
            return
        try:
            private_dir(self.log_path.parent)
            with open(self.log_path, "a", encoding="utf-8", opener=private_opener) as handle:
                handle.write(json.dumps({"ts": round(time.time(), 3), **record},
                                        ensure_ascii=False) + "\n")
        except OSError:
            pass


class _LazyState:
    """fastmcp's session-state store, made on first write.

    fastmcp reads session state on every request (per-session visibility rules), and its store
    imports key_value + beartype: ~0.4 s of CPU before the first answer. None of our tools ever
    writes state, so until something does, a read finds nothing without building the store;
    from the first write (or any other use) on, everything goes to the real store.
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._real: Any = None

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        if self._real is None:
            return None
        return await self._real.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if self._real is None:
            self._real = self._make()
        return getattr(self._real, name)


def agent_session() -> str:
    """The id of the agent session that started this server, when the agent says it (Claude
    Code gives stdio MCP servers CLAUDE_CODE_SESSION_ID); "" lets the owner take the latest
    session of this checkout."""
    return os.environ.get("CLAUDE_CODE_SESSION_ID", "")


def build_server(memory_factory: Callable[[], Any], *, name: str = "graphmem") -> FastMCP:
    """An MCP server whose tools call the memory `memory_factory()` returns (made on first use)."""
    from fastmcp import FastMCP
    from fastmcp.exceptions import ResourceError, ToolError

    class Server(FastMCP):  # type: ignore[misc]
        @property
        def _state_store(self) -> Any:
            lazy = self.__dict__.get("_graphmem_state")
            if lazy is None:
                lazy = self.__dict__["_graphmem_state"] = _LazyState(
                    lambda: FastMCP._state_store.fget(self))  # type: ignore[attr-defined]
            return lazy

    backend = _Backend(memory_factory)
    mcp = Server(name, instructions=INSTRUCTIONS, middleware=[_call_log(backend)],
                 mask_error_details=False)
    read_only = {"readOnlyHint": True, "openWorldHint": False}

    def tool(annotations: dict[str, Any]) -> Callable[[Any], Any]:
        """@mcp.tool with the docstring passed as the description: fastmcp would otherwise
        parse every docstring with griffe (imported for it: ~0.1 s) to find an Args section our
        docstrings never have (arguments are described in their Field)."""
        def register(fn: Any) -> Any:
            description = inspect.getdoc(fn)
            fn.__doc__ = None
            return mcp.tool(description=description, annotations=annotations)(fn)
        return register

    @tool(read_only)
    def memory_brief(
        budget: Annotated[int | None, Field(ge=0, le=4000, description=(
            "token budget of the brief; omit for the configured default (400)"))] = None,
    ) -> m.Brief:
        """The project's memory at a glance: one line per remembered item (`- kind: title [id]`),
        the last session's summary and open tasks first, inside a small token budget. Call once
        at the start of a session unless the brief is already in your context; it is an index,
        not the content: use memory_search / memory_get for details."""
        return backend.call("brief", budget)

    @tool(read_only)
    def memory_search(
        query: Annotated[str, Field(max_length=2000, description=(
            "what you want to know, in words or code terms, e.g. 'why is the retry limit 3' or "
            "'E0433 in build'; may be empty when files or symbols are given"))],
        files: PathList = [],  # noqa: B006 - pydantic copies defaults
        symbols: SymbolList = [],  # noqa: B006
        k: Annotated[int, Field(ge=1, le=50, description="maximum number of hits")] = 10,
        kinds: Annotated[list[m.ItemKind] | None, Field(max_length=9, description=(
            "only these kinds, e.g. ['decision', 'pitfall']; omit for all"))] = None,
        budget: Annotated[int | None, Field(ge=0, le=8000, description=(
            "token budget of the answer; omit for the configured default (1500)"))] = None,
    ) -> m.SearchResult:
        """Search the project's memory before assuming: past decisions, pitfalls, conventions,
        environment facts and open tasks, ranked by entity match, graph links, meaning and
        keywords. Call it before editing a file, debugging an error or choosing an approach, and
        pass the files/symbols you are working on: they find what was recorded about that code
        even when the words differ (without them, what this session read and edited and the
        uncommitted changes are the context). Each hit says why it matched; hits marked stale refer to code
        that changed since, so verify them. Open a hit fully with memory_get."""
        if not query.strip() and not files and not symbols:
            raise ToolError("give a query, files or symbols to search for")
        return backend.call("search", query, files=list(files), symbols=list(symbols), k=k,
                            kinds=[kind.value for kind in kinds] if kinds else None,
                            budget=budget, live=True, session_id=agent_session())

    @tool(read_only)
    def memory_get(
        ids: Annotated[list[ItemId], Field(min_length=1, max_length=20, description=(
            "ids of the items to open (from the brief or search hits)"))],
    ) -> GetResult:
        """Open memory items in full: title, body, kind, status (active/stale/...), stale reason,
        confidence, provenance, and links to the files, symbols and error codes they mention.
        Unknown ids are reported in `missing`, not as an error."""
        items, missing = [], []
        for item_id in dict.fromkeys(ids):
            try:
                items.append(backend.call("get", item_id))
            except ToolError as exc:
                if not isinstance(exc.__cause__, NotFound):
                    raise
                missing.append(MissingItem(id=item_id, error=str(exc)))
        return GetResult(items=items, missing=missing)

    @tool(read_only)
    def memory_evidence(id: ItemId) -> EvidenceResult:
        """The raw observations (redacted tool outputs, commands, errors) an item was derived
        from, to check a memory against what actually happened. Items the agent added by hand
        usually have none."""
        return EvidenceResult(id=id, excerpts=backend.call("evidence", id))

    @tool({"readOnlyHint": False, "destructiveHint": False,
                           "idempotentHint": True, "openWorldHint": False})
    def memory_add(
        kind: Annotated[AddKind, Field(description=(
            "decision (a choice and why), pitfall (a trap and how to avoid it), convention (how "
            "things are done here), env (setup/tooling facts), task (open work), fact, summary "
            "(of a session), note"))],
        title: Annotated[str, Field(min_length=1, max_length=300, description=(
            "one line, conclusion first, e.g. 'Use psycopg 3, not psycopg2: async support'"))],
        body: Annotated[str, Field(description=(
            "optional detail: reasoning, alternatives rejected, how to reproduce; keep it short "
            "(the whole item is limited to ~32,000 characters)"))] = "",
        files: PathList = [],  # noqa: B006
        symbols: SymbolList = [],  # noqa: B006
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0, description=(
            "how sure you are, 0..1; omit for the default for agent-written items (0.75)"))] = None,
    ) -> AddResult:
        """Record one thing worth remembering, right when it happens: a decision you made and
        why, a pitfall you hit, a convention you learned, an environment fact, or a task you are
        leaving open. One fact per call, conclusion first, with the files/symbols it concerns so
        later searches on that code find it. A repeat of an existing item is merged into it
        (see `merged`), so recording twice is harmless."""
        started = time.time()
        item = backend.call("add", title, body, kind=kind, files=list(files),
                            symbols=list(symbols), confidence=confidence, source="agent")
        return AddResult(item=item, merged=item.created_at < started - 0.001)

    @tool(read_only)
    def memory_related(
        entity: Annotated[str, Field(min_length=1, max_length=500, description=(
            "a file path, symbol, error code, package, command or env var, e.g. "
            "'src/app/db.py', 'Client.retry', 'E0433', 'DATABASE_URL'"))],
    ) -> RelatedResult:
        """Everything memory links to one entity: the matching entities, their graph neighbours
        (containing file, related symbols), entities often mentioned with it, and the items that
        mention it (`direct`) or its neighbours. Use it to explore around a file or error."""
        return RelatedResult.model_validate(backend.call("related", entity))

    @tool({"readOnlyHint": False, "destructiveHint": False,
                           "openWorldHint": False})
    def memory_feedback(
        id: ItemId,
        verdict: Annotated[Literal["helpful", "wrong", "outdated"], Field(description=(
            "helpful: it helped (confidence +0.1, counts a use); wrong: it is false (confidence "
            "-0.3, archived below 0.2); outdated: it was true but the code moved on (marked "
            "stale)"))],
        note: Annotated[str, Field(max_length=280, description=(
            "why, in a few words; kept as the item's stale reason for 'wrong' and 'outdated'"))
        ] = "",
    ) -> FeedbackResult:
        """Tell memory how an item held up after you used it, so good memories rank higher and
        bad ones fade: helpful, wrong, or outdated (with a short note)."""
        before = backend.call("get_item", id)
        after = backend.call("feedback", id, verdict, note.strip())
        return FeedbackResult(item=after, verdict=verdict, change=_describe_change(before, after))

    @tool({"readOnlyHint": False, "destructiveHint": False,
                           "idempotentHint": True, "openWorldHint": False})
    def memory_verify(id: ItemId) -> VerifyResult:
        """Confirm an item still holds: call it after you re-checked a (stale) item against the
        current code. Re-anchors it to the code as it is now, clears the stale mark and records
        it as verified."""
        return VerifyResult.model_validate(backend.call("verify", id))

    @tool({"readOnlyHint": False, "destructiveHint": True,
                           "idempotentHint": True, "openWorldHint": False})
    def memory_forget(id: ItemId) -> ForgetResult:
        """Delete an item for good: graph, indexes, its own evidence and its journal history.
        Only for things that must not be kept (a leaked secret, a plain mistake); for a memory
        that is merely wrong or outdated prefer memory_feedback."""
        result = backend.call("forget", id)
        return ForgetResult(id=id, deleted=True, observations=result.get("observations", 0),
                            journal_records_rewritten=result.get("journal_records_rewritten", 0))

    @mcp.resource("memory://brief", name="brief", mime_type="text/markdown",
                  description="The session-start brief of this project's memory.")
    def brief_resource() -> str:
        try:
            brief = backend.call("brief")
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc
        return brief.text or "graphmem: nothing remembered about this project yet."

    @mcp.resource("memory://item/{id}", name="item", mime_type="text/markdown",
                  description="One memory item in full: text, status, links.")
    def item_resource(id: str) -> str:
        try:
            detail = backend.call("get", id)
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc
        return render_item(detail)

    @mcp.prompt(name="use_memory", description="How to use graphmem's memory tools well.")
    def use_memory(
        task: Annotated[str, Field(description="optional: what you are about to work on")] = "",
    ) -> str:
        focus = (f"\n\nYou are about to work on: {task.strip()}\nStart with memory_search on it."
                 if task.strip() else "")
        return USE_MEMORY_PROMPT.format(focus=focus)

    return mcp


def _describe_change(before: m.MemoryItem, after: m.MemoryItem) -> str:
    """What a feedback changed, in one line."""
    parts = []
    if after.confidence != before.confidence:
        parts.append(f"confidence {before.confidence:.2f} → {after.confidence:.2f}")
    if after.hit_count != before.hit_count:
        parts.append(f"hits {after.hit_count}")
    if after.status != before.status:
        parts.append(f"status {before.status.value} → {after.status.value}")
    if after.stale_reason and after.stale_reason != before.stale_reason:
        parts.append(f"reason: {after.stale_reason}")
    return ", ".join(parts) or "no change"


def render_item(detail: m.ItemDetail) -> str:
    """An item as short Markdown: what an agent reads from memory://item/{id}."""
    item = detail.item
    status = item.status.value + (f" ({item.stale_reason})" if item.stale_reason else "")
    lines = [f"# {item.title}", "",
             f"- id: {item.id}", f"- kind: {item.kind.value}", f"- status: {status}",
             f"- confidence: {item.confidence:.2f}" + (" (verified)" if item.verified else ""),
             f"- source: {item.source.value}, hits: {item.hit_count}",
             f"- evidence: {detail.evidence_count} observation(s) (memory_evidence)"]
    if item.body and item.body.strip() != item.title:
        lines += ["", item.body]
    names = [_link_name(link) for link in detail.links]
    if names:
        lines += ["", "Links: " + ", ".join(n for n in dict.fromkeys(names) if n)]
    return "\n".join(lines) + "\n"


def _link_name(link: dict[str, Any]) -> str:
    entity = link.get("entity") or {}
    name = entity.get("path") or entity.get("qualname") or entity.get("name") or ""
    kind = entity.get("kind", "")
    return f"{kind}:{name}" if kind and name else name


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _call_log(backend: _Backend) -> Any:
    """Middleware: one JSON line per tool call (tool, ms, result bytes, error) in logs/mcp.log,
    and argument-validation errors shortened to one line per problem."""
    from fastmcp.exceptions import ToolError, ValidationError
    from fastmcp.server.middleware import Middleware
    from pydantic import ValidationError as PydanticValidationError

    class CallLog(Middleware):
        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            tool = getattr(context.message, "name", "?")
            started = time.perf_counter()
            record: dict[str, Any] = {"tool": tool}
            try:
                result = await call_next(context)
            except ValidationError as exc:
                error = _validation_message(tool, exc.__cause__, str(exc))
                self._record(record, started, error=error)
                raise ToolError(error) from exc
            except PydanticValidationError as exc:
                error = _validation_message(tool, exc, str(exc))
                self._record(record, started, error=error)
                raise ToolError(error) from exc
            except Exception as exc:
                self._record(record, started, error=_one_line(str(exc)))
                raise
            self._record(record, started, size=_result_size(result),
                        error="tool error" if getattr(result, "is_error", False) else None)
            return result

        def _record(self, record: dict[str, Any], started: float, size: int = 0,
                   error: str | None = None) -> None:
            record.update(ms=round((time.perf_counter() - started) * 1000, 2), bytes=size,
                          ok=error is None)
            if error:
                record["error"] = error[:500]
            backend.log(record)

    return CallLog()


def _validation_message(tool: str, cause: Any, fallback: str) -> str:
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return f"invalid arguments for {tool}: {_one_line(fallback)}"
    parts = []
    for error in errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != tool) or "arguments"
        message = error.get("msg", "invalid")
        if error.get("type") == "missing_argument" or error.get("type") == "missing":
            message = "required argument is missing"
        parts.append(f"{where}: {message}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def _result_size(result: Any) -> int:
    size = 0
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            size += len(text.encode("utf-8"))
    return size


# ----- running -----------------------------------------------------------------------------------
def parse_http_address(address: str, allow_remote: bool = False) -> tuple[str, int]:
    """'HOST:PORT' (or '[::1]:PORT') → (host, port); only loopback hosts unless `allow_remote`."""
    text = address.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise InvalidInput(f"--http wants HOST:PORT, e.g. 127.0.0.1:8765 (got {address!r})")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        port = int(port_text)
    except ValueError:
        raise InvalidInput(f"--http: port must be a number (got {port_text!r})") from None
    if not 0 < port < 65536:
        raise InvalidInput(f"--http: port must be 1..65535 (got {port})")
    if not allow_remote and not is_loopback(host):
        raise InvalidInput(f"refusing to serve memory over HTTP on {host!r}: only loopback "
                           "addresses are allowed (127.0.0.1, ::1 or localhost); to serve "
                           "other machines put TLS in front and pass --allow-remote")
    return host, port


class _GuardMiddleware:
    """ASGI wrapper refusing what `RequestGuard` refuses, before the MCP app sees it."""

    def __init__(self, app: Any, guard: RequestGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", [])}
            refused = self.guard.refusal(headers)
            if refused is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                status, reason = refused
                body = json.dumps({"error": reason}).encode()
                head = [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())]
                if status == 401:
                    head.append((b"www-authenticate", b"Bearer"))
                await send({"type": "http.response.start", "status": status, "headers": head})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve(config: Config, http: str | None = None, allow_remote: bool = False) -> None:
    """Run the MCP server: stdio by default, streamable HTTP on a loopback HOST:PORT with `http`.

    Over HTTP every request needs the store's bearer token and a loopback Host and Origin
    (a web page cannot rebind a name to 127.0.0.1 and drive the tools).

    The memory lives in the owner process (started on demand). It is contacted in a background
    thread right away, so the owner starts and warms its model while fastmcp is still importing.
    """
    from graphmem.owner.client import RemoteMemory
    from graphmem.paths import find_project, graphmem_home, store_dir

    address = parse_http_address(http, allow_remote) if http else None
    # What open_memory(config, owner=True) returns, without importing the service (numpy, kuzu,
    # retrieval: ~0.25 s) into a process that only forwards calls to the owner.
    ref = find_project(config.cwd)
    data_dir = Path(config.data_dir or store_dir(ref, config.home or graphmem_home()))
    memory = RemoteMemory(config, data_dir, config.project or ref.name, ref.branch)

    def connect() -> None:
        try:
            memory.ping()
        except Exception:  # noqa: BLE001 - the first tool call retries and reports it
            memory.close()

    connecting = threading.Thread(target=connect, name="graphmem-owner-connect", daemon=True)
    connecting.start()

    def factory() -> Any:
        connecting.join()
        return memory

    server = build_server(factory)
    threading.Thread(target=_preload, args=(FASTMCP_LAZY_MODULES,), name="graphmem-preload",
                     daemon=True).start()
    try:
        if address is None:
            server.run(transport="stdio", show_banner=False)
        else:
            from starlette.middleware import Middleware

            token, token_file = http_token(data_dir, config.http_token)
            hosts = [*config.http_allowed_hosts, *([] if is_loopback(address[0]) else [address[0]])]
            host = f"[{address[0]}]" if ":" in address[0] else address[0]
            print(f"graphmem: MCP over HTTP at http://{host}:{address[1]}/mcp; clients must send "
                  f"'Authorization: Bearer {token}' (token "
                  f"{'from GRAPHMEM_HTTP_TOKEN' if token_file is None else f'in {token_file}'})",
                  file=sys.stderr, flush=True)
            server.run(transport="http", host=address[0], port=address[1], show_banner=False,
                       middleware=[Middleware(_GuardMiddleware, guard=RequestGuard(token, hosts))])
    finally:
        memory.close()


def _preload(modules: dict[str, tuple[str, ...]]) -> None:
    """Import what fastmcp would import on the first request, while the server waits for it;
    each module's optional extras listed with it are hidden from that import (and only from it:
    a module already loaded, or imported later, is left alone)."""
    import contextlib
    import importlib
    import sys

    for name, hidden in modules.items():
        hide = [extra for extra in hidden if extra not in sys.modules]
        for extra in hide:
            sys.modules[extra] = None  # type: ignore[assignment]  # import -> ImportError
        try:
            with contextlib.suppress(Exception):  # only a head start: the request imports it
                importlib.import_module(name)
        finally:
            for extra in hide:
                if extra in sys.modules and sys.modules[extra] is None:
                    del sys.modules[extra]


def main(argv: list[str] | None = None) -> int:
    """`python -m graphmem.mcp [--http HOST:PORT]`: the same as `graphmem serve`."""
    import argparse

    from graphmem.config import Config
    from graphmem.paths import private_umask

    parser = argparse.ArgumentParser(prog="graphmem serve", description=serve.__doc__)
    parser.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP on a loopback "
                                                             "address instead of stdio")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback "
                        "--http address (put TLS in front; the token is still required)")
    args = parser.parse_args(argv)
    private_umask()
    try:
        serve(Config.from_env(), http=args.http, allow_remote=args.allow_remote)
    except GraphmemError as exc:
        print(f"graphmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
