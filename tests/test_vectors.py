"""Vectors stay true to their item's text and to the configured model: an unchanged text is not
embedded again, a changed one is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphmem import models as m
from graphmem.ingest import compress_session
from tests.capture.test_lessons import PUSH_FAIL, Session
from tests.test_session_memory import ingest


def vector_rows(memory: Any) -> list[dict[str, Any]]:
    """Every vector row the journal holds, in write order (the vectors themselves left out)."""
    return [{k: v for k, v in row.items() if k != "vec"} for record in memory.journal.records()
            if record["op"] == "put_vectors" for row in record["rows"]]


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
