"""Re-ingesting after a document or configuration change embeds only what it must."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from ragstrata.config import BM25Config, ChunkerConfig, RagConfig
from ragstrata.embed.local import MiniLMEmbedder
from ragstrata.errors import EmbedderMismatchError
from ragstrata.index import catalog
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow

_SECTIONS = [
    ("Installation", "Install the package with pip and check the version number afterwards."),
    ("Configuration", "Settings are read from a TOML file and from environment variables."),
    ("Retrieval", "Dense vectors and BM25 run side by side and are fused with RRF."),
    ("Answers", "Answers cite their sources with numbered labels like [1] and [2]."),
]


def _write_corpus(root: Path) -> Path:
    root.mkdir()
    for n in range(3):
        body = "\n\n".join(
            f"## {title} {n}\n\n" + " ".join([text] * 12) for title, text in _SECTIONS
        )
        (root / f"doc{n}.md").write_text(f"# Manual {n}\n\n{body}\n", encoding="utf-8")
    return root


def _engine(home: Path, embedder: MiniLMEmbedder, **stages: object) -> Ragstrata:
    config = dataclasses.replace(RagConfig(home=home), **stages)  # type: ignore[arg-type]
    return Ragstrata(config, embedder=embedder)


def test_bm25_change_reindexes_without_embedding(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    small = ChunkerConfig(max_tokens=96)
    with _engine(tmp_path / "home", minilm, chunking=small) as engine:
        first = engine.ingest([corpus])
        assert first.added == 3 and first.embedded == first.chunks > 6
        before = engine.search("TOML environment variables", mode="bm25").hits[0].score

    with _engine(tmp_path / "home", minilm, chunking=small, bm25=BM25Config(k1=2.0)) as engine:
        again = engine.ingest([corpus])
        # new BM25 weights from the stored text: no file re-chunked, nothing embedded
        assert (again.reindexed, again.unchanged, again.embedded, again.chunks) == (0, 3, 0, 0)
        assert again.reweighted == first.chunks  # each chunk counted once (review 41)
        assert again.bytes_read == 0  # no file parsed: only the BM25 side changed
        manifest = engine.manifest()
        assert manifest.k1 == 2.0
        assert {e.signature for e in manifest.documents.values()} == {manifest.signature}
        hit = engine.search("TOML environment variables", mode="bm25").hits[0]
        assert "TOML" in hit.chunk.text and hit.score != pytest.approx(before)
        assert engine.search("TOML settings file", mode="dense").hits[0].chunk.text.count("TOML")

        third = engine.ingest([corpus])
        assert (third.unchanged, third.chunks) == (3, 0)


def test_editing_one_section_embeds_only_the_changed_chunks(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    small = ChunkerConfig(max_tokens=96)
    with _engine(tmp_path / "home", minilm, chunking=small) as engine:
        engine.ingest([corpus])
        doc = corpus / "doc1.md"
        per_doc = len(engine.manifest().documents[catalog_doc_id(engine, doc)].chunk_ids)
        text = doc.read_text(encoding="utf-8")
        doc.write_text(text.replace("fused with RRF", "fused with weighted RRF"), encoding="utf-8")
        report = engine.ingest([corpus])
        assert (report.updated, report.unchanged) == (1, 2)
        assert report.chunks == per_doc
        assert 0 < report.embedded < per_doc
        hit = engine.search("fused with weighted RRF", mode="bm25").hits[0]
        assert hit.chunk.source.endswith("doc1.md") and "weighted RRF" in hit.chunk.text


def test_a_renamed_file_reuses_its_vectors(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    """Review 27: a renamed file (a new document id) was embedded again in full."""
    corpus = _write_corpus(tmp_path / "corpus")
    with _engine(tmp_path / "home", minilm, chunking=ChunkerConfig(max_tokens=96)) as engine:
        engine.ingest([corpus])
        (corpus / "doc1.md").rename(corpus / "manual-1.md")
        (corpus / "sub").mkdir()
        (corpus / "doc2.md").rename(corpus / "sub" / "doc2.md")
        report = engine.ingest([corpus], prune=True)
        assert (report.added, report.pruned, report.unchanged) == (2, 2, 1)
        assert report.chunks > 0 and report.embedded == 0
        hit = engine.search("fused with RRF", mode="dense").hits[0]
        assert hit.chunk.source.endswith(("manual-1.md", "doc2.md", "doc0.md"))
        assert {e.source.rsplit("/", 1)[-1] for e in engine.manifest().documents.values()} == {
            "doc0.md",
            "manual-1.md",
            "doc2.md",
        }


def test_chunker_change_reuses_vectors_of_identical_chunks(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    (corpus / "short.md").write_text("# Short\n\nOne small paragraph.\n", encoding="utf-8")
    with _engine(tmp_path / "home", minilm, chunking=ChunkerConfig(max_tokens=96)) as engine:
        engine.ingest([corpus])
    overlap = ChunkerConfig(max_tokens=96, overlap_ratio=0.3)
    with _engine(tmp_path / "home", minilm, chunking=overlap) as engine:
        report = engine.ingest([corpus])
        assert report.reindexed == 4
        # the one-chunk document is chunked identically: its vector is reused
        assert report.embedded < report.chunks
        assert ":overlap=0.3:" in engine.manifest().chunker


def test_embedder_change_is_refused(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    with _engine(tmp_path / "home", minilm) as engine:
        engine.ingest([corpus])
    index = RagConfig(home=tmp_path / "home").index_path
    manifest = catalog.read_manifest(index)
    manifest.embedder = "another-model"
    catalog.write_manifest(index, manifest)
    with _engine(tmp_path / "home", minilm) as engine, pytest.raises(EmbedderMismatchError):
        engine.ingest([corpus])


def test_a_stopped_reindex_for_a_new_analyzer_is_named_until_finished(
    tmp_path: Path, minilm: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Review 36: a re-index for a new BM25 analyzer writes the manifest's analyzer first; one
    stopped after a few documents was searched without a word, the others' BM25 vectors holding
    the old analyzer's term ids. Readers now warn and `stats` counts them (not refused: a file
    that now fails or is gone would block the index for good, review 38)."""
    corpus = _write_corpus(tmp_path / "corpus")
    with _engine(tmp_path / "home", minilm) as engine:
        engine.ingest([corpus])
    index = RagConfig(home=tmp_path / "home").index_path
    manifest = catalog.read_manifest(index)
    # as a stopped migration leaves it: two documents still under the old analyzer
    for doc_id in sorted(manifest.documents)[:2]:
        entry = manifest.documents[doc_id]
        chunker, _analyzer, k1, b = entry.signature.split("|")
        manifest.documents[doc_id] = dataclasses.replace(
            entry, signature="|".join([chunker, "v0:english:stop=1", k1, b])
        )
    catalog.write_manifest(index, manifest)
    assert catalog.index_stats(index)["stale_analyzer_documents"] == 2
    with _engine(tmp_path / "home", minilm) as engine:
        with caplog.at_level(logging.WARNING, logger="ragstrata.index.catalog"):
            engine.search("TOML environment variables", mode="bm25")
        assert "2 of 3 documents" in caplog.text and "dense search only" in caplog.text
        again = engine.ingest([corpus])
        assert (again.reindexed, again.unchanged, again.embedded) == (0, 3, 0)
        assert "TOML" in engine.search("TOML environment variables", mode="bm25").hits[0].chunk.text
    assert catalog.index_stats(index)["stale_analyzer_documents"] == 0


def test_a_new_analyzer_reaches_documents_whose_files_are_not_ingested(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Review 36: after an upgrade that changed the BM25 analyzer, a document was re-indexed
    only when an ingest reached its file; one of a folder not given (or a file now failing or
    gone) kept term ids the index's analyzer cannot match. Any ingest now analyses such
    documents again from their stored text: the index equals one built with the new analyzer."""
    from ragstrata.text.analyzer import Analyzer

    corpus = _write_corpus(tmp_path / "corpus")
    (corpus / "doc1.md").write_text(
        "# Manual 1\n\n## Configuración\n\nLas configuraciones se leen de un archivo TOML y de "
        "las variables de entorno del sistema.\n",
        encoding="utf-8",
    )
    later = tmp_path / "later"
    later.mkdir()
    (later / "notes.md").write_text("# Notes\n\nA short note on logging levels.\n", "utf-8")
    with _engine(tmp_path / "old", minilm) as engine:
        engine._analyzer = Analyzer(("english",), stopwords=False)  # an earlier analyzer
        engine.ingest([corpus])
    with _engine(tmp_path / "old", minilm) as engine:
        report = engine.ingest([later])  # the corpus's folder is not given
        assert (report.added, report.embedded) == (1, report.chunks)
        assert report.reweighted >= 3
        migrated = engine.manifest()
        found = [h.chunk.source for h in engine.search("configuraciones entorno", mode="bm25").hits]
    with _engine(tmp_path / "new", minilm) as engine:
        engine.ingest([corpus, later])
        fresh = engine.manifest()
        expected = [
            h.chunk.source for h in engine.search("configuraciones entorno", mode="bm25").hits
        ]
    assert catalog.stale_analyzer_documents(migrated, migrated.analyzer) == 0
    assert migrated.bm25_total_length == fresh.bm25_total_length
    lengths = {e.source: e.bm25_length for e in migrated.documents.values()}
    assert lengths == {e.source: e.bm25_length for e in fresh.documents.values()}
    assert found[:1] == expected[:1] and found[0].endswith("doc1.md")


def catalog_doc_id(engine: Ragstrata, path: Path) -> str:
    from ragstrata.ingest.loader import doc_id_for

    return doc_id_for(path)


def test_unchanged_files_are_not_even_parsed(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    with _engine(tmp_path / "home", minilm) as engine:
        first = engine.ingest([corpus])
        assert first.bytes_read == sum(p.stat().st_size for p in corpus.iterdir())
        (corpus / "doc0.md").touch()  # same bytes, new mtime: still unchanged
        again = engine.ingest([corpus])
        assert (again.unchanged, again.bytes_read, again.chunks) == (3, 0, 0)
        doc2 = corpus / "doc2.md"
        doc2.write_text(doc2.read_text(encoding="utf-8") + "\nA new line.\n", encoding="utf-8")
        third = engine.ingest([corpus])
        assert (third.updated, third.unchanged, third.bytes_read) == (1, 2, doc2.stat().st_size)


def test_a_change_outside_the_text_updates_the_document(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Review 27: a new HTML <title> (outside the parsed text) was reported "unchanged" and
    never indexed (the old title on every hit, a title filter on the new one found nothing),
    and the file was parsed again on every run since its recorded bytes never moved on."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    page = corpus / "page.html"
    body = (
        "<body><h2>Reinicio</h2><p>Para reiniciar el servidor de correo ejecuta el comando "
        "mailctl restart y espera un minuto.</p></body></html>"
    )
    page.write_text(f"<html><head><title>Manual antiguo</title></head>{body}", encoding="utf-8")
    with _engine(tmp_path / "home", minilm) as engine:
        engine.ingest([corpus])
        page.write_text(f"<html><head><title>Manual nuevo</title></head>{body}", encoding="utf-8")
        again = engine.ingest([corpus])
        assert (again.updated, again.unchanged) == (1, 0)
        hits = engine.search("reiniciar servidor", filters={"title": "Manual nuevo"}).hits
        assert hits and hits[0].chunk.title == "Manual nuevo"
        third = engine.ingest([corpus])
        assert (third.unchanged, third.bytes_read) == (1, 0)
