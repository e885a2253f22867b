"""The answer stage: an :class:`Answerer` turns a question and its retrieved hits into a cited
answer (or a refusal), as a stream of events.

Two implementations: :class:`~ragstrata.generate.extractive.ExtractiveAnswerer` (quotes
sentences, offline, the default) and :class:`~ragstrata.generate.answer.LLMAnswerer` (a
:class:`~ragstrata.generate.base.ChatModel` writes the answer, its citations are verified).
:class:`TokenEvent` carries answer text as it is written; the last event is always one
:class:`AnswerEvent` with the final answer. :func:`answer_from_events` folds a stream into its
answer; :func:`refusal` is the one place a refusal :class:`~ragstrata.types.Answer` is built.
The contract every answerer keeps is checked by
:class:`ragstrata.testing.answerer.AnswererContract`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragstrata.generate.prompt import refusal_message
from ragstrata.types import (
    Answer,
    EvidenceCheck,
    Generation,
    Hit,
    RefusalReason,
    VersionConflict,
)


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """A piece of the answer as it is written."""

    text: str


@dataclass(frozen=True, slots=True)
class AnswerEvent:
    """The final answer (always the last event)."""

    answer: Answer


AskEvent = TokenEvent | AnswerEvent


@runtime_checkable
class Answerer(Protocol):
    """Question + retrieved hits -> answer events.

    ``stream`` yields :class:`TokenEvent` pieces and ends with exactly one :class:`AnswerEvent`;
    the pieces concatenate to the text as it was written (the answer's text; an LLM's raw text,
    whose citation markers the final answer may renumber; a refusal streams its text or
    nothing); every citation of the answer comes from one of ``hits``; with no hit it refuses
    (``refused_by="evidence"``) without writing anything. ``timings`` (stage -> ms measured
    before, e.g. the search's) are copied into the answer's ``timings_ms``, whose ``total``
    counts from ``started`` (a :func:`time.perf_counter` value; default: now).
    """

    @property
    def name(self) -> str:
        """``extractive`` or the chat model's ``provider:model`` (``Answer.generator``)."""
        ...

    def stream(
        self,
        question: str,
        hits: Sequence[Hit],
        *,
        timings: Mapping[str, float] | None = None,
        started: float | None = None,
    ) -> Iterator[AskEvent]: ...


def answer_from_events(events: Iterator[AskEvent]) -> Answer:
    """The final answer of an event stream (tokens are discarded)."""
    final: Answer | None = None
    for event in events:
        if isinstance(event, AnswerEvent):
            final = event.answer
    if final is None:  # pragma: no cover - every stream ends with an AnswerEvent
        raise RuntimeError("the answer stream ended without an answer")
    return final


def word_tokens(text: str) -> Iterator[TokenEvent]:
    """``text`` as word tokens (each with its trailing whitespace): how an answer that was not
    written piece by piece (extractive, a refusal) is streamed."""
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield TokenEvent(piece)


def refusal(
    question: str,
    reason: RefusalReason,
    *,
    timings: MutableMapping[str, float],
    started: float | None = None,
    generator: str = "extractive",
    usage: Mapping[str, int] | None = None,
    evidence: EvidenceCheck | None = None,
    conflicts: Sequence[VersionConflict] = (),
    hits: Sequence[Hit] = (),
    generation: Generation | None = None,
) -> Answer:
    """The refusal answer: the refusal sentence in the question's language, no citations,
    ``refused_by=reason``; ``timings["total"]`` is set from ``started`` (``None``: 0 ms)."""
    timings["total"] = (time.perf_counter() - started) * 1000 if started is not None else 0.0
    return Answer(
        question=question,
        text=refusal_message(question),
        refusal=True,
        citations=(),
        legend=(),
        timings_ms=timings,
        usage=dict(usage or {}),
        generator=generator,
        refused_by=reason,
        evidence=evidence,
        conflicts=tuple(conflicts),
        hits=tuple(hits),
        generation=generation,
    )
