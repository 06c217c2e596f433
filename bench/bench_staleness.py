"""Staleness benchmark: accuracy on real release history, post-commit time, commit slowdown.

1. Accuracy. A git repo is built from successive sdists of `requests` (downloaded once with
   `pip download --no-deps --no-binary :all:` into ~/.cache/graphmem-bench/requests, offline
   afterwards), one commit per release with its release notes as the message. Each release is
   committed as a developer would: the post-commit update runs (`update_stale`), then
   `import_git` imports the new commit as a `history` item. After every release, every earlier
   item's status is scored against a ground truth computed independently of graphmem (Python's
   `ast` and `git diff`, no tree-sitter, no graphmem code), beside a file-level baseline. A
   one-shot `import_git` of the whole history is scored at HEAD too.

   Ground truth, for the item of commit C and a later HEAD H:
   - touched(C): every line C added (`git diff -U0 C^ C`) maps to the innermost def/class (with
     its decorators) of the file at C containing it; every line C removed maps to the innermost
     def/class of the file at C^ containing it, kept when a def/class of the same qualified name
     exists at C. Only .py files.
   - A touched def/class is unchanged at H when the file (followed through the renames `git
     diff -M` finds in each release from C to H) has the same qualified name with an identical `ast.dump` (comments, whitespace and
     line numbers ignored; docstrings count); or, renames and moves followed, when a def/class
     that did not exist at C has an identical dump apart from its name in that file, or an
     identical dump with the same name in another file. Otherwise it changed (or was deleted).
   - The item is stale at H iff any touched def/class changed. Items touching none are fresh.
   File-level baseline: stale iff any .py file C touched differs at H (or is gone).
   A def/class dump is of its own code; a class's leaves out the defs and classes in it (they
   are judged apart). Per commit: the items each update newly staled against the items the
   truth says that commit staled (fresh at the previous release, stale at this one).

1b. Per commit on a history with merges (default: a clone of graphmem's own repository, branch
   main), walked along its first parent as the hooks see it: at each commit the update, then
   `import_git` (a merge imports the commits it brings in). Scored as (item, commit) pairs: the
   items the update newly staled with the commit their reason names, against the items the
   truth says went stale there, named after that commit, or at a merge after the earliest
   commit it brings in (topological order) that changed one of the item's changed functions.
   Reported apart for first-parent commits and merged-in ones, with p50/p99/max update time.

2. Post-commit wall time for a 20-file commit on a store with 10k anchored items: the update in
   a warm process, the whole detached process the hook starts (`python -m graphmem stale
   update`, as installed hooks run it) with no owner, and the same with an owner running.

3. What the installed hooks add to `git commit` (median of repeated commits).

Run: .venv/bin/python bench/bench_staleness.py [--releases N] [--quick] [--history REPO]
     [--only-history]
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from graphmem.store import ops

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["GRAPHMEM_OWNER"] = "never"

RELEASES = ["2.20.0", "2.20.1", "2.21.0", "2.22.0", "2.23.0", "2.24.0", "2.25.0", "2.25.1",
            "2.26.0", "2.27.0", "2.27.1", "2.28.0", "2.28.1", "2.28.2", "2.29.0", "2.30.0",
            "2.31.0", "2.32.2", "2.32.3", "2.32.4", "2.32.5", "2.33.0", "2.33.1", "2.34.0",
            "2.34.1", "2.34.2"]
CACHE = Path.home() / ".cache" / "graphmem-bench" / "requests"
UPDATER = [sys.executable, "-m", "graphmem"]  # what installed hooks run: `graphmem stale update`


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=cwd, check=True,
                          capture_output=True, env=env, input=data)
    return done.stdout.decode("utf-8", "surrogateescape")


def git_env(when: int | None = None) -> dict[str, str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Requests Release", "GIT_AUTHOR_EMAIL": "rel@example.invalid",
           "GIT_COMMITTER_NAME": "Requests Release", "GIT_COMMITTER_EMAIL": "rel@example.invalid"}
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{when} +0000"
    return env


# ----- building the release repository ----------------------------------------------------
def fetch(version: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"requests-{version}.tar.gz"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                        ":all:", "--no-build-isolation", f"requests=={version}", "-d", str(CACHE)],
                       check=True)
    return path


def release_notes(tar: tarfile.TarFile, prefix: str, version: str) -> tuple[str, int | None]:
    for name in ("HISTORY.md", "HISTORY.rst"):
        try:
            member = tar.extractfile(f"{prefix}/{name}")
        except KeyError:
            continue
        if member is None:
            continue
        text = member.read().decode("utf-8", "replace")
        match = re.search(rf"^{re.escape(version)} \((\d{{4}})-(\d{{2}})-(\d{{2}})\)\s*\n-+\n(.*?)"
                          r"(?=^\d+\.\d+\.\d+ \(|\Z)", text, re.MULTILINE | re.DOTALL)
        if match:
            when = int(time.mktime(time.strptime("-".join(match.groups()[:3]), "%Y-%m-%d")))
            return match.group(4).strip()[:3000], when
    return "", None


def unpack(tar_path: Path, version: str, dest: Path) -> tuple[str, int | None]:
    for child in dest.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    prefix = f"requests-{version}"
    with tarfile.open(tar_path) as tar:
        notes, when = release_notes(tar, prefix, version)
        for member in tar.getmembers():
            rel = member.name[len(prefix) + 1:]
            if not rel or ".egg-info" in rel or rel == "PKG-INFO" or not member.isfile():
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
    return notes, when


def commit_release(repo: Path, version: str, when_fallback: int) -> str:
    notes, when = unpack(fetch(version), version, repo)
    sh(repo, "add", "-A")
    message = f"requests {version}\n\n{notes or 'Release ' + version}\n"
    sh(repo, "commit", "-q", "--allow-empty", "-F", "-", env=git_env(when or when_fallback),
       data=message.encode())
    return sh(repo, "rev-parse", "HEAD").strip()


# ----- independent ground truth (ast + git only) -------------------------------------------
class Truth:
    """touched(C) and stale(C, H) as documented above, with caches."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._defs: dict[tuple[str, str], dict[str, tuple[int, int, str, str]] | None] = {}
        self._renames: dict[tuple[str, str], dict[str, str]] = {}
        self._steps: dict[str, dict[str, str]] = {}
        self._index: dict[str, tuple[dict[str, set[str]], dict[str, dict[str, set[str]]]]] = {}
        self.touched: dict[str, set[tuple[str, str]]] = {}
        self.unparsable = 0

    def source(self, commit: str, path: str) -> bytes | None:
        done = subprocess.run(["git", "cat-file", "blob", f"{commit}:{path}"], cwd=self.repo,
                              capture_output=True, check=False)
        return done.stdout if done.returncode == 0 else None

    def defs(self, commit: str, path: str) -> dict[str, tuple[int, int, str, str]] | None:
        """qualname -> (first line, last line, dump, dump without the name) of defs/classes."""
        key = (commit, path)
        if key not in self._defs:
            data = self.source(commit, path)
            found: dict[str, tuple[int, int, str, str]] | None = None
            if data is not None:
                try:
                    tree = ast.parse(data)
                    found = {}
                    _collect(tree, "", found)
                except (SyntaxError, ValueError):
                    self.unparsable += 1
            self._defs[key] = found
        return self._defs[key]

    def compute_touched(self, parent: str | None, commit: str) -> set[tuple[str, str]]:
        base = parent or sh(self.repo, "hash-object", "-t", "tree", "/dev/null").strip()
        out = sh(self.repo, "diff", "-U0", "-M", "--no-color", "--no-ext-diff", base, commit,
                 "--", "*.py")
        touched: set[tuple[str, str]] = set()
        old_path = new_path = None
        for line in out.splitlines():
            if line.startswith("--- "):
                old_path = None if line[4:].strip() == "/dev/null" else line[6:].rstrip("\t")
            elif line.startswith("+++ "):
                new_path = None if line[4:].strip() == "/dev/null" else line[6:].rstrip("\t")
            elif line.startswith("@@ ") and new_path:
                m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
                assert m
                a, b, c, d = (int(g) if g is not None else 1 for g in m.groups())
                new = self.defs(commit, new_path) or {}
                for ln in range(c, c + d):
                    q = _innermost(new, ln)
                    if q:
                        touched.add((new_path, q))
                if b and old_path and parent:
                    old = self.defs(parent, old_path) or {}
                    for ln in range(a, a + b):
                        q = _innermost(old, ln)
                        if q and q in new:
                            touched.add((new_path, q))
        self.touched[commit] = touched
        return touched

    def renames(self, commit: str, head: str) -> dict[str, str]:
        """Path at commit -> path at head, composing each later commit's `git diff -M` renames."""
        key = (commit, head)
        if key not in self._renames:
            moves: dict[str, str] = {}
            for step in sh(self.repo, "rev-list", "--reverse", "--first-parent",
                           f"{commit}..{head}").split():
                for old, new in self._step_renames(step).items():
                    for start, now in list(moves.items()):
                        if now == old:
                            moves[start] = new
                    moves.setdefault(old, new)
            self._renames[key] = moves
        return self._renames[key]

    def _step_renames(self, commit: str) -> dict[str, str]:
        if commit not in self._steps:
            parents = sh(self.repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
            found = {}
            if parents:
                out = sh(self.repo, "diff", "-M", "--name-status", "--no-color", parents[0], commit)
                for line in out.splitlines():
                    parts = line.split("\t")
                    if parts[0].startswith("R") and len(parts) == 3:
                        found[parts[1]] = parts[2]
            self._steps[commit] = found
        return self._steps[commit]

    def index(self, head: str) -> tuple[dict[str, set[str]], dict[str, dict[str, set[str]]]]:
        """dump -> paths holding it (any file), and per path: nameless dump -> qualnames."""
        if head not in self._index:
            by_dump: dict[str, set[str]] = {}
            by_path: dict[str, dict[str, set[str]]] = {}
            for path in sh(self.repo, "ls-tree", "-r", "--name-only", head).splitlines():
                if not path.endswith(".py"):
                    continue
                for qual, (_, _, dump, nameless) in (self.defs(head, path) or {}).items():
                    by_dump.setdefault(dump, set()).add(path)
                    by_path.setdefault(path, {}).setdefault(nameless, set()).add(qual)
            self._index[head] = (by_dump, by_path)
        return self._index[head]

    def stale(self, commit: str, head: str) -> bool:
        for path, qual in self.touched[commit]:
            if self._changed(commit, head, path, qual):
                return True
        return False

    def _changed(self, commit: str, head: str, path: str, qual: str) -> bool:
        then = (self.defs(commit, path) or {}).get(qual)
        if then is None:
            return False
        now_path = self.renames(commit, head).get(path, path)
        now_defs = self.defs(head, now_path) or {}
        now = now_defs.get(qual)
        if now is not None:
            return now[2] != then[2]
        by_dump, by_path = self.index(head)
        old_quals = set(self.defs(commit, path) or {})
        renamed = {q for q in by_path.get(now_path, {}).get(then[3], set()) if q not in old_quals}
        moved = by_dump.get(then[2], set()) - {now_path}
        return not (renamed or moved)

    def file_changed(self, commit: str, head: str) -> bool:
        """Baseline: any .py file the commit touched differs at head."""
        for path in {p for p, _ in self.touched_files(commit)}:
            now_path = self.renames(commit, head).get(path, path)
            if self.source(commit, path) != self.source(head, now_path):
                return True
        return False

    def touched_files(self, commit: str) -> set[tuple[str, str]]:
        parent = sh(self.repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        base = parent[0] if parent else sh(self.repo, "hash-object", "-t", "tree", "/dev/null").strip()
        out = sh(self.repo, "diff", "--name-only", "-M", base, commit, "--", "*.py")
        return {(p, "") for p in out.splitlines() if p}


def _collect(node: ast.AST, prefix: str, out: dict[str, tuple[int, int, str, str]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local = f"{prefix}.{child.name}" if prefix else child.name
            name, n = local, 2
            while name in out:  # repeated names in one scope: #2, #3 in source order
                name, n = f"{local}#{n}", n + 1
            start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            # a class is its own lines: its methods and nested classes are judged apart
            own = _OwnLines().visit(copy.deepcopy(child)) if isinstance(child, ast.ClassDef) else child
            dump = ast.dump(own, include_attributes=False)
            saved, own.name = own.name, ""  # the same code under another name
            blank = ast.dump(own, include_attributes=False)
            own.name = saved
            out[name] = (start, child.end_lineno or child.lineno, dump, blank)
            _collect(child, local, out)
        else:
            _collect(child, prefix, out)


class _OwnLines(ast.NodeTransformer):
    """A class without the defs and classes nested in it (the root class is kept)."""

    def __init__(self) -> None:
        self.root = True

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST | None:
        if not self.root:
            return None
        self.root = False
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None


def _innermost(defs: dict[str, tuple[int, int, str, str]], line: int) -> str | None:
    best = None
    for qual, (start, end, _, _) in defs.items():
        if start <= line <= end and (best is None or end - start < best[1]):
            best = (qual, end - start)
    return best[0] if best else None


# ----- part 1: accuracy ---------------------------------------------------------------------
def score_anchors(memory: Any, truth: Truth, commit: str, head: str,
                  ours: list[tuple[bool, bool]], base: list[tuple[bool, bool]],
                  unmatched: list[int], fn_misses: list[str]) -> None:
    """Function level: each of our anchors (seen hash vs the graph's) against the truth for the
    same function, joined on (path at head, qualified name); the baseline flags a function when
    its file changed."""
    from graphmem.staleness import gitimport as hi

    mine = {(a["path"], a["qualname"].split("::", 1)[1]): a["seen"] != a["current"]
            for a in memory.store.anchors_of_items([hi.item_id(commit)])}
    renames = truth.renames(commit, head)
    theirs = {(renames.get(path, path), qual): (path, qual) for path, qual in truth.touched[commit]}
    for key, predicted in mine.items():
        if key not in theirs:
            unmatched[0] += 1
            continue
        path, qual = theirs[key]
        actual = truth._changed(commit, head, path, qual)
        ours.append((predicted, actual))
        if predicted != actual:
            fn_misses.append(f"{commit[:7]}@{head[:7]} {key[0]}::{key[1]} ours={predicted}")
        base.append((truth.source(commit, path) != truth.source(head, key[0]), actual))
    unmatched[1] += len(set(theirs) - set(mine))



def score(pairs: list[tuple[bool, bool]]) -> dict[str, float]:
    tp = sum(1 for p, t in pairs if p and t)
    fp = sum(1 for p, t in pairs if p and not t)
    fn = sum(1 for p, t in pairs if not p and t)
    tn = sum(1 for p, t in pairs if not p and not t)
    return {"precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0, "tp": tp, "fp": fp, "fn": fn, "tn": tn}


_ATTRIBUTED = re.compile(r" (?:changed|deleted) in ([0-9a-f]{7})\b")


def attributed(reason: str) -> str:
    """The commit (7 hex digits) a stale reason names first."""
    found = _ATTRIBUTED.search(reason)
    return found.group(1) if found else "?"


def pair_score(pred: set[tuple[str, str]], truth: set[tuple[str, str]]) -> dict[str, Any]:
    """(item, commit) pairs: an item staled at the right update but named after the wrong
    commit is a false positive and a false negative."""
    tp, fp, fn = len(pred & truth), len(pred - truth), len(truth - pred)
    return {"precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0, "tp": tp, "fp": fp, "fn": fn,
            "misses": sorted(pred ^ truth)}


def percentiles(seconds: list[float]) -> str:
    if not seconds:
        return "no updates"
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (f"p50 {statistics.median(ordered):.2f}s, p99 {p99:.2f}s, max {ordered[-1]:.2f}s "
            f"({len(ordered)} updates)")


def accuracy(releases: list[str], work: Path) -> dict[str, Any]:
    from graphmem import Config
    from graphmem.git import Git
    from graphmem.service import Memory
    from graphmem.staleness import gitimport as hi
    from graphmem.staleness import update as st

    repo = work / "requests"
    repo.mkdir()
    sh(repo, "init", "-q", "-b", "main")
    truth = Truth(repo)
    home = work / "home"
    memory = Memory(Config(home=home, cwd=repo, embed=False))
    shas: list[str] = []
    ours: list[tuple[bool, bool]] = []
    baseline: list[tuple[bool, bool]] = []
    misses: list[str] = []
    fn_ours: list[tuple[bool, bool]] = []
    fn_base: list[tuple[bool, bool]] = []
    unmatched = [0, 0]
    fn_misses: list[str] = []
    hook_s: list[float] = []
    import_s: list[float] = []
    newly_pred: set[tuple[str, str]] = set()
    newly_truth: set[tuple[str, str]] = set()
    for number, version in enumerate(releases):
        sha = commit_release(repo, version, 1_500_000_000 + number * 86400)
        started = time.perf_counter()
        report = st.update_stale(memory, commit="HEAD")
        hook_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        hi.import_git(memory, embed=False)
        import_s.append(time.perf_counter() - started)
        truth.compute_touched(shas[-1] if shas else None, sha)
        # per commit: the items this update newly staled against those the truth says it did
        newly_pred |= {(s["id"], attributed(s["reason"])) for s in report["stale"]}
        newly_truth |= {(hi.item_id(e), sha[:7]) for e in shas
                        if truth.stale(e, sha) and not truth.stale(e, shas[-1])}
        for earlier in shas:
            score_anchors(memory, truth, earlier, sha, fn_ours, fn_base, unmatched, fn_misses)
            predicted = memory.get_item(hi.item_id(earlier)).status.value == "stale"
            actual = truth.stale(earlier, sha)
            ours.append((predicted, actual))
            baseline.append((truth.file_changed(earlier, sha), actual))
            if predicted != actual:
                misses.append(f"{earlier[:7]}@{sha[:7]} ours={predicted} truth={actual}: "
                              f"{memory.get_item(hi.item_id(earlier)).stale_reason[:100]}")
        shas.append(sha)
        print(f"  {version:<7} committed, hook {hook_s[-1]:.2f}s, import {import_s[-1]:.2f}s",
              flush=True)
    head = shas[-1]
    final_ours = [(memory.get_item(hi.item_id(s)).status.value == "stale", truth.stale(s, head))
                  for s in shas[:-1]]
    memory.close()
    # one-shot import of the whole history into a fresh store
    with Memory(Config(home=work / "home-oneshot", cwd=repo, embed=False)) as fresh:
        started = time.perf_counter()
        report = hi.import_git(fresh, embed=False)
        oneshot_s = time.perf_counter() - started
        oneshot = [(fresh.get_item(hi.item_id(s)).status.value == "stale", truth.stale(s, head))
                    for s in shas[:-1]]
        anchors = {s: {(a["path"], a["qualname"].split("::", 1)[1])
                       for a in fresh.store.anchors([hi.item_id(s)])} for s in shas}
    final_base = [(truth.file_changed(s, head), truth.stale(s, head)) for s in shas[:-1]]
    # diagnostics: our anchors (mapped back by qualname) vs the truth's touched set at C
    agree = []
    with Git.open(repo) as git:
        for parent, sha in zip([None, *shas[:-1]], shas):
            diff = hi.read_patches(git, [sha])[sha]
            versions = st.Versions(git)
            mine = set()
            for c in diff.changes:
                if c.deleted or not c.new_path.endswith(".py"):
                    continue
                new = versions.code(c.new_blob, c.new_path)
                old = versions.code(c.old_blob, c.old_path) if not c.added else None
                mine |= {(s.path, st.local_name(s))
                         for s in hi.touched_symbols(old, new, diff.hunks.get(c.new_path, []))}
            gt = truth.touched[sha]
            agree.append(len(mine & gt) / len(mine | gt) if mine | gt else 1.0)
    del anchors
    return {"releases": releases, "items": len(shas), "pairs": len(ours),
            "fn_ours": score(fn_ours), "fn_base": score(fn_base), "fn_pairs": len(fn_ours),
            "unmatched": unmatched,
            "ours": score(ours), "baseline": score(baseline),
            "head_ours": score(final_ours), "head_oneshot": score(oneshot),
            "head_baseline": score(final_base), "misses": misses,
            "hook_median": statistics.median(hook_s[1:]) if len(hook_s) > 1 else 0.0,
            "import_median": statistics.median(import_s), "oneshot_s": oneshot_s,
            "oneshot_report": report, "jaccard": statistics.mean(agree),
            "per_commit": pair_score(newly_pred, newly_truth), "hook_s": hook_s[1:],
            "fn_misses": fn_misses,
            "exact": sum(1 for a in agree if a == 1.0), "unparsable": truth.unparsable}


# ----- part 1b: a history with merges, walked along its first parent ------------------------
def merged_history(work: Path, source: Path, branch: str = "main",
                   limit: int | None = None) -> dict[str, Any]:
    """Clone `source` and walk its first-parent history as the hooks see it: at every commit
    the post-commit (or post-merge) update, then `import_git`. Each update's newly stale items,
    with the commit their reason names, are scored against the truth: items fresh at the previous
    commit and stale at this one, named after this commit, or at a merge after the earliest
    commit it brings in (topological order) that changed one of the item's changed functions
    (the merge itself when none did)."""
    from graphmem import Config
    from graphmem.service import Memory
    from graphmem.staleness import gitimport as hi
    from graphmem.staleness import update as st

    repo = work / "history"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", "--branch", branch, str(source),
                    str(repo)], check=True, capture_output=True)
    mainline = sh(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    if limit:
        mainline = mainline[:limit]
    truth = Truth(repo)
    memory = Memory(Config(home=work / "home-history", cwd=repo, embed=False))
    items: dict[str, str] = {}  # item id -> its commit
    moves: dict[str, dict[str, str]] = {}  # item's commit -> its .py paths then -> now
    pred: dict[str, set[tuple[str, str]]] = {"first-parent": set(), "merged": set()}
    true: dict[str, set[tuple[str, str]]] = {"first-parent": set(), "merged": set()}
    status_pred: set[tuple[str, str]] = set()
    status_true: set[tuple[str, str]] = set()
    seconds: list[float] = []
    merges = 0
    prev = ""
    for sha in mainline:
        sh(repo, "checkout", "-q", "--detach", sha)
        brought = sh(repo, "rev-list", "--topo-order", "--reverse", "--no-merges",
                     f"{prev}..{sha}" if prev else sha).split()
        side = set(brought) - {sha}
        merges += bool(side)
        if prev:
            started = time.perf_counter()
            report = st.update_stale(memory, commit=sha)
            seconds.append(time.perf_counter() - started)
            step = truth._step_renames(sha)
            for commit, paths in moves.items():
                for start, now in paths.items():
                    paths[start] = step.get(now, now)
                truth._renames[(commit, sha)] = {a: b for a, b in paths.items() if a != b}
            changed = set(sh(repo, "diff", "--name-only", "--no-renames", prev, sha, "--",
                             "*.py").split())
            for item, commit in items.items():
                if not set(moves[commit].values()) & changed:
                    continue
                if truth.stale(commit, sha) and not truth.stale(commit, prev):
                    who = _first_changer(truth, commit, brought, sha) if side else sha
                    true["merged" if who in side else "first-parent"].add((item, who[:7]))
                    status_true.add((item, sha))
            for row in report["stale"]:
                name = attributed(row["reason"])
                full = next((c for c in brought if c.startswith(name)), name)
                pred["merged" if full in side else "first-parent"].add((row["id"], name))
                status_pred.add((row["id"], sha))
        hi.import_git(memory, embed=False)
        for commit in [*brought, sha] if sha not in brought else brought:
            item = hi.item_id(commit)
            if item in items or not memory.store.existing_item_ids([item]):
                continue
            parents = sh(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
            truth.compute_touched(parents[0] if parents else None, commit)
            items[item] = commit
            moves[commit] = {p: p for p, _ in truth.touched[commit]}
        prev = sha
    memory.close()
    return {"commits": len(mainline), "merges": merges, "items": len(items),
            "first_parent": pair_score(pred["first-parent"], true["first-parent"]),
            "merged": pair_score(pred["merged"], true["merged"]),
            "status": pair_score(status_pred, status_true), "seconds": seconds}


def _first_changer(truth: Truth, item_commit: str, brought: list[str], merge: str) -> str:
    """The earliest commit (topological order) a merge brings in that changed one of the
    item's touched functions, else the merge."""
    for commit in brought:
        parents = sh(truth.repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        if not parents:
            continue
        for path, qual in truth.touched[item_commit]:
            before = (truth.defs(parents[0], path) or {}).get(qual)
            after = (truth.defs(commit, path) or {}).get(qual)
            if before is not None and (after is None or before[2] != after[2]):
                return commit
    return merge


# ----- part 2: post-commit time on a 10k-item store ----------------------------------------
def synth_source(index: int, funcs: int, salt: int = 0) -> str:
    parts = [f'"""Module {index}."""\n\nimport math\n']
    for j in range(funcs):
        extra = f"    y += {salt}\n" if salt and j % 8 == 0 else ""
        parts.append(f"\n\ndef func_{j}(x, scale=1.0):\n    \"\"\"Compute step {j}.\"\"\"\n"
                     f"    y = math.sqrt(abs(x)) * scale + {j}\n{extra}    return y - {index}\n")
    return "".join(parts)


def build_store(work: Path, files: int = 250, funcs: int = 20, items: int = 10_000) -> tuple[Path, Path]:
    from graphmem import Config
    from graphmem import models as m
    from graphmem.service import Memory
    from graphmem.store.base import ItemFilter

    repo = work / "synthetic"
    (repo / "pkg").mkdir(parents=True)
    sh(repo, "init", "-q", "-b", "main")
    for i in range(files):
        (repo / "pkg" / f"mod_{i:03d}.py").write_text(synth_source(i, funcs))
    sh(repo, "add", "-A")
    sh(repo, "commit", "-q", "-m", "synthetic code base", env=git_env())
    home = work / "home-10k"
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.index_code()
        symbols = [e for e in memory.store.entities_by_kind("symbol")]
        rng = random.Random(7)
        rows, anchors, mentions = [], [], []
        for n in range(items):
            item = m.MemoryItem(project=memory.project, title=f"fact number {n} about the code",
                                body=f"longer explanation {n}", kind=m.ItemKind.decision)
            row = item.model_dump(mode="json")
            row["search_text"] = item.text
            rows.append(row)
            for target in rng.sample(symbols, 2):
                anchors.append({"source": item.id, "target": target["id"], "hash": target["hash"],
                                "commit": "", "at": time.time()})
                mentions.append({"source": item.id, "target": target["id"], "weight": 1.0,
                                 "surface": target["name"]})
        memory.writer.write(ops.PutItems(rows))
        memory.writer.write(ops.PutLinks("ANCHORED_TO", anchors))
        memory.writer.write(ops.PutLinks("MENTIONS", mentions))
        assert memory.store.count_items(ItemFilter(statuses=None)) == items
    return repo, home


def edit_files(repo: Path, count: int, salt: int, funcs: int = 20) -> None:
    for i in random.Random(salt).sample(range(250), count):
        (repo / "pkg" / f"mod_{i:03d}.py").write_text(synth_source(i, funcs, salt))


def post_commit(work: Path) -> dict[str, Any]:
    from graphmem import Config
    from graphmem.service import Memory
    from graphmem.staleness import update as st

    repo, home = build_store(work)
    warm, process, stale = [], [], []
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.journal.last_seq()
        for salt in (11, 12, 13, 14):  # the first pays one-off costs (journal scan): dropped
            edit_files(repo, 20, salt)
            sh(repo, "commit", "-q", "-a", "-m", f"edit 20 files ({salt})", env=git_env())
            started = time.perf_counter()
            report = st.update_stale(memory, commit="HEAD")
            warm.append(time.perf_counter() - started)
            stale.append(len(report["stale"]))
    warm, stale = warm[1:], stale[1:]
    env = {**os.environ, "GRAPHMEM_HOME": str(home)}
    load = [os.getloadavg()[0]]
    for salt in (21, 22, 23, 24, 25):
        process.append(_timed_update(repo, salt, env))
    load.append(os.getloadavg()[0])
    # with an owner running (an agent session is open): the hook hands the commit to it
    owner_env = {**env, "GRAPHMEM_OWNER": "auto", "GRAPHMEM_EMBED": "false"}
    owner = subprocess.Popen([*UPDATER, "owner"], cwd=repo, env=owner_env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    handed: list[float] = []
    try:
        _wait_for_owner(repo, home)
        for salt in range(31, 39):  # the first two share the CPU with the owner's warm-up: dropped
            handed.append(_timed_update(repo, salt, owner_env))
    finally:
        owner.terminate()
        owner.wait(timeout=60)
    load.append(os.getloadavg()[0])
    return {"repo": repo, "home": home, "warm": warm, "process": process, "stale": stale,
            "owner": handed[2:], "load": load}


def _timed_update(repo: Path, salt: int, env: dict[str, str]) -> float:
    edit_files(repo, 20, salt)
    sh(repo, "commit", "-q", "-a", "-m", f"edit 20 files ({salt})", env=git_env())
    started = time.perf_counter()
    subprocess.run([*UPDATER, "stale", "update", "--commit", "HEAD"], cwd=repo, check=True,
                   capture_output=True, env=env)
    return time.perf_counter() - started


def _wait_for_owner(repo: Path, home: Path) -> None:
    from graphmem import Config
    from graphmem.owner.client import owner_running
    from graphmem.service import Memory

    data_dir = Memory.data_dir_for(Config(home=home, cwd=repo))
    deadline = time.monotonic() + 60
    while not owner_running(data_dir):
        if time.monotonic() > deadline:
            raise RuntimeError("the owner did not start")
        time.sleep(0.05)


# ----- part 3: what the hooks add to git commit ---------------------------------------------
def commit_slowdown(repo: Path, home: Path, reps: int) -> dict[str, Any]:
    from graphmem.staleness import install as gh

    env = {**git_env(), "GRAPHMEM_HOME": str(home)}
    state = None
    for child in (home / "projects").iterdir():
        state = child / "staleness.json"

    def one(n: int) -> float:
        path = repo / "pkg" / f"mod_{n % 250:03d}.py"
        path.write_text(path.read_text() + f"\n\ndef added_{n}():\n    return {n}\n")
        sh(repo, "add", str(path.relative_to(repo)))
        started = time.perf_counter()
        subprocess.run(["git", "commit", "-q", "-m", f"commit {n}"], cwd=repo, check=True,
                       capture_output=True, env=env)
        return time.perf_counter() - started

    plain = [one(n) for n in range(reps)]
    gh.install_hooks(repo, command=UPDATER)
    hooked, landed = [], []
    for n in range(reps, 2 * reps):
        hooked.append(one(n))
        head = sh(repo, "rev-parse", "HEAD").strip()
        started = time.perf_counter()
        while time.perf_counter() - started < 30:  # let the detached update finish first
            if state is not None and state.exists() and head in state.read_text():
                break
            time.sleep(0.02)
        landed.append(time.perf_counter() - started + hooked[-1])
    gh.uninstall_hooks(repo)
    return {"plain": plain, "hooked": hooked, "landed": landed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", type=int, default=len(RELEASES))
    parser.add_argument("--quick", action="store_true", help="8 releases, 5 commits")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--history", type=Path, default=Path(__file__).resolve().parents[1],
                        help="a repository with merges to walk (default: graphmem's own)")
    parser.add_argument("--branch", default="main", help="its branch to walk")
    parser.add_argument("--only-history", action="store_true",
                        help="part 1b only: the history with merges")
    args = parser.parse_args()
    releases = RELEASES[: 8 if args.quick else args.releases]
    reps = 5 if args.quick else 15
    work = Path(tempfile.mkdtemp(prefix="bench-staleness-"))
    try:
        if not args.skip_accuracy or args.only_history:
            print(f"walking {args.history} ({args.branch}) along its first parent")
            mh = merged_history(work, args.history, args.branch)
            print(f"\n1b. per commit on a history with merges: {mh['commits']} first-parent "
                  f"commits ({mh['merges']} merges), {mh['items']} history items")
            print(f"   {'':38} {'precision':>9} {'recall':>7} {'TP':>5} {'FP':>4} {'FN':>4}")
            for label, key in (("newly stale, first-parent commits", "first_parent"),
                               ("newly stale, commits merged in", "merged"),
                               ("newly stale at the right update", "status")):
                r = mh[key]
                print(f"   {label:<38} {r['precision']:>9.3f} {r['recall']:>7.3f} {r['tp']:>5} "
                      f"{r['fp']:>4} {r['fn']:>4}")
            print(f"   update time: {percentiles(mh['seconds'])}")
            for key in ("first_parent", "merged"):
                for miss in mh[key]["misses"][:15]:
                    print(f"   {key} miss: {miss}")
            if args.only_history:
                return 0
        if not args.skip_accuracy:
            print(f"building requests {releases[0]} … {releases[-1]} ({len(releases)} releases)")
            acc = accuracy(releases, work)
            print(f"\n1. staleness on real history: requests {releases[0]} … {releases[-1]}, "
                  f"{acc['items']} release commits → {acc['items']} history items")
            print(f"   releases: {', '.join(acc['releases'])}")
            print(f"   scored after every release: {acc['pairs']} (item, HEAD) pairs\n")
            print(f"   {'':38} {'precision':>9} {'recall':>7} {'TP':>5} {'FP':>4} {'FN':>4} {'TN':>5}")
            for label, key in (("graphmem, hooks + import, every release", "ours"),
                               ("file-level baseline, every release", "baseline"),
                               ("graphmem, hooks + import, at HEAD", "head_ours"),
                               ("graphmem, one-shot import, at HEAD", "head_oneshot"),
                               ("file-level baseline, at HEAD", "head_baseline")):
                s = acc[key]
                print(f"   {label:<38} {s['precision']:>9.3f} {s['recall']:>7.3f} {s['tp']:>5} "
                      f"{s['fp']:>4} {s['fn']:>4} {s['tn']:>5}")
            print(f"\n   function level, every release: {acc['fn_pairs']} (anchor, HEAD) pairs "
                  f"({acc['unmatched'][0]} of ours / {acc['unmatched'][1]} of the truth's unpaired)")
            for label, key in (("graphmem anchors", "fn_ours"),
                               ("file-level baseline", "fn_base")):
                s = acc[key]
                print(f"   {label:<38} {s['precision']:>9.3f} {s['recall']:>7.3f} {s['tp']:>5} "
                      f"{s['fp']:>4} {s['fn']:>4} {s['tn']:>5}")
            pc = acc["per_commit"]
            print(f"   {'per commit: newly stale items':<38} {pc['precision']:>9.3f} "
                  f"{pc['recall']:>7.3f} {pc['tp']:>5} {pc['fp']:>4} {pc['fn']:>4}")
            print(f"   post-commit update time: {percentiles(acc['hook_s'])}")
            for miss in pc["misses"][:10]:
                print(f"   per-commit miss: {miss}")
            print("\n   target: precision ≥ 0.95, recall ≥ 0.95")
            print(f"   anchors vs truth's touched functions at C: mean Jaccard {acc['jaccard']:.3f}, "
                  f"identical for {acc['exact']}/{acc['items']} commits; "
                  f"{acc['unparsable']} file versions ast could not parse")
            print(f"   per release: post-commit update {acc['hook_median']:.2f}s, incremental import "
                  f"{acc['import_median']:.2f}s (medians); one-shot import {acc['oneshot_s']:.1f}s")
            for line in acc["misses"][:10]:
                print(f"   miss: {line}")
            for line in acc["fn_misses"][:10]:
                print(f"   function-level miss: {line}")
        print("\n2. post-commit update, 20-file commit, 10,000 anchored items (5,000 symbols)")
        pc = post_commit(work)
        print(f"   in a warm process (update_stale):     {' '.join(f'{s:.2f}s' for s in pc['warm'])}"
              f"   ({', '.join(map(str, pc['stale']))} items went stale)")
        print(f"   whole detached process (as the hook): {' '.join(f'{s:.2f}s' for s in pc['process'])}"
              f"   median {statistics.median(pc['process']):.2f}s")
        print(f"   the same with an owner running:       {' '.join(f'{s:.2f}s' for s in pc['owner'])}"
              f"   median {statistics.median(pc['owner']):.2f}s")
        print(f"   target ≤ 1 s; 1-minute load average {' → '.join(f'{x:.2f}' for x in pc['load'])}"
              f" on {os.cpu_count()} CPUs")
        print(f"\n3. git commit with and without graphmem's hooks ({reps} commits each, same repo)")
        cs = commit_slowdown(pc["repo"], pc["home"], reps)
        plain, hooked = statistics.median(cs["plain"]), statistics.median(cs["hooked"])
        print(f"   without hooks: median {plain * 1000:.1f} ms, max {max(cs['plain']) * 1000:.1f} ms")
        print(f"   with hooks:    median {hooked * 1000:.1f} ms, max {max(cs['hooked']) * 1000:.1f} ms")
        print(f"   added:         {(hooked - plain) * 1000:+.1f} ms (target ≤ 50 ms); the update "
              f"lands {statistics.median(cs['landed']):.2f}s after the commit starts (median)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
