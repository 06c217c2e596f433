"""What a team's administrator does to a PostgreSQL server: grant a role read or write on a
project (row-level security in the database enforces it), and move a project's memory between
the embedded store and the server, its journal (the op log there) with it."""

from __future__ import annotations

from graphmem.store.postgres import PostgresStore


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
