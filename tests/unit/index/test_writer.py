"""``IndexWriter``: the manifest's BM25 statistics equal the sum over its documents after
commits, replacements and deletes; identical embedded texts reuse their stored vector; every
commit clears its journal; a journal left behind is rolled back."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragstrata.chunking.splitter import StructureChunker
from ragstrata.config import BM25Config
from ragstrata.errors import StoreError
from ragstrata.index import catalog, edge
from ragstrata.index.bm25 import term_id
from ragstrata.index.edge import EdgeStore
from ragstrata.index.writer import REWEIGHT_TOLERANCE, IndexWriter, new_manifest, recover
from ragstrata.ingest.loader import document_from_text
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.tokens import CallableTokenCounter, TokenCounter
from ragstrata.types import Document, FloatArray

DIM = 8


class HashEmbedder:
    """A deterministic toy embedder that counts the texts it embeds."""

    name = "hash:test"
    dim = DIM
    max_seq_length = 256
    special_tokens = 0

    def __init__(self) -> None:
        self.embedded = 0
        self._counter = CallableTokenCounter(lambda t: len(t.split()))

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        self.embedded += len(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:DIM], np.uint8) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> FloatArray:
        return self.embed_documents([text])[0]


def doc(name: str, text: str) -> Document:
    return document_from_text(text, fmt="markdown", doc_id=name, source=f"/{name}.md", stem=name)


@pytest.fixture
def writer(tmp_path: Path) -> IndexWriter:
    embedder, analyzer = HashEmbedder(), Analyzer()
    chunker = StructureChunker(embedder.counter, max_tokens=24, special_tokens=0, overlap_ratio=0.0)
    bm25 = BM25Config()
    manifest = new_manifest(embedder, analyzer, chunker, bm25)
    store = EdgeStore(tmp_path / "shard", dim=DIM)
    return IndexWriter(
        tmp_path, store, manifest, embedder=embedder, analyzer=analyzer, chunker=chunker, bm25=bm25
    )


def assert_consistent(writer: IndexWriter) -> None:
    manifest = catalog.read_manifest(writer.index_dir)
    assert manifest.documents == writer.manifest.documents
    assert manifest.bm25_docs == manifest.n_chunks == writer.store.count()
    assert manifest.bm25_total_length == sum(e.bm25_length for e in manifest.documents.values())
    assert catalog.read_journal(writer.index_dir) is None


A = "# Alpha\n\nAlpha installs the server.\n\n## Notes\n\nAlpha notes are short.\n"
B = "# Beta\n\n## One\n\nBeta configures the client.\n\n## Two\n\nBeta reads one file.\n"


def test_commit_replace_and_delete_keep_bm25_statistics(writer: IndexWriter) -> None:
    report = writer.add([doc("a", A), doc("b", B)])
    assert report.added == 2 and report.chunks == writer.store.count() > 2
    assert_consistent(writer)

    report = writer.add([doc("a", A), doc("b", B + "\n## Three\n\nBeta also logs.\n")])
    assert (report.unchanged, report.updated) == (1, 1)
    assert 0 < report.embedded < report.chunks  # the unchanged chunks of b reuse their vectors
    assert_consistent(writer)

    assert writer.delete(["a", "missing"]) == 1
    assert set(writer.manifest.documents) == {"b"}
    assert_consistent(writer)


def test_an_interrupted_commit_is_rolled_back(writer: IndexWriter) -> None:
    writer.add([doc("a", A), doc("b", B)])
    catalog.write_journal(writer.index_dir, ["a"])  # as a crash after the journal leaves it
    recover(writer.index_dir, writer.store, writer.manifest)
    assert set(writer.manifest.documents) == {"b"}
    assert_consistent(writer)


def open_writer(path: Path) -> IndexWriter:
    embedder, analyzer = HashEmbedder(), Analyzer()
    chunker = StructureChunker(embedder.counter, max_tokens=24, special_tokens=0, overlap_ratio=0.0)
    bm25 = BM25Config()
    store = EdgeStore(path / "shard", dim=DIM)
    manifest = new_manifest(embedder, analyzer, chunker, bm25)
    return IndexWriter(
        path, store, manifest, embedder=embedder, analyzer=analyzer, chunker=chunker, bm25=bm25
    )


def varied_documents() -> list[Document]:
    """Twelve documents whose chunks run from a few words to the chunker's 24 tokens."""
    words = [
        "server",
        "client",
        "install",
        "configure",
        "cache",
        "token",
        "index",
        "query",
        "shard",
        "commit",
    ]
    docs = []
    for i in range(12):
        size = 2 + 2 * i  # words per paragraph
        paragraphs = [
            " ".join(words[(i + j + k) % len(words)] for k in range(size)) for j in range(3)
        ]
        docs.append(doc(f"d{i:02d}", f"# Doc {i}\n\n" + "\n\n".join(paragraphs) + "\n"))
    return docs


def bm25_scores(writer: IndexWriter, query: str) -> dict[str, float]:
    terms = writer.analyzer.term_frequencies(query)
    vector = {term_id(t): 1.0 for t in terms}
    return dict(writer.store.sparse_search_ids(vector, limit=100))


def test_bm25_weights_do_not_depend_on_ingest_order_or_commit_cuts(tmp_path: Path) -> None:
    """The same documents, short ones first and one commit each, or long ones first in one
    commit, give the same BM25 scores (within what REWEIGHT_TOLERANCE allows): without the
    re-weighting, the first short document was weighted with its own short average."""
    docs = varied_documents()
    one_by_one = open_writer(tmp_path / "a")
    reweighted = 0
    for d in docs:
        reweighted += one_by_one.add([d]).reweighted
    together = open_writer(tmp_path / "b")
    together.add(list(reversed(docs)))
    assert reweighted > 0
    assert one_by_one.manifest.avgdl == together.manifest.avgdl
    for writer in (one_by_one, together):
        avgdl = writer.manifest.avgdl
        for entry in catalog.read_manifest(writer.index_dir).documents.values():
            assert abs(entry.bm25_avgdl - avgdl) <= REWEIGHT_TOLERANCE * avgdl
    for query in ("server install", "cache token shard", "commit query client"):
        a, b = bm25_scores(one_by_one, query), bm25_scores(together, query)
        assert a.keys() == b.keys() and a
        for chunk_id, score in a.items():
            assert score == pytest.approx(b[chunk_id], rel=REWEIGHT_TOLERANCE)


def test_entries_without_a_recorded_average_are_reweighted_once(tmp_path: Path) -> None:
    """An index written before ``bm25_avgdl`` was recorded (entries read as 0.0) is re-weighted
    by its next ingest, even one that changes no document, and not again after that."""
    writer = open_writer(tmp_path)
    docs = varied_documents()[:4]
    writer.add(docs)
    expected = bm25_scores(writer, "server install")
    data = writer.manifest.to_json()
    for entry in data["documents"].values():
        del entry["bm25_avgdl"]
    writer.manifest = catalog.Manifest.from_json(data)
    assert {e.bm25_avgdl for e in writer.manifest.documents.values()} == {0.0}
    report = writer.add(docs)
    assert report.unchanged == 4 and report.chunks == 0
    assert report.reweighted == writer.store.count()
    assert bm25_scores(writer, "server install") == pytest.approx(expected)
    assert writer.add(docs).reweighted == 0
    assert_consistent(writer)


def test_a_full_disk_is_a_store_error_and_loses_no_commit(
    writer: IndexWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 36: on a full disk the store's memory-mapped write-ahead log killed the process
    with SIGBUS (exit 135, no message); a write now checks the free space first. The disk is
    made "full" by asking for more than it has."""
    import shutil

    writer.add([doc("a", A)])
    monkeypatch.setattr(edge, "MIN_FREE_BYTES", shutil.disk_usage(tmp_path).free + 2**40)
    with pytest.raises(StoreError, match=r"MiB free on the disk holding .*free some space"):
        writer.add([doc("b", B)])
    with pytest.raises(StoreError, match="MiB free"):
        EdgeStore(tmp_path / "new-shard", dim=DIM)
    assert not (tmp_path / "new-shard").exists()
    monkeypatch.undo()
    recover(writer.index_dir, writer.store, writer.manifest)
    assert set(writer.manifest.documents) == {"a"}
    assert_consistent(writer)
    assert writer.add([doc("b", B)]).added == 1
    assert_consistent(writer)
