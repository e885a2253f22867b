"""Refusal metrics and calibration (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragstrata.config import LLMConfig, RagConfig
from ragstrata.errors import ConfigError
from ragstrata.eval.refusal import QuestionEvidence, best_threshold, calibrate, prf, roc_auc
from ragstrata.generate.evidence import (
    CALIBRATED_MIN_EVIDENCE,
    HandRule,
    asks_nothing,
    check_evidence,
    evidence,
    min_evidence_for,
)
from ragstrata.testing.fakes import make_hit
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.language import has_function_word
from ragstrata.types import Hit, RetrieverHit


def test_prf_counts_unanswerable_as_positive() -> None:
    scores = [0.1, 0.2, 0.8, 0.9]
    unans = [True, False, True, False]
    r = prf(scores, unans, 0.5)  # refuses the first two
    assert (r.precision, r.recall, r.f1, r.false_refusal_rate) == (0.5, 0.5, 0.5, 0.5)
    assert prf(scores, unans, 0.0).f1 == 0.0
    assert roc_auc([0.9, 0.8, 0.1], [False, False, True]) == 1.0
    assert roc_auc([0.5, 0.5], [False, True]) == 0.5
    best = best_threshold([0.1, 0.2, 0.8, 0.9], [True, True, False, False])
    assert best.f1 == 1.0 and 0.2 < best.threshold < 0.8


def test_calibrate_splits_by_article_and_reports_the_test_half() -> None:
    feats = []
    for article in range(4):
        for i in range(10):
            unans = i % 2 == 0
            feats.append(
                QuestionEvidence(f"{article}-{i}", article, unans, 0.3 if unans else 0.7, 0.5)
            )
    report = calibrate(feats, dataset="toy", embedder="hash")
    assert report.n_calibration == report.n_test == 20
    assert report.test.f1 == 1.0 and report.test_auc == 1.0
    assert report.refuse_all_f1 == pytest.approx(2 * 0.5 / 1.5)
    assert report.to_json()["test"]["f1"] == 1.0


def test_evidence_and_threshold_defaults() -> None:
    hits = [make_hit("a", "The installer needs Python.", 1, dense=0.4)]
    ev = evidence("installer needs Python", hits, Analyzer())
    assert ev.dense == 0.4 and ev.coverage == 1.0 and ev.score == pytest.approx(0.9)
    assert evidence("x", [], Analyzer()).score == 0.0
    assert (
        min_evidence_for("minilm-onnx:all-MiniLM-L6-v2", None) == CALIBRATED_MIN_EVIDENCE["minilm"]
    )
    assert min_evidence_for("e5-onnx:multilingual-e5-small", None) == 1.10
    assert min_evidence_for("openai:text-embedding-3-small", None) == 0.0  # not calibrated
    assert min_evidence_for("e5", 0.2) == 0.2


def test_check_evidence_is_the_refusal_decision_of_both_answerers() -> None:
    analyzer = Analyzer()
    hits = [make_hit("a", "The installer needs Python.", 1, dense=0.4)]
    enough = check_evidence("installer needs Python", hits, analyzer, rule=HandRule(0.81))
    assert enough.refused_by is None and not enough.refuse
    assert enough.metadata() == {
        "evidence": {
            "dense": 0.4,
            "coverage": 1.0,
            "score": 0.9,
            "model": None,
            "cross": False,
            "strong": False,
            "reader": None,
        },
        "min_evidence": 0.81,
    }
    weak = check_evidence("capital of Australia", hits, analyzer, rule=HandRule(0.81))
    assert weak.refused_by == "evidence" and weak.evidence.score == pytest.approx(0.4)
    # nothing retrieved refuses even without a threshold (an uncalibrated embedder)
    assert check_evidence("installer", [], analyzer, rule=HandRule(0.0)).refused_by == "evidence"
    reranked = [replace(hits[0], explain=(*hits[0].explain, RetrieverHit("rerank", 1, -3.0)))]
    assert (
        check_evidence(
            "installer needs Python", reranked, analyzer, rule=HandRule(0.81), min_rerank=-2.0
        ).refused_by
        == "rerank"
    )
    assert not check_evidence(
        "installer needs Python", reranked, analyzer, rule=HandRule(0.81), min_rerank=-4.0
    ).refuse
    assert not check_evidence(  # hits that were not reranked: min_rerank does not apply
        "installer needs Python", hits, analyzer, rule=HandRule(0.81), min_rerank=-2.0
    ).refuse


def test_a_question_that_asks_nothing_is_refused_whatever_its_score() -> None:
    analyzer = Analyzer()
    hits = [make_hit("a", "The installer needs Python 3.11 on Debian.", 1, dense=0.9)]
    lenient = HandRule(0.0)  # any score answers: only the question decides

    def refused(question: str, hits: list[Hit]) -> bool:
        return check_evidence(question, hits, analyzer, rule=lenient).refused_by == "evidence"

    for gibberish in ("ñññ ñññ ñññ", "xxxx yyyy", "¿Qué?", "¿Y eso?"):
        assert asks_nothing(gibberish, 0.0, analyzer), gibberish
        assert refused(gibberish, hits), gibberish
    assert asks_nothing("¿Qué?", 1.0, analyzer)  # no content term, whatever the hits hold
    assert not refused("installer Python", hits)  # keywords a hit holds
    # a question in another language than its hits: its function words say it is one
    assert not refused("¿Qué necesita el instalador?", hits)
    assert refused("Newton yardas 2015", hits)  # keywords no hit holds
    assert not refused("Newton yardas 2015", [make_hit("b", "Newton lanzó 2015")])
    assert has_function_word("¿Cómo instalo esto?") and has_function_word("how to install")
    assert not has_function_word("ñññ ñññ") and not has_function_word("RS503")


def test_llm_config_validates_and_loads_from_env() -> None:
    cfg = RagConfig.load(
        env={"RAGSTRATA_LLM_PROVIDER": "local", "RAGSTRATA_LLM_MIN_EVIDENCE": "0.4"}
    )
    assert cfg.llm.provider == "local" and cfg.llm.min_evidence == 0.4
    assert cfg.llm.temperature == 0.1
    for bad in (
        {"provider": "gpt"},
        {"temperature": 3.0},
        {"local_model": "7b"},
        {"api_key_env": "sk-abc def"},
        {"unsupported": "drop"},
    ):
        with pytest.raises(ConfigError):
            LLMConfig(**bad)  # type: ignore[arg-type]
    assert LLMConfig(api_key_env="MY_KEY").resolve_api_key({"MY_KEY": " k "}) == "k"


def test_one_article_is_a_clear_error_not_a_traceback() -> None:
    """Review 47: eval-refusal on a one-article SQuAD v2 file ended in a ValueError traceback
    (the CLI reports RagError, a ConfigError among them)."""
    feats = [QuestionEvidence(f"q{i}", 0, i % 2 == 0, 0.5, 0.5) for i in range(6)]
    with pytest.raises(ConfigError, match="at least two articles"):
        calibrate(feats)
