"""The dataset readers on the shared corpora (counts published with the data, see SOURCE.md).

Uses the ``shared_corpus`` fixture of ``tests/conftest.py``: skipped when the shared data is
absent, failed instead when ``RAGSTRATA_REQUIRE_SHARED=1``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragstrata.eval import EvalDataset, evaluate, load_beir, load_squad

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def scifact_test(shared_corpus: Callable[[str], Path]) -> EvalDataset:
    return load_beir(shared_corpus("beir-scifact"), split="test")


def test_scifact_test_split(scifact_test: EvalDataset) -> None:
    ds = scifact_test
    assert len(ds.corpus) == 5_183
    assert len(ds.queries) == 300
    assert set(ds.queries) == set(ds.qrels)
    assert sum(len(judged) for judged in ds.qrels.values()) == 339
    assert all(grade == 1 for judged in ds.qrels.values() for grade in judged.values())
    assert all(doc_id in ds.corpus for judged in ds.qrels.values() for doc_id in judged)
    assert all(doc.text for doc in ds.corpus.values())


def test_scifact_train_split(shared_corpus: Callable[[str], Path]) -> None:
    ds = load_beir(shared_corpus("beir-scifact"), split="train")
    assert len(ds.queries) == 809
    assert sum(len(judged) for judged in ds.qrels.values()) == 919


def test_scifact_oracle_run_scores_one(scifact_test: EvalDataset) -> None:
    run = {qid: sorted(judged) for qid, judged in scifact_test.qrels.items()}
    result = evaluate(run, scifact_test.qrels, ["ndcg@10", "recall@100", "mrr@10"])
    assert result.n_queries == 300
    assert result.skipped_queries == ()
    assert result.means == {"ndcg@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}


def test_squad_es_v11(shared_corpus: Callable[[str], Path]) -> None:
    ds = load_squad(shared_corpus("squad-es-dev-small") / "dev-v1.1-es_small.json.gz")
    assert len(ds.corpus) == 1_996
    assert len(ds.queries) == 6_583
    assert len(ds.qrels) == 6_583
    assert ds.unanswerable == {}
    assert ds.corpus["0-0"].title == "Super Bowl _ 50"
    assert all(list(judged.values()) == [1] for judged in ds.qrels.values())


def test_squad_es_v20(shared_corpus: Callable[[str], Path]) -> None:
    ds = load_squad(shared_corpus("squad-es-dev-small") / "dev-v2.0-es_small.json.gz")
    assert len(ds.corpus) == 1_192
    assert len(ds.unanswerable) == 3_256
    assert len(ds.queries) == 7_134 - 3_256
    assert not set(ds.unanswerable) & set(ds.queries)
    assert all(doc_id in ds.corpus for judged in ds.qrels.values() for doc_id in judged)
