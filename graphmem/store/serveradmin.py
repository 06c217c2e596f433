"""What a team's administrator does to a PostgreSQL server: grant a role read or write on a
project (row-level security in the database enforces it), and move a project's memory between
the embedded store and the server, its journal (the op log there) with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput
from graphmem.paths import DB_NAME, JOURNAL_NAME, private_dir
from graphmem.store.journal import Journal
from graphmem.store.postgres import PostgresStore, shown
from graphmem.store.writer import Writer


def grant(url: str, member: str, project: str, access: str) -> list[dict[str, str]]:
    """As the tables' owner at `url`: let `member` read or write `project` ('none' takes the
    access away); returns the project's grants."""
    store = PostgresStore(url)
    try:
        if access == "none":
            store.revoke(member, project)
        else:
            store.grant(member, project, access)
        return [g for g in store.grants() if g["project"] == project]
    finally:
        store.close()


def to_server(directory: Path, url: str) -> dict[str, int]:
    """Move the embedded store in `directory` to the server: its journal's records appended
    to the op log (with their numbers when the op log is empty) and applied there. The local
    files are left as they were. Returns records moved and rows per table on the server."""
    journal = Journal(directory / JOURNAL_NAME)
    if not journal.path.exists():
        raise InvalidInput(f"no journal at {journal.path}: nothing to move")
    store = PostgresStore(url)
    try:
        moved = store.load(journal.records())
        return {"ops": moved, **store.counts()}
    finally:
        store.close()


def to_file(url: str, directory: Path) -> dict[str, int]:
    """Move a project's store from the server into an embedded one in `directory`: the op log
    (what this role sees of it) becomes the journal, and the graph is built from it. Refuses
    when the directory already holds a journal or a graph."""
    journal = Journal(directory / JOURNAL_NAME)
    present = [str(p) for p in (journal.path, directory / DB_NAME) if p.exists()]
    if present:
        raise InvalidInput(f"{' and '.join(present)} already exist: move them aside first")
    store = PostgresStore(url, read_only=True)
    try:
        records = store.records()
    finally:
        store.close()
    private_dir(directory)
    journal.load(records)
    return Writer(directory, journal, database_url="").rebuild_file()


def state(url: str, project: str) -> dict[str, Any]:
    """What doctor shows of a server: the op log (the records this role may see), who this
    role is, its grants on the project."""
    store = PostgresStore(url, read_only=True)
    try:
        member = store.member
        records, last = store.log_size() if member else (0, 0)
        grants = store.grants() if member else []
        return {"server": shown(url), "role": store.role, "records": records, "last_seq": last,
                "access": sorted({g["access"] for g in grants if g["project"] == project}),
                "owner": not store.row_security}
    finally:
        store.close()
