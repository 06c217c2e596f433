"""Stores the notebooks run against: a realistic one (a recorded Claude Code session replayed
through the real hooks, then a few commits of the same project imported with `import_git` and
staled by `update_stale`, as the git hook would), plus the bad inputs (empty, stale-only, 100k).

`python -m tests.notebook_fixture [DIR]` builds the realistic store (under DIR, else a temporary
directory) and prints the environment that points the notebooks at it; with `--picture
docs/explore.png` it also runs 02_graph on it and saves the README's picture.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from graphmem.config import Config
from graphmem.service import Memory
from graphmem.staleness import gitimport as history
from graphmem.staleness import update as staleness
from tests.test_replay import SOURCES, load_replay

DAY = 86_400

# The shop project before the recorded session: three commits that build it up.
BEFORE = [
    ("Add the shop package: database connection from DATABASE_URL", 45, {
        "src/shop/__init__.py": '"""A small shop: orders, payments and their database."""\n',
        "src/shop/db.py": SOURCES["src/shop/db.py"],
    }),
    ("Payments: charge() creates a ChargeV1 through the gateway client", 30, {
        "src/shop/payments.py": SOURCES["src/shop/payments.py"],
    }),
    ("Test setup: a conftest shared by the orders and payments tests", 20, {
        "tests/conftest.py": SOURCES["tests/conftest.py"],
    }),
]

CONFTEST_FIX = '''import os

import pytest


@pytest.fixture(autouse=True)
def database_url(monkeypatch):
    """Tests run against SQLite unless DATABASE_URL is already set."""
    monkeypatch.setenv("DATABASE_URL", os.environ.get("DATABASE_URL", "sqlite:///:memory:"))
'''

DB_V2 = '''import os


class ConfigError(RuntimeError):
    """A setting the shop needs is missing."""


def connect(url=None):
    url = url or os.environ.get("DATABASE_URL")
    if not url:
        raise ConfigError("DATABASE_URL is not set; export it or pass url=")
    return url
'''

PAYMENTS_V2 = '''from shop.retry import retry


class ChargeV1:
    pass


class ChargeV2:
    """A charge in cents with an idempotency key (the webhook's v2 payload)."""

    def __init__(self, cents, key):
        self.cents = cents
        self.key = key


@retry(times=3)
def charge(amount, key=None):
    return ChargeV2(int(round(amount * 100)), key or "auto")
'''

RETRY = '''import time


def retry(times=3, delay=0.1):
    """Retry a flaky gateway call with exponential backoff."""
    def wrap(func):
        def run(*args, **kwargs):
            for attempt in range(times):
                try:
                    return func(*args, **kwargs)
                except ConnectionError:
                    if attempt == times - 1:
                        raise
                    time.sleep(delay * 2 ** attempt)
        return run
    return wrap
'''

# After the session: the fix it made, then three changes to code its memories speak of.
AFTER = [
    ("Fix KeyError in the orders tests: default DATABASE_URL to SQLite in conftest",
     {"tests/conftest.py": CONFTEST_FIX, ".gitignore": "__pycache__/\n.env\n"}),
    ("Add a retry decorator with exponential backoff for flaky gateway calls",
     {"src/shop/retry.py": RETRY}),
    ("Migrate payments to ChargeV2: amounts in cents with idempotency keys",
     {"src/shop/payments.py": PAYMENTS_V2}),
    ("wip", {"src/shop/__init__.py": '"""A small shop: orders, payments, retries."""\n'}),
    ("connect() raises ConfigError with a clear message when DATABASE_URL is missing",
     {"src/shop/db.py": DB_V2}),
]


def git(repo: Path, *args: str, when: float | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dana Dev", "GIT_AUTHOR_EMAIL": "dana@example.invalid",
           "GIT_COMMITTER_NAME": "Dana Dev", "GIT_COMMITTER_EMAIL": "dana@example.invalid"}
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{int(when)} +0000"
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str], when: float | None = None) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


def hook_env(home: Path, repo: Path) -> dict[str, str]:
    """The environment under which Memory() resolves this store (what the notebooks get)."""
    return {"GRAPHMEM_HOME": str(home), "GRAPHMEM_CWD": str(repo)}


def build_realistic(root: Path) -> dict[str, Any]:
    """The replayed session + imported history + post-commit staleness, under root."""
    home, repo = root / "home", root / "shop"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    now = time.time()
    for message, days_ago, files in BEFORE:
        commit(repo, message, files, when=now - days_ago * DAY)
    _, events, _ = load_replay(repo)
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1"}
    for event, payload in events:
        result = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent",
                                 "claude-code"], input=payload, capture_output=True, env=env,
                                cwd=repo, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
    shas: list[str] = []
    with Memory(Config(home=home, cwd=repo)) as memory:
        memory.index_code()
        memory.ingest()
        for message, files in AFTER:
            shas.append(commit(repo, message, files))
            staleness.update_stale(memory, commit=shas[-1])  # what the post-commit hook does
        imported = history.import_git(memory, repo)
        stats = memory.stats()
    return {"home": home, "repo": repo, "env": hook_env(home, repo), "commits": shas,
            "import": imported, "stats": stats}


def build_empty(root: Path) -> dict[str, Any]:
    """A store that exists and holds nothing."""
    home, repo = root / "home", root / "empty"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    with Memory(Config(home=home, cwd=repo)) as memory:
        stats = memory.stats()
    return {"home": home, "repo": repo, "env": hook_env(home, repo), "stats": stats}


def build_stale_only(root: Path) -> dict[str, Any]:
    """Every item of the store is stale (code that moved on under all of them)."""
    home, repo = root / "home", root / "legacy"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    first = commit(repo, "Add the legacy billing module", {"billing.py": "def total(xs):\n    return sum(xs)\n\n\ndef tax(x):\n    return x * 0.2\n"})
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.index_code()
        memory.add("total() sums line items without rounding", kind="pitfall",
                   files=["billing.py"], symbols=["total"])
        memory.add("tax() uses a flat 20% rate", kind="fact", files=["billing.py"],
                   symbols=["tax"])
        second = commit(repo, "Round totals and use per-country tax rates",
                        {"billing.py": "def total(xs):\n    return round(sum(xs), 2)\n\n\n"
                                       "def tax(x, rate):\n    return x * rate\n"})
        staleness.update_stale(memory, commit=second)
        stats = memory.stats()
    return {"home": home, "repo": repo, "env": hook_env(home, repo), "commits": [first, second],
            "stats": stats}


def build_big(root: Path, n: int = 100_000, seed: int = 0) -> dict[str, Any]:
    """n items linked to 800 files, 3,000 functions and a few error codes, 8% of them stale.

    Entities go through the journal like any write; the items and their links are bulk-copied
    into the graph (Kuzu COPY from Arrow tables, seconds instead of minutes): the journal does
    not know them, so never rebuild this store.
    """
    import pyarrow as pa

    from graphmem.store import ops
    from graphmem.store.schema import ITEM_COLUMNS

    home, repo = root / "home", root / "big"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    rng = random.Random(seed)
    files = [f"src/pkg{i // 40}/mod{i}.py" for i in range(800)]
    entities: list[dict[str, Any]] = [
        {"id": f"file:{f}", "kind": "file", "name": f, "path": f, "language": "python",
         "hash": f"f{i}"} for i, f in enumerate(files)]
    symbols = []
    for i in range(3000):
        path = files[i % len(files)]
        qual = f"{path}::func_{i}"
        symbols.append((f"symbol:{qual}", path, f"func_{i}", f"s{i}"))
        entities.append({"id": f"symbol:{qual}", "kind": "symbol", "name": f"func_{i}",
                         "path": path, "qualname": qual, "language": "python", "hash": f"s{i}"})
    errors = [f"error:{name}" for name in ("KeyError", "TypeError", "ValueError", "TimeoutError",
                                           "ImportError", "E501", "ERESOLVE", "HTTP 502")]
    entities += [{"id": e, "kind": "error", "name": e.split(":", 1)[1]} for e in errors]
    kinds = ["pitfall", "decision", "fact", "convention", "task", "env", "note", "history"]
    now = time.time()
    items, mentions, anchors = [], [], []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        symbol, path, name, body_hash = symbols[rng.randrange(len(symbols))]
        stale = rng.random() < 0.08
        created = now - rng.random() * 400 * DAY
        title = f"{kind} {i}: {name} in {path}"
        items.append({**ITEM_COLUMNS, "id": f"big{i:06d}", "branch": "main", "kind": kind,
                      "title": title, "search_text": title, "created_at": created,
                      "updated_at": created, "status": "stale" if stale else "active",
                      "stale_reason": f"`{name}` in {path} changed in abc1234: 3 lines"
                      if stale else ""})
        mentions.append((items[-1]["id"], f"file:{path}", path))
        if i % 3 == 0:
            error = errors[rng.randrange(len(errors))]
            mentions.append((items[-1]["id"], error, error.split(":", 1)[1]))
        anchors.append((items[-1]["id"], symbol, "old" if stale else body_hash, created))
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        memory.writer.write(ops.PutEntities(entities))
        memory.writer.write(ops.PutLinks("DEFINED_IN", [{"source": s, "target": f"file:{p}"}
                                                        for s, p, _, _ in symbols]))
        for row in items:
            row["project"] = memory.project
        conn = memory.store._conn  # test fixture: straight to Kuzu, past the journal
        conn.execute("COPY Item FROM $t", {"t": pa.Table.from_pylist(items)})
        conn.execute("COPY MENTIONS FROM $t", {"t": pa.table({
            "from": [m[0] for m in mentions], "to": [m[1] for m in mentions],
            "weight": [1.0] * len(mentions), "surface": [m[2] for m in mentions]})})
        conn.execute("COPY ANCHORED_TO FROM $t", {"t": pa.table({
            "from": [a[0] for a in anchors], "to": [a[1] for a in anchors],
            "hash": [a[2] for a in anchors], "commit": [""] * len(anchors),
            "at": [a[3] for a in anchors]})})
        stats = memory.stats()
    return {"home": home, "repo": repo, "env": hook_env(home, repo), "stats": stats,
            "data_dir": Path(stats["data_dir"])}


# ----- running notebooks ----------------------------------------------------------------------
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KERNEL = "graphmem-venv"


def kernel_specs(root: Path) -> Any:
    """A kernelspec under root that runs ipykernel on this interpreter (the venv's python),
    whatever `python` is on PATH."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "graphmem (this venv)", "language": "python"}))
    return KernelSpecManager(kernel_dirs=[str(root / "kernels")])


def kernel_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without graphmem/pytest settings, offline, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPHMEM_", "PYTEST_", "JPY_")) and k != "MPLBACKEND"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "GRAPHMEM_NO_WORKER": "1", "JUPYTER_PLATFORM_DIRS": "1"})
    env.update(extra)
    return env


def execute(name: str, env: dict[str, str], specs: Any, extra_cells: tuple[str, ...] = (),
            timeout: int = 180) -> tuple[Any, float]:
    """Run notebooks/<name>.ipynb top to bottom (then extra_cells) in a fresh kernel; a cell
    that raises fails the run. Returns the executed notebook and the seconds it took."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(cell) for cell in extra_cells]
    km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
    client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    started = time.perf_counter()
    client.execute(env=kernel_env(env), cleanup_kc=True)  # shuts the kernel down, closes sockets
    return nb, time.perf_counter() - started


def main(argv: list[str]) -> int:
    """Build the realistic store under a directory; with --picture FILE, also run 02_graph on it
    and save its neighbourhood figure there (the README's docs/explore.png)."""
    import argparse
    import tempfile

    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    parser = argparse.ArgumentParser(prog="python -m tests.notebook_fixture", description=main.__doc__)
    parser.add_argument("dir", nargs="?", help="where to build (default: a temporary directory)")
    parser.add_argument("--picture", help="save 02_graph's neighbourhood figure to this PNG")
    args = parser.parse_args(argv)
    root = Path(args.dir or tempfile.mkdtemp(prefix="graphmem-demo-")).resolve()
    built = build_realistic(root)
    print(json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in built.items()},
                     indent=2, default=str))
    if args.picture:
        target = Path(args.picture).resolve()
        out = Path(tempfile.mkdtemp(prefix="graphmem-picture-"))
        execute("02_graph", {**built["env"], "GRAPHMEM_NOTEBOOK_FILE": "src/shop/db.py",
                             "GRAPHMEM_NOTEBOOK_ERROR": "KeyError",
                             "GRAPHMEM_NOTEBOOK_OUT": str(out)}, kernel_specs(out))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(out / "explore.png", target)
        shutil.rmtree(out, ignore_errors=True)
        print(f"saved {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
