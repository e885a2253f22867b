"""Reranking wired into the pipeline and the eval runner: real store, real embedder, a tiny
random cross-encoder (so the test needs no trained weights)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragstrata.config import RagConfig, RerankConfig
from ragstrata.embed.local import MiniLMEmbedder
from ragstrata.eval.datasets import CorpusDoc, EvalDataset
from ragstrata.eval.runner import dataset_documents, run_ablation
from ragstrata.pipeline import Ragstrata
from ragstrata.render import diagnostics_json

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from ragstrata.training.export import export_onnx
    from ragstrata.training.reranker import base_model_dir

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-ce")
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    transformers.BertForSequenceClassification(config).eval().save_pretrained(str(folder))
    shutil.copy2(base_model_dir() / "tokenizer.json", folder / "tokenizer.json")
    export_onnx(folder, folder / "model.onnx")
    return folder


DATASET = EvalDataset(
    name="toy",
    corpus={
        f"d{i}": CorpusDoc(f"d{i}", f"Topic {i}", text)
        for i, text in enumerate(
            [
                "Scurvy is caused by a lack of vitamin C in the diet.",
                "Rickets is caused by a lack of vitamin D and sunlight.",
                "The Eiffel Tower is in Paris and was finished in 1889.",
                "Cats sleep for most of the day and hunt at night.",
                "Vitamin C is found in citrus fruit such as lemons and oranges.",
                "El escorbuto se debe a la falta de vitamina C.",
            ]
        )
    },
    queries={"q1": "what causes scurvy", "q2": "where is the Eiffel Tower"},
    qrels={"q1": {"d0": 1}, "q2": {"d2": 1}},
)


@pytest.fixture()
def engine(tmp_path: Path, minilm: MiniLMEmbedder, tiny_model: Path) -> Iterator[Ragstrata]:
    config = RagConfig(
        home=tmp_path / "home",
        rerank=RerankConfig(enabled=True, model=str(tiny_model), candidates=4, top_k=3),
    )
    eng = Ragstrata(config, embedder=minilm)
    eng.add_documents(dataset_documents(DATASET))
    yield eng
    eng.close()


def test_search_with_rerank_adds_explain_entries(engine: Ragstrata) -> None:
    plain = engine.search("what causes scurvy", rerank=False, top_k=6)
    result = engine.search("what causes scurvy")
    assert len(result.hits) == 3  # rerank.top_k
    assert "rerank" in result.timings_ms
    reranked_ids = {h.chunk.chunk_id for h in plain.hits[:4]}
    for rank, hit in enumerate(result.hits, start=1):
        assert hit.rank == rank
        entry = hit.explain[-1]
        assert entry.retriever == "rerank" and entry.rank == rank
        assert hit.score == entry.score
        assert hit.chunk.chunk_id in reranked_ids  # only the 4 candidates are reranked
        assert hit.retriever_score("dense") is not None or hit.retriever_score("bm25") is not None


def test_rerank_off_by_config_and_by_argument(engine: Ragstrata) -> None:
    assert all(
        h.retriever_score("rerank") is None for h in engine.search("scurvy", rerank=False).hits
    )
    engine.config = replace(engine.config, rerank=RerankConfig(enabled=False))
    assert all(h.retriever_score("rerank") is None for h in engine.search("scurvy").hits)


def test_ask_refuses_under_min_score(engine: Ragstrata, tiny_model: Path) -> None:
    # every document stays among the hits (the tiny model's order is arbitrary), so the
    # evidence is enough and only min_score can refuse
    every = RerankConfig(enabled=True, model=str(tiny_model), candidates=6, top_k=6)
    engine.config = replace(engine.config, rerank=every)
    assert not engine.ask("what causes scurvy").refusal
    engine.config = replace(engine.config, rerank=replace(every, min_score=1e9))
    answer = engine.ask("what causes scurvy")
    assert answer.refusal and diagnostics_json(answer)["refused_by"] == "rerank"


def test_hyde_waits_for_the_rerank_gate(
    engine: Ragstrata, tiny_model: Path, minilm: MiniLMEmbedder
) -> None:
    """Review 41: with ``llm.hyde`` the model wrote its hypothetical passage before the
    ``rerank.min_score`` gate, and the fused hits it gave carry no cross-encoder score, so the
    gate never refused."""
    from ragstrata.config import LLMConfig
    from ragstrata.testing.fakes import ScriptedChatModel

    every = RerankConfig(enabled=True, model=str(tiny_model), candidates=6, top_k=6, min_score=1e9)
    config = replace(engine.config, rerank=every, llm=LLMConfig(provider="local", hyde=True))
    model = ScriptedChatModel("Scurvy is a disease.", "Scurvy comes from a lack of vitamin C [1].")
    engine.close()  # one process opens the index once
    with Ragstrata(config, embedder=minilm, generator=model) as llm_engine:
        answer = llm_engine.ask("what causes scurvy")
    assert answer.refusal and diagnostics_json(answer)["refused_by"] == "rerank"
    assert model.calls == []


def test_missing_shipped_model_skips_reranking(
    engine: Ragstrata, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RerankConfig, "model_path", property(lambda self: tmp_path / "absent"))
    engine.config = replace(engine.config, rerank=RerankConfig(enabled=True))
    engine._reranker = None
    assert engine.reranker is None
    assert all(h.retriever_score("rerank") is None for h in engine.search("scurvy").hits)


def test_ablation_runs_hybrid_plus_rerank(engine: Ragstrata) -> None:
    report = run_ablation(engine, DATASET, modes=("hybrid", "hybrid+rerank"), depth=5)
    assert set(report.modes) == {"hybrid", "hybrid+rerank"}
    entry = report.modes["hybrid+rerank"]
    assert "rerank" in entry.latency_ms
    assert 0.0 <= entry.metrics["ndcg@10"] <= 1.0
    # hybrid alone never pays for the cross-encoder, even with reranking enabled
    assert "rerank" not in report.modes["hybrid"].latency_ms
