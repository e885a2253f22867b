"""Hybrid retrieval: dense (cosine) and BM25 run side by side, fused by weighted RRF."""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np

from ragstrata.config import RetrievalConfig
from ragstrata.embed.base import Embedder
from ragstrata.errors import RetrievalError
from ragstrata.index.base import Filters, VectorStore, check_filters
from ragstrata.index.bm25 import term_id
from ragstrata.retrieve.copies import COPY_LOOKAHEAD, collapse_copies
from ragstrata.retrieve.fusion import FusedHit, cap_per_document, rrf
from ragstrata.retrieve.language_shift import LanguageOffsets, language_offsets_for
from ragstrata.retrieve.weights import fusion_weights_for
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.language import (
    Language,
    LanguageRelation,
    query_language,
    relation_to_hits,
)
from ragstrata.types import Chunk, Hit

Mode = Literal["hybrid", "dense", "bm25"]
MODES: tuple[Mode, ...] = ("hybrid", "dense", "bm25")
RELATION_DEPTH = 10
"""Dense hits whose languages are read for :func:`language_relation` (it uses the first
:data:`~ragstrata.text.language.RELATION_HITS` of them with a known language)."""
CAP_FETCH = 4
"""With a per-document cap (``retrieval.max_chunks_per_doc``), each arm reads this many times
``candidates`` hits from the store, so that ``candidates`` remain after the cap."""
MIN_SHIFT_WORDS = 8
"""A passage in another language than the query's with fewer words than this (``\\w{2,}`` runs:
a heading alone, "TODO: update for 19?") keeps its raw cosine in the language-neutral dense arm
and gets no BM25 stand-in. The shift moves the query toward the passages' language as a whole,
and text that says nothing sits nearest that centroid: such passages topped the shifted search
for unrelated Spanish questions on the Spanish React docs, whose untranslated pages hold them
(docs/evaluation.md, "Spanish React docs"). 8 was chosen on training questions (5 kept part of
the loss; 8, 12 and 20 scored the same)."""
_WORD_RE = re.compile(r"\w{2,}")
DOC_OF_CACHE = 200_000
"""Chunks the retriever remembers, as chunk id → (document id, under :data:`MIN_SHIFT_WORDS`
words), for the cap and the shift (tens of MB at most): an entry never goes stale (a chunk id
hashes its document id and its text) and a search returns only chunks that exist, so only the
memory needs a bound: the map is emptied when it is full."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Ranked hits (best first) and per-stage wall-clock milliseconds.

    ``language_relation``: in ``hybrid`` and ``dense`` mode, whether the query was asked in the
    language of the dense arm's first passages (``"same"``), another (``"cross"``: in
    ``hybrid`` the cross-lingual RRF weights were used) or could not tell (``"unknown"``);
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


def _allows(value: Any, language: str) -> bool:
    """Whether a ``language`` filter value (one code or a sequence of them) admits ``language``."""
    return value == language if isinstance(value, str) else language in value


JOINED_FORM_PROBE = 200
"""Most chunks counted per one-term probe of :meth:`HybridRetriever._with_joined_forms`."""


def query_sparse_vector(analyzer: Analyzer, query: str) -> dict[int, float]:
    """Query-side BM25 vector: term id → query term frequency (Lucene sums repeated terms)."""
    vector: dict[int, float] = {}
    for term, count in Counter(analyzer.terms(query)).items():
        key = term_id(term)
        vector[key] = vector.get(key, 0.0) + float(count)
    return vector


def check_count(name: str, value: object) -> None:
    """Raise :class:`~ragstrata.errors.RetrievalError` unless ``value`` is a whole number >= 1
    (not a bool): a search's ``top_k`` or ``candidates`` (review 30: 0 meant the default, -1
    gave no hits, 2.5 a TypeError)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RetrievalError(f"{name} must be a whole number >= 1, not {value!r}")


class HybridRetriever:
    """Dense + BM25 over one :class:`VectorStore`, fused with weighted RRF.

    The RRF weights depend on the query's language against its passages'
    (:func:`ragstrata.text.language.language_relation` over the dense arm's first passages,
    whose languages do not depend on word overlap): ``dense_weight``/``bm25_weight`` when they
    match or it cannot tell, ``cross_dense_weight``/``cross_bm25_weight`` when a query is asked
    in another language than the passages that answer it; unset, the embedder's calibrated weights
    (:func:`ragstrata.retrieve.weights.fusion_weights_for`).

    Each retriever returns ``candidates`` (default ``config.candidates``) hits; in ``hybrid``
    mode, with ``config.max_chunks_per_doc`` > 0, those are the first ``candidates`` of
    ``CAP_FETCH × candidates`` hits once each document keeps its best ``max_chunks_per_doc``
    (:func:`~ragstrata.retrieve.fusion.cap_per_document`); fusion keeps ``top_k``.

    A language-neutral dense arm (``dense`` and ``hybrid`` modes, ``config.language_shift``, an
    embedder with shipped :class:`~ragstrata.retrieve.language_shift.LanguageOffsets`, a query
    whose language has an offset): for each other language with an offset, the dense arm also
    searches the passages in that language (a filter on the chunk's ``language``) with the
    query vector moved into it, and those passages are ranked by the shifted cosine; passages
    in the query's language keep the cosine of the query as asked, and so do passages of fewer
    than :data:`MIN_SHIFT_WORDS` words, which the shift would lift for any question. In a
    one-language index of
    the query's language the extra search finds nothing and the ranking is unchanged; in an
    index of another language it is the shifted search; in a folder that mixes them a Spanish
    question can find an English page among Spanish ones (docs/evaluation.md, "Mixed folders").
    In ``hybrid`` mode, unless the query is cross-lingual (its weights already favour the dense
    arm) or BM25 matched nothing at all, the passages the shifted searches found, which BM25
    cannot match for want of shared words, take their dense rank as their BM25 rank when BM25
    ranked them lower or not at all
    (``stand_in`` of :func:`~ragstrata.retrieve.fusion.rrf`; ``bm25_stand_in=False`` turns it
    off, for comparison): in a mostly Spanish folder, the English page a Spanish question is
    about is no longer fused below Spanish pages that only share its words.
    Scores in ``Hit.explain``: the cosine similarity of the *unshifted* query for
    ``dense`` (so that scores mean the same for every query), BM25 for ``bm25``. Raises
    RetrievalError for an empty query or unknown mode.
    """

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        analyzer: Analyzer,
        config: RetrievalConfig,
        *,
        bm25_stand_in: bool = True,
    ) -> None:
        self.store = store
        self.bm25_stand_in = bm25_stand_in
        self.embedder = embedder
        self.analyzer = analyzer
        self.config = config
        self.weights = fusion_weights_for(embedder.name, config)
        self.offsets: LanguageOffsets | None = (
            language_offsets_for(embedder.name) if config.language_shift else None
        )
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragstrata-bm25")
        self._seen: dict[str, tuple[str, bool]] = {}  # see DOC_OF_CACHE

    def _query_vector(self, query: str) -> dict[int, float]:
        """:func:`query_sparse_vector` without the terms of accented Spanish question words
        (:meth:`~ragstrata.text.analyzer.Analyzer.accented_stop_terms`: "¿Cuál es la capital
        de Francia?" matched React pages by ``cual`` alone), unless nothing else is left."""
        vector = query_sparse_vector(self.analyzer, query)
        drop = {term_id(t) for t in self.analyzer.accented_stop_terms(query)}
        kept = {key: weight for key, weight in vector.items() if key not in drop}
        return kept or vector

    def _with_joined_forms(self, query: str, vector: dict[int, float]) -> dict[int, float]:
        """``vector`` plus the whole lower-case form of each query word that the index holds
        more often as an identifier than as a word: "que devuelve usestate" then matches
        ``useState`` (indexed under ``usestate``, and by parts), where "usestate" as a word,
        stemmed ``usest``, matched only the React docs' ``{/*usestate*/}`` heading anchors.

        Candidates are :meth:`~ragstrata.text.analyzer.Analyzer.joined_forms`; one is added
        when more chunks hold the whole form than hold any of the word's stems (counted up to
        :data:`JOINED_FORM_PROBE` chunks by one-term probes of the store). An all-caps word is
        indexed whole and by its stem, so its whole form never outnumbers its stem: "patients"
        is not expanded although SciFact's "PATIENTS" labels are indexed as ``patients``. A
        form the index lacks costs one empty probe."""
        for whole, terms in self.analyzer.joined_forms(query):
            key = term_id(whole)
            if key in vector:
                continue
            n_whole = len(self.store.sparse_search_ids({key: 1.0}, limit=JOINED_FORM_PROBE))
            if not n_whole:
                continue
            stems = {term_id(t): 1.0 for t in terms}
            if len(self.store.sparse_search_ids(stems, limit=n_whole)) < n_whole:
                vector[key] = 1.0
        return vector

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        filters: Filters | None = None,
        candidates: int | None = None,
    ) -> SearchResult:
        for name, count in (("top_k", top_k), ("candidates", candidates)):
            if count is not None:
                check_count(name, count)
        # as documents are stored: a decomposed "parámetros" (macOS, some keyboards) was the
        # BM25 term "metro" (review 30)
        query = unicodedata.normalize("NFC", query)
        if not query.replace("\x00", "").strip():  # NUL bytes alone are no query either
            raise RetrievalError("the query is empty; pass a question or keywords")
        if not any(ch.isalnum() for ch in query):  # "...", "???!!!": no term, a vector of noise
            raise RetrievalError("the query has no letters or digits; pass a question or keywords")
        if mode not in MODES:
            raise RetrievalError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
        filters = check_filters(filters)
        k = top_k or self.config.top_k
        limit = max(candidates or self.config.candidates, k)
        per_doc = self.config.max_chunks_per_doc if mode == "hybrid" else 0
        fetch = limit * CAP_FETCH if per_doc else limit
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        language = query_language(query) if mode in ("hybrid", "dense") else None

        def run_bm25() -> list[tuple[str, float]]:
            t = time.perf_counter()
            vector = self._with_joined_forms(query, self._query_vector(query))
            result = self.store.sparse_search_ids(vector, limit=fetch, filters=filters)
            timings["bm25"] = (time.perf_counter() - t) * 1000
            return result

        bm25_future = self._pool.submit(run_bm25) if mode in ("hybrid", "bm25") else None
        rankings: dict[str, list[tuple[str, float]]] = {}
        foreign: frozenset[str] = frozenset()
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed_query"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            rankings["dense"] = self.store.dense_search_ids(vector, limit=fetch, filters=filters)
            timings["dense"] = (time.perf_counter() - t) * 1000
            if self.offsets is not None:
                t = time.perf_counter()
                rankings["dense"], foreign = self._language_neutral(
                    language, vector, rankings["dense"], limit=fetch, filters=filters
                )
                timings["dense_shift"] = (time.perf_counter() - t) * 1000
        if bm25_future is not None:
            rankings["bm25"] = bm25_future.result()

        t = time.perf_counter()
        relation: LanguageRelation = "unknown"
        chunks: dict[str, Chunk] = {}
        weights = None
        stand_in = None
        if mode in ("hybrid", "dense"):
            head = [item for item, _ in rankings["dense"][:RELATION_DEPTH]]
            chunks = {c.chunk_id: c for c in self.store.get(head)}
            languages = [chunks[i].language for i in head if i in chunks]
            relation = relation_to_hits(language, languages)
        if mode == "hybrid":
            weights = self.weights.pick(relation, language if relation == "cross" else None)
            # BM25 that matched nothing at all (stop words only, an unknown token) says nothing
            # against any passage: no stand-in, or every foreign passage would lead
            if foreign and relation != "cross" and self.bm25_stand_in and rankings.get("bm25"):
                stand_in = {"bm25": ("dense", foreign)}
            if per_doc:
                rankings = {
                    arm: self._capped(ranking, chunks, per_doc=per_doc, limit=limit)
                    for arm, ranking in rankings.items()
                }
        fused = rrf(rankings, k=self.config.rrf_k, weights=weights, stand_in=stand_in)
        timings["fusion"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        # copies of a passage are one hit (retrieve.copies): the fused list is read on until
        # ``k`` distinct passages are found, one more store read per round that found copies
        found: list[Hit] = []
        pos = 0
        while len(found) < k and pos < len(fused):
            # the first read looks COPY_LOOKAHEAD further, for copies of the hits it keeps
            batch = fused[pos : pos + k - len(found) + (COPY_LOOKAHEAD if pos == 0 else 0)]
            pos += len(batch)
            if foreign:
                batch = self._unshifted_scores(batch, vector)
            missing = [f.item_id for f in batch if f.item_id not in chunks]
            chunks.update((c.chunk_id, c) for c in self.store.get(missing))
            # a single retriever keeps its own score; fused hits carry the RRF score
            found = collapse_copies(
                [
                    *found,
                    *(
                        Hit(
                            chunks[f.item_id],
                            0,
                            f.score if mode == "hybrid" else f.explain[0].score,
                            f.explain,
                        )
                        for f in batch
                        if f.item_id in chunks
                    ),
                ]
            )
        hits = tuple(found[:k])
        timings["fetch"] = (time.perf_counter() - t) * 1000
        timings["total"] = (time.perf_counter() - t0) * 1000
        return SearchResult(query, hits, timings, relation)

    def _language_neutral(
        self,
        source: Language | None,
        vector: Any,
        ranking: list[tuple[str, float]],
        *,
        limit: int,
        filters: Filters | None,
    ) -> tuple[list[tuple[str, float]], frozenset[str]]:
        """The dense ``ranking`` of ``vector`` made language-neutral: for each other language
        with an offset, the passages in it are searched again with the query moved from the
        query's language to that one (a search filtered on the chunk's language), and those
        shifted cosines replace their raw ones; the result is re-sorted and cut to ``limit``.
        Passages in the query's language, or in a language without an offset, keep their raw
        cosine, as does a passage of fewer than :data:`MIN_SHIFT_WORDS` words (a hub of the
        shifted query). Returns ``(ranking, foreign)``, ``foreign`` the ids found by the shifted
        searches (passages in another language than the query's), tiny ones left out;
        unchanged with an empty set when the query's language ``source``
        (:func:`query_language`) is unknown or has no offset, or the index holds no passage in
        another language."""
        assert self.offsets is not None
        if source is None or source not in self.offsets.means:
            return ranking, frozenset()
        moved: dict[str, float] = {}
        for target in sorted(self.offsets.means):
            shifted = self.offsets.shift(vector, source=source, target=target)
            if shifted is None:
                continue
            if filters and "language" in filters and not _allows(filters["language"], target):
                continue
            only = {**(filters or {}), "language": target}
            moved.update(self.store.dense_search_ids(shifted, limit=limit, filters=only))
        if not moved:
            return ranking, frozenset()
        scores = dict(ranking)
        tiny = self._tiny_passages(
            [i for i, _ in sorted(moved.items(), key=lambda x: -x[1])][:limit]
        )
        scores.update((i, score) for i, score in moved.items() if i not in tiny)
        # a tiny passage keeps its raw cosine, or stays out when the raw search did not reach it
        merged = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return merged[:limit], frozenset(moved) - tiny

    def _remember(self, chunks: list[Chunk]) -> None:
        """Record each chunk's document id and whether it is under :data:`MIN_SHIFT_WORDS`
        words (the map emptied first when it would pass :data:`DOC_OF_CACHE`)."""
        if len(self._seen) + len(chunks) > DOC_OF_CACHE:
            self._seen.clear()
        for chunk in chunks:
            tiny = len(_WORD_RE.findall(chunk.text)) < MIN_SHIFT_WORDS
            self._seen[chunk.chunk_id] = (chunk.doc_id, tiny)

    def _tiny_passages(self, ids: list[str]) -> frozenset[str]:
        """The chunks of ``ids`` with fewer than :data:`MIN_SHIFT_WORDS` words, read from the
        store once per chunk id (the cap's reads count too)."""
        unseen = [i for i in ids if i not in self._seen]
        if unseen:
            self._remember(self.store.get(unseen))
        seen = self._seen
        return frozenset(i for i in ids if i in seen and seen[i][1])

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
        """``ranking`` capped to ``per_doc`` chunks per document, first ``limit`` kept (when
        the whole ranking holds fewer, the chunks over the cap follow in rank order). The
        documents of chunks not seen before are read from the store in blocks of ``limit``
        until ``limit`` are kept (chunks read are added to ``chunks``), so a list in which no
        document passes the cap costs at most one read of ``limit`` chunks."""
        seen = self._seen
        read = 0
        while True:
            block = [
                i for i, _ in ranking[read : read + limit] if i not in seen and i not in chunks
            ]
            if block:
                fetched = self.store.get(block)
                self._remember(fetched)
                for chunk in fetched:
                    chunks[chunk.chunk_id] = chunk
            read += limit
            kept = cap_per_document(
                ranking[:read],
                lambda i: chunks[i].doc_id if i in chunks else seen[i][0] if i in seen else None,
                per_document=per_doc,
                limit=limit,
            )
            if len(kept) >= limit:
                return kept
            if read >= len(ranking):
                # too few documents to fill the list (a search filtered to one): the chunks
                # over the cap follow in rank order, demoted, not dropped (review 30: 8 hits
                # for top_k 20)
                taken = {item for item, _ in kept}
                over = [
                    (item, raw)
                    for item, raw in ranking
                    if item not in taken and (item in chunks or item in seen)
                ]
                return kept + over[: limit - len(kept)]

    def close(self) -> None:
        """Stop the worker thread."""
        self._pool.shutdown(wait=True)
