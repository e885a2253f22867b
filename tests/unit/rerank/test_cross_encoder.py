"""CrossEncoderReranker on both backends: one contract suite subclassed per backend, plus
ONNX-vs-torch agreement and the shipped model."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragstrata.config import RerankConfig
from ragstrata.errors import ConfigError, RetrievalError
from ragstrata.rerank import Reranker
from ragstrata.rerank.cross_encoder import META_FILE, CrossEncoderReranker
from ragstrata.stages import load_reranker

QUERY = "what causes scurvy in sailors"
PASSAGES = [
    "Scurvy is caused by a lack of vitamin C.",
    "Rickets follows vitamin D deficiency in children who see little sun.",
    "Paris is the capital of France.",
    "Long voyages without fresh fruit left sailors with bleeding gums, loose teeth and "
    "wounds that would not heal, until lemon juice became part of the daily ration.",
    "x",
    "El escorbuto se debe a la falta de vitamina C.",
    "Cats sleep most of the day.",
]


class RerankerContract:
    """What every Reranker must do; subclasses provide ``make(**kwargs)``."""

    def make(self, **kwargs: object) -> CrossEncoderReranker:
        raise NotImplementedError

    def test_conforms_to_the_protocol(self) -> None:
        reranker = self.make()
        assert isinstance(reranker, Reranker)
        assert reranker.max_length >= 8 and reranker.name

    def test_scores_align_with_shuffled_inputs(self) -> None:
        reranker = self.make(batch_size=2)  # several length-sorted batches
        base = reranker.score(QUERY, PASSAGES).scores
        assert base.shape == (len(PASSAGES),) and base.dtype == np.float32
        rng = random.Random(3)
        for _ in range(3):
            order = list(range(len(PASSAGES)))
            rng.shuffle(order)
            shuffled = reranker.score(QUERY, [PASSAGES[i] for i in order]).scores
            np.testing.assert_allclose(shuffled, base[order], rtol=1e-4, atol=1e-4)

    def test_batch_size_does_not_change_scores(self) -> None:
        one = self.make(batch_size=1).score(QUERY, PASSAGES).scores
        many = self.make(batch_size=64).score(QUERY, PASSAGES).scores
        np.testing.assert_allclose(one, many, rtol=1e-3, atol=1e-3)

    def test_truncation_is_counted(self) -> None:
        reranker = self.make(max_length=24)
        long = " ".join(["vitamin"] * 60)
        result = reranker.score(QUERY, [long, "short", long])
        assert result.truncated == 2
        assert np.isfinite(result.scores).all()
        assert self.make().score(QUERY, ["short"]).truncated == 0

    def test_empty_inputs(self) -> None:
        reranker = self.make()
        result = reranker.score(QUERY, [])
        assert result.scores.shape == (0,) and result.truncated == 0
        with pytest.raises(RetrievalError):
            reranker.score("  ", PASSAGES)


class TestTorchBackend(RerankerContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tiny_cross_encoder: Path) -> None:
        self.folder = tiny_cross_encoder

    def make(self, **kwargs: object) -> CrossEncoderReranker:
        return CrossEncoderReranker(self.folder, backend="torch", **kwargs)  # type: ignore[arg-type]

    def test_auto_picks_torch_without_onnx(self) -> None:
        assert CrossEncoderReranker(self.folder).backend == "torch"


class TestOnnxBackend(RerankerContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tiny_onnx: Path) -> None:
        self.folder = tiny_onnx

    def make(self, **kwargs: object) -> CrossEncoderReranker:
        return CrossEncoderReranker(self.folder, **kwargs)  # type: ignore[arg-type]

    def test_auto_picks_onnx(self) -> None:
        assert self.make().backend == "onnx"


def test_onnx_export_matches_torch(tiny_cross_encoder: Path, tiny_onnx: Path) -> None:
    torch_scores = CrossEncoderReranker(tiny_cross_encoder, backend="torch").score(QUERY, PASSAGES)
    onnx_scores = CrossEncoderReranker(tiny_onnx).score(QUERY, PASSAGES)
    np.testing.assert_allclose(onnx_scores.scores, torch_scores.scores, rtol=1e-4, atol=1e-4)


def test_int8_package_is_close_to_torch(tiny_cross_encoder: Path, tmp_path: Path) -> None:
    from ragstrata.training.reranker import package_model

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
