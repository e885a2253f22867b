"""The end-to-end pipeline: ingest → chunk → embed/index → hybrid search → cited answer.

:class:`Ragstrata` wires the stages from one :class:`~ragstrata.config.RagConfig`; the CLI (and
later the service) is a thin layer over it.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragstrata.assemble.context import ParentLookup
from ragstrata.chunking.splitter import StructureChunker
from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.embed.base import Embedder
from ragstrata.errors import (
    ChunkingError,
    IndexNotFoundError,
    MissingDependencyError,
    SourceNotFoundError,
    StoreError,
)
from ragstrata.generate.evidence import min_evidence_for
from ragstrata.generate.extractive import ExtractiveAnswerer
from ragstrata.index import catalog
from ragstrata.index.analyzer import Analyzer, bm25_document_weights
from ragstrata.index.base import Filters
from ragstrata.index.catalog import DocEntry, Manifest
from ragstrata.index.edge import EdgeStore
from ragstrata.index.qdrant import QdrantStore
from ragstrata.paths import path_text
from ragstrata.rerank.base import Reranker, rerank_result
from ragstrata.retrieve.hybrid import HybridRetriever, Mode, SearchResult
from ragstrata.types import (
    Answer,
    Chunk,
    Document,
    IngestFailure,
)

if TYPE_CHECKING:
    from ragstrata.generate.answerer import Answerer, AskEvent
    from ragstrata.generate.base import ChatModel

StoreBackend = EdgeStore | QdrantStore
"""The embedded shard (``store.url`` empty) or a Qdrant collection (see docs/deploy.md)."""

logger = logging.getLogger(__name__)

READ_WAIT_S = 30.0
"""How long search/ask wait for an ingest holding the index before failing with RS503."""

COMMIT_CHUNKS = 256
"""Chunks embedded and committed together (one journal/flush/manifest cycle)."""


@dataclass(slots=True)
class IngestReport:
    """Outcome of one ``ingest`` run; ``status`` is ``ok``, ``partial`` or ``failed``.

    ``updated`` counts documents whose content changed, ``reindexed`` unchanged documents
    re-chunked because the chunking/BM25 configuration changed; ``chunks`` is the number of
    chunks written, ``embedded`` how many of them had to be embedded (the others reused the
    stored vector of an identical embedded text); ``bytes_read`` the size of the files parsed.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    pruned: int = 0
    reindexed: int = 0
    chunks: int = 0
    embedded: int = 0
    bytes_read: int = 0
    failures: list[IngestFailure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if not self.failures:
            return "ok"
        return "partial" if (self.added + self.updated + self.unchanged) else "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "pruned": self.pruned,
            "reindexed": self.reindexed,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reused_vectors": self.chunks - self.embedded,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "chunks_per_second": round(self.chunks / self.seconds, 2) if self.seconds else None,
            "failures": [_failure_json(f) for f in self.failures],
        }


def _failure_json(failure: IngestFailure) -> dict[str, str]:
    return {"path": failure.path, "code": failure.code, "reason": failure.reason}


ProgressCallback = Callable[[str, int, int], None]
"""``(event, done, total)``: ``discover`` (files found), ``parse`` (documents done of total),
``bytes`` (bytes parsed of total), ``embed`` (chunks just embedded, as done and total)."""


def display_path(source: str) -> str:
    """``source`` relative to the working directory when below it, else unchanged."""
    try:
        return os.path.relpath(source) if Path(source).is_relative_to(Path.cwd()) else source
    except ValueError:
        return source


class Ragstrata:
    """The engine over one index directory. Cheap to construct; models load on first use.

    ``embedder`` overrides ``config.embedder`` (share one loaded model between engines).

    Raises :class:`~ragstrata.errors.EmbedderMismatchError` when the index was built with another
    embedder, :class:`~ragstrata.errors.IndexNotFoundError` when searching a missing index.
    """

    def __init__(
        self,
        config: RagConfig | None = None,
        *,
        embedder: Embedder | None = None,
        generator: ChatModel | None = None,
    ) -> None:
        self.config = config or RagConfig.load()
        self.index_dir = self.config.index_path
        self._embedder: Embedder | None = embedder
        self._analyzer: Analyzer | None = None
        self._store: StoreBackend | None = None
        self._retriever: HybridRetriever | None = None
        self._chunker: StructureChunker | None = None
        self._lock: catalog.IndexLock | None = None
        self._reranker: Reranker | None = None
        self._reranker_missing = False
        self._generator: ChatModel | None = generator
        self._generator_loaded = generator is not None

    # ------------------------------------------------------------------ stages
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from ragstrata.embed.local import load_embedder

            cfg = self.config.embedder
            self._embedder = load_embedder(
                self.embedder_name, batch_size=cfg.batch_size, threads=cfg.threads, config=cfg
            )
        return self._embedder

    @property
    def embedder_name(self) -> str:
        """The embedder config name this engine loads: ``embedder.name``, or for ``auto`` the
        one the index was built with (a new index: the default), see
        :func:`~ragstrata.config.resolve_embedder_name`."""
        if self._embedder is not None:
            return self._embedder.name.split(":", 1)[0]
        try:
            built_with: str | None = catalog.read_manifest(self.index_dir).embedder
        except IndexNotFoundError:
            built_with = None
        return resolve_embedder_name(self.config.embedder.name, built_with)

    @property
    def analyzer(self) -> Analyzer:
        if self._analyzer is None:
            self._analyzer = Analyzer()
        return self._analyzer

    @property
    def chunker(self) -> StructureChunker:
        if self._chunker is None:
            cfg = self.config.chunking
            emb = self.embedder
            max_tokens = cfg.max_tokens or min(512, emb.max_seq_length)
            self._chunker = StructureChunker(
                emb.counter,
                max_tokens=min(max_tokens, emb.max_seq_length),
                special_tokens=emb.special_tokens,
                overlap_ratio=cfg.overlap_ratio,
                max_prefix_tokens=cfg.max_prefix_tokens,
            )
        return self._chunker

    def _chunker_signature(self) -> str:
        """Parser version + chunker settings: what turns a file's bytes into chunks."""
        from ragstrata.ingest.loader import PARSER_VERSION

        c = self.chunker
        return (
            f"parser-{PARSER_VERSION}:structure-v3:max={c.max_tokens}:overlap={c.overlap_ratio}"
            f":prefix={c.max_prefix_tokens}:chars={c.max_chars}"
        )

    def _new_manifest(self) -> Manifest:
        return Manifest(
            embedder=self.embedder.name,
            dim=self.embedder.dim,
            analyzer=self.analyzer.signature,
            chunker=self._chunker_signature(),
            k1=self.config.bm25.k1,
            b=self.config.bm25.b,
        )

    def _hold_lock(self, *, wait_s: float, purpose: str) -> None:
        """Take the index lock for this engine's lifetime (until :meth:`close`)."""
        if self._lock is None:
            self._lock = catalog.IndexLock.acquire(self.index_dir, wait_s=wait_s, purpose=purpose)

    def _open_store(self, manifest: Manifest, *, writing: bool = False) -> StoreBackend:
        if self._store is None:
            catalog.check_compatible(
                manifest,
                embedder=self.embedder.name,
                dim=self.embedder.dim,
                analyzer=self.analyzer.signature,
                index_dir=self.index_dir,
                writing=writing,
            )
            self._hold_lock(wait_s=READ_WAIT_S, purpose="open")
            if self.config.store.url:  # a Qdrant server/cluster or qdrant-client local mode
                self._store = QdrantStore.from_config(
                    self.config.store,
                    dim=manifest.dim,
                    index_dir=self.index_dir,
                    expected_chunks=manifest.n_chunks,
                )
            else:
                store_cfg = self.config.store
                self._store = EdgeStore(
                    self.index_dir / "shard",
                    dim=manifest.dim,
                    quantization=store_cfg.quantization,
                    on_disk=store_cfg.on_disk,
                    oversampling=store_cfg.oversampling,
                    hnsw_ef=store_cfg.hnsw_ef,
                )
        return self._store

    def manifest(self) -> Manifest:
        """The index's manifest; raises IndexNotFoundError when there is no index."""
        return catalog.read_manifest(self.index_dir)

    # ------------------------------------------------------------------ ingest
    def ingest(
        self,
        paths: Sequence[Path],
        *,
        progress: ProgressCallback | None = None,
        prune: bool = False,
        dry_run: bool = False,
        lock_wait_s: float = 0.0,
    ) -> IngestReport:
        """Parse, chunk, embed and index ``paths`` (files or folders, recursively).

        Unchanged documents (same source, same content hash) are skipped; changed ones are
        replaced in the same commit that adds their new chunks. Bad files are reported in
        ``IngestReport.failures`` and never stop the batch. ``prune`` removes indexed documents
        whose file under ``paths`` no longer exists; ``dry_run`` only reports what would change.
        Only regular files under ``paths`` are read; symbolic links follow
        ``ingest.follow_symlinks`` (see :func:`~ragstrata.ingest.loader.discover`). Raises
        SourceNotFoundError, before the index is opened or created, when none of ``paths``
        exists (a missing path among existing ones is reported as a failure), IndexLockedError
        when another process is writing the index (or, after ``lock_wait_s`` seconds, still has
        it open), EmbedderMismatchError for an index built otherwise.
        """
        from ragstrata.ingest.loader import discover, source_for
        from ragstrata.ingest.pool import auto_workers, load_many

        missing = [p for p in paths if not os.path.lexists(p)]
        if missing and len(missing) == len(paths):
            raise SourceNotFoundError(
                ", ".join(path_text(p) for p in missing),
                "no such file or directory; nothing was ingested (no index was created or changed)",
            )
        for module, package in (("markdown_it", "markdown-it-py"), ("selectolax", "selectolax")):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependencyError(package, "ingest") from exc
        cfg = self.config.ingest
        files, errors = discover(list(paths), follow_symlinks=cfg.follow_symlinks)
        present = {source_for(p) for p in files}  # sources are text: see ragstrata.paths
        workers = auto_workers() if cfg.workers < 0 else cfg.workers
        files, skipped = self._skip_unchanged_files(files)
        sizes = [_size(p) for p in files]
        total_bytes = sum(sizes)

        # the parser processes start now, beside the store and the embedder being opened
        loaded = load_many(
            files,
            max_file_bytes=cfg.max_file_bytes,
            workers=workers,
            timeout_s=cfg.parse_timeout_s,
            max_memory_mb=cfg.max_worker_memory_mb,
        )

        def load_all() -> Iterator[Document | IngestFailure]:
            for err in errors:
                yield IngestFailure(err.path, err.code, err.reason)
            done = 0
            for item, size in zip(loaded, sizes, strict=True):
                done += size
                if progress:
                    progress("bytes", done, total_bytes)
                yield item

        roots = [p.resolve() for p in paths]

        def gone(source: str) -> bool:
            path = Path(source)
            under = any(path == r or path.is_relative_to(r) for r in roots)
            return under and source not in present and not path.exists()

        if progress:
            progress("discover", len(files), len(files))
        try:
            report = self.add_documents(
                load_all(),
                total=len(files) + len(errors),
                progress=progress,
                prune=gone if prune else None,
                dry_run=dry_run,
                lock_wait_s=lock_wait_s,
            )
        finally:
            loaded.close()  # stops the parser processes, also when add_documents failed
        report.bytes_read = total_bytes
        report.unchanged += skipped
        return report

    def _skip_unchanged_files(self, files: list[Path]) -> tuple[list[Path], int]:
        """Drop files whose bytes and index signature match the manifest (no parse needed)."""
        from ragstrata.ingest.loader import doc_id_for

        try:
            manifest = catalog.read_manifest(self.index_dir)
        except StoreError:
            return files, 0
        journal = catalog.read_journal(self.index_dir)
        if journal == []:  # a journal that cannot be read: parse everything
            return files, 0
        rolled_back = set(journal or ())  # an interrupted commit: these documents are redone
        signature = self._index_signature()
        keep: list[Path] = []
        for path in files:
            doc_id = doc_id_for(path)
            entry = None if doc_id in rolled_back else manifest.documents.get(doc_id)
            if (
                entry is None
                or entry.signature != signature
                or not entry.file_hash
                or _file_sha256(path) != entry.file_hash
            ):
                keep.append(path)
        return keep, len(files) - len(keep)

    def add_documents(
        self,
        documents: Iterable[Document | IngestFailure],
        *,
        total: int | None = None,
        progress: ProgressCallback | None = None,
        prune: Callable[[str], bool] | None = None,
        dry_run: bool = False,
        lock_wait_s: float = 0.0,
    ) -> IngestReport:
        """Chunk, embed and index already parsed documents (failures are passed through to the
        report). Same commit and skip rules as :meth:`ingest`.

        ``prune(source)`` selects indexed documents to remove (their chunks go in one commit).
        ``dry_run`` counts what would be added, updated and pruned without writing anything.
        ``lock_wait_s``: how long to wait for another process's hold on the index (a search in
        progress) before raising IndexLockedError; 0 fails at once.
        """
        started = time.perf_counter()
        report = IngestReport()
        if dry_run and not (self.index_dir / catalog.MANIFEST).exists():
            # no index yet: everything would be added, and a dry run writes nothing
            for item in documents:
                if isinstance(item, IngestFailure):
                    report.failures.append(item)
                else:
                    report.added += 1
            report.seconds = time.perf_counter() - started
            return report
        self._hold_lock(wait_s=lock_wait_s, purpose="write")
        try:
            manifest = catalog.read_manifest(self.index_dir)
        except StoreError:
            if (self.index_dir / catalog.MANIFEST).exists():
                raise
            manifest = self._new_manifest()
        store = self._open_store(manifest, writing=True)
        if not dry_run and not (self.index_dir / catalog.MANIFEST).exists():
            catalog.write_manifest(self.index_dir, manifest)
        self._recover(store, manifest)
        if not dry_run:
            self._adopt_configuration(manifest)
        signature = self._index_signature()
        pending: list[tuple[Document, list[Chunk]]] = []
        pending_chunks = 0
        for done, item in enumerate(documents, start=1):
            if isinstance(item, IngestFailure):
                report.failures.append(item)
            else:
                entry = manifest.documents.get(item.doc_id)
                same_text = entry is not None and entry.content_hash == item.content_hash
                if same_text and entry is not None and entry.signature == signature:
                    report.unchanged += 1
                elif dry_run:
                    report.added += entry is None
                    report.updated += entry is not None and not same_text
                    report.reindexed += same_text
                else:
                    chunks = self._chunk_or_fail(item, report)
                    if chunks:
                        pending.append((item, chunks))
                        pending_chunks += len(chunks)
                        report.added += entry is None
                        report.updated += entry is not None and not same_text
                        report.reindexed += same_text
            if progress:
                progress("parse", done, total or done)
            if pending_chunks >= COMMIT_CHUNKS:
                self._commit(store, manifest, pending, progress, report)
                pending, pending_chunks = [], 0
        if pending:
            self._commit(store, manifest, pending, progress, report)
        if prune is not None:
            stale = [d for d, e in manifest.documents.items() if prune(e.source)]
            report.pruned = len(stale)
            if stale and not dry_run:
                self._delete(store, manifest, stale)
        if not dry_run and (report.chunks or report.updated or report.pruned):
            # Edge has no background optimizer: build HNSW/segment indexes now
            store.optimize()
        store.flush()
        report.seconds = time.perf_counter() - started
        return report

    def _index_signature(self) -> str:
        return catalog.index_signature(
            chunker=self._chunker_signature(),
            analyzer=self.analyzer.signature,
            k1=self.config.bm25.k1,
            b=self.config.bm25.b,
        )

    def _adopt_configuration(self, manifest: Manifest) -> None:
        """Make the configured chunker/analyzer/BM25 parameters the index's own. Documents
        indexed under another configuration keep their old signature and are re-indexed as the
        ingest reaches them (a crash in between leaves each document consistent with its own
        signature; the next run finishes the migration)."""
        chunker = self._chunker_signature()
        analyzer = self.analyzer.signature
        k1, b = self.config.bm25.k1, self.config.bm25.b
        if (manifest.chunker, manifest.analyzer, manifest.k1, manifest.b) != (
            chunker,
            analyzer,
            k1,
            b,
        ):
            manifest.chunker, manifest.analyzer, manifest.k1, manifest.b = (
                chunker,
                analyzer,
                k1,
                b,
            )
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

    def _delete(self, store: StoreBackend, manifest: Manifest, doc_ids: Sequence[str]) -> None:
        """Remove documents in one journaled commit."""
        catalog.write_journal(self.index_dir, doc_ids)
        self._forget(store, manifest, doc_ids)

    def _recover(self, store: StoreBackend, manifest: Manifest) -> None:
        """Roll back an interrupted commit (see :mod:`ragstrata.index.catalog`)."""
        doc_ids = catalog.read_journal(self.index_dir)
        if doc_ids is not None:
            self._forget(store, manifest, doc_ids)

    def _forget(self, store: StoreBackend, manifest: Manifest, doc_ids: Sequence[str]) -> None:
        """Delete the documents' chunks and manifest entries (unknown ids are fine), then
        persist the manifest and close the journal."""
        store.delete_documents(doc_ids)
        store.flush()
        for doc_id in doc_ids:
            entry = manifest.documents.pop(doc_id, None)
            if entry is not None:
                manifest.bm25_docs -= len(entry.chunk_ids)
                manifest.bm25_total_length -= entry.bm25_length
        catalog.write_manifest(self.index_dir, manifest)
        catalog.clear_journal(self.index_dir)

    def _commit(
        self,
        store: StoreBackend,
        manifest: Manifest,
        batch: Sequence[tuple[Document, list[Chunk]]],
        progress: ProgressCallback | None,
        report: IngestReport,
    ) -> None:
        """Write ``batch`` (documents and their new chunks) in one journaled commit.

        A chunk whose embedded text is identical to one of the document's stored chunks (same
        :func:`embed_hash`) reuses that stored vector instead of being embedded again.
        """
        chunker = self.chunker
        analyzer = self.analyzer
        chunks = [c for _, cs in batch for c in cs]
        texts = [chunker.embedding_text(c) for c in chunks]
        hashes = [embed_hash(t) for t in texts]
        tfs = [analyzer.term_frequencies(t) for t in texts]
        lengths = [sum(tf.values()) for tf in tfs]
        # BM25 statistics after this commit (replaced documents leave, new chunks enter)
        docs = manifest.bm25_docs + len(chunks)
        total = manifest.bm25_total_length + sum(lengths)
        stored: dict[str, str] = {}  # embed hash -> chunk id of a stored vector for that text
        for doc, _ in batch:
            old = manifest.documents.get(doc.doc_id)
            if old is not None:
                docs -= len(old.chunk_ids)
                total -= old.bm25_length
                stored.update(zip(old.embed_hashes, old.chunk_ids, strict=False))
        avgdl = total / docs if docs else 1.0
        sparse = [
            bm25_document_weights(tf, doc_len=n, avgdl=avgdl, k1=manifest.k1, b=manifest.b)
            for tf, n in zip(tfs, lengths, strict=True)
        ]
        vectors, embedded = self._vectors(store, texts, hashes, stored)
        if progress:
            progress("embed", len(chunks), len(chunks))
        doc_ids = [doc.doc_id for doc, _ in batch]
        catalog.write_journal(self.index_dir, doc_ids)
        store.delete_documents(doc_ids)
        store.upsert(chunks, vectors, sparse)
        store.flush()
        signature = self._index_signature()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        offset = 0
        for doc, doc_chunks in batch:
            n = len(doc_chunks)
            manifest.documents[doc.doc_id] = DocEntry(
                source=doc.source,
                content_hash=doc.content_hash,
                chunk_ids=tuple(c.chunk_id for c in doc_chunks),
                bm25_length=sum(lengths[offset : offset + n]),
                title=doc.title,
                signature=signature,
                embed_hashes=tuple(hashes[offset : offset + n]),
                file_hash=doc.file_hash,
                indexed_at=now,
            )
            offset += n
        manifest.bm25_docs = docs
        manifest.bm25_total_length = total
        catalog.write_manifest(self.index_dir, manifest)
        catalog.clear_journal(self.index_dir)
        report.chunks += len(chunks)
        report.embedded += embedded

    def _vectors(
        self,
        store: StoreBackend,
        texts: Sequence[str],
        hashes: Sequence[str],
        stored: dict[str, str],
    ) -> tuple[np.ndarray, int]:
        """float32 (n, dim) vectors for ``texts`` (stored ones reused, the rest embedded) and
        the number embedded."""
        found = store.dense_vectors(sorted({stored[h] for h in hashes if h in stored}))
        reuse = {h: found[stored[h]] for h in hashes if h in stored and stored[h] in found}
        missing = [i for i, h in enumerate(hashes) if h not in reuse]
        vectors = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        if missing:
            vectors[missing] = self.embedder.embed_documents([texts[i] for i in missing])
        for i, h in enumerate(hashes):
            if h in reuse:
                vectors[i] = reuse[h]
        return vectors, len(missing)

    # ------------------------------------------------------------------ query
    @property
    def retriever(self) -> HybridRetriever:
        if self._retriever is None:
            manifest = self.manifest()
            store = self._open_store(manifest)  # takes the index lock: no writer is running
            if catalog.read_journal(self.index_dir) is not None:
                self._recover(store, manifest)
            self._retriever = HybridRetriever(
                store, self.embedder, self.analyzer, self.config.retrieval
            )
        return self._retriever

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        filters: Filters | None = None,
        candidates: int | None = None,
        rerank: bool | None = None,
    ) -> SearchResult:
        """Hybrid (or single-retriever) search; see :class:`HybridRetriever`.

        With ``rerank`` (default ``rerank.enabled``) the cross-encoder reorders the first
        ``rerank.candidates`` fused hits (the rest follow in retrieval order) and ``top_k``
        defaults to ``rerank.top_k``; reranked hits carry their cross-encoder score and a
        ``rerank`` explain entry, and ``timings_ms`` gains ``rerank``.
        """
        wanted = self.config.rerank.enabled if rerank is None else rerank
        reranker = self.reranker if wanted else None
        if reranker is None:
            return self.retriever.search(
                query, top_k=top_k, mode=mode, filters=filters, candidates=candidates
            )
        cfg = self.config.rerank
        k = top_k or cfg.top_k
        result = self.retriever.search(
            query, top_k=max(k, cfg.candidates), mode=mode, filters=filters, candidates=candidates
        )
        return rerank_result(
            reranker,
            result,
            top_k=k,
            candidates=cfg.candidates,
            retrieval_weight=cfg.retrieval_weight,
        )

    @property
    def reranker(self) -> Reranker | None:
        """The configured cross-encoder (loaded on first use), or ``None`` when ``rerank.model``
        is unset and no model is shipped (logged once). An explicit ``rerank.model`` that is not
        a usable folder raises ConfigError."""
        if self._reranker is None and not self._reranker_missing:
            cfg = self.config.rerank
            path = cfg.model_path
            if not cfg.model and not path.is_dir():
                logger.warning("no reranker model shipped at %s; reranking is skipped", path)
                self._reranker_missing = True
                return None
            from ragstrata.rerank.cross_encoder import CrossEncoderReranker

            self._reranker = CrossEncoderReranker(
                path,
                batch_size=cfg.batch_size,
                max_length=cfg.max_length,
                threads=cfg.threads,
            )
        return self._reranker

    @property
    def generator(self) -> ChatModel | None:
        """The configured LLM (``llm.provider``), or ``None`` for the extractive answerer.
        Created on first use; the model itself loads on the first generation."""
        if not self._generator_loaded:
            from ragstrata.generate.answer import load_generator

            self._generator = load_generator(self.config.llm)
            self._generator_loaded = True
        return self._generator

    def ask_stream(
        self,
        question: str,
        *,
        filters: Filters | None = None,
        display_source: Callable[[str], str] = display_path,
    ) -> Iterator[AskEvent]:
        """:meth:`ask` as events: :class:`~ragstrata.generate.answerer.TokenEvent` pieces of
        the answer as the LLM writes them, then one final
        :class:`~ragstrata.generate.answerer.AnswerEvent` (see docs/generation.md). Without an
        LLM the extractive answer is split into word tokens after it is complete.
        ``display_source`` names the documents in the LLM's prompt and legend (the service
        passes the file name inside the tenant's collection, never a server path).

        The steps: :meth:`search`, then (with an LLM and ``llm.hyde``) HyDE
        (:func:`~ragstrata.retrieve.hyde.hyde_hits`), then the answerer's
        :meth:`~ragstrata.generate.answerer.Answerer.stream`.
        """
        from ragstrata.generate.answerer import AnswerEvent, word_tokens

        t0 = time.perf_counter()
        result = self.search(question, filters=filters)
        timings = dict(result.timings_ms)
        hits = result.hits
        generator = self.generator
        if generator is None:  # the extractive answer: no manifest read on the way
            if not hits and not self.manifest().documents:
                answer = self._empty_index_answer(question, timings, t0, "extractive")
                yield from word_tokens(answer.text)
                yield AnswerEvent(answer)
                return
            yield from self._answerer(display_source).stream(
                question, hits, timings=timings, started=t0
            )
            return
        manifest = self.manifest()
        if not hits and not manifest.documents:
            yield AnswerEvent(self._empty_index_answer(question, timings, t0, generator.name))
            return
        store = self._open_store(manifest)
        hyde_passage: str | None = None
        if self.config.llm.hyde:
            from ragstrata.retrieve.hyde import hyde_hits

            retrieval = self.config.retrieval
            hyde = hyde_hits(
                generator,
                self.embedder,
                store,
                question,
                hits,
                candidates=retrieval.candidates,
                top_k=retrieval.top_k,
                rrf_k=retrieval.rrf_k,
                filters=filters,
            )
            hits, hyde_passage = hyde.hits, hyde.passage
            timings["hyde"] = hyde.ms

        def parents(chunk: Chunk) -> list[Chunk]:
            entry = manifest.documents.get(chunk.doc_id)
            return store.get(list(entry.chunk_ids)) if entry is not None else [chunk]

        answerer = self._answerer(display_source, generator=generator, parents=parents)
        for event in answerer.stream(question, hits, timings=timings, started=t0):
            if isinstance(event, AnswerEvent) and hyde_passage is not None:
                event = AnswerEvent(replace(event.answer, hyde_passage=hyde_passage))
            yield event

    def _answerer(
        self,
        display_source: Callable[[str], str],
        *,
        generator: ChatModel | None = None,
        parents: ParentLookup | None = None,
    ) -> Answerer:
        """The extractive answerer, or with ``generator`` the LLM answerer over it."""
        if generator is None:
            return ExtractiveAnswerer(
                self.embedder,
                self.analyzer,
                max_sentences=self.config.answer.max_sentences,
                context_tokens=self.config.answer.context_tokens,
                min_evidence=self._min_evidence(),
                min_rerank=self.config.rerank.min_score,
                display_source=display_source,
            )
        from ragstrata.generate.answer import LLMAnswerer
        from ragstrata.generate.citations import CitationChecker

        return LLMAnswerer(
            generator,
            self.analyzer,
            self.config.llm,
            min_evidence=self._min_evidence(),
            checker=CitationChecker(self.embedder, self.analyzer),
            display_source=display_source,
            parents=parents,
        )

    def ask(self, question: str, *, filters: Filters | None = None) -> Answer:
        """Answer ``question`` from the index with numbered citations, or refuse: the final
        answer of :meth:`ask_stream`.

        With an LLM configured (``llm.provider``) the answer is generated from the assembled
        context and its citations are verified (see :meth:`ask_stream`). Otherwise the
        extractive answerer quotes sentences. Both refuse (``refusal=True``, no citations, the
        message in the question's language) on the same decision,
        :func:`~ragstrata.generate.evidence.check_evidence`: nothing was retrieved, or the
        evidence score is under ``llm.min_evidence`` (unset: calibrated for the index's
        embedder), or (extractive) the best cross-encoder logit is under ``rerank.min_score``.
        The extractive answer also refuses when no retrieved sentence can be quoted. On an
        index that holds no document both refuse with ``refused_by="empty_index"``.
        ``refused_by`` says why a refusal refused (:data:`~ragstrata.types.RefusalReason`);
        ``evidence`` holds what the evidence check measured and its threshold.
        """
        from ragstrata.generate.answerer import answer_from_events

        return answer_from_events(self.ask_stream(question, filters=filters))

    def _empty_index_answer(
        self, question: str, timings: dict[str, float], started: float, generator: str
    ) -> Answer:
        """The refusal of a question asked of an index that holds no document
        (``refused_by="empty_index"``); nothing is generated."""
        from ragstrata.generate.answerer import refusal

        logger.info("the index at %s holds no document; ingest some first", self.index_dir)
        return refusal(
            question, "empty_index", timings=timings, started=started, generator=generator
        )

    def _min_evidence(self) -> float:
        """The refusal threshold: ``llm.min_evidence``, else the one calibrated for the index's
        embedder (see :func:`~ragstrata.generate.evidence.min_evidence_for`). The engine's
        embedder name is the manifest's (the store refuses to open otherwise), so no manifest
        is read: on a 90k-chunk index that read cost about 190 ms per question."""
        return min_evidence_for(self.embedder.name, self.config.llm.min_evidence)

    # ------------------------------------------------------------------ admin
    def stats(self) -> dict[str, Any]:
        """Documents, chunks, embedder, analyzer and on-disk size of the index."""
        manifest = self.manifest()
        size = sum(
            p.stat().st_blocks * 512 for p in _walk_files(self.index_dir)
        )  # allocated, not sparse
        return {
            "index": path_text(self.index_dir),
            "documents": len(manifest.documents),
            "chunks": manifest.n_chunks,
            "embedder": manifest.embedder,
            "dim": manifest.dim,
            "analyzer": manifest.analyzer,
            "chunker": manifest.chunker,
            "bm25": {"k1": manifest.k1, "b": manifest.b, "avgdl": round(manifest.avgdl, 2)},
            "size_bytes": size,
        }

    def __enter__(self) -> Ragstrata:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store, the index lock and worker threads (idempotent)."""
        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def embed_hash(text: str) -> str:
    """Identity of an embedded text: the first 16 hex digits of its UTF-8 SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _file_sha256(path: Path) -> str:
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name
