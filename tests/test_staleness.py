"""Staleness on real git repositories: edits, reformatting, renames, deletions, amend, rebase,
merge, branch switches, the work tree, verify, and bad input."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from graphmem import Config, InvalidInput
from graphmem.git import Git, head_commit
from graphmem.service import Memory
from graphmem.staleness import update as st
from graphmem.store import ops
from tests.conftest import git

CONFIG = '''def parse_config(path):
    """Read the whole config file."""
    return open(path).read()


def sibling(value):
    return value + 1


class Loader:
    def load(self, path):
        return parse_config(path)
'''


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new))


@pytest.fixture
def code(memory: Memory, repo: Path) -> dict[str, str]:
    """src/config.py committed and indexed; one item anchored to each function."""
    write(repo, "src/config.py", CONFIG)
    commit(repo, "add config module")
    memory.index_code()
    ids = {}
    for name in ("parse_config", "sibling", "Loader.load"):
        ids[name] = memory.add(f"{name} is how we handle this", symbols=[name], dedupe=False).id
    anchors = {a["item"]: a["entity"] for a in memory.store.anchors()}
    assert anchors[ids["parse_config"]] == "symbol:src/config.py::parse_config"
    return ids


def status(memory: Memory, item_id: str) -> tuple[str, str]:
    item = memory.get_item(item_id)
    return item.status.value, item.stale_reason


def anchor_of(memory: Memory, item_id: str) -> dict:
    (row,) = [a for a in memory.store.anchors([item_id]) if a["kind"] == "symbol"]
    return row


def test_body_edit_stales_its_items_and_not_the_siblings(memory, repo, code):
    before = anchor_of(memory, code["parse_config"])["hash"]
    edit(repo, "src/config.py", "return open(path).read()",
         "with open(path) as handle:\n        return handle.read()")
    sha = commit(repo, "read config with a context manager")
    report = st.update_stale(memory, commit="HEAD")
    state, reason = status(memory, code["parse_config"])
    assert state == "stale"
    assert reason == f"`parse_config` in src/config.py changed in {sha[:7]}: 2 lines"
    assert status(memory, code["sibling"]) == ("active", "")
    assert status(memory, code["Loader.load"]) == ("active", "")
    assert [s["id"] for s in report["stale"]] == [code["parse_config"]]
    # the anchor keeps the hash it saw, the entity moves on to the new code
    anchor = anchor_of(memory, code["parse_config"])
    (entity,) = memory.store.get_entities(["symbol:src/config.py::parse_config"])
    assert anchor["hash"] == before != entity["hash"]
    assert entity["end_line"] == 4
    # the commit is recorded: a Commit entity TOUCHES what it changed
    rows = memory.store._rows("MATCH (c:Entity)-[:TOUCHES]->(e:Entity) WHERE c.id = $c RETURN e.id",
                              {"c": f"commit:{sha}"})
    assert "symbol:src/config.py::parse_config" in {r[0] for r in rows}


@pytest.mark.parametrize("old, new", [
    ("    return value + 1\n", "    return value+1  # off by one on purpose\n"),
    ('    """Read the whole config file."""\n',
     '    """Read the whole config file."""\n    # TODO: cache it\n\n'),
    ("        return parse_config(path)\n",
     "\n        return parse_config(\n            path\n        )\n"),
    ('    """Read the whole config file."""\n', "    'Read the whole config file.'\n"),
    ("        return parse_config(path)\n", "        return (parse_config(path,))\n"),
], ids=["spacing-and-comment", "comment-and-blank-line", "line-breaks", "python-quotes",
        "python-parens-and-trailing-comma"])
def test_reformatting_and_comments_stale_nothing(memory, repo, code, old, new):
    edit(repo, "src/config.py", old, new)
    commit(repo, "reformat")
    report = st.update_stale(memory, commit="HEAD")
    assert report["stale"] == []
    assert {status(memory, i)[0] for i in code.values()} == {"active"}
    # the anchors roll forward with a formatter's edits, so the next real change still counts
    for item_id in code.values():
        anchor = anchor_of(memory, item_id)
        (entity,) = memory.store.get_entities([anchor["entity"]])
        assert anchor["hash"] == entity["hash"]


def test_formatting_after_a_real_change_keeps_the_item_stale(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 2")
    commit(repo, "real change")
    st.update_stale(memory, commit="HEAD")
    edit(repo, "src/config.py", "value + 2", "(value + 2)")
    commit(repo, "black")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"


def test_renamed_file_moves_its_anchors(memory, repo, code):
    seen = anchor_of(memory, code["parse_config"])["hash"]
    git(repo, "mv", "src/config.py", "src/settings.py")
    commit(repo, "rename config to settings")
    report = st.update_stale(memory, commit="HEAD")
    assert report["stale"] == []
    anchor = anchor_of(memory, code["parse_config"])
    assert anchor["entity"] == "symbol:src/settings.py::parse_config"
    assert anchor["hash"] == seen
    assert memory.store.get_entities(["symbol:src/config.py::parse_config",
                                      "file:src/config.py"]) == []
    files = [ln["entity"]["id"] for ln in memory.store.item_links(code["sibling"])
             if ln["kind"] == "MENTIONS"]
    assert "symbol:src/settings.py::sibling" in files
    # a later edit at the new path still reaches the item
    edit(repo, "src/settings.py", "value + 1", "value + 2")
    commit(repo, "bump")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"


def test_renamed_and_moved_functions_are_followed(memory, repo, code):
    text = (repo / "src/config.py").read_text()
    text = text.replace("def sibling(value):\n    return value + 1\n\n\n", "")
    text = text.replace("def parse_config(path):", "def read_config(path):")
    write(repo, "src/config.py", text)
    write(repo, "src/helpers.py", "def sibling(value):\n    return value + 1\n")
    commit(repo, "rename parse_config, move sibling")
    report = st.update_stale(memory, commit="HEAD")
    assert report["followed"] == 2
    assert anchor_of(memory, code["parse_config"])["entity"] == "symbol:src/config.py::read_config"
    assert anchor_of(memory, code["sibling"])["entity"] == "symbol:src/helpers.py::sibling"
    assert {status(memory, i)[0] for i in code.values()} == {"active"}


def test_deleted_function_stales_with_deleted(memory, repo, code):
    edit(repo, "src/config.py", "def sibling(value):\n    return value + 1\n\n\n", "")
    sha = commit(repo, "drop sibling")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"]) == (
        "stale", f"`sibling` in src/config.py deleted in {sha[:7]}")
    # the entity stays (hash "") so the item keeps its link
    (entity,) = memory.store.get_entities(["symbol:src/config.py::sibling"])
    assert entity["hash"] == ""
    assert status(memory, code["parse_config"])[0] == "active"


def test_deleted_file_stales_everything_in_it(memory, repo, code):
    git(repo, "rm", "-q", "src/config.py")
    commit(repo, "remove config")
    report = st.update_stale(memory, commit="HEAD")
    assert len(report["stale"]) == 3
    assert all("deleted in" in status(memory, i)[1] for i in code.values())


def test_revert_makes_items_fresh_but_not_hand_marked_ones(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value - 1")
    edit(repo, "src/config.py", "return parse_config(path)", "return parse_config(path).strip()")
    commit(repo, "break things")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"
    memory.update(code["Loader.load"], stale_reason="the user says so")
    git(repo, "revert", "--no-edit", "HEAD")
    report = st.update_stale(memory, commit="HEAD")
    assert code["sibling"] in report["fresh"]
    assert status(memory, code["sibling"]) == ("active", "")
    assert status(memory, code["Loader.load"]) == ("stale", "the user says so")


def test_status_changes_are_one_journal_op_and_rebuild_matches(memory, repo, code):
    """Stale and fresh items of one update: one set_item_status op (status and reason only,
    no whole-row put that rewrites search text), replayed by a rebuild, scrubbed by forget."""
    edit(repo, "src/config.py", "value + 1", "value - 1")
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    edit(repo, "src/config.py", "return parse_config(path)", "return parse_config(path) or {}")
    commit(repo, "three changes, three reasons")
    seq = memory.journal.last_seq()
    report = st.update_stale(memory, commit="HEAD")
    assert len(report["stale"]) == 3
    git(repo, "revert", "--no-edit", "HEAD")
    report = st.update_stale(memory, commit="HEAD")
    assert sorted(report["fresh"]) == sorted(code.values())
    written = [op for _, op in memory.journal.ops(after=seq)]
    status_ops = [op for op in written if isinstance(op, ops.SetItemStatus)]
    assert len(status_ops) == 2
    assert not [op for op in written if isinstance(op, (ops.PutItems, ops.UpdateItems))]
    assert {frozenset(r) for op in status_ops for r in op.rows} == {
        frozenset({"id", "status", "stale_reason"})}
    edit(repo, "src/config.py", "value + 1", "value + 3")
    commit(repo, "one change")
    st.update_stale(memory, commit="HEAD")
    live = {i: status(memory, i) for i in code.values()}
    assert live[code["sibling"]][0] == "stale"
    memory.rebuild()
    assert {i: status(memory, i) for i in code.values()} == live
    memory.forget(code["sibling"])
    assert not list(memory.journal.touching(code["sibling"]))


def test_amend_is_handled_by_the_post_rewrite_range(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 2")
    old = commit(repo, "sibling adds two")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"
    edit(repo, "src/config.py", "value + 2", "value + 1")
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    git(repo, "commit", "-q", "-a", "--amend", "-m", "strip config instead")
    new = git(repo, "rev-parse", "HEAD")
    st.update_stale(memory, rev_range=f"{old}..{new}")  # what post-rewrite passes
    assert status(memory, code["sibling"])[0] == "active"
    assert status(memory, code["parse_config"]) == (
        "stale", f"`parse_config` in src/config.py changed in {new[:7]}: 1 line")


def test_rebase_is_handled_by_the_post_rewrite_range(memory, repo, code):
    git(repo, "checkout", "-q", "-b", "feature")
    edit(repo, "src/config.py", "value + 1", "value + 3")
    feature = commit(repo, "feature: sibling adds three")
    st.update_stale(memory, commit="HEAD")  # post-commit
    git(repo, "checkout", "-q", "main")
    main = git(repo, "rev-parse", "HEAD")
    st.update_stale(memory, rev_range=f"{feature}..{main}")  # post-checkout
    assert status(memory, code["sibling"])[0] == "active"
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    main = commit(repo, "main: strip config")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["parse_config"])[0] == "stale"
    git(repo, "checkout", "-q", "feature")
    st.update_stale(memory, rev_range=f"{main}..{feature}")
    assert [status(memory, code[n])[0] for n in ("parse_config", "sibling")] == ["active", "stale"]
    git(repo, "rebase", "-q", "main")
    new = git(repo, "rev-parse", "HEAD")
    report = st.update_stale(memory, rev_range=f"{feature}..{new}")  # post-rewrite's last pair
    assert [status(memory, code[n])[0] for n in ("parse_config", "sibling")] == ["stale", "stale"]
    assert "changed in" in status(memory, code["parse_config"])[1]
    assert report["target"] == new


def test_merge_is_handled_by_the_post_merge_range(memory, repo, code):
    git(repo, "checkout", "-q", "-b", "feature")
    edit(repo, "src/config.py", "return parse_config(path)", "return parse_config(str(path))")
    commit(repo, "feature: accept paths")
    git(repo, "checkout", "-q", "main")
    write(repo, "NOTES.md", "unrelated\n")
    commit(repo, "notes")
    st.update_stale(memory, commit="HEAD")
    git(repo, "merge", "-q", "--no-edit", "feature")
    orig = git(repo, "rev-parse", "ORIG_HEAD")
    report = st.update_stale(memory, rev_range=f"{orig}..HEAD")
    assert status(memory, code["Loader.load"])[0] == "stale"
    assert {status(memory, code[n])[0] for n in ("parse_config", "sibling")} == {"active"}
    feature = git(repo, "rev-parse", "feature")
    assert status(memory, code["Loader.load"])[1].endswith(f"changed in {feature[:7]}: 1 line")
    assert report["files"] == 1


def test_switching_branch_and_back_restores_items(memory, repo, code):
    git(repo, "checkout", "-q", "-b", "spike")
    edit(repo, "src/config.py", "value + 1", "value * 2")
    commit(repo, "spike")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"
    spike = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    main = git(repo, "rev-parse", "HEAD")
    st.update_stale(memory, rev_range=f"{spike}..{main}")
    assert status(memory, code["sibling"]) == ("active", "")


def test_missed_hooks_are_caught_up_and_late_hooks_ignored(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 2")
    first = commit(repo, "one")
    st.update_stale(memory, commit=first)
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    commit(repo, "two")
    edit(repo, "src/config.py", "return parse_config(path)", "return parse_config(path) or ''")
    third = commit(repo, "three")
    report = st.update_stale(memory, commit="HEAD")  # the hook of "two" never ran
    assert report["base"] == first
    assert {status(memory, i)[0] for i in code.values()} == {"stale"}
    late = st.update_stale(memory, commit="HEAD~1")
    assert "already applied" in late["message"]
    assert list(st.load_state(memory)["synced_in"].values()) == [third]
    assert "already up to date" in st.update_stale(memory, commit="HEAD")["message"]


def test_work_tree_changes(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 5")
    report = st.update_stale(memory, worktree=True)
    assert status(memory, code["sibling"]) == (
        "stale", "`sibling` in src/config.py changed in the work tree: 1 line")
    assert report["target"] == st.WORKTREE
    assert "synced_in" not in st.load_state(memory)


def test_verify_reanchors_to_the_work_tree(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 5")
    head = commit(repo, "five")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["sibling"])[0] == "stale"
    listed = st.stale_items(memory)
    assert [s["item"].id for s in listed] == [code["sibling"]]
    assert listed[0]["anchors"][0]["entity"] == "symbol:src/config.py::sibling"
    assert listed[0]["anchors"][0]["state"] == "changed"
    result = st.verify(memory, code["sibling"])
    item = memory.get_item(code["sibling"])
    assert (item.status.value, item.stale_reason, item.verified) == ("active", "", True)
    anchor = anchor_of(memory, code["sibling"])
    (entity,) = memory.store.get_entities([anchor["entity"]])
    assert anchor["hash"] == entity["hash"] and anchor["commit"] == head == result["commit"]
    assert st.stale_items(memory) == []


def test_verify_drops_anchors_to_deleted_code(memory, repo, code):
    edit(repo, "src/config.py", "def sibling(value):\n    return value + 1\n\n\n", "")
    commit(repo, "drop sibling")
    st.update_stale(memory, commit="HEAD")
    result = st.verify(memory, code["sibling"])
    assert result["dropped"] == ["symbol:src/config.py::sibling"]
    assert memory.store.anchors([code["sibling"]]) == []
    assert status(memory, code["sibling"]) == ("active", "")


def test_recheck_after_the_code_index(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 7")
    summary = memory.index_code()  # the index rechecks the anchors of what it re-parsed
    assert [s["id"] for s in summary["stale"]] == [code["sibling"]]
    assert "changed in the work tree" in status(memory, code["sibling"])[1]
    assert st.recheck(memory, ["src/config.py"])["stale"] == []


def test_detached_head_binary_files_and_submodules(memory, repo, code, tmp_path):
    git(repo, "checkout", "-q", "--detach")
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    write(sub, "x.txt", "x\n")
    commit(sub, "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/sub")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    edit(repo, "src/config.py", "value + 1", "value + 9")
    commit(repo, "detached: binary, submodule and an edit")
    report = st.update_stale(memory, commit="HEAD")
    assert [s["id"] for s in report["stale"]] == [code["sibling"]]
    (png,) = memory.store.get_entities(["file:logo.png"])
    assert png["hash"] and png["language"] == ""
    assert memory.store.get_entities(["file:vendor/sub"]) == []


def test_shallow_clone(home, repo, tmp_path):
    write(repo, "a.py", "def f():\n    return 1\n")
    commit(repo, "one")
    write(repo, "a.py", "def f():\n    return 2\n")
    commit(repo, "two")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)],
                   check=True, capture_output=True)
    with Memory(Config(home=home, cwd=clone, embed=False)) as memory:
        report = st.update_stale(memory, commit="HEAD")  # parent missing: diff from nothing
        assert report["files"] == 2
        memory.index_code()
        item = memory.add("f returns two", symbols=["f"])
        write(clone, "a.py", "def f():\n    return 3\n")
        commit(clone, "three")
        st.update_stale(memory, commit="HEAD")
        assert memory.get_item(item.id).status.value == "stale"


def test_bad_input(home, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with Memory(Config(home=home, cwd=plain, embed=False)) as memory:
        with pytest.raises(InvalidInput, match="not a git work tree"):
            st.update_stale(memory, commit="HEAD")
        assert st.stale_items(memory) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with Memory(Config(home=home, cwd=empty, embed=False)) as memory:
        assert "no commits yet" in st.update_stale(memory, commit="HEAD")["message"]
        assert "no commits yet" in st.update_stale(memory, rev_range="HEAD~1..HEAD")["message"]
        write(empty, "new.py", "def f():\n    pass\n")
        assert st.update_stale(memory, worktree=True)["files"] == 0  # untracked: not ours yet
        git(empty, "add", "new.py")
        assert st.update_stale(memory, worktree=True)["files"] == 1


def test_unknown_revisions_are_clear_errors(memory, repo):
    with pytest.raises(InvalidInput, match="unknown commit"):
        st.update_stale(memory, commit="no-such-thing")
    with pytest.raises(InvalidInput, match="A..B"):
        st.update_stale(memory, rev_range="HEAD")
    with pytest.raises(InvalidInput, match="one of"):
        st.update_stale(memory, commit="HEAD", worktree=True)


def test_revisions_and_blobs_come_from_one_cat_file(repo):
    """Git.rev and Git.read share the long-lived `cat-file --batch` (no fork per revision)."""
    write(repo, "a b.py", "x = 1\n")
    first = commit(repo, "a file with a space")
    git(repo, "tag", "-a", "v1", "-m", "annotated")
    write(repo, "a b.py", "x = 2\n")
    second = commit(repo, "second")
    with Git.open(repo) as g:
        assert g.head() == second and g.parent(second) == first
        assert g.rev("v1") == first  # an annotated tag peels to its commit
        assert g.rev(f"{first}:a b.py") is None  # a blob is not a commit
        for missing in ("no-such-thing", "HEAD~9", "-v", "", "HEAD\nHEAD", "a 1"):
            assert g.rev(missing) is None
        assert g.read("HEAD:a b.py") is not None and g.read("HEAD:a b.py")[1] == b"x = 2\n"
        assert g.read("HEAD:no such") is None and g.read("v1") is None  # "<name> missing"
        assert g.rev("HEAD") == second  # the batch is still in step after misses
        assert g.rev(f"{second}^2") is None


def test_head_commit_reads_git_files(repo):
    head = git(repo, "rev-parse", "HEAD")
    assert head_commit(repo) == head
    git(repo, "pack-refs", "--all")
    (repo / "deep" / "er").mkdir(parents=True)
    assert head_commit(repo / "deep" / "er") == head
    git(repo, "worktree", "add", "-q", "-b", "wt", str(repo.parent / "wt"))
    assert head_commit(repo.parent / "wt") == head


def test_a_store_from_before_per_checkout_state_catches_up_from_its_commit(memory, repo, code):
    edit(repo, "src/config.py", "value + 1", "value + 2")
    first = commit(repo, "one")
    st.save_state(memory, synced=first)  # what stores wrote before worktrees had their own
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    commit(repo, "two")
    assert st.update_stale(memory, commit="HEAD")["base"] == first


def test_an_update_reads_what_the_last_one_parsed_and_survives_a_damaged_copy(memory, repo, code):
    """The new versions one update parses are kept on disk for the next; a kept copy that no
    longer reads is parsed again."""
    edit(repo, "src/config.py", "return value + 1", "return value + 2")
    commit(repo, "sibling adds two")
    st.update_stale(memory, commit="HEAD")
    blob = git(repo, "rev-parse", "HEAD:src/config.py")
    kept = list((memory.dir / "parsed").rglob(f"{blob}-*.json"))
    assert len(kept) == 1
    assert st.Kept(memory.dir).get(blob, "src/config.py") == st.parse_version(
        "src/config.py", (repo / "src/config.py").read_bytes())
    kept[0].write_text('{"path": "src/config.py", "symbols": [{"qualname": 1}]}')
    edit(repo, "src/config.py", "return open(path).read()", "return open(path).read().strip()")
    commit(repo, "parse_config strips")
    st.update_stale(memory, commit="HEAD")
    assert status(memory, code["parse_config"])[0] == "stale"
    assert status(memory, code["Loader.load"]) == ("active", "")
