"""Structure-aware recursive chunker.

Splits on the most meaningful boundary first: section (heading path) → block → line → sentence
→ word → hard cut (at the token budget or the character bound), in the spirit of LangChain's
recursive splitter and semchunk, but over a parsed block tree so that headings, fenced code and
tables stay whole. Invariants (tested as properties in ``tests/unit/chunking``):

* ``document.text[c.start:c.end] == c.text`` and ``c.text`` is non-empty, with no leading or
  trailing whitespace;
* every rendered chunk, with its heading-path prefix and the model's special tokens, fits
  ``max_tokens`` of the embedding model's tokenizer;
* every chunk's text holds at most ``max_chars`` characters (default
  :data:`CHARS_PER_TOKEN` × ``max_tokens``): a tokenizer may count a long run without spaces
  as a single unknown token, so the token budget alone does not bound a chunk's size;
* every non-whitespace character of every block lies in some chunk;
* fenced code and tables are split only when one alone exceeds the budget, tables by rows with
  the header rows repeated in ``Chunk.header``, code by lines with the fence re-opened/closed in
  ``Chunk.header``/``Chunk.footer`` (so no rendered chunk has an unbalanced fence);
* the same document gives the same chunks and ids (ids are content hashes).

Consecutive chunks of one section overlap by about ``overlap_ratio * max_tokens`` tokens, taken at
a line or sentence boundary and never inside a code block or table.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragstrata.errors import ChunkingError
from ragstrata.text.language import chunk_language
from ragstrata.text.spans import (
    TABLE_DELIMITER,
    Fence,
    fenced,
    find_fences,
    sentence_spans,
    strip_span,
)
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import Block, Chunk, Document, meta_text

META_KEYS = 32
"""Most document metadata keys a chunk carries (:func:`chunk_metadata`)."""
META_CHARS = 256
"""Longest metadata value (a string, or one item of a list) a chunk carries, in characters."""
META_TOTAL_CHARS = 4096
"""Most characters of metadata (keys and values) a chunk carries: each chunk stores it all, and
32 keys of 32-item lists of 256 characters would add 256 KB to every chunk of a document."""
_META_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")  # what a meta.<key> filter can name
_NOT_META = frozenset({"title", "size_bytes", "confluence"})  # on the chunk, or unfiltered

TOO_LONG = 1 << 30
"""Token count given, without tokenizing, to a piece longer than ``max_chars``: it cannot be
one chunk whatever its tokens, so it is split further. Tokenizing a 20 MB line at once cost
gigabytes of memory (one encoding object per token)."""

COUNT_BATCH_CHARS = 1 << 20
"""Characters handed to the tokenizer per ``count_many`` call, bounding its memory."""

SPLIT_WINDOW_CHARS = 1 << 18
"""A block longer than this is split (lines, sentences, words) one window of this many
characters at a time, each window ending at its last line break (else its last white space),
so that a 20 MB one-line file does not hold millions of word spans at once (1.4 GB of a 19.5 MB
file's ingest, 2026-12-06). A window that ends at a line break gives the units the whole block
would."""

PACK_UNITS = 20_000
"""Units a section gathers before they are packed into chunks: beyond it the units so far are
packed (the last chunk ends there, with no overlap into the next), bounding the memory a
section of millions of lines or words takes. Only sections of more than 20,000 lines,
sentences or words reach it."""

COUNT_BATCH_PIECES = 4096
"""Pieces handed to the tokenizer per ``count_many`` call: each costs an encoding object, and
a megabyte of single words is 200,000 of them."""

CHARS_PER_TOKEN = 24
"""Default character bound per token of budget: prose runs at 4-5 characters per token, code and
identifiers at 2-4, so only text that the tokenizer does not really split (a 5 MB run of one
"word" counts as one [UNK] token) reaches it."""


class Chunker(Protocol):
    """Turns one parsed document into ordered chunks, and a chunk into the text to embed."""

    @property
    def signature(self) -> str:
        """The chunking policy and its settings (``structure-v10:max=256:...``): two chunkers
        with the same signature give the same chunks, so an index records it and re-chunks a
        document when it changes."""
        ...

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of ``document`` in reading order; ``[]`` for a document without text."""
        ...

    def embedding_text(self, chunk: Chunk) -> str:
        """What the embedder sees for ``chunk``: its heading-path prefix and rendered text,
        within the chunker's token budget."""
        ...


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    tokens: int
    atomic: bool


@dataclass(frozen=True, slots=True)
class _Section:
    path: tuple[str, ...]
    blocks: tuple[Block, ...]


def heading_prefix(title: str, section_path: Sequence[str]) -> str:
    """The context line embedded before a chunk: ``"title > h1 > h2"``; the title is not added
    when the path already holds it (a Markdown H1, or a Confluence page title below its
    breadcrumbs)."""
    parts = [p for p in section_path if p]
    if title and title not in parts:
        parts.insert(0, title)
    return " > ".join(parts)


def _sha(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()


class StructureChunker:
    """Recursive structure-first chunker (see module docstring for the invariants).

    ``counter`` must count with the embedding model's tokenizer. ``max_tokens`` bounds
    prefix + rendered chunk + ``special_tokens`` (the model's [CLS]/[SEP] or equivalent).
    ``overlap_ratio`` in [0, 0.5). ``max_chars`` bounds every chunk's text in characters
    (default ``CHARS_PER_TOKEN * max_tokens``; at least 64). Raises :class:`ChunkingError`
    when the budget left for text is below 8 tokens or ``max_chars`` is below 64.
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        max_tokens: int,
        special_tokens: int = 2,
        overlap_ratio: float = 0.12,
        max_prefix_tokens: int = 32,
        max_chars: int | None = None,
    ) -> None:
        if max_chars is not None and max_chars < 64:
            raise ChunkingError(f"max_chars={max_chars} must be >= 64 characters")
        if not 0.0 <= overlap_ratio < 0.5:
            raise ChunkingError(f"overlap_ratio={overlap_ratio} must be in [0, 0.5)")
        if max_tokens - special_tokens - 8 < 8:
            raise ChunkingError(
                f"max_tokens={max_tokens} leaves no room for text after {special_tokens} special "
                "tokens; raise chunking.max_tokens"
            )
        self.counter = counter
        self.max_tokens = max_tokens
        self.special_tokens = special_tokens
        self.overlap_ratio = overlap_ratio
        self.max_chars = max_chars if max_chars is not None else CHARS_PER_TOKEN * max_tokens
        self.max_prefix_tokens = max(0, min(max_prefix_tokens, (max_tokens - special_tokens) // 4))
        self._prefixes: dict[str, str] = {}

    # ------------------------------------------------------------------ public API
    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        # fences mean code in Markdown and in the Markdown the HTML and PDF parsers write; a
        # stray ``` line in a .txt made the rest of the file "code" (review 42)
        fences = find_fences(text) if fenced(document.format) else []
        spans: list[tuple[_Section, int, int, str, str, int]] = []
        for section in _sections(document.blocks):
            prefix = self.prefix_for(document.title, section.path)
            budget = self.body_budget(prefix)
            for start, end, header, footer, tokens in self._chunk_section(
                text, section, budget, fences
            ):
                spans.append((section, start, end, header, footer, tokens))
        total = len(spans)
        metadata = chunk_metadata(document)
        chunks: list[Chunk] = []
        for index, (section, start, end, header, footer, tokens) in enumerate(spans):
            body = text[start:end]
            content_hash = _sha(header, body, footer)
            section_start = section.blocks[0].start
            pages = document.page_range(start, end)
            chunks.append(
                Chunk(
                    chunk_id=_sha(document.doc_id, start, end, content_hash)[:32],
                    doc_id=document.doc_id,
                    source=document.source,
                    title=document.title,
                    section_path=section.path,
                    text=body,
                    start=start,
                    end=end,
                    index=index,
                    total=total,
                    token_count=tokens,
                    parent_id=_sha(document.doc_id, section_start, *section.path)[:16],
                    content_hash=content_hash,
                    header=header,
                    footer=footer,
                    metadata=metadata,
                    language=chunk_language(_prose(text, section, start, end), document.language),
                    page_start=pages[0] if pages else None,
                    page_end=pages[1] if pages else None,
                    page_breaks=tuple(
                        document.pages[p - 1] - start for p in range(pages[0] + 1, pages[1] + 1)
                    )
                    if pages
                    else (),
                )
            )
        return chunks

    def prefix_for(self, title: str, section_path: Sequence[str]) -> str:
        """Heading-path prefix for a section, cut to ``max_prefix_tokens`` tokens."""
        prefix = heading_prefix(title, section_path)
        if not prefix or self.max_prefix_tokens == 0:
            return ""
        cached = self._prefixes.get(prefix)
        if cached is None:
            cut = self.counter.cut(prefix, self.max_prefix_tokens)
            cached = prefix[:cut].rstrip()
            if len(self._prefixes) > 50_000:
                self._prefixes.clear()
            self._prefixes[prefix] = cached
        return cached

    def body_budget(self, prefix: str) -> int:
        """Tokens left for ``chunk.rendered`` after the prefix line and special tokens."""
        prefix_tokens = self.counter.count(prefix) + 1 if prefix else 0
        return self.max_tokens - self.special_tokens - prefix_tokens

    @property
    def signature(self) -> str:
        """Policy version and settings; see :attr:`Chunker.signature`."""
        return (
            f"structure-v10:max={self.max_tokens}:overlap={self.overlap_ratio}"
            f":prefix={self.max_prefix_tokens}:chars={self.max_chars}"
        )

    def embedding_text(self, chunk: Chunk) -> str:
        """The exact text to embed for ``chunk``: prefix line + rendered chunk."""
        prefix = self.prefix_for(chunk.title, chunk.section_path)
        return f"{prefix}\n{chunk.rendered}" if prefix else chunk.rendered

    # ------------------------------------------------------------------ sections
    def _chunk_section(
        self, text: str, section: _Section, budget: int, fences: Sequence[Fence]
    ) -> Iterator[tuple[int, int, str, str, int]]:
        units: list[_Unit] = []
        tables: list[tuple[int, int, int, str]] = []  # (block start, header end, block end, header)
        counts = self._count_many([text[b.start : b.end] for b in section.blocks])
        for block, tokens in zip(section.blocks, counts, strict=True):
            for part in self._block_units(text, block, tokens, budget, fences, tables):
                units.extend(part)
                if len(units) >= PACK_UNITS:
                    yield from self._pack(text, units, budget, fences, tables)
                    units = []
        yield from self._pack(text, units, budget, fences, tables)

    def _block_units(
        self,
        text: str,
        block: Block,
        tokens: int,
        budget: int,
        fences: Sequence[Fence],
        tables: list[tuple[int, int, int, str]],
    ) -> Iterator[list[_Unit]]:
        """The units of ``block``, a window of the block at a time (:data:`SPLIT_WINDOW_CHARS`)."""
        atomic = block.kind in ("code", "table")
        if tokens <= budget and block.end - block.start <= self.max_chars:
            yield [_Unit(block.start, block.end, tokens, atomic)]
            return
        reserve = 0
        if block.kind == "table":
            header_end = _table_header_end(text, block.start, block.end)
            if header_end is not None:
                header = text[block.start : header_end] + "\n"
                header_tokens = self.counter.count(header) + 1
                # a header wider than half the budget is not repeated: the rows would not fit
                if header_tokens <= budget // 2:
                    tables.append((block.start, header_end, block.end, header))
                    reserve = header_tokens
        inner = [f for f in fences if f.open_start < block.end and f.close_end > block.start]
        if inner:
            reserve = max(
                reserve,
                max(self.counter.count(f.opener) + self.counter.count(f.closer) + 2 for f in inner),
            )
        inner_budget = budget - reserve
        if inner_budget < 4:
            raise ChunkingError(f"a table header or fence leaves {inner_budget} tokens for rows")
        if block.kind == "table" and tables and tables[-1][0] == block.start:
            # header rows travel with the first data rows, later rows get them as Chunk.header
            header_end = tables[-1][1]
            windows = self._split_windows(text, header_end, block.end, inner_budget)
            rows = next(windows, [])
            if rows:
                first = rows[0]
                merged = text[block.start : first.end]
                yield [_Unit(block.start, first.end, self.counter.count(merged), False), *rows[1:]]
                yield from windows
                return
        yield from self._split_windows(text, block.start, block.end, inner_budget)

    def _split_windows(self, text: str, start: int, end: int, budget: int) -> Iterator[list[_Unit]]:
        """:meth:`_split` of ``text[start:end]`` a window of at most :data:`SPLIT_WINDOW_CHARS`
        characters at a time, each cut at its last line break, else its last white space."""
        pos = start
        while pos < end:
            stop = end
            if end - pos > SPLIT_WINDOW_CHARS:
                limit = pos + SPLIT_WINDOW_CHARS
                cut = text.rfind("\n", pos + 1, limit)
                if cut <= pos:
                    cut = max(text.rfind(" ", pos + 1, limit), text.rfind("\t", pos + 1, limit))
                stop = cut if cut > pos else limit
            yield self._split(text, pos, stop, budget, 0)
            pos = stop

    def _count_many(self, pieces: Sequence[str]) -> list[int]:
        """Token counts of ``pieces``; :data:`TOO_LONG` for one over ``max_chars`` (never
        tokenized), the others counted in batches of :data:`COUNT_BATCH_CHARS` characters or
        :data:`COUNT_BATCH_PIECES` pieces."""
        counts = [TOO_LONG] * len(pieces)
        batch: list[int] = []
        size = 0

        def flush() -> None:
            for i, n in zip(
                batch, self.counter.count_many([pieces[i] for i in batch]), strict=True
            ):
                counts[i] = n
            batch.clear()

        for i, piece in enumerate(pieces):
            if len(piece) > self.max_chars:
                continue
            batch.append(i)
            size += len(piece)
            if size >= COUNT_BATCH_CHARS or len(batch) >= COUNT_BATCH_PIECES:
                flush()
                size = 0
        if batch:
            flush()
        return counts

    def _split(self, text: str, start: int, end: int, budget: int, level: int) -> list[_Unit]:
        """Units of ``text[start:end]`` each within ``budget``: lines, sentences, words, cut."""
        splitters: tuple[Callable[[str, int, int], list[tuple[int, int]]], ...] = (
            _lines,
            sentence_spans,
            _words,
        )
        if level >= len(splitters):
            return self._hard_cut(text, start, end, budget)
        parts = splitters[level](text, start, end)
        if len(parts) <= 1:
            return self._split(text, start, end, budget, level + 1)
        counts = self._count_many([text[a:b] for a, b in parts])
        units: list[_Unit] = []
        for (a, b), n in zip(parts, counts, strict=True):
            if n <= budget and b - a <= self.max_chars:
                units.append(_Unit(a, b, n, False))
            else:
                units.extend(self._split(text, a, b, budget, level + 1))
        return units

    def _hard_cut(self, text: str, start: int, end: int, budget: int) -> list[_Unit]:
        """Units of ``text[start:end]`` cut at ``budget`` tokens or ``max_chars`` characters,
        whichever comes first (the tokenizer only ever sees ``max_chars`` characters)."""
        units: list[_Unit] = []
        pos = start
        while pos < end:
            cut = pos + self.counter.cut(text[pos : min(end, pos + self.max_chars)], budget)
            a, b = strip_span(text, pos, cut)
            if a < b:
                units.append(_Unit(a, b, self.counter.count(text[a:b]), False))
            pos = cut
            while pos < end and text[pos].isspace():
                pos += 1
        return units

    # ------------------------------------------------------------------ packing
    def _pack(
        self,
        text: str,
        units: Sequence[_Unit],
        budget: int,
        fences: Sequence[Fence],
        tables: Sequence[tuple[int, int, int, str]],
    ) -> Iterator[tuple[int, int, str, str, int]]:
        """Greedy packing of ``units`` into chunks of at most ``budget`` exact tokens."""
        overlap_budget = int(self.overlap_ratio * self.max_tokens)
        queue = list(units)
        i = 0
        carry: list[_Unit] = []
        while i < len(queue):
            used = sum(u.tokens for u in carry)
            first = (carry or queue[i:])[0].start
            j = i
            while j < len(queue) and (
                j == i
                or (used + queue[j].tokens <= budget and queue[j].end - first <= self.max_chars)
            ):
                used += queue[j].tokens
                j += 1
            while True:  # exact count of the decorated chunk; shrink until it fits
                start = (carry or queue[i:])[0].start
                end = queue[j - 1].end
                header, footer = _decorations(text, start, end, fences, tables)
                tokens = self.counter.count(header + text[start:end] + footer)
                if tokens <= budget and end - start <= self.max_chars:
                    break
                if j - i > 1:
                    j -= 1
                elif carry:
                    carry = []
                else:
                    unit = queue[i]
                    smaller = max(1, unit.tokens - (tokens - budget) - 2)
                    pieces = self._hard_cut(text, unit.start, unit.end, smaller)
                    if len(pieces) <= 1:
                        raise ChunkingError(
                            f"cannot fit the text at offset {unit.start} into {budget} tokens"
                        )
                    queue[i : i + 1] = pieces
                    j = i + 1
            yield start, end, header, footer, tokens
            previous = [*carry, *queue[i:j]]
            i = j
            carry = []
            if i < len(queue):
                carry = self._overlap(
                    text, previous, overlap_budget, budget - queue[i].tokens, fences, tables
                )

    def _overlap(
        self,
        text: str,
        previous: Sequence[_Unit],
        overlap_budget: int,
        room: int,
        fences: Sequence[Fence],
        tables: Sequence[tuple[int, int, int, str]],
    ) -> list[_Unit]:
        """Trailing span of ``previous`` (at most ``min(overlap_budget, room)`` tokens, starting at
        a line or sentence boundary, outside code blocks (their fence lines included) and
        tables, and after the chunk's first character) that opens the next chunk; ``[]`` when
        none fits. The pieces of a code block or table too large for one chunk are not
        atomic, so the start is checked against the fences and tables themselves: a start
        inside them opened the next chunk with a comment's tail shown as code, or with a bare
        closing fence (a review, 2026-12-06)."""
        room = min(overlap_budget, room)
        if room <= 0 or not previous:
            return []
        prev_start, prev_end = previous[0].start, previous[-1].end
        floor = prev_start + 1
        for unit in previous:
            if unit.atomic:
                floor = max(floor, unit.end)
        # speed: tokens rarely span more than ~20 characters, so tails longer than room * 24
        # chars almost never fit; skipping them can only shorten the overlap, never break the
        # budget (the chosen tail is counted exactly below)
        floor = max(floor, prev_end - room * 24)
        candidates = sorted(
            {
                a
                for unit in previous
                if not unit.atomic and unit.end > floor
                for a, _ in (
                    *sentence_spans(text, unit.start, unit.end),
                    *_lines(text, unit.start, unit.end),
                )
                if a >= floor
                and not any(t_start <= a < t_end for t_start, _, t_end, _ in tables)
                and not any(f.open_start <= a < f.close_end for f in fences)
            }
        )
        low, high = 0, len(candidates)  # first candidate whose tail fits
        while low < high:
            mid = (low + high) // 2
            if self.counter.count(text[candidates[mid] : prev_end]) <= room:
                high = mid
            else:
                low = mid + 1
        if low == len(candidates):
            return []
        start = candidates[low]
        return [_Unit(start, prev_end, self.counter.count(text[start:prev_end]), False)]


# ---------------------------------------------------------------------- helpers
def _sections(blocks: Sequence[Block]) -> list[_Section]:
    """Group blocks by heading path; a heading with no body merges into its first subsection."""
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current: list[Block] = []
    path: tuple[str, ...] = ()
    for block in blocks:
        if block.kind == "heading":
            if current:
                sections.append(_Section(path, tuple(current)))
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            # an empty heading ("##") closes deeper sections but names none (review 42: its
            # "" showed as "A > " in the heading path)
            path = tuple(title for _, title in stack if title)
            current = [block]
        else:
            current.append(block)
    if current:
        sections.append(_Section(path, tuple(current)))
    merged: list[_Section] = []
    pending: list[Block] = []
    for index, section in enumerate(sections):
        blocks_here = (*pending, *section.blocks)
        pending = []
        nxt = sections[index + 1] if index + 1 < len(sections) else None
        heading_only = all(b.kind == "heading" for b in section.blocks)
        if (
            heading_only
            and nxt is not None
            and nxt.path[: len(section.path)] == section.path
            and len(nxt.path) > len(section.path)
        ):
            pending = list(blocks_here)
            continue
        merged.append(_Section(section.path, blocks_here))
    return merged


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    for m in re.finditer(r"[^\n]+", text[start:end]):
        a, b = strip_span(text, start + m.start(), start + m.end())
        if a < b:
            out.append((a, b))
    return out


def _words(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", text[start:end])]


def _table_header_end(text: str, start: int, end: int) -> int | None:
    """End offset of a pipe table's header row + separator row, or None if it has none."""
    first = text.find("\n", start, end)
    if first == -1:
        return None
    second = text.find("\n", first + 1, end)
    second = end if second == -1 else second
    return second if TABLE_DELIMITER.match(text[first + 1 : second]) else None


def _decorations(
    text: str,
    start: int,
    end: int,
    fences: Sequence[Fence],
    tables: Sequence[tuple[int, int, int, str]],
) -> tuple[str, str]:
    """Header/footer that make ``text[start:end]`` self-contained: a table's header rows when
    the chunk starts below them, a fence opener when it starts inside a fence, a fence closer
    when it ends inside one."""
    header, footer = "", ""
    for _, header_end, table_end, table_header in tables:
        if header_end < start < table_end:
            header = table_header
    for fence in fences:
        if fence.open_end < start < fence.close_end:  # the closing line too, once indented
            header = fence.opener + header
        if fence.open_start < end <= fence.close_start and start < fence.close_start:
            footer = footer + fence.closer
    return header, footer


def chunk_metadata(document: Document) -> Mapping[str, Any]:
    """What each chunk of ``document`` carries of its metadata, for ``meta.<key>`` filters:
    ``format``, then the document's own keys (front matter, ``modified``; for a Confluence
    page its ``author``, ``last_modified_by``, ``last_modified``, ``space`` and ``page_id``),
    each as text (:func:`~ragstrata.types.meta_text`: numbers as digits, booleans as
    ``true``/``false``, dates as ISO text), or a list of them ("any of" matches one item).
    Keys a filter cannot name, nested mappings, values over :data:`META_CHARS` characters,
    keys past the first :data:`META_KEYS` and keys that would take the total past
    :data:`META_TOTAL_CHARS` are left out: front matter is the author's, and every chunk
    stores what is kept."""
    meta: dict[str, Any] = {"format": document.format}
    found = dict(document.metadata)
    confluence = found.get("confluence")
    if isinstance(confluence, Mapping):
        for key in ("author", "last_modified_by", "last_modified", "space", "page_id"):
            if key in confluence:
                found.setdefault(key, confluence[key])
    size = 0
    for key, value in found.items():
        if len(meta) > META_KEYS:  # "format" and META_KEYS of the document's
            break
        if key in meta or key in _NOT_META or not isinstance(key, str):
            continue
        if not _META_KEY.fullmatch(key):
            continue
        kept = _meta_value(value)
        if kept is None:
            continue
        size += len(key) + sum(map(len, kept if isinstance(kept, list) else [kept]))
        if size > META_TOTAL_CHARS:  # a few long lists would weigh on every chunk
            continue
        meta[key] = kept
    return meta


def _meta_value(value: Any) -> Any:
    """``value`` as a chunk stores it, or ``None`` when it is left out (see
    :func:`chunk_metadata`)."""
    if isinstance(value, bool | int):
        return meta_text(value)
    if isinstance(value, float):
        return meta_text(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value if len(value) <= META_CHARS else None
    if hasattr(value, "isoformat"):  # YAML dates
        return str(value.isoformat())
    if isinstance(value, list | tuple):
        items = [_meta_value(v) for v in value[:META_KEYS]]
        if items and all(isinstance(v, str) for v in items):
            return items
    return None


_PROSE_KINDS = frozenset({"paragraph", "list", "quote"})


def _prose(text: str, section: _Section, start: int, end: int) -> str:
    """The prose of the chunk ``text[start:end]`` of ``section``: its paragraph, list and quote
    blocks, without code, tables, HTML/MDX elements and headings (whose MDX anchors are
    English slugs, ``{/*adding-state*/}``), whose words say nothing of the language the
    chunk is written in."""
    return "\n\n".join(
        text[max(b.start, start) : min(b.end, end)]
        for b in section.blocks
        if b.kind in _PROSE_KINDS and b.start < end and b.end > start
    )
