"""Refusal calibration on SQuAD v2: how well does the evidence score separate answerable from
unanswerable questions, and which threshold should ``ask`` refuse under?

Protocol: the dataset's paragraphs are indexed with the real pipeline; every question (both
kinds) runs through ``search`` as ``ask`` runs it; its :class:`~ragstrata.generate.evidence.
Evidence` is recorded. Articles are split in two halves by article index with
:func:`~ragstrata.eval.datasets.article_split` (first half: calibration, the articles of
``ragstrata eval --split train``; second: test), so no paragraph serves both. On the
calibration half each coverage weight in :data:`WEIGHTS` and every threshold (the observed
scores) are swept; the pair with the best refusal F1 is kept and scored on the test half. The
positive class is "unanswerable": precision = refused unanswerable / refused, recall = refused
unanswerable / unanswerable.

SQuAD v2's unanswerable questions were written against the same paragraph to look answerable
(Rajpurkar et al. 2018, "Know What You Don't Know"), so retrieval evidence separates them
poorly by design; the report also gives ROC AUC and the trivial "refuse everything" F1.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstrata.errors import ConfigError
from ragstrata.eval.datasets import _read_text, article_split, load_squad
from ragstrata.eval.runner import dataset_documents
from ragstrata.generate.evidence import evidence

if TYPE_CHECKING:
    from ragstrata.pipeline import Ragstrata

WEIGHTS = (0.0, 0.25, 0.5, 1.0)
"""Coverage weights swept: ``score = dense + weight × coverage``."""


@dataclass(frozen=True, slots=True)
class QuestionEvidence:
    """One question's evidence features and label."""

    qid: str
    article: int
    unanswerable: bool
    dense: float
    coverage: float

    def score(self, weight: float) -> float:
        return max(self.dense, 0.0) + weight * self.coverage


@dataclass(frozen=True, slots=True)
class PRF:
    """Refusal precision, recall, F1, and the share of answerable questions refused."""

    threshold: float
    precision: float
    recall: float
    f1: float
    false_refusal_rate: float

    def to_json(self) -> dict[str, float]:
        return {k: round(getattr(self, k), 4) for k in self.__slots__}


def prf(scores: Sequence[float], unanswerable: Sequence[bool], threshold: float) -> PRF:
    """Refuse when ``score < threshold``; the positive class is unanswerable."""
    tp = fp = fn = 0
    answerable = sum(not u for u in unanswerable)
    for s, u in zip(scores, unanswerable, strict=True):
        refused = s < threshold
        tp += refused and u
        fp += refused and not u
        fn += (not refused) and u
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return PRF(threshold, p, r, f1, fp / answerable if answerable else 0.0)


def roc_auc(scores: Sequence[float], unanswerable: Sequence[bool]) -> float:
    """Probability that an answerable question scores above an unanswerable one (ties 1/2)."""
    pos = sorted(s for s, u in zip(scores, unanswerable, strict=True) if not u)
    neg = sorted(s for s, u in zip(scores, unanswerable, strict=True) if u)
    if not pos or not neg:
        return 0.5
    import bisect

    wins = 0.0
    for s in pos:
        lo = bisect.bisect_left(neg, s)
        hi = bisect.bisect_right(neg, s)
        wins += lo + 0.5 * (hi - lo)
    return wins / (len(pos) * len(neg))


def best_threshold(scores: Sequence[float], unanswerable: Sequence[bool]) -> PRF:
    """The threshold (among midpoints of the sorted distinct scores, and +inf) with the best
    F1; ties go to the lower threshold (fewer refusals)."""
    distinct = sorted(set(scores))
    candidates = [(a + b) / 2 for a, b in itertools.pairwise(distinct)]
    candidates.append(distinct[-1] + 1e-6 if distinct else 0.0)
    best: PRF | None = None
    for t in candidates:
        result = prf(scores, unanswerable, t)
        if best is None or result.f1 > best.f1 + 1e-12:
            best = result
    assert best is not None
    return best


@dataclass(slots=True)
class RefusalReport:
    """The calibration outcome; ``table`` holds test-half P/R/F1 at a grid of thresholds."""

    dataset: str
    embedder: str
    n_questions: int
    n_unanswerable: int
    n_calibration: int
    n_test: int
    weight: float
    threshold: float
    calibration: PRF
    test: PRF
    test_auc: float
    refuse_all_f1: float
    by_weight: dict[str, dict[str, float]] = field(default_factory=dict)
    table: list[PRF] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "embedder": self.embedder,
            "n_questions": self.n_questions,
            "n_unanswerable": self.n_unanswerable,
            "n_calibration": self.n_calibration,
            "n_test": self.n_test,
            "coverage_weight": self.weight,
            "threshold": round(self.threshold, 4),
            "calibration": self.calibration.to_json(),
            "test": self.test.to_json(),
            "test_auc": round(self.test_auc, 4),
            "refuse_all_f1": round(self.refuse_all_f1, 4),
            "by_weight": self.by_weight,
            "table": [row.to_json() for row in self.table],
            "seconds": round(self.seconds, 1),
        }


def squad_questions(path: Path) -> list[tuple[str, int, str, bool]]:
    """``(qid, article index, question, unanswerable)`` of a SQuAD v1.1/v2.0 file."""
    root = json.loads(_read_text(Path(path)))
    out: list[tuple[str, int, str, bool]] = []
    for ai, article in enumerate(root["data"]):
        for paragraph in article["paragraphs"]:
            for qa in paragraph.get("qas", []):
                out.append((qa["id"], ai, qa["question"], bool(qa.get("is_impossible", False))))
    return out


def collect(
    engine: Ragstrata,
    path: Path,
    *,
    max_questions: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[QuestionEvidence]:
    """Index the dataset's paragraphs into ``engine`` (reused when unchanged) and record every
    question's evidence from ``engine.search`` (hybrid, default top_k, as ``ask`` does).
    ``max_questions`` keeps every k-th question so that both halves stay represented."""
    dataset = load_squad(path)
    report = engine.add_documents(dataset_documents(dataset))
    if report.failures:
        first = report.failures[0]
        raise RuntimeError(f"{len(report.failures)} documents failed: {first.reason}")
    questions = squad_questions(path)
    if max_questions is not None and max_questions < len(questions):
        step = len(questions) / max_questions
        questions = [questions[int(i * step)] for i in range(max_questions)]
    out: list[QuestionEvidence] = []
    for n, (qid, article, question, impossible) in enumerate(questions, start=1):
        hits = engine.search(question).hits
        ev = evidence(question, hits, engine.analyzer)
        out.append(QuestionEvidence(qid, article, impossible, ev.dense, ev.coverage))
        if progress:
            progress(n, len(questions))
    return out


def collect_out_of_corpus(
    engine: Ragstrata,
    path: Path,
    *,
    max_questions: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[QuestionEvidence]:
    """Evidence of every *answerable* question twice: searched over the whole index (label:
    answer) and searched only among the other half's articles (a ``doc_id`` filter), where its
    paragraph is absent (label: refuse; qid suffixed ``#absent``). This is the "the documents
    do not say" case that ``ask`` must refuse, on the same language and domain. The index must
    already hold the dataset (see :func:`collect`)."""
    dataset = load_squad(path)
    article_of = {d: int(d.split("-")[0]) for d in dataset.corpus}  # doc id "article-paragraph"
    half = article_split(sorted(set(article_of.values())))
    docs_of: dict[str, list[str]] = {"train": [], "test": []}
    for doc_id, article in article_of.items():
        docs_of[half[article]].append(doc_id)
    questions = [q for q in squad_questions(path) if not q[3]]
    if max_questions is not None and max_questions < len(questions):
        step = len(questions) / max_questions
        questions = [questions[int(i * step)] for i in range(max_questions)]
    out: list[QuestionEvidence] = []
    for n, (qid, article, question, _) in enumerate(questions, start=1):
        present = evidence(question, engine.search(question).hits, engine.analyzer)
        other = docs_of["test" if half[article] == "train" else "train"]
        hits = engine.search(question, filters={"doc_id": other}).hits
        absent = evidence(question, hits, engine.analyzer)
        out.append(QuestionEvidence(qid, article, False, present.dense, present.coverage))
        out.append(QuestionEvidence(f"{qid}#absent", article, True, absent.dense, absent.coverage))
        if progress:
            progress(n, len(questions))
    return out


def calibrate(
    features: Sequence[QuestionEvidence],
    *,
    dataset: str = "",
    embedder: str = "",
    weights: Sequence[float] = WEIGHTS,
) -> RefusalReport:
    """Split by article (:func:`~ragstrata.eval.datasets.article_split` over the features'
    article indices, sorted), choose (weight, threshold) on the first half by F1, score the
    second. Raises ConfigError (a ValueError) when either half is empty."""
    half = article_split(sorted({f.article for f in features}))
    calib = [f for f in features if half[f.article] == "train"]
    test = [f for f in features if half[f.article] == "test"]
    if not calib or not test:
        raise ConfigError(
            "need questions from at least two articles to calibrate (one half of the articles "
            "chooses the threshold, the other scores it); use a SQuAD v2 file with more articles"
        )
    labels_c = [f.unanswerable for f in calib]
    labels_t = [f.unanswerable for f in test]
    chosen: tuple[float, PRF] | None = None
    by_weight: dict[str, dict[str, float]] = {}
    for w in weights:
        best = best_threshold([f.score(w) for f in calib], labels_c)
        by_weight[str(w)] = {
            "threshold": round(best.threshold, 4),
            "calibration_f1": round(best.f1, 4),
            "calibration_auc": round(roc_auc([f.score(w) for f in calib], labels_c), 4),
        }
        if chosen is None or best.f1 > chosen[1].f1 + 1e-12:
            chosen = (w, best)
    assert chosen is not None
    weight, calib_best = chosen
    test_scores = [f.score(weight) for f in test]
    test_result = prf(test_scores, labels_t, calib_best.threshold)
    grid = sorted({round(calib_best.threshold + d, 4) for d in (-0.2, -0.1, -0.05, 0, 0.05, 0.1)})
    table = [prf(test_scores, labels_t, t) for t in grid]
    refuse_all = prf(test_scores, labels_t, float("inf"))
    return RefusalReport(
        dataset=dataset,
        embedder=embedder,
        n_questions=len(features),
        n_unanswerable=sum(f.unanswerable for f in features),
        n_calibration=len(calib),
        n_test=len(test),
        weight=weight,
        threshold=calib_best.threshold,
        calibration=calib_best,
        test=test_result,
        test_auc=roc_auc(test_scores, labels_t),
        refuse_all_f1=refuse_all.f1,
        by_weight=by_weight,
        table=table,
    )
