"""Conformance suite of the :class:`~ragstrata.embed.base.Embedder` protocol.

Subclass :class:`EmbedderContract` (``class TestMyEmbedder(EmbedderContract)``) and provide an
``embedder`` pytest fixture returning the instance under test; load a real model once (a
session fixture) and hand it on. Class attributes state what the implementation promises
beyond the protocol:

* ``batch_atol``: the most any component of a text's vector may move between the text
  embedded inside a batch (of any neighbours, in any order) and alone (default 1e-6: float
  error; 0 for a model that promises bit-identical vectors, such as the int8 ONNX models, which
  encode one text per pass);
* ``symmetric``: ``embed_query(t)`` equals ``embed_documents([t])[0]`` (no query prefix).
  Asymmetric models (e5's ``query:``/``passage:``) leave it ``False``: the suite then only
  asks that a query lies closest to the passage it was written from.

ragstrata's own embedders are subclassed in ``tests/contract/test_embedder_contract.py``.
"""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np
import pytest

from ragstrata.embed.base import Embedder
from ragstrata.text.tokens import TokenCounter

TEXTS: tuple[str, ...] = (
    "How do I declare optional query parameters in FastAPI?",
    "Dependencies with yield run their exit code after the response is sent.",
    "El estado de un componente se conserva mientras se renderice en la misma posición.",
    "Scurvy is caused by a lack of vitamin C in the diet of sailors.",
    "hello world",
    "def add(a: int, b: int) -> int:\n    return a + b",
    "Los impuestos suben el próximo año según el gobierno.",
    "Cats sleep most of the day and hunt at night.",
)
"""Texts of distinct topics (English, Spanish, code, a short one) that every test embeds."""

NORM_TOLERANCE = 1e-5


class EmbedderContract:
    """Tests every :class:`Embedder` must pass (see the module docstring)."""

    batch_atol: ClassVar[float] = 1e-6
    """Largest absolute difference between a text's vector in a batch and embedded alone."""
    symmetric: ClassVar[bool] = False
    """Whether ``embed_query(t)`` equals ``embed_documents([t])[0]``."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("subclasses provide the embedder under test")

    # ------------------------------------------------------------------ protocol
    def test_implements_protocol(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.name, str) and embedder.name.strip() == embedder.name
        assert embedder.name
        assert isinstance(embedder.dim, int) and embedder.dim > 0
        assert embedder.max_seq_length > embedder.special_tokens >= 0

    def test_name_and_dim_are_stable(self, embedder: Embedder) -> None:
        name, dim = embedder.name, embedder.dim
        embedder.embed_documents(TEXTS[:2])
        assert (embedder.name, embedder.dim) == (name, dim)

    def test_counter_counts_tokens(self, embedder: Embedder) -> None:
        counter = embedder.counter
        assert isinstance(counter, TokenCounter)
        assert counter.count("") == 0
        counts = counter.count_many(TEXTS)
        assert counts == [counter.count(t) for t in TEXTS]
        assert all(c > 0 for c in counts)
        long = " ".join(TEXTS) * 20
        cut = counter.cut(long, 16)
        assert 0 < cut < len(long) and counter.count(long[:cut]) <= 16

    # ------------------------------------------------------------------ shapes
    def test_documents_are_float32_unit_rows(self, embedder: Embedder) -> None:
        vectors = embedder.embed_documents(list(TEXTS))
        assert vectors.shape == (len(TEXTS), embedder.dim)
        assert vectors.dtype == np.float32
        assert np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=NORM_TOLERANCE)

    def test_query_is_a_float32_unit_vector(self, embedder: Embedder) -> None:
        query = embedder.embed_query(TEXTS[0])
        assert query.shape == (embedder.dim,)
        assert query.dtype == np.float32
        assert float(np.linalg.norm(query)) == pytest.approx(1.0, abs=NORM_TOLERANCE)

    def test_empty_batch(self, embedder: Embedder) -> None:
        out = embedder.embed_documents([])
        assert out.shape == (0, embedder.dim) and out.dtype == np.float32

    def test_long_text_is_embedded_not_refused(self, embedder: Embedder) -> None:
        long = " ".join(TEXTS) * (embedder.max_seq_length // 8 + 1)
        vectors = embedder.embed_documents([long, TEXTS[4]])
        assert vectors.shape == (2, embedder.dim) and np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=NORM_TOLERANCE)

    # ------------------------------------------------------------------ values
    def test_deterministic(self, embedder: Embedder) -> None:
        first = embedder.embed_documents(list(TEXTS))
        second = embedder.embed_documents(list(TEXTS))
        np.testing.assert_allclose(first, second, atol=1e-6)
        np.testing.assert_allclose(
            embedder.embed_query(TEXTS[2]), embedder.embed_query(TEXTS[2]), atol=1e-6
        )

    def test_batch_equals_one_by_one(self, embedder: Embedder) -> None:
        together = embedder.embed_documents(list(TEXTS))
        alone = np.stack([embedder.embed_documents([t])[0] for t in TEXTS])
        np.testing.assert_allclose(together, alone, rtol=0, atol=self.batch_atol)

    def test_rows_follow_the_input_order(self, embedder: Embedder) -> None:
        texts = [f"{t} " * (1 + i % 3) for i, t in enumerate(TEXTS * 2)]
        order = list(range(len(texts)))
        random.Random(7).shuffle(order)
        base = embedder.embed_documents(texts)
        shuffled = embedder.embed_documents([texts[i] for i in order])
        np.testing.assert_allclose(shuffled, base[order], rtol=0, atol=self.batch_atol)

    def test_query_lies_closest_to_its_own_passage(self, embedder: Embedder) -> None:
        """Asymmetry is allowed (a query prefix), but a query still finds its passage."""
        passages = embedder.embed_documents(list(TEXTS))
        queries = np.stack([embedder.embed_query(t) for t in TEXTS])
        assert (np.argmax(queries @ passages.T, axis=1) == np.arange(len(TEXTS))).all()
        if self.symmetric:
            alone = np.stack([embedder.embed_documents([t])[0] for t in TEXTS])
            np.testing.assert_allclose(queries, alone, atol=1e-6)
