"""Vectors stay true to their item's text and to the configured model: an unchanged text is not
embedded again, a changed one is."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import Config, Memory
from graphmem import models as m
from graphmem.cli import main
from graphmem.ingest import compress_session
from graphmem.owner.client import open_memory
from graphmem.store.journal import Journal
from tests.capture.test_lessons import PUSH_FAIL, Session
from tests.conftest import stop_owner
from tests.test_session_memory import ingest

TITLES = ["Run the database migrations before the API tests",
          "Deploys go out on Thursdays after the release freeze",
          "The CI cache breaks when pip is upgraded inside the job"]


def vector_rows(memory: Any) -> list[dict[str, Any]]:
    """Every vector row the journal holds, in write order (the vectors themselves left out)."""
    return journal_vector_rows(memory.journal)


def journal_vector_rows(journal: Journal) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "vec"} for record in journal.records()
            if record["op"] == "put_vectors" for row in record["rows"]]


def add_titles(home: Path, repo: Path) -> tuple[list[str], str]:
    """The TITLES stored with the default model: their ids, and that model's id."""
    with Memory(Config(home=home, cwd=repo)) as memory:
        return [memory.add(t, kind="convention").id for t in TITLES], memory.embedder.model_id


def test_compressing_a_session_again_embeds_no_unchanged_item(memory: Any, tmp_path: Path) -> None:
    session = (Session("s-again").run("git push 2>&1", f"Exit code 128\n{PUSH_FAIL}", error=True)
               .run("git push --set-upstream origin spotter-fum 2>&1", "branch set up"))
    ingest(memory, session, tmp_path)
    written = vector_rows(memory)
    assert len(written) >= 2  # the lesson and the session summary
    compress_session(memory, "s-again")
    assert vector_rows(memory) == written


def test_only_the_item_whose_text_changed_is_embedded_again(memory: Any) -> None:
    def item(item_id: str, body: str) -> m.MemoryItem:
        return m.MemoryItem(id=item_id, project=memory.project, kind=m.ItemKind.convention,
                            title=f"Convention {item_id}", body=body)

    memory.add_items([item("a1", "Run the tests with pytest -q."),
                      item("b1", "Format with ruff format.")], dedupe=False)
    before = len(vector_rows(memory))
    changed = item("b1", "Format with black, line length 100.")
    memory.add_items([item("a1", "Run the tests with pytest -q."), changed], dedupe=False)
    assert [r["id"] for r in vector_rows(memory)[before:]] == ["b1"]
    stored = memory.store.vectors(["b1"])["b1"]
    assert stored["text_hash"] == changed.text_hash
    assert np.allclose(stored["vec"], memory.embedder.encode([changed.text])[0], atol=1e-6)


def test_an_update_of_the_title_embeds_the_new_text(memory: Any) -> None:
    item = memory.add("Deploys go out on Tuesdays", kind="convention")
    updated = memory.update(item.id, title="Deploys go out on Thursdays after the freeze")
    stored = memory.store.vectors([item.id])[item.id]
    assert stored["text_hash"] == updated.text_hash
    assert np.allclose(stored["vec"], memory.embedder.encode([updated.text])[0], atol=1e-6)
    assert memory.update(item.id, confidence=0.95).text_hash == updated.text_hash
    assert vector_rows(memory)[-1]["text_hash"] == updated.text_hash  # no third vector
    assert len(vector_rows(memory)) == 2


def test_opening_the_store_with_another_model_embeds_every_item_again(
        home: Path, repo: Path, cls_model: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids, default = add_titles(home, repo)
    capsys.readouterr()
    with Memory(Config(home=home, cwd=repo, embed_model=cls_model)) as memory:
        model = memory.embedder.model_id
        stored = memory.store.vectors(ids)
        assert {v["model"] for v in stored.values()} == {model} != {default}
        texts = [memory.get_item(i).text for i in ids]
        assert np.allclose([stored[i]["vec"] for i in ids], memory.embedder.encode(texts),
                           atol=1e-5)
        found = memory.rank("what must run before the API tests?", channels_on=["vector"])
        assert found[0] == ids[0]
    assert (f"re-embedding with {model} (stored vectors: {default}): 3 done, 0 left"
            in capsys.readouterr().err)
    with Memory(Config(home=home, cwd=repo, embed_model=cls_model)):
        pass
    assert "re-embedding" not in capsys.readouterr().err


def test_a_search_with_another_model_never_compares_with_the_stored_vectors(
        home: Path, repo: Path, cls_model: str) -> None:
    ids, _ = add_titles(home, repo)
    with Memory(Config(home=home, cwd=repo, embed_model=cls_model), read_only=True) as memory:
        assert memory.rank(TITLES[0], channels_on=["vector"]) == []  # not re-embedded yet
        assert memory.rank(TITLES[0], channels_on=["keyword"])[0] == ids[0]


def test_rebuild_reembed_embeds_every_item_again(home: Path, repo: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ids, _ = add_titles(home, repo)
    journal = Journal(Memory.data_dir_for(Config(home=home, cwd=repo)) / "journal.jsonl")
    before = len(journal_vector_rows(journal))
    assert main(["rebuild", "--reembed", "--cwd", str(repo)]) == 0
    assert "3 vectors (3 embedded)" in capsys.readouterr().out
    assert sorted(r["id"] for r in journal_vector_rows(journal)[before:]) == sorted(ids)
    assert main(["rebuild", "--cwd", str(repo)]) == 0
    assert "3 vectors (0 embedded)" in capsys.readouterr().out


def test_an_owner_embeds_with_a_new_model_after_it_started_answering(
        home: Path, repo: Path, cls_model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids, _ = add_titles(home, repo)
    model = f"sentence-transformers:{cls_model}"
    data_dir = Memory.data_dir_for(Config(home=home, cwd=repo))
    monkeypatch.setenv("GRAPHMEM_EMBED_MODEL", cls_model)
    monkeypatch.setenv("GRAPHMEM_OWNER_WARM_AFTER", "0")
    try:
        with open_memory(Config.from_env(cwd=repo), owner=True) as remote:
            assert remote.ping()["data_dir"] == str(data_dir)
            deadline = time.monotonic() + 90
            # Its vector search sees the items as their vectors of the new model come in.
            while (sorted(remote.rank(TITLES[0], channels_on=["vector"])) != sorted(ids)
                   and time.monotonic() < deadline):
                time.sleep(0.2)
    finally:
        stop_owner(home, repo)
    with Memory(Config(home=home, cwd=repo, embed_model=cls_model), read_only=True) as memory:
        assert {v["model"] for v in memory.store.vectors(ids).values()} == {model}
    assert "3 done, 0 left" in (data_dir / "logs" / "owner.stderr").read_text()
