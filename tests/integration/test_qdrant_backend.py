"""The engine on the Qdrant backend (``store.url``), through qdrant-client's local mode.

``store.url = "local:"`` puts a local-mode collection in ``<index>/qdrant``: the same
``QdrantStore`` code a server gets, minus the network. The store contract itself is in
``tests/contract/test_store_contract.py``; this checks the wiring: configuration → store, ingest,
hybrid search, re-ingest, reopen, and the guard against a manifest built for another store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragstrata.config import RagConfig, RetrievalConfig, StoreConfig
from ragstrata.embed.local import MiniLMEmbedder
from ragstrata.errors import StoreError
from ragstrata.pipeline import Ragstrata

pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.slow

GUIDE = (
    "# Operations guide\n\n## Error codes\n\n"
    "The error ERR_CONN_RESET means the upstream server closed the connection. "
    "Retry the request after a short delay.\n\n"
    "## Rate limits\n\nEach API key may send 100 requests per minute to /v1/users.\n"
)
GUIA = (
    "# Guía de instalación\n\n## Requisitos\n\n"
    "La instalación necesita Python 3.11 y cuatro gigabytes de memoria.\n"
)


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "guia.md").write_text(GUIA, encoding="utf-8")
    return root


@pytest.fixture()
def config(tmp_path: Path) -> RagConfig:
    # equal weights: the engine's fusion is then plain RRF, which the server-side hybrid matches
    return RagConfig(
        home=tmp_path / "home",
        store=StoreConfig(url="local:"),
        retrieval=RetrievalConfig(dense_weight=1.0, bm25_weight=1.0),
    )


@pytest.fixture()
def engine(config: RagConfig, minilm: MiniLMEmbedder) -> Iterator[Ragstrata]:
    eng = Ragstrata(config, embedder=minilm)
    yield eng
    eng.close()


def test_store_url_selects_qdrant_and_hybrid_search_works(
    engine: Ragstrata, corpus: Path, config: RagConfig
) -> None:
    from ragstrata.index.qdrant import QdrantStore

    report = engine.ingest([corpus])
    assert report.status == "ok"
    assert (report.added, report.chunks) == (2, engine.manifest().n_chunks)
    assert (config.index_path / "qdrant").is_dir()
    assert not (config.index_path / "shard").exists()

    result = engine.search("what does ERR_CONN_RESET mean?")
    assert result.hits[0].chunk.source.endswith("guide.md")
    assert "ERR_CONN_RESET" in result.hits[0].chunk.text
    assert {e.retriever for e in result.hits[0].explain} == {"dense", "bm25"}
    spanish = engine.search("requisitos de instalación", filters={"language": "es"})
    assert spanish.hits and all(h.chunk.language == "es" for h in spanish.hits)

    store = engine.retriever.store
    assert isinstance(store, QdrantStore)
    assert store.count() == engine.manifest().n_chunks
    # server-side hybrid (Query API prefetch + RRF) ranks like the engine's unweighted fusion
    query = "how many requests per minute?"
    expected = engine.search(query, top_k=3)
    got = store.hybrid_search_ids(
        engine.embedder.embed_query(query),
        _query_vector(engine, query),
        limit=3,
        candidates=config.retrieval.candidates,
        rrf_k=config.retrieval.rrf_k,
    )
    assert [cid for cid, _ in got] == [h.chunk.chunk_id for h in expected.hits]
    assert [s for _, s in got] == pytest.approx([h.score for h in expected.hits], rel=1e-9)


def _query_vector(engine: Ragstrata, query: str) -> dict[int, float]:
    from ragstrata.retrieve.hybrid import query_sparse_vector

    return query_sparse_vector(engine.analyzer, query)


def test_reingest_is_idempotent_and_reopen_keeps_the_collection(
    config: RagConfig, corpus: Path, minilm: MiniLMEmbedder
) -> None:
    with Ragstrata(config, embedder=minilm) as eng:
        eng.ingest([corpus])
        chunks = eng.manifest().n_chunks
    (corpus / "guia.md").write_text(GUIA.replace("cuatro", "ocho"), encoding="utf-8")
    with Ragstrata(config, embedder=minilm) as eng:
        report = eng.ingest([corpus])
        assert (report.added, report.updated, report.unchanged) == (0, 1, 1)
        assert eng.manifest().n_chunks == chunks
    with Ragstrata(config, embedder=minilm) as eng:
        hits = eng.search("memoria necesaria", top_k=1).hits
        assert "ocho gigabytes" in hits[0].chunk.text
        store = eng.retriever.store
        assert store.count() == chunks
        assert sorted(store.chunk_ids()) == sorted(
            cid for entry in eng.manifest().documents.values() for cid in entry.chunk_ids
        )


def test_manifest_built_for_another_store_is_refused(
    config: RagConfig, corpus: Path, minilm: MiniLMEmbedder
) -> None:
    with Ragstrata(config, embedder=minilm) as eng:
        eng.ingest([corpus])
    moved = replace(config, store=replace(config.store, collection="elsewhere"))
    with Ragstrata(moved, embedder=minilm) as eng, pytest.raises(StoreError, match="is empty"):
        eng.search("ERR_CONN_RESET")


def test_an_index_built_on_qdrant_opened_without_store_url_is_refused(
    config: RagConfig, corpus: Path, minilm: MiniLMEmbedder
) -> None:
    """Review 45: without store.url the embedded store opened a new, empty shard: no hits,
    exit 0, and every file "unchanged" on the next ingest."""
    with Ragstrata(config, embedder=minilm) as eng:
        eng.ingest([corpus])
    embedded = replace(config, store=StoreConfig())
    for act in (lambda e: e.search("ERR_CONN_RESET"), lambda e: e.ingest([corpus])):
        with Ragstrata(embedded, embedder=minilm) as eng, pytest.raises(StoreError, match="shard"):
            act(eng)
    assert not (config.index_path / "shard").exists()


def test_an_index_written_to_memory_says_so_when_reopened(
    config: RagConfig, corpus: Path, minilm: MiniLMEmbedder
) -> None:
    """Review 45: the message said the index was "built for another store.url"."""
    memory = replace(config, store=replace(config.store, url=":memory:"))
    with Ragstrata(memory, embedder=minilm) as eng:
        assert eng.ingest([corpus]).status == "ok"
    with (
        Ragstrata(memory, embedder=minilm) as eng,
        pytest.raises(StoreError, match="gone once the store"),
    ):
        eng.search("ERR_CONN_RESET")
