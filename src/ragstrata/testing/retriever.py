"""Conformance suite of the :class:`~ragstrata.retrieve.hybrid.Retriever` protocol.

Subclass :class:`RetrieverContract` and provide a ``retriever`` pytest fixture: the retriever
under test over an index holding exactly the chunks of :func:`retriever_corpus` (embedded and
BM25-weighted however the implementation does it), closed by the fixture.

Promises checked: hits ranked ``1..n`` best first, at most ``top_k``, unique chunks, each with
the ranks and scores of the arms that found it (``explain``); ``bm25`` and ``dense`` modes run
one arm, ``hybrid`` fuses both; a query term found in one chunk alone ranks that chunk first in
``bm25`` and ``hybrid``; filters restrict every hit; the same query gives the same result;
an empty query or an unknown mode raises RetrievalError; ``close`` is idempotent.
ragstrata's own retriever is subclassed in ``tests/contract/test_retriever_contract.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from ragstrata.errors import RetrievalError
from ragstrata.index.bm25 import bm25_document_weights
from ragstrata.retrieve.hybrid import Retriever
from ragstrata.testing.fakes import make_chunk
from ragstrata.types import Chunk

if TYPE_CHECKING:
    from ragstrata.config import BM25Config
    from ragstrata.index.base import SparseVector
    from ragstrata.text.analyzer import Analyzer

TEXTS: tuple[tuple[str, str, str], ...] = (
    ("doc-a", "en", "Install the server with pip and start it with the serve command."),
    ("doc-a", "en", "The configuration file sets the port, the host and the log level."),
    ("doc-a", "en", "Error RS503 means the index is locked by another writer."),
    ("doc-b", "es", "Instala el servidor con pip y arráncalo con la orden serve."),
    ("doc-b", "es", "El archivo de configuración fija el puerto, el host y el nivel de registro."),
    ("doc-c", "en", "Release notes: the zebrafish parser was rewritten for speed."),
)
"""(doc id, language, text) of the chunks every retriever under test indexes."""


def retriever_corpus() -> list[Chunk]:
    """The chunks of :data:`TEXTS` (ids deterministic)."""
    return [make_chunk(doc, i, text, language=lang) for i, (doc, lang, text) in enumerate(TEXTS)]


def bm25_vectors(
    chunks: Sequence[Chunk], analyzer: Analyzer, bm25: BM25Config
) -> list[SparseVector]:
    """The BM25 sparse vector of each chunk as the index writer computes it, with the
    ``avgdl`` of these chunks alone: what a test hands :meth:`VectorStore.upsert` beside the
    dense vectors to build a real store without the ingest pipeline."""
    terms = [Counter(analyzer.terms(c.text)) for c in chunks]
    avgdl = sum(sum(t.values()) for t in terms) / max(len(terms), 1)
    return [
        bm25_document_weights(t, doc_len=sum(t.values()), avgdl=avgdl, k1=bm25.k1, b=bm25.b)
        for t in terms
    ]


class RetrieverContract:
    """Tests every :class:`Retriever` must pass (see the module docstring)."""

    @pytest.fixture
    def retriever(self) -> Retriever:
        raise NotImplementedError("subclasses provide the retriever under test")

    @pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
    def test_ranked_unique_hits_within_top_k(self, retriever: Retriever, mode: str) -> None:
        result = retriever.search("configuration port host", top_k=3, mode=mode)  # type: ignore[arg-type]
        assert 0 < len(result.hits) <= 3
        assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
        ids = [h.chunk.chunk_id for h in result.hits]
        assert len(set(ids)) == len(ids)
        known = {c.chunk_id for c in retriever_corpus()}
        assert set(ids) <= known
        if mode == "hybrid":
            scores = [h.score for h in result.hits]
            assert scores == sorted(scores, reverse=True)
        for hit in result.hits:
            arms = {e.retriever for e in hit.explain}
            assert arms and arms <= ({"dense", "bm25"} if mode == "hybrid" else {mode})

    @pytest.mark.parametrize("mode", ["hybrid", "bm25"])
    def test_a_rare_term_ranks_its_chunk_first(self, retriever: Retriever, mode: str) -> None:
        result = retriever.search("zebrafish", top_k=3, mode=mode)  # type: ignore[arg-type]
        assert result.hits[0].chunk.doc_id == "doc-c"

    def test_filters_restrict_every_hit(self, retriever: Retriever) -> None:
        result = retriever.search("servidor configuración", top_k=5, filters={"doc_id": "doc-b"})
        assert result.hits and {h.chunk.doc_id for h in result.hits} == {"doc-b"}

    def test_same_query_same_result(self, retriever: Retriever) -> None:
        first = retriever.search("install the server", top_k=5)
        again = retriever.search("install the server", top_k=5)
        assert [(h.chunk.chunk_id, h.score) for h in first.hits] == [
            (h.chunk.chunk_id, h.score) for h in again.hits
        ]

    def test_empty_query_and_unknown_mode_raise(self, retriever: Retriever) -> None:
        with pytest.raises(RetrievalError):
            retriever.search("   ")
        with pytest.raises(RetrievalError):
            retriever.search("server", mode="sideways")  # type: ignore[arg-type]

    def test_close_is_idempotent(self, retriever: Retriever) -> None:
        retriever.close()
        retriever.close()
