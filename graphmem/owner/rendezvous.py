"""Where an owner and its clients meet: the owner's socket address, whether something answers
there, and the note an owner that could not open the store leaves for the clients waiting on it.

Light on purpose: the prompt hook imports it on every prompt."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from graphmem.errors import GraphmemError, StoreUnavailable
from graphmem.paths import DIR_MODE, private_dir, private_opener

FAILED_NAME = "owner.failed"  # why the last owner could not open the store (for its clients)
ABSTRACT_SOCKETS = sys.platform.startswith("linux")


def socket_address(data_dir: Path) -> str:
    """Abstract-namespace address (Linux): it vanishes with the process, so a dead owner leaves
    nothing behind for the next client to trip over. Elsewhere a socket file in a 0700
    directory of this user's (short: socket paths are limited to ~104 bytes)."""
    digest = hashlib.sha1(str(Path(data_dir).resolve()).encode()).hexdigest()[:20]
    if ABSTRACT_SOCKETS:
        return f"\0graphmem-owner-{digest}"
    return str(_socket_dir() / f"{digest}.sock")


def _socket_dir() -> Path:
    import tempfile

    directory = private_dir(Path(tempfile.gettempdir()) / f"graphmem-{os.getuid()}")
    info = directory.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or directory.is_symlink():
        raise StoreUnavailable(f"{directory} is not a private directory of this user "
                               f"(mode {oct(info.st_mode & 0o777)}, uid {info.st_uid}); remove it")
    os.chmod(directory, DIR_MODE)
    return directory


def answers(address: str) -> bool:
    """Whether something listens at an owner address (connect only: nothing is sent)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(address)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def record_start_failure(data_dir: Path, exc: GraphmemError) -> None:
    """Leave why this owner could not open the store for the clients waiting for it."""
    try:
        private_dir(data_dir / "logs")
        with open(data_dir / "logs" / FAILED_NAME, "w", encoding="utf-8",
                  opener=private_opener) as handle:
            json.dump({"ts": time.time(), "pid": os.getpid(), "type": type(exc).__name__,
                       "message": str(exc)}, handle)
    except OSError:
        pass  # the clients then wait out their start timeout instead


def start_failure(data_dir: Path, since: float) -> dict[str, Any] | None:
    """{"type", "message"} of an owner that failed to open the store at or after `since`."""
    try:
        record = json.loads((Path(data_dir) / "logs" / FAILED_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not record.get("ts", 0) >= since:
        return None
    return record
