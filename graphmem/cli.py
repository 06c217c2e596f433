"""The graphmem command line: a thin surface over Memory; errors are one line and an exit code."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphmem import env, kinds
from graphmem.errors import (
    GraphmemError,
    IndexPending,
    InvalidInput,
    StoredUnanswered,
    from_os_error,
)

Handler = Callable[[argparse.Namespace], Any]
COMMANDS: dict[str, tuple[Handler, Callable[[argparse.ArgumentParser], None]]] = {}


def command(name: str, configure: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    """Register a subcommand; the handler's docstring is its help text."""
    def wrap(handler: Handler) -> Handler:
        COMMANDS[name] = (handler, configure)
        return handler
    return wrap


def _config(args: argparse.Namespace) -> Any:
    from graphmem.config import Config

    overrides = {"cwd": getattr(args, "cwd", None), "project": getattr(args, "project", None),
                 "data_dir": getattr(args, "data_dir", None)}
    if getattr(args, "no_embed", False):
        overrides["embed"] = False
    return Config.from_env(**overrides)


def _memory(args: argparse.Namespace, read_only: bool = False) -> Any:
    """The project's memory: through the owner process when one runs, else opened directly."""
    from graphmem.owner.client import open_memory

    memory = open_memory(_config(args), read_only=read_only)
    memory.actor = f"cli:{args.command}"
    return memory


def _ask(args: argparse.Namespace, call: Callable[[Any], Any]) -> Any:
    """Open the project's memory, make one call of it and close it: most commands' whole work."""
    with _memory(args) as memory:
        return call(memory)


def emit(args: argparse.Namespace, data: Any, human: Callable[[Any], str]) -> None:
    if getattr(args, "json", False):
        print(json.dumps(_plain(data), ensure_ascii=False, indent=2))
    else:
        text = human(data)
        if text:
            print(text)


def _plain(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    if isinstance(data, list):
        return [_plain(d) for d in data]
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    return data


def _read_text(value: str | None) -> str:
    """TEXT argument, or stdin when it is '-' or missing; invalid UTF-8 is an error, not a crash."""
    if value is not None and value != "-":
        return value
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"input is not valid UTF-8 (byte {exc.start}); is it binary?") from exc


def _age(ts: float) -> str:
    seconds = max(0.0, time.time() - ts)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _item_line(item: Any) -> str:
    status = "" if item.status.value == "active" else f" [{item.status.value}]"
    return f"{item.id}  {item.kind.value:<10} {_age(item.created_at):>8}  {item.title[:90]}{status}"


# ----- commands -----------------------------------------------------------------------------
@command("where")
def cmd_where(args: argparse.Namespace) -> None:
    """Print where this project's memory is stored."""
    from graphmem.config import Config
    from graphmem.paths import find_project, graphmem_home, store_dir

    config = Config.from_env(cwd=args.cwd)
    ref = find_project(config.cwd)
    data = {"project": config.project or ref.name, "branch": ref.branch,
            "data_dir": str(config.data_dir or store_dir(ref, config.home or graphmem_home()))}
    emit(args, data, lambda d: d["data_dir"])


@command("config")
def cmd_config(args: argparse.Namespace) -> None:
    """List every GRAPHMEM_* variable: its meaning, its default and whether it is set here."""
    rows = [{"name": v.name, "set": env.raw(v.key) is not None, "default": v.default_value(),
             "meaning": v.meaning} for v in env.VARIABLES.values()]
    emit(args, rows, lambda rs: "\n".join(
        f"{r['name']}{' (set)' if r['set'] else ''}  default {json.dumps(r['default'])}\n"
        f"    {r['meaning']}" for r in rs))


@command("init")
def cmd_init(args: argparse.Namespace) -> None:
    """Create this project's store (other commands create it on demand too)."""
    with _memory(args) as memory:
        emit(args, memory.stats(), lambda s: f"store ready: {s['data_dir']} ({s['items']} items)")


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="?", help="the fact; '-' or nothing reads stdin")
    p.add_argument("--kind", default="note", choices=kinds.WRITTEN)
    p.add_argument("--title", help="index line (default: the text's first sentence)")
    p.add_argument("--tag", action="append", default=[])
    p.add_argument("--file", action="append", default=[], help="a file the fact is about")
    p.add_argument("--symbol", action="append", default=[], help="a function/class it is about")
    p.add_argument("--confidence", type=float)
    p.add_argument("--pin", action="store_true", help="never expires")
    p.add_argument("--no-embed", action="store_true", help=argparse.SUPPRESS)


@command("add", _add_args)
def cmd_add(args: argparse.Namespace) -> None:
    """Record a memory: a decision, pitfall, convention, env fact, task or note."""
    text = _read_text(args.text).strip()
    title, body = (args.title, text) if args.title else (text, "")
    with _memory(args) as memory:
        item = memory.add(title or "", body, kind=args.kind, tags=args.tag, files=args.file,
                          symbols=args.symbol, confidence=args.confidence, source="user",
                          pinned=args.pin)
        merged = item.hit_count > 0
        emit(args, item, lambda i: f"{'merged into' if merged else 'added'} {i.id}  {i.title[:80]}")


def _id_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")


@command("get", _id_arg)
def cmd_get(args: argparse.Namespace) -> None:
    """Show one memory in full, with its links and status."""
    detail = _ask(args, lambda memory: memory.get(args.id))

    def human(d: Any) -> str:
        item = d.item
        lines = [f"{item.title}", (f"  id {item.id} · {item.kind.value} · {item.status.value}"
                 f"{' (' + item.stale_reason + ')' if item.stale_reason else ''} · confidence "
                 f"{item.confidence:.2f} · source {item.source.value} · {_age(item.created_at)}")]
        if item.body and item.body != item.title:
            lines += ["", item.body]
        links = [ln for ln in d.links if "entity" in ln]
        if links:
            lines += ["", "linked to:"] + [f"  {ln['kind'].lower():<12} {ln['entity']['id']}"
                                           for ln in links]
        lines.append(f"\n{d.evidence_count} evidence record(s) · {d.tokens} tokens")
        return "\n".join(lines)
    emit(args, detail, human)


def _list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", choices=list(kinds.ItemKind))
    p.add_argument("--status", choices=["active", "stale", "superseded", "archived"])
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--all-projects", action="store_true")


@command("list", _list_args)
def cmd_list(args: argparse.Namespace) -> None:
    """List memories, newest first."""
    with _memory(args) as memory:
        items = memory.list(kind=args.kind, status=args.status, limit=args.limit,
                            all_projects=args.all_projects)
    emit(args, items, lambda rows: "\n".join(_item_line(i) for i in rows) or "no memories yet")


@command("forget", _id_arg)
def cmd_forget(args: argparse.Namespace) -> None:
    """Delete a memory for real: graph, indexes, evidence and journal."""
    with _memory(args) as memory:
        title = memory.get_item(args.id).title
        result = memory.forget(args.id)
    emit(args, {"id": args.id, **result}, lambda r: f"forgot {args.id}  {title[:80]}")


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", default="")
    p.add_argument("--file", action="append", default=[], help="a file you are working on")
    p.add_argument("--symbol", action="append", default=[], help="a function/class in play")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--kind", action="append", choices=list(kinds.ItemKind))
    p.add_argument("--budget", type=int)
    p.add_argument("--explain", action="store_true", help="every candidate's rank per channel, "
                   "and where each context file and function came from")
    p.add_argument("--live", action="store_true", help="without --file/--symbol: what the agent "
                   "session read and edited and the uncommitted changes are the context")
    p.add_argument("--session", default="", help="with --live: that agent session (default: "
                   "the latest of this checkout)")
    p.add_argument("--all-projects", action="store_true")


@command("search", _search_args)
def cmd_search(args: argparse.Namespace) -> None:
    """Find memories: entity match + graph + vector + keyword, inside a token budget."""
    from graphmem.retrieve.render import hit_text

    with _memory(args) as memory:
        result = memory.search(args.query, files=args.file, symbols=args.symbol, k=args.k,
                               kinds=args.kind, budget=args.budget, explain=args.explain,
                               all_projects=args.all_projects,
                               live=args.live or bool(args.session), session_id=args.session)

    def human(r: Any) -> str:
        lines = [hit_text(h) + "\n" for h in r.hits] or ["no memory matches"]
        lines.append(f"{len(r.hits)} of {r.candidates} candidates · {r.tokens}/{r.budget} tokens"
                     f"{' · cut by budget' if r.truncated else ''}")
        if r.context:
            lines.append("\ncontext  weight  from")
            lines += [f"  {c['kind']:<6} {c['weight']:>6.2f}  {c['name']}  ({c['source']})"
                      for c in r.context]
        if r.explain:
            from graphmem.retrieve.fusion import CHANNELS

            lines.append(f"\nrank  score     {' '.join(CHANNELS)}  status  title")
            for row in r.explain:
                cells = " ".join(f"{row[c + '_rank'] or '-'!s:>6}" for c in CHANNELS)
                lines.append(f"{row['rank']:>4}  {row['score']:.5f} {cells}  {row['status']:<7} "
                             f"{row['title'][:50]}")
        return "\n".join(lines)
    emit(args, result, human)


@command("stats")
def cmd_stats(args: argparse.Namespace) -> None:
    """Counts of memories by kind and status, entities, links and store size."""
    stats = _ask(args, lambda memory: memory.stats())

    def human(s: dict[str, Any]) -> str:
        lines = [f"project   {s['project']} ({s['branch'] or 'no branch'})",
                 f"store     {s['data_dir']}", f"items     {s['items']}"]
        lines += [f"  {k:<12}{v}" for k, v in sorted(s["by_kind"].items())]
        lines += ["status    " + ", ".join(f"{k} {v}" for k, v in sorted(s["by_status"].items()))]
        lines += [f"entities  {s['entities']}", f"vectors   {s['vectors']}",
                  f"evidence  {s['observations']} observations",
                  "links     " + ", ".join(f"{k} {v}" for k, v in s["links"].items() if v)]
        return "\n".join(lines)
    emit(args, stats, human)


def _rebuild_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reembed", action="store_true",
                   help="embed every item again with the configured model (by default only "
                   "items without a vector of that model are embedded)")


@command("rebuild", _rebuild_args)
def cmd_rebuild(args: argparse.Namespace) -> None:
    """Recreate the database from the journal."""
    from graphmem.owner.client import open_memory, owner_running
    from graphmem.service import Memory

    config = _config(args)
    if owner_running(Memory.data_dir_for(config)):
        with open_memory(config) as memory:
            result = memory.rebuild(reembed=args.reembed)
    else:
        with Memory(config, rebuild=True, reembed=args.reembed) as memory:
            result = memory.rebuild_result
    emit(args, result, lambda r: f"rebuilt from {r['ops']} journal ops: {r['Item']} items, "
                                 f"{r['Entity']} entities, {r['ItemVector']} vectors "
                                 f"({r['embedded']} embedded)")


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
    p.add_argument("--output", "-o", help="file to write (default: stdout)")


@command("export", _export_args)
def cmd_export(args: argparse.Namespace) -> None:
    """Export this project's memories as JSON Lines (re-importable) or markdown."""
    from graphmem.exporting import to_markdown

    with _memory(args) as memory:
        records = memory.export_items()
        project = memory.project
    text = (to_markdown(project, records) if args.format == "markdown"
            else "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"exported {len(records)} memories to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a JSONL or markdown export")
    p.add_argument("--restore-forgotten", action="store_true",
                   help="also import items `forget` deleted (lifts their tombstones)")


@command("import", _import_args)
def cmd_import(args: argparse.Namespace) -> None:
    """Import memories from an export file (JSONL or markdown)."""
    from graphmem.exporting import read_export

    records = read_export(Path(args.file), max_bytes=_config(args).max_import_bytes)
    with _memory(args) as memory:
        count = memory.import_items(records, restore_forgotten=args.restore_forgotten)
    emit(args, {"imported": count}, lambda r: f"imported {r['imported']} memories")


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="repository root (default: the project root)")


@command("index", _index_args)
def cmd_index(args: argparse.Namespace) -> None:
    """Index the project's code with tree-sitter (incremental): files, symbols, imports."""
    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty() and (done == total or done % 50 == 0):
            width = 30
            filled = int(width * done / max(total, 1))
            print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files",
                  end="" if done < total else "\n", file=sys.stderr, flush=True)

    summary = _ask(args, lambda memory: memory.index_code(args.path, progress=progress))

    def human(s: dict[str, Any]) -> str:
        skipped = ", ".join(f"{v} {k}" for k, v in s["skipped"].items())
        lines = [f"indexed {s['files']} files ({s['parsed']} parsed, {s['removed']} removed), "
                 f"{s['symbols']} symbols in {s['seconds']:.2f} s"
                 + (f"; skipped {skipped}" if skipped else "")
                 + (f"; linked {s['resolved_mentions']} waiting mentions"
                    if s["resolved_mentions"] else "")
                 + (f"; {len(s['stale'])} memories now stale" if s["stale"] else "")]
        lines += [f"  warning: {w}" for w in s["warnings"][:10]]
        return "\n".join(lines)
    emit(args, summary, human)


@command("history", _id_arg)
def cmd_history(args: argparse.Namespace) -> None:
    """Who/what created and changed a memory, and when."""
    rows = _ask(args, lambda memory: memory.history(args.id))
    emit(args, rows, lambda rs: "\n".join(
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r['ts']))}  {r['by'] or '?':<18} "
        f"{r['op']:<13} " + json.dumps(r.get("fields") or r.get("links") or "", ensure_ascii=False)[:100]
        for r in rs))


@command("entities", _id_arg)
def cmd_entities(args: argparse.Namespace) -> None:
    """Show what a memory is linked to (files, symbols, errors, packages...)."""
    links = _ask(args, lambda memory: memory.entities(args.id))
    emit(args, links, lambda rows: "\n".join(
        f"{r['kind'].lower():<13} {r['entity']['id'] if 'entity' in r else r['target']}"
        f"{'  (unresolved)' if 'entity' in r and not r['entity']['resolved'] else ''}"
        for r in rows) or "no links")


def _related_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("entity", help="a file, function, class, error code, package, env var...")
    p.add_argument("--limit", type=int, default=20)


@command("related", _related_args)
def cmd_related(args: argparse.Namespace) -> None:
    """What memory knows about an entity and its code neighbours."""
    data = _ask(args, lambda memory: memory.related(args.entity, limit=args.limit))

    def human(d: dict[str, Any]) -> str:
        lines = ["entity:     " + ", ".join(e["id"] for e in d["entities"])]
        if d["neighbours"]:
            lines.append("neighbours: " + ", ".join(e["id"] for e in d["neighbours"][:10]))
        lines.append(f"memories ({len(d['items'])}):")
        lines += [f"  {'*' if r['direct'] else ' '} {r['item']['id']}  {r['item']['kind']:<10} "
                  f"{r['item']['title'][:80]}" for r in d["items"]]
        return "\n".join(lines)
    emit(args, data, human)


def _brief_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=int, help="token budget (default 400)")


@command("brief", _brief_args)
def cmd_brief(args: argparse.Namespace) -> None:
    """The session-start index an agent gets: one line per memory, inside a token budget."""
    result = _ask(args, lambda memory: memory.brief(args.budget))
    emit(args, result, lambda b: (b.text or "no memories yet") + f"\n({b.tokens}/{b.budget} tokens)")


@command("evidence", _id_arg)
def cmd_evidence(args: argparse.Namespace) -> None:
    """The redacted raw observations a memory was derived from."""
    rows = _ask(args, lambda memory: memory.evidence(args.id))
    emit(args, rows, lambda rs: "\n\n".join(
        f"[{r.event} {r.tool} {r.command}]".replace("  ", " ") + f"\n{r.text}" for r in rs)
        or "no evidence recorded for this memory")


def _log_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=20)


@command("log", _log_args)
def cmd_log(args: argparse.Namespace) -> None:
    """Recent retrievals: query, context, candidates, returned ids, tokens."""
    with _memory(args, read_only=False) as memory:
        rows = memory.retrieval_log(args.limit)
    emit(args, rows, lambda rs: "\n".join(
        f"{time.strftime('%m-%d %H:%M:%S', time.localtime(r['ts']))} {r['verb']:<7} "
        f"{r['candidates']:>4} cand → {len(r['returned']):>2} returned {r['tokens']:>5} tok  "
        f"{r['query'][:60]}" for r in rs) or "no retrievals logged yet")


def _extract_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="?", help="text to analyse (default: stdin, one text per line)")


@command("extract", _extract_args)
def cmd_extract(args: argparse.Namespace) -> None:
    """Show the entities graphmem would link a text to, as JSON Lines."""
    from graphmem.extract import text as textx

    texts = [args.text] if args.text else _read_text(None).splitlines()
    for line, mentions in zip(texts, textx.extract_many(texts, bare=True)):
        print(json.dumps({"text": line, "entities": [
            {"kind": mn.kind, "text": mn.text, "start": mn.start, "end": mn.end, "norm": mn.norm}
            for mn in mentions]}, ensure_ascii=False))


@command("redact")
def cmd_redact(args: argparse.Namespace) -> None:
    """Redact stdin to stdout: exactly what graphmem would store."""
    from graphmem.capture.redact import redact

    sys.stdout.write(redact(sys.stdin.buffer.read().decode("utf-8", "replace")))


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("rest", nargs=argparse.REMAINDER,
                   help="ITEMS QUERIES [--context none|files|files+functions] [--run-out FILE]")


@command("eval", _eval_args)
def cmd_eval(args: argparse.Namespace) -> None:
    """Evaluate retrieval on a JSONL dataset: recall@5/10, hit@10, MRR overall and per category."""
    from graphmem.evaluate import main as eval_main

    code = eval_main(args.rest + (["--json"] if args.json else []))
    if code:
        raise SystemExit(code)


def _sweep_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="show what would happen, change nothing")


@command("sweep", _sweep_args)
def cmd_sweep(args: argparse.Namespace) -> None:
    """Archive expired and cold memories (restorable); purge long-archived ones for real."""
    plan = _ask(args, lambda memory: memory.sweep(dry_run=args.dry_run))
    verb = "would" if args.dry_run else "did"

    def human(p: dict[str, Any]) -> str:
        lines = [(f"{verb} archive {len(p['archive_expired'])} expired, {len(p['archive_cold'])} "
                  f"cold; {verb} purge {len(p['purge'])} archived memories")]
        for key in ("archive_expired", "archive_cold", "purge"):
            lines += [f"  {key.replace('_', ' ')}: {i}" for i in p[key][:20]]
        return "\n".join(lines)
    emit(args, plan, human)


@command("restore", _id_arg)
def cmd_restore(args: argparse.Namespace) -> None:
    """Bring an archived memory back."""
    item = _ask(args, lambda memory: memory.restore(args.id))
    emit(args, item, lambda i: f"restored {i.id}  {i.title[:80]}")


def _feedback_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")
    p.add_argument("verdict", choices=["helpful", "wrong", "outdated"])
    p.add_argument("--note", default="")


@command("feedback", _feedback_args)
def cmd_feedback(args: argparse.Namespace) -> None:
    """Tell memory an item was helpful, wrong or outdated."""
    item = _ask(args, lambda memory: memory.feedback(args.id, args.verdict, args.note))
    emit(args, item, lambda i: f"{i.id}: confidence {i.confidence:.2f}, {i.status.value}")


def _graph_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("verb", choices=["export"])
    p.add_argument("--format", choices=["graphml", "gexf", "json"], default="graphml",
                   help="GraphML (yEd, networkx), GEXF (Gephi) or node-link JSON")
    p.add_argument("--output", "-o", help="file to write (default: stdout)")
    p.add_argument("--entity", help="only this entity's neighbourhood: a path, function, error...")
    p.add_argument("--hops", type=int, default=1, help="code-graph hops around --entity")
    p.add_argument("--kind", action="append", choices=list(kinds.ItemKind),
                   help="only memories of this kind (repeatable)")
    p.add_argument("--all-projects", action="store_true")


@command("graph", _graph_args)
def cmd_graph(args: argparse.Namespace) -> None:
    """Export the memory graph (typed nodes and edges) as GraphML, GEXF or node-link JSON."""
    from graphmem import graph

    with _memory(args, read_only=True) as memory:
        data = memory.to_networkx_data(None if args.all_projects else memory.project, args.kind,
                                       args.entity, args.hops)
    exported = graph.from_data(data)
    if not args.output:
        graph.export(exported, sys.stdout.buffer, args.format)
        return
    graph.export(exported, args.output, args.format)
    summary = {"output": args.output, "format": args.format,
               "nodes": exported.number_of_nodes(), "edges": exported.number_of_edges(),
               "items": exported.graph["items_shown"]}
    emit(args, summary, lambda s: f"exported {s['nodes']} nodes and {s['edges']} edges "
                                  f"({s['items']} memories) to {s['output']}")


def _stale_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("verb", choices=["update", "list"])
    which = p.add_mutually_exclusive_group()
    which.add_argument("--commit", help="the commit whose changes to check (default HEAD)")
    which.add_argument("--range", dest="rev_range", help="A..B: every change in the range")
    which.add_argument("--worktree", action="store_true", help="uncommitted changes too")


@command("stale", _stale_args)
def cmd_stale(args: argparse.Namespace) -> None:
    """Mark memories whose code changed as stale (update), or show them (list)."""
    with _memory(args) as memory:
        if args.verb == "list":
            rows = memory.stale_items()
            emit(args, rows, lambda rs: "\n".join(
                f"{r['item'].id}  {r['item'].title[:70]}\n    {r['reason']}" for r in rs)
                or "no stale memories")
            return
        report = memory.update_stale(commit=args.commit, rev_range=args.rev_range,
                                     worktree=args.worktree)
    emit(args, report, lambda r: json.dumps(_plain(r), default=str))


@command("verify", _id_arg)
def cmd_verify(args: argparse.Namespace) -> None:
    """You re-checked a memory against the current code: re-anchor it and clear stale."""
    result = _ask(args, lambda memory: memory.verify(args.id))
    emit(args, result, lambda r: f"verified {args.id}")


def _import_git_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="only commits after this date (git's --since syntax)")
    p.add_argument("--max", type=int, dest="max_commits", help="at most this many commits")
    p.add_argument("--no-embed", action="store_true", help="skip embeddings (faster)")


@command("import-git", _import_git_args)
def cmd_import_git(args: argparse.Namespace) -> None:
    """Bootstrap memory from git history: one item per meaningful commit, anchored to its code."""
    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rimporting commits {done}/{total}", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)

    with _memory(args) as memory:
        report = memory.import_git(since=args.since, max_commits=args.max_commits,
                                   progress=None if hasattr(memory, "_request") else progress,
                                   embed=False if args.no_embed else None)
    emit(args, report, lambda r: f"imported {r['imported']} of {r['candidates']} commits "
                                 f"({r['stale']} already stale at HEAD) in {r['seconds']:.1f} s"
                                 + (f"; {r['message']}" if r.get("message") else ""))


def _git_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("verb", choices=["install-hooks", "uninstall-hooks", "status"])


@command("git", _git_args)
def cmd_git(args: argparse.Namespace) -> None:
    """Install or remove graphmem's git hooks (post-commit/merge/checkout/rewrite)."""
    from graphmem.staleness import install as githooks

    where = args.cwd or "."
    action = {"install-hooks": githooks.install_hooks, "uninstall-hooks": githooks.uninstall_hooks,
              "status": githooks.hook_status}[args.verb]
    emit(args, action(where), lambda r: json.dumps(r, indent=2, default=str))


@command("ingest")
def cmd_ingest(args: argparse.Namespace) -> None:
    """Move captured hook events into memory and compress ended sessions (hooks run this)."""
    report = _ask(args, lambda memory: memory.ingest())
    emit(args, report, lambda r: f"ingested {r['events']} events, compressed "
                                 f"{r['sessions_compressed']} sessions into {len(r['items'])} "
                                 f"memories ({r['compressor']})")


@command("doctor")
def cmd_doctor(args: argparse.Namespace) -> None:
    """Say what is wrong (owner, spool, store, hooks, recent errors) and how to fix it."""
    from graphmem.doctor import diagnose, render

    report = diagnose(_config(args))
    emit(args, report, render)
    if not report["ok"]:
        raise SystemExit(1)


def _grant_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("member", help="a database role: a user, or a group role whose members all get "
                   "the access")
    p.add_argument("access", choices=["read", "write", "none"], help="none takes it away")
    p.add_argument("--url", help="the server, connecting as the owner of graphmem's tables "
                   "(default: GRAPHMEM_DATABASE_URL)")


@command("grant", _grant_args)
def cmd_grant(args: argparse.Namespace) -> None:
    """Let a database role read or write this project on the PostgreSQL server (as its owner)."""
    from graphmem.paths import find_project
    from graphmem.store.serveradmin import grant

    config = _config(args)
    url = args.url or config.database_url
    if not url:
        raise InvalidInput("no server: give --url postgresql://owner@host/db or set "
                           "GRAPHMEM_DATABASE_URL")
    project = config.project or find_project(config.cwd).name
    grants = grant(url, args.member, project, args.access)
    emit(args, grants, lambda g: "\n".join(f"{r['member']}: {r['access']} on {r['project']}"
                                           for r in g) or f"no one has access to {project}")


def _migrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, metavar="URL|file",
                   help="postgresql://…: move this project's embedded store to that server; file: "
                   "move it from its server (GRAPHMEM_DATABASE_URL) back to the embedded graph")


@command("migrate", _migrate_args)
def cmd_migrate(args: argparse.Namespace) -> None:
    """Move this project's memory, history included, to a PostgreSQL server or back."""
    from graphmem.owner.client import owner_running
    from graphmem.service import Memory
    from graphmem.store.serveradmin import to_file, to_server

    config = _config(args)
    directory = Memory.data_dir_for(config)
    if owner_running(directory):
        raise InvalidInput(f"an owner process serves {directory}: stop it first "
                           "(graphmem doctor names it)")
    if args.to.startswith(("postgresql://", "postgres://")):
        result = to_server(directory, args.to)
        after = "set GRAPHMEM_DATABASE_URL to the server's URL to use it"
    elif args.to == "file":
        if not config.database_url:
            raise InvalidInput("this project is not on a server: set GRAPHMEM_DATABASE_URL")
        result = to_file(config.database_url, directory)
        after = "unset GRAPHMEM_DATABASE_URL to use it"
    else:
        raise InvalidInput(f"--to takes a postgresql:// URL or file, not {args.to!r}")
    emit(args, result, lambda r: f"moved {r['ops']} journal records: {r['Item']} items, "
                                 f"{r['Entity']} entities, {r['ItemVector']} vectors; {after}")


def _agent_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", choices=["claude-code", "codex"], help="which agent to wire up")
    p.add_argument("--scope", choices=["project", "user"], default="project",
                   help="project: this checkout (a git worktree's own); user: your home config")


@command("install", _agent_args)
def cmd_install(args: argparse.Namespace) -> None:
    """Wire graphmem into an agent: hooks and the MCP server (idempotent; keeps your settings)."""
    from graphmem.install import checkout_root, describe, install

    emit(args, install(args.agent, checkout_root(args.cwd), args.scope), describe)


@command("uninstall", _agent_args)
def cmd_uninstall(args: argparse.Namespace) -> None:
    """Remove graphmem's hooks and MCP server entry, leaving everything else as it was."""
    from graphmem.install import checkout_root, uninstall

    result = uninstall(args.agent, checkout_root(args.cwd), args.scope)
    emit(args, result, lambda r: f"removed {r['removed']} graphmem entries")


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP on loopback instead of "
                   "stdio; prints the bearer token clients must send")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --http "
                   "address (put TLS in front; the token is still required)")


@command("serve", _serve_args)
def cmd_serve(args: argparse.Namespace) -> None:
    """Run the MCP server for agents (stdio; --http HOST:PORT: streamable HTTP on loopback)."""
    from graphmem.mcp import serve

    serve(_config(args), http=args.http, allow_remote=args.allow_remote)


def _owner_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help="the store to own (default: this project's)")
    p.add_argument("--idle", type=float, default=None, help="exit after this many idle seconds")


@command("owner", _owner_args)
def cmd_owner(args: argparse.Namespace) -> None:
    """Run the process that owns this project's store (clients start it on demand)."""
    from graphmem.owner.server import run_owner

    idle = args.idle or env.number("owner_idle")
    run_owner(_config(args), idle_seconds=idle)


# ----- entry point --------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphmem",
                                     description="Knowledge-graph memory for AI coding agents.")
    parser.add_argument("--version", action="version", version="graphmem 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (handler, configure) in COMMANDS.items():
        doc = (handler.__doc__ or "").strip().splitlines()[0]
        p = sub.add_parser(name, help=doc, description=doc)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--cwd", help=argparse.SUPPRESS)
        p.add_argument("--project", help="project label (default: the git work tree root)")
        configure(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:
        from graphmem.hooks import main as hook_main

        return hook_main(argv[1:])
    if argv[:2] == ["stale", "update"] and "-h" not in argv and "--help" not in argv:
        from graphmem.staleness.hook import main as stale_main  # what the git hooks run: kept lean

        return stale_main(argv[2:])
    for number, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes the OS could not decode: nothing graphmem can store
            print(f"graphmem: error: argument {number} is not valid UTF-8", file=sys.stderr)
            return 2
    from graphmem.paths import private_umask

    private_umask()  # the owner, servers and every verb: nothing graphmem writes is shared
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    try:
        args.handler(args)
    except (IndexPending, StoredUnanswered) as exc:  # stored: the caller must not retry
        emit(args, {"stored": True, "index_pending": True, "message": str(exc)},
             lambda r: f"graphmem: {r['message']}")
        return exc.exit_code
    except GraphmemError as exc:
        print(f"graphmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        error = from_os_error(exc, f"during {args.command}")
        print(f"graphmem: error: {error}", file=sys.stderr)
        return error.exit_code
    except Exception as exc:  # one line, not a traceback, unless asked for
        if env.flag("debug"):
            raise
        print(f"graphmem: internal error in {args.command}: {type(exc).__name__}: {exc} "
              "(GRAPHMEM_DEBUG=1 shows where; please report it)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
