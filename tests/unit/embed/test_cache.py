"""CachedEmbedder: the read path's embedder with recent vectors kept (real e5-onnx)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from ragstrata.embed.base import Embedder
from ragstrata.embed.cache import CachedEmbedder


class _Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.passages: list[str] = []
        self.queries: list[str] = []
        self.name, self.dim = embedder.name, embedder.dim
        self.max_seq_length, self.special_tokens = embedder.max_seq_length, embedder.special_tokens
        self.counter = embedder.counter

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.passages.extend(texts)
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        self.queries.append(text)
        return self.embedder.embed_query(text)


@pytest.fixture(scope="module")
def e5() -> Embedder:
    from ragstrata.stages import load_embedder

    return load_embedder("e5-onnx")


def test_vectors_are_the_wrapped_embedders_and_each_text_is_embedded_once(e5: Embedder) -> None:
    counting = _Counting(e5)
    cached = CachedEmbedder(counting)  # type: ignore[arg-type]
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.dim) == (e5.name, e5.dim)
    nile = "El Nilo es un río de África."
    texts = [nile, "FastAPI usa Pydantic.", nile]
    first = cached.embed_documents(texts)
    assert first.shape == (3, e5.dim) and first.dtype == np.float32
    np.testing.assert_array_equal(first, e5.embed_documents(texts))  # one text per pass
    assert counting.passages == texts[:2]  # the repeat inside one call is embedded once
    again = cached.embed_documents(["FastAPI usa Pydantic.", "Otra frase distinta."])
    np.testing.assert_array_equal(again[0], first[1])
    assert counting.passages == [*texts[:2], "Otra frase distinta."]
    q = cached.embed_query("¿Qué es el Nilo?")
    assert cached.embed_query("¿Qué es el Nilo?") is q and counting.queries == ["¿Qué es el Nilo?"]
    np.testing.assert_array_equal(q, e5.embed_query("¿Qué es el Nilo?"))
    assert cached.embed_documents([]).shape == (0, e5.dim)


def test_vectors_are_read_only_and_the_oldest_are_dropped(e5: Embedder) -> None:
    counting = _Counting(e5)
    cached = CachedEmbedder(counting, passages=2, queries=1)  # type: ignore[arg-type]
    out = cached.embed_documents(["uno dos tres", "cuatro cinco seis"])
    with pytest.raises(ValueError):
        out[0, 0] = 1.0
    with pytest.raises(ValueError):
        cached.embed_query("hola mundo")[0] = 1.0
    cached.embed_documents(["uno dos tres"])  # used: now the most recent
    cached.embed_documents(["siete ocho nueve"])  # drops "cuatro cinco seis"
    cached.embed_documents(["uno dos tres", "cuatro cinco seis"])
    assert counting.passages.count("uno dos tres") == 1
    assert counting.passages.count("cuatro cinco seis") == 2
    cached.embed_query("otra pregunta")
    cached.embed_query("hola mundo")
    assert counting.queries.count("hola mundo") == 2


def test_threads_share_one_cache(e5: Embedder) -> None:
    cached = CachedEmbedder(e5)
    texts = [f"Frase número {i} sobre el índice." for i in range(12)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: cached.embed_documents(texts[i % 4 :]), range(16)))
    expected = e5.embed_documents(texts)
    for i, got in enumerate(results):
        np.testing.assert_array_equal(got, expected[i % 4 :])
