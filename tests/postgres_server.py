"""A real PostgreSQL 16 with pgvector for tests: the `pgserver` wheel's binaries, a fresh cluster in a
temp dir, listening on 127.0.0.1 only (no Unix socket), stopped at the end of the session.

PostgreSQL refuses to run as root: as root the cluster belongs to `nobody` and its directory lies
outside pytest's temp dirs (those are private to root). Durability is off (fsync, full pages):
these clusters are thrown away.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

LOCAL_ONLY = "-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=50"
# A crash of the server loses no acknowledged commit (the WAL is written before a commit returns),
# a crash of the machine may (nothing is fsynced).
COMMITS_KEPT = f"{LOCAL_ONLY} -c fsync=off -c full_page_writes=off"
SERVER_OPTIONS = f"{COMMITS_KEPT} -c synchronous_commit=off"


def _pgserver() -> Any:
    with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver
    return pgserver


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A started cluster: `url` for user postgres (trust authentication), database postgres."""

    def __init__(self, options: str = SERVER_OPTIONS) -> None:
        """Start it with these server options; RuntimeError, saying why, when the server cannot
        start here."""
        self.options = options
        try:
            self._pgserver = _pgserver()
        except ImportError as exc:
            raise RuntimeError(f"the pgserver wheel is not installed ({exc})") from exc
        self.root = Path(tempfile.mkdtemp(prefix="graphmem-pg-"))
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
            self._as = {"user": nobody.pw_uid, "group": nobody.pw_gid}
        self.data = self.root / "data"
        self.port = _free_port()
        try:
            self._pgserver.initdb(["--auth=trust", "--encoding=utf8", "--username=postgres"],
                                  pgdata=self.data, timeout=120, **self._as)
            self.start()
        except (OSError, subprocess.SubprocessError) as exc:
            log = self.root / "log"
            said = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            shutil.rmtree(self.root, ignore_errors=True)
            raise RuntimeError(f"pgserver's PostgreSQL did not start: {exc} {said}") from exc
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server (again, after `halt`) on its port."""
        self._pgserver.pg_ctl(["-w", "-t", "60", "-o", f"-p {self.port} {self.options}",
                               "-l", str(self.root / "log"), "start"],
                              pgdata=self.data, timeout=90, **self._as)

    def halt(self) -> None:
        """Stop the server at once, as a crash or an outage would, keeping its data."""
        self._pgserver.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.data, timeout=60,
                              **self._as)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        try:
            self.halt()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def database_url(server_url: str, name: str) -> str:
    return server_url.rsplit("/", 1)[0] + "/" + name
