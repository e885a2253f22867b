"""Answer evaluation: scoring one answer, summaries, refusal scores, the absent draw, the gate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.eval.answers import (
    AnswerCase,
    AnswerOutcome,
    AnswerReport,
    absent_subset,
    answer_markdown,
    gate,
    refusal_scores,
    score_answer,
    summarize,
    unverified_citations,
)
from ragstrata.generate.citations import Support
from ragstrata.types import Answer, Citation

CASE = AnswerCase("q1", "¿Dónde se jugó?", ("Estadio de Levi's",), frozenset({"0-1"}))


def citation(
    label: int, doc_id: str, *, support: float | None = None, verified: bool = True
) -> Citation:
    return Citation(
        label=label,
        chunk_id=f"c{label}",
        doc_id=doc_id,
        source=f"squad/{doc_id}",
        heading_path=("Super Bowl",),
        start=0,
        end=10,
        score=1.0,
        quote="q",
        verified=verified,
        support=support,
    )


def answer(text: str, citations: Sequence[Citation], *, refusal: bool = False) -> Answer:
    return Answer(
        question="q",
        text=text,
        refusal=refusal,
        citations=tuple(citations),
        legend=(),
        timings_ms={"total": 5.0},
        refused_by="evidence" if refusal else None,
    )


def test_score_answer_contains_f1_and_gold_citation() -> None:
    a = answer(
        "Se jugó en el Estadio de Levi's. [1] Fue en 2016. [2]",
        [citation(1, "0-1"), citation(2, "0-2")],
    )
    o = score_answer(a, CASE, unverified=1, latency_ms=12.0)
    assert o.contains and o.cites_gold and not o.refused
    assert o.citations == 2 and o.unverified == 1
    # markers are removed before scoring: 9 tokens, gold "estadio de levis" (3) all found
    assert o.f1 == pytest.approx(2 * (3 / 9) * 1 / (3 / 9 + 1))
    assert o.words == 10  # words of the text as written, markers removed


def test_score_answer_counts_an_llm_answers_unverified_claims() -> None:
    """Review 47: three invented sentences without a marker around one cited one scored
    ``unverified_citations`` 0.0; the claim check's count is kept now."""
    from ragstrata.types import Generation, Grounding

    grounding = Grounding(
        claims=4,
        verified_claims=1,
        invalid_labels=(),
        unsupported=(),
        uncited=("a", "b", "c"),
        attributed=(),
    )
    a = replace(
        answer("Fue en 2016. [1] Otra cosa. Y otra. Y más.", [citation(1, "0-1")]),
        generation=Generation(context_tokens=10, finish_reason="stop", grounding=grounding),
    )
    o = score_answer(a, CASE, unverified=0, latency_ms=1.0)
    assert (o.claims, o.unverified_claims) == (4, 3)
    assert summarize([o])["unverified_claims"] == 0.75


def test_score_answer_refusal_scores_nothing() -> None:
    o = score_answer(answer("No lo sé.", [], refusal=True), CASE, unverified=0, latency_ms=3.0)
    assert o.refused and o.refused_by == "evidence"
    assert (o.contains, o.f1, o.cites_gold, o.citations) == (False, 0.0, False, 0)


def outcome(
    qid: str,
    *,
    refused: bool = False,
    contains: bool = False,
    cites: bool = False,
    citations: int = 1,
    unverified: int = 0,
    ms: float = 10.0,
) -> AnswerOutcome:
    return AnswerOutcome(
        qid,
        refused,
        "evidence" if refused else None,
        contains,
        1.0 if contains else 0.0,
        cites,
        0 if refused else citations,
        unverified,
        0 if refused else 10,
        ms,
    )


def test_summarize_denominators() -> None:
    outs = [
        outcome("a", contains=True, cites=True, citations=2, unverified=1, ms=10),
        outcome("b", contains=False, cites=True, citations=2, ms=20),
        outcome("c", refused=True, ms=30),
        outcome("d", contains=True, cites=False, ms=40),
    ]
    s = summarize(outs)
    assert s["n"] == 4
    assert s["answered"] == 0.75
    assert s["contains_gold"] == round(2 / 3, 4)  # over answered
    assert s["contains_gold_all"] == 0.5  # over all
    assert s["cites_gold"] == round(2 / 3, 4)
    assert s["unverified_citations"] == 0.2  # 1 of 5 citations
    assert s["unverified_claims"] == 0.0  # no claim check (extractive)
    # review 47: an LLM answer's sentences without a marker, backed by no source, count
    checked = [replace(o, claims=4, unverified_claims=3) for o in outs[:2]]
    assert summarize(checked)["unverified_claims"] == 0.75
    assert s["answer_words"] == 10.0
    assert s["latency_ms"] == {"p50": 25.0, "p95": 40.0}


def test_refusal_scores() -> None:
    r = refusal_scores(
        present_refused=[False, True, False, False], absent_refused=[True, True, False, True]
    )
    assert (r["absent_refused"], r["present_refused"], r["n_absent"]) == (3, 1, 4)
    assert r["refusal_precision"] == 0.75 and r["refusal_recall"] == 0.75
    assert r["refusal_f1"] == 0.75
    # nothing to count is "—", not a score of 0 (a run that refused nothing printed refusal
    # P 0.0000, read as "every refusal wrong")
    empty = refusal_scores([], [])
    assert empty["refusal_f1"] is None and empty["refusal_precision"] is None
    none_refused = refusal_scores([False, False], [False, False])
    assert none_refused["refusal_precision"] is None
    assert none_refused["refusal_recall"] == 0.0 and none_refused["refusal_f1"] == 0.0
    m = AnswerReport("d", "e", "extractive", 10, outcomes=[outcome("a")], absent=[outcome("a")])
    row = answer_markdown(m.to_json()).splitlines()[-1].split(" | ")
    head = answer_markdown(m.to_json()).splitlines()[0].split(" | ")
    assert row[head.index("refusal P")] == "—" and row[head.index("refusal R")] == "0.0000"


def test_report_metrics_pair_absent_with_present() -> None:
    report = AnswerReport(
        "d",
        "e",
        "extractive",
        10,
        outcomes=[outcome("a"), outcome("b", refused=True), outcome("c")],
        absent=[outcome("a", refused=True), outcome("b", refused=True)],
    )
    m = report.metrics()
    assert m["false_refusal_rate"] == round(1 / 3, 4)
    # positives: a, b absent (both refused); negatives: a, b present (b refused)
    assert m["refusal_precision"] == round(2 / 3, 4) and m["refusal_recall"] == 1.0
    data = report.to_json()
    assert data["n_questions"] == 3 and data["n_absent"] == 2
    table = answer_markdown(data)
    assert table.count("\n") == 2 and "| extractive | 3 |" in table


def cases(n: int) -> list[AnswerCase]:
    return [AnswerCase(f"q{i:02d}", "?", ("x",), frozenset({f"d{i}"})) for i in range(n)]


def test_absent_subset_is_seeded_and_ordered() -> None:
    pool = cases(20)
    first = absent_subset(pool, fraction=0.5, seed=3)
    assert len(first) == 10
    assert first == absent_subset(pool, fraction=0.5, seed=3)
    assert [c.qid for c in first] == sorted(c.qid for c in first)
    assert first != absent_subset(pool, fraction=0.5, seed=4)
    assert absent_subset(pool, fraction=0.0, seed=0) == []
    no_gold = [AnswerCase("z", "?", ("x",), frozenset())]
    assert absent_subset(no_gold, fraction=1.0, seed=0) == []
    with pytest.raises(ValueError, match="outside"):
        absent_subset(pool, fraction=1.5, seed=0)


class FakeChecker:
    """Supports a claim when the passage contains it verbatim."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def features(self, claims: Sequence[str], passages: Sequence[str], **_: Any) -> list[Support]:
        self.calls.append((list(claims), list(passages)))
        return [
            Support(c.rstrip(".") in p, 1.0, 1.0, 1.0, (), (0, 0))
            for c, p in zip(claims, passages, strict=True)
        ]


def test_unverified_citations_checks_unchecked_answers() -> None:
    a = answer(
        "Se jugó en Santa Clara. [1] Ganaron los Broncos. [2]",
        [citation(1, "0-1"), citation(2, "0-2")],
    )
    texts = {"c1": "Se jugó en Santa Clara, California.", "c2": "Perdieron los Panthers."}
    checker = FakeChecker()
    got = unverified_citations(a, checker, lambda ids: {i: texts[i] for i in ids})  # type: ignore[arg-type]
    assert got == 1
    assert checker.calls[0][0] == ["Se jugó en Santa Clara.", "Ganaron los Broncos."]


def test_unverified_citations_trusts_a_checked_answer() -> None:
    a = answer(
        "x [1] y [2]",
        [citation(1, "a", support=0.9), citation(2, "b", support=0.1, verified=False)],
    )
    checker = FakeChecker()
    assert unverified_citations(a, checker, lambda ids: {}) == 1  # type: ignore[arg-type]
    assert checker.calls == []
    assert unverified_citations(answer("no", []), checker, lambda ids: {}) == 0  # type: ignore[arg-type]


def test_gate_directions_and_answerer() -> None:
    report = {
        "answerer": "extractive",
        "metrics": {"contains_gold": 0.70, "false_refusal_rate": 0.20, "unverified_citations": 0.0},
    }
    base = {
        "answerer": "extractive",
        "metrics": {
            "contains_gold": 0.70,
            "false_refusal_rate": 0.20,
            "unverified_citations": 0.0,
            "answer_words": 99,
        },
    }
    assert gate(report, base, tolerance=0.01) == []
    worse = {
        "answerer": "extractive",
        "metrics": {"contains_gold": 0.68, "false_refusal_rate": 0.22, "unverified_citations": 0.0},
    }
    failures = gate(worse, base, tolerance=0.01)
    assert any(f.startswith("contains_gold") for f in failures)
    assert any(f.startswith("false_refusal_rate") for f in failures)
    assert len(failures) == 2  # answer_words is not gated
    assert any("answerer" in f for f in gate({**report, "answerer": "qwen"}, base, tolerance=0.01))
    missing = gate({"answerer": "extractive", "metrics": {}}, base, tolerance=0.01)
    assert any("missing" in f for f in missing)
    # review 47: fewer questions scored (a document left the index) is a failure
    counted = {**base, "n_questions": 100}
    assert gate({**report, "n_questions": 100}, counted, tolerance=0.01) == []
    (fewer,) = gate({**report, "n_questions": 99}, counted, tolerance=0.01)
    assert "99 questions scored, the baseline's 100" in fewer
    # a metric the run could not define (nothing refused: no refusal precision) says so
    undefined = gate(
        {**report, "metrics": {**report["metrics"], "refusal_precision": None}},
        {**base, "metrics": {**base["metrics"], "refusal_precision": 0.5}},
        tolerance=0.01,
    )
    assert undefined == [
        "refusal_precision: undefined in this run (nothing refused, or no absent questions; "
        "baseline 0.5000)"
    ]


def test_marker_claims_split_at_markers() -> None:
    from ragstrata.eval.answers import marker_claims

    assert marker_claims("A uno. [1] Dos: [2][3] tres [Source 4] sin cita") == [
        ("A uno.", (1,)),
        ("Dos:", (2, 3)),
        ("tres", (4,)),
    ]
    assert marker_claims("[1] nada") == []
    # an announced block, shown verbatim after its quote's marker, is no part of the next
    # claim (the next quote was checked against the block too and counted unverified)
    fence = "```bash\nrs ingest docs\n```"
    assert marker_claims(f"Así: [1]\n\n{fence}\n\nOtra frase. [2]") == [
        ("Así:", (1,)),
        ("Otra frase.", (2,)),
    ]
    assert marker_claims("Lista: [1]\n\n- a\n- b\n\n2. Paso dos. [2]")[1] == ("2. Paso dos.", (2,))
    assert marker_claims("Pasos: [1]\n\n1. a\n2. b\n\nOtra. [2]")[1] == ("Otra.", (2,))
    assert marker_claims("sin marcas") == []


def test_answer_in_hits_tells_whether_retrieval_found_a_gold_answer() -> None:
    from dataclasses import replace

    from ragstrata.testing.fakes import make_hit

    refused = answer("No lo sé.", [], refusal=True)
    found = replace(refused, hits=(make_hit("0-7", "El partido se jugó en el Estadio de Levi's."),))
    missed = replace(refused, hits=(make_hit("0-8", "Otro párrafo del mismo artículo."),))
    assert score_answer(found, CASE, unverified=0, latency_ms=1.0).answer_in_hits
    assert not score_answer(missed, CASE, unverified=0, latency_ms=1.0).answer_in_hits
    assert not score_answer(refused, CASE, unverified=0, latency_ms=1.0).answer_in_hits


def test_strict_refusal_scores_leave_out_absent_questions_whose_answer_was_retrieved() -> None:
    from dataclasses import replace

    report = AnswerReport(
        "d",
        "e",
        "extractive",
        10,
        outcomes=[outcome("a"), outcome("b"), outcome("c", refused=True)],
        absent=[
            outcome("a", refused=True),
            replace(outcome("b"), answer_in_hits=True),  # answered from another paragraph
            outcome("c", refused=True),
        ],
    )
    m = report.metrics()
    assert m["refusal_recall"] == round(2 / 3, 4) and m["n_absent"] == 3
    assert m["strict_n_absent"] == 2 and m["strict_refusal_recall"] == 1.0
    assert m["strict_refusal_precision"] == round(2 / 3, 4)  # c is refused on the full index too
    assert "refusal F1, answer not retrieved" in answer_markdown(report.to_json())


def test_score_answer_records_the_evidence_margin() -> None:
    from dataclasses import replace

    from ragstrata.types import Evidence, EvidenceCheck

    check = EvidenceCheck(Evidence(0.8, 0.5, 0.31, model="m"), 0.27, None)
    o = score_answer(replace(answer("x", []), evidence=check), CASE, unverified=0, latency_ms=1)
    assert o.evidence_margin == pytest.approx(0.04)
    assert o.to_json()["evidence_margin"] == 0.04
    assert score_answer(answer("x", []), CASE, unverified=0, latency_ms=1).evidence_margin is None


def test_evidence_curve_on_separated_mixed_and_equal_margins() -> None:
    from ragstrata.eval.answers import evidence_curve

    separated = evidence_curve([0.1, 0.2, 0.3, 0.4], [-0.3, -0.2, -0.1, None])
    assert separated["evidence_auc"] == 1.0
    assert separated["evidence_recall_at_frr_0.05"] == 1.0
    assert separated["evidence_frr_at_recall_0.85"] == 0.0
    same = evidence_curve([0.0, 0.0], [0.0, 0.0])
    assert same["evidence_auc"] == 0.5
    assert same["evidence_recall_at_frr_0.15"] == 0.0  # any cut that refuses one refuses all
    assert same["evidence_frr_at_recall_0.85"] == 1.0
    # 10 answerable, 10 absent (-0.1 ... -1.0): one answerable margin, -0.35, among the absent
    present = [-0.35, *(0.1 * i for i in range(1, 10))]
    absent = [-0.1 * i for i in range(1, 11)]
    mixed = evidence_curve(present, absent)
    assert mixed["evidence_auc"] == 0.97  # -0.35 is above 7 of the 10 absent margins
    assert mixed["evidence_recall_at_frr_0.05"] == 0.7  # no answerable refused: cut at -0.35
    assert mixed["evidence_recall_at_frr_0.10"] == 1.0  # refusing -0.35 refuses every absent
    assert mixed["evidence_frr_at_recall_0.85"] == 0.1
    assert evidence_curve([], [0.1]) == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1, 1), min_size=1, max_size=20),
    st.lists(st.floats(-1, 1), min_size=1, max_size=20),
)
def test_evidence_curve_invariants(present: list[float], absent: list[float]) -> None:
    from ragstrata.eval.answers import evidence_curve

    c = evidence_curve(present, absent)
    assert 0.0 <= c["evidence_auc"] <= 1.0
    # swapping the roles mirrors the AUC
    assert evidence_curve(absent, present)["evidence_auc"] == pytest.approx(
        1.0 - c["evidence_auc"], abs=2e-4
    )
    recalls = [c[f"evidence_recall_at_frr_{cap:.2f}"] for cap in (0.05, 0.10, 0.15)]
    assert recalls == sorted(recalls)  # a looser cap never lowers the recall
    # a monotone rescaling of the margins (exact in floating point) changes nothing
    assert evidence_curve([2 * v for v in present], [2 * v for v in absent]) == c


def test_report_metrics_carry_the_evidence_curve() -> None:
    from dataclasses import replace

    report = AnswerReport(
        "d",
        "e",
        "extractive",
        10,
        outcomes=[
            replace(outcome("a"), evidence_margin=0.2),
            replace(outcome("b"), evidence_margin=0.1),
        ],
        absent=[
            replace(outcome("a", refused=True), evidence_margin=-0.2),
            replace(outcome("b"), evidence_margin=0.15),
        ],
    )
    m = report.metrics()
    assert m["evidence_auc"] == 0.75 and m["evidence_recall_at_frr_0.05"] == 0.5


def test_gate_holds_the_evidence_auc() -> None:
    base = {"answerer": "extractive", "metrics": {"evidence_auc": 0.92}}
    ok = {"answerer": "extractive", "metrics": {"evidence_auc": 0.91}}
    worse = {"answerer": "extractive", "metrics": {"evidence_auc": 0.88}}
    assert gate(ok, base, tolerance=0.02) == []
    assert gate(worse, base, tolerance=0.02)[0].startswith("evidence_auc")
