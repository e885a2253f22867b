"""Evidence score: is there enough in the retrieved chunks to answer at all?

``score = best dense cosine + COVERAGE_WEIGHT × best lexical coverage`` over the hits, where
lexical coverage is the share of the question's BM25 terms (stemmed, stop words removed) that a
chunk contains. ``ask`` refuses, before any answer is written (by the LLM or by the extractive
answerer), when the score is under ``llm.min_evidence``; unset, the threshold calibrated for the
index's embedder on SQuAD-es v2 (:data:`CALIBRATED_MIN_EVIDENCE`, ``ragstrata eval-refusal``,
docs/evaluation.md) applies. The coverage weight 0.5 is the one the calibration chose.
:func:`check_evidence` is that decision, shared by both answerers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Evidence, EvidenceCheck, EvidenceRefusal, Hit

logger = logging.getLogger(__name__)

COVERAGE_WEIGHT = 0.5
"""Weight of lexical coverage in the evidence score (chosen with the threshold, see
docs/evaluation.md)."""

CALIBRATED_MIN_EVIDENCE: dict[str, float] = {
    "minilm-onnx": 0.81,
    "minilm-onnx-fp32": 0.81,
    "minilm": 0.81,
    "e5-onnx": 1.10,
    "e5-onnx-q4": 1.10,
    "e5-onnx-fp32": 1.10,
    "e5": 1.10,
}
"""``llm.min_evidence`` default per embedder (the ``Manifest.embedder`` name's prefix before
``:``), calibrated with ``ragstrata eval-refusal --negatives absent`` on SQuAD-es v2 small:
the threshold of best refusal F1 on the calibration half at ``COVERAGE_WEIGHT``
(docs/evaluation.md). The e5 value was calibrated with ``e5-onnx``; the other e5 runtimes give
the same vectors to cosine 0.999 and share it. e5's cosines sit higher than MiniLM's, hence
the higher threshold."""

UNCALIBRATED_MIN_EVIDENCE = 0.0
"""For embedders without a calibration (``openai``): no refusal on evidence (only an
empty retrieval, the LLM's own refusal and the no-citation rule, or an extractive answer with no
sentence to quote, still refuse); a warning says to calibrate."""


def evidence(
    question: str,
    hits: Sequence[Hit],
    analyzer: Analyzer,
    *,
    coverage_weight: float = COVERAGE_WEIGHT,
) -> Evidence:
    """The :class:`Evidence` of ``hits`` for ``question`` (all zeros-ish for no hits)."""
    dense = max((s for h in hits if (s := h.retriever_score("dense")) is not None), default=-1.0)
    terms = set(analyzer.terms(question))
    coverage = 0.0
    if terms:
        coverage = max(
            (len(terms & set(analyzer.terms(h.chunk.rendered))) / len(terms) for h in hits),
            default=0.0,
        )
    return Evidence(dense, coverage, max(dense, 0.0) + coverage_weight * coverage)


def check_evidence(
    question: str,
    hits: Sequence[Hit],
    analyzer: Analyzer,
    *,
    min_evidence: float,
    min_rerank: float | None = None,
) -> EvidenceCheck:
    """Whether ``ask`` may answer ``question`` from ``hits``, for the LLM and the extractive
    answerer alike: refuse when there is no hit, when the :func:`evidence` score is under
    ``min_evidence``, or when reranked hits' best cross-encoder logit is under ``min_rerank``
    (``rerank.min_score``; ``None``: no such check)."""
    ev = evidence(question, hits, analyzer)
    refused_by: EvidenceRefusal | None = None
    best_rerank = max(
        (s for h in hits if (s := h.retriever_score("rerank")) is not None), default=None
    )
    if not hits or ev.score < min_evidence:
        refused_by = "evidence"
    elif min_rerank is not None and best_rerank is not None and best_rerank < min_rerank:
        refused_by = "rerank"
    return EvidenceCheck(ev, min_evidence, refused_by)


_warned: set[str] = set()


def min_evidence_for(embedder: str, configured: float | None) -> float:
    """``configured`` when set, else the calibrated default for ``embedder`` (a manifest
    name such as ``minilm-onnx:all-MiniLM-L6-v2``, or a config name such as ``e5``). An
    uncalibrated embedder gets :data:`UNCALIBRATED_MIN_EVIDENCE` and one warning per process."""
    if configured is not None:
        return configured
    key = embedder.split(":", 1)[0]
    if key not in CALIBRATED_MIN_EVIDENCE:
        if key in _warned:
            return UNCALIBRATED_MIN_EVIDENCE
        _warned.add(key)
        logger.warning(
            "llm.min_evidence is not calibrated for embedder %r: no refusal on weak evidence; "
            "run `ragstrata eval-refusal` and set llm.min_evidence",
            key,
        )
        return UNCALIBRATED_MIN_EVIDENCE
    return CALIBRATED_MIN_EVIDENCE[key]
