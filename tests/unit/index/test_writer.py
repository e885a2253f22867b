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
from ragstrata.index import catalog
from ragstrata.index.edge import EdgeStore
from ragstrata.index.writer import IndexWriter, new_manifest, recover
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
