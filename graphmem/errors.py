"""Errors graphmem raises; every backend exception is translated into one of these."""


class GraphmemError(Exception):
    """Base of every error graphmem raises on purpose."""

    exit_code = 1


class InvalidInput(GraphmemError):
    """The caller gave something graphmem cannot accept (empty text, bad JSON, bad id...)."""

    exit_code = 2


class NotFound(GraphmemError):
    """An id, entity or file that does not exist."""

    exit_code = 3


class StoreUnavailable(GraphmemError):
    """The store cannot be opened right now (locked by another process, read-only dir)."""

    exit_code = 4


class StoreCorrupt(GraphmemError):
    """The database files are damaged; `graphmem rebuild` restores them from the journal."""

    exit_code = 5


class OwnerUnavailable(GraphmemError):
    """The process that owns the store did not answer."""

    exit_code = 6


class NoSpace(GraphmemError):
    """No room to write safely (disk full, quota, file size limit): nothing was stored."""

    exit_code = 7


class StoreIOError(GraphmemError):
    """The operating system failed a read or write of the store (an I/O error)."""

    exit_code = 8


class StoredUnanswered(OwnerUnavailable):
    """The owner died before answering a write, but the journal has it: stored, do not retry
    (the CLI exits 0)."""

    exit_code = 0


class IndexPending(GraphmemError):
    """The write is stored in the journal, but the graph could not take it yet: not a failure,
    so the CLI exits 0; the next open or `graphmem rebuild` indexes it."""

    exit_code = 0


def from_os_error(exc: OSError, doing: str) -> GraphmemError:
    """One of ours for an OSError met while `doing` something ("writing the journal")."""
    import errno

    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", -1)):
        return NoSpace(f"no room {doing}: {reason}")
    return StoreIOError(f"I/O error {doing}: {reason}")
