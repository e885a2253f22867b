"""Writing one index directory: chunked documents in journaled commits, deletes, crash
recovery, and the BM25 length statistics the manifest keeps.

:class:`IndexWriter` runs the commit protocol of :mod:`ragstrata.index.catalog` over a
:class:`~ragstrata.index.base.VectorStore`: journal the documents being rewritten, delete their
old chunks and upsert the new ones, flush, replace the manifest, clear the journal. A crash at
any point leaves a journal that :func:`recover` rolls back (the listed documents become absent),
so the manifest always equals the stored chunks.

A document of more than :data:`COMMIT_CHUNKS` chunks is committed in slices of that size (a
:class:`Slice` each): the first replaces the document's old chunks, the later ones append under
the same journal (a crash rolls back only the slice in flight), and the manifest marks the
document ``complete`` with its last slice. A re-run of the same text resumes after the committed
slices; searches in between see the document's committed slices.

BM25: the store applies IDF; each chunk's sparse vector carries the term-frequency component,
which needs the collection's average chunk length. The manifest keeps the chunk count
(``bm25_docs``) and total length (``bm25_total_length``); every commit and delete updates both,
and a commit weights its chunks with the average as it will be after that commit. That average
moves as an ingest goes on (a run's first commit holds 32 chunks), so the weights of its first
commits, and the index's BM25 ranking, depended on which files came first and how commits were
cut: :meth:`IndexWriter.reweight`, at the end of every ingest, recomputes the weights of each
document weighted with an average more than :data:`REWEIGHT_TOLERANCE` away from the index's
(:attr:`DocEntry.bm25_avgdl` records what each was weighted with).

A new BM25 analyzer (or new ``k1``/``b``) needs no file: :meth:`IndexWriter.reanalyse`, at the
start of every ingest, analyses again from its stored text each document chunked as the index
chunks now, so a document whose file is not in that ingest (or is gone) is not left with term
ids the index's analyzer cannot match.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ragstrata.chunking.splitter import Chunker
from ragstrata.config import BM25Config
from ragstrata.embed.base import Embedder
from ragstrata.errors import ChunkingError, StoreError
from ragstrata.index import catalog
from ragstrata.index.base import SparseVector, VectorStore
from ragstrata.index.bm25 import bm25_document_weights
from ragstrata.index.catalog import DocEntry, FailureEntry, Manifest
from ragstrata.index.report import (
    IngestReport,
    ProgressCallback,
    change_kind,
    keep_note,
    matching_documents,
)
from ragstrata.index.snapshots import SnapshotPublisher
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Chunk, Document, FloatArray, IngestFailure

COMMIT_CHUNKS = 256
"""Chunks embedded and committed together (one journal/flush/manifest cycle); also the size of
the slices a large document is committed in."""

FIRST_COMMIT_CHUNKS = 32
"""Size of a run's first commit; each later one doubles it up to :data:`COMMIT_CHUNKS` (32, 64,
128, 256, 256...). Embedding is most of a commit's time (the default embedder on 2 cores embeds
6-8 chunks/s, the rate ``ragstrata ingest`` prints on 28 FastAPI pages: 30-45 s for 256 chunks),
so with one size a Ctrl-C in a run's first half minute kept nothing
(a new user stopped a 28-page ingest at 96 chunks embedded: 0 committed); the first commits
are now a few seconds each, and a large run still commits in 256s (four more commits in all,
each one journal, flush and manifest write)."""


def commit_size(commits_done: int) -> int:
    """Chunks the next commit of a run gathers once ``commits_done`` commits are behind it
    (:data:`FIRST_COMMIT_CHUNKS` doubled per commit, at most :data:`COMMIT_CHUNKS`)."""
    return min(COMMIT_CHUNKS, FIRST_COMMIT_CHUNKS << min(commits_done, 16))


REWEIGHT_TOLERANCE = 0.02
"""A document whose BM25 weights were computed with an average chunk length more than this
share away from the index's current one is re-weighted by :meth:`IndexWriter.reweight`."""

REWEIGHT_CHUNKS = 1024
"""Chunks read, re-weighted and written back together by :meth:`IndexWriter.reweight`."""

EMBED_PROGRESS_TEXTS = 32
"""Texts embedded per call inside a commit, so progress moves while a commit embeds (the
default int8 embedders encode one text per pass: the grouping does not change a vector)."""


@dataclass(frozen=True, slots=True)
class Slice:
    """Consecutive chunks of one document committed together: the whole document, or one
    :data:`COMMIT_CHUNKS`-sized slice of a large one. ``append``: a later slice, added after the
    chunks the manifest already lists for the document (else the document's old chunks are
    replaced); ``last``: the document is complete once this slice lands."""

    document: Document
    chunks: tuple[Chunk, ...]
    append: bool = False
    last: bool = True


def embed_hash(text: str) -> str:
    """Identity of an embedded text: the first 16 hex digits of its UTF-8 SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    """SHA-256 of a regular file's bytes; ``""`` when it cannot be read or is not a regular
    file (opened without blocking: a FIFO swapped in after ``discover`` cannot hang ingest)."""
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""  # let the loader report it
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""  # unreadable: let the loader report it
    return digest.hexdigest()


def chunker_signature(chunker: Chunker) -> str:
    """Parser version + chunker settings: what turns a file's bytes into chunks."""
    from ragstrata.ingest.loader import PARSER_VERSION

    return f"parser-{PARSER_VERSION}:{chunker.signature}"


def index_signature(chunker: Chunker, analyzer: Analyzer, bm25: BM25Config) -> str:
    """The signature a document indexed with these stages carries (see
    :func:`ragstrata.index.catalog.index_signature`)."""
    return catalog.index_signature(
        chunker=chunker_signature(chunker), analyzer=analyzer.signature, k1=bm25.k1, b=bm25.b
    )


def new_manifest(
    embedder: Embedder, analyzer: Analyzer, chunker: Chunker, bm25: BM25Config
) -> Manifest:
    """The manifest of a new, empty index built with these stages."""
    return Manifest(
        embedder=embedder.name,
        dim=embedder.dim,
        analyzer=analyzer.signature,
        chunker=chunker_signature(chunker),
        k1=bm25.k1,
        b=bm25.b,
    )


def skip_unchanged_files(
    index_dir: Path, files: list[Path], *, signature: Callable[[], str]
) -> tuple[list[Path], int]:
    """Drop files whose bytes and chunking (:func:`~ragstrata.index.catalog.same_chunking` of
    ``signature()``, asked for only when the index exists: a new BM25 analyzer or ``k1``/``b``
    is applied by the writer to the stored text) match the manifest of the index at
    ``index_dir`` (no parse needed); returns
    the files to parse and how many were dropped. Without a readable manifest and journal,
    nothing is dropped; documents an interrupted commit lists are never dropped (they are
    redone)."""
    from ragstrata.ingest.loader import doc_id_for

    try:
        manifest = catalog.read_manifest(index_dir)
    except StoreError:
        return files, 0
    journal = catalog.read_journal(index_dir)
    if journal == []:  # a journal that cannot be read: parse everything
        return files, 0
    rolled_back = set(journal or ())  # an interrupted commit: these documents are redone
    wanted = signature()
    keep: list[Path] = []
    for path in files:
        doc_id = doc_id_for(path)
        entry = None if doc_id in rolled_back else manifest.documents.get(doc_id)
        if (
            entry is None
            or not entry.complete
            or not catalog.same_chunking(entry.signature, wanted)
            or not entry.file_hash
            or file_sha256(path) != entry.file_hash
        ):
            keep.append(path)
    return keep, len(files) - len(keep)


def forget(index_dir: Path, store: VectorStore, manifest: Manifest, doc_ids: Sequence[str]) -> None:
    """Delete the documents' chunks and manifest entries (unknown ids are fine), then persist
    the manifest and close the journal."""
    store.delete_documents(doc_ids)
    store.flush()
    for doc_id in doc_ids:
        entry = manifest.documents.pop(doc_id, None)
        if entry is not None:
            manifest.bm25_docs -= len(entry.chunk_ids)
            manifest.bm25_total_length -= entry.bm25_length
    catalog.write_manifest(index_dir, manifest)
    catalog.clear_journal(index_dir)


def recover(index_dir: Path, store: VectorStore, manifest: Manifest) -> None:
    """Roll back an interrupted commit (see :mod:`ragstrata.index.catalog`): the documents its
    journal lists become absent, and the chunks of a slice it was appending are deleted unless
    the manifest already lists them. Nothing happens without a journal."""
    doc_ids = catalog.read_journal(index_dir)
    if doc_ids is None:
        return
    stray: list[str] = []
    for doc_id, chunk_ids in catalog.read_appends(index_dir).items():
        entry = manifest.documents.get(doc_id)
        if entry is None or not set(chunk_ids) <= set(entry.chunk_ids):
            stray.extend(chunk_ids)
    if stray:
        store.delete_chunks(stray)
    forget(index_dir, store, manifest, doc_ids)


def _failure_entry(failure: IngestFailure, signature: str) -> FailureEntry:
    """The manifest record of ``failure`` (see :class:`~ragstrata.index.catalog.FailureEntry`)."""
    return FailureEntry(
        path=failure.path,
        code=failure.code,
        reason=failure.reason,
        retry_key=failure.retry_key,
        signature=signature,
        failed_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _failure_source(entry: FailureEntry) -> str:
    """The ``source`` (resolved path text, as documents have) of a recorded failure."""
    from ragstrata.ingest.loader import source_for

    return source_for(Path(entry.path))


_PARTIAL_REPORT = "ragstrata_partial_report"


def partial_report(exc: BaseException) -> IngestReport | None:
    """The report :meth:`IndexWriter.add` had built when ``exc`` (an interrupt) stopped it;
    ``None`` when the interrupt came before or after it."""
    report = getattr(exc, _PARTIAL_REPORT, None)
    return report if isinstance(report, IngestReport) else None


class IndexWriter:
    """Writes documents into the index at ``index_dir`` (its ``store`` and ``manifest``) in
    journaled commits. The caller holds the index lock and has checked that the store fits the
    manifest (:func:`~ragstrata.index.catalog.check_compatible`).

    ``chunker`` splits documents and gives each chunk's embedded text; with the analyzer and
    ``bm25`` it makes the :func:`index_signature` that a document indexed otherwise is
    re-chunked for. ``manifest`` is updated in place as commits land. ``publisher`` (an
    embedded shard) publishes the committed state for readers: at the start when the shard is
    small, else before the first commit, then after commits at its own pace
    (:mod:`ragstrata.index.snapshots`).
    """

    def __init__(
        self,
        index_dir: Path,
        store: VectorStore,
        manifest: Manifest,
        *,
        embedder: Embedder,
        analyzer: Analyzer,
        chunker: Chunker,
        bm25: BM25Config,
        publisher: SnapshotPublisher | None = None,
    ) -> None:
        self.index_dir = index_dir
        self.publisher = publisher
        self.store = store
        self.manifest = manifest
        self.embedder = embedder
        self.analyzer = analyzer
        self.chunker = chunker
        self.bm25 = bm25
        self.signature = index_signature(chunker, analyzer, bm25)
        # per document being rewritten in slices: stored vectors of its old chunks (by embed
        # hash) that its later slices reuse after the first slice deleted them
        self._carry: dict[str, dict[str, FloatArray]] = {}
        self._touched: set[str] = set()  # documents re-analysed or re-weighted by this add

    def recover(self) -> None:
        """Roll back an interrupted commit (see :func:`recover`)."""
        recover(self.index_dir, self.store, self.manifest)

    def add(
        self,
        documents: Iterable[Document | IngestFailure],
        *,
        total: int | None = None,
        progress: ProgressCallback | None = None,
        prune: Callable[[str], bool] | None = None,
        count_gone: Callable[[str], bool] | None = None,
    ) -> IngestReport:
        """Chunk, embed and commit ``documents`` (failures are passed through to the report);
        see :meth:`ragstrata.pipeline.Ragstrata.add_documents`.

        A new index's manifest is written first; an interrupted commit is rolled back and the
        configured chunker/analyzer/BM25 parameters become the index's own before any document
        is read. Unchanged documents (same content hash and signature) are skipped; changed
        ones are replaced in the commit that adds their new chunks, :data:`COMMIT_CHUNKS`
        chunks per commit (the first commits smaller, :func:`commit_size`); a larger document is
        committed in slices (see :class:`Slice`) and a document whose first slices a crash left
        committed resumes after them. A commit holds more than its size only when one slice
        alone does: the documents pending before a piece that would overflow it are committed
        first, so with the files in ascending size (:func:`~ragstrata.indexing.smallest_first`)
        a folder's small documents are searchable before a big one's first slice is embedded.
        ``prune(source)`` selects indexed documents to remove in one more commit;
        ``count_gone(source)`` only counts them (``report.stale``, from the manifest in hand).
        The store is optimized when anything changed (a dry run does not come here:
        :func:`~ragstrata.index.report.count_changes`).

        A failure that carries a ``doc_id`` and ``retry_key`` is recorded in the manifest
        (:class:`~ragstrata.index.catalog.FailureEntry`), a document that is taken drops its
        record, ``prune`` drops the records of files that are gone; the records are persisted
        with the next commit's manifest, or at the end when no commit follows.

        Interrupted (Ctrl-C, or SIGTERM turned into :class:`KeyboardInterrupt`), it re-raises
        with the report so far on the exception (:func:`partial_report`): the files skipped and
        warned about before the interrupt are still said (trial 34: an interrupted ingest named
        none of them, and the next run, finding them unchanged, did not either).
        """
        report = IngestReport()
        try:
            return self._add(report, documents, total, progress, prune, count_gone)
        except KeyboardInterrupt as exc:
            setattr(exc, _PARTIAL_REPORT, report)
            raise

    def _add(
        self,
        report: IngestReport,
        documents: Iterable[Document | IngestFailure],
        total: int | None,
        progress: ProgressCallback | None,
        prune: Callable[[str], bool] | None,
        count_gone: Callable[[str], bool] | None,
    ) -> IngestReport:
        manifest = self.manifest
        if not (self.index_dir / catalog.MANIFEST).exists():
            catalog.write_manifest(self.index_dir, manifest)
        self.recover()
        self._adopt_configuration()
        if self.publisher is not None:
            self.publisher.publish_early(manifest)
        self._touched = set()
        self.reanalyse(progress=progress)
        signature = self.signature
        pending: list[Slice] = []
        pending_chunks = 0
        commits = 0
        failures_changed = False

        def commit_pending() -> None:  # the pending slices in one commit (it carries the records)
            nonlocal pending, pending_chunks, commits, failures_changed
            self._commit_into(pending, progress, report)
            pending, pending_chunks, failures_changed = [], 0, False
            commits += 1

        for done, item in enumerate(documents, start=1):
            if isinstance(item, IngestFailure):
                item = keep_note(item, manifest)  # a bad new version loses nothing
                report.failures.append(item)
                if item.doc_id and item.retry_key and not item.unchanged:
                    manifest.failures[item.doc_id] = _failure_entry(item, signature)
                    failures_changed = True
            else:
                report.warnings.extend(item.warnings)
                if manifest.failures.pop(item.doc_id, None) is not None:
                    failures_changed = True
                entry = manifest.documents.get(item.doc_id)
                kind = change_kind(entry, item.content_hash, signature, item.file_hash)
                if kind == "unchanged":
                    report.count(kind)
                else:
                    chunks = self._chunk_or_fail(item, report)
                    if chunks:
                        report.count(kind)
                    # only the slices still to write: a resumed document's committed ones
                    # are not chunks this run embeds and commits
                    pieces = self._slices(item, chunks) if chunks else []
                    queued = sum(len(piece.chunks) for piece in pieces)
                    if queued and progress:
                        progress("chunk", queued, queued)
                        progress("parse", done, total or done)  # taken before its commits
                    for piece in pieces:
                        # what is pending goes first when this piece (a large document's
                        # slice) would take the commit past its size: a 1-chunk note must not
                        # wait for the 256 chunks of the big file after it to be embedded
                        if pending and pending_chunks + len(piece.chunks) > commit_size(commits):
                            commit_pending()
                        pending.append(piece)
                        pending_chunks += len(piece.chunks)
            if progress:
                progress("parse", done, total or done)
            if pending_chunks >= commit_size(commits):
                commit_pending()
        if pending:
            commit_pending()
        if prune is not None:
            pruned = matching_documents(manifest, prune)
            stale = list(pruned)
            report.pruned, report.pruned_sources = len(stale), sorted(pruned.values())
            gone = [d for d, f in manifest.failures.items() if prune(_failure_source(f))]
            if gone:
                for doc_id in gone:
                    del manifest.failures[doc_id]
                failures_changed = True
            if stale:
                self.delete(stale)  # writes the manifest, failure records included
                failures_changed = False
        if count_gone is not None:
            gone_files = matching_documents(manifest, count_gone).values()
            report.stale, report.stale_sources = len(gone_files), sorted(gone_files)
        self.reweight(progress=progress)
        # each chunk once: a re-analysed document is often re-weighted after (review 41: 40
        # chunks "re-weighted" in a 21-chunk index)
        report.reweighted = sum(
            len(manifest.documents[d].chunk_ids) for d in self._touched if d in manifest.documents
        )
        if failures_changed:  # no commit carried the failure records: persist them alone
            catalog.write_manifest(self.index_dir, manifest)
        if report.chunks or report.updated or report.pruned or report.reweighted:
            self.optimize()
        self.store.flush()
        return report

    def reweight(self, *, progress: ProgressCallback | None = None) -> int:
        """Recompute the BM25 weights of every document whose chunks were weighted with an
        average chunk length more than :data:`REWEIGHT_TOLERANCE` away from the index's
        (:attr:`Manifest.avgdl`), so that the index's BM25 ranking does not depend on the order
        files were ingested in or on where commits were cut; returns the chunks re-weighted.

        Only the sparse vectors change (:meth:`VectorStore.update_sparse`): each chunk's terms
        are analysed again from its stored text, :data:`REWEIGHT_CHUNKS` at a time, and the
        manifest records the new average per document once the store is flushed. A crash in
        between leaves documents whose weights are new but whose entries say otherwise: the next
        ingest weights them again (the result is the same). Documents indexed under another
        :func:`index_signature` are left to the ingest that re-indexes them. ``progress`` gets
        ``reweight`` events. Raises StoreError on a failed read or write.
        """
        manifest = self.manifest
        avgdl = manifest.avgdl
        stale = [
            doc_id
            for doc_id, entry in manifest.documents.items()
            if entry.signature == self.signature
            and abs(entry.bm25_avgdl - avgdl) > REWEIGHT_TOLERANCE * avgdl
        ]
        if avgdl <= 0 or not stale:
            return 0
        total = sum(len(manifest.documents[d].chunk_ids) for d in stale)
        done = 0
        for group, chunks, tfs in self._stored_terms(stale):
            self.store.update_sparse([c.chunk_id for c in chunks], self._bm25_weights(tfs, avgdl))
            for d in group:
                manifest.documents[d] = replace(manifest.documents[d], bm25_avgdl=avgdl)
            done += len(chunks)
            if progress:
                progress("reweight", done, total)
        self._persist()
        return done

    def reanalyse(self, *, progress: ProgressCallback | None = None) -> int:
        """Analyse again, from their stored text, the BM25 terms of every document chunked as
        the index chunks now (same chunker part of its :func:`index_signature`) but indexed with
        another analyzer or other ``k1``/``b``; returns the chunks re-analysed.

        An upgrade that changes the analyzer used to re-index each document only when an ingest
        reached its file: one stopped part-way, given only some of the index's folders, or
        whose file now fails or is gone, left documents whose BM25 vectors hold term ids the
        index's analyzer cannot match (found by dense search only; review 36). Each document's
        ``bm25_length`` and the manifest's ``bm25_total_length`` take the new lengths; its
        sparse vectors are weighted with the average as it stands after its group
        (:meth:`reweight` then evens the averages out). Nothing is embedded. A crash before the
        manifest is written leaves entries with their old signature over new vectors: the next
        run analyses them again (the result is the same). A document chunked otherwise must be
        parsed again and is left to the ingest that reaches its file. ``progress`` gets
        ``reweight`` events. Raises StoreError on a failed read or write.
        """
        manifest = self.manifest
        chunker = chunker_signature(self.chunker)
        stale = [
            doc_id
            for doc_id, entry in manifest.documents.items()
            if entry.signature != self.signature
            and catalog.signature_chunker(entry.signature) == chunker
        ]
        if not stale:
            return 0
        total = sum(len(manifest.documents[d].chunk_ids) for d in stale)
        done = 0
        for group, chunks, tfs in self._stored_terms(stale):
            lengths: Counter[str] = Counter()
            found: Counter[str] = Counter()
            for chunk, tf in zip(chunks, tfs, strict=True):
                lengths[chunk.doc_id] += sum(tf.values())
                found[chunk.doc_id] += 1
            for d in group:
                manifest.bm25_total_length += lengths[d] - manifest.documents[d].bm25_length
            avgdl = manifest.avgdl or 1.0
            self.store.update_sparse([c.chunk_id for c in chunks], self._bm25_weights(tfs, avgdl))
            for d in group:
                entry = manifest.documents[d]
                # chunks missing from the store (review 41): no signature, so that the next
                # ingest that reaches the file indexes it again and restores them
                whole = found[d] == len(entry.chunk_ids)
                manifest.documents[d] = replace(
                    entry,
                    signature=self.signature if whole else "",
                    bm25_length=lengths[d],
                    bm25_avgdl=avgdl,
                )
            done += len(chunks)
            if progress:
                progress("reweight", done, total)
        self._persist()
        return done

    def _stored_terms(
        self, doc_ids: Sequence[str]
    ) -> Iterator[tuple[list[str], list[Chunk], list[Counter[str]]]]:
        """``(documents, their stored chunks, each chunk's term frequencies)`` for ``doc_ids``
        in groups of about :data:`REWEIGHT_CHUNKS` chunks, analysed again from the stored text
        (:meth:`reweight`, :meth:`reanalyse`); each group's documents count as touched by this
        add once the caller has written their vectors (it resumes the generator)."""
        manifest = self.manifest
        size = 0
        group: list[str] = []
        for at, doc_id in enumerate(doc_ids):
            group.append(doc_id)
            size += len(manifest.documents[doc_id].chunk_ids)
            if size < REWEIGHT_CHUNKS and at + 1 < len(doc_ids):
                continue
            chunks = self.store.get([c for d in group for c in manifest.documents[d].chunk_ids])
            tfs = [self.analyzer.term_frequencies(self.chunker.embedding_text(c)) for c in chunks]
            yield group, chunks, tfs
            self._touched.update(group)
            group, size = [], 0

    def _persist(self) -> None:
        """Flush the store, then write (and publish) the manifest: vectors before the entries
        that describe them."""
        self.store.flush()
        catalog.write_manifest(self.index_dir, self.manifest)
        if self.publisher is not None:
            self.publisher.publish(self.manifest)

    def _bm25_weights(self, tfs: Sequence[Counter[str]], avgdl: float) -> list[SparseVector]:
        """The sparse vector of each chunk's term frequencies ``tfs``, length-normalized with
        ``avgdl`` and the index's ``k1``/``b`` (:func:`bm25_document_weights`)."""
        k1, b = self.manifest.k1, self.manifest.b
        return [
            bm25_document_weights(tf, doc_len=sum(tf.values()), avgdl=avgdl, k1=k1, b=b)
            for tf in tfs
        ]

    def optimize(self) -> None:
        """Build the store's search indexes now (Edge has no background optimizer)."""
        self.store.optimize()

    def _adopt_configuration(self) -> None:
        """Make the configured chunker/analyzer/BM25 parameters the index's own. Documents
        indexed under another configuration keep their old signature and are re-indexed as the
        ingest reaches them (a crash in between leaves each document consistent with its own
        signature; the next run finishes the migration)."""
        manifest = self.manifest
        chunker = chunker_signature(self.chunker)
        wanted = (chunker, self.analyzer.signature, self.bm25.k1, self.bm25.b)
        if (manifest.chunker, manifest.analyzer, manifest.k1, manifest.b) != wanted:
            manifest.chunker, manifest.analyzer, manifest.k1, manifest.b = wanted
            catalog.write_manifest(self.index_dir, manifest)

    def _chunk_or_fail(self, document: Document, report: IngestReport) -> list[Chunk]:
        try:
            chunks = self.chunker.chunk(document)
        except ChunkingError as exc:
            report.failures.append(IngestFailure(document.source, exc.code, str(exc)))
            return []
        if not chunks:
            report.failures.append(IngestFailure(document.source, "RS203", "no text to index"))
        return chunks

    def _slices(self, document: Document, chunks: list[Chunk]) -> list[Slice]:
        """``document``'s chunks as the slices to commit: one for a document of at most
        :data:`COMMIT_CHUNKS` chunks, else slices of that size from chunk 0, starting after the
        ones already committed when the manifest holds a partial entry of the same text and
        signature (chunk ids are content hashes: the prefix must match). A document rewritten
        in slices keeps the stored vectors its later slices can reuse (:attr:`_carry`)."""
        entry = self.manifest.documents.get(document.doc_id)
        start = 0
        if (
            entry is not None
            and not entry.complete
            and entry.content_hash == document.content_hash
            and entry.signature == self.signature
            and len(entry.chunk_ids) < len(chunks)
            and tuple(c.chunk_id for c in chunks[: len(entry.chunk_ids)]) == entry.chunk_ids
        ):
            start = len(entry.chunk_ids)
        elif entry is not None and len(chunks) > COMMIT_CHUNKS:
            later = {embed_hash(self.chunker.embedding_text(c)) for c in chunks[COMMIT_CHUNKS:]}
            wanted = {
                h: cid
                for h, cid in zip(entry.embed_hashes, entry.chunk_ids, strict=False)
                if h in later
            }
            found = self.store.dense_vectors(sorted(set(wanted.values())))
            self._carry[document.doc_id] = {
                h: found[cid] for h, cid in wanted.items() if cid in found
            }
        return [
            Slice(
                document,
                tuple(chunks[lo : lo + COMMIT_CHUNKS]),
                append=lo > 0,
                last=lo + COMMIT_CHUNKS >= len(chunks),
            )
            for lo in range(start, len(chunks), COMMIT_CHUNKS)
        ]

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents in one journaled commit; returns how many of ``doc_ids`` the index
        held (unknown ids are fine). The store is flushed, not optimized."""
        held = sum(d in self.manifest.documents for d in dict.fromkeys(doc_ids))
        catalog.write_journal(self.index_dir, doc_ids)
        forget(self.index_dir, self.store, self.manifest, doc_ids)
        return held

    def _commit_into(
        self,
        batch: Sequence[Slice],
        progress: ProgressCallback | None,
        report: IngestReport,
    ) -> None:
        chunks, embedded = self.commit(batch, progress=progress)
        report.chunks += chunks
        report.embedded += embedded

    def commit(
        self,
        batch: Sequence[Slice],
        *,
        progress: ProgressCallback | None = None,
    ) -> tuple[int, int]:
        """Write ``batch`` (at most one slice per document) in one journaled commit; returns
        the chunks written and how many of them were embedded.

        A chunk whose embedded text is identical to a stored chunk (same :func:`embed_hash`) of
        its own document, or, for a document new to the index, of any other (a renamed or copied
        file), reuses that stored vector instead of being embedded again.
        """
        manifest = self.manifest
        analyzer = self.analyzer
        chunks = [c for piece in batch for c in piece.chunks]
        texts = [self.chunker.embedding_text(c) for c in chunks]
        hashes = [embed_hash(t) for t in texts]
        tfs = [analyzer.term_frequencies(t) for t in texts]
        lengths = [sum(tf.values()) for tf in tfs]
        # BM25 statistics after this commit (replaced documents leave, new chunks enter)
        docs = manifest.bm25_docs + len(chunks)
        total = manifest.bm25_total_length + sum(lengths)
        stored: dict[str, str] = {}  # embed hash -> chunk id of a stored vector for that text
        carried: dict[str, FloatArray] = {}  # embed hash -> vector of a deleted old chunk
        fresh: set[str] = set()  # hashes of documents with no stored chunks of their own yet
        offset = 0
        for piece in batch:
            old = manifest.documents.get(piece.document.doc_id)
            if old is not None:
                if not piece.append:
                    docs -= len(old.chunk_ids)
                    total -= old.bm25_length
                stored.update(zip(old.embed_hashes, old.chunk_ids, strict=False))
            if old is None or piece.append:
                fresh.update(hashes[offset : offset + len(piece.chunks)])
            offset += len(piece.chunks)
            carried.update(self._carry.get(piece.document.doc_id, {}))
        # a new document's text stored under another one: a renamed or copied file. Only new
        # documents look there: the scan reads every indexed chunk (21 ms per commit at 200,000),
        # which a re-chunking run of unchanged files (a chunker version bump) need not pay
        needed = fresh - stored.keys() - carried.keys()
        if needed:
            for entry in manifest.documents.values():
                for h, chunk_id in zip(entry.embed_hashes, entry.chunk_ids, strict=False):
                    if h in needed:
                        stored.setdefault(h, chunk_id)
        avgdl = total / docs if docs else 1.0
        sparse = self._bm25_weights(tfs, avgdl)
        vectors, embedded = self._vectors(texts, hashes, stored, carried, progress=progress)
        rewrites = [piece.document.doc_id for piece in batch if not piece.append]
        appends = {
            piece.document.doc_id: [c.chunk_id for c in piece.chunks]
            for piece in batch
            if piece.append
        }
        if self.publisher is not None and not self.publisher.published:
            self.publisher.publish(manifest, force=True)  # what readers see until this lands
        catalog.write_journal(self.index_dir, rewrites, appends=appends)
        self.store.delete_documents(rewrites)
        self.store.upsert(chunks, vectors, sparse)
        self.store.flush()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        offset = 0
        for piece in batch:
            doc, n = piece.document, len(piece.chunks)
            before = manifest.documents.get(doc.doc_id) if piece.append else None
            manifest.documents[doc.doc_id] = DocEntry(
                source=doc.source,
                content_hash=doc.content_hash,
                chunk_ids=(before.chunk_ids if before else ())
                + tuple(c.chunk_id for c in piece.chunks),
                bm25_length=(before.bm25_length if before else 0)
                + sum(lengths[offset : offset + n]),
                title=doc.title,
                signature=self.signature,
                embed_hashes=(before.embed_hashes if before else ())
                + tuple(hashes[offset : offset + n]),
                file_hash=doc.file_hash,
                indexed_at=now,
                complete=piece.last,
                # slices weighted with different averages: unknown, re-weighted at the end
                bm25_avgdl=avgdl if before is None or before.bm25_avgdl == avgdl else 0.0,
            )
            offset += n
            if piece.last:
                self._carry.pop(doc.doc_id, None)
        manifest.bm25_docs = docs
        manifest.bm25_total_length = total
        catalog.write_manifest(self.index_dir, manifest)
        catalog.clear_journal(self.index_dir)
        if progress:
            progress("commit", len(chunks), len(chunks))
        if self.publisher is not None:
            self.publisher.publish(manifest)
        return len(chunks), embedded

    def _vectors(
        self,
        texts: Sequence[str],
        hashes: Sequence[str],
        stored: dict[str, str],
        carried: dict[str, FloatArray],
        *,
        progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, int]:
        """float32 (n, dim) vectors for ``texts`` (stored or ``carried`` ones reused, the rest
        embedded, :data:`EMBED_PROGRESS_TEXTS` at a time so that ``progress`` gets an ``embed``
        event as each group is ready) and the number embedded."""
        found = self.store.dense_vectors(sorted({stored[h] for h in hashes if h in stored}))
        reuse = {h: found[stored[h]] for h in hashes if h in stored and stored[h] in found}
        reuse.update({h: carried[h] for h in hashes if h in carried and h not in reuse})
        missing = [i for i, h in enumerate(hashes) if h not in reuse]
        vectors = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        if progress and len(texts) > len(missing):
            progress("embed", len(texts) - len(missing), len(texts))
        for at in range(0, len(missing), EMBED_PROGRESS_TEXTS):
            group = missing[at : at + EMBED_PROGRESS_TEXTS]
            vectors[group] = self.embedder.embed_documents([texts[i] for i in group])
            if progress:
                progress("embed", len(group), len(texts))
            if self.publisher is not None:  # a commit the rate limit held back, now due
                self.publisher.catch_up(self.manifest)
        for i, h in enumerate(hashes):
            if h in reuse:
                vectors[i] = reuse[h]
        return vectors, len(missing)
