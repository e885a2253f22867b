"""The :class:`~ragstrata.testing.retriever.RetrieverContract` for ragstrata's hybrid retriever
over the embedded Qdrant Edge store, with BM25 weights computed as the index writer does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragstrata.config import BM25Config, RetrievalConfig
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.hybrid import HybridRetriever, Retriever
from ragstrata.testing.fakes import HashEmbedder
from ragstrata.testing.retriever import RetrieverContract, bm25_vectors, retriever_corpus
from ragstrata.text.analyzer import Analyzer


class TestHybridRetriever(RetrieverContract):
    @pytest.fixture
    def retriever(self, tmp_path: Path) -> Iterator[Retriever]:
        embedder, analyzer, bm25 = HashEmbedder(), Analyzer(), BM25Config()
        chunks = retriever_corpus()
        sparse = bm25_vectors(chunks, analyzer, bm25)
        store = EdgeStore(tmp_path / "shard", dim=embedder.dim)
        store.upsert(chunks, embedder.embed_documents([c.text for c in chunks]), sparse)
        retriever = HybridRetriever(store, embedder, analyzer, RetrievalConfig())
        yield retriever
        retriever.close()
        store.close()
