"""Reach a project's memory from any process: through the owner when one runs, else directly.

`open_memory()` is what every surface calls. With `owner=True` (MCP servers, the hook worker, the
git hook) it always goes through the owner, starting it when none runs, so no client ever meets
Kuzu's lock. A one-off CLI command uses a running owner if there is one and otherwise opens the
store itself (waiting briefly if another short-lived process holds it).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from graphmem import env, errors
from graphmem.access import peer, same_user
from graphmem.owner import codec
from graphmem.owner.codec import READ_METHODS, REMOTE_METHODS
from graphmem.owner.rendezvous import ABSTRACT_SOCKETS, answers, socket_address, start_failure
from graphmem.paths import private_dir, private_opener, work_tree

if TYPE_CHECKING:  # pydantic stays out of the git hooks' hand-off to the owner
    from graphmem.config import Config

START_TIMEOUT = 60.0
NOT_LISTENING = "no owner listens"  # at the moment of the call: none runs, or it just left
CALL_TIMEOUT = 600.0


class RemoteMemory:
    """Memory's verbs, answered by the owner process over its socket."""

    def __init__(self, config: Config | None, data_dir: Path, project: str, branch: str,
                 start: bool = True) -> None:
        self.config = config
        self.dir = data_dir
        self.project = project
        self.branch = branch
        self._start = start
        self.actor = "api"
        tree = work_tree(config.cwd if config is not None else None)
        self.checkout = str(tree) if tree is not None else None  # where the caller's git is
        self._sock: socket.socket | None = None
        self._reader: Any = None

    def _connect(self) -> None:
        address = socket_address(self.dir)
        deadline = time.monotonic() + START_TIMEOUT
        since = time.time()
        spawned = False
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(address)
            except OSError:
                sock.close()
            else:
                if not same_user(sock, protected_by_dir=not ABSTRACT_SOCKETS):
                    uid, pid = peer(sock)
                    sock.close()
                    # Someone else took this store's address: never hand them our requests.
                    raise errors.OwnerUnavailable(
                        f"the owner address of {self.dir} is held by uid {uid} (pid {pid}), "
                        f"not by you (uid {os.getuid()}); refusing to talk to it")
                sock.settimeout(CALL_TIMEOUT)
                self._sock, self._reader = sock, sock.makefile("rb")
                return
            if not self._start:
                raise errors.OwnerUnavailable(f"no owner is running for {self.dir}")
            if not spawned and self.config is not None:
                spawn_owner(self.config, self.dir)
                spawned = True
            failed = start_failure(self.dir, since)
            if failed is not None:  # it could not open the store: its error is ours
                cls = getattr(errors, str(failed.get("type")), errors.GraphmemError)
                if not (isinstance(cls, type) and issubclass(cls, errors.GraphmemError)):
                    cls = errors.GraphmemError
                raise cls(str(failed.get("message", "")))
            if time.monotonic() > deadline:
                raise errors.OwnerUnavailable(f"the owner of {self.dir} did not start; see "
                                              "`graphmem doctor`")
            time.sleep(0.05)

    def _request(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = None if method in READ_METHODS else os.urandom(16).hex()
        context = {"project": self.project, "branch": self.branch, "actor": self.actor,
                   "checkout": self.checkout, **({"request": request} if request else {})}
        payload = (json.dumps({"method": method, "args": codec.encode(list(args)),
                               "kwargs": codec.encode(kwargs), "context": context},
                              ensure_ascii=False) + "\n").encode()
        for attempt in (1, 2):
            if self._sock is None:
                self._connect()
            assert self._sock is not None
            sent = False
            try:
                self._sock.sendall(payload)
                sent = True
                line = self._reader.readline()
                if not line:
                    raise ConnectionResetError("owner closed the connection")
                break
            except OSError as exc:
                self.close()
                # A dead owner is replaced by the next one; but a write that reached the owner
                # may have been applied, so only reads (or unsent requests) are tried again.
                if sent and request is not None:
                    raise self._fate(method, request, exc) from exc
                if attempt == 2:
                    raise errors.OwnerUnavailable(
                        f"lost the owner of {self.dir} during {method}: {exc}; run "
                        "`graphmem doctor`; the journal keeps whatever was applied") from exc
        return _result(line)

    def _fate(self, method: str, request: str, exc: OSError) -> errors.GraphmemError:
        """What became of a write whose owner died before answering: the journal says (a new
        owner, started if need be, reads it)."""
        lost = f"lost the owner of {self.dir} during {method} ({exc})"
        try:
            status = self._request("request_status", (request,), {})
        except errors.GraphmemError as why:
            return errors.OwnerUnavailable(f"{lost}; whether it was stored is unknown ({why}): "
                                           "look (`graphmem list`) before retrying")
        if status["stored"]:
            shown = ", ".join(status["ids"][:10])
            return errors.StoredUnanswered(f"stored: {lost}, but the journal has the write"
                                           f"{' (' + shown + ')' if shown else ''}; do not retry")
        return errors.OwnerUnavailable(f"{lost}; it was not stored (the journal has no trace of "
                                       "it), so it is safe to retry")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in REMOTE_METHODS:
            raise AttributeError(name)
        return lambda *args, **kwargs: self._request(name, args, kwargs)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._sock is not None:
            self._sock.close()
        self._sock = self._reader = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def owner_running(data_dir: Path) -> bool:
    return answers(socket_address(data_dir))


def spawn_owner(config: Config, data_dir: Path) -> None:
    """Start a detached owner for this store; a second one started in a race exits at once."""
    log_dir = private_dir(data_dir / "logs")
    argv = [sys.executable, "-m", "graphmem", "owner", "--data-dir", str(data_dir)]
    if config.cwd:
        argv += ["--cwd", str(config.cwd)]
    if config.project:
        argv += ["--project", config.project]
    import subprocess

    with open(log_dir / "owner.stderr", "ab", opener=private_opener) as stderr:
        # A short-lived middle process starts the owner and exits at once, so the owner is
        # nobody's child: no zombie under a long-lived client, nothing left for us to reap.
        subprocess.run([sys.executable, "-c", _DETACH, *argv], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=stderr, close_fds=True,
                       env=os.environ.copy(), check=False, timeout=60)


_DETACH = ("import subprocess, sys; subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, "
           "stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True)")


def open_memory(config: Config | None = None, *, owner: bool | None = None,
                read_only: bool = False) -> Any:
    """A Memory or RemoteMemory for this config (see the module docstring for which)."""
    from graphmem.config import Config
    from graphmem.paths import find_project
    from graphmem.service import Memory

    config = config or Config.from_env()
    data_dir = Memory.data_dir_for(config)
    if owner is None:
        owner = env.text("owner") == "always"
        if env.text("owner") == "never":
            return Memory(config, read_only=read_only)
    if owner or owner_running(data_dir):
        ref = find_project(config.cwd)
        return RemoteMemory(config, data_dir, config.project or ref.name, ref.branch)
    from graphmem.owner.server import open_memory_with_retry

    if read_only:
        return Memory(config, read_only=True)
    return open_memory_with_retry(config, seconds=env.number("open_wait"))


def ask_running_owner(data_dir: Path, method: str, kwargs: dict[str, Any], *, project: str,
                      branch: str, checkout: str | None, timeout: float) -> Any:
    """One call to an owner that is already running, answered within `timeout` seconds or not
    at all (no retry, no start): the hooks' path. Raises OwnerUnavailable."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_address(data_dir))
        if not same_user(sock, protected_by_dir=not ABSTRACT_SOCKETS):
            raise errors.OwnerUnavailable(f"the owner address of {data_dir} is not held by you")
        request = {"method": method, "args": [], "kwargs": codec.encode(kwargs),
                   "context": {"project": project, "branch": branch, "actor": "hook",
                               "checkout": checkout}}
        sock.sendall((json.dumps(request, ensure_ascii=False) + "\n").encode())
        with sock.makefile("rb") as reader:
            line = reader.readline()
    except BlockingIOError as exc:  # its queue of connections is full: busy, as a timeout is
        raise errors.OwnerUnavailable(f"owner of {data_dir} timed out on {method} (busy: {exc})") from exc
    except (ConnectionRefusedError, FileNotFoundError) as exc:
        raise errors.OwnerUnavailable(f"{NOT_LISTENING} for {data_dir} ({exc})") from exc
    except (OSError, ValueError) as exc:
        raise errors.OwnerUnavailable(f"owner of {data_dir} did not answer {method}: {exc}") from exc
    finally:
        sock.close()
    if not line:
        raise errors.OwnerUnavailable(f"owner of {data_dir} closed the connection")
    return _result(line)


def _result(line: bytes) -> Any:
    """An owner's reply: the verb's result, or its error raised as ours."""
    response = json.loads(line)
    if response["ok"]:
        return codec.decode(response["result"])
    error = response["error"]
    cls = getattr(errors, error["type"], errors.GraphmemError)
    raise cls(error["message"])


STARTING_NAME = "owner.starting"  # pid of an owner a hook started and is not answering yet
STARTING_SECONDS = 30.0


def spawn_owner_detached(data_dir: Path, cwd: str) -> None:
    """Start an owner for this store without waiting for it (hooks warm it for later calls),
    unless a hook started one moments ago that is still starting: a second would only take CPU
    from the first and then wait for the store it holds."""
    log_dir = private_dir(data_dir / "logs")
    marker = log_dir / STARTING_NAME
    if _starting(marker):
        return
    argv = [sys.executable, "-m", "graphmem", "owner", "--data-dir", str(data_dir), "--cwd", cwd]
    # A session is starting: load the model now, so the first prompt finds the owner warm.
    environ = {**os.environ, env.name("owner_warm_after"): "0"}
    import subprocess

    with open(log_dir / "owner.stderr", "ab", opener=private_opener) as stderr:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=stderr, close_fds=True, start_new_session=True, env=environ)
    try:
        with open(marker, "w", encoding="utf-8", opener=private_opener) as handle:
            handle.write(f"{child.pid} {time.time()}")
    except OSError:
        pass  # without the marker a later hook may start a second owner, which then exits


def owner_starting(data_dir: Path) -> bool:
    """Whether a hook started an owner for this store moments ago that is still alive."""
    return _starting(data_dir / "logs" / STARTING_NAME)


def _starting(marker: Path) -> bool:
    """Whether the owner recorded in `marker` was started within STARTING_SECONDS and lives."""
    try:
        pid_text, started = marker.read_text(encoding="utf-8").split()
        pid, since = int(pid_text), time.time() - float(started)
    except (OSError, ValueError):
        return False
    if not 0 <= since < STARTING_SECONDS:
        return False
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or the pid now names another user's process
        return False
    return True
