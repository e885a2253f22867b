"""Context assembly: de-duplicate overlapping hits, expand hits to their parent section, fit a
token budget, order against "lost in the middle", number the sources.

Order: Liu et al. (2023, "Lost in the Middle: How Language Models Use Long Contexts") found
that LLMs use information at the start and end of a long context best and the middle worst;
``order="edges"`` puts the strongest sources first and last (ranks 1, 3, 5, … 4, 2).

Versions: when the top hits come from several versions of one document (chunks whose
``metadata`` has ``version``/``date``/``modified`` and share a title), :func:`resolve_versions`
keeps the newest version's chunks and reports the conflict.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ragstrata.retrieve.copies import passage_key
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import Chunk, Hit, VersionConflict

Order = Literal["rank", "edges"]
ParentLookup = Callable[[Chunk], Sequence[Chunk]]
"""``chunk -> all chunks of its parent section`` (``parent_id`` equal), any order."""


Part = tuple[int, int, Chunk]
"""``(start, end, chunk)``: where ``chunk``'s text lies in a merged section's passage."""


@dataclass(frozen=True, slots=True)
class Source:
    """One numbered source ``[label]`` of the context; ``text`` is heading line + passage.

    ``passage`` is what the source says (the chunk's rendered text, or its whole parent
    section when expanded); ``start``/``end`` are its character offsets in the document
    (``document.text[start:end]`` is the passage for expanded sources, up to the white space
    between their chunks: :func:`merge_section`); ``expanded`` tells
    whether the parent section replaced the chunk; ``where`` names the document as the
    legend shows it.
    """

    label: int
    hit: Hit
    text: str
    passage: str = ""
    start: int = -1
    end: int = -1
    expanded: bool = False
    where: str = ""
    parts: tuple[Part, ...] = ()
    """Where each chunk of an expanded section lies in ``passage`` (empty when not
    expanded): a quote is cited from the chunk that holds it (:meth:`chunk_at`)."""

    def legend_line(self, label: int | None = None) -> str:
        """``[label] = document > heading path`` (no heading: ``[label] = document``), the
        source's line in a legend; ``label`` defaults to its own (answers renumber the
        sources they cite)."""
        n = self.label if label is None else label
        heading = self.hit.chunk.heading
        return f"[{n}] = {self.where} > {heading}" if heading else f"[{n}] = {self.where}"

    @property
    def body(self) -> str:
        """The passage (the chunk's rendered text when none was set)."""
        return self.passage or self.hit.chunk.rendered

    def chunk_at(self, start: int, end: int) -> Chunk:
        """The chunk whose text holds ``body[start:end]``: of an expanded section the part
        that holds it whole (the first), else the part ``start`` falls in; the hit's chunk
        otherwise."""
        whole = [c for a, b, c in self.parts if a <= start and end <= b]
        if whole:
            return whole[0]
        return next((c for a, b, c in self.parts if a <= start < b), self.hit.chunk)

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)`` in the document (the chunk's when none was set)."""
        if self.start >= 0:
            return self.start, self.end
        return self.hit.chunk.start, self.hit.chunk.end


@dataclass(frozen=True, slots=True)
class Context:
    """Numbered sources in presentation order, their legend lines and ``tokens``: the size of
    the context as rendered for its reader (labels, wrappers and legend included), counted with
    the counter given to :func:`assemble`."""

    sources: tuple[Source, ...]
    legend: tuple[str, ...]
    tokens: int

    def render(self) -> str:
        """The context as a prompt would show it: ``[n] heading`` blocks then the legend."""
        body = "\n\n".join(f"[{s.label}] {s.text}" for s in self.sources)
        return f"{body}\n\n" + "\n".join(self.legend) if self.sources else ""


def _overlap(candidate: tuple[str, int, int], chosen: tuple[str, int, int]) -> float:
    """Share of ``candidate``'s characters (a span ``(doc_id, start, end)``) that ``chosen``
    covers. Over the candidate's own length, as :func:`assemble` says: over the shorter
    span's, a short better-ranked chunk (a section's last, mostly overlap) dropped the long
    chunk before it that it shared 11 % of with (a review, 2026-12-06)."""
    if candidate[0] != chosen[0]:
        return 0.0
    shared = min(candidate[2], chosen[2]) - max(candidate[1], chosen[1])
    own = candidate[2] - candidate[1]
    return max(0, shared) / own if own > 0 else 0.0


_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.MULTILINE)


def _gap(before: str, width: int) -> str:
    """What stands for the ``width`` characters of white space the chunker left between two
    chunks (their text is stripped): inside an open code fence line breaks and the next
    line's indentation (below), after a table row or in a one-character gap a line break (a
    code line, a table row or a soft line break of prose), else a blank line (a break between
    blocks). A blank line inside code or a table cut it in two (a review, 2026-12-06).

    Inside code the split between line breaks and indentation is not known: the first of
    these that fits is taken, one line break then the previous line's indentation, then that
    indentation less or more one level (4), then only line breaks (a top-level line after
    blank lines: ``def f4`` kept at column 0)."""
    if width <= 0:
        return ""
    if len(_FENCE_LINE.findall(before)) % 2:
        last = before.rsplit("\n", 1)[-1]
        indent = len(last) - len(last.lstrip(" \t"))
        unit = "\t" if last[:1] == "\t" else " "
        for spaces in (indent, indent - 4, indent + 4):
            if 0 <= spaces < width:
                return "\n" * (width - spaces) + unit * spaces
        return "\n" * width
    last_line = before.rsplit("\n", 1)[-1]
    if width == 1 or last_line.lstrip().startswith("|"):
        return "\n"
    return "\n\n"


def merge_section(chunks: Sequence[Chunk]) -> tuple[str, int, int]:
    """Text and ``(start, end)`` of consecutive chunks of one section, overlaps removed.

    Chunks are ordered by ``start``; the part of a chunk that overlaps the previous one is
    skipped, and the white space between two that do not touch is written as :func:`_gap`
    says (a line break inside a code block or a table, a blank line between blocks). For
    contiguous or overlapping chunks the result is ``document.text[start:end]``; otherwise it
    is that text up to the white space between the chunks.
    """
    text, start, end, _ = _merge(chunks)
    return text, start, end


def _merge(chunks: Sequence[Chunk]) -> tuple[str, int, int, tuple[Part, ...]]:
    """:func:`merge_section`, and where each chunk's text lies in the merged text."""
    ordered = sorted(chunks, key=lambda c: (c.start, c.end))
    if not ordered:
        raise ValueError("merge_section needs at least one chunk")
    text = ordered[0].text
    start, end = ordered[0].start, ordered[0].end
    parts: list[Part] = [(0, len(text), ordered[0])]
    shift = 0  # merged offset - document offset, from the gaps written
    for chunk in ordered[1:]:
        if chunk.end <= end:
            at = chunk.start - start + shift
            parts.append((at, at + len(chunk.text), chunk))
            continue
        if chunk.start <= end:
            text += chunk.text[end - chunk.start :]
        else:
            gap = _gap(text, chunk.start - end)
            shift += len(gap) - (chunk.start - end)
            text += gap + chunk.text
        at = chunk.start - start + shift
        parts.append((at, at + len(chunk.text), chunk))
        end = chunk.end
    return text, start, end, tuple(parts)


def edge_order(n: int) -> list[int]:
    """Positions ``0..n-1`` (best first) arranged strongest at both ends: ``0, 2, 4, …, 3, 1``.

    >>> edge_order(5)
    [0, 2, 4, 3, 1]
    """
    front = list(range(0, n, 2))
    back = list(range(1, n, 2))
    return front + back[::-1]


ContextRenderer = Callable[[Context], str]
"""``context -> the text its reader receives`` (:meth:`Context.render` for a person and the
extractive answer, the ``<source>`` blocks of :func:`ragstrata.generate.prompt.render_sources`
for an LLM): what the budget of :func:`assemble` bounds."""


def _label_sources(
    chosen: Sequence[tuple[Hit, str, str, tuple[str, int, int], tuple[Part, ...], int]],
    order: Order,
    display_source: Callable[[str], str],
) -> tuple[tuple[Source, ...], tuple[str, ...]]:
    positions = edge_order(len(chosen)) if order == "edges" else list(range(len(chosen)))
    sources: list[Source] = []
    legend: list[str] = []
    for label, pos in enumerate(positions, start=1):
        hit, text, passage, span, parts, _ = chosen[pos]
        chunk = hit.chunk
        where = display_source(chunk.source)
        source = Source(label, hit, text, passage, span[1], span[2], bool(parts), where, parts)
        sources.append(source)
        legend.append(source.legend_line())
    return tuple(sources), tuple(legend)


def assemble(
    hits: Sequence[Hit],
    *,
    counter: TokenCounter,
    budget_tokens: int,
    display_source: Callable[[str], str] = str,
    max_overlap: float = 0.5,
    parents: ParentLookup | None = None,
    parent_tokens: int = 0,
    order: Order = "rank",
    render: ContextRenderer = Context.render,
) -> Context:
    """Build the context from ranked ``hits``.

    A hit whose chunk shares more than ``max_overlap`` of its characters with a better-ranked
    source of the same document is dropped (chunk overlap, parent/child duplicates), and so is
    one whose passage is the text of a better-ranked source, white space aside, whatever its
    document (a file saved twice, a backup folder: one source, cited once). With
    ``parents`` and ``parent_tokens > 0``, a hit is replaced by its whole parent section
    (:func:`merge_section` of ``parents(chunk)``) when that section is longer than the chunk,
    costs at most ``parent_tokens`` tokens and fits what is left of the budget (else the chunk
    alone is tried); hits inside an expanded section are then duplicates. Sources are added in
    rank order while the context *as ``render`` writes it* (labels, wrappers, separators and
    legend included, counted with ``counter``) fits ``budget_tokens``: each source costs what
    it adds rendered alone, and the whole rendering is then counted and the lowest-ranked
    sources dropped until it fits, so
    ``Context.tokens == counter.count(render(context)) <= budget_tokens`` unless the best hit
    alone is larger (it is always kept). ``order`` ``rank`` presents them best first,
    ``edges`` strongest first and last (:func:`edge_order`); labels ``1..n`` follow the
    presentation order. Legend lines read ``[n] = source > heading path``.
    """
    chosen: list[tuple[Hit, str, str, tuple[str, int, int], tuple[Part, ...], int]] = []
    copies: set[str] = set()  # the chosen passages, white space collapsed
    used = 0
    for hit in hits:
        chunk = hit.chunk
        span = (chunk.doc_id, chunk.start, chunk.end)
        if any(_overlap(span, s[3]) > max_overlap for s in chosen):
            continue
        heading = chunk.heading or chunk.title
        # the whole parent section first when it is short enough, then the chunk alone
        options: list[tuple[str, tuple[Part, ...], tuple[str, int, int]]] = []
        if parents is not None and parent_tokens > 0:
            section = [c for c in parents(chunk) if c.parent_id == chunk.parent_id]
            if len(section) > 1:
                merged, start, end, found = _merge(section)
                wide = (chunk.doc_id, start, end)
                if counter.count(merged) <= parent_tokens and not any(
                    _overlap(wide, s[3]) > max_overlap for s in chosen
                ):
                    options.append((merged, found, wide))
        options.append((chunk.rendered, (), span))
        for n, (passage, parts, where) in enumerate(options, start=1):
            copy = passage_key(passage)
            if copy in copies:
                break  # the same text in another file (a copy, a backup) says nothing new
            text = f"{heading}\n{passage}" if heading else passage
            item = (hit, text, passage, where, parts, 0)
            alone, legend_alone = _label_sources([item], "rank", display_source)
            tokens = counter.count(render(Context(alone, legend_alone, 0)))
            # an expanded section must fit what is left, the best source's too (review 39:
            # a 150-token budget gave a 323-token context where the best chunk fit); the
            # best hit's own chunk is kept whatever it costs
            if used + tokens > budget_tokens and (chosen or n < len(options)):
                continue
            chosen.append((hit, text, passage, where, parts, tokens))
            copies.add(copy)
            used += tokens
            break
    while True:
        sources, legend = _label_sources(chosen, order, display_source)
        context = Context(sources, legend, 0)
        rendered = counter.count(render(context)) if sources else 0
        if rendered <= budget_tokens or len(chosen) <= 1:
            return Context(sources, legend, rendered)
        chosen.pop()  # the lowest-ranked source: chosen is in rank order


# ------------------------------------------------------------------------------- versions

VERSION_KEYS = ("version", "date")
"""Chunk metadata keys that date a document version, in order of preference: front-matter
keys a writer sets. Not ``modified``, every file's modification time: with it any two files of
one title ("README", "Introduction" of two manuals) were versions and the older one's hits were
dropped (noticed in review 31, when the extractive answerer started resolving versions)."""

_NUM = re.compile(r"\d+")


def version_key(value: object) -> tuple[tuple[int, ...], str]:
    """Sort key of a version or date value: its numbers (``v1.10`` > ``v1.9``; ISO dates sort
    by year, month, day), then the raw text."""
    text = str(value)
    return tuple(int(n) for n in _NUM.findall(text)), text


def _version_of(chunk: Chunk) -> tuple[str, str] | None:
    for key in VERSION_KEYS:
        value = chunk.metadata.get(key)
        if value not in (None, ""):
            return key, str(value)
    return None


_EDITION_WORD = re.compile(
    r"(?<![^\W\d_])(?:old|new|newer|newest|latest|current|previous|legacy|archived?|draft|final|"
    r"stable|beta|alpha|preview|antiguo|antigua|viejo|vieja|nuevo|nueva|actual|anterior|"
    r"borrador|definitivo|definitiva)(?![^\W\d_])"
)
"""Words that name an edition in a path (``retention-old.md`` / ``retention-new.md``,
``stable/`` / ``2.0/``, ``manual-antiguo.md``)."""

_PATH_NUMBER = re.compile(r"(?<![^\W\d_])[vV]\d+(?:\.\d+)*|\d+(?:[._-]\d+)*")
_VERSION_FORM = re.compile(r"[vV]\d.*|\d+(?:\.\d+)+|(?:19|20)\d\d(?:[-_.]?\d\d){0,2}")
"""A number in a path that reads as a version or a date by its form alone: ``v1``, ``v1.1``,
``2.0``, ``2024``, ``2024-05-01``."""


def _mask_versions(path: str, own: str | None) -> str:
    """``path`` with its version marks replaced by ``#``: edition words, numbers that read as
    a version or a date (:data:`_VERSION_FORM`) and numbers that begin the document's own
    ``version``/``date`` value ``own`` (``docs/1/`` of version ``1.4``). Other numbers stay:
    ``chapter1/intro.md`` and ``chapter2/intro.md`` dated 2024 are two chapters (review 41)."""
    own_numbers = [int(n) for n in _NUM.findall(own or "")]

    def mark(match: re.Match[str]) -> str:
        token = match.group(0)
        numbers = [int(n) for n in _NUM.findall(token)]
        if _VERSION_FORM.fullmatch(token) or own_numbers[: len(numbers)] == numbers:
            return "#"
        return token

    return _PATH_NUMBER.sub(mark, _EDITION_WORD.sub("#", path))


def _family(chunk: Chunk) -> str:
    """The title as written and the source path with its version marks masked
    (:func:`_mask_versions`): two documents are versions of one only when both match. By
    the title alone, two products' "Installation" pages, each with its own ``version``, were
    taken for versions of one page and the question about product B was answered from product
    A's (review 39); numbers in a title are not masked ("Lesson 1" and "Lesson 2", dated
    meeting notes are different documents, review 41), nor numbers in a path that read as
    neither a version nor the document's own version or date (``chapter1/``, review 41)."""
    title = chunk.title.strip().casefold()
    version = _version_of(chunk)
    return f"{title}\n{_mask_versions(chunk.source.casefold(), version[1] if version else None)}"


def resolve_versions(
    hits: Sequence[Hit], *, family: Callable[[Chunk], str] = _family
) -> tuple[list[Hit], list[VersionConflict]]:
    """Drop hits from older versions of a document that also has a newer version among
    ``hits``.

    Hits are grouped by ``family(chunk)`` (default: the title and the source path, the path's
    numbers and edition words masked: :func:`_family`), among the chunks that carry a version
    (``metadata`` ``version``, else ``date``: :data:`VERSION_KEYS`); in a group spanning
    several documents (``doc_id``) with different versions the newest version
    (:func:`version_key`) wins. Returns the kept hits in their original order, ranks
    unchanged, and one :class:`VersionConflict` per such group.
    """
    groups: dict[str, dict[str, tuple[str, str]]] = {}  # family -> doc_id -> (key, version)
    for hit in hits:
        version = _version_of(hit.chunk)
        if version is not None:
            groups.setdefault(family(hit.chunk), {})[hit.chunk.doc_id] = version
    drop: set[str] = set()
    conflicts: list[VersionConflict] = []
    for name, docs in groups.items():
        versions = {v for _, v in docs.values()}
        if len(docs) < 2 or len(versions) < 2:
            continue
        newest = max(versions, key=version_key)
        older = sorted(versions - {newest}, key=version_key, reverse=True)
        old_docs = {d for d, (_, v) in docs.items() if v != newest}
        drop |= old_docs
        title = next(h.chunk.title for h in hits if family(h.chunk) == name)
        dropped_chunks = tuple(h.chunk.chunk_id for h in hits if h.chunk.doc_id in old_docs)
        conflicts.append(VersionConflict(title, newest, tuple(older), dropped_chunks))
    return [h for h in hits if h.chunk.doc_id not in drop], conflicts
