"""A large document is committed in slices: a crash keeps the committed slices, the next run
resumes after them and ends with exactly the index a clean build gives (same chunk ids, same
vectors, same manifest entry); a rolled-back append deletes only its own chunks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from test_writer import DIM, HashEmbedder, assert_consistent, doc

from ragstrata.chunking.splitter import StructureChunker
from ragstrata.config import BM25Config
from ragstrata.index import catalog
from ragstrata.index import writer as writer_module
from ragstrata.index.base import SparseVector
from ragstrata.index.edge import EdgeStore
from ragstrata.index.writer import IndexWriter, new_manifest, recover
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Chunk, FloatArray

SLICE = 4


class CrashingStore(EdgeStore):
    """An Edge store whose ``upsert`` number ``crash_at`` raises once its points are written,
    as a kill between the store write and the manifest of that commit."""

    crash_at = 0

    def upsert(
        self, chunks: Sequence[Chunk], dense: FloatArray, sparse: Sequence[SparseVector]
    ) -> None:
        super().upsert(chunks, dense, sparse)
        self.crash_at -= 1
        if self.crash_at == 0:
            self.flush()
            raise KeyboardInterrupt("killed")


def big(rows: int, tag: str = "") -> str:
    sections = "\n\n".join(
        f"## Part {i}\n\nRow {i}{tag} holds the value {i * 7} for the customer table."
        for i in range(rows)
    )
    return f"# Big\n\n{sections}\n"


def make_writer(root: Path, store_cls: type[EdgeStore] = EdgeStore) -> IndexWriter:
    embedder, analyzer = HashEmbedder(), Analyzer()
    chunker = StructureChunker(embedder.counter, max_tokens=24, special_tokens=0, overlap_ratio=0.0)
    bm25 = BM25Config()
    try:
        manifest = catalog.read_manifest(root)
    except Exception:
        manifest = new_manifest(embedder, analyzer, chunker, bm25)
    store = store_cls(root / "shard", dim=DIM)
    return IndexWriter(
        root, store, manifest, embedder=embedder, analyzer=analyzer, chunker=chunker, bm25=bm25
    )


def snapshot(w: IndexWriter) -> tuple[dict[str, catalog.DocEntry], dict[str, FloatArray]]:
    entries = {
        d: e.__class__(**{**{f: getattr(e, f) for f in e.__slots__}, "indexed_at": ""})
        for d, e in w.manifest.documents.items()
    }
    ids = w.store.chunk_ids()
    return entries, w.store.dense_vectors(ids)


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "COMMIT_CHUNKS", SLICE)


def test_a_large_document_commits_in_slices_and_equals_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sliced = make_writer(tmp_path / "sliced")
    journals: list[str] = []
    real = catalog.write_journal
    monkeypatch.setattr(
        catalog, "write_journal", lambda d, ids, **kw: (journals.append("j"), real(d, ids, **kw))
    )
    report = sliced.add([doc("a", big(11))])
    n = report.chunks
    assert n > 2 * SLICE and len(journals) == -(-n // SLICE)  # one commit per slice
    assert sliced.manifest.documents["a"].complete
    assert_consistent(sliced)
    monkeypatch.setattr(writer_module, "COMMIT_CHUNKS", 10_000)
    whole = make_writer(tmp_path / "whole")
    whole.add([doc("a", big(11))])
    got, want = snapshot(sliced), snapshot(whole)
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys()
    assert all(np.array_equal(got[1][k], want[1][k]) for k in want[1])


def test_a_crash_inside_a_large_document_keeps_its_slices_and_resumes(tmp_path: Path) -> None:
    clean = make_writer(tmp_path / "clean")
    clean.add([doc("small", "# Small\n\nA short note.\n"), doc("a", big(11))])
    total = clean.manifest.documents["a"]

    root = tmp_path / "crashed"
    w = make_writer(root, CrashingStore)
    assert isinstance(w.store, CrashingStore)
    w.store.crash_at = 3  # the third commit dies after its journal was written
    with pytest.raises(KeyboardInterrupt):
        w.add([doc("small", "# Small\n\nA short note.\n"), doc("a", big(11))])
    w.store.close()
    assert catalog.read_journal(root) is not None
    assert catalog.read_appends(root)  # the slice in flight was an append

    w = make_writer(root)
    recover(root, w.store, w.manifest)
    partial = w.manifest.documents["a"]
    assert not partial.complete and 0 < len(partial.chunk_ids) < len(total.chunk_ids)
    assert partial.chunk_ids == total.chunk_ids[: len(partial.chunk_ids)]
    assert_consistent(w)  # the store holds exactly the committed slices
    # the next run resumes: only the missing chunks are embedded
    events: list[tuple[str, int, int]] = []
    report = w.add(
        [doc("small", "# Small\n\nA short note.\n"), doc("a", big(11))],
        total=2,
        progress=lambda event, done, of: events.append((event, done, of)),
    )
    assert report.unchanged == 1 and report.added == 1
    assert report.embedded == report.chunks == len(total.chunk_ids) - len(partial.chunk_ids)
    # progress counts what this run writes (a resumed run looked unfinished: 599/855 embedded)
    assert sum(done for event, done, _ in events if event == "chunk") == report.chunks
    assert sum(done for event, done, _ in events if event == "commit") == report.chunks
    first_commit = next(i for i, e in enumerate(events) if e[0] == "commit")
    assert ("parse", 2, 2) in events[:first_commit]  # the big file counts as taken at once
    assert_consistent(w)
    got, want = snapshot(w), snapshot(clean)
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys()
    assert all(np.array_equal(got[1][k], want[1][k]) for k in want[1])


def test_an_append_whose_manifest_landed_is_kept(tmp_path: Path) -> None:
    w = make_writer(tmp_path)
    w.add([doc("a", big(11))])
    entry = w.manifest.documents["a"]
    # a crash after the manifest was replaced, before the journal was removed
    catalog.write_journal(tmp_path, [], appends={"a": list(entry.chunk_ids[-SLICE:])})
    recover(tmp_path, w.store, w.manifest)
    assert w.manifest.documents["a"] == entry
    assert_consistent(w)


def test_a_changed_large_document_reuses_its_vectors_across_slices(tmp_path: Path) -> None:
    w = make_writer(tmp_path)
    w.add([doc("a", big(11))])
    before = len(w.manifest.documents["a"].chunk_ids)
    report = w.add([doc("a", big(12))])  # one part more at the end
    assert report.updated == 1 and report.chunks == before + 1
    assert report.embedded <= 2  # the new part (and the chunk it changed), not every slice
    assert_consistent(w)


def test_a_partial_document_is_never_skipped_as_unchanged(tmp_path: Path) -> None:
    w = make_writer(tmp_path)
    w.add([doc("a", big(11))])
    entry = w.manifest.documents["a"]
    w.manifest.documents["a"] = entry.__class__(
        **{**{f: getattr(entry, f) for f in entry.__slots__}, "complete": False}
    )
    source = tmp_path / "a.md"
    source.write_text(big(11), encoding="utf-8")
    catalog.write_manifest(tmp_path, w.manifest)
    keep, skipped = writer_module.skip_unchanged_files(
        tmp_path, [source], signature=lambda: w.signature
    )
    assert (keep, skipped) == ([source], 0)


def test_a_run_commits_small_first_then_doubles_up_to_the_commit_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C in a run's first minute kept nothing when every commit gathered 256 chunks
    before embedding them; the first commits are now 32, 64, 128 chunks (a document is never
    split for it: a commit closes before the document that would take it past its size)."""
    monkeypatch.setattr(writer_module, "COMMIT_CHUNKS", 256)
    sizes: list[int] = []
    real = IndexWriter.commit

    def spy(self: IndexWriter, batch: Sequence[writer_module.Slice], **kw: object) -> object:
        sizes.append(sum(len(piece.chunks) for piece in batch))
        return real(self, batch, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(IndexWriter, "commit", spy)
    w = make_writer(tmp_path / "w")
    report = w.add([doc(f"d{i}", big(3, tag=f"-{i}")) for i in range(200)])
    per_doc = report.chunks // 200
    assert report.chunks == 200 * per_doc and per_doc >= 3
    limits = [writer_module.commit_size(n) for n in range(len(sizes))]
    assert limits[:4] == [32, 64, 128, 256]
    for size, limit in zip(sizes[:-1], limits, strict=False):
        assert limit - per_doc < size <= limit  # closed before the one that would overflow it
    assert sum(sizes) == report.chunks
    assert_consistent(w)


def test_a_small_document_is_committed_before_a_big_ones_first_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-chunk note listed before a large document was committed together with that
    document's first slice, so it stayed unsearchable until the slice was embedded (a 15 MB
    one-line text file: minutes); it now goes in a commit of its own."""
    batches: list[list[str]] = []
    real = IndexWriter.commit

    def spy(self: IndexWriter, batch: Sequence[writer_module.Slice], **kw: object) -> object:
        batches.append([piece.document.doc_id for piece in batch])
        return real(self, batch, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(IndexWriter, "commit", spy)
    w = make_writer(tmp_path / "w")
    report = w.add([doc("note", "# Nota\n\nEl código es 42.\n"), doc("big", big(11))])
    assert report.added == 2
    assert batches[0] == ["note"]  # alone, before any slice of "big"
    assert all(batch == ["big"] for batch in batches[1:]) and len(batches) > 2
    assert_consistent(w)
