"""Who may reach a store: the owner socket's peer check and the HTTP server's token and names.

Stdlib only: the git hooks' hand-off to the owner imports the socket side of it.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

TOKEN_NAME = "http.token"
# macOS: <sys/un.h> SOL_LOCAL and LOCAL_PEERCRED; struct xucred starts with version, uid.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 0x001
_XUCRED_SIZE = 76


def peer(sock: socket.socket) -> tuple[int | None, int | None]:
    """(uid, pid) of the process at the other end of a Unix socket; None where unknowable."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", raw)
            return uid, pid
        if sys.platform == "darwin":
            raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE)
            _version, uid = struct.unpack_from("2I", raw)
            return uid, None
    except OSError:
        pass
    return None, None


def same_user(sock: socket.socket, protected_by_dir: bool) -> bool:
    """True when the peer runs as our uid. Where the platform cannot say, only a socket inside
    a 0700 directory (which nobody else can reach) is trusted."""
    uid, _pid = peer(sock)
    if uid is None:
        return protected_by_dir
    return uid == os.getuid()


# ----- HTTP ------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_of(header: str) -> str:
    """The name in a Host header, without its port."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def http_token(data_dir: Path, configured: str | None = None) -> tuple[str, Path | None]:
    """The bearer token `serve --http` requires: the configured one, else the store's token
    file (created with mode 0600 on first use). Returns (token, file or None)."""
    if configured:
        return configured, None
    from graphmem.paths import private_dir, write_private

    path = Path(data_dir) / TOKEN_NAME
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if not token:
        private_dir(path.parent)
        import secrets

        token = secrets.token_urlsafe(32)
        write_private(path, token + "\n")
    return token, path


def existing_token(data_dir: Path, configured: str | None = None) -> tuple[str | None, Path]:
    """What `doctor` shows: the token in use, without creating one."""
    path = Path(data_dir) / TOKEN_NAME
    if configured:
        return configured, path
    try:
        return path.read_text(encoding="utf-8").strip() or None, path
    except OSError:
        return None, path


class RequestGuard:
    """Refuses an HTTP request unless its Host (and Origin, when sent) is an allowed name and it
    carries the bearer token: a web page the user visits can neither rebind a name to
    127.0.0.1 nor send the token it does not know."""

    def __init__(self, token: str, extra_hosts: Iterable[str] = ()) -> None:
        self.token = token.encode()
        self.extra_hosts = {h.strip().lower() for h in extra_hosts if h.strip()}

    def allowed_host(self, name: str) -> bool:
        return is_loopback(name) or name in self.extra_hosts

    def refusal(self, headers: Mapping[str, str]) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        import hmac
        from urllib.parse import urlsplit

        host = headers.get("host")
        if not host or not self.allowed_host(_host_of(host)):
            return 403, "host not allowed"
        origin = headers.get("origin")
        if origin is not None:
            origin_host = urlsplit(origin).hostname if "://" in origin else None
            if not origin_host or not self.allowed_host(origin_host):
                return 403, "origin not allowed"
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(),
                                                                 self.token):
            return 401, "missing or wrong bearer token"
        return None
