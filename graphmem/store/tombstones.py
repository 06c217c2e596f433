"""Ids `forget` deleted, so that re-ingesting the spool or importing an export does not bring
them back. Only hashes are kept (`<store>/forgotten.ids`, mode 0600): one line per id, with the
hash of the item it was forgotten with (an observation goes with the item it fed), so the file
says nothing about what was forgotten. `Tombstones.lift` takes an item and its own ids off."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

FILE_NAME = "forgotten.ids"


def _hash(item_id: str) -> str:
    return hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Tombstones:
    """The forgotten ids of one store."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / FILE_NAME

    def _lines(self) -> list[list[str]]:
        try:
            text = self.path.read_text(encoding="ascii", errors="replace")
        except FileNotFoundError:
            return []
        return [line.split() for line in text.splitlines() if line.strip()]

    def add(self, ids: Iterable[str], owner: str) -> None:
        """Bury `ids`, forgotten with the item `owner`."""
        lines = "".join(f"{_hash(i)} {_hash(owner)}\n" for i in dict.fromkeys(ids))
        if not lines:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, lines.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def buried(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that were forgotten."""
        ids = list(ids)
        hashes = {fields[0] for fields in self._lines()} if ids else set()
        return {i for i in ids if _hash(i) in hashes}

    def lift(self, item_ids: Iterable[str]) -> int:
        """Let these items, and the observations forgotten with them, be ingested or imported
        again; returns how many of the items were tombstoned."""
        lifted = {_hash(i) for i in item_ids}
        lines = self._lines()
        kept = [f for f in lines if not lifted & set(f)]
        if len(kept) == len(lines):
            return 0
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write("".join(" ".join(f) + "\n" for f in kept))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        return len({f[0] for f in lines if f[0] in lifted})
