"""Weighted Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009). Pure functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from ragstrata.errors import ConfigError
from ragstrata.types import RetrieverHit


@dataclass(frozen=True, slots=True)
class FusedHit:
    """A fused result: ``score = Σ_r weight_r / (k + rank_r)`` over the retrievers that returned
    ``item_id``; ``explain`` keeps each retriever's 1-based rank and raw score."""

    item_id: str
    score: float
    explain: tuple[RetrieverHit, ...]


def rrf(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    stand_in: Mapping[str, tuple[str, Collection[str]]] | None = None,
) -> list[FusedHit]:
    """Fuse ranked lists by weighted RRF.

    ``rankings`` maps a retriever name to its results ``(item_id, raw_score)``, best first.
    Ranks are 1-based; an item absent from a list gets nothing from it; an id repeated within
    one list counts once, at its best (first) rank. ``weights`` default to 1.0 per retriever.

    ``stand_in`` maps a retriever name ``r`` to ``(other, items)``: ``r`` is blind to ``items``
    (BM25 cannot match a Spanish question to an English passage: they share no words), so each
    of them that ``other`` ranked gets from ``r`` the share of the better of its two ranks,
    ``weight_r / (k + min(rank_r, rank_other))``, instead of a share it could never earn. Only
    the score changes: ``explain`` keeps the ranks the retrievers really gave. Without it, a
    passage in another language than the question's, ranked first by the dense arm, fuses
    below every passage that both arms ranked, however low (docs/evaluation.md, "Mixed
    folders").

    Ties in fused score are broken by ``item_id`` (ascending), so the output is deterministic.
    Raises :class:`ConfigError` for ``k < 1``, a negative weight, or a ``stand_in`` retriever
    that is not in ``rankings``.
    """
    if k < 1:
        raise ConfigError(f"rrf k={k} must be >= 1")
    weights = weights or {}
    ranks: dict[str, dict[str, int]] = {}
    explain: dict[str, list[RetrieverHit]] = {}
    for name, ranking in rankings.items():
        if weights.get(name, 1.0) < 0:
            raise ConfigError(f"rrf weight for {name!r} is {weights[name]}; weights must be >= 0")
        own = ranks.setdefault(name, {})
        for item_id, raw in ranking:
            if item_id in own:
                continue
            own[item_id] = len(own) + 1
            explain.setdefault(item_id, []).append(RetrieverHit(name, own[item_id], float(raw)))
    best = dict(ranks)  # the ranks scored: a blind retriever's are copied before they change
    for name, (other, items) in (stand_in or {}).items():
        if name not in ranks or other not in ranks:
            raise ConfigError(f"rrf stand_in {name!r} <- {other!r}: both must be rankings")
        blind = best[name] = dict(ranks[name])
        for item_id in items:
            rank = ranks[other].get(item_id)
            if rank is not None and rank < blind.get(item_id, rank + 1):
                blind[item_id] = rank
    parts: dict[str, list[float]] = {}
    for name, own in best.items():
        weight = weights.get(name, 1.0)
        if weight == 0.0:  # an arm switched off adds no items (they tied at 0, in id order)
            continue
        for item_id, rank in own.items():
            parts.setdefault(item_id, []).append(weight / (k + rank))
    # fsum is correctly rounded, so equal fused scores tie whatever the retrievers' order
    scores = {item: math.fsum(shares) for item, shares in parts.items()}
    ordered = sorted(scores, key=lambda item: (-scores[item], item))
    return [FusedHit(item, scores[item], tuple(explain[item])) for item in ordered]


def cap_per_document(
    ranking: Sequence[tuple[str, float]],
    document_of: Callable[[str], str | None],
    *,
    per_document: int,
    limit: int,
) -> list[tuple[str, float]]:
    """The first ``limit`` items of ``ranking`` (best first) once each document keeps only its
    best ``per_document`` items (field collapsing with ``per_document`` hits per group).

    ``document_of`` maps an item id to its document; an item it maps to ``None`` (gone from the
    store) is dropped. Order is kept, so a capped list is a subsequence of ``ranking``. Without
    the cap a long document (a changelog of a thousand chunks) can fill a retriever's whole
    candidate list, and the other documents' best passages fall out of the fusion or enter it
    at ranks that RRF no longer rewards. Raises :class:`ConfigError` for ``per_document < 1``.
    """
    if per_document < 1:
        raise ConfigError(f"per_document={per_document} must be >= 1")
    kept: list[tuple[str, float]] = []
    taken: dict[str, int] = {}
    for item_id, raw in ranking:
        if len(kept) >= limit:
            break
        document = document_of(item_id)
        if document is None or taken.get(document, 0) >= per_document:
            continue
        taken[document] = taken.get(document, 0) + 1
        kept.append((item_id, raw))
    return kept
