"""Step 3 of the pipeline (see :mod:`ragstrata.ingest.pdf`): running headers/footers, page
numbers and the decorative rules beside them are dropped; after reading order, so are the
dot-leader lines of a table of contents (:func:`drop_contents_lines`)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from ragstrata.ingest.pdf.model import HEADING_SIZE_RATIO, Line, Page, Rule, Segment

_EDGE_ZONE = 0.15
"""Share of the page height at the top and bottom where running headers/footers live."""
_EDGE_ROWS = 3
_RUNNING_MIN_PAGES = 3
_PAGE_NUMBER_RE = re.compile(
    r"^(?:(?:page|p\.|página|pág\.?|seite|s\.)\s*)?[-–—]?\s*#+\s*[-–—]?"
    r"(?:\s*(?:/|of|de|von)\s*#+)?$"
    r"|^(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$",
    re.IGNORECASE,
)


def _mask(text: str) -> str:
    return " ".join(re.sub(r"\d+", "#", text.casefold()).split())


def _edge_candidates(page: Page) -> Iterable[tuple[str, Segment]]:
    """Segments among the first/last rows of the page within the outer edge zones."""
    if not page.segments:
        return
    tops = sorted({round(s.top, 1) for s in page.segments})
    first, last = set(tops[:_EDGE_ROWS]), set(tops[-_EDGE_ROWS:])
    for segment in page.segments:
        row = round(segment.top, 1)
        if _ruled_in(segment, page.hrules):
            continue
        if row in first and segment.bottom <= _EDGE_ZONE * page.height:
            yield "top", segment
        elif row in last and segment.top >= (1 - _EDGE_ZONE) * page.height:
            yield "bottom", segment


def _ruled_in(segment: Segment, hrules: Sequence[Rule]) -> bool:
    """Whether two horizontal rules of the same extent enclose the segment (a table's header
    row repeated at the top of each page is not a running header)."""
    over = [r for r in hrules if r.start <= segment.x0 + 2 and r.end >= segment.x1 - 2]
    above = [r for r in over if r.pos <= segment.top + 1]
    below = [r for r in over if r.pos >= segment.bottom - 1]
    return any(
        abs(a.start - b.start) <= 4 and abs(a.end - b.end) <= 4 for a in above for b in below
    )


_LEADER_RE = re.compile(r"(?:\.\s*){4,}(?:\d{1,4}|[ivxlcdm]{1,6})$", re.IGNORECASE)
"""A contents line's end: a dot leader, then a page number ("1.1. El nombre . . . . . 1")."""
_CONTENTS_MIN_LINES = 5
_ENTRY_RE = re.compile(
    r"^(?:\d{1,3}(?:\.\d{1,3})*\.?|[A-Z]\.(?:\d{1,3}\.?)*)\s+\S|^\d{1,3}(?:\.\d{1,3})*\.\w"
    r"|^\d{1,4}$|^\S.{0,78}\s(?:\d{1,4}|[IVXLCDM]{1,6}|[ivxlcdm]{1,6})$"
)
"""Other lines of a contents page: a numbered entry whose leader was lost ("3.1.2. Servidor
principal", "12.Actualizaciones"), an appendix entry ("A.1. ..."), a lone page number, a short
line ending in a page number ("Prefacio V")."""


def drop_contents_lines(lines_by_page: list[list[Line]]) -> None:
    """Remove the entries of every page holding at least :data:`_CONTENTS_MIN_LINES`
    dot-leader lines ("1.2. Lo básico . . . . . . 2"): those lines, and there the numbered
    entries whose leader was lost, short lines ending in a page number and lone page numbers
    (:data:`_ENTRY_RE`). A table of
    contents (or of figures) names every section, so its chunks matched any question about the
    document and ranked in the top 5 (a user's smoke test on lshort-spanish); the sections
    themselves carry the same titles. A page with fewer leader lines (a price list) keeps
    everything."""
    for index, lines in enumerate(lines_by_page):
        prose = [line for line in lines if not line.table]
        if sum(1 for line in prose if _LEADER_RE.search(line.text)) < _CONTENTS_MIN_LINES:
            continue
        doomed = {
            id(line) for line in prose if _LEADER_RE.search(line.text) or _ENTRY_RE.match(line.text)
        }
        lines_by_page[index] = [line for line in lines if id(line) not in doomed]


def drop_running_lines(pages: Sequence[Page], body_size: float) -> None:
    """Remove running headers/footers and page numbers (module docstring, step 3)."""
    seen: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
    for page in pages:
        for zone, segment in _edge_candidates(page):
            seen[(zone, _mask(segment.text))].add(page.index)
    # a running header that repeats the current section's title ("6.4 Composición de la
    # página") changes with the section, so a short section's shows on too few pages to count
    headings = {
        _words_of(s.text)
        for page in pages
        for s in page.segments
        if s.size > body_size * HEADING_SIZE_RATIO
    }
    headings.discard("")
    drop: list[tuple[Page, set[int]]] = []
    for page in pages:
        doomed: set[int] = set()
        for zone, segment in _edge_candidates(page):
            if segment.size > body_size * HEADING_SIZE_RATIO or len(segment.words) >= 12:
                continue  # a heading or a body line, not a running line
            masked = _mask(segment.text)
            if (
                len(seen[(zone, masked)]) >= _RUNNING_MIN_PAGES
                or (_PAGE_NUMBER_RE.match(masked) and not _has_neighbour(segment, page.segments))
                or (
                    zone == "top"
                    and len(_words_of(segment.text).split()) >= 2
                    and _words_of(segment.text) in headings
                )
            ):
                doomed.add(id(segment))
        drop.append((page, doomed))
    if all(len(doomed) >= len(page.segments) for page, doomed in drop):
        return  # every line would go: the "headers" are the content
    for page, doomed in drop:
        if doomed:
            page.segments = [s for s in page.segments if id(s) not in doomed]


def _words_of(text: str) -> str:
    """``text`` casefolded, its words alone, without a leading section number ("6.4.
    Composición" and "6.4 Composición" alike, and a heading whose number stands apart)."""
    words = re.findall(r"\w+", text.casefold())
    while words and words[0].isdigit():
        words.pop(0)
    return " ".join(words)


def _has_neighbour(segment: Segment, segments: Sequence[Segment]) -> bool:
    """Whether another segment sits on the same row within 3 em (a section number beside its
    title, unlike a page number at the margin)."""
    reach = 3 * max(segment.size, 1.0)
    return any(
        other is not segment
        and min(other.bottom, segment.bottom) - max(other.top, segment.top) > 0
        and (0 <= other.x0 - segment.x1 <= reach or 0 <= segment.x0 - other.x1 <= reach)
        for other in segments
    )


def drop_decorative_rules(pages: Sequence[Page]) -> None:
    """Drop the rules under running headers and above running footers: a horizontal rule that
    recurs at the same place on >= 3 pages, lies in the page's outer 15 %, is the outermost rule
    on its side and has no text (running lines already removed) between it and the edge."""
    keys: Counter[tuple[int, int, int]] = Counter()
    for page in pages:
        for rule in {_rule_key(r) for r in page.hrules}:
            keys[rule] += 1
    for page in pages:
        if not page.hrules:
            continue
        text_top = min((s.top for s in page.segments), default=page.height)
        text_bottom = max((s.bottom for s in page.segments), default=0.0)
        highest = min(r.pos for r in page.hrules)
        lowest = max(r.pos for r in page.hrules)
        zone = _EDGE_ZONE * page.height
        page.hrules = [
            r
            for r in page.hrules
            if keys[_rule_key(r)] < _RUNNING_MIN_PAGES
            or not (
                (r.pos == highest and r.pos <= min(text_top, zone))
                or (r.pos == lowest and r.pos >= max(text_bottom, page.height - zone))
            )
        ]


def _rule_key(rule: Rule) -> tuple[int, int, int]:
    return round(rule.pos / 2), round(rule.start / 4), round(rule.end / 4)
