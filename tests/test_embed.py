"""The hand-written MiniLM forward pass gives sentence-transformers' vectors, without its imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphmem.embed import DIMENSIONS, Embedder, embedder_for
from graphmem.errors import InvalidInput
from tests.conftest import minilm_variant

TEXTS = ["Use psycopg 3, not psycopg2: async support", "", "  surrounding spaces  ",
         "retry " * 400,  # beyond the 256-token window: truncated the same way
         "E0433 in build: src/net/client.py::Client.retry", "why is the retry limit 3?",
         "Ünïcödé, emoji 🚀 and CJK 記憶"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def test_matches_sentence_transformers(embedder: Embedder) -> None:
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(embedder.model_path, device="cpu").encode(
        TEXTS, batch_size=3, normalize_embeddings=True, convert_to_numpy=True,
        show_progress_bar=False)
    ours = embedder.encode(TEXTS, batch_size=3)
    assert ours.shape == (len(TEXTS), DIMENSIONS) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5


def test_batching_and_order_do_not_change_vectors(embedder: Embedder) -> None:
    one_by_one = np.stack([embedder.encode([t])[0] for t in TEXTS])
    batched = embedder.encode(TEXTS, batch_size=64)
    assert np.abs(one_by_one - batched).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, DIMENSIONS)


def test_loading_the_model_imports_neither_torch_nor_sentence_transformers() -> None:
    code = ("import sys; from graphmem.embed import Embedder; Embedder().encode(['x']); "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'scipy')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_model_named_in_config_runs_through_sentence_transformers(embedder: Embedder,
                                                                     cls_model: str) -> None:
    st = pytest.importorskip("sentence_transformers")
    named = embedder_for(cls_model)
    assert named.model_id == f"sentence-transformers:{cls_model}" != embedder.model_id
    reference = st.SentenceTransformer(cls_model, device="cpu").encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    ours = named.encode(TEXTS, batch_size=3)
    assert ours.shape == (len(TEXTS), DIMENSIONS) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.abs(ours - embedder.encode(TEXTS)).max() > 0.1  # CLS pooling, not MiniLM's mean


def test_a_model_whose_vectors_do_not_fit_the_store_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    wide = minilm_variant(tmp_path / "minilm-cls-mean", pooling_mode_cls_token=True)
    with pytest.raises(InvalidInput, match="makes 768-d vectors; the store holds 384-d"):
        embedder_for(wide).encode(["x"])
    with pytest.raises(InvalidInput, match="cannot load embed_model .* offline"):
        embedder_for(str(tmp_path / "no-such-model")).encode(["x"])


def test_without_torch_the_default_model_works_and_a_named_one_says_what_to_install(
        home: Path, repo: Path, cls_model: str) -> None:
    """What a core `pip install graphmem` (no `st` extra) can do: torch and
    sentence-transformers made unimportable, as if absent."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = sys.modules["sentence_transformers"] = None
        from graphmem import Config, Memory
        from graphmem.errors import InvalidInput
        with Memory(Config(home={str(home)!r}, cwd={str(repo)!r})) as memory:
            item = memory.add("Run the migrations before the API tests", kind="convention")
            found = memory.rank("what do the API tests need first?", channels_on=["vector"])
            assert found == [item.id], found
        try:
            Memory(Config(home={str(home)!r}, cwd={str(repo)!r}, embed_model={cls_model!r}))
        except InvalidInput as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'graphmem[st]'" in out.stdout
