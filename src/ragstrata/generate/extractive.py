"""Offline extractive answerer: the default :class:`~ragstrata.generate.answerer.Answerer`
when no LLM is configured.

It refuses on the evidence check (:func:`~ragstrata.generate.evidence.check_evidence`, the LLM
answerer's too), assembles the hits into numbered sources, then picks the sentences of the
context that best answer the question, scored by ``0.7 · cosine(question, sentence) + 0.3 ·
lexical coverage`` (share of the question's BM25 terms present in the sentence), tags each with
its source label ``[n]``, and never cites a source it did not quote (refusing with
``no_quotes`` when no sentence can be quoted). Cited sources are renumbered 1..n in order of
first citation. Code inside fences, headings and table separators are not answer sentences.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragstrata.assemble.context import Context, Source, assemble
from ragstrata.embed.base import Embedder
from ragstrata.generate.answerer import AnswerEvent, AskEvent, refusal, word_tokens
from ragstrata.generate.evidence import NO_EVIDENCE_RULE, EvidenceRule, check_evidence
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.spans import find_fences, sentence_spans
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import Answer, Citation, Hit

_MDX = re.compile(r"\{/\*.*?\*/\}|</?[A-Z][a-z][\w.]*(?:\s[^<>]*)?/?>")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")


@dataclass(frozen=True, slots=True)
class Quote:
    """A sentence taken from source ``label``: ``chunk.text[start:end]`` (chunk-relative)."""

    label: int
    start: int
    end: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Generated:
    """Answer text with the quotes it is built from (empty when nothing relevant was found)."""

    text: str
    quotes: tuple[Quote, ...]


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _candidates(source: Source) -> list[tuple[int, int]]:
    """Sentence spans (chunk-relative) of the chunk's prose.

    Consecutive text lines form one paragraph, so sentences of hard-wrapped Markdown are not cut
    at line ends; a list item starts a new paragraph. Fenced code, headings, table rows and
    HTML/MDX lines are not prose.
    """
    text = source.hit.chunk.text
    fenced = [(f.open_start, f.close_end) for f in find_fences(text)]
    spans: list[tuple[int, int]] = []
    para: tuple[int, int] | None = None

    def flush() -> None:
        if para is not None:
            spans.extend(sentence_spans(text, para[0], para[1]))

    pos = 0
    for line in text.split("\n"):
        start, end = pos, pos + len(line)
        pos = end + 1
        stripped = line.strip()
        prose = not (
            any(a <= start <= b for a, b in fenced)
            or not stripped
            or stripped.startswith(("#", "|", "<", "{"))
            or _SEPARATOR.match(line)
        )
        if not prose or _LIST_ITEM.match(line):
            flush()
            para = (start, end) if prose else None
        elif para is None:
            para = (start, end)
        else:
            para = (para[0], end)
    flush()
    return spans


def clean_sentence(text: str) -> str:
    """Sentence for display: MDX anchors/components and list/quote markers removed."""
    text = _MDX.sub("", text)
    text = _MARKUP.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


class ExtractiveAnswerer:
    """The :class:`~ragstrata.generate.answerer.Answerer` that quotes the best
    ``max_sentences`` sentences of the hits with their labels.

    A sentence is kept when its score is at least ``relative_floor`` × the best sentence score.
    ``context_tokens``: budget of the assembled sources, counted with ``counter`` (default: the
    embedder's); ``evidence_rule``/``min_rerank``: the refusal rule and rerank threshold of
    :func:`~ragstrata.generate.evidence.check_evidence` (default: no refusal on evidence);
    ``display_source`` names the documents in the legend.
    """

    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        analyzer: Analyzer,
        *,
        max_sentences: int = 3,
        relative_floor: float = 0.75,
        context_tokens: int = 1500,
        counter: TokenCounter | None = None,
        evidence_rule: EvidenceRule = NO_EVIDENCE_RULE,
        min_rerank: float | None = None,
        display_source: Callable[[str], str] = str,
    ) -> None:
        self.embedder = embedder
        self.analyzer = analyzer
        self.max_sentences = max_sentences
        self.relative_floor = relative_floor
        self.context_tokens = context_tokens
        self._counter = counter
        self.evidence_rule = evidence_rule
        self.min_rerank = min_rerank
        self.display_source = display_source

    def stream(
        self,
        question: str,
        hits: Sequence[Hit],
        *,
        timings: Mapping[str, float] | None = None,
        started: float | None = None,
    ) -> Iterator[AskEvent]:
        """The answer's words (each with its trailing whitespace) once it is complete, then the
        :class:`~ragstrata.generate.answerer.AnswerEvent`."""
        answer = self.answer(question, hits, timings=timings, started=started)
        yield from word_tokens(answer.text)
        yield AnswerEvent(answer)

    def answer(
        self,
        question: str,
        hits: Sequence[Hit],
        *,
        timings: Mapping[str, float] | None = None,
        started: float | None = None,
    ) -> Answer:
        """The quoted answer of ``question`` from ``hits``, or a refusal (``evidence``,
        ``rerank``, ``no_quotes``)."""
        t0 = time.perf_counter() if started is None else started
        spent = dict(timings or {})
        check = check_evidence(
            question,
            hits,
            self.analyzer,
            rule=self.evidence_rule,
            min_rerank=self.min_rerank,
        )
        if check.refused_by is not None:
            return refusal(
                question, check.refused_by, timings=spent, started=t0, evidence=check, hits=hits
            )
        t = time.perf_counter()
        context = assemble(
            hits,
            counter=self._counter or self.embedder.counter,
            budget_tokens=self.context_tokens,
            display_source=self.display_source,
        )
        spent["assemble"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        quotes = self.pick_quotes(question, context).quotes
        spent["generate"] = (time.perf_counter() - t) * 1000
        if not quotes:
            return refusal(
                question, "no_quotes", timings=spent, started=t0, evidence=check, hits=hits
            )
        by_label = {s.label: s for s in context.sources}
        # cited sources are renumbered 1..n in order of first citation; the legend lists them
        renumber = {old: new for new, old in enumerate(quoted_labels(quotes), 1)}
        legend = tuple(by_label[old].legend_line(new) for old, new in renumber.items())
        citations = tuple(
            _citation(new, by_label[old], next(q for q in quotes if q.label == old))
            for old, new in renumber.items()
        )
        spent["total"] = (time.perf_counter() - t0) * 1000
        return Answer(
            question=question,
            text=render(quotes, renumber),
            refusal=False,
            citations=citations,
            legend=legend,
            timings_ms=spent,
            evidence=check,
            hits=tuple(hits),
        )

    def pick_quotes(self, question: str, context: Context) -> Generated:
        """The best sentences of ``context`` for ``question``, tagged with their source labels
        (empty when no sentence can be quoted)."""
        items: list[tuple[Source, int, int, str]] = []
        for source in context.sources:
            for start, end in _candidates(source):
                shown = clean_sentence(source.hit.chunk.text[start:end])
                if len(shown.split()) >= 3:
                    items.append((source, start, end, shown))
        if not items:
            return Generated("", ())
        query_terms = set(self.analyzer.terms(question))
        vectors = self.embedder.embed_documents([shown for *_, shown in items])
        cosine = vectors @ self.embedder.embed_query(question)
        scores: list[float] = []
        for (_, _, _, shown), cos in zip(items, cosine, strict=True):
            coverage = (
                len(query_terms & set(self.analyzer.terms(shown))) / len(query_terms)
                if query_terms
                else 0.0
            )
            scores.append(0.7 * float(cos) + 0.3 * coverage)
        order = np.argsort(-np.asarray(scores), kind="stable")
        best = scores[int(order[0])]
        chosen: list[Quote] = []
        seen: set[str] = set()
        for index in order:
            source, start, end, shown = items[int(index)]
            score = scores[int(index)]
            if len(chosen) >= self.max_sentences or score < self.relative_floor * best:
                break
            if shown.lower() in seen:
                continue
            seen.add(shown.lower())
            chosen.append(Quote(source.label, start, end, shown, score))
        return Generated(render(chosen), tuple(chosen))


def quoted_labels(quotes: Sequence[Quote]) -> list[int]:
    """Distinct labels in first-use order."""
    return list(dict.fromkeys(q.label for q in quotes))


def render(quotes: Sequence[Quote], labels: Mapping[int, int] | None = None) -> str:
    """The answer text: each quote followed by its marker ``[n]``, ``n`` = ``labels[label]``
    (the quote's own label when ``labels`` is ``None``). Only the markers are numbered: text
    inside a quote that looks like a marker (``[2]`` in a quoted code example) is left as is."""
    return " ".join(f"{q.text} [{q.label if labels is None else labels[q.label]}]" for q in quotes)


def _citation(label: int, source: Source, quote: Quote) -> Citation:
    """Citation ``[label]`` of ``quote``, taken from ``source``'s chunk (verbatim, so verified)."""
    chunk = source.hit.chunk
    return Citation(
        label=label,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        source=chunk.source,
        heading_path=chunk.section_path,
        start=chunk.start,
        end=chunk.end,
        score=source.hit.score,
        quote=chunk.text[quote.start : quote.end],
        page_start=chunk.page_start,
        page_end=chunk.page_end,
    )
