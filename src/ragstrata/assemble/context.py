"""Context assembly: de-duplicate overlapping hits, fit a token budget, number the sources."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragstrata.chunking.tokens import TokenCounter
from ragstrata.types import Hit


@dataclass(frozen=True, slots=True)
class Source:
    """One numbered source ``[label]`` of the context; ``text`` is heading line + chunk."""

    label: int
    hit: Hit
    text: str


@dataclass(frozen=True, slots=True)
class Context:
    """Numbered sources in rank order, their legend lines and the context's token count."""

    sources: tuple[Source, ...]
    legend: tuple[str, ...]
    tokens: int

    def render(self) -> str:
        """The context as a prompt would show it: ``[n] heading`` blocks then the legend."""
        body = "\n\n".join(f"[{s.label}] {s.text}" for s in self.sources)
        return f"{body}\n\n" + "\n".join(self.legend) if self.sources else ""


def _overlap_ratio(a: Hit, b: Hit) -> float:
    """Shared characters of two chunks of one document over the shorter one's length."""
    if a.chunk.doc_id != b.chunk.doc_id:
        return 0.0
    shared = min(a.chunk.end, b.chunk.end) - max(a.chunk.start, b.chunk.start)
    shortest = min(a.chunk.end - a.chunk.start, b.chunk.end - b.chunk.start)
    return max(0, shared) / shortest if shortest > 0 else 0.0


def assemble(
    hits: Sequence[Hit],
    *,
    counter: TokenCounter,
    budget_tokens: int,
    display_source: Callable[[str], str] = str,
    max_overlap: float = 0.5,
) -> Context:
    """Build the context from ranked ``hits``.

    A hit whose chunk shares more than ``max_overlap`` of its characters with a better-ranked
    chunk of the same document is dropped (chunk overlap, parent/child duplicates). Sources are
    added in rank order while their token count (with ``counter``) fits ``budget_tokens``; the
    best hit is always kept. Legend lines read ``[n] = source > heading path``.
    """
    kept: list[Source] = []
    legend: list[str] = []
    used = 0
    for hit in hits:
        if any(_overlap_ratio(hit, s.hit) > max_overlap for s in kept):
            continue
        chunk = hit.chunk
        heading = chunk.heading or chunk.title
        text = f"{heading}\n{chunk.rendered}" if heading else chunk.rendered
        tokens = counter.count(text)
        if kept and used + tokens > budget_tokens:
            continue
        label = len(kept) + 1
        kept.append(Source(label, hit, text))
        where = display_source(chunk.source)
        legend.append(
            f"[{label}] = {where} > {chunk.heading}" if chunk.heading else f"[{label}] = {where}"
        )
        used += tokens
    return Context(tuple(kept), tuple(legend), used)
