"""The grounded LLM answer, step by step, as a stream of events.

retrieved hits → version conflicts resolved (newest wins) → evidence score (refuse under the
threshold, before any LLM call) → context (parent sections, generator-token budget, strongest
sources first and last) → prompt → LLM tokens (streamed) → refusal detection → citations parsed,
renumbered and verified → :class:`~ragstrata.types.Answer`.

:class:`~ragstrata.generate.answerer.TokenEvent` carries answer text as the model writes it
(raw: markers as the model wrote them); the last event is always one
:class:`~ragstrata.generate.answerer.AnswerEvent` with the final, rewritten answer.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence

from ragstrata.assemble.context import Context, ParentLookup, assemble, resolve_versions
from ragstrata.config import LLMConfig
from ragstrata.errors import GenerationError
from ragstrata.generate.answerer import AnswerEvent, AskEvent, TokenEvent, refusal
from ragstrata.generate.base import ChatMessage, ChatModel, Delta, Usage
from ragstrata.generate.citations import CitationChecker, complete_sentences, ground
from ragstrata.generate.evidence import EvidenceRule, check_evidence
from ragstrata.generate.prompt import build_messages, is_refusal, render_sources
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import (
    Answer,
    Chunk,
    Citation,
    DecodeStats,
    Generation,
    Hit,
    RefusalReason,
)

PROMPT_OVERHEAD_TOKENS = 450
"""Tokens reserved for the rules, tags, legend and question around the sources."""


class LLMAnswerer:
    """The :class:`~ragstrata.generate.answerer.Answerer` over a chat model: runs the steps
    above for one question over already retrieved hits.

    ``evidence_rule``/``min_rerank``: the refusal rule and rerank threshold of
    :func:`~ragstrata.generate.evidence.check_evidence` (the extractive answerer's too, so
    ``rerank.min_score`` gates an LLM answer as it gates a quoted one, before any generation);
    ``checker``: citation verifier (``None`` skips verification); ``parents``: parent section
    lookup for context expansion (``None``: no expansion); ``display_source`` names the
    documents in the prompt and the legend.
    """

    def __init__(
        self,
        generator: ChatModel,
        analyzer: Analyzer,
        config: LLMConfig,
        *,
        evidence_rule: EvidenceRule,
        checker: CitationChecker | None,
        display_source: Callable[[str], str] = str,
        parents: ParentLookup | None = None,
        min_rerank: float | None = None,
    ) -> None:
        self.generator = generator
        self.min_rerank = min_rerank
        self.analyzer = analyzer
        self.config = config
        self.evidence_rule = evidence_rule
        self.checker = checker
        self.display_source = display_source
        self.parents = parents

    @property
    def name(self) -> str:
        """The chat model's ``provider:model``."""
        return self.generator.name

    def budget(self) -> int:
        """Source tokens: ``llm.context_tokens``, capped so that prompt + answer fit the
        model's window."""
        room = self.generator.context_window - self.config.max_tokens - PROMPT_OVERHEAD_TOKENS
        return max(64, min(self.config.context_tokens, room))

    def _deltas(self, messages: Sequence[ChatMessage]) -> Iterator[Delta]:
        """The model's answer as deltas: its stream, or with ``llm.stream = false`` one
        :meth:`~ragstrata.generate.base.ChatModel.complete` request given as one delta (a
        server or proxy that does not stream)."""
        if self.config.stream:
            yield from self.generator.stream(messages)
            return
        done = self.generator.complete(messages)
        yield Delta(done.text, done=True, usage=done.usage, finish_reason=done.finish_reason)

    def stream(
        self,
        question: str,
        hits: Sequence[Hit],
        *,
        timings: Mapping[str, float] | None = None,
        started: float | None = None,
    ) -> Iterator[AskEvent]:
        question = unicodedata.normalize("NFC", question)  # as the index's text (review 39)
        t0 = time.perf_counter() if started is None else started
        spent = dict(timings or {})
        t = time.perf_counter()
        kept, conflicts = resolve_versions(hits)
        check = check_evidence(
            question, kept, self.analyzer, rule=self.evidence_rule, min_rerank=self.min_rerank
        )
        spent["evidence"] = (time.perf_counter() - t) * 1000
        name = self.generator.name

        def refuse(
            reason: RefusalReason, used: dict[str, int], generation: Generation | None = None
        ) -> AnswerEvent:
            return AnswerEvent(
                refusal(
                    question,
                    reason,
                    timings=spent,
                    started=t0,
                    generator=name,
                    usage=used,
                    evidence=check,
                    conflicts=conflicts,
                    hits=hits,
                    generation=generation,
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
            parents=self.parents,
            parent_tokens=self.config.parent_tokens,
            order="edges",
            render=lambda ctx: render_sources(ctx, self.display_source),
        )
        messages = build_messages(question, context, display_source=self.display_source)
        spent["assemble"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        parts: list[str] = []
        usage = Usage(0, 0)
        finish_reason: str | None = None
        decode: DecodeStats | None = None
        first_token: float | None = None
        for delta in self._deltas(messages):
            if delta.text:
                if first_token is None:
                    first_token = time.perf_counter()
                parts.append(delta.text)
                yield TokenEvent(delta.text)
            if delta.done:
                usage = delta.usage or usage
                finish_reason = delta.finish_reason
                decode = delta.decode
        spent["generate"] = (time.perf_counter() - t) * 1000
        if first_token is not None:
            spent["first_token"] = (first_token - t0) * 1000
        written = "".join(parts).strip()  # as the model wrote it: Generation.raw_answer
        raw = _finished(written, finish_reason, self.config.max_tokens, self.generator.name)
        if not raw or is_refusal(raw, phrases=False):
            declined = Generation(  # what the model wrote stays readable (trial 25: null)
                context_tokens=context.tokens,
                finish_reason=finish_reason,
                raw_answer=written or None,
                decode=decode,
            )
            yield refuse("llm", usage.to_json(), declined)
            return
        t = time.perf_counter()
        checker = self.checker if self.config.verify_citations else None
        grounded = ground(raw, context, checker, unsupported=self.config.unsupported)  # type: ignore[arg-type]
        spent["verify"] = (time.perf_counter() - t) * 1000
        generation = Generation(
            context_tokens=context.tokens,
            finish_reason=finish_reason,
            raw_answer=written,
            grounding=grounded.grounding,
            decode=decode,
        )
        if is_refusal(raw) and (checker is None or not grounded.grounding.verified_claims):
            # "the sources do not mention it", with nothing the check verifies: the model
            # declined; with a verified claim it is an answer that also says what is missing
            yield refuse("llm", usage.to_json(), generation)
            return
        if not grounded.citations or (
            checker is not None and not grounded.grounding.verified_claims
        ):
            # nothing in the answer is backed by a source: ungrounded (or a document's
            # injected instruction was obeyed); never shown as an answer
            reason: RefusalReason = "no_citations" if not grounded.citations else "unsupported"
            yield refuse(reason, usage.to_json(), generation)
            return
        spent["total"] = (time.perf_counter() - t0) * 1000
        yield AnswerEvent(
            Answer(
                question=question,
                text=grounded.text,
                refusal=False,
                citations=grounded.citations,
                legend=grounded.legend,
                timings_ms=spent,
                usage=usage.to_json(),
                generator=name,
                evidence=check,
                conflicts=tuple(conflicts),
                hits=tuple(hits),
                generation=generation,
                cited_chunks=_cited_chunks(grounded.citations, context, hits),
            )
        )


def _cited_chunks(
    citations: Sequence[Citation], context: Context, hits: Sequence[Hit]
) -> tuple[Chunk, ...]:
    """The chunks ``citations`` name that are not among ``hits`` (parts of expanded sections),
    for a reader that shows each citation's chunk (the service's citation cards)."""
    retrieved = {h.chunk.chunk_id for h in hits}
    parts = {c.chunk_id: c for s in context.sources for _, _, c in s.parts}
    named = dict.fromkeys(c.chunk_id for c in citations if c.chunk_id not in retrieved)
    return tuple(parts[i] for i in named if i in parts)


def _finished(raw: str, finish_reason: str | None, max_tokens: int, model: str) -> str:
    """``raw`` as far as the model finished it. Stopped by ``llm.max_tokens``
    (``finish_reason`` ``length``): its complete sentences with their markers (the claims'
    own sentence split, :func:`~ragstrata.generate.citations.parse_answer`'s: numbers and
    abbreviations do not end one), the cut one and a list number left dangling dropped;
    GenerationError when none is complete. Stopped by the server's content filter:
    GenerationError. A re-test of trial 25 (2026-12-06) showed "Cada empleado tiene derecho a
    23 [1]", cut at the limit, as a complete and verified answer."""
    if finish_reason == "content_filter":
        raise GenerationError(f"{model}: the server's content filter stopped the answer")
    if finish_reason != "length":
        return raw
    kept = complete_sentences(raw)
    if not kept:
        raise GenerationError(
            f"{model}: the answer was cut at llm.max_tokens={max_tokens} before its first "
            "sentence ended; raise llm.max_tokens"
        )
    return kept
