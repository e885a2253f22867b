"""Offline extractive answerer: the default generator when no LLM is configured.

It picks the sentences of the context that best answer the question, scored by
``0.7 · cosine(question, sentence) + 0.3 · lexical coverage`` (share of the question's BM25 terms
present in the sentence), tags each with its source label ``[n]``, and never cites a source it
did not quote. Code inside fences, headings and table separators are not answer sentences.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ragstrata.assemble.context import Context, Source
from ragstrata.embed.base import Embedder
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.spans import find_fences, sentence_spans

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


class Generator(Protocol):
    """Question + numbered context → answer text that cites ``[n]`` labels."""

    def generate(self, question: str, context: Context) -> Generated: ...


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
    """:class:`Generator` that quotes the best ``max_sentences`` sentences with their labels.

    A sentence is kept when its score is at least ``relative_floor`` × the best sentence score.
    """

    def __init__(
        self,
        embedder: Embedder,
        analyzer: Analyzer,
        *,
        max_sentences: int = 3,
        relative_floor: float = 0.75,
    ) -> None:
        self.embedder = embedder
        self.analyzer = analyzer
        self.max_sentences = max_sentences
        self.relative_floor = relative_floor

    def generate(self, question: str, context: Context) -> Generated:
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
