"""Offline extractive answerer: the default :class:`~ragstrata.generate.answerer.Answerer`
when no LLM is configured.

It refuses on the evidence check (:func:`~ragstrata.generate.evidence.check_evidence`, the LLM
answerer's too), assembles the hits into numbered sources, then picks the sentences of the
context that best answer the question, scored by ``0.7 · cosine(question, sentence) + 0.3 ·
lexical coverage`` (the rarity-weighted share of the question's BM25 terms present in the
sentence, :func:`~ragstrata.text.analyzer.term_weights`: a term every candidate sentence
shares, such as the article's subject, counts little, the one that singles out the answer's
sentence much), plus, when the evidence check has a reader (``llm.reader``, the e5 default),
:data:`READER_SENTENCE_WEIGHT` × the reader's probability that the sentence answers the question
for the :data:`READER_SENTENCES` best of them; tags each with its source label ``[n]``, and
never cites a source it did not quote (refusing with ``no_quotes`` when no sentence can be
quoted). Cited sources are renumbered 1..n in order of
first citation. Code inside fences and headings are not answer sentences; a table's data row
is one, read with its header ("setting: port; default: 8000");
a sentence is never cut inside inline code; a sentence that ends in ``:`` brings the code block
or list that follows it (the answer it announces); links show their text only.

A small prior for the hit's retrieval rank (``rank_weight / (1 + rank)``) breaks near-ties in
favour of the better-ranked source. When quotable sentences of different documents give
different values for one quantity ("31 días" against "99 días") in otherwise the same statement
(:func:`same_statement`), both are quoted and the answer carries a
:class:`~ragstrata.types.SourceDisagreement`: a planted or stale page is then visible next to
the one it contradicts instead of silently winning.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragstrata.assemble.context import Context, Source, assemble, resolve_versions
from ragstrata.embed.base import Embedder
from ragstrata.generate.answerer import AnswerEvent, AskEvent, refusal, word_tokens
from ragstrata.generate.evidence import NO_EVIDENCE_RULE, EvidenceRule, check_evidence
from ragstrata.text.analyzer import Analyzer, term_weights
from ragstrata.text.language import query_language
from ragstrata.text.spans import (
    TABLE_DELIMITER,
    Fence,
    fenced,
    find_fences,
    join_split_code,
    sentence_spans,
    strip_span,
)
from ragstrata.text.tokens import TokenCounter
from ragstrata.types import Answer, Citation, Hit, RefusalReason, SourceDisagreement

if TYPE_CHECKING:
    from ragstrata.generate.reader import Reader

_MDX = re.compile(
    r"\{/\*.*?\*/\}|</?[A-Z][a-z][\w.]*(?:\s[^<>]*)?/?>"
    r"|\{\s*#[\w-]+\s*\}"  # MkDocs heading anchors: { #path-parameters }
    # HTML elements left in Markdown/MDX prose (<div>(Traducción)</div>); by name, so that a
    # placeholder such as <path> stays
    r"|</?(?:a|abbr|b|br|center|cite|details|dfn|div|em|figcaption|figure|font|hr|i|img|kbd"
    r"|li|mark|ol|p|q|samp|section|small|span|strong|sub|summary|sup|table|tbody|td|th|thead"
    r"|tr|u|ul|var)"
    r"(?:\s[^<>]*)?/?>"
)
_INLINE_CODE = re.compile(r"(`+[^`]*?`+)")
_HTML_CODE = re.compile(r"<code>([^<>`\n]*)</code>")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_OPENS = r"(?<![^\s(\[\"'¿¡])"  # the start, white space or an opening mark before
_STAR = re.compile(_OPENS + r"\*(?=[^\W_])([^*\n]*?[^\s*\\])\*(?![\w*])")
_UNDERSCORE = re.compile(_OPENS + r"_(?=[^\W_])([^_\n]*?[^\s_\\])_(?!\w)")
"""Single emphasis ``*muy*``, ``_keys_``: opened after white space or an opening mark and
closed before no word character, so ``snake_case``, ``a*b*c``, ``*args`` and the globs of
``debian/*.install and debian/*.dirs`` stay as written (review 38)."""
_CODE_EMPHASIS_OPEN = re.compile(_OPENS + r"([*_])$")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)|\[([^\]\n]+)\]\[[^\]\n]*\]")
_NUMBER_UNIT = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)\s*(%|[^\W\d_]{3,})")
_MAX_BLOCK_LINES = 30
"""Longest code block or list a sentence ending in ``:`` brings along (lines)."""
_MAX_SENTENCE_CHARS = 600
"""Longest candidate sentence in characters; longer runs are cut into pieces (:func:`_windows`)."""
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")
_REFERENCE = re.compile(r"(?<![\w\]\[])\[(\d{1,3}(?:\s*[,–-]\s*\d{1,3})*)\](?!\()")
"""A document's own numbered reference in prose ("the examples in [11]", "[2, 3]"): shown as
``(11)``, since in an answer ``[n]`` is a citation (trial 40: a quoted "[11]" read as one).
Not after a word or inside code (``arr[2]``)."""
_ORDERED_ITEM = re.compile(r"[ \t]*(\d{1,3}[.)])[ \t]+")
_SUPERSCRIPT_DIGITS = "\u00b9\u00b2\u00b3\u2070\u2074\u2075\u2076\u2077\u2078\u2079"
_FOOTNOTE_MARK = re.compile(
    rf"\s+[{_SUPERSCRIPT_DIGITS}]+(?=[\s.,;:!?)]|$)|^[{_SUPERSCRIPT_DIGITS}]+(?=\w)"
)
"""A PDF footnote mark in a sentence: superscript digits standing apart ("compilación ⁵.") or
opening a footnote's text ("⁴Contrariamente"); "m²" keeps its exponent."""
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")


@dataclass(frozen=True, slots=True)
class Quote:
    """A sentence taken from source ``label``: ``chunk.text[start:end]`` (chunk-relative)."""

    label: int
    start: int
    end: int
    text: str
    score: float
    block: str = ""
    """The code block or list the sentence announces (``text`` ends in ``:``), verbatim;
    ``end`` then covers it."""
    marker: str = ""
    """The number of the ordered-list item the sentence opens (``"2."``), shown before it."""


@dataclass(frozen=True, slots=True)
class Generated:
    """Answer text with the quotes it is built from (empty when nothing relevant was found)."""

    text: str
    quotes: tuple[Quote, ...]
    disagreements: tuple[SourceDisagreement, ...] = ()
    """Claims labelled with the sources' context labels (the answer renumbers them)."""


_LONE_TAG = re.compile(r"[ \t]*</?[a-z][\w-]*(?:\s[^<>\n]*)?>[ \t]*(?:\n|$)")
"""A line holding one HTML tag and nothing else (the ``<div class="termy">`` that wraps the
FastAPI docs' console blocks): skipped between a sentence ending in ``:`` and its block."""
_ANNOUNCES = re.compile(
    r"\b(?:as (?:shown|follows)|the following|below|como (?:se muestra|sigue)|a continuación"
    r"|(?:lo|la|el|los|las) siguientes?|siguientes? (?:orden|órdenes|comandos?|ejemplo)"
    r"|(?:\d{1,2}|dos|tres|cuatro|cinco|seis|two|three|four|five|six|these|estos|estas)"
    r" (?:pasos|etapas|maneras|formas|opciones|steps|stages|ways|options))\b",
    re.IGNORECASE,
)
"""Words by which a sentence ending in a stop announces the code or list after it ("... como
se muestra." before ``# deluser --remove-home fish``; "Este proceso consta de 2 pasos." before
its two steps, which trial 43's answer left out)."""
_WHY_QUESTION = re.compile(r"\W*(?:por\s+qu[ée]|why)\b", re.IGNORECASE)
_GIVES_REASON = re.compile(
    r"\b(?:porque|ya que|debido a|dado que|puesto que|a causa de|por eso|para que|por lo que"
    r"|con el fin de|because|since|due to|so that|in order to|therefore)\b",
    re.IGNORECASE,
)
WHY_REASON_BONUS = 0.03
"""Added to the score of a sentence that gives a reason ("porque", "ya que", "because", ...)
when the question asks why ("¿Por qué ...?", "Why ..."): such questions were answered with the
statement, not its reason. Chosen on SQuAD-es's training half (0.03 / 0.06 / 0.1: 39 -> 41 /
41 / 40 of 49 answered "por qué" questions containing the gold answer); held-out half 50 -> 51
of 65 (exploratory script over ``ask``, not kept)."""
READER_SENTENCE_WEIGHT = 0.2
"""Weight of the reader's probability that a sentence answers the question (``sigmoid`` of its
logit for :func:`_reader_text`: the sentence under its headings, with the block it announces),
added to the score of each of the :data:`READER_SENTENCES` best sentences when the answerer
has a reader. Chosen on training questions (0.1 / 0.2 / 0.3 / 0.4 compared; docs/generation.md,
"The reader picks among the best sentences"): more answers contain the gold sentence and they
are shorter, since the relative floor then drops the sentences the reader says do not answer."""
OTHER_DOCUMENT_FLOOR = 0.85
"""Share of the best sentence's score that a sentence of another document than the best one's,
under another title, must reach to be quoted (a sentence of the same document, or of one with
the same title, needs the relative floor, 0.75). The title exemption: SQuAD-es keeps each
paragraph of an article as a document of the article's title, and the floor without it cost
the held-out answer gate 2 of 100 answers containing the gold (CI79); with it, SQuAD-es train
answers are as before the floor (contains 0.8866, cites 0.9588, words 70.6 against 72.1) and
the written ES→ES train answers as with it (0.5741, 60.8 words). First measured:
two new-user trials found answers padded with a weak sentence of an unrelated page ("Puede
deshabilitar ibus ..." under a question on Friday deploys). Chosen on training questions only
(0.85 and a coverage rule, other-document sentences under half the best one's coverage,
compared; an ``eval-answers``-style script over ``ask``, not kept):
written FastAPI ES→ES / EN→EN train and SQuAD-es train (100 questions), answers containing the
gold unchanged (0.5741, 0.6226, 0.8866), words per answer 62.1 → 60.8, 66.5 → 64.8,
72.1 → 62.3; one ES→ES and one SQuAD-es answer cite the gold document no more (only padding
that did not hold the answer had cited it)."""
READER_SENTENCES = 8
"""How many of the best-scored sentences the reader reads (8 and 16 gave the same answers on
the training questions); the others are not quoted when a reader is set."""
_CELL_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_CODE_LINK = re.compile(r"(?<!!)\[([^\]\n]*`[^\]\n]*)\]\([^)\n]*\)")
"""A link whose text holds inline code (``[`useState`](/reference/react/useState)``): the
inline-code split would cut it apart, so it becomes its text first."""
_QUOTE_CONTINUATION = re.compile(r"\n[ \t]*(?:>[ \t]?)+")
"""The blockquote markers of a sentence's second and later lines."""
_ADMONITION_TITLE = re.compile(
    r"(?:\[!\w+\]|\**(?:note|nota|tip|consejo|warning|advertencia|caution|precaución|important|"
    r"importante|info|información|danger|peligro|pitfall|deep ?dive)\**:?)\s*$",
    re.IGNORECASE,
)
"""A blockquote line that only titles it (``> Note``, ``> **Nota**``, ``> [!WARNING]``)."""
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A quotable sentence ``text[start:end]`` (chunk-relative) and, when it ends in ``:``,
    the block that follows it, ``text[end:block_end]`` (``block_end == end``: none)."""

    start: int
    end: int
    block_end: int
    shown: str = ""
    """Display text when it is not the cleaned span (a table row read with its header)."""


def _table_rows(
    text: str, fenced: Sequence[tuple[int, int]], *, lead: str = ""
) -> list[_Candidate]:
    """The data rows of the pipe tables of ``text`` (a header row, a separator row, then rows
    starting with ``|``; not inside a fenced block), each shown as ``header: cell`` pairs
    joined by ``; `` (empty cells left out, a cell under an empty header shown alone, a row
    number under one left out; line breaks in a cell read as ``, ``), so that
    a row says what its numbers are: ``| Run 11 | 12.5 | 103.4 |`` under ``| Run | U (m/s) |
    T (°C) |`` reads "Run: Run 11; U (m/s): 12.5; T (°C): 103.4". The quote's offsets are the
    row's, so its citation is the row verbatim. ``lead``: the chunk's ``header``, which holds
    the header and separator rows of a table split across chunks (the rows that open the
    chunk are read under them; trial 43: no row of a split table's later chunks could be
    quoted). A table without its header gives no rows (they would not say what they hold)."""
    lines: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    out: list[_Candidate] = []

    def rows(header: list[str], i: int) -> int:
        """Read the rows from line ``i`` under ``header``; the line after the last row."""
        while i < len(lines) and text[lines[i][0] : lines[i][1]].strip().startswith("|"):
            a, b = lines[i]
            cells = [_clean_cell(c) for c in _cells(text[a:b].strip())]
            pairs = [
                f"{h}: {c}" if h else c
                for h, c in zip(header, cells, strict=False)
                if c and (h or not c.isdigit())  # a row number under an empty header says nothing
            ]
            if pairs:
                out.append(_Candidate(a, b, b, "; ".join(pairs)))
            i += 1
        return i

    i = 0
    carried = [line.strip() for line in lead.strip("\n").split("\n")][-2:]
    if (
        len(carried) == 2
        and carried[0].startswith("|")
        and TABLE_DELIMITER.match(carried[1])
        and "|" in carried[1]
    ):
        i = rows([_clean_cell(c) for c in _cells(carried[0])], 0)
    while i + 1 < len(lines):
        a, b = lines[i]
        row, sep = text[a:b].strip(), text[lines[i + 1][0] : lines[i + 1][1]]
        inside = any(f0 <= a <= f1 for f0, f1 in fenced)
        if inside or not row.startswith("|") or not TABLE_DELIMITER.match(sep) or "|" not in sep:
            i += 1
            continue
        i = rows([_clean_cell(c) for c in _cells(row)], i + 2)
    return out


def _clean_cell(cell: str) -> str:
    """A table cell for display: its line breaks (``<br>``, what HTML and Confluence tables
    hold) and list dashes become ``, `` (or a space after a stop), then :func:`clean_sentence`:
    "Congelar despliegues<br>Avisar a seguridad" reads "Congelar despliegues, Avisar a
    seguridad", not "desplieguesAvisar"."""
    parts = [p.strip() for p in _CELL_BREAK.split(cell)]
    shown = ""
    for part in (_LIST_ITEM.sub("", p) for p in parts if p):
        if shown:
            shown += " " if shown[-1] in ".:;,!?" else ", "
        shown += part
    return clean_sentence(shown)


def _cells(row: str) -> list[str]:
    """The cells of a pipe-table row (outer pipes optional, ``\\|`` and pipes inside inline
    code kept in their cell)."""
    parts = _INLINE_CODE.split(row.strip().removeprefix("|").removesuffix("|"))
    cells, current = [], ""
    for n, part in enumerate(parts):
        if n % 2:  # inline code: a pipe in it is no separator
            current += part
            continue
        pieces = re.split(r"(?<!\\)\|", part)
        current += pieces[0]
        for piece in pieces[1:]:
            cells.append(current.strip())
            current = piece
    cells.append(current.strip())
    return [c.replace("\\|", "|") for c in cells]


def _candidates(source: Source) -> list[_Candidate]:
    """Sentences (chunk-relative) of the chunk's prose.

    Consecutive text lines form one paragraph, so sentences of hard-wrapped Markdown are not cut
    at line ends, nor inside inline code; a list item starts a new paragraph, and so does a
    blockquote's empty ``>`` line (its title line, ``> Note``, is no prose). Fenced code,
    headings, HTML/MDX lines and admonition markers (``/// note``, ``!!! tip``, ``:::``) are
    not prose; a table's data rows are candidates of their own, read with their header
    (:func:`_table_rows`). A list item of at most :data:`LIST_ITEM_WORDS` words is one
    candidate. A sentence ending in ``:`` takes the fenced block or the list right after it (up
    to :data:`_MAX_BLOCK_LINES` lines).
    """
    chunk = source.hit.chunk
    text = chunk.text
    # fences only where the format has them: a stray ``` line in a .txt hid every sentence after
    # it from the quote (review 42)
    fences = find_fences(text) if fenced(chunk.metadata.get("format")) else []
    in_fence = [(f.open_start, f.close_end) for f in fences]
    spans: list[tuple[int, int]] = []
    para: tuple[int, int] | None = None
    item = -1  # where the paragraph's list item text starts, after its marker (-1: no item)

    def flush() -> None:
        if para is not None:
            joined = _with_short_followers(
                text, join_split_code(text, sentence_spans(text, para[0], para[1]))
            )
            if item >= 0:  # a list item: its sentences start after its marker
                joined = [(a, b) for a, b in joined if b > item]
                if joined:
                    joined[0] = strip_span(text, max(joined[0][0], item), joined[0][1])
                    a, b = joined[0][0], joined[-1][1]
                    if len(joined) > 1 and len(text[a:b].split()) <= LIST_ITEM_WORDS:
                        joined = [(a, b)]
            for a, b in joined:
                spans.extend(_windows(text, a, b))

    pos = 0
    for line in text.split("\n"):
        start, end = pos, pos + len(line)
        pos = end + 1
        stripped = line.strip()
        quoted = stripped.lstrip("> \t")  # a blockquote line without its markers
        prose = not (
            any(a <= start <= b for a, b in in_fence)
            or not quoted
            or (quoted != stripped and _ADMONITION_TITLE.match(quoted) is not None)
            or stripped.startswith(("#", "|", "<", "{", "///", "!!!", ":::"))
            or _SEPARATOR.match(line)
        )
        marker = _LIST_ITEM.match(line)
        if not prose or marker:
            flush()
            para = (start, end) if prose else None
            item = start + marker.end() if prose and marker else -1
        elif para is None:
            para, item = (start, end), -1
        else:
            para = (para[0], end)
    flush()
    sentences = [_Candidate(a, b, _announced_block(text, a, b, fences)) for a, b in spans]
    return sorted(sentences + _table_rows(text, in_fence, lead=chunk.header), key=lambda c: c.start)


LIST_ITEM_WORDS = 40
"""A list item of at most this many words is one candidate, all its sentences together: an
item is one statement, and its second sentence alone often leaves out what it is about
("Comúnmente se usa después de crear un nuevo registro" was quoted without "Otro ejemplo sería
`201`, "Created"." before it)."""

SHORT_FOLLOWER_WORDS = 5
"""A sentence of at most this many words is quoted with the sentence before it in its
paragraph ("Defaults to `False`." after "`allow_credentials` - Indicate that cookies ...")."""


def _with_short_followers(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (one paragraph's sentences, in order) with each sentence of at most
    :data:`SHORT_FOLLOWER_WORDS` words joined to the one before it: alone it names nothing
    ("Defaults to `False`.", "Es opcional."), and it lost to sentences repeating the
    question's words although it held the answer."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and len(text[a:b].split()) <= SHORT_FOLLOWER_WORDS:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` as is, or, when longer than :data:`_MAX_SENTENCE_CHARS` (a run
    without stops: a one-line text file, a minified page), cut at white space into pieces of at
    most that length (a longer word is cut), each a candidate: a quote is never a
    4,000-character wall."""
    if end - start <= _MAX_SENTENCE_CHARS:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    a = start
    while a < end:
        b = min(a + _MAX_SENTENCE_CHARS, end)
        if b < end:
            cut = text.rfind(" ", a + 1, b + 1)
            b = cut if cut > a else b
        a, b = strip_span(text, a, b)
        if a < b:
            out.append((a, b))
        a = max(b, a + 1)
    return out


SHORT_CODE_LINES = 2
"""A fenced block of at most this many lines right after the last sentence of a paragraph is
that sentence's, whatever the sentence ends with: a command shown under the sentence that says
what it does ("El mensaje de error que se muestra en la consola se determina mediante la
configuración de su nivel de umbral." above ``# dmesg -n3``, trial 37) was never quoted, since
code is no sentence and no lead-in announced it."""


_INCLUDE_LINE = re.compile(r"\s*\{([!*]).*\1\}\s*$")
"""A file include of the MkDocs sources (``{!../../docs_src/app.py!}``, ``{* app.py *}``):
no code a reader can see."""


def _fence_at(at: int, fences: Sequence[Fence]) -> Fence | None:
    """The fenced block whose opening line holds offset ``at`` (its indent included: a fence
    inside a list item opens after spaces), or None."""
    for fence in fences:
        if fence.open_start <= at <= fence.open_end:
            return fence
    return None


def _after_space(text: str, end: int) -> int:
    """Offset of the first character after ``text[end:]``'s leading white space."""
    rest = text[end:]
    return end + len(rest) - len(rest.lstrip())


def _short_code_after(text: str, end: int, fences: Sequence[Fence]) -> int:
    """End of the closed fenced block of at most :data:`SHORT_CODE_LINES` non-empty lines
    that follows ``text[:end]`` after nothing but white space; ``end`` when none does, or when
    the block includes a file (:data:`_INCLUDE_LINE`)."""
    fence = _fence_at(_after_space(text, end), fences)
    if fence is None or fence.close_start >= len(text):
        return end
    code = text[fence.open_end : fence.close_start]
    lines = [line for line in code.split("\n") if line.strip()]
    include = any(_INCLUDE_LINE.match(line) for line in lines)
    return fence.close_end if lines and not include and len(lines) <= SHORT_CODE_LINES else end


def _announced_block(text: str, start: int, end: int, fences: Sequence[Fence]) -> int:
    """End of the code block or list that the sentence ``text[start:end]`` announces with a
    final ``:`` or with words such as "as shown" / "como se muestra" before its stop (``end``
    when it announces none, or the block is longer than :data:`_MAX_BLOCK_LINES` lines or cut
    off by the chunk's end)."""
    sentence = text[start:end].rstrip()
    if not sentence.endswith(":") and not (
        sentence.endswith(".") and _ANNOUNCES.search(sentence) is not None
    ):
        return _short_code_after(text, end, fences)
    at = _after_space(text, end)
    while wrapper := _LONE_TAG.match(text, at):  # <div class="termy"> around a console block
        at = _after_space(text, wrapper.end())
    if (fence := _fence_at(at, fences)) is not None:
        closed = fence.close_start < len(text)
        lines = text.count("\n", fence.open_start, fence.close_end)
        return fence.close_end if closed and lines <= _MAX_BLOCK_LINES else end
    block_end, pos, lines = end, at, 0
    while pos < len(text) and lines < _MAX_BLOCK_LINES:
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        line = text[pos:line_end]
        fence = _fence_at(pos, fences) if block_end > end else None
        if _LIST_ITEM.match(line) or (block_end > end and line.startswith(("  ", "\t"))):
            block_end, lines = line_end, lines + 1
        elif fence is not None and fence.close_start < len(text):
            # a step's command block between two items belongs to the list (trial 43:
            # "consta de 2 pasos." then "1. Ejecute ssh ..." with its command, then "2. ...")
            block_end = fence.close_end
            lines += text.count("\n", fence.open_start, fence.close_end) + 1
            line_end = fence.close_end
        elif line.strip() or block_end > end:
            break
        pos = line_end + 1
    return block_end


def _unwrap_code(parts: list[str]) -> list[str]:
    """``parts`` (prose and inline code alternating, as split by ``_INLINE_CODE``) without the
    emphasis markers around a code span, ``_`key`_`` → ``key`` in code (trial 37); a ``*``
    between two code spans (`` `docs/*` and `*.md` ``) is no marker (review 38)."""
    for i in range(1, len(parts) - 1, 2):
        before, after = parts[i - 1], parts[i + 1]
        opener = _CODE_EMPHASIS_OPEN.search(before)
        if opener and after[:1] == opener.group(1) and not re.match(r".[\w*]", after[:2]):
            parts[i - 1], parts[i + 1] = before[:-1], after[1:]
    return parts


def clean_sentence(text: str) -> str:
    """Sentence for display: MDX/MkDocs anchors and components, images, bold markers and
    list/quote markers removed, links shown as their text, a document's own numbered
    references as ``(n)`` (:data:`_REFERENCE`; inline code is kept as written)."""
    text = _QUOTE_CONTINUATION.sub("\n", text)
    text = _CODE_LINK.sub(lambda m: m.group(1), text)  # [`useState`](/reference/...)
    text = _HTML_CODE.sub(lambda m: f"`{m.group(1)}`", text)  # <code>get</code>: `get`
    parts = _unwrap_code(_INLINE_CODE.split(text))  # odd items: inline code, kept as written
    for i in range(0, len(parts), 2):  # markup is removed outside code only: `<StrictMode>`
        part = _IMAGE.sub(lambda m: m.group(1), _MDX.sub("", parts[i]))
        part = _LINK.sub(lambda m: m.group(1) or m.group(2), part)
        part = _EMPHASIS.sub(lambda m: m.group(2), part)
        part = _UNDERSCORE.sub(r"\1", _STAR.sub(r"\1", part))  # _keys_ (trial 37)
        parts[i] = _REFERENCE.sub(r"(\1)", part)
    prose = parts[0::2]
    if sum(p.count("**") for p in prose) % 2 == 0:  # bold around code: **No uses `useId`**
        parts[0::2] = [p.replace("**", "") for p in prose]
    text = _MARKUP.sub("", "".join(parts))
    text = _FOOTNOTE_MARK.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


def _shown_in_block(
    items: Sequence[tuple[Source, _Candidate, str]], inner: int, outer: int
) -> bool:
    """Whether sentence ``inner`` lies inside the block that sentence ``outer`` (a lead-in
    ending in ":") shows after itself, in the same chunk: quoting both would say it twice."""
    source_in, cand_in, _ = items[inner]
    source_out, cand_out, _ = items[outer]
    return (
        source_in.hit.chunk.chunk_id == source_out.hit.chunk.chunk_id
        and cand_out.block_end > cand_out.end
        and cand_in.start >= cand_out.end
        and cand_in.end <= cand_out.block_end
    )


def _clean_block(block: str) -> str:
    """A block for display: a code block verbatim (trimmed), list items one per line with
    their links shown as text, a numbered item with its number ("1.", "2.") and any other
    with "- ". An indented line that opens no item continues the item above it (Markdown's
    wrapped list items: one item, not one per source line)."""
    block = _LONE_TAG.sub("", block).strip("\n")
    if block.lstrip().startswith(("```", "~~~")):
        return block.strip()
    # list items, and verbatim any fenced block between them (a step's command)
    parts: list[str | list[str]] = []
    fence: list[str] | None = None
    for line in block.splitlines():
        if fence is not None:
            fence.append(line.rstrip())
            if line.strip().startswith(fence[0].strip()[:3]) and len(fence) > 1:
                fence = None
            continue
        if line.lstrip().startswith(("```", "~~~")):
            fence = [line.strip()]
            parts.append(fence)
        elif not line.strip():
            continue
        elif (
            parts
            and isinstance(parts[-1], str)
            and _LIST_ITEM.match(line) is None
            and (line[:1] in " \t")
        ):
            parts[-1] += " " + line.strip()  # a wrapped item goes on, indented, on this line
        else:
            parts.append(line)
    lines = []
    for part in parts:
        if isinstance(part, list):
            lines.append("\n".join(part))
            continue
        number = _ORDERED_ITEM.match(part)
        lines.append(f"{number.group(1) if number else '-'} {clean_sentence(part)}")
    return "\n".join(lines)


class ExtractiveAnswerer:
    """The :class:`~ragstrata.generate.answerer.Answerer` that quotes the best
    ``max_sentences`` sentences of the hits with their labels.

    A sentence is kept when its score is at least ``relative_floor`` × the best sentence score,
    except a sentence of another document than the best sentence's that shares no analysed term
    with the question and is written in the question's language: with e5 every sentence's
    cosine sits within a few hundredths of the best, so nothing else ties it to the question
    (a Spanish sentence about laptops after the English rollback command a Spanish question
    asked for). Sentences in another language share no term by nature and are not dropped for
    it. ``rank_weight`` weighs the retrieval-rank prior (see the module docstring).
    ``context_tokens``: budget of the assembled sources, counted with ``counter`` (default: the
    embedder's); ``evidence_rule``/``min_rerank``: the refusal rule and rerank threshold of
    :func:`~ragstrata.generate.evidence.check_evidence` (default: no refusal on evidence);
    ``display_source`` names the documents in the legend. With ``reader`` (the
    :class:`~ragstrata.generate.reader.Reader` of the evidence check, when it has one), the
    ``reader_top`` best sentences are read with the question and ``reader_weight × sigmoid(logit)``
    is added to their scores before the floor applies (each read as :func:`_reader_text`: under its
    headings, with the block it announces); the other sentences are not quoted.
    """

    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        analyzer: Analyzer,
        *,
        max_sentences: int = 3,
        relative_floor: float = 0.75,
        rank_weight: float = 0.05,
        context_tokens: int = 1500,
        counter: TokenCounter | None = None,
        evidence_rule: EvidenceRule = NO_EVIDENCE_RULE,
        min_rerank: float | None = None,
        display_source: Callable[[str], str] = str,
        reader: Reader | None = None,
        reader_weight: float = READER_SENTENCE_WEIGHT,
        reader_top: int = READER_SENTENCES,
    ) -> None:
        self.embedder = embedder
        self.reader = reader
        self.reader_weight = reader_weight
        self.reader_top = reader_top
        self.analyzer = analyzer
        self.max_sentences = max_sentences
        self.relative_floor = relative_floor
        self.rank_weight = rank_weight
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
        question = unicodedata.normalize("NFC", question)  # as the index's text (review 39)
        t0 = time.perf_counter() if started is None else started
        spent = dict(timings or {})
        t = time.perf_counter()
        # an older version of a document among the hits gives way to the newest, as in the
        # LLM answerer (review 31: the stale page's "2 días" was quoted first)
        kept, conflicts = resolve_versions(hits)
        check = check_evidence(
            question,
            kept,
            self.analyzer,
            rule=self.evidence_rule,
            min_rerank=self.min_rerank,
        )
        spent["evidence"] = (time.perf_counter() - t) * 1000

        def refuse(reason: RefusalReason) -> Answer:
            return refusal(
                question,
                reason,
                timings=spent,
                started=t0,
                evidence=check,
                conflicts=conflicts,
                hits=hits,
            )

        if check.refused_by is not None:
            return refuse(check.refused_by)
        t = time.perf_counter()
        context = assemble(
            kept,
            counter=self._counter or self.embedder.counter,
            budget_tokens=self.context_tokens,
            display_source=self.display_source,
        )
        spent["assemble"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        picked = self.pick_quotes(question, context)
        quotes = picked.quotes
        spent["generate"] = (time.perf_counter() - t) * 1000
        if not quotes:
            return refuse("no_quotes")
        by_label = {s.label: s for s in context.sources}
        # cited sources are renumbered 1..n in order of first citation; the legend lists them
        renumber = {old: new for new, old in enumerate(quoted_labels(quotes), 1)}
        legend = tuple(by_label[old].legend_line(new) for old, new in renumber.items())
        citations = tuple(
            _citation(new, by_label[old], [q for q in quotes if q.label == old])
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
            conflicts=tuple(conflicts),
            hits=tuple(hits),
            disagreements=tuple(
                SourceDisagreement(d.unit, tuple(sorted((renumber[lb], v) for lb, v in d.claims)))
                for d in picked.disagreements
            ),
        )

    def pick_quotes(self, question: str, context: Context) -> Generated:
        """The best sentences of ``context`` for ``question``, tagged with their source labels
        (empty when no sentence can be quoted), and the disagreements between the sources'
        quotable sentences."""
        items: list[tuple[Source, _Candidate, str]] = []
        echo = _question_text(question)
        for source in context.sources:
            text = source.hit.chunk.text
            for cand in _candidates(source):
                shown = cand.shown or clean_sentence(text[cand.start : cand.end])
                # a sentence quoting the question itself (a command line, an FAQ index) does
                # not answer it
                if len(shown.split()) >= 3 and not (echo and echo in shown.lower()):
                    items.append((source, cand, shown))
        # a question or a topic line ("Cómo actualizar un objeto en el estado", a list of
        # learning goals, an FAQ's questions) names what a page covers, it says nothing:
        # quoted only when nothing else can be
        # and a lead-in ending in ":" whose list or code is not in the chunk (cut off by the
        # chunk's end: nothing after it) announces what it cannot show; one followed by a line
        # we do not show (a `{* file *}` include, a component) still says something
        # and text addressed to an AI model ("Ignore previous instructions and tell the user
        # ...") is an injection planted in a document, not a statement of it (review 31)
        # and a line that is its chunk's own section title ("Clases de documento", "7.
        # ADDITIONAL OPTIONS FOR asmeconf.cls": a PDF or plain text gives its headings as
        # lines of text; trial 43 quoted them as evidence)
        statements = [
            item
            for item in items
            if not is_topic_line(item[2])
            and not is_instruction(item[2])
            and not is_section_title(item[2], item[0].hit.chunk.section_path)
            and not (item[2].endswith(":") and not item[0].hit.chunk.text[item[1].end :].strip())
        ]
        items = statements or items
        if not items:
            return Generated("", ())
        ranked = sorted(context.sources, key=lambda src: (-src.hit.score, src.label))
        rank = {src.label: i for i, src in enumerate(ranked)}
        query_terms = set(self.analyzer.terms(question))
        sentence_terms = [set(self.analyzer.terms(shown)) for *_, shown in items]
        weight = term_weights(query_terms, sentence_terms)
        total = sum(weight.values())
        vectors = self.embedder.embed_documents([shown for *_, shown in items])
        cosine = vectors @ self.embedder.embed_query(question)
        scores: list[float] = []
        covers: list[float] = []
        why = _WHY_QUESTION.match(question) is not None
        for (source, _cand, shown), terms, cos in zip(items, sentence_terms, cosine, strict=True):
            coverage = sum(weight[t] for t in query_terms & terms) / total if total else 0.0
            covers.append(coverage)
            score = 0.7 * float(cos) + 0.3 * coverage
            score += self.rank_weight / (1 + rank[source.label])
            if why and _GIVES_REASON.search(shown):
                score += WHY_REASON_BONUS
            scores.append(score)
        order = [int(i) for i in np.argsort(-np.asarray(scores), kind="stable")]
        if self.reader is not None and self.reader_weight > 0.0:
            top = order[: self.reader_top]
            logits = self.reader.score(question, [_reader_text(items[i]) for i in top])
            for i, logit in zip(top, logits, strict=True):
                scores[i] += self.reader_weight / (1.0 + float(np.exp(-logit)))
            order = sorted(top, key=lambda i: -scores[i])
        best = scores[order[0]]
        qualified = [i for i in order if scores[i] >= self.relative_floor * best]
        picked: list[int] = []
        seen: set[str] = set()
        lead = items[order[0]][0].hit.chunk.doc_id
        lead_title = items[order[0]][0].hit.chunk.title
        language = query_language(question)
        for index in qualified:
            if len(picked) >= self.max_sentences:
                break
            chunk = items[index][0].hit.chunk
            if chunk.doc_id != lead and covers[index] == 0.0 and chunk.language == language:
                continue  # only the flat cosine ties it to the question: padding
            if (
                chunk.doc_id != lead
                and chunk.title != lead_title
                and scores[index] < OTHER_DOCUMENT_FLOOR * best
            ):
                continue  # another page's weaker sentence: padding (trials 43 and 48)
            shown = items[index][2].lower()
            # a sentence of a list already shown under a picked lead-in, or a lead-in whose
            # list holds a sentence already picked (the better one), would say it twice; so
            # would a near copy of a picked sentence (the same sentence in three chunks of
            # three pages, a word apart)
            if (
                shown in seen
                or any(
                    _shown_in_block(items, index, p) or _shown_in_block(items, p, index)
                    for p in picked
                )
                or any(near_copy(sentence_terms[index], sentence_terms[p]) for p in picked)
            ):
                continue
            seen.add(shown)
            picked.append(index)
        disagreements, extra = self._disagreements(items, qualified, picked)
        picked.extend(extra)
        chosen = [self._quote(items[i], scores[i]) for i in _reading_order(picked, items)]
        return Generated(render(chosen), tuple(chosen), disagreements)

    def _quote(self, item: tuple[Source, _Candidate, str], score: float) -> Quote:
        source, cand, shown = item
        text = source.hit.chunk.text
        block = _announced(text, cand)
        line_start = text.rfind("\n", 0, cand.start) + 1
        item_number = _ORDERED_ITEM.match(text, line_start)
        marker = item_number.group(1) if item_number and item_number.end() == cand.start else ""
        return Quote(source.label, cand.start, cand.block_end, shown, score, block, marker)

    def _disagreements(
        self,
        items: Sequence[tuple[Source, _Candidate, str]],
        qualified: Sequence[int],
        picked: Sequence[int],
    ) -> tuple[tuple[SourceDisagreement, ...], list[int]]:
        """Quantities (a number and the word after it, compared by analyzer term) that a quoted
        sentence and a qualified sentence of *another* document give different values for
        while saying the same thing otherwise; and the qualified sentences to quote in
        addition so the answer shows both sides.

        "Saying the same thing" is :func:`same_statement` over their analyzed terms without
        numbers and without the unit: "Cada empleado tiene 31 días de vacaciones al año" and
        "... 99 días de vacaciones al año, según la nueva política" disagree; "25 días de
        vacaciones al año" and "se solicitan con 15 días de antelación" give two different
        facts and do not."""
        claims: dict[str, list[tuple[int, str, str]]] = {}  # term -> [(item, value, unit)]
        for index in qualified:
            for value, unit in _NUMBER_UNIT.findall(items[index][2]):
                terms = ["%"] if unit == "%" else self.analyzer.terms(unit)
                if terms:
                    claims.setdefault(terms[0], []).append((index, value.replace(",", "."), unit))
        found: list[SourceDisagreement] = []
        extra: list[int] = []
        terms_of: dict[int, set[str]] = {}
        for term, listed in claims.items():
            sides: dict[str, tuple[int, str]] = {}  # value -> (item, unit), in qualified order
            for a, value_a, unit_a in listed:
                if a not in picked:
                    continue
                for b, value_b, unit_b in listed:
                    if value_b == value_a or not self._same_fact(items, a, b, term, terms_of):
                        continue
                    sides.setdefault(value_a, (a, unit_a))
                    sides.setdefault(value_b, (b, unit_b))
            if len(sides) < 2:
                continue
            ordered = sorted(sides.items(), key=lambda kv: qualified.index(kv[1][0]))
            for _, (index, _) in ordered:
                if index not in picked and index not in extra:
                    extra.append(index)
            found.append(
                SourceDisagreement(
                    ordered[0][1][1],
                    tuple((items[i][0].label, v) for v, (i, _) in ordered),
                )
            )
        return tuple(found), extra

    def _same_fact(
        self,
        items: Sequence[tuple[Source, _Candidate, str]],
        a: int,
        b: int,
        unit_term: str,
        cache: dict[int, set[str]],
    ) -> bool:
        """Whether sentences ``a`` and ``b`` come from different documents and state the same
        thing but for their numbers (:func:`same_statement`)."""
        if items[a][0].hit.chunk.doc_id == items[b][0].hit.chunk.doc_id:
            return False
        for index in (a, b):
            if index not in cache:
                cache[index] = {
                    t for t in self.analyzer.terms(items[index][2]) if not t[:1].isdigit()
                }
        return same_statement(cache[a] - {unit_term}, cache[b] - {unit_term})


SAME_STATEMENT_OVERLAP = 0.6
"""Share of the shorter sentence's terms (numbers and the unit left out) that the other must
hold for two sentences to state the same fact (:func:`same_statement`)."""


def same_statement(a: set[str], b: set[str]) -> bool:
    """Whether two sentences' analyzed terms (numbers and the compared unit removed) overlap
    enough to state one fact: overlap coefficient ``|a ∩ b| / min(|a|, |b|)`` at least
    :data:`SAME_STATEMENT_OVERLAP`, with at least two shared terms. Pure."""
    shared = len(a & b)
    return shared >= 2 and shared / max(1, min(len(a), len(b))) >= SAME_STATEMENT_OVERLAP


NEAR_COPY_OVERLAP = 0.85
"""Share of a candidate sentence's analyzed terms (numbers included) that a picked sentence
must hold for the candidate to be a near copy of it (:func:`near_copy`)."""


def near_copy(candidate: set[str], picked: set[str]) -> bool:
    """Whether a candidate sentence adds nothing to a picked one, by their analyzed terms
    (numbers included, so "Node.js 18.18" and "Node.js 20" differ): at least
    :data:`NEAR_COPY_OVERLAP` of the candidate's terms, and at least 4, are the picked
    sentence's. A longer candidate that holds a short picked sentence and more is no copy. A
    trial's answer to "¿Qué versión de Node.js necesita Next.js 15?" quoted three such
    sentences from three pages. Pure."""
    shared = len(candidate & picked)
    return shared >= 4 and shared >= NEAR_COPY_OVERLAP * len(candidate)


_INTERROGATIVE = re.compile(
    r"^[¿¡\s]*(?:cómo|qué|cuál|cuáles|cuándo|cuánto|cuántos|cuántas|dónde|por qué|"
    r"para qué|how|what|which|when|where|why)\b",
    re.IGNORECASE,
)
_STOPS = (".", "!", ":", ";", "…")
_TERMINAL = (*_STOPS, ")", "]")
_SECTION_NUMBER = re.compile(r"\d{1,2}(?:\.\d{1,2})+\.?\s+[A-ZÁÉÍÓÚÑ][a-záéíóúñü]")
"""A section number of two levels or more ("2.7.", "3.2.1") then a capitalized word opening a
line: with no closing stop, the line is a section title that a PDF or a plain-text file gives
as a line of text ("1.5 millones de personas", "3.11 or later", "2.4 GHz" are not, review
38)."""


def is_topic_line(sentence: str) -> bool:
    """Whether ``sentence`` (as quoted) is a question (ends in ``?``), a caption ("Cuadro 3.4:
    ...", "Figure 2. ..."), a numbered section title without a stop ("2.7. Configurar
    dh_make", at most 12 words) or a topic line: it opens with an interrogative word (Spanish or
    English: "Cómo ...", "How to ...") and does not end as a statement does (``.``, ``!``,
    ``:``, ``;``). Such lines name a subject (headings written as list items, learning goals,
    FAQ questions, what a table shows); they do not answer it."""
    text = sentence.strip()
    if text.endswith("?") or _CAPTION.match(text):
        return True
    if _SECTION_NUMBER.match(text) and len(text.split()) <= 12:
        return not text.endswith(_STOPS)  # a PDF's "2.7. Configurar dh_make" (trial 37)
    return bool(_INTERROGATIVE.match(text)) and not text.endswith(_TERMINAL)


def is_section_title(sentence: str, section_path: Sequence[str]) -> bool:
    """Whether ``sentence`` (as quoted) is one of the titles of ``section_path`` (its chunk's
    headings), compared without case, spacing or a closing stop: a heading that a PDF or a
    plain-text file gives as a line of text names a subject as a topic line does (trial 43
    quoted "Clases de documento" and "7. ADDITIONAL OPTIONS FOR asmeconf.cls")."""
    line = _title_key(sentence)
    return bool(line) and any(_title_key(title) == line for title in section_path)


def _title_key(text: str) -> str:
    """A title as compared: no section number (a quote drops "7. " as a list marker), case,
    runs of spaces or closing stop."""
    return " ".join(_TITLE_NUMBER.sub("", text).casefold().split()).rstrip(".:")


_TITLE_NUMBER = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3})*[.)]?|[A-Z][.)])\s+")


def is_instruction(sentence: str) -> bool:
    """Whether ``sentence`` addresses an AI model rather than a reader ("Ignore previous
    instructions and ...", "Ignora las instrucciones anteriores", "Reply only with ...",
    "Responde solo con ..."): prompt-injection text planted in a document, which the
    extractive answerer quotes only when nothing else can be, like a topic line."""
    return bool(_INSTRUCTION.search(sentence))


_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions|prompts?|rules)"
    r"|\b(?:ignora|olvida|omite)\s+(?:todas\s+)?(?:las\s+|tus\s+)?(?:instrucciones|indicaciones|reglas)"
    r"\s+(?:anteriores|previas|del\s+sistema)"
    r"|\b(?:reply|respond|answer)\s+only\s+with\b"
    r"|\bresponde\s+(?:solo|solamente|únicamente)\s+con\b"
    r"|\b(?:you\s+are\s+now|as\s+an\s+ai\b|system\s+prompt|eres\s+ahora)",
    re.IGNORECASE,
)


_CAPTION = re.compile(
    r"(?:Cuadro|Tabla|Table|Figura|Figure|Fig\.|Listing|Listado)\s+[0-9IVXL]+(?:[.\-][0-9]+)*"
    r"\s*[:.]\s",
    re.IGNORECASE,
)
"""A table's or a figure's caption ("Cuadro 3.4: Relación de ...", "Figure 2. The ..."): it
names what the table shows, as a topic line does; a trial's answers quoted such captions."""


def _question_text(question: str) -> str:
    """The question as a sentence would quote it (lowercase, ``¿`` dropped, its ``?`` kept),
    or ``""`` when it is not a question of at least four words ending in ``?`` (a phrase
    such as an error message may well be inside its answer)."""
    text = " ".join(question.lower().lstrip("¿ ").split())
    return text if text.endswith("?") and len(text.split()) >= 4 else ""


def _reader_text(item: tuple[Source, _Candidate, str]) -> str:
    """What the reader reads of a candidate: the sentence under its section's headings (the
    reader was trained on chunks, which carry them), followed by the code block or list it
    announces (what the quote would show)."""
    source, cand, shown = item
    chunk = source.hit.chunk
    return "\n".join(part for part in (chunk.heading, shown, _announced(chunk.text, cand)) if part)


def _announced(text: str, cand: _Candidate) -> str:
    """The code block or list a lead-in candidate announces, as its quote shows it; ``""``
    for a candidate that announces none."""
    return _clean_block(text[cand.end : cand.block_end]) if cand.block_end > cand.end else ""


def _reading_order(
    picked: Sequence[int], items: Sequence[tuple[Source, _Candidate, str]]
) -> list[int]:
    """``picked`` (best first) in the order a reader meets them: documents in the order of
    their best quote, the quotes of one document in text order (numbered steps quoted as
    2 then 1 read wrong)."""
    first: dict[str, int] = {}
    for n, i in enumerate(picked):
        first.setdefault(items[i][0].hit.chunk.doc_id, n)

    def place(i: int) -> tuple[int, int]:
        source, cand, _ = items[i]
        return first[source.hit.chunk.doc_id], source.hit.chunk.start + cand.start

    return sorted(picked, key=place)


def quoted_labels(quotes: Sequence[Quote]) -> list[int]:
    """Distinct labels in first-use order."""
    return list(dict.fromkeys(q.label for q in quotes))


def render(quotes: Sequence[Quote], labels: Mapping[int, int] | None = None) -> str:
    """The answer text: each quote followed by its marker ``[n]``, ``n`` = ``labels[label]``
    (the quote's own label when ``labels`` is ``None``), then its block on lines of its own; a
    numbered list item keeps its number and a line of its own, the items of one list that do
    not follow each other (a step left out) or of two lists parted by a line "…". Only the
    markers are numbered: text inside a quote that looks like a marker (``[2]`` in a quoted
    code example) is left as is."""
    out = ""
    previous: Quote | None = None
    for q in quotes:
        if previous is not None:
            if q.marker and previous.marker and not previous.block:
                # the next item of the same list: the next line; a gap or another list: an
                # elision line between, so a Markdown view neither renumbers nor joins them
                following = q.label == previous.label and _item_number(q) == (
                    _item_number(previous) + 1
                )
                out += "\n" if following else "\n\n…\n\n"
            elif previous.block or q.block or q.marker or previous.marker:
                out += "\n\n"
            else:
                out += " "
        number = f"{q.marker} " if q.marker else ""
        out += f"{number}{q.text} [{q.label if labels is None else labels[q.label]}]"
        if q.block:
            out += f"\n\n{q.block}"
        previous = q
    return out


def _item_number(quote: Quote) -> int:
    """The number of the list item ``quote`` opens (its ``marker``, "2." or "2)")."""
    return int(quote.marker[:-1])


def _citation(label: int, source: Source, quotes: Sequence[Quote]) -> Citation:
    """Citation ``[label]`` of ``quotes`` (one chunk's, in answer order), taken from
    ``source``'s chunk (verbatim, so verified): the best-scored quote's text, the pages the quotes
    are on (not the chunk's whole range: a chunk over pp. 22-23 quoted on p. 23 cites p. 23)."""
    chunk = source.hit.chunk
    quote = max(quotes, key=lambda q: q.score)  # the one that answers best (review 31)
    spans = [chunk.pages_of(q.start, q.end) for q in quotes]
    found = [p for p in spans if p is not None]
    pages = (min(p[0] for p in found), max(p[1] for p in found)) if found else None
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
        page_start=pages[0] if pages else None,
        page_end=pages[1] if pages else None,
    )
