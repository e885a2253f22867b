"""An embedder that remembers recent vectors, for the read path of one engine.

One ``ask`` embeds the same texts more than once: the question as a query (the search, the
answerability check's sentence cosines, the extractive answerer's sentence choice) and the first
hits' sentences as passages (the answerability check's ``sentence_dense``, then the extractive
answerer's candidates, or the citation checker's sources). :class:`CachedEmbedder` wraps the
engine's embedder and keeps the last :data:`PASSAGES` passage vectors and :data:`QUERIES` query
vectors (least recently used out), so each of those texts is embedded once. The vectors are the
wrapped embedder's own: ``e5-onnx`` embeds one text per pass, so a text's vector does not depend
on what it was embedded with; for a batching embedder a cached vector is the one of the batch
that first held the text. Returned arrays are read-only (a caller that changed one in place
would change it for the next caller too). Thread-safe: the service asks from several threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ragstrata.embed.base import Embedder
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import FloatArray

__all__ = ["PASSAGES", "QUERIES", "CachedEmbedder"]

PASSAGES = 4096
"""Passage vectors kept (384 float32 each for e5-small: about 6 MB)."""

QUERIES = 256
"""Query vectors kept."""


class CachedEmbedder:
    """``embedder`` with its last :data:`PASSAGES` passage and :data:`QUERIES` query vectors
    kept; an :class:`~ragstrata.embed.base.Embedder` itself (same ``name``, ``dim``, tokenizer)."""

    def __init__(
        self, embedder: Embedder, *, passages: int = PASSAGES, queries: int = QUERIES
    ) -> None:
        self.embedder = embedder
        self._passages: OrderedDict[str, FloatArray] = OrderedDict()
        self._queries: OrderedDict[str, FloatArray] = OrderedDict()
        self._max_passages = passages
        self._max_queries = queries
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def dim(self) -> int:
        return self.embedder.dim

    @property
    def max_seq_length(self) -> int:
        return self.embedder.max_seq_length

    @property
    def special_tokens(self) -> int:
        return self.embedder.special_tokens

    @property
    def counter(self) -> TokenCounter:
        return self.embedder.counter

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 (n, dim), unit rows: the kept vectors, and the others embedded in one call
        of the wrapped embedder (each distinct text once)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            found = {t: v for t in texts if (v := self._passages.get(t)) is not None}
            for t in found:
                self._passages.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vectors = self.embedder.embed_documents(missing)
            with self._lock:
                for t, v in zip(missing, vectors, strict=True):
                    row = _frozen(v)
                    found[t] = row
                    self._passages[t] = row
                while len(self._passages) > self._max_passages:
                    self._passages.popitem(last=False)
        out = np.stack([found[t] for t in texts])
        out.flags.writeable = False
        return out

    def embed_query(self, text: str) -> FloatArray:
        """float32 (dim,), unit norm; read-only."""
        with self._lock:
            vector = self._queries.get(text)
            if vector is not None:
                self._queries.move_to_end(text)
                return vector
        vector = _frozen(self.embedder.embed_query(text))
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > self._max_queries:
                self._queries.popitem(last=False)
        return vector


def _frozen(vector: FloatArray) -> FloatArray:
    row = np.array(vector, dtype=np.float32)  # a copy: the wrapped embedder's buffer is its own
    row.flags.writeable = False
    return row
