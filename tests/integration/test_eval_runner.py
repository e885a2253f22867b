"""The evaluation runner on a real SciFact subset, real model and real index; the CI gate
must fail on a deliberately worse configuration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragstrata.config import RagConfig
from ragstrata.eval.datasets import EvalDataset, load_beir
from ragstrata.eval.runner import compare, gate, markdown_table, run_ablation
from ragstrata.pipeline import Ragstrata

pytestmark = [pytest.mark.slow, pytest.mark.shared]


@pytest.fixture(scope="module")
def subset(shared_corpus: Callable[[str], Path]) -> EvalDataset:
    full = load_beir(shared_corpus("beir-scifact"), split="test")
    qids = sorted(full.qrels)[:40]
    relevant = {d for q in qids for d in full.qrels[q]}
    keep = relevant | set(sorted(full.corpus)[:250])
    return EvalDataset(
        name="scifact-subset",
        corpus={d: full.corpus[d] for d in keep if d in full.corpus},
        queries={q: full.queries[q] for q in qids},
        qrels={q: full.qrels[q] for q in qids},
    )


@pytest.fixture(scope="module")
def reports(
    subset: EvalDataset, minilm: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    home = tmp_path_factory.mktemp("eval")
    engine = Ragstrata(RagConfig(home=home), embedder=minilm)
    good = run_ablation(engine, subset, modes=("bm25", "hybrid"), depth=100)
    worse = run_ablation(engine, subset, modes=("bm25", "hybrid"), depth=1)
    engine.close()
    return {"good": good.to_json(), "worse": worse.to_json()}


def test_report_shape_and_sanity(reports: dict[str, dict[str, Any]], subset: EvalDataset) -> None:
    good = reports["good"]
    assert good["n_queries"] == len(subset.qrels)
    assert good["n_docs"] == len(subset.corpus)
    for mode in ("bm25", "hybrid"):
        entry = good["modes"][mode]
        assert 0.3 < entry["ndcg@10"] <= 1.0
        assert entry["recall@100"] >= entry["recall@10"]
        assert entry["latency_ms"]["total"]["p95"] >= entry["latency_ms"]["total"]["p50"] > 0
        assert set(entry["per_query"]) == set(subset.qrels)
    table = markdown_table(good)
    assert table.count("\n") == 3 and "| hybrid |" in table


def test_gate_passes_on_itself_and_fails_on_a_worse_configuration(
    reports: dict[str, dict[str, Any]],
) -> None:
    good, worse = reports["good"], reports["worse"]
    baseline = {
        "modes": {m: {k: v for k, v in e.items() if "@" in k} for m, e in good["modes"].items()}
    }
    assert gate(good, baseline, tolerance=0.01) == []
    failures = gate(worse, baseline, tolerance=0.01)
    assert any("recall@100" in f for f in failures)
    assert any(f.startswith("hybrid") for f in failures)


def test_compare_reports_deltas_with_p_values(reports: dict[str, dict[str, Any]]) -> None:
    text = compare(reports["worse"], reports["good"])
    row = next(line for line in text.splitlines() if line.startswith("| hybrid | recall@100 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[4]) < 0  # delta
    assert 0.0 < float(cells[5]) < 0.05  # significant drop
