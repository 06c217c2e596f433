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
