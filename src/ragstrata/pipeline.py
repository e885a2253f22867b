"""The end-to-end pipeline: ingest → chunk → embed/index → hybrid search → cited answer.

:class:`Ragstrata` wires the stages from one :class:`~ragstrata.config.RagConfig`; the CLI (and
later the service) is a thin layer over it.
"""

from __future__ import annotations

import contextlib
import logging
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstrata import stages
from ragstrata.assemble.context import ParentLookup
from ragstrata.chunking.splitter import Chunker
from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.embed.base import Embedder
from ragstrata.embed.cache import CachedEmbedder
from ragstrata.errors import IndexNotFoundError, StoreError
from ragstrata.generate.evidence import (
    EvidenceRule,
    LearnedRule,
    evidence_rule_for,
    under_min_rerank,
)
from ragstrata.generate.extractive import ExtractiveAnswerer
from ragstrata.index import catalog, snapshots
from ragstrata.index.base import Filters, VectorStore
from ragstrata.index.catalog import Manifest
from ragstrata.index.edge import EdgeStore
from ragstrata.index.reader import IndexReader
from ragstrata.index.report import IngestReport, ProgressCallback, count_changes
from ragstrata.index.writer import IndexWriter, index_signature, new_manifest
from ragstrata.indexing import parse_paths
from ragstrata.paths import display_path
from ragstrata.rerank.base import Reranker, rerank_result
from ragstrata.retrieve.hybrid import (
    HybridRetriever,
    Mode,
    Retriever,
    SearchResult,
    check_count,
)
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Answer, Chunk, Document, IngestFailure

if TYPE_CHECKING:
    from ragstrata.generate.answerer import Answerer, AskEvent
    from ragstrata.generate.base import ChatModel
    from ragstrata.generate.reader import Reader

logger = logging.getLogger(__name__)

WRITE_WAIT_S = 30.0
"""How long ``ragstrata ingest`` waits for a search or ask that holds the idle index (each
holds it for about the second it runs) before failing with RS503; another ingest holding it
that long is reported as RS503 too."""

READ_WAIT_S = 30.0
"""How long search/ask wait for the index before failing with RS503: for an ingest holding it
to publish its first read snapshot (embedded shard) or to finish (Qdrant server), or for
another reader of the same snapshot."""


class Ragstrata:
    """The engine over one index directory. Cheap to construct; models load on first use.

    ``embedder`` overrides ``config.embedder`` (share one loaded model between engines).
    ``read_wait_s``: how long a search waits for the index (default :data:`READ_WAIT_S`). The
    index is held through one :class:`~ragstrata.index.reader.IndexReader` (lock and store, or
    a writer's read snapshot), shared by searches and writes until :meth:`close`.

    Raises :class:`~ragstrata.errors.EmbedderMismatchError` when the index was built with another
    embedder, :class:`~ragstrata.errors.IndexNotFoundError` when searching a missing index.
    """

    def __init__(
        self,
        config: RagConfig | None = None,
        *,
        embedder: Embedder | None = None,
        generator: ChatModel | None = None,
        read_wait_s: float | None = None,
    ) -> None:
        self.config = config or RagConfig.load()
        self.index_dir = self.config.index_path
        self._index = IndexReader(
            self.index_dir,
            self.config.store,
            fits=self._check_fits,
            wait_s=READ_WAIT_S if read_wait_s is None else read_wait_s,
        )
        self._embedder: Embedder | None = embedder
        self._read_embedder: Embedder | None = None
        self._analyzer: Analyzer | None = None
        self._retriever: Retriever | None = None
        self._reader_stage: Reader | None = None
        self._chunker: Chunker | None = None
        self._reranker: Reranker | None = None
        self._reranker_missing = False
        self._generator: ChatModel | None = generator
        self._generator_loaded = generator is not None

    @property
    def read_wait_s(self) -> float:
        """Seconds a search waits for the index before IndexLockedError."""
        return self._index.wait_s

    # ------------------------------------------------------------------ stages
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            cfg = self.config.embedder
            self._embedder = stages.load_embedder(
                self.embedder_name, batch_size=cfg.batch_size, threads=cfg.threads, config=cfg
            )
        return self._embedder

    @property
    def read_embedder(self) -> Embedder:
        """:attr:`embedder` with its recent query and passage vectors kept
        (:class:`~ragstrata.embed.cache.CachedEmbedder`): what search and ``ask`` embed with,
        so one question's text and its hits' sentences are embedded once per ``ask``."""
        if self._read_embedder is None:
            self._read_embedder = CachedEmbedder(self.embedder)
        return self._read_embedder

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
    def chunker(self) -> Chunker:
        if self._chunker is None:
            self._chunker = stages.load_chunker(self.config.chunking, self.embedder)
        return self._chunker

    def _check_fits(self, manifest: Manifest, *, writing: bool = False) -> None:
        """:func:`~ragstrata.index.catalog.check_compatible` of ``manifest`` with this engine's
        embedder and analyzer (EmbedderMismatchError and kin when it does not fit)."""
        catalog.check_compatible(
            manifest,
            embedder=self.embedder.name,
            dim=self.embedder.dim,
            analyzer=self.analyzer.signature,
            index_dir=self.index_dir,
            writing=writing,
        )

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
        retry_failed: bool = False,
    ) -> IngestReport:
        """Parse, chunk, embed and index ``paths`` (files or folders, recursively).

        Unchanged documents (same source, same content hash) are skipped; changed ones are
        replaced in the same commit that adds their new chunks. Bad files are reported in
        ``IngestReport.failures`` and never stop the batch. ``prune`` removes indexed documents
        whose file under ``paths`` no longer exists; ``dry_run`` only reports what would change.
        A file that failed before and did not change is reported as failed again without being
        parsed (``unchanged``), unless ``retry_failed`` (see :mod:`ragstrata.indexing`).
        Only regular files under ``paths`` are read; symbolic links follow
        ``ingest.follow_symlinks`` (see :func:`~ragstrata.ingest.loader.discover`). Raises
        SourceNotFoundError, before the index is opened or created, when none of ``paths``
        exists (a missing path among existing ones is reported as a failure), IndexLockedError
        when another process is writing the index (or, after ``lock_wait_s`` seconds, still has
        it open), EmbedderMismatchError for an index built otherwise.
        """
        with parse_paths(
            paths,
            config=self.config.ingest,
            index_dir=self.index_dir,
            signature=self._index_signature,
            progress=progress,
            retry_failed=retry_failed,
        ) as parsed:
            report = self.add_documents(
                parsed.documents,
                total=parsed.total,
                progress=progress,
                prune=parsed.gone if prune else None,
                count_gone=None if prune else parsed.gone,  # the command line says so
                dry_run=dry_run,
                lock_wait_s=lock_wait_s,
            )
        report.bytes_read = parsed.bytes_read
        report.unchanged += parsed.skipped
        return report

    def add_documents(
        self,
        documents: Iterable[Document | IngestFailure],
        *,
        total: int | None = None,
        progress: ProgressCallback | None = None,
        prune: Callable[[str], bool] | None = None,
        count_gone: Callable[[str], bool] | None = None,
        dry_run: bool = False,
        lock_wait_s: float = 0.0,
    ) -> IngestReport:
        """Chunk, embed and index already parsed documents (failures are passed through to the
        report). Same commit and skip rules as :meth:`ingest`.

        ``prune(source)`` selects indexed documents to remove (their chunks go in one commit);
        ``count_gone(source)`` only counts them (``IngestReport.stale``).
        ``dry_run`` counts what would be added, updated and pruned from the manifest alone
        (:func:`~ragstrata.index.report.count_changes`): it writes nothing, takes no lock and
        so never waits for another ingest. ``lock_wait_s``: how long to wait for another
        process's hold on the index (a search in progress) before raising IndexLockedError; 0
        fails at once.
        """
        started = time.perf_counter()
        if dry_run:  # the manifest alone (written atomically): no lock, nothing written
            manifest = None
            if (self.index_dir / catalog.MANIFEST).exists():
                manifest = self.manifest()
                self._check_fits(manifest, writing=True)
            report = count_changes(
                documents,
                manifest,
                self._index_signature(),
                total=total,
                progress=progress,
                prune=prune,
                count_gone=count_gone,
            )
        else:
            writer = self._writer(lock_wait_s=lock_wait_s, create=True)
            try:
                report = writer.add(
                    documents, total=total, progress=progress, prune=prune, count_gone=count_gone
                )
            finally:
                _retire(writer)
        report.seconds = time.perf_counter() - started
        return report

    def delete(self, doc_ids: Sequence[str], *, lock_wait_s: float = 0.0) -> int:
        """Remove the documents ``doc_ids`` (ids as in the manifest and on every
        :class:`~ragstrata.types.Chunk`) from the index in one journaled commit; returns how
        many of them the index held (unknown ids are skipped, not an error).

        The files they came from are not touched: a later :meth:`ingest` of those files adds
        them again. The remaining documents' BM25 weights follow the new average chunk length
        (:meth:`~ragstrata.index.writer.IndexWriter.reweight`). Raises IndexNotFoundError when
        there is no index, IndexLockedError when another process holds it (after
        ``lock_wait_s`` seconds).
        """
        writer = self._writer(lock_wait_s=lock_wait_s, create=False)
        try:
            writer.recover()
            removed = writer.delete(doc_ids)
            if removed:
                writer.reweight()
                writer.optimize()
            writer.store.flush()
        finally:
            _retire(writer)  # review 36: the reweight's snapshot, a whole shard copy, stayed
        return removed

    def _writer(self, *, lock_wait_s: float, create: bool) -> IndexWriter:
        """A writer over the index, taking the index lock (IndexLockedError after
        ``lock_wait_s`` seconds); ``create``: a new index's manifest when there is none,
        else IndexNotFoundError before any lock file is created."""
        if not create:
            self.manifest()
        else:
            from ragstrata.ingest.loader import FORMATS

            catalog.check_new_index_dir(self.index_dir, FORMATS.keys())
        if self._index.snapshot is not None:  # close a read snapshot before opening the index
            self.close()
        self._index.hold_lock(wait_s=lock_wait_s, purpose="write")
        try:
            manifest = catalog.read_manifest(self.index_dir)
        except StoreError:
            if not create or (self.index_dir / catalog.MANIFEST).exists():
                raise
            manifest = new_manifest(self.embedder, self.analyzer, self.chunker, self.config.bm25)
        store = self._index.open_store(manifest, writing=True)
        publisher = None
        if isinstance(store, EdgeStore):  # readers cannot open the shard while it is written
            publisher = snapshots.SnapshotPublisher(self.index_dir, store.path)
            publisher.retire()  # a killed writer's generations: older than the index now
        return IndexWriter(
            self.index_dir,
            store,
            manifest,
            embedder=self.embedder,
            analyzer=self.analyzer,
            chunker=self.chunker,
            bm25=self.config.bm25,
            publisher=publisher,
        )

    def _index_signature(self) -> str:
        return index_signature(self.chunker, self.analyzer, self.config.bm25)

    # ------------------------------------------------------------------ query
    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = HybridRetriever(
                self._read_store(), self.read_embedder, self.analyzer, self.config.retrieval
            )
        return self._retriever

    def _read_store(self) -> VectorStore:
        """The store searches read (see :meth:`IndexReader.read_store`): the index itself, or
        while another process writes an embedded index, the snapshot it published."""
        return self._index.read_store()

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
        k = cfg.top_k if top_k is None else top_k
        check_count("top_k", k)
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

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Stored chunks by id, in the order given; unknown ids are skipped. Raises
        IndexNotFoundError when there is no index."""
        return self._read_store().get(list(chunk_ids))

    @property
    def reranker(self) -> Reranker | None:
        """The configured cross-encoder (loaded on first use), or ``None`` when ``rerank.model``
        is unset and no model is shipped (logged once). An explicit ``rerank.model`` that is not
        a usable folder raises ConfigError."""
        if self._reranker is None and not self._reranker_missing:
            self._reranker = stages.configured_reranker(self.config.rerank)
            self._reranker_missing = self._reranker is None
        return self._reranker

    @property
    def generator(self) -> ChatModel | None:
        """The configured LLM (``llm.provider``), or ``None`` for the extractive answerer.
        Created on first use; the model itself loads on the first generation."""
        if not self._generator_loaded:
            self._generator = stages.load_generator(self.config.llm)
            self._generator_loaded = True
        return self._generator

    def ask_stream(
        self,
        question: str,
        *,
        filters: Filters | None = None,
        display_source: Callable[[str], str] = display_path,
        release_index: bool = False,
    ) -> Iterator[AskEvent]:
        """:meth:`ask` as events: :class:`~ragstrata.generate.answerer.TokenEvent` pieces of
        the answer as the LLM writes them, then one final
        :class:`~ragstrata.generate.answerer.AnswerEvent` (see docs/generation.md). Without an
        LLM the extractive answer is split into word tokens after it is complete.
        ``display_source`` names the documents in the LLM's prompt and legend (the service
        passes the file name inside the tenant's collection, never a server path).
        ``release_index`` (a command-line ``ask``): with an LLM, the index is released (lock,
        store) once the sources are read (after HyDE's passage when ``llm.hyde``, which needs
        the index), before the model writes the answer, so that other searches
        need not wait out the generation (a local model takes a minute on 2 cores; trial 25:
        an ``eval-answers`` beside it failed with RS503); the next search opens it again.

        The steps: :meth:`search`, then (with an LLM and ``llm.hyde``) HyDE
        (:func:`~ragstrata.retrieve.hyde.hyde_hits`), then the answerer's
        :meth:`~ragstrata.generate.answerer.Answerer.stream`.
        """
        from ragstrata.generate.answerer import AnswerEvent, word_tokens

        # decomposed accents (macOS input, text copied from some PDFs): the search normalized
        # the question, the refusal check and the quote choice did not, and "¿Qué es una
        # función de ruta?" was refused in NFD, answered in NFC (review 39)
        question = unicodedata.normalize("NFC", question)
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
        store = self._read_store()  # the one the search read
        hyde_passage: str | None = None
        # reranked hits under rerank.min_score: the answer refuses (``rerank``), so HyDE need not
        # call the model first, and its fused hits, which carry no cross-encoder score, must not
        # slip past the gate (review 41)
        if self.config.llm.hyde and not under_min_rerank(hits, self.config.rerank.min_score):
            from ragstrata.retrieve.hyde import hyde_hits

            retrieval = self.config.retrieval
            hyde = hyde_hits(
                generator,
                self.read_embedder,
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

        lookup: ParentLookup = parents
        if release_index:
            read: dict[str, list[Chunk]] = {}
            for h in hits if self._expands() else ():
                if h.chunk.doc_id not in read:  # one read per document
                    read[h.chunk.doc_id] = parents(h.chunk)

            def lookup(chunk: Chunk) -> list[Chunk]:
                return read.get(chunk.doc_id, [chunk])  # read before the release

            self.close()

        answerer = self._answerer(display_source, generator=generator, parents=lookup)
        for event in answerer.stream(question, hits, timings=timings, started=t0):
            if isinstance(event, AnswerEvent) and hyde_passage is not None:
                event = AnswerEvent(replace(event.answer, hyde_passage=hyde_passage))
            yield event

    def _expands(self) -> bool:
        """Whether the LLM answer replaces hits by their parent section (``llm.parent_tokens``)."""
        return self.config.llm.parent_tokens > 0

    def _answerer(
        self,
        display_source: Callable[[str], str],
        *,
        generator: ChatModel | None = None,
        parents: ParentLookup | None = None,
    ) -> Answerer:
        """The extractive answerer, or with ``generator`` the LLM answerer over it."""
        if generator is None:
            rule = self._evidence_rule()
            return ExtractiveAnswerer(
                self.read_embedder,
                self.analyzer,
                max_sentences=self.config.answer.max_sentences,
                rank_weight=self.config.answer.rank_weight,
                context_tokens=self.config.answer.context_tokens,
                evidence_rule=rule,
                # the evidence check's reader, when it has one, also picks the sentences
                reader=rule.reader if isinstance(rule, LearnedRule) else None,
                min_rerank=self.config.rerank.min_score,
                display_source=display_source,
            )
        from ragstrata.generate.answer import LLMAnswerer
        from ragstrata.generate.citations import CitationChecker

        return LLMAnswerer(
            generator,
            self.analyzer,
            self.config.llm,
            evidence_rule=self._evidence_rule(),
            checker=CitationChecker(self.read_embedder, self.analyzer),
            display_source=display_source,
            parents=parents,
            min_rerank=self.config.rerank.min_score,
        )

    def ask(self, question: str, *, filters: Filters | None = None) -> Answer:
        """Answer ``question`` from the index with numbered citations, or refuse: the final
        answer of :meth:`ask_stream`.

        With an LLM configured (``llm.provider``) the answer is generated from the assembled
        context and its citations are verified (see :meth:`ask_stream`). Otherwise the
        extractive answerer quotes sentences. Both refuse (``refusal=True``, no citations, the
        message in the question's language) on the same decision,
        :func:`~ragstrata.generate.evidence.check_evidence`: nothing was retrieved, or the
        evidence score is under its threshold (the learned answerability probability under
        ``llm.min_answerable``, or the model's threshold, for the e5 embedders; the hand-made
        score under ``llm.min_evidence`` otherwise or when that is set), or (extractive) the
        best cross-encoder logit is under ``rerank.min_score``. The extractive answer also
        refuses when no retrieved sentence can be quoted. On an
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

    def _evidence_rule(self) -> EvidenceRule:
        """The refusal rule for the index's embedder and ``llm.min_evidence`` /
        ``llm.min_answerable`` (see :func:`~ragstrata.generate.evidence.evidence_rule_for`). The
        engine's embedder name is the manifest's (the store refuses to open otherwise) and the
        index size was read when the store was opened, so no manifest is read here: on a
        90k-chunk index that read cost about 190 ms per question. Called before any search,
        it opens the store first (a rule chosen without the size would be the large-index
        one)."""
        llm = self.config.llm
        if self._index.n_chunks is None:  # not searched yet: the size decides the model
            with contextlib.suppress(IndexNotFoundError):
                self._read_store()
        return evidence_rule_for(
            self.embedder.name,
            min_evidence=llm.min_evidence,
            min_answerable=llm.min_answerable,
            n_chunks=self._index.n_chunks,
            encoder=self.read_embedder,
            reader=self._reader() if llm.reader else None,
        )

    def warm_up_reader(self, *, n_chunks: int | None = None) -> None:
        """Load the reader now when ``ask`` may use it (``llm.reader`` on, ``llm.min_evidence``
        unset, an e5 embedder; any index size, ``n_chunks`` as :func:`~ragstrata.generate.
        evidence.evidence_rule_for` takes it, ``None``: unknown, as for a service whose
        collections come and go): a server's first question then does not wait for it
        (building it once takes about 15 s, loading it about 2 s and 0.6 GB)."""

        llm = self.config.llm
        rule = evidence_rule_for(  # the decision ask takes, so warm-up cannot drift from it
            self.embedder_name,
            min_evidence=llm.min_evidence,
            min_answerable=llm.min_answerable,
            n_chunks=n_chunks,
            reader=self._reader() if llm.reader else None,
        )
        if isinstance(rule, LearnedRule) and rule.reader is not None:
            warm = getattr(rule.reader, "warm_up", None)
            if callable(warm):
                warm()

    def _reader(self) -> Reader:
        """The packaged reader, one per process (its model loads on first use)."""
        if self._reader_stage is None:
            from ragstrata.generate.reader import packaged_reader

            self._reader_stage = packaged_reader(self.config.embedder.threads)
        return self._reader_stage

    # ------------------------------------------------------------------ admin
    def stats(self) -> dict[str, Any]:
        """Documents, chunks, embedder, analyzer and on-disk size of the index."""
        return catalog.index_stats(self.index_dir)

    def listing(self) -> dict[str, list[dict[str, Any]]]:
        """The indexed documents and the failed files the index remembers, one by one
        (:func:`~ragstrata.index.catalog.index_listing`)."""
        return catalog.index_listing(self.index_dir)

    def __enter__(self) -> Ragstrata:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store, the index lock and worker threads (idempotent)."""
        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None
        self._index.close()


def _retire(writer: IndexWriter) -> None:
    """The writer is done: withdraw the read snapshots it published (readers open the index
    itself once its lock is released)."""
    if writer.publisher is not None:
        writer.publisher.retire()
