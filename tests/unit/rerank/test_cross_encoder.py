"""CrossEncoderReranker beyond the Reranker contract (tests/contract/test_reranker_contract.py):
ONNX-vs-torch agreement, the int8 package, bad folders and the shipped model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragstrata.config import RerankConfig
from ragstrata.errors import ConfigError
from ragstrata.rerank import Reranker
from ragstrata.rerank.cross_encoder import META_FILE, CrossEncoderReranker
from ragstrata.stages import load_reranker
from ragstrata.testing.reranker import PASSAGES, QUERY


def test_auto_backend_prefers_onnx(tiny_cross_encoder: Path, tiny_onnx: Path) -> None:
    assert CrossEncoderReranker(tiny_cross_encoder).backend == "torch"
    assert CrossEncoderReranker(tiny_onnx).backend == "onnx"


def test_onnx_export_matches_torch(tiny_cross_encoder: Path, tiny_onnx: Path) -> None:
    torch_scores = CrossEncoderReranker(tiny_cross_encoder, backend="torch").score(QUERY, PASSAGES)
    onnx_scores = CrossEncoderReranker(tiny_onnx).score(QUERY, PASSAGES)
    np.testing.assert_allclose(onnx_scores.scores, torch_scores.scores, rtol=1e-4, atol=1e-4)


def test_int8_package_is_close_to_torch(tiny_cross_encoder: Path, tmp_path: Path) -> None:
    from ragstrata.training.export import package_model

    (tiny_cross_encoder / META_FILE).write_text(json.dumps({"max_length": 64}))
    try:
        package_model(tiny_cross_encoder, tmp_path, extra_meta={"retrieval_weight": 0.5})
    finally:
        (tiny_cross_encoder / META_FILE).unlink()
    int8 = CrossEncoderReranker(tmp_path)
    assert int8.max_length == 64 and int8.retrieval_weight == 0.5
    ref = CrossEncoderReranker(tiny_cross_encoder, backend="torch").score(QUERY, PASSAGES).scores
    got = int8.score(QUERY, PASSAGES).scores
    # a random tiny model has near-constant logits: check closeness, not rank correlation
    # (the shipped MiniLM model's int8-vs-torch agreement is measured in its model card)
    np.testing.assert_allclose(got, ref, atol=0.05)


def test_bad_folders_are_config_errors(tmp_path: Path, tiny_onnx: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        CrossEncoderReranker(tmp_path / "missing")
    with pytest.raises(ConfigError, match=r"tokenizer\.json"):
        CrossEncoderReranker(tmp_path)
    shutil.copy2(tiny_onnx / "tokenizer.json", tmp_path / "tokenizer.json")
    with pytest.raises(ConfigError, match="neither an ONNX export"):
        CrossEncoderReranker(tmp_path)
    with pytest.raises(ConfigError, match="no ONNX file"):
        CrossEncoderReranker(tmp_path, backend="onnx")
    with pytest.raises(ConfigError):
        CrossEncoderReranker(tiny_onnx, batch_size=0)
    with pytest.raises(ConfigError):
        CrossEncoderReranker(tiny_onnx, backend="tensorflow")  # type: ignore[arg-type]


SHIPPED = RerankConfig().model_path


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="no reranker model shipped")
def test_shipped_model_is_small_int8_onnx_with_a_card() -> None:
    onnx = SHIPPED / "model.int8.onnx"
    assert onnx.is_file() and onnx.stat().st_size <= 30_000_000
    assert (SHIPPED / "MODEL_CARD.md").is_file()
    reranker = load_reranker(SHIPPED)
    assert isinstance(reranker, Reranker)
    scores = reranker.score(
        "Vitamin C deficiency causes scurvy.",
        [
            "Scurvy is a disease resulting from a lack of vitamin C (ascorbic acid).",
            "The stock market fell sharply on Monday after the announcement.",
        ],
    ).scores
    assert scores[0] > scores[1]


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="no reranker model shipped")
def test_shipped_model_was_not_trained_on_scifact() -> None:
    # SciFact (CC BY-NC) is evaluation-only: never training data for a shipped model
    report = json.loads((SHIPPED / "train_report.json").read_text(encoding="utf-8"))
    assert "scifact" not in json.dumps(report).lower()
    assert "scifact" not in SHIPPED.name
    assert report["squad_groups"] > 0
    assert report["data"]["squad-es"].split(":")[0].endswith("--split train")
    assert set(report["groups_by_source"]) >= {"squad-es-train"}
