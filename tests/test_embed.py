"""The hand-written MiniLM forward pass gives sentence-transformers' vectors, without its imports."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from graphmem.embed import DIMENSIONS, Embedder

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
