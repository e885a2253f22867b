"""Step 6 of the pipeline, headings (see :mod:`ragstrata.ingest.pdf`): lines matched to the PDF
outline, else ranked by font size and boldness."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from ragstrata.ingest.pdf.model import (
    HEADING_SIZE_RATIO,
    LEADERS_RE,
    Line,
    OutlineEntry,
    Stats,
    Style,
    line_style,
    text_key,
)

_SECTION_NUMBER_RE = re.compile(
    r"\d+|[ivxlc]+|[a-z]|(?:chapter|cap[ií]tulo|cap|ap[ée]ndice|appendix|anexo|part|parte)\d*[a-z]?"
)
"""What may precede an outline title in its heading (keys have no spaces or punctuation)."""
_CAPTION_RE = re.compile(
    r"^(?:fig(?:ure|ura)?|table|tabla|cuadro|listing|algorithm|algoritmo)\.?\s*[\dIVX]",
    re.IGNORECASE,
)


def _matches(line_key: str, entry_key: str) -> bool:
    """A line is the heading of an outline entry: same text, or the entry's text after a
    section number ("1.1.8." + "Cómo apagar..."), optionally followed by a footnote mark."""
    candidates = [line_key]
    marker = re.search(r"\d{1,2}$", line_key)
    if marker and not entry_key[-1:].isdigit():
        candidates.append(line_key[: marker.start()])  # "... asmeconf.bst" + footnote "3"
    for key in candidates:
        if key == entry_key:
            return True
        if key.endswith(entry_key) and _SECTION_NUMBER_RE.fullmatch(key[: -len(entry_key)]):
            return True
    return False


def find_headings(
    lines_by_page: Sequence[Sequence[Line]], outline: Sequence[OutlineEntry], stats: Stats
) -> dict[tuple[int, int], tuple[int, int]]:
    """Heading lines: ``(page, line index) -> (level, number of lines it spans)``.

    Outline entries are matched to lines of their destination page (one to three consecutive
    lines, nearest to the destination's y). Each matched style (size, bold) votes for its
    level; unmatched lines in a heading style then get that style's level. Without a usable
    outline, heading styles are ranked by size then boldness (module docstring, step 6).
    """
    result: dict[tuple[int, int], tuple[int, int]] = {}
    style_levels: defaultdict[Style, Counter[int]] = defaultdict(Counter)
    by_page: defaultdict[int, list[OutlineEntry]] = defaultdict(list)
    for entry in outline:
        by_page[entry.page].append(entry)
    matched = 0
    from_outline: set[tuple[int, int]] = set()
    for page, entries in by_page.items():
        lines = lines_by_page[page]
        keys = [text_key(line.text) if not line.table else "" for line in lines]
        for entry in entries:
            best: tuple[float, int, int] | None = None
            for i, key in enumerate(keys):
                if not key or (page, i) in result:
                    continue
                joined = key
                for span in range(1, 4):
                    if i + span > len(lines):
                        break
                    if span > 1:
                        joined += keys[i + span - 1]
                    if _matches(joined, entry.key):
                        distance = abs(lines[i].top - entry.top) if entry.top is not None else i
                        if best is None or distance < best[0]:
                            best = (distance, i, span)
                        break
                    if not entry.key.startswith(joined) and not _matches_prefix(joined, entry.key):
                        break
            if best is not None:
                _, i, span = best
                level = min(entry.level + 1, 6)
                result[(page, i)] = (level, span)
                from_outline.add((page, i))
                style_levels[line_style(lines[i])][level] += 1
                matched += 1
    use_outline = matched >= max(2, 0.3 * len(outline)) if outline else False
    if not use_outline:
        result.clear()
        from_outline.clear()
        style_levels.clear()

    candidates: list[tuple[int, int, Style]] = []
    style_counts: Counter[Style] = Counter()
    total_lines = 0
    for page, lines in enumerate(lines_by_page):
        for i, line in enumerate(lines):
            total_lines += 1
            if (page, i) in result or line.table:
                continue
            style = line_style(line)
            if _heading_like(line, style, stats.body_size):
                candidates.append((page, i, style))
                style_counts[style] += 1
    frequent = {s for s, n in style_counts.items() if n > max(20, 0.25 * total_lines)}
    if use_outline:
        mapped = {s: c.most_common(1)[0][0] for s, c in style_levels.items()}
        for page, i, style in candidates:
            if (
                style in mapped
                and style not in frequent
                and style.size >= stats.body_size * HEADING_SIZE_RATIO
            ):
                result[(page, i)] = (mapped[style], 1)
    else:
        ranked = sorted(
            {s for _, _, s in candidates if s not in frequent}, key=lambda s: (-s.size, not s.bold)
        )
        levels = {s: min(n + 1, 6) for n, s in enumerate(ranked)}
        for page, i, style in candidates:
            if style in levels:
                result[(page, i)] = (levels[style], 1)
    return _with_chapter_labels(
        _merge_heading_lines(result, lines_by_page, from_outline), lines_by_page, stats
    )


_CHAPTER_LABEL_RE = re.compile(
    r"(?:cap[ií]tulo|chapter|ap[ée]ndice|appendix|anexo|parte|part)\s+(?:\d+|[ivxlc]+|[a-z])\.?",
    re.IGNORECASE,
)
"""A chapter label written on a line of its own above the chapter's title ("Capítulo 5")."""


def _with_chapter_labels(
    headings: dict[tuple[int, int], tuple[int, int]],
    lines_by_page: Sequence[Sequence[Line]],
    stats: Stats,
) -> dict[tuple[int, int], tuple[int, int]]:
    """A heading whose line above, in the same column and within three of its font sizes, is a
    chapter label alone (:data:`_CHAPTER_LABEL_RE`) set apart from the text before it
    (:func:`_set_apart`) starts at that label: "Capítulo 5" was a paragraph closing the
    previous chapter's last section (review 42: 9 chapters of the Debian New Maintainers'
    Guide)."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for (page, i), (level, span) in sorted(headings.items()):
        if i > 0 and (page, i - 1) not in headings:
            lines = lines_by_page[page]
            above, line = lines[i - 1], lines[i]
            if (
                not above.table
                and _CHAPTER_LABEL_RE.fullmatch(above.text.strip()) is not None
                and above.column == line.column
                and 0 <= line.top - above.bottom <= 3 * line_style(line).size
                and _set_apart(lines[i - 2] if i > 1 else None, above, stats.body_size)
            ):
                out[(page, i - 1)] = (level, span + 1)
                continue
        out[(page, i)] = (level, span)
    return out


def _set_apart(before: Line | None, label: Line, body_size: float) -> bool:
    """Whether a chapter label line stands apart from the text before it: a heading-like font
    (:data:`HEADING_SIZE_RATIO` times the body's or bold), or a gap above it of half its size
    (more than a line's leading) from the line before it in its column. "Chapter 3." ending a
    paragraph's last wrapped line ("...described in detail in" / "Chapter 3.") is neither
    (review 44: it moved into the next heading)."""
    style = line_style(label)
    if style.size >= body_size * HEADING_SIZE_RATIO or style.bold:
        return True
    return (
        before is not None
        and not before.table
        and before.column == label.column
        and label.top - before.bottom >= 0.5 * style.size
    )


def _merge_heading_lines(
    headings: dict[tuple[int, int], tuple[int, int]],
    lines_by_page: Sequence[Sequence[Line]],
    from_outline: set[tuple[int, int]],
) -> dict[tuple[int, int], tuple[int, int]]:
    """A font-based heading line right below a heading of the same level and font (gap under
    0.8 em, same column) is the next line of that heading (up to three lines)."""
    merged: dict[tuple[int, int], tuple[int, int]] = {}
    last: tuple[int, int] | None = None
    for page, i in sorted(headings):
        level, span = headings[(page, i)]
        if last is not None and last[0] == page and (page, i) not in from_outline and span == 1:
            head_level, head_span = merged[last]
            if last[1] + head_span == i and head_level == level and head_span < 3:
                above, line = lines_by_page[page][i - 1], lines_by_page[page][i]
                size = line_style(line).size
                if (
                    above.column == line.column
                    and line_style(above).size == size
                    and line.top - above.bottom <= 0.8 * size
                ):
                    merged[last] = (head_level, head_span + 1)
                    continue
        merged[(page, i)] = (level, span)
        last = (page, i)
    return merged


def _matches_prefix(joined: str, entry_key: str) -> bool:
    """Whether ``joined`` could still grow (with the next line) into a match of the entry."""
    stripped = re.sub(r"^\d+", "", joined)
    return bool(stripped) and entry_key.startswith(stripped)


def _heading_like(line: Line, style: Style, body_size: float) -> bool:
    text = line.text
    if style.mono or not text or len(text) > 160 or len(line.words) > 20:
        return False
    if not any(ch.isalpha() for ch in text) or text[-1] in ",;" or LEADERS_RE.search(text):
        return False
    if _CAPTION_RE.match(text):
        return False
    if re.search(r"\s\d+$", text) and style.size < body_size * HEADING_SIZE_RATIO:
        return False  # a table-of-contents entry ("Introduction 12")
    return style.size >= body_size * HEADING_SIZE_RATIO or (
        style.bold and style.size >= body_size * 0.95
    )
