"""Conformance suite of the :class:`~ragstrata.generate.answerer.Answerer` Protocol.

Every answerer's test class subclasses :class:`AnswererContract` (pytest collects the subclass,
named ``Test...``; the base class itself is not collected) and provides two methods:
``make_answerer()`` (a fresh answerer; called once per run, so a scripted chat model starts
over) and ``answerable()`` (a question and hits it can answer from). The suite checks what the
Protocol promises:

- a stream ends with exactly one :class:`~ragstrata.generate.answerer.AnswerEvent`, and only
  :class:`~ragstrata.generate.answerer.TokenEvent` pieces come before it;
- the token texts concatenate to the answer's text (``answerable()`` should give an answer whose
  markers need no renumbering: an LLM streams its raw text); a refusal streams its text or
  nothing;
- every citation resolves to one of the given hits, labels are ``1..n`` in order, and every
  ``[n]`` marker of the text names a citation; the legend has one line per citation;
- with no hit it refuses (``refused_by="evidence"``, no citation, no legend);
- the same input gives the same answer (text, citations, legend, refusal).

Deterministic fakes (no model, no network) make the suite fast; it needs ``pytest`` only to run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragstrata.generate.answerer import Answerer, AnswerEvent, AskEvent, TokenEvent
from ragstrata.types import Answer, Hit

_MARKER = re.compile(r"\[(\d+)\]")


class AnswererContract:
    """Base class of an answerer's conformance tests (see the module docstring)."""

    def make_answerer(self) -> Answerer:
        """A fresh answerer under test."""
        raise NotImplementedError

    def answerable(self) -> tuple[str, Sequence[Hit]]:
        """A question and hits the answerer answers from (not a refusal)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def run(self, question: str, hits: Sequence[Hit]) -> tuple[list[AskEvent], Answer]:
        """All events of one stream over a fresh answerer, and its final answer."""
        events = list(self.make_answerer().stream(question, hits))
        last = events[-1] if events else None
        assert isinstance(last, AnswerEvent), f"the stream did not end with an answer: {last!r}"
        return events, last.answer

    # ------------------------------------------------------------------ contract
    def test_conforms_to_the_protocol(self) -> None:
        answerer = self.make_answerer()
        assert isinstance(answerer, Answerer)
        assert isinstance(answerer.name, str) and answerer.name

    def test_stream_ends_with_exactly_one_answer_event(self) -> None:
        question, hits = self.answerable()
        for given in (hits, ()):
            events, _ = self.run(question, given)
            answers = [e for e in events if isinstance(e, AnswerEvent)]
            assert len(answers) == 1
            assert all(isinstance(e, TokenEvent) for e in events[:-1])

    def test_tokens_concatenate_to_the_answer_text(self) -> None:
        question, hits = self.answerable()
        events, answer = self.run(question, hits)
        assert not answer.refusal, answer.refused_by
        streamed = "".join(e.text for e in events if isinstance(e, TokenEvent))
        assert streamed == answer.text
        events, refused = self.run(question, ())
        streamed = "".join(e.text for e in events if isinstance(e, TokenEvent))
        assert streamed in ("", refused.text)

    def test_every_citation_resolves_to_a_given_hit(self) -> None:
        question, hits = self.answerable()
        _, answer = self.run(question, hits)
        assert answer.citations, "an answer cites at least one source"
        given = {h.chunk.chunk_id: h.chunk for h in hits}
        for citation in answer.citations:
            chunk = given.get(citation.chunk_id)
            assert chunk is not None, f"[{citation.label}] cites {citation.chunk_id}: no hit"
            assert (citation.doc_id, citation.source) == (chunk.doc_id, chunk.source)
        labels = [c.label for c in answer.citations]
        assert labels == list(range(1, len(labels) + 1))
        assert {int(n) for n in _MARKER.findall(answer.text)} <= set(labels)
        assert len(answer.legend) == len(answer.citations)
        for label, line in zip(labels, answer.legend, strict=True):
            assert line.startswith(f"[{label}] = ")

    def test_refuses_without_hits(self) -> None:
        question, _ = self.answerable()
        _, answer = self.run(question, ())
        assert answer.refusal and answer.refused_by == "evidence"
        assert answer.citations == () and answer.legend == () and answer.text
        assert answer.hits == ()

    def test_same_input_gives_the_same_answer(self) -> None:
        question, hits = self.answerable()
        _, first = self.run(question, hits)
        _, second = self.run(question, hits)
        assert (first.text, first.refusal, first.citations, first.legend) == (
            second.text,
            second.refusal,
            second.citations,
            second.legend,
        )
        assert first.hits == tuple(hits)
