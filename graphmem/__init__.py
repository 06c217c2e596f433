"""graphmem: knowledge-graph memory for AI coding agents.

Importing the package is cheap (the hook fast path relies on it); the public names below load
their modules on first use.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Memory": "graphmem.service",
    "Config": "graphmem.config",
    "RetrievalWeights": "graphmem.config",
    "MemoryItem": "graphmem.models",
    "Entity": "graphmem.models",
    "Link": "graphmem.models",
    "Observation": "graphmem.models",
    "Scope": "graphmem.models",
    "Hit": "graphmem.models",
    "SearchResult": "graphmem.models",
    "Brief": "graphmem.models",
    "ItemDetail": "graphmem.models",
    "EvidenceExcerpt": "graphmem.models",
    "ItemKind": "graphmem.models",
    "ItemStatus": "graphmem.models",
    "EntityKind": "graphmem.models",
    "GraphmemError": "graphmem.errors",
    "InvalidInput": "graphmem.errors",
    "NotFound": "graphmem.errors",
    "StoreUnavailable": "graphmem.errors",
    "StoreCorrupt": "graphmem.errors",
    "OwnerUnavailable": "graphmem.errors",
}

__all__ = [
    "Brief", "Config", "Entity", "EntityKind", "EvidenceExcerpt", "GraphmemError", "Hit",
    "InvalidInput", "ItemDetail", "ItemKind", "ItemStatus", "Link", "Memory", "MemoryItem",
    "NotFound", "Observation", "OwnerUnavailable", "RetrievalWeights", "Scope", "SearchResult",
    "StoreCorrupt", "StoreUnavailable",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphmem' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
