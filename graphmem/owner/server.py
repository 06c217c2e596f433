"""The single owner of a store: one process holds the database read-write and serves every client.

Kuzu lets one process open a database read-write while nobody else opens it at all, so every
surface (CLI, MCP servers, hook worker, git hook) talks to this process over a Unix socket and
starts it when none is running. The owner exits after an idle timeout; if it dies, the next
client starts a new one. Requests are JSON lines: {"method", "args", "kwargs", "context"}.
"""

from __future__ import annotations

import json
import os
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from graphmem import env
from graphmem.access import peer, same_user
from graphmem.errors import GraphmemError, InvalidInput, StoreUnavailable, from_os_error
from graphmem.owner import codec
from graphmem.owner.codec import REMOTE_METHODS
from graphmem.owner.rendezvous import (
    ABSTRACT_SOCKETS,
    answers,
    record_start_failure,
    socket_address,
)
from graphmem.paths import private_dir, private_opener

DEFAULT_IDLE_SECONDS: float = env.VARIABLES["owner_idle"].default
OPEN_RETRY_SECONDS = 30.0
LOG_NAME = "owner.log"
SWEEP_EVERY_SECONDS = 3600.0
REEMBED_BATCH = 16  # items re-embedded per hold of the lock (~1 s): a prompt hook waits no longer
WARM_AFTER_SECONDS = env.number("owner_warm_after")





class _Handler(socketserver.StreamRequestHandler):
    server: OwnerServer

    def handle(self) -> None:
        for raw in self.rfile:
            if not raw.strip():
                continue
            self.server.count("in_flight", 1)  # until the reply is written, not just computed
            try:
                response = self.server.dispatch(raw)
                self.wfile.write(response)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                self.server.count("in_flight", -1)  # verbs mark activity in _call: a ping does not


class OwnerServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Serves Memory verbs to clients, one at a time under a lock, each call in its client's
    scope (a `Memory.scoped` view); exits when idle."""

    daemon_threads = True
    allow_reuse_address = False
    # socketserver's 5 filled while a starting owner loaded its model: the hooks' liveness
    # probes queued up and the next prompt's connect failed with EAGAIN instead of waiting.
    request_queue_size = 128

    def __init__(self, memory: Any, address: str, idle_seconds: float) -> None:
        super().__init__(address, _Handler)
        self.memory = memory
        self.lock = threading.Lock()
        self._counters = threading.Lock()
        self.idle_seconds = idle_seconds
        self.last_activity = time.monotonic()
        self.waiting = 0
        self.in_flight = 0  # calls received and not yet answered: the owner never idles out on them
        self.served = 0
        self.asked = threading.Event()  # a client called, a ping included: warm up now
        self.search_ready = False  # the model is loaded and the search mirror built
        self.warm = False  # and the prose extractor too: nothing left loading beside the calls
        self.closing = False  # set under the lock before the store closes: background work stops
        self.started = time.time()
        self.log_path = Path(memory.dir) / "logs" / LOG_NAME
        private_dir(self.log_path.parent)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Serve only processes of this user: anyone else is closed on with nothing read."""
        if same_user(request, protected_by_dir=not ABSTRACT_SOCKETS):
            return True
        uid, pid = peer(request)
        self._log("refused", 0.0, 0, {"type": "AccessDenied", "message":
                  f"refused a connection from uid {uid} (pid {pid}): only uid {os.getuid()} "
                  "may use this store"})
        return False

    def count(self, name: str, delta: int) -> None:
        with self._counters:
            setattr(self, name, getattr(self, name) + delta)

    def dispatch(self, raw: bytes) -> bytes:
        started = time.perf_counter()
        method = "?"
        try:
            request = json.loads(raw)
            method = request.get("method", "")
            result = self._call(method, request.get("args", []), request.get("kwargs", {}),
                                request.get("context", {}))
            body = {"ok": True, "result": codec.encode(result)}
        except GraphmemError as exc:
            body = {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)}}
        except (ValueError, TypeError) as exc:
            body = {"ok": False, "error": {"type": "InvalidInput", "message": str(exc)}}
        except OSError as exc:
            error = from_os_error(exc, f"in {method}")
            body = {"ok": False, "error": {"type": type(error).__name__, "message": str(error)}}
        except Exception as exc:  # noqa: BLE001 - the owner must survive any single bad call
            body = {"ok": False, "error": {"type": "GraphmemError",
                                           "message": f"{type(exc).__name__}: {exc}"}}
        payload = (json.dumps(body, ensure_ascii=False) + "\n").encode()
        self._log(method, time.perf_counter() - started, len(payload), body.get("error"))
        return payload

    def _call(self, method: str, args: list[Any], kwargs: dict[str, Any],
              context: dict[str, Any]) -> Any:
        self.asked.set()
        if method == "ping":
            return self.status()
        if method not in REMOTE_METHODS or not hasattr(self.memory, method):
            raise InvalidInput(f"unknown method {method!r}")
        self.count("waiting", 1)
        with self.lock:
            self.count("waiting", -1)
            self.last_activity = time.monotonic()
            # The call runs on a view with its own scope: the shared Memory is never changed.
            view = self.memory.scoped(self.memory.scope.for_client(context))
            try:
                return getattr(view, method)(*codec.decode(args), **codec.decode(kwargs))
            finally:
                self.served += 1
                self.last_activity = time.monotonic()

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "data_dir": str(self.memory.dir), "served": self.served,
                "waiting": self.waiting, "started": self.started,
                "idle_seconds": round(time.monotonic() - self.last_activity, 1),
                "model_loaded": bool(getattr(self.memory, "model_loaded", False)),
                "search_ready": self.search_ready, "warm": self.warm,
                "busy": self.lock.locked()}

    def close_store(self) -> None:
        """Close the store once no background task is inside it, and keep them out after."""
        with self.lock:
            self.closing = True
            self.memory.close()

    def _warm(self, step: str, *args: Any) -> None:
        task = getattr(self.memory, step, None)
        if task is None or self.closing:
            return
        try:
            task(*args)
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only costs the first call time
            self._log(step, 0.0, 0, {"type": type(exc).__name__, "message": str(exc)})

    def _log(self, method: str, seconds: float, size: int, error: Any) -> None:
        record = {"ts": time.time(), "method": method, "ms": round(seconds * 1000, 2),
                  "bytes": size}
        if error:
            record["error"] = error
        try:
            with open(self.log_path, "a", encoding="utf-8", opener=private_opener) as handle:
                handle.write(json.dumps(record) + "\n")
        except OSError:
            pass

    def _reembed(self) -> None:
        """Replace the vectors another model than the configured one made, a few at a time:
        calls are served in between (their searches see only the configured model's vectors)."""
        task = getattr(self.memory, "reembed", None)
        while task is not None:
            with self.lock:
                if self.closing:
                    return
                try:
                    left = task(limit=REEMBED_BATCH)["left"]
                except Exception as exc:  # noqa: BLE001 - logged; the next owner tries again
                    self._log("reembed", 0.0, 0, {"type": type(exc).__name__, "message": str(exc)})
                    return
            if not left:
                return

    def idle_watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.idle_seconds / 4))
            if self.in_flight == 0 and time.monotonic() - self.last_activity > self.idle_seconds:
                self.shutdown()
                return

    def background(self, every: float = 2.0) -> None:
        """Warm the model, then keep ingesting the spool while the owner lives.

        The warm-up waits for the first call or WARM_AFTER_SECONDS: on a small machine it would
        otherwise take CPU from the MCP server still importing fastmcp. A prompt hook's ping is
        a call: a prompt is waiting for search."""
        self.asked.wait(WARM_AFTER_SECONDS)
        # What a search needs comes first (the model, the mirror): a prompt hook asks as soon as
        # that is ready, while the prose extractor that only ingest needs is still loading.
        self._warm("warm_up", False)
        with self.lock:  # the mirror reads the graph, which calls share
            self._warm("prepare_search")
        self.search_ready = True
        self._warm("warm_up", True)
        self.warm = True
        self._reembed()
        chores = [(getattr(self.memory, "ingest_pending", None), every),
                  (getattr(self.memory, "sweep", None), SWEEP_EVERY_SECONDS)]
        due = {id(task): time.monotonic() + period for task, period in chores if task}
        while due:
            time.sleep(every)
            for task, period in chores:
                if task is None or time.monotonic() < due[id(task)]:
                    continue
                due[id(task)] = time.monotonic() + period
                with self.lock:
                    if self.closing:
                        return
                    try:
                        task()
                    except Exception as exc:  # noqa: BLE001 - logged; nothing is lost
                        self._log(task.__name__, 0.0, 0,
                                  {"type": type(exc).__name__, "message": str(exc)})


def open_memory_with_retry(config: Any, seconds: float = OPEN_RETRY_SECONDS,
                           address: str | None = None) -> Any:
    """Open the store read-write, waiting while a short-lived direct user still holds it.
    With `address` (an owner's): None as soon as an owner answers there (it holds the store;
    ours may go), and vectors of another model are left to the owner's background."""
    from graphmem.service import Memory

    deadline = time.monotonic() + seconds
    delay = 0.05
    while True:
        try:
            return Memory(config, refresh_vectors=address is None)
        except StoreUnavailable as exc:
            if "in use" not in str(exc) or time.monotonic() > deadline:
                raise
            if address is not None and answers(address):
                return None
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)


def run_owner(config: Any, idle_seconds: float = DEFAULT_IDLE_SECONDS) -> int:
    """Entry point of `graphmem owner`: returns when idle or when another owner already runs."""
    from graphmem.service import Memory

    address = socket_address(Path(Memory.data_dir_for(config)))
    if answers(address):
        return 0
    try:
        memory = open_memory_with_retry(config, address=address)
    except GraphmemError as exc:  # a corrupt store, say: the waiting clients say so at once
        record_start_failure(Path(Memory.data_dir_for(config)), exc)
        raise
    if memory is None:  # another owner started at the same time and holds the store
        return 0
    if not ABSTRACT_SOCKETS:
        Path(address).unlink(missing_ok=True)  # a dead owner's: nobody answered on it
    try:
        server = OwnerServer(memory, address, idle_seconds)
    except OSError:
        memory.close()
        return 0
    threading.Thread(target=server.idle_watch, daemon=True).start()
    threading.Thread(target=server.background, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        server.close_store()
    return 0

