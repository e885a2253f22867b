"""The end-to-end pipeline: ingest → chunk → embed/index → hybrid search → cited answer.

:class:`Ragstrata` wires the stages from one :class:`~ragstrata.config.RagConfig`; the CLI (and
later the service) is a thin layer over it.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragstrata.assemble.context import assemble
from ragstrata.chunking.splitter import StructureChunker
from ragstrata.config import RagConfig
from ragstrata.embed.base import Embedder
from ragstrata.errors import (
    ChunkingError,
    IngestError,
    MissingDependencyError,
    StoreError,
)
from ragstrata.generate.extractive import ExtractiveAnswerer
from ragstrata.index import catalog
from ragstrata.index.analyzer import Analyzer, bm25_document_weights
from ragstrata.index.base import Filters
from ragstrata.index.catalog import DocEntry, Manifest
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.hybrid import HybridRetriever, Mode, SearchResult
from ragstrata.types import Answer, Chunk, Citation, Document

READ_WAIT_S = 30.0
"""How long search/ask wait for an ingest holding the index before failing with RS503."""

COMMIT_CHUNKS = 256
"""Chunks embedded and committed together (one journal/flush/manifest cycle)."""


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """A file that was not ingested: its path, the error code and the reason."""

    path: str
    code: str
    reason: str


@dataclass(slots=True)
class IngestReport:
    """Outcome of one ``ingest`` run; ``status`` is ``ok``, ``partial`` or ``failed``."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    pruned: int = 0
    chunks: int = 0
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
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "chunks_per_second": round(self.chunks / self.seconds, 2) if self.seconds else None,
            "failures": [_failure_json(f) for f in self.failures],
        }


def _failure_json(failure: IngestFailure) -> dict[str, str]:
    return {"path": failure.path, "code": failure.code, "reason": failure.reason}


ProgressCallback = Callable[[str, int, int], None]
"""``(event, done, total)`` with event ``discover``, ``parse`` or ``embed``."""


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
        self, config: RagConfig | None = None, *, embedder: Embedder | None = None
    ) -> None:
        self.config = config or RagConfig.load()
        self.index_dir = self.config.index_path
        self._embedder: Embedder | None = embedder
        self._analyzer: Analyzer | None = None
        self._store: EdgeStore | None = None
        self._retriever: HybridRetriever | None = None
        self._chunker: StructureChunker | None = None
        self._lock: catalog.IndexLock | None = None

    # ------------------------------------------------------------------ stages
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from ragstrata.embed.local import load_embedder

            cfg = self.config.embedder
            self._embedder = load_embedder(cfg.name, batch_size=cfg.batch_size, threads=cfg.threads)
        return self._embedder

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
        c = self.chunker
        return (
            f"structure-v1:max={c.max_tokens}:overlap={c.overlap_ratio}"
            f":prefix={c.max_prefix_tokens}"
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

    def _open_store(self, manifest: Manifest) -> EdgeStore:
        if self._store is None:
            catalog.check_compatible(
                manifest,
                embedder=self.embedder.name,
                dim=self.embedder.dim,
                analyzer=self.analyzer.signature,
                index_dir=self.index_dir,
            )
            self._hold_lock(wait_s=READ_WAIT_S, purpose="open")
            self._store = EdgeStore(self.index_dir / "shard", dim=manifest.dim)
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
    ) -> IngestReport:
        """Parse, chunk, embed and index ``paths`` (files or folders, recursively).

        Unchanged documents (same source, same content hash) are skipped; changed ones are
        replaced in the same commit that adds their new chunks. Bad files are reported in
        ``IngestReport.failures`` and never stop the batch. ``prune`` removes indexed documents
        whose file under ``paths`` no longer exists; ``dry_run`` only reports what would change.
        Raises IndexLockedError when another process is writing the index,
        EmbedderMismatchError for an index built otherwise.
        """
        from ragstrata.ingest.loader import discover, load_document

        for module, package in (("markdown_it", "markdown-it-py"), ("selectolax", "selectolax")):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependencyError(package, "ingest") from exc
        files, errors = discover(list(paths))
        max_bytes = self.config.ingest.max_file_bytes

        def load_all() -> Iterator[Document | IngestFailure]:
            for err in errors:
                yield IngestFailure(err.path, err.code, err.reason)
            for path in files:
                try:
                    yield load_document(path, max_file_bytes=max_bytes)
                except IngestError as err:
                    yield IngestFailure(err.path, err.code, err.reason)
                except (OSError, ValueError, UnicodeError) as err:  # unexpected parser failure
                    yield IngestFailure(str(path), "RS200", f"{type(err).__name__}: {err}")

        roots = [p.resolve() for p in paths]

        def gone(source: str) -> bool:
            path = Path(source)
            return any(path == r or path.is_relative_to(r) for r in roots) and not path.exists()

        if progress:
            progress("discover", len(files), len(files))
        return self.add_documents(
            load_all(),
            total=len(files) + len(errors),
            progress=progress,
            prune=gone if prune else None,
            dry_run=dry_run,
        )

    def add_documents(
        self,
        documents: Iterable[Document | IngestFailure],
        *,
        total: int | None = None,
        progress: ProgressCallback | None = None,
        prune: Callable[[str], bool] | None = None,
        dry_run: bool = False,
    ) -> IngestReport:
        """Chunk, embed and index already parsed documents (failures are passed through to the
        report). Same commit and skip rules as :meth:`ingest`.

        ``prune(source)`` selects indexed documents to remove (their chunks go in one commit).
        ``dry_run`` counts what would be added, updated and pruned without writing anything.
        """
        started = time.perf_counter()
        report = IngestReport()
        self._hold_lock(wait_s=0.0, purpose="write")
        try:
            manifest = catalog.read_manifest(self.index_dir)
        except StoreError:
            if (self.index_dir / catalog.MANIFEST).exists():
                raise
            manifest = self._new_manifest()
        store = self._open_store(manifest)
        if not dry_run and not (self.index_dir / catalog.MANIFEST).exists():
            catalog.write_manifest(self.index_dir, manifest)
        self._recover(store, manifest)
        pending: list[tuple[Document, list[Chunk]]] = []
        pending_chunks = 0
        for done, item in enumerate(documents, start=1):
            if isinstance(item, IngestFailure):
                report.failures.append(item)
            else:
                entry = manifest.documents.get(item.doc_id)
                if entry is not None and entry.content_hash == item.content_hash:
                    report.unchanged += 1
                elif dry_run:
                    report.added += entry is None
                    report.updated += entry is not None
                else:
                    chunks = self._chunk_or_fail(item, report)
                    if chunks:
                        pending.append((item, chunks))
                        pending_chunks += len(chunks)
                        report.added += entry is None
                        report.updated += entry is not None
            if progress:
                progress("parse", done, total or done)
            if pending_chunks >= COMMIT_CHUNKS:
                report.chunks += self._commit(store, manifest, pending, progress)
                pending, pending_chunks = [], 0
        if pending:
            report.chunks += self._commit(store, manifest, pending, progress)
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

    def _chunk_or_fail(self, document: Document, report: IngestReport) -> list[Chunk]:
        try:
            chunks = self.chunker.chunk(document)
        except ChunkingError as exc:
            report.failures.append(IngestFailure(document.source, exc.code, str(exc)))
            return []
        if not chunks:
            report.failures.append(IngestFailure(document.source, "RS203", "no text to index"))
        return chunks

    def _delete(self, store: EdgeStore, manifest: Manifest, doc_ids: Sequence[str]) -> None:
        """Remove documents in one journaled commit."""
        catalog.write_journal(self.index_dir, doc_ids)
        self._forget(store, manifest, doc_ids)

    def _recover(self, store: EdgeStore, manifest: Manifest) -> None:
        """Roll back an interrupted commit (see :mod:`ragstrata.index.catalog`)."""
        doc_ids = catalog.read_journal(self.index_dir)
        if doc_ids is not None:
            self._forget(store, manifest, doc_ids)

    def _forget(self, store: EdgeStore, manifest: Manifest, doc_ids: Sequence[str]) -> None:
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
        store: EdgeStore,
        manifest: Manifest,
        batch: Sequence[tuple[Document, list[Chunk]]],
        progress: ProgressCallback | None,
    ) -> int:
        chunker = self.chunker
        analyzer = self.analyzer
        chunks = [c for _, cs in batch for c in cs]
        texts = [chunker.embedding_text(c) for c in chunks]
        tfs = [analyzer.term_frequencies(t) for t in texts]
        lengths = [sum(tf.values()) for tf in tfs]
        # BM25 statistics after this commit (replaced documents leave, new chunks enter)
        docs = manifest.bm25_docs + len(chunks)
        total = manifest.bm25_total_length + sum(lengths)
        for doc, _ in batch:
            old = manifest.documents.get(doc.doc_id)
            if old is not None:
                docs -= len(old.chunk_ids)
                total -= old.bm25_length
        avgdl = total / docs if docs else 1.0
        sparse = [
            bm25_document_weights(tf, doc_len=n, avgdl=avgdl, k1=manifest.k1, b=manifest.b)
            for tf, n in zip(tfs, lengths, strict=True)
        ]
        vectors = self.embedder.embed_documents(texts)
        if progress:
            progress("embed", len(chunks), len(chunks))
        doc_ids = [doc.doc_id for doc, _ in batch]
        catalog.write_journal(self.index_dir, doc_ids)
        store.delete_documents(doc_ids)
        store.upsert(chunks, vectors, sparse)
        store.flush()
        offset = 0
        for doc, doc_chunks in batch:
            n = len(doc_chunks)
            manifest.documents[doc.doc_id] = DocEntry(
                source=doc.source,
                content_hash=doc.content_hash,
                chunk_ids=tuple(c.chunk_id for c in doc_chunks),
                bm25_length=sum(lengths[offset : offset + n]),
                title=doc.title,
            )
            offset += n
        manifest.bm25_docs = docs
        manifest.bm25_total_length = total
        catalog.write_manifest(self.index_dir, manifest)
        catalog.clear_journal(self.index_dir)
        return len(chunks)

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
    ) -> SearchResult:
        """Hybrid (or single-retriever) search; see :class:`HybridRetriever`."""
        return self.retriever.search(
            query, top_k=top_k, mode=mode, filters=filters, candidates=candidates
        )

    def ask(self, question: str, *, filters: Filters | None = None) -> Answer:
        """Answer ``question`` from the index with numbered citations, or refuse.

        Refuses (``refusal=True``, no citations) when nothing was retrieved, or when the best
        dense score is under ``answer.min_dense_score`` and no retrieved chunk contains at least
        half of the question's BM25 terms.
        """
        t0 = time.perf_counter()
        result = self.search(question, filters=filters)
        timings = dict(result.timings_ms)
        t = time.perf_counter()
        context = assemble(
            result.hits,
            counter=self.embedder.counter,
            budget_tokens=self.config.answer.context_tokens,
            display_source=display_path,
        )
        timings["assemble"] = (time.perf_counter() - t) * 1000
        refusal_text = _refusal(question)
        if not context.sources or not self._has_evidence(question, result):
            timings["total"] = (time.perf_counter() - t0) * 1000
            return Answer(question, refusal_text, True, (), (), timings)
        t = time.perf_counter()
        generated = ExtractiveAnswerer(
            self.embedder, self.analyzer, max_sentences=self.config.answer.max_sentences
        ).generate(question, context)
        timings["generate"] = (time.perf_counter() - t) * 1000
        if not generated.quotes:
            timings["total"] = (time.perf_counter() - t0) * 1000
            return Answer(question, refusal_text, True, (), (), timings)
        by_label = {s.label: s for s in context.sources}
        # cited sources are renumbered 1..n in order of first citation; the legend lists them
        renumber = {
            old: new for new, old in enumerate(dict.fromkeys(q.label for q in generated.quotes), 1)
        }
        text = re.sub(
            r"\[(\d+)\]",
            lambda m: f"[{renumber.get(int(m.group(1)), int(m.group(1)))}]",
            generated.text,
        )
        legend_by_label = {
            s.label: line for s, line in zip(context.sources, context.legend, strict=True)
        }
        legend = tuple(
            re.sub(r"^\[\d+\]", f"[{new}]", legend_by_label[old]) for old, new in renumber.items()
        )
        citations: list[Citation] = []
        for label in renumber:
            source = by_label[label]
            chunk = source.hit.chunk
            quote = next(q for q in generated.quotes if q.label == label)
            citations.append(
                Citation(
                    label=renumber[label],
                    chunk_id=chunk.chunk_id,
                    doc_id=chunk.doc_id,
                    source=chunk.source,
                    heading_path=chunk.section_path,
                    start=chunk.start,
                    end=chunk.end,
                    score=source.hit.score,
                    quote=chunk.text[quote.start : quote.end],
                )
            )
        timings["total"] = (time.perf_counter() - t0) * 1000
        return Answer(question, text, False, tuple(citations), legend, timings)

    def _has_evidence(self, question: str, result: SearchResult) -> bool:
        best_dense = max(
            (s for h in result.hits if (s := h.retriever_score("dense")) is not None), default=-1.0
        )
        if best_dense >= self.config.answer.min_dense_score:
            return True
        terms = set(self.analyzer.terms(question))
        if not terms:
            return False
        return any(
            len(terms & set(self.analyzer.terms(h.chunk.rendered))) / len(terms) >= 0.5
            for h in result.hits
        )

    # ------------------------------------------------------------------ admin
    def stats(self) -> dict[str, Any]:
        """Documents, chunks, embedder, analyzer and on-disk size of the index."""
        manifest = self.manifest()
        size = sum(
            p.stat().st_blocks * 512 for p in _walk_files(self.index_dir)
        )  # allocated, not sparse
        return {
            "index": str(self.index_dir),
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


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name


_SPANISH_HINTS = frozenset(
    [
        "qué",
        "cómo",
        "cuál",
        "cuáles",
        "dónde",
        "cuándo",
        "por",
        "para",
        "el",
        "la",
        "los",
        "las",
        "es",
        "un",
        "una",
        "del",
    ]
)


def _refusal(question: str) -> str:
    words = set(question.lower().replace("¿", " ").replace("?", " ").split())
    if "¿" in question or len(words & _SPANISH_HINTS) >= 2:
        return (
            "No encontré información suficiente en los documentos para responder a esta pregunta."
        )
    return "I could not find enough information in the documents to answer this question."
