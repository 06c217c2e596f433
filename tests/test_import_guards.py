"""Import trusts nothing: sizes, control bytes, ids, other projects' items, markdown that must
round-trip exactly, and bad files that give one line and exit 2 (`import` and `eval`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphmem import Config, Memory
from graphmem.errors import InvalidInput
from graphmem.exporting import from_markdown, read_export, to_markdown


def record(**fields: Any) -> dict[str, Any]:
    return {"id": "0123456789abcdef", "kind": "fact", "title": "Plain fact", "body": "",
            "status": "active", "confidence": 0.8, "source": "user", **fields}


def graphmem(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBED": "false",
           "GRAPHMEM_NO_WORKER": "1"}
    return subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=180, check=False)


def one_clean_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def store(home: Path, repo: Path) -> Any:
    with Memory(Config(home=home, cwd=repo, embed=False)) as memory:
        yield memory


@pytest.mark.parametrize(("fields", "message"), [
    ({"title": "x" * 5_000_000}, "title is 5,000,000 characters"),
    ({"title": "nul\x00byte"}, "control byte 0x00"),
    ({"body": "escape \x1b[31m red"}, "control byte 0x1b"),
    ({"tags": ["t\x07"]}, "control byte 0x07"),
    ({"id": "../../x"}, "not an id"),
    ({"id": "a/b"}, "not an id"),
    ({"id": 7}, "not an id"),
    ({"tags": [f"t{i}" for i in range(500)]}, "500 tags"),
    ({"files": ["src/" + "a" * 5000]}, "files is 5,004 characters"),
    ({"files": 5}, "files must be a list"),
    ({"symbols": [1, 2]}, "symbols must hold strings"),
    ({"title": 42}, "title must be a string"),
])
def test_a_bad_record_is_refused_and_nothing_is_imported(store: Memory, fields: dict,
                                                         message: str) -> None:
    good = record(id="aaaaaaaaaaaaaaaa", title="A good record before the bad one")
    with pytest.raises(InvalidInput, match=message):
        store.import_items([good, record(**fields)])
    assert store.export_items() == []


def test_an_id_of_another_project_is_never_overwritten(home: Path, repo: Path) -> None:
    with Memory(Config(home=home, cwd=repo, embed=False)) as mine:
        kept = mine.add("Deploys go through the staging cluster first", kind="convention")
    with Memory(Config(home=home, cwd=repo, embed=False, project="other")) as other:
        with pytest.raises(InvalidInput, match="another project"):
            other.import_items([record(id=kept.id, title="Overwritten by an import")])
        assert other.export_items() == []
    with Memory(Config(home=home, cwd=repo, embed=False)) as mine:
        assert mine.get_item(kept.id).title == kept.title


def test_an_id_twice_in_one_import_is_refused(store: Memory) -> None:
    with pytest.raises(InvalidInput, match="twice"):
        store.import_items([record(title="first"), record(title="second")])


TRICKY = [
    record(id="a1", title="Body with headings", body="## not a heading\n\n## Another\ntext"),
    record(id="a2", title="Comment --> <!-- graphmem: {\"id\": \"evil\"} -->",
           body='<!-- graphmem: {"id": "evil", "title": "x"} -->\nafter\n\n\n  indented  \n'),
    record(id="a3", title="Body equal to title", body="Body equal to title"),
    record(id="a4", title="Files and stars", body="*fact · active*\n\nFiles: `x.py`",
           files=["src/app.py"]),
    record(id="a5", title="# one hash", body="\n\nleading blank lines"),
    record(id="a6", title="Trailing", body="ends with blank lines\n\n"),
]


def test_markdown_round_trips_any_body_exactly(tmp_path: Path) -> None:
    text = to_markdown("demo", TRICKY)
    assert from_markdown(text) == TRICKY
    path = tmp_path / "export.md"
    path.write_text(text, encoding="utf-8")
    assert read_export(path) == TRICKY


def test_markdown_import_stores_exactly_what_was_exported(store: Memory, tmp_path: Path) -> None:
    store.import_items([{k: v for k, v in r.items() if k != "files"} for r in TRICKY])
    exported = store.export_items()
    path = tmp_path / "export.md"
    path.write_text(to_markdown(store.project, exported), encoding="utf-8")
    assert read_export(path) == exported


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("## not a heading\n", "## not a heading\nadded line\n"), "edited"),
    (lambda t: t.replace("## Body with headings", "## Renamed"), "heading differs"),
    (lambda t: t.replace("text\n\n## Comment", "text\n\nstray words\n## Comment"), "edited"),
])
def test_an_edited_markdown_body_is_refused_with_a_clear_line(edit: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        from_markdown(edit(to_markdown("demo", TRICKY)))


NESTED = {"a": 1}
for _ in range(100):
    NESTED = {"a": NESTED}
# One refused record stands for the checks of check_record: a control byte, a wrong type and a bad
# id raise in the same call, which import_items turns into InvalidInput and the CLI into one
# line and exit 2; test_a_bad_record_is_refused_and_nothing_is_imported runs each check.
BAD_FILES = {
    "deep.jsonl": b"[" * 200_000 + b"]" * 200_000,
    "deep-field.jsonl": json.dumps(record(extra=NESTED)).encode(),
    "nul.jsonl": json.dumps(record(title="a\x00b")).encode(),
    "deep-meta.md": (b'# x\n\n## t\n\n<!-- graphmem: {"a": ' + b"[" * 100_000 + b"]" * 100_000
                     + b"} -->\n"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_import_file_is_one_line_and_exit_2(home: Path, repo: Path, tmp_path: Path,
                                                  name: str) -> None:
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name])
    one_clean_line(graphmem("import", str(path), cwd=repo, home=home))


def test_a_directory_or_a_missing_file_is_one_line(home: Path, repo: Path, tmp_path: Path) -> None:
    one_clean_line(graphmem("import", str(tmp_path), cwd=repo, home=home))
    one_clean_line(graphmem("import", str(tmp_path / "missing.jsonl"), cwd=repo, home=home))


def test_an_import_over_the_size_limit_is_refused_before_reading(home: Path, repo: Path,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(record(title="small")) + "\n")
    env = {"GRAPHMEM_MAX_IMPORT_BYTES": "10"}
    done = subprocess.run([sys.executable, "-m", "graphmem", "import", str(path)], cwd=repo,
                          env={**os.environ, "GRAPHMEM_HOME": str(home), **env},
                          capture_output=True, timeout=60, check=False)
    assert "over the import limit" in one_clean_line(done)


EVAL_FILES = {
    "binary": b"\x00\xff\xfe",
    "deep": b"[" * 200_000,
    "text-number": b'{"id": "a", "scope": "s", "text": 5}\n',
    "ts-string": b'{"id": "a", "scope": "s", "text": "t", "ts_unix": "soon"}\n',
    "files-string": b'{"id": "a", "scope": "s", "text": "t", "files": "a.py"}\n',
}


@pytest.mark.parametrize("name", sorted(EVAL_FILES))
def test_eval_on_a_bad_file_is_one_line_and_exit_2(home: Path, repo: Path, tmp_path: Path,
                                                   name: str) -> None:
    items = tmp_path / "items.jsonl"
    items.write_bytes(EVAL_FILES[name])
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"qid": "q", "scope": "s", "text": "t", "expected": ["a"]}\n')
    one_clean_line(graphmem("eval", str(items), str(queries), cwd=repo, home=home))
