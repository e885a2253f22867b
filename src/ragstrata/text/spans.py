"""Spans of text: sentences and CommonMark code fences, as character offsets.

Shared by the chunker (split points, fences kept whole), the extractive answerer and the
citation checks (sentences outside code). Offsets are absolute positions in the text given, so
``text[start:end]`` is the span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FENCED_FORMATS",
    "TABLE_DELIMITER",
    "Fence",
    "after_abbreviation",
    "continues_sentence",
    "fenced",
    "find_fences",
    "inline_code_spans",
    "join_split_code",
    "sentence_spans",
    "strip_span",
]

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)$")  # matched from the line's content start
_ITEM_FENCE = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(`{3,}|~{3,})(.*)$")
"""A fence opening on a list item's marker line (``- ```js``, ``1. ```bash``): an opener only."""
_QUOTE_MARKER = re.compile(r"[ \t]*>[ \t]?")
_BACKTICKS = re.compile(r"`+")
TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
"""A pipe table's delimiter row, the line under its header (GFM: cells of hyphens with optional
colons, one hyphen is enough): the chunker repeats a table's header above each of its pieces,
the extractive answerer reads each row under it."""
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])[\"'”’)\]]*\s+|(?<=[。！？])")
_ABBREVIATIONS = frozenset(
    {
        # English
        *("vs", "e.g", "i.e", "cf", "approx", "mr", "mrs", "ms", "dr", "prof", "jr", "sr", "st"),
        # Spanish ("p. ej." ends in "ej"; "EE. UU." has its first half here)
        *("p.ej", "ej", "aprox", "sra", "srta", "dra", "lic", "ing", "ud", "uds", "vd", "vds"),
        *("sres", "sras", "dres", "dras", "av", "avda", "sto", "sta", "dña", "dª"),
        "ee",
    }
)
"""Words that a period after does not end a sentence ("vs.", "e.g.", "p. ej.", "Sra."),
compared in lower case."""
_NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "vol", "vols", "pp", "p", "fig", "figs", "eq", "eqs", "sec", "ch", "núm", "pág"}
    | {"art", "cap", "nr", "nro"}
)
"""Words that a period after does not end a sentence when a digit follows ("No. 5", "pág. 12",
"Fig. 3"): "no." also ends English sentences."""
_WORD_BEFORE = re.compile(r"(\w+(?:\.\w+)*)\.$")


@dataclass(frozen=True, slots=True)
class Fence:
    """A fenced code region: opening line ``[open_start, open_end)``, closing line
    ``[close_start, close_end)``; ``opener``/``closer`` re-open and close it in a split chunk."""

    open_start: int
    open_end: int  # end of the opening fence line (exclusive, before "\n")
    close_start: int  # start of the closing fence line, or len(text) if never closed
    close_end: int
    opener: str
    closer: str


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` narrowed past leading and trailing whitespace of ``text[start:end]``
    (``start == end`` when it is all whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` (absolute offsets, trimmed, non-empty), split after
    ``. ! ? …`` and CJK full stops followed by whitespace, except where the sentence goes on:
    a lower-case letter follows a period or ellipsis, or the period ends an abbreviation
    ("vs.", "e.g.", "p. ej.", "Sra.", "No. 5"; see :data:`_ABBREVIATIONS`)."""
    out = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if continues_sentence(text, m.start(), m.end(), end):
            continue
        a, b = strip_span(text, pos, m.end())
        if a < b:
            out.append((a, b))
        pos = m.end()
    a, b = strip_span(text, pos, end)
    if a < b:
        out.append((a, b))
    return out


def continues_sentence(text: str, stop: int, after: int, end: int) -> bool:
    """Whether the sentence goes on past the stop before ``text[stop]`` (``after``: where the
    next sentence would start): a period or ellipsis followed by a lower-case letter, or a
    period after an abbreviation (:data:`_ABBREVIATIONS`, or :data:`_NUMBER_ABBREVIATIONS`
    before a digit)."""
    mark = text[stop - 1]
    if mark not in ".…" or after >= end:
        return False
    following = text[after]
    if following.islower():
        return True
    if mark != ".":
        return False
    word = _WORD_BEFORE.search(text, max(0, stop - 12), stop)
    if word is None:
        return False
    if _DOUBLED.fullmatch(word.group(1)) and _DOUBLED_NEXT.match(text, after, end):
        return True  # a Spanish plural abbreviation: "RR. HH.", "CC. OO.", "FF. AA."
    before = word.group(1).lower()
    return before in _ABBREVIATIONS or (following.isdigit() and before in _NUMBER_ABBREVIATIONS)


_DOUBLED = re.compile(r"([A-ZÁÉÍÓÚÑ])\1")
_DOUBLED_NEXT = re.compile(r"([A-ZÁÉÍÓÚÑ])\1\.")
"""The halves of a Spanish plural abbreviation, a letter doubled ("RR. HH." recursos humanos,
"CC. OO.", "FF. AA."): review 31 found "…en el portal de RR." quoted as a sentence."""


def after_abbreviation(text: str, start: int) -> bool:
    """Whether ``text[start]`` follows an abbreviation's period and spaces ("Dra. |Marta",
    "Mr. |Smith"): a capitalized word there goes on the sentence, it does not start one."""
    stop = len(text[:start].rstrip())
    if stop == start or stop == 0 or text[stop - 1] != ".":
        return False
    word = _WORD_BEFORE.search(text, max(0, stop - 12), stop)
    return word is not None and word.group(1).lower() in _ABBREVIATIONS


FENCED_FORMATS = frozenset({"markdown", "html", "pdf"})
"""Document formats whose text marks code with fences: Markdown, and the Markdown that the HTML,
Confluence and PDF parsers write for ``<pre>`` and monospace lines. In plain text a line of
backticks is only text (review 42: one stray line made the rest of a .txt file code)."""


def fenced(fmt: object) -> bool:
    """Whether a document of format ``fmt`` (``Document.format``, a chunk's ``format``
    metadata) marks code with fences; an unknown format (``None``: chunks stored before the
    metadata existed) is read as Markdown."""
    return fmt is None or fmt in FENCED_FORMATS


def _quote_prefix(line: str) -> tuple[int, int]:
    """Blockquote depth of ``line`` (how many ``>`` markers open it) and where its content
    starts after them."""
    depth = at = 0
    while (m := _QUOTE_MARKER.match(line, at)) is not None:
        depth += 1
        at = m.end()
    return depth, at


def find_fences(text: str) -> list[Fence]:
    """CommonMark fenced code regions (opening line, closing line) over the whole text.

    A fence inside a blockquote (``> ```bash``) is one too (review 42: such a block was split
    with unbalanced fences): its lines carry the same ``>`` markers, a line with fewer of them
    ends the quote and so the fence, and its ``opener``/``closer`` carry the markers
    (``"> ```bash\\n"``) so that a re-opened piece stays inside the quote. A fence may open on a
    list item's marker line (``- ```js``), its closing line indented under the item."""
    fences: list[Fence] = []
    pos = 0
    # start, end, marker, opener line, quote depth
    open_fence: tuple[int, int, str, str, int] | None = None

    def add(fence: tuple[int, int, str, str, int], close_start: int, close_end: int) -> None:
        quote = "> " * fence[4]
        opener, closer = quote + fence[3] + "\n", "\n" + quote + fence[2]
        fences.append(Fence(fence[0], fence[1], close_start, close_end, opener, closer))

    for line in text.split("\n"):
        line_end = pos + len(line)
        depth, content = _quote_prefix(line)
        if open_fence is not None and depth < open_fence[4]:  # the quote ended, and the fence
            end = max(pos - 1, open_fence[1])  # after its last line
            add(open_fence, end, end)
            open_fence = None
        m = _FENCE.match(line, content)
        if m is None and open_fence is None:
            # review 44: unseen, the item's closing fence opened one to the end of the text
            m = _ITEM_FENCE.match(line, content)
        if m:
            marker = m.group(1)
            if open_fence is None:
                if not (marker[0] == "`" and "`" in m.group(2)):
                    # a split chunk re-opens the fence with its language only: info strings
                    # such as MDX line highlights (```js [[1, 7, "fn"], ...]) can be longer
                    # than a whole chunk
                    info = m.group(2).split()
                    opener = marker + (info[0] if info else "")
                    open_fence = (pos, line_end, marker, opener, depth)
            elif (
                depth == open_fence[4]
                and marker[0] == open_fence[2][0]
                and len(marker) >= len(open_fence[2])
                and not m.group(2).strip()
            ):
                add(open_fence, pos, line_end)
                open_fence = None
        pos = line_end + 1
    if open_fence is not None:
        add(open_fence, len(text), len(text))
    return fences


def inline_code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """CommonMark inline code spans of ``text[start:end]`` (absolute offsets, backticks
    included): a run of n backticks up to the next run of exactly n; an unmatched run is
    literal text."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text, start, end)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        a, b = runs[i]
        closer = next(
            (j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == b - a), None
        )
        if closer is None:
            i += 1
            continue
        spans.append((a, runs[closer][1]))
        i = closer + 1
    return spans


def join_split_code(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (sorted, from :func:`sentence_spans`) with neighbours joined where the
    boundary between them falls inside an inline code span (a backticked error message such
    as "Too many re-renders. React limits…" stays in one sentence, not two with an unbalanced
    backtick each)."""
    if len(spans) < 2:
        return spans
    code = inline_code_spans(text, spans[0][0], spans[-1][1])
    out = [spans[0]]
    for a, b in spans[1:]:
        prev_a, prev_b = out[-1]
        if any(c0 < a and prev_b < c1 for c0, c1 in code):
            out[-1] = (prev_a, b)
        else:
            out.append((a, b))
    return out
