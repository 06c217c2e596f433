"""Staleness rules through the installed git hooks, on real commits: an item is judged by the most
specific code it names, comment and formatting edits never flag, a class is judged by its own
lines, and at a merge each change is named after the commit that made it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from graphmem import Config, StoreUnavailable
from graphmem.service import Memory
from graphmem.staleness import install as gh
from tests.conftest import git

GRAPHMEM = [sys.executable, "-m", "graphmem"]  # what `graphmem git install-hooks` writes, here

CONFIG = '''import os


def database_url():
    return os.environ["DATABASE_URL"]


def parse_config(path):
    with open(path) as handle:
        return handle.read()
'''


def write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    text = (repo / rel).read_text()
    assert text.count(old) == 1, old
    (repo / rel).write_text(text.replace(old, new))


def applied(home: Path, repo: Path, *git_args: str) -> str:
    """Run a git command that moves HEAD and wait until the hook's update has applied it."""
    git(repo, *git_args)
    head = git(repo, "rev-parse", "HEAD")
    state = Memory.data_dir_for(Config(home=home, cwd=repo)) / "staleness.json"
    deadline = time.monotonic() + 60
    while not (state.exists() and head in state.read_text()):
        assert time.monotonic() < deadline, f"the hook did not apply {head[:7]}"
        time.sleep(0.1)
    return head


def commit(home: Path, repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    return applied(home, repo, "commit", "-q", "-m", message)


def statuses(home: Path, repo: Path) -> dict[str, tuple[str, str]]:
    """Every item's (status, stale reason), read once the hook's process has let the store go."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with Memory(Config(home=home, cwd=repo, embed=False), read_only=True) as memory:
                return {i.id: (i.status.value, i.stale_reason)
                        for i in memory.list(limit=100)}
        except StoreUnavailable:
            assert time.monotonic() < deadline
            time.sleep(0.1)


@pytest.fixture
def hooked(memory: Memory, home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch):
    """Returns a function that indexes the repo, records items, closes the store and installs
    the git hooks; items are given as text -> explicit symbols."""
    monkeypatch.setenv("GRAPHMEM_OWNER", "never")

    def record(items: dict[str, list[str]]) -> dict[str, str]:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "the code")
        memory.index_code()
        ids = {text: memory.add(text, symbols=symbols, dedupe=False).id
               for text, symbols in items.items()}
        anchors = {(a["item"], a["entity"]) for a in memory.store.anchors()}
        for text, symbols in items.items():  # each named symbol is anchored
            assert len([e for i, e in anchors if i == ids[text] and e.startswith("symbol:")]) \
                >= len(symbols), text
        memory.close()  # the hook's update opens the store itself
        gh.install_hooks(repo, command=GRAPHMEM)
        return ids | {"anchors": anchors}  # type: ignore[dict-item]

    return record


def test_an_item_naming_a_function_in_a_file_is_judged_by_that_function(hooked, home, repo):
    write(repo, "src/app/config.py", CONFIG)
    named = "database_url() in src/app/config.py raises KeyError when DATABASE_URL is unset"
    whole = "src/app/config.py is the one module that reads the environment"
    ids = hooked({named: [], whole: []})
    assert {(ids[named], "file:src/app/config.py"),
            (ids[named], "symbol:src/app/config.py::database_url"),
            (ids[whole], "file:src/app/config.py")} <= ids["anchors"]

    edit(repo, "src/app/config.py", "return handle.read()", "return handle.read().strip()")
    sha = commit(home, repo, "parse_config strips the file")
    now = statuses(home, repo)
    assert now[ids[named]] == ("active", "")
    assert now[ids[whole]] == ("stale", f"src/app/config.py changed in {sha[:7]}: 1 line")

    edit(repo, "src/app/config.py", 'os.environ["DATABASE_URL"]', 'os.environ.get("DATABASE_URL")')
    sha = commit(home, repo, "database_url returns None when unset")
    assert statuses(home, repo)[ids[named]] == (
        "stale", f"`database_url` in src/app/config.py changed in {sha[:7]}: 1 line")


# path: (source, the function, formatting and comment edits, a real change). Python is not
# here: its formatting-only edits already roll forward (same `ast.dump`, staleness/update.py).
FORMATTED = {
    "web/cart.js": (
        "function total(items) {\n  return items.reduce((sum, item) => sum + item.price, 0);\n}\n",
        "total",
        [("items.reduce((sum, item) => sum + item.price, 0);",
          ('items.reduce(\n    // prices are in cents\n    (sum, item) => sum + item.price,\n'
           '    0,\n  )')),
         ("  return items.reduce(", "  /* sum */ return items.reduce(")],
        ("item.price", "item.price * item.quantity"),
    ),
    "web/greet.ts": (
        "export const greet = (name: string) => {\n  return 'hello ' + name;\n};\n",
        "greet",
        [("'hello ' + name;", '"hello " + name // polite')],
        ('"hello "', '"hi "'),
    ),
    "src/lib.rs": (
        "pub fn area(w: u32, h: u32) -> u32 {\n    mul(w, h)\n}\n",
        "area",
        [("    mul(w, h)\n", "    // width times height\n    mul(\n        w,\n        h,\n    )\n")],
        ("w,\n        h,", "h,\n        w,"),
    ),
    "lib/cart.ex": (
        "defmodule Shop.Cart do\n  def total(items) do\n    Enum.sum([1, 2])\n  end\nend\n",
        "Shop.Cart.total",
        [("Enum.sum([1, 2])", "# all of them\n    Enum.sum([\n      1,\n      2,\n    ])")],
        ("2,\n", "3,\n"),
    ),
}


@pytest.mark.parametrize("path", list(FORMATTED))
def test_comment_and_formatting_edits_never_flag(hooked, home, repo, path):
    source, function, reformat, change = FORMATTED[path]
    write(repo, path, source)
    item = hooked({f"how {function} computes its result": [function]})[
        f"how {function} computes its result"]
    for old, new in reformat:
        edit(repo, path, old, new)
    commit(home, repo, "format and comment")
    assert statuses(home, repo)[item] == ("active", "")
    edit(repo, path, *change)
    commit(home, repo, "a real change")
    assert statuses(home, repo)[item][0] == "stale"


CLASSES = {
    "src/loader.py": (("class Loader:\n    retries = 3\n\n    def load(self, path):\n"
                       "        return open(path).read()\n\n    def close(self):\n        pass\n"),
                      "Loader", "Loader.load", ("open(path).read()", "open(path).read().strip()"),
                      ("retries = 3", "retries = 5")),
    "lib/accounts.ex": (("defmodule MyApp.Accounts do\n  @moduledoc \"Users.\"\n  @limit 10\n\n"
                         "  def get(id), do: Repo.get(User, id)\n\n  defp limit, do: @limit\nend\n"),
                        "MyApp.Accounts", "MyApp.Accounts.get",
                        ("Repo.get(User, id)", "Repo.get!(User, id)"), ("@limit 10", "@limit 20")),
}


@pytest.mark.parametrize("path", list(CLASSES))
def test_a_class_is_judged_by_its_own_lines_not_its_methods(hooked, home, repo, path):
    source, cls, method, method_edit, class_edit = CLASSES[path]
    write(repo, path, source)
    ids = hooked({f"the {cls} type": [cls], f"the {method} function": [method]})
    about_class, about_method = ids[f"the {cls} type"], ids[f"the {method} function"]
    edit(repo, path, *method_edit)
    commit(home, repo, "change one method")
    now = statuses(home, repo)
    assert now[about_method][0] == "stale"
    assert now[about_class] == ("active", "")
    edit(repo, path, *class_edit)
    sha = commit(home, repo, "change the class's own lines")
    assert statuses(home, repo)[about_class] == (
        "stale", f"`{cls}` in {path} changed in {sha[:7]}: 1 line")


def test_a_merge_names_each_change_after_the_commit_that_made_it(hooked, home, repo):
    write(repo, "src/calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                               "    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
    write(repo, "src/io.py", "def read(path):\n    return open(path).read()\n")
    ids = hooked({"add sums": ["add"], "sub subtracts": ["sub"], "mul multiplies": ["mul"],
                  "read reads a file": ["read"]})
    git(repo, "checkout", "-q", "-b", "feature")
    edit(repo, "src/calc.py", "return a - b", "return a - b if a > b else b - a")
    first = commit(home, repo, "sub is symmetric")
    edit(repo, "src/calc.py", "return a + b", "return sum((a, b))")
    second = commit(home, repo, "add through sum")
    edit(repo, "src/io.py", "open(path).read()", "open(path, encoding='utf-8').read()")
    third = commit(home, repo, "read utf-8")
    applied(home, repo, "checkout", "-q", "main")
    assert {s for s, _ in statuses(home, repo).values()} == {"active"}  # back to main's code
    edit(repo, "src/calc.py", "return a * b", "return a * b  # on main")
    commit(home, repo, "a comment on main, so the merge is a real one")
    merge = applied(home, repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    assert len(git(repo, "rev-list", "--parents", "-n", "1", merge).split()) == 3
    now = statuses(home, repo)
    assert now[ids["sub subtracts"]] == (
        "stale", f"`sub` in src/calc.py changed in {first[:7]}: 1 line")
    assert now[ids["add sums"]] == ("stale", f"`add` in src/calc.py changed in {second[:7]}: 1 line")
    assert now[ids["read reads a file"]] == (
        "stale", f"`read` in src/io.py changed in {third[:7]}: 1 line")
    assert now[ids["mul multiplies"]] == ("active", "")


def test_a_store_hashed_by_an_older_scheme_moves_over_without_flagging(memory, home, repo,
                                                                      monkeypatch):
    """Anchors that matched their code under the old hashes get the new ones at the commit the
    update starts from: the commit's format-only edit stays fresh, its real change flags."""
    from graphmem.staleness import update as st
    from graphmem.store import ops

    monkeypatch.setenv("GRAPHMEM_OWNER", "never")
    write(repo, "web/cart.js", "function total(xs) {\n  return xs.reduce((s, x) => s + x, 0);\n}\n"
                               "\nfunction count(xs) {\n  return xs.length;\n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cart")
    memory.index_code()
    total = memory.add("total sums the cart", symbols=["total"], dedupe=False).id
    count = memory.add("count counts the cart", symbols=["count"], dedupe=False).id
    for row in memory.store.anchors([total, count]):  # as an older scheme left them
        old = f"old-{row['entity'][-8:]}"
        memory.writer.write(ops.PutEntities([{**memory.store.get_entities([row["entity"]])[0],
                                              "hash": old}]))
        memory.writer.write(ops.PutLinks("ANCHORED_TO", [{"source": row["item"],
                                                          "target": row["entity"], "hash": old,
                                                          "commit": "", "at": 0.0}]))
    st.save_state(memory, hashes="text-0")
    memory.close()
    gh.install_hooks(repo, command=GRAPHMEM)
    edit(repo, "web/cart.js", "xs.reduce((s, x) => s + x, 0);", 'xs.reduce(\n    (s, x) => s + x,\n    0,\n  )')
    edit(repo, "web/cart.js", "return xs.length;", "return xs.length + 1;")
    commit(home, repo, "format total, change count")
    now = statuses(home, repo)
    assert now[total] == ("active", "")
    assert now[count][0] == "stale"
