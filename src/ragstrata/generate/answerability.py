"""Learned answerability: the probability that the retrieved hits hold the question's answer.

Two parts, kept apart as ``bm25s`` keeps its math apart from its wiring:

* :func:`answerability_features`: pure, deterministic retrieval features of one question and its
  hits (:data:`FEATURES`, in that order): each arm's best score and the arms' ranks of the fused
  top hit, agreement between the arms, score gaps between the first hits, lexical coverage of the
  question's terms in the best chunk, in its section and in its heading, identifier matches, the
  question/passage language relation and the best reranker logit when the hits were reranked.
* :class:`AnswerabilityModel`: a logistic regression over those features (standardized), with
  the refusal threshold chosen on the training half, read from a small versioned JSON shipped per
  embedder family (``generate/answerability_models/<family>.json``, and ``<family>.small.json``
  for indexes under 500 chunks; loaded lazily by :func:`answerability_model`).

Trained by :mod:`ragstrata.training.answerability` (``python -m
ragstrata.training.answerability``) on training splits only; see docs/evaluation.md.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ragstrata.embed.base import Embedder
from ragstrata.errors import ConfigError
from ragstrata.text.analyzer import Analyzer, term_weights
from ragstrata.text.language import language_relation
from ragstrata.text.spans import sentence_spans
from ragstrata.types import Hit

MODEL_VERSION = 2
"""Version of the weights JSON layout and its features; a file of another version is refused
(2: ``sentence_coverage`` and ``sentence_dense`` added)."""

FEATURES: tuple[str, ...] = (
    "dense_best",
    "dense_gap",
    "bm25_per_term",
    "bm25_gap",
    "top_dense_rank_inv",
    "top_bm25_rank_inv",
    "arm_agreement",
    "coverage_top",
    "coverage_best",
    "coverage_section",
    "coverage_heading",
    "coverage_gap",
    "missing_terms",
    "bigram_coverage",
    "entities",
    "entity_match",
    "identifiers",
    "identifier_match",
    "cross_language",
    "cross_x_dense",
    "cross_x_coverage",
    "question_terms",
    "reranked",
    "rerank_best",
    "sentence_coverage",
    "sentence_dense",
)
"""Feature names, in the order of :func:`answerability_features`' vector.

* ``dense_best``: best cosine among the hits (-1 when the dense arm found none);
  ``dense_gap``: best minus second-best cosine (0 with fewer than two).
* ``bm25_per_term``: best BM25 score divided by the question's term count (0 when BM25 found
  none); ``bm25_gap``: (best - second) / best BM25 score, in [0, 1].
* ``top_dense_rank_inv``/``top_bm25_rank_inv``: 1 / the rank of the fused top hit in each arm
  (0 when that arm missed it).
* ``arm_agreement``: share of the hits that both arms returned.
* ``coverage_top``/``coverage_best``: share of the question's terms in the fused top hit / in
  the best-covering hit; ``coverage_section``: in the union of the hits that share the best hit's
  document and heading path; ``coverage_heading``: in the best hit's heading path and title;
  ``coverage_gap``: ``coverage_best`` minus the best coverage of a hit of another document;
  ``missing_terms``: log(1 + the question's terms missing from the best hit);
  ``bigram_coverage``: best share of the question's adjacent term pairs found adjacent in a hit.
* ``entities``: 1 when the question holds names or numbers (:data:`ENTITY`: capitalized words
  after its first word, digits); ``entity_match``: best share of them found in one hit.
* ``identifiers``: 1 when the question holds code-like tokens (:data:`IDENTIFIER`);
  ``identifier_match``: share of them found verbatim in some hit (0 without any).
* ``cross_language``: 1 when the question is asked in another language than its hits
  (:func:`~ragstrata.text.language.language_relation` over the hits in the dense arm's rank order);
  ``cross_x_dense``/``cross_x_coverage``: that flag times ``dense_best``/``coverage_best``.
* ``question_terms``: log(1 + the question's analysed term count).
* ``reranked``: 1 when a hit carries a cross-encoder score; ``rerank_best``: the best one (0
  when none).
* ``sentence_coverage``: the best share of the question's terms in one sentence of the first
  :data:`SENTENCE_HITS` hits, each term weighted by its rarity among the hits (``ln(1 + n /
  (df + 0.5))``, ``df`` the hits holding it): a question's answer sentence holds its specific
  terms together, a neighbouring passage of the same topic holds only the topic's words.
* ``sentence_dense``: the best cosine between the question's query vector and one of those
  sentences embedded as a passage (:func:`sentence_cosines`; -1 when none was measured).
"""

SENTENCE_HITS = 3
"""Hits whose sentences the two sentence features read (the answer is in the first hits or not
at all)."""

MAX_SENTENCES = 48
"""At most this many sentences are embedded per question, the first hits' first: a bound on the
check's cost when the first hits are long chunks of short lines."""

MIN_SENTENCE_CHARS = 16
"""Shorter sentences (list markers, "Ejemplo:") are not read."""

IDENTIFIER = re.compile(
    r"`[^`]+`|\b[A-Za-z_][\w]*[._/][\w./]+\b|\b[a-z]+[A-Z]\w*\b|\b\w*_\w+\b|\b[A-Z]{2,}\d+\b"
)
"""Code-like tokens: backticked spans, dotted/slashed paths, camelCase, snake_case, ``RS503``."""

ENTITY = re.compile(r"(?<!^)(?<![¿¡])\b[A-ZÁÉÍÓÚÑ][\wáéíóúñü]+|\b\d[\d.,]*\b")
"""Names and numbers of a question: capitalized words (not the first one) and digit runs."""


def _bigrams(terms: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(terms))


def _terms(analyzer: Analyzer, text: str) -> set[str]:
    return set(analyzer.terms(text))


def _share(terms: set[str], text_terms: set[str]) -> float:
    return len(terms & text_terms) / len(terms) if terms else 0.0


def answer_sentences(hits: Sequence[Hit]) -> list[str]:
    """The sentences the sentence features read: those of the first :data:`SENTENCE_HITS`
    hits' texts, in order, repeats and sentences under :data:`MIN_SENTENCE_CHARS` characters
    dropped, at most :data:`MAX_SENTENCES`."""
    out: list[str] = []
    seen: set[str] = set()
    for h in hits[:SENTENCE_HITS]:
        text = h.chunk.text
        for a, b in sentence_spans(text, 0, len(text)):
            sentence = text[a:b]
            if len(sentence) >= MIN_SENTENCE_CHARS and sentence not in seen:
                seen.add(sentence)
                out.append(sentence)
                if len(out) == MAX_SENTENCES:
                    return out
    return out


def sentence_cosines(question: str, hits: Sequence[Hit], encoder: Embedder) -> list[float]:
    """Cosine of ``question`` (embedded as a query) to each of :func:`answer_sentences`
    (embedded as passages), in that order; ``[]`` when there is none."""
    sentences = answer_sentences(hits)
    if not sentences:
        return []
    vectors = encoder.embed_documents(sentences)
    return [float(c) for c in vectors @ encoder.embed_query(question)]


def answerability_features(
    question: str,
    hits: Sequence[Hit],
    analyzer: Analyzer,
    *,
    cosines: Sequence[float] = (),
) -> list[float]:
    """The :data:`FEATURES` of ``question`` over ``hits`` (fused order, best first), as a list
    of ``len(FEATURES)`` floats; ``cosines``: :func:`sentence_cosines` of the same question and
    hits (empty: ``sentence_dense`` is -1, as for a question none of whose sentences could be
    embedded). Pure and deterministic; no hit gives the "nothing found" vector (dense -1,
    ``missing_terms`` = ``question_terms``, everything else 0)."""
    terms = _terms(analyzer, question)
    n_terms = math.log1p(len(terms))
    dense = sorted(
        ((s, h) for h in hits if (s := h.retriever_score("dense")) is not None),
        key=lambda p: -p[0],
    )
    bm25 = sorted((s for h in hits if (s := h.retriever_score("bm25")) is not None), reverse=True)
    dense_best = dense[0][0] if dense else -1.0
    dense_gap = dense[0][0] - dense[1][0] if len(dense) > 1 else 0.0
    bm25_per_term = bm25[0] / max(1, len(terms)) if bm25 else 0.0
    bm25_gap = (bm25[0] - bm25[1]) / bm25[0] if len(bm25) > 1 and bm25[0] > 0 else 0.0
    top_dense = top_bm25 = 0.0
    agreement = 0.0
    coverage_top = coverage_best = coverage_section = coverage_heading = 0.0
    chunk_terms: list[set[str]] = []
    coverage_gap = bigram_coverage = entity_match = 0.0
    missing = math.log1p(len(terms))
    entity_set = {m.group(0).lower() for m in ENTITY.finditer(question.strip())}
    identifiers = identifier_match = 0.0
    cross = 0.0
    reranks = [s for h in hits if (s := h.retriever_score("rerank")) is not None]
    if hits:
        top = hits[0]
        ranks = {e.retriever: e.rank for e in top.explain}
        top_dense = 1.0 / ranks["dense"] if "dense" in ranks else 0.0
        top_bm25 = 1.0 / ranks["bm25"] if "bm25" in ranks else 0.0
        both = [h for h in hits if {"dense", "bm25"} <= {e.retriever for e in h.explain}]
        agreement = len(both) / len(hits)
        term_lists = [analyzer.terms(h.chunk.rendered) for h in hits]  # analyzed once
        chunk_terms = [set(t) for t in term_lists]
        covers = [_share(terms, t) for t in chunk_terms]
        coverage_top = covers[0]
        best = max(range(len(hits)), key=lambda i: (covers[i], -i))
        coverage_best = covers[best]
        anchor = hits[best].chunk
        section: set[str] = set()
        for h, t in zip(hits, chunk_terms, strict=True):
            if h.chunk.doc_id == anchor.doc_id and h.chunk.section_path == anchor.section_path:
                section |= t
        coverage_section = _share(terms, section)
        coverage_heading = _share(
            terms, _terms(analyzer, " ".join((anchor.title, *anchor.section_path)))
        )
        others = [c for h, c in zip(hits, covers, strict=True) if h.chunk.doc_id != anchor.doc_id]
        coverage_gap = coverage_best - max(others, default=0.0)
        missing = math.log1p(len(terms - chunk_terms[best]))
        q_bigrams = _bigrams(analyzer.terms(question))
        if q_bigrams:
            bigram_coverage = max(len(q_bigrams & _bigrams(t)) / len(q_bigrams) for t in term_lists)
        if entity_set:
            lowered = [h.chunk.rendered.lower() for h in hits]
            entity_match = max(sum(e in t for e in entity_set) / len(entity_set) for t in lowered)
        found = {m.group(0).strip("`") for m in IDENTIFIER.finditer(question)}
        if found:
            identifiers = 1.0
            texts = [h.chunk.rendered for h in hits]
            identifier_match = sum(any(i in t for t in texts) for i in found) / len(found)
        # in the dense arm's own order (its ranks): the cosines above are of the question as
        # asked, which a language-neutral search does not rank by (retrieve.hybrid)
        by_rank = sorted(
            (e.rank, i) for i, h in enumerate(hits) for e in h.explain if e.retriever == "dense"
        )
        languages = [hits[i].chunk.language for _, i in by_rank] or [h.chunk.language for h in hits]
        cross = 1.0 if language_relation(question, languages) == "cross" else 0.0
    return [
        dense_best,
        dense_gap,
        bm25_per_term,
        bm25_gap,
        top_dense,
        top_bm25,
        agreement,
        coverage_top,
        coverage_best,
        coverage_section,
        coverage_heading,
        coverage_gap,
        missing,
        bigram_coverage,
        1.0 if entity_set else 0.0,
        entity_match,
        identifiers,
        identifier_match,
        cross,
        cross * dense_best,
        cross * coverage_best,
        n_terms,
        1.0 if reranks else 0.0,
        max(reranks) if reranks else 0.0,
        _sentence_coverage(terms, hits, chunk_terms, analyzer),
        max(cosines, default=-1.0),
    ]


def _sentence_coverage(
    terms: set[str], hits: Sequence[Hit], chunk_terms: Sequence[set[str]], analyzer: Analyzer
) -> float:
    """``sentence_coverage`` of :data:`FEATURES`: the best rarity-weighted share of ``terms`` in
    one of :func:`answer_sentences` of ``hits``; ``chunk_terms``: each hit's analysed terms."""
    if not terms or not hits:
        return 0.0
    weight = term_weights(terms, chunk_terms)
    total = sum(weight.values())
    best = 0.0
    for sentence in answer_sentences(hits):
        found = terms & set(analyzer.terms(sentence))
        best = max(best, sum(weight[t] for t in found) / total)
    return best


@dataclass(frozen=True, slots=True)
class AnswerabilityModel:
    """A logistic regression over :data:`FEATURES`: ``p = sigmoid(bias + Σ w_i (x_i - mean_i) /
    scale_i)``. ``threshold``: refuse when ``p`` is under it (chosen on the training half for
    ``target_precision`` of refusals, see the training module); ``cross_threshold``: the same
    for a question asked in another language than its hits (``cross_language`` = 1; ``None``:
    ``threshold``), chosen on the cross-lingual training rows; ``family``: the embedder family
    it was trained for (``e5``); ``scope``: the indexes it is for (``"large"``: at least
    :data:`~ragstrata.generate.evidence.LEARNED_MIN_CHUNKS` chunks; ``"small"``: fewer, trained
    on per-article and page-group indexes without the corpus-scaled ``bm25_per_term``);
    ``trained``: provenance (data, split, seed, counts)."""

    family: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    target_precision: float
    trained: dict[str, Any]
    cross_threshold: float | None = None
    scope: str = "large"

    def __post_init__(self) -> None:
        n = len(self.features)
        if self.scope not in SCOPES:
            raise ConfigError(f"answerability model {self.family!r}: scope {self.scope!r}")
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ConfigError(f"answerability model {self.family!r}: feature vectors differ")
        for name, value in (
            ("threshold", self.threshold),
            ("cross_threshold", self.cross_threshold),
        ):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ConfigError(
                    f"answerability model {self.family!r}: {name} {value} not in [0, 1]"
                )

    def probability(self, features: Sequence[float]) -> float:
        """P(answerable) in (0, 1) for one :func:`answerability_features` vector."""
        z = self.bias
        for x, m, s, w in zip(features, self.mean, self.scale, self.weights, strict=True):
            z += w * (x - m) / s
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON layout :meth:`from_json` reads."""
        return {
            "version": MODEL_VERSION,
            "family": self.family,
            "scope": self.scope,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
            "cross_threshold": self.cross_threshold,
            "target_precision": self.target_precision,
            "trained": self.trained,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswerabilityModel:
        """Read :meth:`to_json`'s layout (a file without ``scope`` is a large-index model).
        Raises ConfigError on another version, features other than :data:`FEATURES` or an
        unknown scope."""
        if data.get("version") != MODEL_VERSION:
            raise ConfigError(
                f"answerability model version {data.get('version')!r} is not {MODEL_VERSION}; "
                "retrain with python -m ragstrata.training.answerability"
            )
        if tuple(data["features"]) != FEATURES:
            raise ConfigError("answerability model features differ from this version's FEATURES")
        return cls(
            family=str(data["family"]),
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            weights=tuple(float(v) for v in data["weights"]),
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            cross_threshold=(
                None if data.get("cross_threshold") is None else float(data["cross_threshold"])
            ),
            target_precision=float(data["target_precision"]),
            trained=dict(data.get("trained", {})),
            scope=str(data.get("scope", "large")),
        )


MODEL_FAMILIES: frozenset[str] = frozenset({"e5"})
"""Embedder families (:func:`~ragstrata.config.embedder.embedder_family`) with a shipped
model; other embedders keep the hand-made rule of :mod:`ragstrata.generate.evidence`."""


SCOPES = ("large", "small")
"""Index sizes a model is trained for (:attr:`AnswerabilityModel.scope`)."""


@cache
def answerability_model(family: str, scope: str = "large") -> AnswerabilityModel:
    """The shipped model of ``family`` for ``scope`` (``generate/answerability_models/
    <family>.json``, and ``<family>.small.json`` for small indexes), read once per process.
    Raises ConfigError when it is not shipped or the file's scope is not ``scope``."""
    name = f"{family}.json" if scope == "large" else f"{family}.{scope}.json"
    path = resources.files("ragstrata.generate").joinpath("answerability_models", name)
    if not path.is_file():
        raise ConfigError(
            f"no {scope}-index answerability model is shipped for embedder family {family!r}"
        )
    model = AnswerabilityModel.from_json(json.loads(path.read_text(encoding="utf-8")))
    if model.scope != scope:
        raise ConfigError(f"{name}: scope {model.scope!r}, expected {scope!r}")
    return model


READER_BLEND_VERSION = 1
"""Version of the reader blend JSON layout (:class:`ReaderBlend`)."""

READER_HITS = 5
"""Hits the reader reads (the first ones, fused order): its training rows' width."""


@dataclass(frozen=True, slots=True)
class ReaderBlend:
    """The refusal score with the reader (:mod:`ragstrata.generate.reader`): ``p = sigmoid(bias
    + reader_weight × r + answerable_weight × a)``, ``r`` the reader's best logit over the first
    :data:`READER_HITS` hits, ``a`` :class:`AnswerabilityModel`'s probability. A logistic
    regression fitted on rows the reader did not train on (the dev articles and pages of
    ``bench/reader_gpu.py``; they lie in the training halves the answerability model was fitted
    on, so its probability reads slightly better there than held out); ``threshold``: refuse
    under it (the share of the dev answerable rows it refuses is in ``trained``); ``reader``:
    the reader's name; ``family``: the embedder family of the answerability model it blends
    with."""

    family: str
    reader: str
    reader_weight: float
    answerable_weight: float
    bias: float
    threshold: float
    trained: dict[str, Any]

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"reader blend {self.family!r}: threshold {self.threshold}")

    def probability(self, reader_logit: float, answerable: float) -> float:
        """P(answerable) in (0, 1) from the reader's best logit and the model's probability."""
        z = self.bias + self.reader_weight * reader_logit + self.answerable_weight * answerable
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "version": READER_BLEND_VERSION,
            "family": self.family,
            "reader": self.reader,
            "reader_weight": self.reader_weight,
            "answerable_weight": self.answerable_weight,
            "bias": self.bias,
            "threshold": self.threshold,
            "trained": self.trained,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReaderBlend:
        """Read :meth:`to_json`'s layout; ConfigError on another version."""
        if data.get("version") != READER_BLEND_VERSION:
            raise ConfigError(
                f"reader blend version {data.get('version')!r} is not {READER_BLEND_VERSION}"
            )
        return cls(
            family=str(data["family"]),
            reader=str(data["reader"]),
            reader_weight=float(data["reader_weight"]),
            answerable_weight=float(data["answerable_weight"]),
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            trained=dict(data.get("trained", {})),
        )


@cache
def reader_blend(family: str) -> ReaderBlend:
    """The shipped blend of ``family``'s large-index model with the reader
    (``generate/answerability_models/<family>.reader.json``), read once per process.
    Raises ConfigError when none is shipped."""
    path = resources.files("ragstrata.generate").joinpath(
        "answerability_models", f"{family}.reader.json"
    )
    if not path.is_file():
        raise ConfigError(f"no reader blend is shipped for embedder family {family!r}")
    return ReaderBlend.from_json(json.loads(path.read_text(encoding="utf-8")))
