"""The grounded LLM answer, step by step, as a stream of events.

retrieved hits → version conflicts resolved (newest wins) → evidence score (refuse under the
threshold, before any LLM call) → context (parent sections, generator-token budget, strongest
sources first and last) → prompt → LLM tokens (streamed) → refusal detection → citations parsed,
renumbered and verified → :class:`~ragstrata.types.Answer`.

:class:`TokenEvent` carries answer text as the model writes it (raw: markers as the model wrote
them); the last event is always one :class:`AnswerEvent` with the final, rewritten answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ragstrata.assemble.context import ParentLookup, assemble, conflicts_json, resolve_versions
from ragstrata.config import LLMConfig
from ragstrata.generate.base import Generator, Usage
from ragstrata.generate.citations import CitationChecker, ground
from ragstrata.generate.evidence import check_evidence
from ragstrata.generate.prompt import build_messages, is_refusal, refusal_message, render_sources
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Answer, Hit, RefusalReason

PROMPT_OVERHEAD_TOKENS = 450
"""Tokens reserved for the rules, tags, legend and question around the sources."""


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """A piece of the answer as the model writes it."""

    text: str


@dataclass(frozen=True, slots=True)
class AnswerEvent:
    """The final answer (always the last event)."""

    answer: Answer


AskEvent = TokenEvent | AnswerEvent


def answer_from_events(events: Iterator[AskEvent]) -> Answer:
    """The final answer of an event stream (tokens are discarded)."""
    final: Answer | None = None
    for event in events:
        if isinstance(event, AnswerEvent):
            final = event.answer
    if final is None:  # pragma: no cover - every stream ends with an AnswerEvent
        raise RuntimeError("the answer stream ended without an answer")
    return final


class LLMAnswerer:
    """Runs the steps above for one question over already retrieved hits.

    ``min_evidence``: refusal threshold of
    :func:`~ragstrata.generate.evidence.check_evidence` (the extractive answerer's too);
    ``checker``: citation verifier (``None`` skips verification); ``parents``: parent section
    lookup for context expansion (``None``: no expansion).
    """

    def __init__(
        self,
        generator: Generator,
        analyzer: Analyzer,
        config: LLMConfig,
        *,
        min_evidence: float,
        checker: CitationChecker | None,
        display_source: Callable[[str], str] = str,
    ) -> None:
        self.generator = generator
        self.analyzer = analyzer
        self.config = config
        self.min_evidence = min_evidence
        self.checker = checker
        self.display_source = display_source

    def budget(self) -> int:
        """Source tokens: ``llm.context_tokens``, capped so that prompt + answer fit the
        model's window."""
        room = self.generator.context_window - self.config.max_tokens - PROMPT_OVERHEAD_TOKENS
        return max(64, min(self.config.context_tokens, room))

    def stream(
        self,
        question: str,
        hits: Sequence[Hit],
        *,
        timings: dict[str, float],
        started: float,
        parents: ParentLookup | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Iterator[AskEvent]:
        meta: dict[str, Any] = dict(metadata or {})
        kept, conflicts = resolve_versions(hits)
        if conflicts:
            meta["conflict"] = conflicts_json(conflicts)
        check = check_evidence(question, kept, self.analyzer, min_evidence=self.min_evidence)
        meta.update(check.metadata())
        refusal = refusal_message(question)

        def finish(answer: Answer) -> AnswerEvent:
            timings["total"] = (time.perf_counter() - started) * 1000
            return AnswerEvent(answer)

        name = self.generator.name

        def refuse(reason: RefusalReason, used: dict[str, int]) -> AnswerEvent:
            meta["refused_by"] = reason
            return finish(
                Answer(
                    question,
                    refusal,
                    True,
                    (),
                    (),
                    timings,
                    used,
                    name,
                    bool(conflicts),
                    meta,
                    refused_by=reason,
                )
            )

        if check.refused_by is not None:
            yield refuse(check.refused_by, {})
            return
        t = time.perf_counter()
        context = assemble(
            kept,
            counter=self.generator.counter,
            budget_tokens=self.budget(),
            display_source=self.display_source,
            parents=parents,
            parent_tokens=self.config.parent_tokens,
            order="edges",
            render=lambda ctx: render_sources(ctx, self.display_source),
        )
        messages = build_messages(question, context, display_source=self.display_source)
        timings["assemble"] = (time.perf_counter() - t) * 1000
        meta["context_tokens"] = context.tokens
        t = time.perf_counter()
        parts: list[str] = []
        usage = Usage(0, 0)
        first_token: float | None = None
        for delta in self.generator.stream(messages):
            if delta.text:
                if first_token is None:
                    first_token = time.perf_counter()
                parts.append(delta.text)
                yield TokenEvent(delta.text)
            if delta.done:
                usage = delta.usage or usage
                meta["finish_reason"] = delta.finish_reason
        timings["generate"] = (time.perf_counter() - t) * 1000
        if first_token is not None:
            timings["first_token"] = (first_token - started) * 1000
        raw = "".join(parts).strip()
        if not raw or is_refusal(raw):
            yield refuse("llm", usage.to_json())
            return
        t = time.perf_counter()
        checker = self.checker if self.config.verify_citations else None
        grounded = ground(raw, context, checker, unsupported=self.config.unsupported)  # type: ignore[arg-type]
        timings["verify"] = (time.perf_counter() - t) * 1000
        meta.update(grounded.diagnostics)
        meta["raw_answer"] = raw
        if not grounded.citations or (checker is not None and not meta["verified_claims"]):
            # nothing in the answer is backed by a source: ungrounded (or a document's
            # injected instruction was obeyed); never shown as an answer
            reason: RefusalReason = "no_citations" if not grounded.citations else "unsupported"
            yield refuse(reason, usage.to_json())
            return
        yield finish(
            Answer(
                question,
                grounded.text,
                False,
                grounded.citations,
                grounded.legend,
                timings,
                usage.to_json(),
                name,
                bool(conflicts),
                meta,
            )
        )
