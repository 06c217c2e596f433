"""The CLI as a person uses it: real processes for the error paths, in-process for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmem.cli import main


def run(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=120, check=False)


def where(home: Path, repo: Path) -> Path:
    """The store directory (what `graphmem where` prints; test_where_is_outside_repo runs it)."""
    from graphmem import Config, Memory

    return Memory.data_dir_for(Config(home=home, cwd=repo))


def cli(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--cwd", str(repo)] if args else [])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_search_get_list_forget(capsys, home: Path, repo: Path) -> None:
    code, out, _ = cli(capsys, repo, "add", "--kind", "pitfall", "--file", "src/db.py",
                       "ECONNREFUSED 127.0.0.1:5432 in pytest: start postgres with make db first")
    assert code == 0 and out.startswith("added ")
    item_id = out.split()[1]
    code, out, _ = cli(capsys, repo, "search", "connection refused when running tests", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and hits[0]["item"]["id"] == item_id
    code, out, _ = cli(capsys, repo, "get", item_id)
    assert "ECONNREFUSED" in out and "error:ECONNREFUSED" in out
    code, out, _ = cli(capsys, repo, "list", "--json")
    assert [i["id"] for i in json.loads(out)] == [item_id]
    code, out, _ = cli(capsys, repo, "forget", item_id)
    assert code == 0 and "forgot" in out
    code, out, _ = cli(capsys, repo, "list")
    assert "no memories yet" in out


def test_export_import_round_trip(capsys, home: Path, repo: Path, tmp_path: Path) -> None:
    cli(capsys, repo, "add", "--kind", "decision", "We use psycopg 3, not SQLAlchemy")
    cli(capsys, repo, "add", "--kind", "convention", "Never commit .env files")
    for fmt in ("jsonl", "markdown"):
        target = tmp_path / f"export.{fmt}"
        assert cli(capsys, repo, "export", "--format", fmt, "-o", str(target))[0] == 0
        other = tmp_path / f"other-{fmt}"
        other.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=other, check=True)
        code, out, _ = cli(capsys, other, "import", str(target))
        assert code == 0 and "imported 2" in out
        code, out, _ = cli(capsys, other, "list", "--json")
        assert sorted(i["title"] for i in json.loads(out)) == [
            "Never commit .env files", "We use psycopg 3, not SQLAlchemy"]


def test_where_is_outside_repo(capsys, home: Path, repo: Path) -> None:
    code, out, _ = cli(capsys, repo, "where")
    assert code == 0 and out.strip().startswith(str(home))


@pytest.mark.parametrize("args, stdin, message", [
    (("get", "nope"), None, "no memory with id"),
    (("forget", "nope"), None, "no memory with id"),
    (("add", ""), None, "empty text"),
    (("add", "-"), b"\xff\xfe\x00binary", "not valid UTF-8"),
])
def test_bad_input_is_one_clear_line(home: Path, repo: Path, args, stdin, message) -> None:
    result = run(*args, cwd=repo, stdin=stdin)
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode != 0
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("graphmem: error:")


def test_five_megabyte_text_is_refused(home: Path, repo: Path) -> None:
    result = run("add", "-", cwd=repo, stdin=b"x" * 5_000_000)
    assert result.returncode == 2 and b"too long" in result.stderr


def test_corrupt_database_says_rebuild_and_rebuild_restores(home: Path, repo: Path) -> None:
    assert run("add", "Keep this fact about Makefile targets", cwd=repo).returncode == 0
    data_dir = where(home, repo)
    (data_dir / "graph.kuzu").write_bytes(b"garbage" * 1000)
    result = run("list", cwd=repo)
    assert result.returncode != 0 and b"rebuild" in result.stderr
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert run("rebuild", cwd=repo).returncode == 0
    assert b"Keep this fact" in run("list", cwd=repo).stdout


def test_read_only_data_dir_is_a_clear_error(home: Path, repo: Path) -> None:
    if os.geteuid() == 0:
        # root ignores permission bits; make the data dir path unusable instead.
        home.parent.mkdir(parents=True, exist_ok=True)
        home.write_text("not a directory")
    else:
        home.mkdir(parents=True)
        home.chmod(0o500)
    result = run("add", "A fact", cwd=repo)
    assert result.returncode != 0
    assert len(result.stderr.decode().strip().splitlines()) == 1


def test_locked_store_is_a_clear_error_and_loses_nothing(home: Path, repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_OPEN_WAIT", "1")  # the holder never lets go: don't wait 10 s
    assert run("add", "First fact survives the lock", cwd=repo).returncode == 0
    data_dir = where(home, repo)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, pathlib
        from graphmem.store.kuzu import KuzuStore
        s = KuzuStore(pathlib.Path({str(data_dir / 'graph.kuzu')!r}))
        print('open', flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        result = run("add", "Second fact", cwd=repo)
        assert result.returncode != 0 and b"in use" in result.stderr
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert b"First fact survives" in run("list", cwd=repo).stdout
