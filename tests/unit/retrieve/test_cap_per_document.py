"""Per-document cap of a retriever's candidates (``ragstrata.retrieve.fusion.cap_per_document``)
and its use by the hybrid retriever over the real embedded store."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.config import BM25Config, RetrievalConfig
from ragstrata.errors import ConfigError
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.fusion import cap_per_document
from ragstrata.retrieve.hybrid import HybridRetriever
from ragstrata.testing.fakes import HashEmbedder, make_chunk
from ragstrata.testing.retriever import bm25_vectors
from ragstrata.text.analyzer import Analyzer


def test_hand_example_keeps_order_and_skips_past_the_cap() -> None:
    ranking = [("a1", 9.0), ("a2", 8.0), ("a3", 7.0), ("b1", 6.0), ("a4", 5.0), ("c1", 4.0)]
    capped = cap_per_document(ranking, lambda i: i[0], per_document=2, limit=4)
    assert capped == [("a1", 9.0), ("a2", 8.0), ("b1", 6.0), ("c1", 4.0)]


def test_unknown_items_are_dropped_and_bad_cap_is_refused() -> None:
    doc = {"a1": "a", "b1": "b"}
    ranking = [("a1", 1.0), ("x", 0.9), ("b1", 0.8)]
    assert cap_per_document(ranking, doc.get, per_document=1, limit=5) == [("a1", 1.0), ("b1", 0.8)]
    with pytest.raises(ConfigError, match="per_document=0"):
        cap_per_document([], doc.get, per_document=0, limit=5)


@given(
    docs=st.lists(st.sampled_from("abcde"), max_size=60),
    per_document=st.integers(1, 6),
    limit=st.integers(1, 40),
)
def test_invariants(docs: list[str], per_document: int, limit: int) -> None:
    ranking = [(f"{d}{n}", float(-n)) for n, d in enumerate(docs)]
    capped = cap_per_document(ranking, lambda i: i[0], per_document=per_document, limit=limit)
    assert len(capped) <= limit
    assert max(Counter(i[0] for i, _ in capped).values(), default=0) <= per_document
    positions = [ranking.index(item) for item in capped]
    assert positions == sorted(positions)  # a subsequence of the ranking
    if max(Counter(docs).values(), default=0) <= per_document:
        assert capped == ranking[:limit]  # nothing to cap: the plain head


def _retriever(tmp_path: Path, max_chunks_per_doc: int) -> tuple[HybridRetriever, EdgeStore]:
    # one long document whose twelve chunks all match the query, and a short one that matches
    # less well: with three candidates per arm the long one fills both lists unless capped
    chunks = [
        make_chunk("changelog", i, f"release {i}: timeout settings for the server changed")
        for i in range(12)
    ]
    chunks.append(make_chunk("guide", 0, "configure the server timeout in the settings file"))
    embedder, analyzer, bm25 = HashEmbedder(), Analyzer(), BM25Config()
    sparse = bm25_vectors(chunks, analyzer, bm25)
    store = EdgeStore(tmp_path / "shard", dim=embedder.dim)
    store.upsert(chunks, embedder.embed_documents([c.text for c in chunks]), sparse)
    config = RetrievalConfig(candidates=3, max_chunks_per_doc=max_chunks_per_doc)
    return HybridRetriever(store, embedder, analyzer, config), store


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[HybridRetriever]:
    """The retriever of :func:`_retriever` with a cap of 2, closed after the test."""
    retriever, store = _retriever(tmp_path, 2)
    yield retriever
    retriever.close()
    store.close()


@pytest.mark.parametrize("cap", [0, 1, 2])
def test_hybrid_cap_lets_another_document_into_the_fusion(tmp_path: Path, cap: int) -> None:
    retriever, store = _retriever(tmp_path, cap)
    try:
        query = "release timeout settings server changed"
        hybrid = retriever.search(query, top_k=6, mode="hybrid")
        docs = Counter(h.chunk.doc_id for h in hybrid.hits)
        if cap:
            assert docs["guide"] == 1
            # each arm gives `cap` of it before the other document, the rest only after
            assert "guide" in [h.chunk.doc_id for h in hybrid.hits[: 2 * cap + 1]]
        else:
            assert docs == Counter({"changelog": len(hybrid.hits)})
        # single-retriever modes are never capped
        dense = retriever.search(query, top_k=3, mode="dense", candidates=3)
        assert len(dense.hits) == 3
    finally:
        retriever.close()
        store.close()


def test_a_search_filtered_to_one_document_returns_top_k_of_its_chunks(
    capped: HybridRetriever,
) -> None:
    """Review 30: the cap dropped its chunks past the eighth, whatever top_k said."""
    query = "release timeout settings server changed"
    for mode in ("hybrid", "dense", "bm25"):
        found = capped.search(query, top_k=10, mode=mode, filters={"doc_id": "changelog"})
        assert len(found.hits) == 10, mode


@pytest.mark.parametrize("top_k", [0, -1, 2.5, "3", True])
def test_a_bad_top_k_is_refused(capped: HybridRetriever, top_k: object) -> None:
    """Review 30: 0 meant the default, -1 gave no hits, 2.5 and "3" raised TypeError."""
    from ragstrata.errors import RetrievalError

    with pytest.raises(RetrievalError, match="top_k"):
        capped.search("server timeout", top_k=top_k)  # type: ignore[arg-type]
    with pytest.raises(RetrievalError, match="candidates"):
        capped.search("server timeout", candidates=-1)


def test_a_decomposed_query_finds_what_its_composed_form_finds(capped: HybridRetriever) -> None:
    """Review 30: NFD "parámetros" was the BM25 term "metro"."""
    import unicodedata

    composed = "configuración del servidor: parámetros"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    a = capped.search(composed, top_k=5, mode="bm25")
    b = capped.search(decomposed, top_k=5, mode="bm25")
    assert [h.chunk.chunk_id for h in a.hits] == [h.chunk.chunk_id for h in b.hits]
    assert a.query == b.query


def test_config_refuses_a_negative_cap() -> None:
    with pytest.raises(ConfigError, match="max_chunks_per_doc"):
        RetrievalConfig(max_chunks_per_doc=-1)


def test_documents_of_chunks_are_read_once(tmp_path: Path) -> None:
    retriever, store = _retriever(tmp_path, 2)
    reads: list[int] = []
    real_get = store.get

    def counting_get(chunk_ids):  # type: ignore[no-untyped-def]
        reads.append(len(chunk_ids))
        return real_get(chunk_ids)

    store.get = counting_get  # type: ignore[method-assign]
    try:
        query = "release timeout settings server changed"
        first = retriever.search(query, top_k=6, mode="hybrid")
        cold = sum(reads)
        reads.clear()
        second = retriever.search(query, top_k=6, mode="hybrid")
        # the second search reads only the dense head (language) and the hits it returns
        assert sum(reads) < cold
        assert [h.chunk.chunk_id for h in second.hits] == [h.chunk.chunk_id for h in first.hits]
    finally:
        retriever.close()
        store.close()


def test_title_and_metadata_filter_values_are_read_in_nfc() -> None:
    """Review 30: a decomposed ``meta.owner=María Núñez`` matched nothing (stored NFC); a source
    path is kept as written (a file name on disk may be decomposed)."""
    import unicodedata

    from ragstrata.index.base import check_filters

    nfd = unicodedata.normalize("NFD", "María Núñez")
    checked = check_filters({"meta.owner": nfd, "title": [nfd], "source": nfd})
    assert checked is not None
    assert checked["meta.owner"] == "María Núñez" == unicodedata.normalize("NFC", nfd)
    assert checked["title"] == ["María Núñez"]
    assert checked["source"] == nfd
