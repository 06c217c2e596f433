"""Room to write: free disk space and the process's file size limit, checked before writing.

Kuzu aborts the whole process when a write to its files fails (a full disk, `ulimit -f`), so
the store is opened read-write, and each journal op written, only while there is room to spare.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def shortage(directory: Path, files: Iterable[Path], min_free: int) -> str | None:
    """Why writing to the store in `directory` is unsafe now, or None when there is room."""
    try:
        info = os.statvfs(directory)
    except OSError:
        return None  # not there yet: creating it will tell
    free = info.f_bavail * info.f_frsize
    if free < min_free:
        return (f"only {free / 1e6:.1f} MB free on the disk of {directory}; graphmem keeps "
                f"{min_free / 1e6:.0f} MB free so its database is never cut off mid-write "
                "(GRAPHMEM_MIN_FREE_MB)")
    limit = _file_size_limit()
    if limit is not None:
        largest = max((_size(path) for path in files), default=0)
        if largest + min(min_free, limit) > limit:
            return (f"the file size limit (ulimit -f: {limit:,} bytes) leaves no room to grow "
                    f"the store's {largest:,}-byte files")
    return None


def _file_size_limit() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
