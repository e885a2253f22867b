"""The reranking stage: a :class:`Reranker` scores (query, passage) pairs jointly.

Hybrid retrieval finds ``rerank.candidates`` (default 50) hits cheaply; a cross-encoder (Nogueira
& Cho 2019, "Passage Re-ranking with BERT") reads each query and passage together and reorders
them, keeping ``rerank.top_k`` (default 5). This module holds the protocol and the pure parts:
what text a chunk is scored on, and how scores turn into reranked :class:`~ragstrata.types.Hit`s.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragstrata.errors import ConfigError
from ragstrata.retrieve.hybrid import SearchResult
from ragstrata.types import Chunk, FloatArray, Hit, RetrieverHit

RERANK = "rerank"
"""``RetrieverHit.retriever`` of the explain entry a reranked hit carries."""


@dataclass(frozen=True, slots=True)
class RerankScores:
    """Scores of ``n`` pairs, aligned with the input order.

    ``scores``: float32 ``(n,)``, the model's raw relevance logit (higher = more relevant; not a
    probability: compare it with ``rerank.min_score``, not with 0.5). ``truncated``: how many
    pairs were longer than the model's ``max_length`` tokens and lost the end of their passage.
    """

    scores: FloatArray
    truncated: int


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, passage) pairs; batch-first, order-preserving.

    Implementations load their model on first use (``warm_up`` loads it now) and are safe to
    call from one thread at a time.
    """

    @property
    def name(self) -> str:
        """A stable identifier of the model (reported by eval and the service)."""
        ...

    @property
    def max_length(self) -> int:
        """Tokens per pair (query + passage + special tokens); longer pairs are truncated."""
        ...

    def warm_up(self) -> None:
        """Load the model now instead of on the first call."""
        ...

    def score(self, query: str, passages: Sequence[str]) -> RerankScores:
        """Relevance of each passage to ``query``: ``scores[i]`` belongs to ``passages[i]``.

        An empty ``passages`` gives an empty ``(0,)`` array. Raises RetrievalError for an
        empty query.
        """
        ...


def passage_text(chunk: Chunk) -> str:
    """What a reranker reads for ``chunk``: its heading path (``A > B``) on the first line, then
    the rendered text without its leading Markdown heading line (the path already names it).
    Training uses the same function, so train and serve inputs agree."""
    if not chunk.section_path:
        return chunk.rendered
    text = chunk.rendered.lstrip()
    first, _, rest = text.partition("\n")
    if first.startswith("#"):
        text = rest.lstrip("\n")
    return f"{chunk.heading}\n{text}"


def fused_order(
    scores: npt.NDArray[np.floating],
    *,
    retrieval_weight: float = 0.0,
    k: int = 60,
) -> list[int]:
    """Positions ``0..n-1`` (input = retrieval order) sorted best first.

    With ``retrieval_weight == 0`` this is the cross-encoder's order (ties keep retrieval
    order). Otherwise each position ``i`` gets the reciprocal-rank score
    ``1/(k + ce_rank) + retrieval_weight/(k + i + 1)`` (Cormack et al. 2009): the retrieval
    rank acts as a prior that a weak cross-encoder cannot wholly override.
    """
    if retrieval_weight < 0:
        raise ConfigError(f"rerank retrieval_weight={retrieval_weight} must be >= 0")
    n = len(scores)
    ce_order = sorted(range(n), key=lambda i: (-float(scores[i]), i))
    if retrieval_weight == 0:
        return ce_order
    ce_rank = {i: r for r, i in enumerate(ce_order, start=1)}
    fused = {i: 1.0 / (k + ce_rank[i]) + retrieval_weight / (k + i + 1) for i in range(n)}
    return sorted(range(n), key=lambda i: (-fused[i], i))


def rerank_hits(
    hits: Sequence[Hit],
    scores: npt.NDArray[np.floating],
    *,
    top_k: int,
    retrieval_weight: float = 0.0,
) -> tuple[Hit, ...]:
    """The first ``len(scores)`` hits reordered by :func:`fused_order`, then the remaining
    hits in their original order; ranks renumbered from 1, cut to ``top_k``.

    A reranked hit's ``score`` becomes its cross-encoder score and its ``explain`` gains
    ``RetrieverHit("rerank", rank among the reranked, score)``; the hits after them keep their
    retrieval score and explain. Raises ConfigError for ``top_k < 1`` or more scores than hits.
    """
    if top_k < 1:
        raise ConfigError(f"rerank top_k={top_k} must be >= 1")
    n = len(scores)
    if n > len(hits):
        raise ConfigError(f"{n} rerank scores for {len(hits)} hits")
    order = fused_order(scores, retrieval_weight=retrieval_weight)
    out: list[Hit] = []
    for new_rank, i in enumerate(order, start=1):
        s = float(scores[i])
        hit = hits[i]
        out.append(
            replace(
                hit,
                rank=new_rank,
                score=s,
                explain=(*hit.explain, RetrieverHit(RERANK, new_rank, s)),
            )
        )
    for hit in hits[n:]:
        out.append(replace(hit, rank=len(out) + 1))
    return tuple(out[:top_k])


def rerank_result(
    reranker: Reranker,
    result: SearchResult,
    *,
    top_k: int,
    candidates: int,
    retrieval_weight: float | None = None,
) -> SearchResult:
    """``result`` reranked: the cross-encoder scores the first ``candidates`` hits against
    ``result.query`` and :func:`rerank_hits` reorders them (the rest follow in retrieval order),
    cut to ``top_k``. ``retrieval_weight`` unset: the reranker's own ``retrieval_weight`` (0
    when it has none). ``timings_ms`` gains ``rerank`` (added to ``total``)."""
    t = time.perf_counter()
    head = result.hits[:candidates]
    scored = reranker.score(result.query, [passage_text(h.chunk) for h in head])
    weight = retrieval_weight
    if weight is None:
        weight = float(getattr(reranker, "retrieval_weight", 0.0))
    hits = rerank_hits(result.hits, scored.scores, top_k=top_k, retrieval_weight=weight)
    timings = dict(result.timings_ms)
    timings["rerank"] = (time.perf_counter() - t) * 1000
    timings["total"] = timings.get("total", 0.0) + timings["rerank"]
    return SearchResult(result.query, hits, timings, result.language_relation)
