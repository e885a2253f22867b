"""Ranking metrics for retrieval evaluation: pure functions plus one aggregate, :func:`evaluate`.

Conventions (shared by every function here, and checked against ``ranx`` 0.3 in
``tests/unit/eval/test_metrics.py``, which follows ``trec_eval``):

* ``ranked`` is a list of document ids, best first. Rank positions are 1-based.
* ``relevant`` maps doc id -> graded relevance (an ``int``). A grade ``> 0`` means *relevant*;
  grades ``<= 0`` (judged non-relevant) count as not relevant and add no gain.
* **Duplicates**: a doc id that occurs more than once in ``ranked`` counts once; the first
  occurrence keeps its rank and later occurrences are dropped *before* the cut-off, so the
  top-k are the first ``k`` distinct ids. (A run cannot retrieve one document twice; ``ranx``
  and ``trec_eval`` make duplicates impossible by construction.)
* **Cut-off**: only the first ``k`` distinct ids are scored. ``k`` larger than the list is fine
  (the list is scored as is); ``k < 1`` raises :class:`~ragstrata.errors.ConfigError` (a
  ``ValueError``).
* **Empty inputs**: an empty ranked list scores ``0.0``. A query with no relevant document
  scores ``0.0`` in every per-query function (the ``ranx``/``trec_eval`` value), but
  :func:`evaluate` never scores such a query: it leaves it out of the means and lists it in
  :attr:`EvalResult.skipped_queries`.

Every score is a unitless fraction in ``[0, 1]``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from ragstrata.errors import ConfigError

__all__ = [
    "METRIC_NAMES",
    "EvalResult",
    "Qrels",
    "Run",
    "average_precision_at_k",
    "evaluate",
    "hit_rate_at_k",
    "ndcg_at_k",
    "paired_randomization_test",
    "parse_metric",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
]

logger = logging.getLogger(__name__)

Run: TypeAlias = Mapping[str, Sequence[str]]
"""Query id -> ranked doc ids, best first."""

Qrels: TypeAlias = Mapping[str, Mapping[str, int]]
"""Query id -> doc id -> graded relevance (``> 0`` means relevant)."""

MetricFn: TypeAlias = Callable[[Sequence[str], Mapping[str, int], int], float]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k={k!r} is not a valid cut-off; pass an integer k >= 1")


def _top_k(ranked: Sequence[str], k: int) -> list[str]:
    """The first ``k`` distinct ids of ``ranked`` (first occurrence kept), after checking ``k``."""
    _check_k(k)
    if isinstance(ranked, (str, bytes, Mapping)):
        raise ConfigError(
            f"ranked must be a sequence of doc ids, got {type(ranked).__name__} "
            f"({str(ranked)[:60]!r}); pass a list such as ['doc1', 'doc2']"
        )
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranked:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        top.append(doc_id)
        if len(top) == k:
            break
    return top


def _n_relevant(relevant: Mapping[str, int]) -> int:
    return sum(1 for grade in relevant.values() if grade > 0)


def hit_rate_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Hit rate (``success@k`` in ``trec_eval``): 1 if a relevant doc is in the top k, else 0.

    ``hit@k = 1[exists i <= k : rel_i > 0]``. Averaged over queries it is the fraction of
    queries answered by at least one relevant document in the top ``k``.

    Returns ``0.0`` for an empty list or when ``relevant`` holds no grade ``> 0``.

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is a ``str``/mapping rather than a list of ids.
    """
    top = _top_k(ranked, k)
    return 1.0 if any(relevant.get(doc_id, 0) > 0 for doc_id in top) else 0.0


def reciprocal_rank_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Reciprocal rank at k (one query's term of MRR@k; Voorhees, TREC-8 QA track, 1999).

    ``RR@k = 1 / rank`` of the first relevant document if that rank is ``<= k``, else ``0``.
    The mean over queries is MRR@k.

    Returns ``0.0`` for an empty list or when ``relevant`` holds no grade ``> 0``.

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is not a list of ids.
    """
    for rank, doc_id in enumerate(_top_k(ranked, k), start=1):
        if relevant.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def precision_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Precision at k: ``P@k = |relevant in top k| / k``.

    The denominator is always ``k``, also when fewer than ``k`` documents were retrieved
    (the ``ranx``/``trec_eval`` ``P_k`` convention: missing ranks count as non-relevant).

    Returns ``0.0`` for an empty list or when ``relevant`` holds no grade ``> 0``.

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is not a list of ids.
    """
    top = _top_k(ranked, k)
    hits = sum(1 for doc_id in top if relevant.get(doc_id, 0) > 0)
    return hits / k


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Recall at k: ``R@k = |relevant in top k| / R``, ``R`` = number of grades ``> 0``.

    The denominator is ``R``, not ``k``, so ``R@k < 1`` whenever ``R > k``.

    Returns ``0.0`` for an empty list or when ``R == 0``.

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is not a list of ids.
    """
    top = _top_k(ranked, k)
    n_rel = _n_relevant(relevant)
    if n_rel == 0:
        return 0.0
    hits = sum(1 for doc_id in top if relevant.get(doc_id, 0) > 0)
    return hits / n_rel


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Normalized discounted cumulative gain at k (Järvelin & Kekäläinen, ACM TOIS 20(4), 2002).

    ``DCG@k = sum_{i=1..k} g_i / log2(i + 1)`` with linear gain ``g_i = max(rel_i, 0)`` (the
    ``trec_eval``/``ranx`` ``ndcg`` gain; not the ``2**rel - 1`` gain of Burges et al. 2005),
    and ``nDCG@k = DCG@k / IDCG@k``, where ``IDCG@k`` is the DCG@k of the ideal ranking (all
    judged documents sorted by grade, best first). With all grades ``1`` this is binary nDCG.

    Returns ``0.0`` for an empty list or when ``relevant`` holds no grade ``> 0`` (IDCG = 0).

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is not a list of ids.
    """
    top = _top_k(ranked, k)
    ideal = sorted((grade for grade in relevant.values() if grade > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    idcg = math.fsum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    dcg = math.fsum(
        max(relevant.get(doc_id, 0), 0) / math.log2(rank + 1)
        for rank, doc_id in enumerate(top, start=1)
    )
    return dcg / idcg


def average_precision_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Average precision at k (one query's term of MAP@k), ``trec_eval``/``ranx`` convention.

    ``AP@k = (1 / R) * sum_{i <= k, rel_i > 0} P@i``, where ``R`` is the number of relevant
    documents of the query (grades ``> 0``) and ``P@i`` is the precision at rank ``i``.

    The normalizer is ``R`` itself, **not** ``min(R, k)``: this is what ``ranx`` (``map@k``)
    and ``trec_eval`` (``map_cut_k``, used by BEIR) compute, so ``AP@k < 1`` whenever
    ``R > k``, even for a perfect ranking. Some recommender-system libraries divide by
    ``min(R, k)`` instead; their numbers are not comparable with these.

    Returns ``0.0`` for an empty list or when ``R == 0``.

    Raises:
        ConfigError: ``k < 1`` or ``ranked`` is not a list of ids.
    """
    top = _top_k(ranked, k)
    n_rel = _n_relevant(relevant)
    if n_rel == 0:
        return 0.0
    hits = 0
    precisions: list[float] = []
    for rank, doc_id in enumerate(top, start=1):
        if relevant.get(doc_id, 0) > 0:
            hits += 1
            precisions.append(hits / rank)
    return math.fsum(precisions) / n_rel


_METRICS: dict[str, MetricFn] = {
    "ndcg": ndcg_at_k,
    "mrr": reciprocal_rank_at_k,
    "hit": hit_rate_at_k,
    "precision": precision_at_k,
    "recall": recall_at_k,
    "map": average_precision_at_k,
}
_ALIASES: dict[str, str] = {
    "hit_rate": "hit",
    "success": "hit",
    "rr": "mrr",
    "p": "precision",
}
METRIC_NAMES: tuple[str, ...] = tuple(_METRICS)
"""Canonical metric names accepted by :func:`evaluate` (each followed by ``@k``)."""

_METRIC_RE = re.compile(r"^([a-z_]+)@([0-9]+)$")


def parse_metric(name: str) -> tuple[str, int]:
    """Split a metric name such as ``"ndcg@10"`` into its canonical name and cut-off.

    Accepted names: ``ndcg``, ``mrr``, ``hit``, ``precision``, ``recall``, ``map``, and the
    aliases ``hit_rate``/``success`` (= ``hit``), ``rr`` (= ``mrr``), ``p`` (= ``precision``).
    The cut-off is required and must be ``>= 1``. Matching is case-insensitive.

    Raises:
        ConfigError: an unknown name, a missing or invalid ``@k``.
    """
    match = _METRIC_RE.match(name.strip().lower())
    if match is None:
        raise ConfigError(
            f"metric {name!r} is not of the form NAME@K; write it like 'ndcg@10' "
            f"(NAME one of {', '.join(METRIC_NAMES)})"
        )
    base, k_text = match.groups()
    base = _ALIASES.get(base, base)
    if base not in _METRICS:
        raise ConfigError(
            f"unknown metric {name!r}; use one of {', '.join(METRIC_NAMES)} followed by @K"
        )
    k = int(k_text)
    _check_k(k)
    return base, k


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Scores of one run against one set of qrels.

    Attributes:
        means: metric name (as the caller wrote it) -> mean over the scored queries.
        per_query: query id -> metric name -> score, for every scored query.
        n_queries: number of scored queries (the denominator of every mean).
        skipped_queries: query ids of the qrels that have no relevant document (no grade
            ``> 0``); they are in neither ``means`` nor ``per_query``. Sorted.
    """

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    n_queries: int
    skipped_queries: tuple[str, ...]


def evaluate(run: Run, qrels: Qrels, metrics: Sequence[str]) -> EvalResult:
    """Score ``run`` against ``qrels`` with each metric of ``metrics`` (e.g. ``"ndcg@10"``).

    Query set: the queries of ``qrels``. A query whose qrels hold no grade ``> 0`` is skipped
    (listed in ``skipped_queries``, excluded from every mean; never scored 1.0 or NaN). A
    query of ``qrels`` that is missing from ``run`` scores ``0.0`` for every metric. Queries of
    ``run`` absent from ``qrels`` are unjudged and ignored (logged at DEBUG level).

    Means are arithmetic means over the ``n_queries`` scored queries (macro average).

    Raises:
        ConfigError: an invalid metric name (see :func:`parse_metric`), an empty ``metrics``
            list, a ranked list that is not a list of ids, or qrels with no scorable query
            (a mean over zero queries is undefined).
    """
    if isinstance(metrics, str):
        raise ConfigError(f"metrics={metrics!r} must be a list of names, e.g. [{metrics!r}]")
    if not metrics:
        raise ConfigError("metrics is empty; pass at least one name such as 'ndcg@10'")
    parsed = {name: parse_metric(name) for name in metrics}

    per_query: dict[str, dict[str, float]] = {}
    skipped: list[str] = []
    for qid, judged in qrels.items():
        if _n_relevant(judged) == 0:
            skipped.append(qid)
            continue
        ranked = run.get(qid, ())
        per_query[qid] = {
            name: _METRICS[base](ranked, judged, k) for name, (base, k) in parsed.items()
        }
    if not per_query:
        raise ConfigError(
            f"qrels hold no query with a relevant document (grade > 0) among {len(qrels)} "
            "queries; nothing can be scored — check the qrels file and split"
        )
    unjudged = sum(1 for qid in run if qid not in qrels)
    if unjudged:
        logger.debug("ignored %d run queries that have no qrels", unjudged)

    n = len(per_query)
    means = {name: math.fsum(scores[name] for scores in per_query.values()) / n for name in parsed}
    return EvalResult(
        means=means,
        per_query=per_query,
        n_queries=n,
        skipped_queries=tuple(sorted(skipped)),
    )


def paired_randomization_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """Two-sided paired randomization (sign-flip) test of ``mean(a) == mean(b)``.

    ``a[i]`` and ``b[i]`` are two systems' scores on the same query ``i``. Under the null
    hypothesis each difference ``d_i = a_i - b_i`` is equally likely to have either sign, so
    the test draws ``n_resamples`` random sign vectors ``s`` and counts how often
    ``|mean(s * d)| >= |mean(d)|`` (Smucker, Allan & Carterette, "A comparison of statistical
    significance tests for information retrieval evaluation", CIKM 2007; Fisher's
    randomization test).

    The p-value is ``(count + 1) / (n_resamples + 1)`` (the observed labelling counts as one
    resample; Phipson & Smyth 2010), so it is never 0 and is exactly 1.0 when ``a == b``.
    Deterministic for a given ``seed``. Uses numpy (imported on first call).

    Raises:
        ConfigError: lengths differ, the inputs are empty, a value is not finite, or
            ``n_resamples < 1``.
    """
    import numpy as np

    if len(a) != len(b):
        raise ConfigError(
            f"a and b must be paired per query; got len(a)={len(a)} and len(b)={len(b)}"
        )
    if len(a) == 0:
        raise ConfigError("a and b are empty; pass at least one paired score")
    if isinstance(n_resamples, bool) or n_resamples < 1:
        raise ConfigError(f"n_resamples={n_resamples!r} must be an integer >= 1")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(diff)):
        raise ConfigError("a and b must hold finite numbers (found NaN or inf)")

    n = diff.shape[0]
    observed = abs(float(diff.mean()))
    # Relative tolerance so that resamples equal to the observed statistic up to rounding
    # count as "at least as extreme".
    threshold = observed - 1e-12 * max(1.0, observed)
    rng = np.random.default_rng(seed)
    count = 0
    batch = max(1, min(n_resamples, 4_000_000 // n))
    done = 0
    while done < n_resamples:
        size = min(batch, n_resamples - done)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
        stats = np.abs(signs @ diff) / n
        count += int(np.count_nonzero(stats >= threshold))
        done += size
    return (count + 1) / (n_resamples + 1)
