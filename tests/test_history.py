"""Git history import: which commits become items, what they are anchored to, staleness at
HEAD after the replay, renames, merges, incremental re-runs, shallow clones and bad input."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphmem import Config, InvalidInput
from graphmem.extract import code
from graphmem.git import Git
from graphmem.service import Memory
from graphmem.staleness import gitimport as hi
from graphmem.staleness import update as st
from tests.conftest import git

V1 = '''import os


def load(path):
    return open(path).read()


def save(path, text):
    with open(path, "w") as handle:
        handle.write(text)


class Store:
    def get(self, key):
        return os.environ.get(key)

    def put(self, key, value):
        os.environ[key] = value
'''


def commit(repo: Path, message: str, author: str = "Test", email: str = "t@example.invalid",
           when: int | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email,
           "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": email}
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{when} +0000"
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, check=True,
                   env=env)
    return git(repo, "rev-parse", "HEAD")


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


@pytest.fixture
def history(repo: Path) -> dict[str, str]:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "io.py").write_text(V1)
    shas = {"v1": commit(repo, "Add the io module with load, save and a Store", when=1_700_000_000)}
    edit(repo, "pkg/io.py", "return open(path).read()", "return open(path, encoding='utf-8').read()")
    shas["utf8"] = commit(repo, "Read files as UTF-8 so Windows users stop seeing mojibake",
                          when=1_700_000_100)
    edit(repo, "pkg/io.py", "        return os.environ.get(key)", "        return os.environ.get(key, '')")
    shas["default"] = commit(repo, "Store.get returns an empty string for missing keys\n\n"
                             "Callers concatenate the result; None broke them.", when=1_700_000_200)
    edit(repo, "pkg/io.py", "import os\n", "import os  # environment-backed store\n")
    shas["wip"] = commit(repo, "wip", when=1_700_000_300)
    edit(repo, "pkg/io.py", "os.environ[key] = value", "os.environ[key] = str(value)")
    shas["bot"] = commit(repo, "Bump dependency versions across the board",
                         author="dependabot[bot]", email="49699333+dependabot[bot]@users.noreply.github.com",
                         when=1_700_000_400)
    edit(repo, "pkg/io.py", "with open(path, \"w\") as handle:", "with open(path, \"w\", encoding=\"utf-8\") as handle:")
    shas["save"] = commit(repo, "Write files as UTF-8 too, matching load", when=1_700_000_500)
    git(repo, "mv", "pkg/io.py", "pkg/files.py")
    shas["rename"] = commit(repo, "Rename io to files to avoid shadowing the stdlib",
                            when=1_700_000_600)
    return shas


@pytest.fixture
def mem(home: Path, repo: Path):
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        yield memory


def item(memory: Memory, sha: str):
    return memory.get_item(hi.item_id(sha))


def anchors(memory: Memory, sha: str) -> dict[str, dict]:
    return {a["entity"]: a for a in memory.store.anchors([hi.item_id(sha)])}


def test_import_items_anchors_and_staleness_at_head(mem, repo, history):
    calls = []
    report = hi.import_git(mem, progress=lambda done, total: calls.append((done, total)))
    assert report["imported"] == 6  # initial, v1, utf8, default, save, rename
    assert report["skipped"] == {"trivial": 1, "bot": 1}
    assert calls[-1] == (8, 8) and len(calls) == 8
    utf8 = item(mem, history["utf8"])
    assert utf8.kind.value == "history" and utf8.source.value == "import"
    assert utf8.title == "Read files as UTF-8 so Windows users stop seeing mojibake"
    assert utf8.created_at == 1_700_000_100
    default = item(mem, history["default"])
    assert default.body.endswith("None broke them.")
    # anchors: the functions each diff touched, at that commit's hash, at today's path
    assert set(anchors(mem, history["utf8"])) == {"symbol:pkg/files.py::load"}
    assert set(anchors(mem, history["default"])) == {"symbol:pkg/files.py::Store.get"}
    assert set(anchors(mem, history["v1"])) == {
        "symbol:pkg/files.py::load", "symbol:pkg/files.py::save", "symbol:pkg/files.py::Store",
        "symbol:pkg/files.py::Store.get", "symbol:pkg/files.py::Store.put"}
    assert anchors(mem, history["utf8"])["symbol:pkg/files.py::load"]["commit"] == history["utf8"]
    assert anchors(mem, history["rename"]) == {}  # a pure rename touches no function body
    links = {ln["entity"]["id"] for ln in mem.store.item_links(hi.item_id(history["utf8"]))}
    assert {f"commit:{history['utf8']}", "file:pkg/files.py"} <= links
    # at HEAD: v1's functions all changed later; utf8's load did not; Store.put was changed by
    # the (skipped) bot commit, which still counts as a change for the items that touched it
    assert item(mem, history["v1"]).status.value == "stale"
    assert item(mem, history["v1"]).stale_reason.startswith(
        f"`load` in pkg/io.py changed in {history['utf8'][:7]}: 1 line")
    assert item(mem, history["utf8"]).status.value == "active"
    assert item(mem, history["default"]).status.value == "active"
    assert item(mem, history["save"]).status.value == "active"
    # entities at HEAD exist for every anchor, with today's hashes
    head_file = code.parse_source("pkg/files.py", (repo / "pkg/files.py").read_bytes())
    (load,) = mem.store.get_entities(["symbol:pkg/files.py::load"])
    assert load["hash"] == next(s.body_hash for s in head_file.symbols if s.name == "load")
    assert report["stale"] == 1


def test_reimport_is_incremental_and_hooks_keep_items_current(mem, repo, history):
    hi.import_git(mem)
    again = hi.import_git(mem)
    assert again["imported"] == 0 and "up to date" in again["message"]
    edit(repo, "pkg/files.py", "return open(path, encoding='utf-8').read()",
         "return open(path, encoding='utf-8', errors='replace').read()")
    sha = commit(repo, "Replace undecodable bytes instead of crashing")
    st.update_stale(mem, commit="HEAD")  # the post-commit hook
    assert item(mem, history["utf8"]).status.value == "stale"
    new = hi.import_git(mem)
    assert new["imported"] == 1 and new["commits"] == 1
    assert item(mem, sha).status.value == "active"
    # deleting the state re-walks everything but never duplicates an item
    (Path(mem.dir) / hi.STATE_NAME).unlink()
    full = hi.import_git(mem)
    assert full["imported"] == 0 and full["skipped"]["already imported"] == 7


def test_max_and_since(mem, repo, history):
    report = hi.import_git(mem, max_commits=2)
    assert report["commits"] == 2 and report["imported"] == 2
    assert {i.id for i in mem.list(kind="history")} == {hi.item_id(history["save"]),
                                                        hi.item_id(history["rename"])}
    with pytest.raises(InvalidInput):
        hi.import_git(mem, max_commits=0)


def test_since_limits_by_date(home, repo, history):
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        hi.import_git(memory, since="@1700000450")
        ids = {i.id for i in memory.list(kind="history")}
        assert {hi.item_id(history["save"]), hi.item_id(history["rename"])} <= ids
        assert not ids & {hi.item_id(history[k]) for k in ("v1", "utf8", "default")}


def test_merged_branches_are_imported_where_they_land(mem, repo, history):
    git(repo, "checkout", "-q", "-b", "feature")
    edit(repo, "pkg/files.py", "def save(path, text):", "def save(path, text, mode=\"w\"):")
    edit(repo, "pkg/files.py", 'with open(path, "w", encoding="utf-8")',
         'with open(path, mode, encoding="utf-8")')
    side = commit(repo, "Let save append when asked to")
    git(repo, "checkout", "-q", "main")
    edit(repo, "pkg/files.py", "return open(path, encoding='utf-8').read()",
         "return open(path, encoding='utf-8').read().strip()")
    mainline = commit(repo, "Strip trailing whitespace from loaded files")
    git(repo, "merge", "-q", "--no-edit", "feature")
    report = hi.import_git(mem)
    assert report["skipped"].get("merge") is None  # merges are not candidates at all
    assert item(mem, side).status.value == "active"
    assert set(anchors(mem, side)) == {"symbol:pkg/files.py::save"}
    assert item(mem, history["save"]).status.value == "stale"  # the side branch changed save
    assert item(mem, history["utf8"]).status.value == "stale"  # mainline changed load
    assert item(mem, mainline).status.value == "active"


def test_deleted_function_makes_history_stale(mem, repo, history):
    edit(repo, "pkg/files.py", "    def put(self, key, value):\n        os.environ[key] = str(value)\n",
         "")
    sha = commit(repo, "Drop Store.put: nobody writes through the store")
    hi.import_git(mem)
    assert item(mem, history["v1"]).status.value == "stale"
    put = mem.store.get_entities(["symbol:pkg/files.py::Store.put"])
    assert put and put[0]["hash"] == ""
    assert item(mem, sha).status.value == "active"


def test_shallow_clone_skips_the_boundary(home, repo, history, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "3", f"file://{repo}", str(clone)],
                   check=True, capture_output=True)
    with Memory(Config(home=home, cwd=clone, embed=False)) as memory:
        report = hi.import_git(memory)
        assert report["skipped"] == {"shallow boundary": 1}
        assert report["imported"] == 2
        assert "shallow clone" in report["message"]


def test_empty_and_non_repositories(home, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with Memory(Config(home=home, cwd=empty, embed=False)) as memory:
        assert "no commits yet" in hi.import_git(memory)["message"]
    plain = tmp_path / "plain"
    plain.mkdir()
    with (Memory(Config(home=home, cwd=plain, embed=False)) as memory,
          pytest.raises(InvalidInput, match="not a git work tree")):
        hi.import_git(memory)


def test_embedded_import_is_searchable(memory, repo, history):
    report = hi.import_git(memory)
    assert report["imported"] == 6
    hits = memory.search("mojibake on windows", k=3).hits
    assert hits and hits[0].item.id == hi.item_id(history["utf8"])


@pytest.mark.parametrize("author, email, message, reason", [
    ("Ann", "ann@x.org", "Fix the parser for nested quotes", None),
    ("Ann", "ann@x.org", "wip: parser", "trivial"),
    ("Ann", "ann@x.org", "fixup! Fix the parser", "trivial"),
    ("Ann", "ann@x.org", "Fix typo", "trivial"),
    ("Ann", "ann@x.org", "typos", "trivial"),
    ("Ann", "ann@x.org", "short one", "trivial"),
    ("renovate[bot]", "bot@renovateapp.com", "Update dependency pytest to v9", "bot"),
    ("github-actions", "41898282+github-actions[bot]@users.noreply.github.com",
     "Update the changelog for release", "bot"),
    ("Ann", "ann@x.org", "Typography settings for the docs site", None),
])
def test_skip_reasons(author, email, message, reason):
    meta = hi.CommitMeta("0" * 40, ["1" * 40], author, email, 0.0, message)
    assert hi.skip_reason(meta) == reason
    assert hi.skip_reason(hi.CommitMeta("0" * 40, ["1" * 40, "2" * 40], "Ann", "a@x", 0.0,
                                        "Merge a long-lived branch")) == "merge"


def test_touched_symbols_maps_added_and_removed_lines():
    old = code.parse_source("m.py", "def a():\n    x = 1\n    return x\n\n\ndef b():\n    return 2\n")
    new = code.parse_source("m.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    # old lines 2-3 replaced by new line 2: a, from both sides
    assert [s.name for s in hi.touched_symbols(old, new, [(2, 2, 2, 1)])] == ["a"]
    # a pure deletion inside a (old side only) still names a
    assert [s.name for s in hi.touched_symbols(old, new, [(2, 1, 1, 0)])] == ["a"]
    # lines between functions belong to no symbol
    assert hi.touched_symbols(old, new, [(4, 1, 3, 0)]) == []


def test_parse_patches_handles_odd_paths(repo):
    names = ["with space.py", 'quo"te.py', "ünï.py", "tab\there.py"]
    for name in names:
        (repo / name).write_text("def f():\n    return 1\n")
    sha = commit(repo, "odd names")
    git_obj = Git.open(repo)
    diff = hi.read_patches(git_obj, [sha])[sha]
    git_obj.close()
    assert sorted(c.new_path for c in diff.changes) == sorted(names)
    assert sorted(diff.hunks) == sorted(names)
    assert all(h == [(0, 0, 1, 2)] for h in diff.hunks.values())
