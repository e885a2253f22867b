"""Step 6 of the pipeline, blocks (see :mod:`ragstrata.ingest.pdf`): lines to headings,
paragraphs (de-hyphenated), lists, code and tables; then the text with block and page offsets."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence, Set
from dataclasses import dataclass, field, replace

from ragstrata.ingest.pdf.model import LEADERS_RE, Item, Line, Stats, line_style
from ragstrata.ingest.pdf.tables import joins_code
from ragstrata.ingest.text import normalize_text
from ragstrata.types import Block, BlockKind

_PARAGRAPH_GAP_EM = 0.5
"""Vertical gap (em) between two lines' boxes that ends a paragraph."""
_TERMINAL_RE = re.compile(r"[.!?:;…][\"'”’»)\]]*$")
_HYPHENATED_RE = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD_RE = re.compile(r"[^\W\d_]{4,}")
_SOFT_HYPHEN = "\u00ad"
_BULLETS = frozenset("•◦▪▫‣●○■□∙·⁃➢►▶✓✔–—*-")
_BULLET_GLYPHS = frozenset("•◦▪▫‣●○■□∙·⁃➢►▶✓✔")
_ENUM_RE = re.compile(r"^(?:\(?\d{1,3}[.)]|\(?[a-z]\))$")


_NO_WORDS: frozenset[str] = frozenset()


def collect_hyphenated(lines_by_page: Sequence[Sequence[Line]], stats: Stats) -> None:
    """Hyphenated compounds written inside lines ("well-known"): de-hyphenation keeps them;
    and the words written whole (``Stats.words``), which it may join across a line end."""
    for lines in lines_by_page:
        for line in lines:
            for word in line.words[:-1]:
                if "-" in word.text:
                    for match in _HYPHENATED_RE.finditer(word.text):
                        stats.hyphenated.add(match.group(0).casefold())
                for match in _WORD_RE.finditer(word.text):
                    stats.words.add(match.group(0).casefold())


def _split_word(out: str, text: str) -> str:
    """The word a line-end hyphen splits, casefolded: the letters before the hyphen ending
    ``out`` and those opening ``text`` ("ELI-" + "MINADO" -> "eliminado"; ``""`` without)."""
    before = re.search(r"([^\W\d_]+)-$", out)
    after = re.match(r"[^\W\d_]+", text)
    return (before.group(1) + after.group(0)).casefold() if before and after else ""


def _join_lines(texts: Sequence[str], hyphenated: Set[str], words: Set[str] = _NO_WORDS) -> str:
    """Join a paragraph's lines with spaces, de-hyphenating per the module docstring rule
    (``hyphenated``, ``words``: :class:`~ragstrata.ingest.pdf.model.Stats`')."""
    out = ""
    for text in texts:
        if not out:
            out = text
            continue
        if out.endswith(_SOFT_HYPHEN):
            out = out[:-1] + text
        elif len(out) >= 2 and out[-1] == "-" and out[-2].isalpha():
            first = text[:1]
            if first.islower():
                before = re.search(r"[^\W\d_]+(?:-[^\W\d_]+)*-$", out)
                after = re.match(r"[^\W\d_]+", text)
                compound = (before.group(0) if before else "") + (after.group(0) if after else "")
                if joins_code(out.split()[-1][:-1]):  # a path, URL or hyphenated name: a
                    # break only when the word it splits is written whole ("/etc/bind/na-")
                    kept = _split_word(out, text) not in words
                else:
                    kept = compound.casefold() in hyphenated
                out = (out if kept else out[:-1]) + text
            else:
                out = (out[:-1] if _split_word(out, text) in words else out) + text
        elif out.endswith("—"):
            out += text
        else:
            out += " " + text
    return out


def _is_bullet(line: Line) -> bool:
    if len(line.words) < 2:
        return False
    first = line.words[0].text
    return (len(first) == 1 and first in _BULLETS) or bool(_ENUM_RE.match(first))


def _code_text(lines: Sequence[Line]) -> str:
    """Monospace lines with their indentation and inner spacing rebuilt from x positions."""
    widths = [(w.x1 - w.x0) / len(w.text) for line in lines for w in line.words if len(w.text) >= 2]
    char = statistics.median(widths) if widths else 6.0
    left = min(line.x0 for line in lines)
    rows: list[str] = []
    for line in lines:
        parts = [" " * max(0, round((line.x0 - left) / char))]
        for k, word in enumerate(line.words):
            if k:
                parts.append(" " * max(1, round((word.x0 - line.words[k - 1].x1) / char)))
            parts.append(word.text)
        rows.append("".join(parts).rstrip())
    code = "\n".join(rows)
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def _text_size(line: Line, *, last: bool) -> float | None:
    """Font size of the line's first (or last) word that is not monospace, if any."""
    words = reversed(line.words) if last else iter(line.words)
    return next((w.size for w in words if not w.mono), None)


def _continues(prev: Line, line: Line) -> bool:
    """Whether ``line`` continues the paragraph (or list item) whose last line is ``prev``.

    Breaks on: a font size change between the two lines' adjoining prose words; a vertical gap
    over half an em; a first-line indent under a line at the column's left edge; a short line
    ending a sentence. At a column (or region) break the paragraph continues only when the
    column's last line left the sentence open and the new line is not indented.
    """
    before, after = _text_size(prev, last=True), _text_size(line, last=False)
    if before is not None and after is not None and abs(before - after) > 0.6:
        return False
    em = max(after or before or line.words[0].size, 1.0)
    text = prev.text
    if line.column != prev.column or line.top < prev.top - 2:
        return not _TERMINAL_RE.search(text) and line.x0 <= line.col_x0 + 0.5 * em
    if line.top - prev.bottom > _PARAGRAPH_GAP_EM * em:
        return False
    ended = bool(_TERMINAL_RE.search(text))
    short = prev.x1 < prev.col_x1 - 2 * em
    if line.x0 > line.col_x0 + 0.8 * em and prev.x0 <= prev.col_x0 + 0.3 * em:
        # a first-line indent starts a paragraph; under a full, open line it is a hanging indent
        return not (ended or short) or text.endswith("-")
    return not (ended and short)


@dataclass(slots=True)
class _Blocks:
    """Groups one page's lines into items (module docstring, step 6)."""

    page: int
    lines: Sequence[Line]
    headings: dict[tuple[int, int], tuple[int, int]]
    hyphenated: set[str]
    words: set[str]
    items: list[Item] = field(default_factory=list)

    def run(self) -> list[Item]:
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            heading = self.headings.get((self.page, i))
            if line.table:
                self.items.append(Item("table", line.table, self.page))
                i += 1
            elif heading is not None:
                level, span = heading
                texts = [" ".join(ln.text.split()) for ln in self.lines[i : i + span]]
                title = _join_lines(texts, self.hyphenated, self.words)  # "par-" + "tición"
                self.items.append(Item("heading", title, self.page, level, title))
                i += span
            elif line_style(line).mono:
                i = self.code(i)
            else:
                i = self.prose(i)
        return self.items

    def stops(self, j: int) -> bool:
        return bool(self.lines[j].table) or (self.page, j) in self.headings

    def code(self, i: int) -> int:
        """Consecutive monospace lines (no gap over 2.5 lines) as one fenced code block."""
        lines = self.lines
        j = i + 1
        while j < len(lines) and not self.stops(j):
            gap = lines[j].top - lines[j - 1].bottom
            if not line_style(lines[j]).mono or gap > 2.5 * (lines[j].bottom - lines[j].top):
                break
            j += 1
        self.items.append(Item("code", _code_text(lines[i:j]), self.page))
        return j

    def prose(self, i: int) -> int:
        """A paragraph, or a list of bullet items with their continuation lines. A monospace
        line that continues an open sentence stays in the paragraph (inline code)."""
        lines = self.lines
        first = lines[i]
        is_list = _is_bullet(first)
        entries: list[list[str]] = [[_bullet_text(first) if is_list else first.text]]
        prev = first
        j = i + 1
        while j < len(lines) and not self.stops(j):
            nxt = lines[j]
            if line_style(nxt).mono and _TERMINAL_RE.search(prev.text.rstrip(":")):
                break
            if line_style(nxt).mono and prev.text.endswith(":"):
                break
            if _is_bullet(nxt):
                em = max(nxt.words[0].size, 1.0)
                if not is_list or nxt.top - prev.bottom > 2 * _PARAGRAPH_GAP_EM * em:
                    break
                entries.append([_bullet_text(nxt)])
            elif not _continues(prev, nxt):
                if not (is_list and _continues_item(first, prev, nxt)):
                    break
                entries[-1].append(nxt.text)
            else:
                entries[-1].append(nxt.text)
            prev = nxt
            j += 1
        if is_list:
            body = "\n".join(_join_lines(entry, self.hyphenated, self.words) for entry in entries)
        else:
            body = _join_lines(entries[0], self.hyphenated, self.words)
        kind: BlockKind = "list" if is_list else "paragraph"
        edges = (first, prev) if kind == "paragraph" else (None, None)
        self.items.append(Item(kind, LEADERS_RE.sub(" … ", body), self.page, 0, "", *edges))
        return j


def _continues_item(first: Line, prev: Line, line: Line) -> bool:
    """A list item's continuation line: indented past the bullet (hanging indent), close
    below the previous line."""
    em = max(line.words[0].size, 1.0)
    return (
        line.column == prev.column
        and line.x0 > first.x0 + 0.4 * em
        and line.top - prev.bottom <= _PARAGRAPH_GAP_EM * em
    )


def build_items(
    lines_by_page: Sequence[Sequence[Line]],
    headings: dict[tuple[int, int], tuple[int, int]],
    stats: Stats,
) -> list[Item]:
    """Every page's lines as items, page by page; ``headings`` as
    :func:`~ragstrata.ingest.pdf.headings.find_headings` gives."""
    items: list[Item] = []
    for page, lines in enumerate(lines_by_page):
        page_items = _Blocks(page, lines, headings, stats.hyphenated, stats.words).run()
        if items and page_items and _continues_page(items[-1], page_items[0], page):
            items[-1], page_items[0] = _join_page_break(items[-1], page_items[0], stats)
        items.extend(page_items)
    return items


def _continues_page(prev: Item, item: Item, page: int) -> bool:
    """Whether paragraph ``item``, the first block of ``page``, continues ``prev``, the last
    block of the page before: the same prose size, ``prev`` leaves its sentence open (no
    stop) and ``item`` opens with a lowercase letter (or ``prev`` ends with a hyphen or a
    comma), not indented. A page break cut "configu-" / "ración adicional" (review 32) and
    every sentence that crossed a page into two paragraphs."""
    if prev.page != page - 1 or prev.kind != "paragraph" or item.kind != "paragraph":
        return False
    if prev.last is None or item.first is None:
        return False
    before, after = _text_size(prev.last, last=True), _text_size(item.first, last=False)
    if before is None or after is None or abs(before - after) > 0.6:
        return False
    text, line = prev.text.rstrip(), item.first
    if not text or _TERMINAL_RE.search(text) or line.x0 > line.col_x0 + 0.5 * max(after, 1.0):
        return False
    return item.text[:1].islower() or text.endswith(("-", ",", _SOFT_HYPHEN))


def _join_page_break(prev: Item, item: Item, stats: Stats) -> tuple[Item, Item]:
    """``prev`` and ``item`` joined as :func:`_join_lines` joins two lines: ``item`` gets the
    separator (``joins``), ``prev`` loses a hyphen the rule drops."""
    head = prev.text.rstrip()
    joined = _join_lines([head, item.text], stats.hyphenated, stats.words)
    if joined == f"{head} {item.text}":
        return prev, replace(item, joins=" ")
    if joined == head + item.text:
        return prev, replace(item, joins="")
    return replace(prev, text=head[:-1]), replace(item, joins="")  # "configu-" + "ración"


def _bullet_text(line: Line) -> str:
    first = line.words[0].text
    rest = " ".join(w.text for w in line.words[1:])
    marker = "-" if first in _BULLET_GLYPHS else first
    return f"{marker} {rest}"


def assemble(items: Sequence[Item], page_count: int) -> tuple[str, list[Block], tuple[int, ...]]:
    """Join items with blank lines; blocks with exact offsets; page start offsets."""
    parts: list[str] = []
    blocks: list[Block] = []
    starts: list[int | None] = [None] * page_count
    length = 0
    joinable = False  # the last block written is a paragraph a page break may continue
    for item in items:
        text = normalize_text(item.text)
        if item.kind != "code":
            text = "\n".join(" ".join(ln.split()) for ln in text.split("\n"))
        text = text.strip()
        if not text:
            joinable = False
            continue
        if item.joins is not None and joinable:  # one paragraph across the page break
            parts.append(item.joins)
            length += len(item.joins)
            if starts[item.page] is None:
                starts[item.page] = length
            parts.append(text)
            length += len(text)
            blocks[-1] = Block("paragraph", blocks[-1].start, length)
            continue
        joinable = item.kind == "paragraph"
        if parts:
            parts.append("\n\n")
            length += 2
        start = length
        parts.append(text)
        length += len(text)
        if starts[item.page] is None:
            starts[item.page] = start
        if item.kind == "heading":
            title = " ".join(text.split())
            blocks.append(Block("heading", start, length, max(1, min(item.level, 6)), title))
        else:
            blocks.append(Block(item.kind, start, length))
    text = "".join(parts)
    offsets: list[int] = [0] * page_count
    following = len(text)
    for index in range(page_count - 1, -1, -1):
        page_start = starts[index]
        if page_start is not None:
            following = page_start
        offsets[index] = following
    offsets[0] = 0
    return text, blocks, tuple(offsets)
