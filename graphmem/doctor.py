"""`graphmem doctor`: what state every moving part is in, and what to do about problems."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from graphmem import space
from graphmem.config import Config


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _recent_owner_errors(log: Path, n: int = 5) -> list[str]:
    if not log.exists():
        return []
    errors = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-2000:]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("error"):
            when = time.strftime("%m-%d %H:%M", time.localtime(record["ts"]))
            errors.append(f"{when} {record['method']}: {record['error'].get('message', '')[:120]}")
    return errors[-n:]


def _journal_state(data_dir: Path) -> dict[str, Any]:
    """A full read of the journal: intact records, corrupt ones, a torn tail, what was set aside."""
    from graphmem.paths import JOURNAL_NAME
    from graphmem.store.journal import Journal

    return {**Journal(data_dir / JOURNAL_NAME).verify(), "applied_seq": None}


def _journal_checks(journal: dict[str, Any]) -> list[dict[str, str]]:
    checks = []
    if journal["corrupt"]:
        checks.append({"level": "warn", "what": f"{len(journal['corrupt'])} corrupt journal "
                       f"record(s) skipped (lines {', '.join(map(str, journal['corrupt'][:5]))})",
                       "fix": "their changes are missing from a rebuild; `graphmem forget` or any "
                       "journal rewrite moves them to journal.jsonl.torn"})
    if journal["torn_tail_bytes"]:
        checks.append({"level": "warn", "what": f"{journal['torn_tail_bytes']} bytes of a torn "
                       "journal record at the end", "fix": "cut off on the next write (an "
                       "interrupted write: it was never acknowledged)"})
    if journal["set_aside_bytes"]:
        checks.append({"level": "info", "what": f"{journal['set_aside_bytes']} bytes of torn or "
                       "corrupt journal records kept in journal.jsonl.torn",
                       "fix": "kept for the record; delete the file once you have looked"})
    applied = journal["applied_seq"]
    if applied is not None and applied < journal["last_seq"]:
        checks.append({"level": "warn", "what": f"graph applied journal seq {applied}, the "
                       f"journal's last is {journal['last_seq']}",
                       "fix": "the next open catches the graph up from the journal"})
    elif applied is not None and applied > journal["last_seq"]:
        checks.append({"level": "error", "what": f"graph applied journal seq {applied}, beyond "
                       f"the journal's last ({journal['last_seq']}): the journal lost records",
                       "fix": "do not rebuild yet: `graphmem export -o keep.jsonl`, then "
                       "`graphmem rebuild` and `graphmem import keep.jsonl`"})
    return checks


def _server_state(config: Config, project: str,
                  checks: list[dict[str, str]]) -> dict[str, Any] | None:
    """The PostgreSQL server the project is on (None when it is embedded), with what is wrong."""
    if not config.database_url:
        return None
    from graphmem.errors import GraphmemError
    from graphmem.store.serveradmin import state

    try:
        server = state(config.database_url, project)
    except GraphmemError as exc:
        checks.append({"level": "error", "what": f"the server cannot be reached: {exc}",
                       "fix": "check GRAPHMEM_DATABASE_URL and the server; hook events keep "
                       "spooling here and are ingested once it answers"})
        return {"server": str(exc), "records": 0, "last_seq": 0, "role": None, "access": [],
                "owner": False}
    if not server["owner"] and not server["access"]:
        checks.append({"level": "error", "what": f"role {server['role']} has no grant on "
                       f"project {project}: it sees and writes nothing of it",
                       "fix": f"ask the tables' owner: graphmem grant {server['role']} read|write"})
    return server


def diagnose(config: Config) -> dict[str, Any]:
    """A dict of checks; `ok` is False when something needs the user's attention."""
    from graphmem.access import existing_token
    from graphmem.capture.spool import Spool
    from graphmem.hooks import recent_problems
    from graphmem.owner.client import RemoteMemory, owner_running
    from graphmem.paths import find_project, graphmem_home, wider_than_private
    from graphmem.service import Memory

    data_dir = Memory.data_dir_for(config)
    ref = find_project(config.cwd)
    checks: list[dict[str, str]] = []
    owner: dict[str, Any] = {"running": owner_running(data_dir)}
    if owner["running"]:
        with RemoteMemory(config, data_dir, ref.name, ref.branch, start=False) as remote:
            owner.update(remote.ping())
    spool = Spool(data_dir / "spool")
    pending = spool.pending_bytes()
    lost_events = spool.take_lost()
    no_room = space.shortage(data_dir, [data_dir / "graph.kuzu", data_dir / "journal.jsonl"],
                             config.min_free_mb * 1_000_000)
    store_bytes = _dir_size(data_dir / "graph.kuzu") + _dir_size(data_dir / "journal.jsonl")
    hook_problems = recent_problems(10)
    owner_errors = _recent_owner_errors(data_dir / "logs" / "owner.log")
    if not data_dir.exists():
        checks.append({"level": "info", "what": "no store yet",
                       "fix": "it is created on first use (graphmem init)"})
    if pending > 1_000_000 and not owner["running"]:
        checks.append({"level": "warn", "what": f"{pending:,} bytes of hook events not ingested",
                       "fix": "run `graphmem ingest`"})
    if owner["running"] and owner.get("waiting", 0) > 5:
        checks.append({"level": "warn", "what": f"{owner['waiting']} requests queued at the owner",
                       "fix": "a long operation (index, import-git, rebuild) is running; wait"})
    if lost_events:
        checks.append({"level": "warn", "what": f"{lost_events} hook events could not be "
                       "spooled since the last doctor (disk full?) and are lost",
                       "fix": "free disk space; the count restarts now"})
    if no_room:
        checks.append({"level": "error", "what": f"writes are refused: {no_room}",
                       "fix": "free disk space (reads keep working)"})
    if hook_problems:
        checks.append({"level": "warn", "what": f"{len(hook_problems)} recent hook problems",
                       "fix": "see the lines below; hooks never block the agent"})
    if owner_errors:
        checks.append({"level": "warn", "what": f"{len(owner_errors)} recent owner errors",
                       "fix": "see the lines below"})
    roots = {data_dir, Path(config.home or graphmem_home())}
    loose = sorted({p for root in roots for p in wider_than_private(root, repair=True)})
    if loose:
        checks.append({"level": "info", "what": f"{len(loose)} files or directories were "
                       "readable by other users", "fix": "made private (0600 files, 0700 dirs)"})
    token, token_file = existing_token(data_dir, config.http_token)
    server = _server_state(config, config.project or ref.name, checks)
    journal = _journal_state(data_dir)
    if server is not None:
        journal = {**journal, "records": server["records"], "last_seq": server["last_seq"]}
    elif (data_dir / "graph.kuzu").exists() and not owner["running"]:
        try:
            probe = Memory(config, read_only=True)
            journal["applied_seq"] = probe.store.applied_seq
            probe.close()
        except Exception as exc:  # noqa: BLE001 - doctor reports whatever is wrong
            checks.append({"level": "error", "what": f"store cannot be opened: {exc}",
                           "fix": "run `graphmem rebuild` (the journal has everything)"})
    checks += _journal_checks(journal)
    return {"ok": not any(c["level"] == "error" for c in checks), "journal": journal,
            "project": ref.name, "server": server,
            "branch": ref.branch, "data_dir": str(data_dir), "owner": owner,
            "spool_pending_bytes": pending, "lost_hook_events": lost_events,
            "store_bytes": store_bytes, "checks": checks,
            "hook_problems": hook_problems, "owner_errors": owner_errors,
            "http_token": token, "http_token_file": None if config.http_token else str(token_file),
            "repaired_modes": [str(p) for p in loose]}


def render(report: dict[str, Any]) -> str:
    owner = report["owner"]
    lines = [f"project   {report['project']} ({report['branch'] or 'no branch'})",
             f"store     {report['data_dir']} ({report['store_bytes'] / 1e6:.1f} MB)",
             "owner     " + (f"running, pid {owner['pid']}, {owner['served']} calls served, "
                            f"{owner['waiting']} waiting, model "
                            f"{'loaded' if owner['model_loaded'] else 'not loaded yet'}"
                            if owner["running"] else "not running (started on demand)"),
             f"spool     {report['spool_pending_bytes']:,} bytes waiting to be ingested",
             _server_line(report["server"]) if report["server"] else _journal_line(report["journal"]),
             "http      " + (f"bearer token {report['http_token']} ("
                            + (f"in {report['http_token_file']})" if report["http_token_file"]
                               else "from GRAPHMEM_HTTP_TOKEN)")
                            if report["http_token"] else "no token yet (`graphmem serve --http` "
                            "creates one)")]
    for check in report["checks"]:
        lines.append(f"{check['level']:<9} {check['what']} → {check['fix']}")
    lines += [f"  hook: {p}" for p in report["hook_problems"]]
    lines += [f"  owner: {e}" for e in report["owner_errors"]]
    if not report["checks"]:
        lines.append("all good")
    return "\n".join(lines)


def _server_line(server: dict[str, Any]) -> str:
    if server["role"] is None:
        return f"server    unreachable ({server['server']})"
    access = "owner of the tables" if server["owner"] else "/".join(server["access"]) or "no grant"
    return (f"server    {server['server']} as {server['role']} ({access}); op log: "
            f"{server['records']:,} records{'' if server['owner'] else ' of yours'}, "
            f"last seq {server['last_seq']}")


def _journal_line(journal: dict[str, Any]) -> str:
    applied = journal["applied_seq"]
    return (f"journal   {journal['records']:,} records, last seq {journal['last_seq']}, graph at "
            f"{'?' if applied is None else applied}; {len(journal['corrupt'])} corrupt, "
            f"{journal['torn_tail_bytes']} torn bytes at the end, "
            f"{journal['set_aside_bytes']} bytes set aside")
