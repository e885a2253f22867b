"""The learned answerability check: pure features, the model, the shipped weights, the rule."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from ragstrata.config import LLMConfig
from ragstrata.errors import ConfigError
from ragstrata.generate.answerability import (
    FEATURES,
    MAX_SENTENCES,
    SENTENCE_HITS,
    AnswerabilityModel,
    answer_sentences,
    answerability_features,
    answerability_model,
    sentence_cosines,
)
from ragstrata.generate.evidence import (
    CALIBRATED_MIN_EVIDENCE,
    LEARNED_MIN_CHUNKS,
    HandRule,
    LearnedRule,
    check_evidence,
    evidence_rule_for,
)
from ragstrata.testing.fakes import make_hit
from ragstrata.text.analyzer import Analyzer
from ragstrata.training.answerability import (
    Row,
    choose_threshold,
    fit_logistic,
    refusal_scores,
    train,
)
from ragstrata.types import Hit, RetrieverHit

F = {name: i for i, name in enumerate(FEATURES)}


@pytest.fixture(scope="module")
def e5() -> Any:
    """The packaged default embedder (multilingual-e5-small, int8 ONNX)."""
    from ragstrata.stages import load_embedder

    return load_embedder("e5-onnx")


def _hybrid(hit: Hit, *, dense: tuple[int, float] | None, bm25: tuple[int, float] | None) -> Hit:
    explain = []
    if dense is not None:
        explain.append(RetrieverHit("dense", *dense))
    if bm25 is not None:
        explain.append(RetrieverHit("bm25", *bm25))
    return replace(hit, explain=tuple(explain))


def _hits() -> list[Hit]:
    a = make_hit("a", "The `pip install` step needs Python 3.11 and RS503.", 1, path=("Install",))
    b = make_hit("b", "Invoices are emailed monthly.", 2, path=("Billing",))
    return [
        _hybrid(a, dense=(2, 0.80), bm25=(1, 9.0)),
        _hybrid(b, dense=(1, 0.85), bm25=None),
    ]


def test_features_have_the_documented_order_and_values() -> None:
    analyzer = Analyzer()
    x = answerability_features("Which Python does pip install need for RS503?", _hits(), analyzer)
    assert len(x) == len(FEATURES)
    assert x[F["dense_best"]] == 0.85 and x[F["dense_gap"]] == pytest.approx(0.05)
    assert x[F["top_dense_rank_inv"]] == 0.5 and x[F["top_bm25_rank_inv"]] == 1.0
    assert x[F["arm_agreement"]] == 0.5  # only hit a was found by both arms
    assert x[F["bm25_gap"]] == 0.0  # a single BM25 score
    terms = set(analyzer.terms("Which Python does pip install need for RS503?"))
    assert x[F["bm25_per_term"]] == pytest.approx(9.0 / len(terms))
    assert x[F["coverage_top"]] == x[F["coverage_best"]] == x[F["coverage_section"]] > 0.5
    assert x[F["coverage_heading"]] > 0  # "install" is the best hit's heading
    assert x[F["identifiers"]] == 1.0 and x[F["identifier_match"]] == 1.0  # RS503 found
    assert x[F["cross_language"]] == 0.0 and x[F["reranked"]] == 0.0
    # pure and deterministic
    assert x == answerability_features(
        "Which Python does pip install need for RS503?", _hits(), analyzer
    )


def test_features_of_no_hits_and_of_reranked_hits() -> None:
    analyzer = Analyzer()
    empty = answerability_features("what is the capital city", [], analyzer)
    assert empty[F["dense_best"]] == -1.0
    assert all(
        v == 0.0
        for n, v in zip(FEATURES, empty, strict=True)
        if n not in ("dense_best", "question_terms", "missing_terms", "sentence_dense")
    )
    assert empty[F["sentence_dense"]] == -1.0
    hits = _hits()
    hits[0] = replace(hits[0], explain=(*hits[0].explain, RetrieverHit("rerank", 1, 2.5)))
    x = answerability_features("pip install", hits, analyzer)
    assert x[F["reranked"]] == 1.0 and x[F["rerank_best"]] == 2.5


def test_cross_language_is_a_feature() -> None:
    analyzer = Analyzer()
    hits = [replace(h, chunk=replace(h.chunk, language="en")) for h in _hits()]
    same = answerability_features("How do I install the package with pip?", hits, analyzer)
    cross = answerability_features("¿Cómo se instala el paquete con pip?", hits, analyzer)
    assert same[F["cross_language"]] == 0.0 and cross[F["cross_language"]] == 1.0
    assert cross[F["cross_x_dense"]] == cross[F["dense_best"]]


def test_cross_language_reads_the_dense_ranks_not_the_cosines() -> None:
    """A language-neutral search ranks an English passage first for a Spanish question while
    a Spanish passage has the higher cosine of the question as asked: the relation follows
    the ranks (the first three hits of a known language: en, en, es -> cross)."""
    analyzer = Analyzer()
    rows = [("en", 1, 0.80), ("es", 2, 0.84), ("en", 3, 0.78), ("es", 4, 0.83)]
    hits = []
    for lang, rank, cosine in rows:
        hit = make_hit(f"h{rank}", "texto text", rank)
        hit = replace(hit, chunk=replace(hit.chunk, language=lang))
        hits.append(_hybrid(hit, dense=(rank, cosine), bm25=None))
    x = answerability_features("¿Cuándo se congelan los despliegues?", hits, analyzer)
    assert x[F["cross_language"]] == 1.0
    assert x[F["dense_best"]] == 0.84  # the features themselves still read the cosines


def test_fit_separates_a_toy_problem_and_threshold_meets_precision() -> None:
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(1.0, 0.5, (200, 3)), rng.normal(-1.0, 0.5, (200, 3))])
    y = np.array([1.0] * 200 + [0.0] * 200)
    mean, scale, w, b = fit_logistic(x, y)
    assert (w > 0).all()
    p = 1 / (1 + np.exp(-(((x - mean) / scale) @ w + b)))
    t = choose_threshold(p, y, target_precision=0.95)
    scores = refusal_scores(p, y, t)
    assert scores["precision"] >= 0.95 and scores["recall"] > 0.9


def test_training_leaves_out_negatives_whose_hits_hold_the_answer() -> None:
    # Answerable rows sit high on the first feature, absent rows low; the "doubtful" negatives
    # (the article repeats the answer elsewhere) look answerable. Left out, they neither drag
    # the fit nor the threshold; kept, they are counted as negatives of the threshold choice.
    rng = np.random.default_rng(1)
    d = len(FEATURES)

    def rows(label: int, centre: float, n: int, doubtful: bool, tag: str) -> list[Row]:
        return [
            Row("squad-es", f"{tag}{i}", label, tuple(rng.normal(centre, 0.5, d)), doubtful)
            for i in range(n)
        ]

    data = rows(1, 1.0, 120, False, "p") + rows(0, -1.0, 80, False, "a")
    data += rows(0, 1.0, 40, True, "d")
    _, kept_report = train(data, family="t", target_precision=0.9, seed=0)  # the default
    left, left_report = train(data, family="t", target_precision=0.9, seed=0, drop_doubtful=True)
    assert left_report["doubtful_negatives"] == 40 and left_report["doubtful_left_out"]
    assert left_report["squad-es"]["rows"] == 200 and kept_report["squad-es"]["rows"] == 240
    assert left.trained["doubtful_negatives_left_out"] == 40
    assert left_report["threshold_rows"]["f1"] > 0.95
    assert left_report["threshold_rows"]["f1"] > kept_report["threshold_rows"]["f1"] + 0.1


def test_the_shipped_e5_model_loads_and_scores(e5: Any) -> None:
    model = answerability_model("e5")
    assert model.features == FEATURES and 0.0 < model.threshold < 1.0
    assert model.trained["data"]["squad-es"].endswith("--split train")
    assert "scifact" not in str(model.trained).lower()  # evaluation-only data
    analyzer = Analyzer()
    question = "Which Python does pip install need for RS503?"
    cosines = sentence_cosines(question, _hits(), e5)
    strong = model.probability(answerability_features(question, _hits(), analyzer, cosines=cosines))
    weak = model.probability(answerability_features("capital of Australia", [], analyzer))
    assert weak < model.threshold < strong
    assert AnswerabilityModel.from_json(model.to_json()) == model
    with pytest.raises(ConfigError, match="version"):
        AnswerabilityModel.from_json({**model.to_json(), "version": 99})
    with pytest.raises(ConfigError, match="no large-index answerability model"):
        answerability_model("nope")


def test_the_shipped_small_index_model_leaves_out_the_corpus_scaled_feature() -> None:
    model = answerability_model("e5", "small")
    assert model.scope == "small" and model.features == FEATURES
    assert model.weights[FEATURES.index("bm25_per_term")] == 0.0
    assert "test" not in json.dumps(model.trained["data"])  # training halves only
    assert "scifact" not in str(model.trained).lower()
    assert AnswerabilityModel.from_json(model.to_json()) == model
    with pytest.raises(ConfigError, match="scope"):
        AnswerabilityModel.from_json({**model.to_json(), "scope": "huge"})


def test_rule_choice_keeps_the_overrides() -> None:
    e5 = "e5-onnx:multilingual-e5-small"
    learned = evidence_rule_for(e5, min_evidence=None, min_answerable=None)
    assert isinstance(learned, LearnedRule) and learned.threshold == learned.model.threshold
    assert learned.cross_threshold == learned.model.cross_threshold is not None
    tuned = evidence_rule_for(e5, min_evidence=None, min_answerable=0.3)
    assert isinstance(tuned, LearnedRule) and tuned.threshold == 0.3
    assert tuned.cross_threshold is None  # the user's threshold holds for every question
    # an explicit llm.min_evidence keeps its old meaning: the hand-made rule at that threshold
    assert evidence_rule_for(e5, min_evidence=1.2, min_answerable=0.3) == HandRule(1.2)
    minilm = evidence_rule_for(
        "minilm-onnx:all-MiniLM-L6-v2", min_evidence=None, min_answerable=None
    )
    assert minilm == HandRule(CALIBRATED_MIN_EVIDENCE["minilm"])
    # a small e5 index: the small-index model, at its own thresholds
    small = evidence_rule_for(e5, min_evidence=None, min_answerable=None, n_chunks=100)
    assert isinstance(small, LearnedRule) and small.model == answerability_model("e5", "small")
    assert small.model.scope == "small" and small.threshold == small.model.threshold
    assert small.cross_threshold == small.model.cross_threshold is not None
    at_floor = evidence_rule_for(
        e5, min_evidence=None, min_answerable=None, n_chunks=LEARNED_MIN_CHUNKS
    )
    assert isinstance(at_floor, LearnedRule) and at_floor.model.scope == "large"
    tuned_small = evidence_rule_for(e5, min_evidence=None, min_answerable=0.4, n_chunks=10)
    assert isinstance(tuned_small, LearnedRule) and tuned_small.threshold == 0.4
    with pytest.raises(ConfigError, match="min_answerable"):
        LLMConfig(min_answerable=1.5)


def test_learned_check_reports_probability_and_threshold() -> None:
    rule = evidence_rule_for("e5", min_evidence=None, min_answerable=None)
    analyzer = Analyzer()
    check = check_evidence(
        "Which Python does pip install need for RS503?", _hits(), analyzer, rule=rule
    )
    meta = check.metadata()
    assert meta["min_evidence"] == rule.threshold
    assert meta["evidence"]["model"] == "answerability-e5-v2"
    assert 0.0 <= meta["evidence"]["score"] <= 1.0
    assert check.refuse == (check.evidence.score < rule.threshold)
    assert check_evidence("x", [], analyzer, rule=rule).refused_by == "evidence"


def _english_hit(dense: float) -> Hit:
    hit = make_hit(
        "limits",
        "Each API key may send one hundred requests per minute; above that the server "
        "answers with status 429 and the client should wait before it retries.",
        dense=dense,
    )
    return replace(hit, chunk=replace(hit.chunk, language="en"))


@pytest.mark.parametrize(
    ("question", "cross", "threshold"),
    [
        ("¿Cuántas peticiones por minuto puede enviar cada clave de la API?", True, 0.94),
        ("How many requests per minute may each API key send?", False, 1.10),
    ],
)
def test_the_hand_rule_has_a_threshold_for_questions_in_another_language(
    question: str, cross: bool, threshold: float
) -> None:
    rule = HandRule(1.10, cross_threshold=0.94)
    analyzer = Analyzer()
    check = check_evidence(question, [_english_hit(0.95)], analyzer, rule=rule)
    assert check.evidence.cross is cross
    assert check.min_evidence == threshold
    assert check.metadata()["evidence"]["cross"] is cross
    assert check.refuse == (check.evidence.score < threshold)
    # without a cross threshold the relation is not even measured
    plain = check_evidence(question, [_english_hit(0.95)], analyzer, rule=HandRule(1.10))
    assert plain.evidence.cross is False and plain.min_evidence == 1.10


def test_a_cross_lingual_question_between_the_thresholds_is_answered_only_across() -> None:
    rule = HandRule(1.10, cross_threshold=0.94)
    analyzer = Analyzer()
    hit = _english_hit(0.97)  # coverage 0 for the Spanish question: score 0.97
    es = check_evidence(
        "¿Qué código devuelve el servidor al pasar el límite?", [hit], analyzer, rule=rule
    )
    assert es.evidence.cross and es.evidence.coverage == 0.0 and not es.refuse
    assert check_evidence("x y z", [], analyzer, rule=rule).refused_by == "evidence"


class _Store:
    def dense_search_ids(self, vector: object, *, limit: int, filters: object = None) -> list:  # type: ignore[type-arg]
        return [("gold", 0.9), ("a", 0.8), ("b", 0.7), ("c", 0.6)][:limit]

    sparse_search_ids = dense_search_ids

    def get(self, chunk_ids: list[str]) -> list[str]:
        return chunk_ids


def test_excluding_store_ranks_as_if_the_chunks_were_gone() -> None:
    from ragstrata.training.answerability import ExcludingStore

    store = ExcludingStore(_Store(), frozenset({"gold"}))
    assert store.dense_search_ids(None, limit=2) == [("a", 0.8), ("b", 0.7)]
    assert store.sparse_search_ids(None, limit=3) == [("a", 0.8), ("b", 0.7), ("c", 0.6)]


def _squad_like_hits() -> list[Hit]:
    """Two passages of one article: the answer's, and a neighbour about the same topic."""
    answer = make_hit(
        "a",
        "El Nilo es un río de África. Su caudal medio en Asuán es de 2830 metros cúbicos por "
        "segundo, medido durante el siglo XX.",
        1,
    )
    neighbour = make_hit(
        "b",
        "El Nilo atraviesa once países de África. Los egipcios dependen del Nilo para la "
        "agricultura desde la antigüedad.",
        2,
    )
    return [answer, neighbour]


def test_sentence_coverage_prefers_the_passage_that_holds_the_specific_terms() -> None:
    analyzer = Analyzer()
    question = "¿Cuál es el caudal medio del Nilo en Asuán?"
    both = answerability_features(question, _squad_like_hits(), analyzer)
    neighbour_only = answerability_features(question, _squad_like_hits()[1:], analyzer)
    assert 0.0 < neighbour_only[F["sentence_coverage"]] < both[F["sentence_coverage"]] <= 1.0
    # the topic word alone ("nilo", in every hit) weighs less than the specific ones
    assert both[F["sentence_coverage"]] > 3 * neighbour_only[F["sentence_coverage"]]


def test_answer_sentences_reads_the_first_hits_only_and_caps_them() -> None:
    hits = _squad_like_hits()
    sentences = answer_sentences(hits)
    assert sentences[0] == "El Nilo es un río de África."
    assert len(sentences) == 4 and len(set(sentences)) == 4
    long = make_hit("c", " ".join(f"Frase número {i} del texto largo." for i in range(100)), 3)
    assert len(answer_sentences([long])) == MAX_SENTENCES
    extra = make_hit("d", "Una frase que no se lee nunca aquí.", 9)
    assert "Una frase que no se lee nunca aquí." not in answer_sentences(
        [*hits, long, extra][: SENTENCE_HITS + 1]
    )
    assert answer_sentences([make_hit("e", "Sí. No. Ok.", 1)]) == []  # all too short


def test_sentence_dense_is_higher_for_the_answer_passage(e5: Any) -> None:
    analyzer = Analyzer()
    question = "¿Cuál es el caudal medio del Nilo en Asuán?"
    hits = _squad_like_hits()
    cos_both = sentence_cosines(question, hits, e5)
    cos_neighbour = sentence_cosines(question, hits[1:], e5)
    assert len(cos_both) == 4 and all(-1.0 <= c <= 1.0 for c in cos_both)
    assert max(cos_both) > max(cos_neighbour)
    x = answerability_features(question, hits, analyzer, cosines=cos_both)
    assert x[F["sentence_dense"]] == max(cos_both)
    assert sentence_cosines(question, [], e5) == []


def test_learned_rule_embeds_sentences_with_its_encoder(e5: Any) -> None:
    analyzer = Analyzer()
    rule = evidence_rule_for("e5", min_evidence=None, min_answerable=None, encoder=e5)
    assert isinstance(rule, LearnedRule) and rule.encoder is e5
    question = "¿Cuál es el caudal medio del Nilo en Asuán?"
    with_encoder = rule.measure(question, _squad_like_hits(), analyzer)
    without = replace(rule, encoder=None).measure(question, _squad_like_hits(), analyzer)
    assert with_encoder.score != without.score


def test_learned_rule_has_its_own_threshold_across_languages() -> None:
    analyzer = Analyzer()
    rule = evidence_rule_for("e5", min_evidence=None, min_answerable=None)
    assert isinstance(rule, LearnedRule) and rule.cross_threshold is not None
    hits = [replace(h, chunk=replace(h.chunk, language="en")) for h in _hits()]
    same = rule.measure("How do I install the package with pip?", hits, analyzer)
    cross = rule.measure("¿Cómo se instala el paquete con pip?", hits, analyzer)
    assert not same.cross and cross.cross
    assert rule.threshold_for(same) == rule.threshold
    assert rule.threshold_for(cross) == rule.cross_threshold
    # the decision uses the threshold of the question's kind (weak evidence: no strong guard)
    between = replace(cross, score=(rule.threshold + rule.cross_threshold) / 2, dense=0.1)
    low, high = sorted((rule.threshold, rule.cross_threshold))
    assert rule.refuses(between) == (rule.cross_threshold > between.score)
    assert rule.refuses(replace(between, cross=False)) == (rule.threshold > between.score)
    assert low < between.score < high
    check = check_evidence("¿Cómo se instala el paquete con pip?", hits, analyzer, rule=rule)
    assert check.min_evidence == rule.cross_threshold


def test_model_thresholds_must_be_probabilities() -> None:
    model = answerability_model("e5")
    with pytest.raises(ConfigError, match="cross_threshold"):
        replace(model, cross_threshold=1.5)
    assert AnswerabilityModel.from_json({**model.to_json(), "cross_threshold": None}) == replace(
        model, cross_threshold=None
    )


def test_strong_evidence_answers_and_says_so() -> None:
    """The hand-score guard answers under the model's threshold; the evidence says it did (a
    new user read an answer with score 0.26 < min_evidence 0.34 and no reason, 2026-12-03)."""
    analyzer = Analyzer()
    rule = evidence_rule_for("e5", min_evidence=None, min_answerable=None)
    assert isinstance(rule, LearnedRule)
    measured = rule.measure("How do I install the package with pip?", _hits(), analyzer)
    assert measured.strong == (measured.dense + 0.5 * measured.coverage >= rule.strong_evidence)
    weak = replace(measured, score=0.0, strong=False)
    assert rule.refuses(weak) and not rule.refuses(replace(weak, strong=True))
    assert replace(weak, strong=True).to_json()["strong"] is True
    assert not rule.measure("How do I install the package with pip?", [], analyzer).strong
