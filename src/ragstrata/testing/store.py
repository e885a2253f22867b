"""Conformance suite of the :class:`~ragstrata.index.base.VectorStore` protocol; every
implementation subclasses :class:`StoreContract` (``class TestMyStore(StoreContract)``).

A subclass provides ``make_store``: a pytest fixture returning a zero-argument callable that
opens the store (dimension :data:`DIM`) at one fixed location (calling it again after
``close()`` reopens the same data; a backend without persistence sets ``persistent = False``).
ragstrata's own backends are subclassed in ``tests/contract/test_store_contract.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar

import numpy as np
import pytest

from ragstrata.errors import DimensionMismatchError, StoreError
from ragstrata.index.base import SparseVector, VectorStore
from ragstrata.index.bm25 import term_id
from ragstrata.testing.fakes import make_chunk
from ragstrata.types import Chunk, FloatArray

DIM = 8
"""Dimension of the vectors the suite writes; ``make_store`` opens stores of this size."""

Filled = tuple[VectorStore, list[Chunk], FloatArray]
"""The ``filled`` fixture: the store, the chunks of :func:`corpus` and their dense vectors."""


def unit_vectors(n: int, seed: int) -> FloatArray:
    """``n`` random float32 unit vectors of :data:`DIM` dims (the same for the same seed)."""
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    out: FloatArray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def sparse(*terms: str) -> SparseVector:
    """Sparse vector of weight 0.5 per term."""
    return {term_id(t): 0.5 for t in terms}


def corpus() -> tuple[list[Chunk], FloatArray, list[SparseVector]]:
    """Six chunks of three documents (English, Spanish, one without language, one with pages
    and another source), with dense and sparse vectors: what ``filled`` writes."""
    chunks = [
        make_chunk("doc-a", 0, "alpha install guide", language="en", lang="en", tier=1),
        make_chunk("doc-a", 1, "alpha configure server", language="en", lang="en", tier=2),
        make_chunk("doc-a", 2, "alpha troubleshooting", language="en", lang="en", tier=1),
        make_chunk("doc-b", 0, "beta guía de instalación", language="es", lang="es", tier=1),
        make_chunk(
            "doc-b", 1, "beta configuración", language="es", pages=(2, 3), lang="es", tier=2
        ),
        make_chunk("doc-c", 0, "gamma release notes", source="notes/gamma.md", lang="en", tier=3),
    ]
    sparse_vectors = [sparse(*c.text.split()) for c in chunks]
    return chunks, unit_vectors(len(chunks), seed=7), sparse_vectors


class StoreContract:
    """Tests every :class:`VectorStore` must pass."""

    persistent: ClassVar[bool] = True
    """Whether ``make_store()`` after ``close()`` sees the data written before."""

    @pytest.fixture
    def make_store(self) -> Callable[[], VectorStore]:
        raise NotImplementedError("subclasses provide the store factory")

    @pytest.fixture
    def store(self, make_store: Callable[[], VectorStore]) -> Iterator[VectorStore]:
        s = make_store()
        yield s
        s.close()

    @pytest.fixture
    def filled(self, store: VectorStore) -> Filled:
        chunks, dense, sparse_vectors = corpus()
        store.upsert(chunks, dense, sparse_vectors)
        return store, chunks, dense

    # ------------------------------------------------------------------ protocol & writes
    def test_implements_protocol(self, store: VectorStore) -> None:
        assert isinstance(store, VectorStore)
        assert store.dim == DIM

    def test_empty_store(self, store: VectorStore) -> None:
        assert store.count() == 0
        assert store.count({"doc_id": "doc-a"}) == 0
        assert store.chunk_ids() == []
        assert store.chunk_ids({"language": "en"}) == []
        assert store.get([make_chunk("x", 0, "x").chunk_id]) == []
        assert store.dense_search(unit_vectors(1, 1)[0], limit=5) == []
        assert store.dense_search_ids(unit_vectors(1, 1)[0], limit=5, filters={"doc_id": "x"}) == []
        assert store.sparse_search(sparse("alpha"), limit=5) == []
        assert store.sparse_search({}, limit=5) == []
        assert store.dense_vectors([make_chunk("x", 0, "x").chunk_id]) == {}
        store.delete_documents(["doc-a"])
        store.flush()
        assert store.count() == 0

    def test_upsert_then_count(self, filled: Filled) -> None:
        store, chunks, _ = filled
        assert store.count() == len(chunks)

    def test_upsert_same_chunk_id_is_idempotent(self, filled: Filled) -> None:
        store, chunks, dense = filled
        store.upsert(chunks, dense, [sparse(*c.text.split()) for c in chunks])
        assert store.count() == len(chunks)
        assert sorted(store.chunk_ids()) == sorted(c.chunk_id for c in chunks)

    def test_upsert_replaces_payload_and_vectors(self, filled: Filled) -> None:
        store, chunks, _ = filled
        old = chunks[0]
        new = make_chunk(old.doc_id, old.index, old.text, lang="fr", tier=9)
        assert new.chunk_id == old.chunk_id
        vector = unit_vectors(1, seed=99)
        store.upsert([new], vector, [sparse("omega")])
        assert store.count() == len(chunks)
        assert store.get([old.chunk_id])[0].metadata == {"lang": "fr", "tier": 9}
        assert store.dense_search(vector[0], limit=1)[0][0].chunk_id == old.chunk_id
        assert store.sparse_search(sparse("install"), limit=5) == []
        assert [c.chunk_id for c, _ in store.sparse_search(sparse("omega"), limit=5)] == [
            old.chunk_id
        ]

    def test_update_sparse_replaces_only_the_sparse_vectors(self, filled: Filled) -> None:
        """New BM25 weights for two chunks: sparse search ranks by them, the other chunks,
        every dense vector and every payload stay; an empty vector changes nothing."""
        store, chunks, dense = filled
        first, second = chunks[0], chunks[1]
        before = store.sparse_search(sparse("alpha"), limit=5)
        assert len(before) == 3
        store.update_sparse(
            [first.chunk_id, second.chunk_id, chunks[2].chunk_id],
            [{term_id("alpha"): 0.1}, {term_id("alpha"): 2.0, term_id("omega"): 1.0}, {}],
        )
        store.flush()
        assert store.count() == len(chunks)
        hits = store.sparse_search(sparse("alpha"), limit=5)
        assert [c.chunk_id for c, _ in hits] == [
            second.chunk_id,
            chunks[2].chunk_id,
            first.chunk_id,
        ]
        assert [c.chunk_id for c, _ in store.sparse_search(sparse("omega"), limit=5)] == [
            second.chunk_id
        ]
        assert store.get([c.chunk_id for c in chunks]) == chunks
        vectors = store.dense_vectors([c.chunk_id for c in chunks])
        for chunk, row in zip(chunks, dense, strict=True):
            np.testing.assert_allclose(vectors[chunk.chunk_id], row, atol=1e-2)
        with pytest.raises(StoreError):
            store.update_sparse([first.chunk_id], [])

    def test_malformed_ids_are_unknown_ids(self, filled: Filled) -> None:
        """An id that is no chunk id ("nope", a citation's 12-character short form) is skipped
        like an unknown one (an MCP client's ``ragstrata://chunks/nope`` got a traceback)."""
        store, chunks, _ = filled
        first = chunks[0].chunk_id
        assert store.get(["nope", first[:12], "", first.upper() + "zz"]) == []
        assert store.get(["nope", first]) == [chunks[0]]

    def test_payload_round_trips(self, filled: Filled) -> None:
        store, chunks, _ = filled
        got = store.get([c.chunk_id for c in chunks])
        assert got == chunks
        assert [(c.language, c.page_start, c.page_end) for c in got][3:5] == [
            ("es", None, None),
            ("es", 2, 3),
        ]
        assert got[5].language == "und"
        assert got[4].page_breaks == (1,)  # a quote's own page (its citation's) is kept

    def test_dense_vectors_round_trip(self, filled: Filled) -> None:
        store, chunks, dense = filled
        unknown = make_chunk("ghost", 0, "nothing").chunk_id
        got = store.dense_vectors([chunks[1].chunk_id, unknown, chunks[4].chunk_id])
        assert set(got) == {chunks[1].chunk_id, chunks[4].chunk_id}
        for i in (1, 4):
            vector = got[chunks[i].chunk_id]
            assert vector.dtype == np.float32
            assert vector.shape == (DIM,)
            np.testing.assert_allclose(vector, dense[i], atol=1e-6)

    # ------------------------------------------------------------------ search
    def test_dense_search_returns_exact_nearest_first(self, filled: Filled) -> None:
        store, chunks, dense = filled
        for i, chunk in enumerate(chunks):
            results = store.dense_search(dense[i], limit=3)
            assert results[0][0].chunk_id == chunk.chunk_id
            assert results[0][1] == pytest.approx(1.0, abs=1e-5)
            scores = [s for _, s in results]
            assert scores == sorted(scores, reverse=True)
            assert len(results) == 3

    def test_dense_search_score_is_cosine(self, filled: Filled) -> None:
        store, _, dense = filled
        query = unit_vectors(1, seed=123)[0]
        expected = sorted((float(d @ query) for d in dense), reverse=True)
        got = [s for _, s in store.dense_search(query * 3.0, limit=len(dense))]
        assert got == pytest.approx(expected, abs=1e-5)

    def test_sparse_search_ranks_doc_with_term_higher(self, filled: Filled) -> None:
        store, chunks, _ = filled
        results = store.sparse_search(sparse("troubleshooting"), limit=10)
        assert results[0][0].chunk_id == chunks[2].chunk_id
        assert results[0][1] > 0
        others = {c.chunk_id: s for c, s in results[1:]}
        assert all(s < results[0][1] for s in others.values())

    def test_sparse_search_rarer_term_weighs_more(self, filled: Filled) -> None:
        store, chunks, _ = filled
        # "alpha" is in 3 chunks, "install" in 1: equal tf weights, so IDF decides
        results = store.sparse_search(sparse("alpha", "install"), limit=10)
        assert results[0][0].chunk_id == chunks[0].chunk_id
        by_id = {c.chunk_id: s for c, s in results}
        assert by_id[chunks[0].chunk_id] > by_id[chunks[1].chunk_id] > 0
        assert chunks[3].chunk_id not in by_id

    def test_search_respects_limit(self, filled: Filled) -> None:
        store, _, dense = filled
        assert len(store.dense_search(dense[0], limit=2)) == 2
        assert len(store.sparse_search(sparse("alpha"), limit=2)) == 2

    def test_id_searches_match_full_searches(self, store: VectorStore) -> None:
        """``*_search_ids`` return the same ids and scores as the payload-reading searches
        (scores to float32 precision: qdrant-client's local mode computes the first query after
        a write on another code path, 1e-7 apart)."""
        chunks = [make_chunk(f"doc-{i % 3}", i, f"text {i}") for i in range(20)]
        vectors = unit_vectors(20, seed=3)
        store.upsert(chunks, vectors, [sparse("alpha", f"term{i % 4}") for i in range(20)])
        for full, ids in (
            (store.dense_search(vectors[0], limit=7), store.dense_search_ids(vectors[0], limit=7)),
            (
                store.sparse_search(sparse("term1"), limit=7),
                store.sparse_search_ids(sparse("term1"), limit=7),
            ),
        ):
            assert full
            assert [c.chunk_id for c, _ in full] == [cid for cid, _ in ids]
            assert [s for _, s in full] == pytest.approx([s for _, s in ids], abs=1e-6)

    # ------------------------------------------------------------------ filters
    def test_filter_by_doc_id(self, filled: Filled) -> None:
        store, chunks, dense = filled
        hits = store.dense_search(dense[0], limit=10, filters={"doc_id": "doc-b"})
        assert {c.doc_id for c, _ in hits} == {"doc-b"}
        assert len(hits) == 2
        assert store.count({"doc_id": "doc-a"}) == 3
        assert store.count({"doc_id": ["doc-a", "doc-c"]}) == 4
        assert sorted(store.chunk_ids({"doc_id": "doc-c"})) == [chunks[5].chunk_id]

    def test_filter_by_source(self, filled: Filled) -> None:
        store, chunks, _ = filled
        hits = store.sparse_search(
            sparse("alpha", "gamma"), limit=10, filters={"source": "notes/gamma.md"}
        )
        assert [c.chunk_id for c, _ in hits] == [chunks[5].chunk_id]

    def test_filter_by_language(self, filled: Filled) -> None:
        store, chunks, dense = filled
        hits = store.dense_search(dense[0], limit=10, filters={"language": "es"})
        assert {c.chunk_id for c, _ in hits} == {chunks[3].chunk_id, chunks[4].chunk_id}
        assert store.count({"language": ["en", "und"]}) == 4
        assert store.sparse_search(sparse("beta"), limit=10, filters={"language": "en"}) == []
        assert store.count({"language": "es", "doc_id": "doc-a"}) == 0

    def test_filter_by_metadata(self, filled: Filled) -> None:
        store, _, dense = filled
        hits = store.dense_search(dense[0], limit=10, filters={"meta.lang": "es"})
        assert {c.doc_id for c, _ in hits} == {"doc-b"}
        assert store.count({"meta.tier": 1}) == 3
        assert store.count({"meta.tier": [2, 3]}) == 3
        assert store.count({"meta.lang": "en", "meta.tier": 2}) == 1
        assert store.count({"meta.lang": "de"}) == 0

    # ------------------------------------------------------------------ deletes & reads
    def test_delete_documents_removes_only_that_doc(self, filled: Filled) -> None:
        store, chunks, dense = filled
        store.delete_documents(["doc-a", "no-such-doc"])
        assert store.count() == 3
        assert {c.doc_id for c in store.get([c.chunk_id for c in chunks])} == {"doc-b", "doc-c"}
        assert all(c.doc_id != "doc-a" for c, _ in store.dense_search(dense[0], limit=10))
        assert store.sparse_search(sparse("alpha"), limit=10) == []
        store.delete_documents([])
        assert store.count() == 3

    def test_delete_chunks_removes_only_those(self, filled: Filled) -> None:
        store, chunks, dense = filled
        store.delete_chunks([chunks[1].chunk_id, chunks[3].chunk_id, "f" * 32])
        assert store.count() == 4
        gone = {chunks[1].chunk_id, chunks[3].chunk_id}
        assert [c.chunk_id for c in store.get([c.chunk_id for c in chunks])] == [
            c.chunk_id for c in chunks if c.chunk_id not in gone
        ]
        assert all(c.chunk_id not in gone for c, _ in store.dense_search(dense[1], limit=10))
        store.delete_chunks([])
        assert store.count() == 4

    def test_optimize_keeps_every_chunk_searchable(self, filled: Filled) -> None:
        store, chunks, dense = filled
        store.optimize()
        store.optimize()  # idempotent, also with nothing new written
        assert store.count() == len(chunks)
        assert store.dense_search(dense[2], limit=1)[0][0].chunk_id == chunks[2].chunk_id
        assert store.sparse_search(sparse("alpha"), limit=len(chunks))
        store.delete_documents([chunks[0].doc_id])
        store.optimize()
        assert chunks[0].chunk_id not in store.chunk_ids()

    def test_get_returns_input_order_and_skips_unknown(self, filled: Filled) -> None:
        store, chunks, _ = filled
        unknown = make_chunk("ghost", 0, "nothing").chunk_id
        order = [chunks[4].chunk_id, unknown, chunks[0].chunk_id, chunks[2].chunk_id]
        got = store.get(order)
        expected = [chunks[4].chunk_id, chunks[0].chunk_id, chunks[2].chunk_id]
        assert [c.chunk_id for c in got] == expected
        assert store.get([]) == []

    def test_chunk_ids_lists_everything(self, filled: Filled) -> None:
        store, chunks, _ = filled
        ids = store.chunk_ids()
        assert len(ids) == len(set(ids))
        assert set(ids) == {c.chunk_id for c in chunks}

    def test_chunk_ids_pages_past_one_batch(self, store: VectorStore) -> None:
        chunks = [make_chunk(f"bulk-{i % 7}", i, f"text {i}") for i in range(1500)]
        store.upsert(chunks, unit_vectors(len(chunks), seed=3), [{} for _ in chunks])
        ids = store.chunk_ids()
        assert len(ids) == 1500
        assert set(ids) == {c.chunk_id for c in chunks}

    def test_close_then_reopen_keeps_data(self, make_store: Callable[[], VectorStore]) -> None:
        if not self.persistent:
            pytest.skip("this backend keeps nothing after close()")
        chunks, dense, sparse_vectors = corpus()
        first = make_store()
        first.upsert(chunks, dense, sparse_vectors)
        first.close()
        second = make_store()
        try:
            assert second.count() == len(chunks)
            assert second.get([c.chunk_id for c in chunks]) == chunks
            assert second.dense_search(dense[3], limit=1)[0][0].chunk_id == chunks[3].chunk_id
            hits = second.sparse_search(sparse("troubleshooting"), limit=1)
            assert hits[0][0].chunk_id == chunks[2].chunk_id
            assert second.count({"doc_id": "doc-b"}) == 2
        finally:
            second.close()

    # ------------------------------------------------------------------ errors
    def test_wrong_dim_on_upsert(self, store: VectorStore) -> None:
        chunks, _, sparse_vectors = corpus()
        wrong = np.ones((len(chunks), DIM + 1), dtype=np.float32)
        with pytest.raises(DimensionMismatchError):
            store.upsert(chunks, wrong, sparse_vectors)
        assert store.count() == 0

    def test_wrong_dim_on_search(self, filled: Filled) -> None:
        store, _, _ = filled
        with pytest.raises(DimensionMismatchError):
            store.dense_search(np.ones(DIM - 1, dtype=np.float32), limit=3)

    def test_wrong_row_count_on_upsert(self, store: VectorStore) -> None:
        chunks, dense, sparse_vectors = corpus()
        with pytest.raises(DimensionMismatchError):
            store.upsert(chunks, dense[:-1], sparse_vectors)
