"""Evidence score: is there enough in the retrieved chunks to let the LLM answer?

``score = best dense cosine + COVERAGE_WEIGHT × best lexical coverage`` over the hits, where
lexical coverage is the share of the question's BM25 terms (stemmed, stop words removed) that a
chunk contains. ``ask`` refuses before calling the LLM when the score is under
``llm.min_evidence``; unset, the threshold calibrated for the index's embedder on SQuAD-es v2
(:data:`CALIBRATED_MIN_EVIDENCE`, ``ragstrata eval-refusal``, docs/evaluation.md) applies.
The coverage weight 0.5 is the one the calibration chose.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragstrata.index.analyzer import Analyzer
from ragstrata.types import Hit

logger = logging.getLogger(__name__)

COVERAGE_WEIGHT = 0.5
"""Weight of lexical coverage in the evidence score (chosen with the threshold, see
docs/evaluation.md)."""

CALIBRATED_MIN_EVIDENCE: dict[str, float] = {
    "minilm-onnx": 0.81,
    "minilm-onnx-fp32": 0.81,
    "minilm": 0.81,
}
"""``llm.min_evidence`` default per embedder (the ``Manifest.embedder`` name's prefix before
``:``), calibrated with ``ragstrata eval-refusal --negatives absent`` on SQuAD-es v2 small:
the threshold of best refusal F1 on the calibration half (docs/evaluation.md)."""

UNCALIBRATED_MIN_EVIDENCE = 0.0
"""For embedders without a calibration (``e5``, ``openai``): no refusal on evidence (the
LLM's own refusal and the no-citation rule still apply); a warning says to calibrate."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """``dense``: best cosine among the hits (-1 when dense retrieval found none of them);
    ``coverage``: best share of question terms in one hit, in [0, 1]; ``score``: their blend."""

    dense: float
    coverage: float
    score: float

    def to_json(self) -> dict[str, float]:
        return {
            "dense": round(self.dense, 4),
            "coverage": round(self.coverage, 4),
            "score": round(self.score, 4),
        }


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


def min_evidence_for(embedder: str, configured: float | None) -> float:
    """``configured`` when set, else the calibrated default for ``embedder`` (a manifest
    name such as ``minilm-onnx:all-MiniLM-L6-v2``, or a config name such as ``e5``)."""
    if configured is not None:
        return configured
    key = embedder.split(":", 1)[0]
    if key not in CALIBRATED_MIN_EVIDENCE:
        logger.warning(
            "llm.min_evidence is not calibrated for embedder %r: no refusal on weak evidence; "
            "run `ragstrata eval-refusal` and set llm.min_evidence",
            key,
        )
        return UNCALIBRATED_MIN_EVIDENCE
    return CALIBRATED_MIN_EVIDENCE[key]
