"""RRF weights per embedder and per language relation of a query to its passages.

The weights are not universal: how much the dense arm deserves depends on the embedding model
(MiniLM reads English only, e5 a hundred languages) and on whether the question shares a
language with the passages (across languages, shared words are mostly code and names and BM25
means little, unless the model cannot cross languages either). The values below were swept with
``python bench/fusion_weights.py`` on training halves only (SciFact train, SQuAD-es train
articles, the FastAPI ES/EN train pages) and reported on the held-out halves
(docs/evaluation.md, "Fusion weights").
"""

from __future__ import annotations

from dataclasses import dataclass

from ragstrata.config import RetrievalConfig
from ragstrata.config.embedder import embedder_family
from ragstrata.text.language import LanguageRelation

__all__ = ["CALIBRATED_WEIGHTS", "UNCALIBRATED_WEIGHTS", "FusionWeights", "fusion_weights_for"]


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """``(dense, bm25)`` RRF weights for a query in its passages' language (``same``, also used
    when the relation is unknown) and in another language (``cross``; ``cross_by_language``:
    ``(language, (dense, bm25))`` pairs for a query in one language, ISO 639-1, when they
    differ). Immutable and hashable."""

    same: tuple[float, float]
    cross: tuple[float, float]
    cross_by_language: tuple[tuple[str, tuple[float, float]], ...] = ()

    def pick(self, relation: LanguageRelation, language: str | None = None) -> dict[str, float]:
        """``{"dense": w, "bm25": w}`` for ``relation`` and, across languages, the query's
        ``language`` (``None``: unknown)."""
        if relation == "cross":
            dense, bm25 = dict(self.cross_by_language).get(language or "", self.cross)
        else:
            dense, bm25 = self.same
        return {"dense": dense, "bm25": bm25}


_E5 = FusionWeights(same=(0.4, 0.6), cross=(0.9, 0.1), cross_by_language=(("es", (0.8, 0.2)),))
_MINILM = FusionWeights(same=(0.6, 0.4), cross=(0.4, 0.6))

CALIBRATED_WEIGHTS: dict[str, FusionWeights] = {"e5": _E5, "minilm": _MINILM}
"""Weights per embedder family (:func:`~ragstrata.config.embedder.embedder_family`). e5: the dense
weight that maximizes hybrid nDCG@10 on SciFact train and SQuAD-es train together (0.4), and across
languages the one with the best mean over FastAPI ES→EN and EN→ES train that keeps hybrid within
0.005 of its best arm on both (0.8). MiniLM: its former default (0.6) within 0.0005 of its
SciFact-train best; across languages 0.4, the highest that keeps ES→EN above BM25 (MiniLM cannot
match Spanish to English, so its dense arm is weak there). e5's cross-lingual 0.8 was swept again
with the per-document cap of the hybrid retriever (``retrieval.max_chunks_per_doc`` 8) and is still
the rule's choice; with the cross-lingual query shift (:mod:`ragstrata.retrieve.language_shift`) the
dense arm got better on both directions and the same rule picks 0.9 (0.8 leaves EN→ES train hybrid
0.025 below its dense arm). Swept by the query's language (``bench/fusion_weights.py``, FastAPI
train pages, headings and written questions; docs/evaluation.md, "Fusion against its best
arm"), a Spanish question over English passages is best at 0.8 on both train sets (e5 reads
English passages from a Spanish question less well than the reverse, so BM25's shared names
and code count for more), an English one over Spanish passages at 0.9: Spanish questions
across languages take 0.8."""

UNCALIBRATED_WEIGHTS = FusionWeights(same=(0.6, 0.4), cross=(0.6, 0.4))
"""For embedders never tuned (``openai``): the historical default, whatever the languages."""


def fusion_weights_for(embedder_name: str, config: RetrievalConfig) -> FusionWeights:
    """The weights for an embedder (its ``name`` or config name), each weight set in
    ``config`` replacing the calibrated one (a cross-lingual one, for every query
    language)."""
    base = CALIBRATED_WEIGHTS.get(embedder_family(embedder_name) or "", UNCALIBRATED_WEIGHTS)

    def pair(
        default: tuple[float, float], dense: float | None, bm25: float | None
    ) -> tuple[float, float]:
        return (default[0] if dense is None else dense, default[1] if bm25 is None else bm25)

    dense, bm25 = config.cross_dense_weight, config.cross_bm25_weight
    return FusionWeights(
        same=pair(base.same, config.dense_weight, config.bm25_weight),
        cross=pair(base.cross, dense, bm25),
        # a cross-lingual weight set in the config replaces that weight for every language
        cross_by_language=tuple(
            (language, pair(weights, dense, bm25)) for language, weights in base.cross_by_language
        ),
    )
