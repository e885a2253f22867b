"""Conformance suite of the chat model protocol, :class:`~ragstrata.generate.base.ChatModel`.

Subclass :class:`ChatModelContract` and implement ``make_chat_model()``. The suite calls it
once per generation it makes, so a scripted fake may be built fresh each time; a real model
returns one instance loaded once (a session fixture).

Promises checked: ``complete`` gives the same text as the joined ``stream`` for the same
messages (greedy or seeded sampling) and as a second ``complete``; a stream ends with exactly
one ``done`` delta, the last, carrying usage and a finish reason; usage counts prompt and
completion tokens; ``name`` is ``provider:model``, ``context_window`` a positive token count
and ``counter`` a :class:`~ragstrata.text.tokens.TokenCounter`. ragstrata's own chat
models are subclassed in ``tests/contract/test_chat_model_contract.py``.
"""

from __future__ import annotations

from ragstrata.generate.base import ChatMessage, ChatModel, Delta, collect
from ragstrata.text.tokens import TokenCounter

MESSAGES: tuple[ChatMessage, ...] = (
    ChatMessage("system", "Answer in one short sentence."),
    ChatMessage("user", "Question: What is the capital of France?"),
)
MAX_TOKENS = 24
"""Answer budget of every generation of the suite (keeps real models fast)."""


class ChatModelContract:
    """Tests every chat model must pass (see the module docstring)."""

    def make_chat_model(self) -> ChatModel:
        """The chat model under test (called once per generation)."""
        raise NotImplementedError("subclasses build the chat model under test")

    def stream(self) -> list[Delta]:
        return list(self.make_chat_model().stream(MESSAGES, max_tokens=MAX_TOKENS))

    def test_conforms_to_the_protocol(self) -> None:
        model = self.make_chat_model()
        assert isinstance(model, ChatModel)
        provider, _, name = model.name.partition(":")
        assert provider and name, f"name {model.name!r} is not provider:model"
        assert isinstance(model.context_window, int) and model.context_window > 0

    def test_counter_counts_tokens(self) -> None:
        counter = self.make_chat_model().counter
        assert isinstance(counter, TokenCounter)
        assert counter.count("") == 0
        assert counter.count(MESSAGES[1].content) > 0
        assert counter.count_many([m.content for m in MESSAGES]) == [
            counter.count(m.content) for m in MESSAGES
        ]

    def test_complete_equals_the_joined_stream(self) -> None:
        whole = self.make_chat_model().complete(MESSAGES, max_tokens=MAX_TOKENS)
        deltas = self.stream()
        assert whole.text == "".join(d.text for d in deltas)
        assert whole.text.strip()
        collected = collect(iter(deltas))
        assert (collected.text, collected.finish_reason) == (whole.text, whole.finish_reason)

    def test_complete_is_repeatable(self) -> None:
        first = self.make_chat_model().complete(MESSAGES, max_tokens=MAX_TOKENS)
        second = self.make_chat_model().complete(MESSAGES, max_tokens=MAX_TOKENS)
        assert first.text == second.text

    def test_stream_ends_with_exactly_one_done_delta(self) -> None:
        deltas = self.stream()
        assert deltas, "a stream yields at least its done delta"
        assert [d.done for d in deltas] == [False] * (len(deltas) - 1) + [True]
        last = deltas[-1]
        assert last.usage is not None and last.finish_reason

    def test_usage_counts_prompt_and_completion(self) -> None:
        whole = self.make_chat_model().complete(MESSAGES, max_tokens=MAX_TOKENS)
        done = self.stream()[-1]
        for usage in (whole.usage, done.usage):
            assert usage is not None
            assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
            assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
