"""Hybrid retrieval: dense (cosine) and BM25 run side by side, fused by weighted RRF."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np

from ragstrata.config import RetrievalConfig
from ragstrata.embed.base import Embedder
from ragstrata.errors import RetrievalError
from ragstrata.index.base import Filters, VectorStore
from ragstrata.index.bm25 import term_id
from ragstrata.retrieve.fusion import FusedHit, cap_per_document, rrf
from ragstrata.retrieve.language_shift import LanguageOffsets, language_offsets_for
from ragstrata.retrieve.weights import fusion_weights_for
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.language import (
    UNDETERMINED,
    LanguageRelation,
    language_relation,
    query_language,
)
from ragstrata.types import Chunk, Hit

Mode = Literal["hybrid", "dense", "bm25"]
MODES: tuple[Mode, ...] = ("hybrid", "dense", "bm25")
RELATION_DEPTH = 10
"""Dense hits whose languages decide the query's :func:`language_relation`."""
CAP_FETCH = 4
"""With a per-document cap (``retrieval.max_chunks_per_doc``), each arm reads this many times
``candidates`` hits from the store, so that ``candidates`` remain after the cap."""
DOC_OF_CACHE = 200_000
"""Chunk id → document id pairs the retriever remembers for the cap (tens of MB at most): a
pair never goes stale (a chunk id hashes its document id) and a search returns only chunks that
exist, so only the memory needs a bound: the map is emptied when it is full."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Ranked hits (best first) and per-stage wall-clock milliseconds.

    ``language_relation``: in ``hybrid`` and ``dense`` mode, whether the query was asked in the
    language of the dense arm's top passages (``"same"``), another (``"cross"``: the query
    vector was shifted to the passages' language when the embedder has language offsets, and
    in ``hybrid`` the cross-lingual RRF weights were used) or could not tell (``"unknown"``);
    ``"unknown"`` in ``bm25`` mode.
    """

    query: str
    hits: tuple[Hit, ...]
    timings_ms: Mapping[str, float]
    language_relation: LanguageRelation = "unknown"


class Retriever(Protocol):
    """Query → ranked hits. ``candidates`` is how many hits each arm returns before fusion
    keeps ``top_k``; ``close`` releases worker threads (idempotent)."""

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        filters: Filters | None = None,
        candidates: int | None = None,
    ) -> SearchResult: ...

    def close(self) -> None: ...


def query_sparse_vector(analyzer: Analyzer, query: str) -> dict[int, float]:
    """Query-side BM25 vector: term id → query term frequency (Lucene sums repeated terms)."""
    vector: dict[int, float] = {}
    for term, count in Counter(analyzer.terms(query)).items():
        key = term_id(term)
        vector[key] = vector.get(key, 0.0) + float(count)
    return vector


class HybridRetriever:
    """Dense + BM25 over one :class:`VectorStore`, fused with weighted RRF.

    The RRF weights depend on the query's language against its passages'
    (:func:`ragstrata.text.language.language_relation` over the dense arm's top 10, whose languages
    do not depend on word overlap): ``dense_weight``/``bm25_weight`` when they match or it
    cannot tell, ``cross_dense_weight``/``cross_bm25_weight`` when a query is asked in another
    language than the passages that answer it; unset, the embedder's calibrated weights
    (:func:`ragstrata.retrieve.weights.fusion_weights_for`).

    Each retriever returns ``candidates`` (default ``config.candidates``) hits; in ``hybrid``
    mode, with ``config.max_chunks_per_doc`` > 0, those are the first ``candidates`` of
    ``CAP_FETCH × candidates`` hits once each document keeps its best ``max_chunks_per_doc``
    (:func:`~ragstrata.retrieve.fusion.cap_per_document`); fusion keeps ``top_k``.

    Cross-lingual queries (``dense`` and ``hybrid`` modes, ``config.language_shift``, an
    embedder with shipped :class:`~ragstrata.retrieve.language_shift.LanguageOffsets`): when
    the relation is ``"cross"``, the dense arm searches again with the query vector moved from
    the query's language to the most common language of the top passages, and ranks by that
    search. Scores in ``Hit.explain``: the cosine similarity of the *unshifted* query for
    ``dense`` (so that scores mean the same for every query), BM25 for ``bm25``. Raises
    RetrievalError for an empty query or unknown mode.
    """

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        analyzer: Analyzer,
        config: RetrievalConfig,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.analyzer = analyzer
        self.config = config
        self.weights = fusion_weights_for(embedder.name, config)
        self.offsets: LanguageOffsets | None = (
            language_offsets_for(embedder.name) if config.language_shift else None
        )
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragstrata-bm25")
        self._doc_of: dict[str, str] = {}

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        filters: Filters | None = None,
        candidates: int | None = None,
    ) -> SearchResult:
        if not query.strip():
            raise RetrievalError("the query is empty; pass a question or keywords")
        if mode not in MODES:
            raise RetrievalError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
        k = top_k or self.config.top_k
        limit = max(candidates or self.config.candidates, k)
        per_doc = self.config.max_chunks_per_doc if mode == "hybrid" else 0
        fetch = limit * CAP_FETCH if per_doc else limit
        timings: dict[str, float] = {}
        t0 = time.perf_counter()

        def run_bm25() -> list[tuple[str, float]]:
            t = time.perf_counter()
            result = self.store.sparse_search_ids(
                query_sparse_vector(self.analyzer, query), limit=fetch, filters=filters
            )
            timings["bm25"] = (time.perf_counter() - t) * 1000
            return result

        bm25_future = self._pool.submit(run_bm25) if mode in ("hybrid", "bm25") else None
        rankings: dict[str, list[tuple[str, float]]] = {}
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed_query"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            rankings["dense"] = self.store.dense_search_ids(vector, limit=fetch, filters=filters)
            timings["dense"] = (time.perf_counter() - t) * 1000
        if bm25_future is not None:
            rankings["bm25"] = bm25_future.result()

        t = time.perf_counter()
        relation: LanguageRelation = "unknown"
        chunks: dict[str, Chunk] = {}
        weights = None
        shifted = False
        if mode in ("hybrid", "dense"):
            head = [item for item, _ in rankings["dense"][:RELATION_DEPTH]]
            chunks = {c.chunk_id: c for c in self.store.get(head)}
            languages = [chunks[i].language for i in head if i in chunks]
            relation = language_relation(query, languages)
            if relation == "cross" and self.offsets is not None:
                t_shift = time.perf_counter()
                moved = self._shift(query, vector, languages)
                if moved is not None:
                    rankings["dense"] = self.store.dense_search_ids(
                        moved, limit=fetch, filters=filters
                    )
                    shifted = True
                timings["dense_shift"] = (time.perf_counter() - t_shift) * 1000
        if mode == "hybrid":
            weights = self.weights.pick(relation)
            if per_doc:
                rankings = {
                    arm: self._capped(ranking, chunks, per_doc=per_doc, limit=limit)
                    for arm, ranking in rankings.items()
                }
        fused = rrf(rankings, k=self.config.rrf_k, weights=weights)
        top = fused[:k]
        if shifted:
            top = self._unshifted_scores(top, vector)
        timings["fusion"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        missing = [f.item_id for f in top if f.item_id not in chunks]
        chunks.update((c.chunk_id, c) for c in self.store.get(missing))
        # a single retriever keeps its own score; fused hits carry the RRF score
        hits = tuple(
            Hit(
                chunks[f.item_id],
                rank,
                f.score if mode == "hybrid" else f.explain[0].score,
                f.explain,
            )
            for rank, f in enumerate(top, start=1)
            if f.item_id in chunks
        )
        timings["fetch"] = (time.perf_counter() - t) * 1000
        timings["total"] = (time.perf_counter() - t0) * 1000
        return SearchResult(query, hits, timings, relation)

    def _shift(self, query: str, vector: Any, languages: Sequence[str]) -> Any:
        """The query vector moved from the query's language to the most common other language
        of ``languages`` (the dense head's), or ``None`` when either is unknown or has no
        offset."""
        assert self.offsets is not None
        source = query_language(query)
        others = Counter(lang for lang in languages if lang not in (source, UNDETERMINED, ""))
        if source is None or not others:
            return None
        target = min(others, key=lambda lang: (-others[lang], lang))
        return self.offsets.shift(vector, source=source, target=target)

    def _unshifted_scores(self, top: list[FusedHit], vector: Any) -> list[FusedHit]:
        """``top`` with each dense score replaced by the cosine of the unshifted query (the
        ranks stay those of the shifted search)."""
        ids = [f.item_id for f in top if any(e.retriever == "dense" for e in f.explain)]
        stored = self.store.dense_vectors(ids)
        query = np.asarray(vector, dtype=np.float32)
        out = []
        for f in top:
            p = stored.get(f.item_id)
            if p is None:
                out.append(f)
                continue
            cosine = float(query @ p) / max(float(np.linalg.norm(p)), 1e-12)
            explain = tuple(
                replace(e, score=cosine) if e.retriever == "dense" else e for e in f.explain
            )
            out.append(replace(f, explain=explain))
        return out

    def _capped(
        self,
        ranking: list[tuple[str, float]],
        chunks: dict[str, Chunk],
        *,
        per_doc: int,
        limit: int,
    ) -> list[tuple[str, float]]:
        """``ranking`` capped to ``per_doc`` chunks per document, first ``limit`` kept. The
        documents of chunks not seen before are read from the store in blocks of ``limit``
        until ``limit`` are kept (chunks read are added to ``chunks``), so a list in which no
        document passes the cap costs at most one read of ``limit`` chunks."""
        doc_of = self._doc_of
        read = 0
        while True:
            block = [
                i for i, _ in ranking[read : read + limit] if i not in doc_of and i not in chunks
            ]
            if block:
                fetched = self.store.get(block)
                if len(doc_of) + len(fetched) > DOC_OF_CACHE:
                    doc_of.clear()
                for chunk in fetched:
                    chunks[chunk.chunk_id] = chunk
                    doc_of[chunk.chunk_id] = chunk.doc_id
            read += limit
            kept = cap_per_document(
                ranking[:read],
                lambda i: chunks[i].doc_id if i in chunks else doc_of.get(i),
                per_document=per_doc,
                limit=limit,
            )
            if len(kept) >= limit or read >= len(ranking):
                return kept

    def close(self) -> None:
        """Stop the worker thread."""
        self._pool.shutdown(wait=True)
