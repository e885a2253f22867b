"""The evidence check: is there enough in the retrieved chunks to answer at all?

``ask`` refuses, before any answer is written (by the LLM or by the extractive answerer), when
the check's score is under its threshold. :func:`check_evidence` is that decision, shared by both
answerers; the score comes from an :class:`EvidenceRule`:

* :class:`LearnedRule` (the default for the e5 embedders): the probability that the hits hold
  the answer, from the shipped logistic model of :mod:`ragstrata.generate.answerability`; its
  threshold is the model's (chosen on training splits for a stated refusal precision), or
  ``llm.min_answerable`` when set.
* :class:`HandRule` (the rule before it, still the default for the MiniLM embedders and the one
  an explicitly set ``llm.min_evidence`` selects): ``score = best dense cosine +
  COVERAGE_WEIGHT × best lexical coverage`` over the hits, where lexical coverage is the share of
  the question's BM25 terms (stemmed, stop words removed) that a chunk contains; the threshold
  is ``llm.min_evidence``, unset the one calibrated for the index's embedder on SQuAD-es v2
  (:data:`CALIBRATED_MIN_EVIDENCE`, ``ragstrata eval-refusal``, docs/evaluation.md).

:func:`evidence_rule_for` picks the rule from the embedder and the configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from ragstrata.config.embedder import embedder_family
from ragstrata.embed.base import Embedder
from ragstrata.generate.answerability import (
    FEATURES,
    MODEL_FAMILIES,
    MODEL_VERSION,
    READER_HITS,
    AnswerabilityModel,
    ReaderBlend,
    answerability_features,
    answerability_model,
    reader_blend,
    sentence_cosines,
)
from ragstrata.retrieve.copies import passage_key
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.language import has_function_word, language_relation
from ragstrata.types import Evidence, EvidenceCheck, EvidenceRefusal, Hit

if TYPE_CHECKING:
    from ragstrata.generate.reader import Reader

logger = logging.getLogger(__name__)

COVERAGE_WEIGHT = 0.5
"""Weight of lexical coverage in the evidence score (chosen with the threshold, see
docs/evaluation.md)."""

CALIBRATED_MIN_EVIDENCE: dict[str, float] = {"minilm": 0.81, "e5": 1.10}
"""``llm.min_evidence`` default per embedder family
(:func:`~ragstrata.config.embedder.embedder_family`), calibrated with ``ragstrata eval-refusal
--negatives absent`` on SQuAD-es v2 small: the threshold of best refusal F1 on the calibration half
at ``COVERAGE_WEIGHT`` (docs/evaluation.md). The e5 value was calibrated with ``e5-onnx``; the other
e5 runtimes give the same vectors to cosine 0.999 and share it. e5's cosines sit higher than
MiniLM's, hence the higher threshold. Since the learned check (:class:`LearnedRule`) is the e5
default, the e5 values are only what :func:`min_evidence_for` reports for them (the old default, the
value to set in ``llm.min_evidence`` to get the old e5 behaviour back)."""

CROSS_MIN_EVIDENCE: dict[str, float] = {"e5": 0.94}
"""The calibrated rule's threshold for a question asked in another language than its hits
(``language_relation`` ``cross``), where lexical coverage means little (shared words are code
and names): the hand score that refuses 10 % of the answerable questions of the FastAPI
``es-en:train`` and ``en-es:train`` pages with the query shift (their absent-page negatives: 17.5 %
refused; held out on the test pages: 8.7 % and 19.3 %; docs/evaluation.md). Lower than the
same-language 1.10, which refused a third of those answerable questions. Embedders that cannot
cross languages (MiniLM) have none: their same-language threshold applies."""

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
    return Evidence(dense, coverage, hand_score(dense, coverage, coverage_weight=coverage_weight))


def hand_score(dense: float, coverage: float, *, coverage_weight: float = COVERAGE_WEIGHT) -> float:
    """The hand-made evidence score: ``max(dense, 0) + coverage_weight × coverage``."""
    return max(dense, 0.0) + coverage_weight * coverage


class EvidenceRule(Protocol):
    """Scores the evidence of one question's hits; ``threshold``: refuse under it."""

    @property
    def threshold(self) -> float: ...

    def measure(self, question: str, hits: Sequence[Hit], analyzer: Analyzer) -> Evidence:
        """The :class:`Evidence` of ``hits`` for ``question``; ``score`` is compared with
        ``threshold``."""
        ...

    def refuses(self, evidence: Evidence) -> bool:
        """Whether ``evidence`` (from :meth:`measure`) is too weak to answer from."""
        ...

    def threshold_for(self, evidence: Evidence) -> float:
        """The threshold ``evidence.score`` was compared with (``threshold`` unless the rule
        has another for this kind of question)."""
        ...


@dataclass(frozen=True, slots=True)
class HandRule:
    """The hand-made rule: :func:`evidence`'s ``dense + coverage_weight × coverage``, refused
    under ``threshold`` (``llm.min_evidence``), or under ``cross_threshold`` when that is set
    and the question is asked in another language than the hits (``Evidence.cross``)."""

    threshold: float
    coverage_weight: float = COVERAGE_WEIGHT
    cross_threshold: float | None = None

    def measure(self, question: str, hits: Sequence[Hit], analyzer: Analyzer) -> Evidence:
        measured = evidence(question, hits, analyzer, coverage_weight=self.coverage_weight)
        if self.cross_threshold is None or not hits:
            return measured
        languages = [h.chunk.language for h in hits]
        cross = language_relation(question, languages) == "cross"
        return replace(measured, cross=cross)

    def refuses(self, evidence: Evidence) -> bool:
        return evidence.score < self.threshold_for(evidence)

    def threshold_for(self, evidence: Evidence) -> float:
        return _threshold_for(evidence, self.threshold, self.cross_threshold)


def _threshold_for(evidence: Evidence, threshold: float, cross_threshold: float | None) -> float:
    """``cross_threshold`` for a question asked in another language than its hits
    (``evidence.cross``) when the rule has one, else ``threshold``: both rules decide so."""
    if evidence.cross and cross_threshold is not None:
        return cross_threshold
    return threshold


NO_EVIDENCE_RULE = HandRule(UNCALIBRATED_MIN_EVIDENCE)
"""The rule that refuses only an empty retrieval (the extractive answerer's default)."""

_COVERAGE = FEATURES.index("coverage_best")
_CROSS = FEATURES.index("cross_language")

LEARNED_MIN_CHUNKS = 500
"""Smallest index the large-index model decides alone on when the reader is off
(``llm.reader = false``): its BM25 features (scores per question term) scale with the corpus's
IDF, and its training indexes held about 2,000 passages each; a smaller index (a folder of a few
files) then gets the small-index model (``scope="small"``, trained on per-article and 8-page
indexes without ``bm25_per_term``: :mod:`ragstrata.training.small_indexes`). With the reader on
(the default), every index gets the reader blend: measured on indexes of 60 to 1,300 chunks
(``bench/refusal_index_size.py``, docs/evaluation.md "One refusal check at every index size"),
the blend takes more right decisions than the small-index model in every size band, and its one
threshold refuses about the same share of answerable questions under and over 500 chunks."""

STRONG_EVIDENCE = 1.30
"""Hand score (``dense + 0.5 × coverage``) at which :class:`LearnedRule` answers whatever the
model says: the e5 hand threshold 1.10 plus 0.2 (for example cosine 0.85 with 90 % of the
question's terms in one chunk). Set by reasoning, not tuned: a guard for corpora unlike the
model's training data (small indexes, documentation sites), where the model refused questions
whose passage holds every term (docs/evaluation.md, "Learned answerability check")."""


@dataclass(frozen=True, slots=True)
class LearnedRule:
    """The learned check: ``score`` is :class:`~ragstrata.generate.answerability.
    AnswerabilityModel`'s probability that the hits hold the answer, in [0, 1]; refused under
    ``threshold`` (the model's own, or ``llm.min_answerable``). ``dense``/``coverage`` of the
    :class:`Evidence` are the model's ``dense_best``/``coverage_best`` features; ``model``
    names it (``answerability-e5-v2``); ``encoder``: the index's embedder, which embeds the first
    hits' sentences for the ``sentence_dense`` feature (``None``: not measured, as if no sentence
    could be read; only for tests of the rule's decision); ``cross_threshold``: the threshold of
    a question asked in another language than its hits (``Evidence.cross``; ``None``:
    ``threshold``). With ``reader`` and ``blend`` both set, the reader reads the first
    :data:`~ragstrata.generate.answerability.READER_HITS` hits and ``score`` is the blend's
    probability of its best logit and the model's probability (``Evidence.reader`` holds that
    logit; ``model`` names both, ``answerability-e5-v2+reader-e5-small-v0``)."""

    model: AnswerabilityModel
    threshold: float
    strong_evidence: float = STRONG_EVIDENCE
    encoder: Embedder | None = None
    cross_threshold: float | None = None
    reader: Reader | None = None
    blend: ReaderBlend | None = None

    def measure(self, question: str, hits: Sequence[Hit], analyzer: Analyzer) -> Evidence:
        cosines = sentence_cosines(question, hits, self.encoder) if self.encoder else []
        features = answerability_features(question, hits, analyzer, cosines=cosines)
        dense, coverage = features[0], features[_COVERAGE]
        score = self.model.probability(features)
        name = _model_name(self.model)
        best: float | None = None
        if self.reader is not None and self.blend is not None:
            name = f"{name}+{self.blend.reader}"  # its threshold applies, hits or none
            if hits:
                passages = [h.chunk.rendered for h in hits[:READER_HITS]]
                best = float(self.reader.score(question, passages).max())
                score = self.blend.probability(best, score)
        return Evidence(
            dense,
            coverage,
            score,
            model=name,
            cross=features[_CROSS] == 1.0,
            strong=bool(hits) and hand_score(dense, coverage) >= self.strong_evidence,
            reader=best,
        )

    def refuses(self, evidence: Evidence) -> bool:
        """Under the model's threshold, unless ``evidence.strong`` (the hand score ``dense +
        0.5 × coverage`` is at least ``strong_evidence``): the model's BM25 features are scaled
        by the corpus (a small index's IDF is tiny), so on a corpus unlike its training data it
        can refuse a passage that holds every question term at a high cosine."""
        return evidence.score < self.threshold_for(evidence) and not evidence.strong

    def threshold_for(self, evidence: Evidence) -> float:
        return _threshold_for(evidence, self.threshold, self.cross_threshold)


def _model_name(model: AnswerabilityModel) -> str:
    """``answerability-e5-v2``, ``answerability-e5-small-v2`` for the small-index model."""
    scope = "" if model.scope == "large" else f"-{model.scope}"
    return f"answerability-{model.family}{scope}-v{MODEL_VERSION}"


def distinct_hits(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without the later copies of a passage: a hit whose chunk text equals an earlier
    hit's (:func:`~ragstrata.retrieve.copies.passage_key`) is dropped, the order of the rest
    kept (a search already folds copies into one hit; hits put together otherwise may not).

    The answerability model reads the gaps between the first hits (``dense_gap``, ``bm25_gap``,
    ``coverage_gap``: one clear best passage against several similar ones); exact copies make
    every gap 0 and read as ambiguity. Four copies of one page with one unrelated note refused
    "¿Cómo configuro CORS?" at score 0.21 (threshold 0.28), one copy answered at 0.70. Its
    training corpora (SQuAD-es paragraphs, documentation pages) have no copies, so collapsing
    them gives the model the kind of list it was fitted on."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        key = passage_key(hit.chunk.text)
        if key in seen:
            continue
        seen.add(key)
        out.append(hit)
    return out


def asks_nothing(question: str, coverage: float, analyzer: Analyzer) -> bool:
    """Whether ``question`` asks nothing a passage could answer, whatever the evidence score
    says: it has no content term once stop words are removed ("¿Qué?", "¿Y eso?"), or it has
    no Spanish or English function word (:func:`~ragstrata.text.language.has_function_word`)
    and no hit holds any of its terms (``coverage``, the best share of its terms in one hit,
    :attr:`Evidence.coverage <ragstrata.types.Evidence>`, is 0): a string of letters that is
    no question ("ñññ ñññ ñññ", "xxxx yyyy").

    Such strings fooled the model: e5 embeds them near some passage (cosine 0.80), the language
    cues read "ñ" as Spanish so English hits made it "cross-lingual" (where coverage is not
    expected), and the reader scored one +2.4: a new user's "ñññ ñññ ñññ" was answered from a
    bibliography at score 0.86 (threshold 0.13). On the project's question sets the second
    rule needs a question of keywords only whose words none of the hits holds: none of the
    written FastAPI and React questions (6 of 864 have no function word) nor of the 13,717
    SQuAD-es questions (45 without one) is refused by it (docs/evaluation.md, "Questions that
    ask nothing"). A cross-lingual question of keywords alone ("contenedores" over English
    pages) is refused by it: ask it as a question."""
    if not analyzer.terms(question):
        return True
    return not has_function_word(question) and coverage <= 0.0


def under_min_rerank(hits: Sequence[Hit], min_rerank: float | None) -> bool:
    """Whether reranked ``hits``' best cross-encoder logit is under ``min_rerank``
    (``rerank.min_score``; ``None``: never). Hits without a rerank score (not reranked) are
    never under it."""
    best = max((s for h in hits if (s := h.retriever_score("rerank")) is not None), default=None)
    return min_rerank is not None and best is not None and best < min_rerank


def check_evidence(
    question: str,
    hits: Sequence[Hit],
    analyzer: Analyzer,
    *,
    rule: EvidenceRule,
    min_rerank: float | None = None,
) -> EvidenceCheck:
    """Whether ``ask`` may answer ``question`` from ``hits``, for the LLM and the extractive
    answerer alike: refuse when there is no hit, when the question asks nothing the documents
    could hold (:func:`asks_nothing`), when ``rule``'s score is under its threshold, or when
    reranked hits' best cross-encoder logit is under ``min_rerank`` (``rerank.min_score``;
    ``None``: no such check). ``rule`` measures :func:`distinct_hits`: copies of one passage
    (the same file saved twice, a backup folder) are one piece of evidence, not several."""
    hits = distinct_hits(hits)
    ev = rule.measure(question, hits, analyzer)
    refused_by: EvidenceRefusal | None = None
    if not hits or asks_nothing(question, ev.coverage, analyzer) or rule.refuses(ev):
        refused_by = "evidence"
    elif under_min_rerank(hits, min_rerank):
        refused_by = "rerank"
    return EvidenceCheck(ev, rule.threshold_for(ev), refused_by)


def evidence_rule_for(
    embedder: str,
    *,
    min_evidence: float | None,
    min_answerable: float | None,
    n_chunks: int | None = None,
    encoder: Embedder | None = None,
    reader: Reader | None = None,
) -> EvidenceRule:
    """The evidence rule of an index whose embedder is ``embedder`` (a manifest name such as
    ``e5-onnx:multilingual-e5-small``, or a config name such as ``e5``):

    * ``min_evidence`` set (``llm.min_evidence``): the :class:`HandRule` at that threshold,
      with its old meaning, whatever the embedder;
    * an embedder with shipped answerability models (:data:`~ragstrata.generate.
      answerability.MODEL_FAMILIES`), with ``reader`` (``llm.reader``): the :class:`LearnedRule`
      whose score is the shipped :class:`~ragstrata.generate.answerability.ReaderBlend` of the
      large-index model and the reader, at the blend's one threshold (or ``min_answerable``),
      whatever the index's size;
    * such an embedder without ``reader``: the :class:`LearnedRule` with the large-index model
      for an index of at least :data:`LEARNED_MIN_CHUNKS` chunks (``n_chunks``; ``None``:
      unknown, taken as large), else the small-index model; at ``min_answerable``
      (``llm.min_answerable``) when set for every question, else the model's thresholds (its
      own for a cross-lingual question); both read sentence vectors with ``encoder`` (the
      index's embedder);
    * otherwise the :class:`HandRule` at :func:`min_evidence_for`'s calibrated threshold, and
      for a cross-lingual question at :data:`CROSS_MIN_EVIDENCE`'s (``min_answerable`` does not
      apply there: one warning per process says so).
    """
    if min_evidence is not None:
        return HandRule(min_evidence)
    family = embedder_family(embedder)
    if family is not None and family in MODEL_FAMILIES:
        if reader is not None:  # every index size (LEARNED_MIN_CHUNKS's docstring)
            blend = reader_blend(family)
            threshold = blend.threshold if min_answerable is None else min_answerable
            model = answerability_model(family, "large")
            return LearnedRule(model, threshold, encoder=encoder, reader=reader, blend=blend)
        large = n_chunks is None or n_chunks >= LEARNED_MIN_CHUNKS
        model = answerability_model(family, "large" if large else "small")
        if min_answerable is not None:  # the user's threshold, for every question
            return LearnedRule(model, min_answerable, encoder=encoder)
        return LearnedRule(
            model, model.threshold, encoder=encoder, cross_threshold=model.cross_threshold
        )
    if min_answerable is not None and "min_answerable" not in _warned:
        _warned.add("min_answerable")
        logger.warning(
            "llm.min_answerable is ignored: no answerability model is shipped for embedder %r "
            "(llm.min_evidence's rule applies)",
            embedder,
        )
    return HandRule(
        min_evidence_for(embedder, None),
        cross_threshold=CROSS_MIN_EVIDENCE.get(family or ""),
    )


_warned: set[str] = set()


def min_evidence_for(embedder: str, configured: float | None) -> float:
    """``configured`` when set, else the calibrated default for ``embedder`` (a manifest
    name such as ``minilm-onnx:all-MiniLM-L6-v2``, or a config name such as ``e5``). An
    uncalibrated embedder gets :data:`UNCALIBRATED_MIN_EVIDENCE` and one warning per process."""
    if configured is not None:
        return configured
    key = embedder_family(embedder) or embedder.split(":", 1)[0]
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
