"""Pure report helpers of the evaluation runner: gate, compare, markdown table."""

from __future__ import annotations

from typing import Any

from ragstrata.eval.runner import compare, gate, markdown_table


def report(ndcg: float, per_query: dict[str, float]) -> dict[str, Any]:
    return {
        "modes": {
            "hybrid": {
                "ndcg@10": ndcg,
                "latency_ms": {"total": {"p50": 12.0, "p95": 30.0}},
                "per_query": {q: {"ndcg@10": v} for q, v in per_query.items()},
            }
        }
    }


def test_gate_tolerance_is_absolute_and_inclusive() -> None:
    baseline = {"modes": {"hybrid": {"ndcg@10": 0.70}}}
    assert gate(report(0.69, {}), baseline, tolerance=0.01) == []
    failures = gate(report(0.6899, {}), baseline, tolerance=0.01)
    assert len(failures) == 1 and "hybrid ndcg@10" in failures[0]


def test_gate_flags_missing_modes_and_metrics() -> None:
    baseline = {"modes": {"bm25": {"recall@100": 0.9}, "hybrid": {"mrr@10": 0.5}}}
    failures = gate(report(0.9, {}), baseline, tolerance=0.5)
    assert sorted(f.split(":")[0] for f in failures) == ["bm25 recall@100", "hybrid mrr@10"]


def test_compare_p_value_detects_a_consistent_drop() -> None:
    old = report(0.8, {f"q{i}": 0.8 for i in range(30)})
    new = report(0.5, {f"q{i}": 0.5 for i in range(30)})
    same = report(0.8, {f"q{i}": 0.8 for i in range(30)})
    drop = compare(new, old, metrics=["ndcg@10"]).splitlines()[-1]
    assert "-0.3000" in drop and float(drop.strip("|").split("|")[-1]) < 0.01
    tie = compare(same, old, metrics=["ndcg@10"]).splitlines()[-1]
    assert float(tie.strip("|").split("|")[-1]) == 1.0


def test_markdown_table_has_one_row_per_mode() -> None:
    table = markdown_table(report(0.71234, {}), metrics=["ndcg@10"])
    assert table.splitlines()[2] == "| hybrid | 0.7123 | 12.0 | 30.0 |"


def three_modes(bm25: float, dense: float, hybrid: float) -> dict[str, Any]:
    return {
        "modes": {
            m: {"ndcg@10": v} for m, v in (("bm25", bm25), ("dense", dense), ("hybrid", hybrid))
        }
    }


def test_gate_fusion_margin_checks_hybrid_against_its_best_arm() -> None:
    baseline: dict[str, Any] = {"modes": {}, "fusion_margin": 0.005}
    assert gate(three_modes(0.80, 0.70, 0.795), baseline, tolerance=0.0) == []
    failures = gate(three_modes(0.70, 0.80, 0.7949), baseline, tolerance=0.0)
    assert len(failures) == 1 and "best arm 0.8000" in failures[0]
    assert gate(three_modes(0.9, 0.9, 0.1), {"modes": {}}, tolerance=0.0) == []  # no margin
    missing = gate({"modes": {"hybrid": {"ndcg@10": 1.0}}}, baseline, tolerance=0.0)
    assert missing and "missing: bm25, dense" in missing[0]


def test_gate_fails_when_fewer_queries_were_scored_than_the_baselines() -> None:
    """Review 47: a golden query whose expected document left the index is not scored, and
    the gate passed on the remaining queries."""
    baseline = {"n_queries": 2, "modes": {"hybrid": {"ndcg@10": 0.70}}}
    full = report(0.9, {}) | {"n_queries": 2, "skipped_queries": 0}
    assert gate(full, baseline, tolerance=0.01) == []
    lost = report(0.9, {}) | {"n_queries": 1, "skipped_queries": 1}
    (failure,) = gate(lost, baseline, tolerance=0.01)
    assert "1 queries scored, the baseline's 2" in failure and "1 without" in failure
    # a baseline without n_queries checks the means only, as before
    assert gate(lost, {"modes": baseline["modes"]}, tolerance=0.01) == []


def test_every_shipped_retrieval_baseline_names_its_query_count() -> None:
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "eval" / "baselines"
    for path in sorted(root.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "modes" in data:  # retrieval baselines (answer baselines gate other metrics)
            assert isinstance(data.get("n_queries"), int), path.name
