"""Build a repohist retrieval set (the bench-data format) from any local git repository.

    python bench/build_history.py REPO OUT_DIR [--queries 300] [--scope NAME]

The recipe of ../shared/bench-data/repohist-requests: one item per non-merge commit whose
message has at least 40 characters (text: the message; files; the functions and classes whose
bodies the diff touched, `path::Qualified.name`). Queries: the latest eligible commits, text
= the subject, files/functions = what the commit touched, as_of_unix = its commit time;
expected = earlier commits that touched one of the same functions, else (file level) one of the
same files. Sweeping commits (> 40 functions or > 20 code files) stay as distractors, never
expected. Paths are matched across renames (`files_canonical`: the path as named at HEAD).
OUT_DIR must lie outside the repository: the set describes it, it does not belong in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphmem.extract import code
from graphmem.extract.code import CodeFile
from graphmem.git import Git
from graphmem.staleness.gitimport import Hunk, read_metas, read_patches
from graphmem.staleness.update import local_name

MIN_MESSAGE = 40
SWEEP_FUNCTIONS = 40
SWEEP_FILES = 20
BATCH = 200


def is_code(path: str) -> bool:
    return Path(path).suffix.lower() in code.LANGUAGES


def parsed(git: Git, spec: str, path: str) -> CodeFile | None:
    """The file `spec` names, parsed, when the code index knows its language."""
    if not is_code(path):
        return None
    found = git.read(spec)
    return code.parse_source(path, found[1]) if found is not None else None


def touched(old: CodeFile | None, new: CodeFile | None, hunks: Sequence[Hunk]) -> set[str]:
    """Every symbol (not only the innermost) whose span holds an added line (in new) or a
    removed one (in old, carried to new by its local name when it still exists there)."""
    out: set[str] = set()
    by_local = {local_name(s): s.qualname for s in new.symbols} if new is not None else {}
    for a, b, c, d in hunks:
        if d and new is not None:
            out.update(s.qualname for s in new.symbols if s.start_line <= c + d - 1
                       and s.end_line >= c)
        if b and old is not None:
            for s in old.symbols:
                if s.start_line <= a + b - 1 and s.end_line >= a:
                    out.add(by_local.get(local_name(s), s.qualname))
    return out


def commits(git: Git) -> list[str]:
    """Non-merge commits reachable from HEAD, oldest first."""
    out = git.run("rev-list", "--reverse", "--no-merges", "HEAD").decode().split()
    return [sha for sha in out if sha]


def build(repo: Path, scope: str, n_queries: int) -> tuple[list[dict], list[dict], dict[str, Any]]:
    git = Git.open(repo)
    shas = commits(git)
    metas = {}
    diffs = {}
    for start in range(0, len(shas), BATCH):
        chunk = shas[start:start + BATCH]
        metas.update(read_metas(git, chunk))
        diffs.update(read_patches(git, chunk))
    items: list[dict] = []
    renames: list[tuple[int, str, str]] = []
    for n, sha in enumerate(shas):
        meta, diff = metas[sha], diffs.get(sha)
        if diff is None:
            continue
        renames += [(n, c.old_path, c.new_path) for c in diff.changes
                    if c.status == "R" and c.old_path != c.new_path]
        if len(meta.message.strip()) < MIN_MESSAGE:
            continue
        parent = meta.parents[0] if meta.parents else None
        files, functions = [], set()
        for change in diff.changes:
            path = change.new_path or change.old_path
            files.append(path)
            hunks = diff.hunks.get(path, [])
            if not hunks and change.deleted:
                continue
            old = parsed(git, f"{parent}:{change.old_path}", change.old_path) \
                if parent and change.old_path else None
            new = parsed(git, f"{sha}:{change.new_path}", change.new_path) \
                if change.new_path else None
            functions |= touched(old, new, hunks)
        code_files = [f for f in files if is_code(f)]
        items.append({"id": sha, "scope": scope, "text": meta.message.strip(),
                      "subject": meta.subject, "ts_unix": int(meta.time), "files": sorted(files),
                      "functions": sorted(functions), "order": n,
                      "sweeping": len(functions) > SWEEP_FUNCTIONS or
                      len(code_files) > SWEEP_FILES})
    canonical = _canonical_paths(items, renames)
    for item in items:
        item["files_canonical"] = sorted({canonical(item["order"], f) for f in item["files"]})
        item["functions_canonical"] = sorted({_canonical_symbol(canonical, item["order"], q)
                                              for q in item["functions"]})
    queries = _queries(items, scope, n_queries)
    stats = {"repository": str(repo), "head": git.head(), "non_merge_commits": len(shas),
             "items": len(items), "items_sweeping": sum(i["sweeping"] for i in items),
             "queries": len(queries),
             "queries_expected_level": {level: sum(q["expected_level"] == level for q in queries)
                                        for level in ("function", "file")},
             "min_message_chars": MIN_MESSAGE,
             "sweeping_threshold": {"functions": SWEEP_FUNCTIONS, "code_files": SWEEP_FILES}}
    git.close()
    return items, queries, stats


def _canonical_paths(items: Sequence[dict], renames: Sequence[tuple[int, str, str]]) -> Any:
    """canonical(order, path): the path at HEAD of `path` as it was named after commit `order`."""
    def canonical(order: int, path: str) -> str:
        for n, old, new in renames:
            if n > order and old == path:
                path = new
        return path
    return canonical


def _canonical_symbol(canonical: Any, order: int, qualname: str) -> str:
    path, _, local = qualname.partition("::")
    return f"{canonical(order, path)}::{local}"


def _queries(items: Sequence[dict], scope: str, n_queries: int) -> list[dict]:
    eligible = [i for i in items if not i["sweeping"] and i["files"]]
    queries = []
    for item in reversed(eligible):
        if len(queries) >= n_queries:
            break
        earlier = [o for o in items if o["ts_unix"] < item["ts_unix"] and not o["sweeping"]]
        wanted = set(item["functions_canonical"])
        expected = [o["id"] for o in earlier if wanted & set(o["functions_canonical"])]
        level = "function"
        if not expected:
            level = "file"
            files = set(item["files_canonical"])
            expected = [o["id"] for o in earlier if files & set(o["files_canonical"])]
        if not expected:
            continue
        queries.append({"qid": f"q:{item['id'][:12]}", "sha": item["id"], "scope": scope,
                        "text": item["subject"], "as_of_unix": item["ts_unix"],
                        "files": item["files_canonical"], "functions": item["functions_canonical"],
                        "expected": expected, "expected_level": level,
                        "n_expected": len(expected)})
    return queries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", help="a local git work tree")
    parser.add_argument("out", help="output folder (items.jsonl, queries.jsonl, stats.json)")
    parser.add_argument("--queries", type=int, default=300, help="latest eligible commits")
    parser.add_argument("--scope", help="scope of every row (default: the repository's name)")
    args = parser.parse_args(argv)
    repo, out = Path(args.repo).resolve(), Path(args.out).resolve()
    if out == repo or repo in out.parents:
        parser.error(f"{out} is inside the repository; write the set elsewhere")
    items, queries, stats = build(repo, args.scope or repo.name, args.queries)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("items.jsonl", items), ("queries.jsonl", queries)):
        with open(out / name, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps({k: v for k, v in row.items() if k != "order"}) + "\n"
                              for row in rows)
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
