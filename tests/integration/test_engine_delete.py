"""``Ragstrata.delete``: documents leave the index in one journaled commit, search stops
returning them, and the manifest still equals the stored chunks (BM25 statistics included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.embed.local import MiniLMEmbedder
from ragstrata.errors import IndexNotFoundError
from ragstrata.index import catalog
from ragstrata.index.writer import REWEIGHT_TOLERANCE
from ragstrata.pipeline import Ragstrata

DOCS = {
    "scurvy.md": (
        "# Scurvy\n\nScurvy is caused by a lack of vitamin C in the diet of sailors on long "
        "voyages without fresh fruit, lemons or vegetables.\n"
    ),
    "rickets.md": "# Rickets\n\nRickets follows vitamin D deficiency in children.\n",
    "paris.md": "# Paris\n\nParis is the capital of France, on the river Seine.\n",
}


@pytest.fixture
def engine(tmp_path: Path, minilm: MiniLMEmbedder) -> Ragstrata:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    config = RagConfig(home=tmp_path / "home", index_dir=tmp_path / "index")
    engine = Ragstrata(config, embedder=minilm)
    report = engine.ingest([corpus])
    assert report.added == len(DOCS)
    return engine


def _doc_id(engine: Ragstrata, name: str) -> str:
    return next(d for d, e in engine.manifest().documents.items() if e.source.endswith(name))


def test_delete_removes_a_document_from_search_and_manifest(engine: Ragstrata) -> None:
    with engine:
        scurvy = _doc_id(engine, "scurvy.md")
        before = engine.manifest()
        assert scurvy in {h.chunk.doc_id for h in engine.search("scurvy vitamin C").hits}

        assert engine.delete([scurvy, "no-such-document"]) == 1

        hits = engine.search("scurvy vitamin C sailors", top_k=10).hits
        assert hits and scurvy not in {h.chunk.doc_id for h in hits}
        manifest = engine.manifest()
        assert set(manifest.documents) == set(before.documents) - {scurvy}
        assert manifest.n_chunks == engine._index.open_store(manifest).count()
        assert manifest.bm25_docs == manifest.n_chunks
        assert manifest.bm25_total_length == sum(e.bm25_length for e in manifest.documents.values())
        # the longest document left: the others' BM25 weights follow the new average length
        assert abs(manifest.avgdl - before.avgdl) > REWEIGHT_TOLERANCE * before.avgdl
        for entry in manifest.documents.values():
            assert abs(entry.bm25_avgdl - manifest.avgdl) <= REWEIGHT_TOLERANCE * manifest.avgdl
        assert catalog.read_journal(engine.index_dir) is None
        assert engine.delete([scurvy]) == 0  # already gone: nothing to remove
    assert engine.manifest().documents == manifest.documents


def test_delete_without_an_index_raises(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    index = tmp_path / "none"
    config = RagConfig(home=tmp_path / "home", index_dir=index)
    with Ragstrata(config, embedder=minilm) as engine, pytest.raises(IndexNotFoundError):
        engine.delete(["x"])
    assert not index.exists()
