"""The :class:`~ragstrata.testing.reranker.RerankerContract` suite on the shipped
cross-encoder implementation, :class:`CrossEncoderReranker`: on a tiny random cross-encoder
through both backends (torch folder, fp32 ONNX export; built once per session by
tests/conftest.py) and on the shipped int8 ONNX model."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import RerankConfig
from ragstrata.rerank import Reranker
from ragstrata.rerank.cross_encoder import CrossEncoderReranker
from ragstrata.testing.reranker import RerankerContract

SHIPPED = RerankConfig().model_path


class TestTorchBackend(RerankerContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tiny_cross_encoder: Path) -> None:
        self.folder = tiny_cross_encoder

    def make_reranker(self, **options: int) -> Reranker:
        return CrossEncoderReranker(self.folder, backend="torch", **options)  # type: ignore[arg-type]


class TestOnnxBackend(RerankerContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tiny_onnx: Path) -> None:
        self.folder = tiny_onnx

    def make_reranker(self, **options: int) -> Reranker:
        return CrossEncoderReranker(self.folder, **options)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED.is_dir(), reason="no reranker model shipped")
class TestShippedInt8Model(RerankerContract):
    """int8 quantizes activations with one scale per pass: batched, a pair's logit moved with
    the batch's other pairs (up to 0.17 between batch sizes 1 and 64 on the suite's passages),
    so the reranker runs one pair per pass and scores are bit-identical in any batch."""

    score_tolerance = 0.0

    def make_reranker(self, **options: int) -> Reranker:
        pytest.importorskip("onnxruntime")
        return CrossEncoderReranker(SHIPPED, threads=1, **options)  # type: ignore[arg-type]
