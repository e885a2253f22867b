"""Step 3 of the pipeline (see :mod:`ragstrata.ingest.pdf`): running headers/footers, page
numbers and the decorative rules beside them are dropped; after reading order, so are the
dot-leader lines of a table of contents (:func:`drop_contents_lines`).

A running line is told from body text by where it sits and what it repeats, not by its shape:
it lies in a page's edge band (:func:`_edge_band`) and either the same words, or the same page
number form ("# / #", "Página # de #"), or the same words with a number that runs with the
page index ("12 | Chapter 1: Meet Kafka"), sit at the same place on at least
:data:`_RUNNING_MIN_PAGES` pages, or it is a page number alone on its row; a row just past the
band that continues such a header or footer goes with it. The first rows of a
bank statement, a price list or an exercise sheet repeat their shape ("01/02/2024 ... 572,35",
"Ejercicio 2") but not their words, so they stay (review 42: they were dropped while any text
whose digits, masked, recurred among a page's first or last three rows counted as running)."""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ragstrata.ingest.pdf.model import HEADING_SIZE_RATIO, Line, Page, Rule, Segment

_EDGE_ZONE = 0.15
"""Share of the page height at the top and bottom where running headers/footers live."""
_EDGE_ROWS = 3
"""At most this many rows at each edge form the edge band (a header over two or three lines)."""
_BAND_GAP = 1.5
"""The edge band is the first (last) row, or the first (last) two or three rows when a row
pitch at least this many times the page's median pitch separates them from the rest."""
_RUNNING_MIN_PAGES = 3
_POSITION_TOLERANCE = 3.0
"""Points: a running line recurs at the same distance from its edge and with the same left
edge, right edge or centre (buckets this wide and their neighbours: up to twice this apart)."""
_PAGE_WORD = r"(?:page|pagina|página|pág\.?|pg\.?|p\.|seite|s\.|hoja|blatt)"
_PAGE_OF = r"(?:/|of|de|di|van|von|sur)"
_PAGE_NUMBER_RE = re.compile(
    rf"^(?:{_PAGE_WORD}\s*)?[-–—]?\s*#+\s*[-–—]?(?:\s*{_PAGE_OF}\s*#+)?$"
    r"|^(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$",
    re.IGNORECASE,
)
"""A page number alone, digits masked: "#", "- # -", "# / #", "Página # de #", "Pagina # di #",
"Pg. #", "iv"."""
_PAGE_REF = rf"(?:{_PAGE_WORD}\s*\d+(?:\s*{_PAGE_OF}\s*\d+)?|\d+\s*{_PAGE_OF}\s*\d+)"
_PAGE_REF_SEP = r"(?:\s*[-–—|·•,:]\s*|\s+)"
_PAGE_REF_RE = re.compile(rf"^{_PAGE_REF}(?={_PAGE_REF_SEP})|{_PAGE_REF_SEP}{_PAGE_REF}$")
"""A page reference that opens or closes a running line ("Informe anual · Página 4 de 9")."""


def _mask(text: str) -> str:
    return " ".join(re.sub(r"\d+", "#", text.casefold()).split())


def _running_key(text: str) -> str:
    """What a running line repeats from page to page: its page number form, digits masked
    ("# / #", "página # de #"); else its words (casefolded), a page reference at either end
    masked ("informe anual · página # de #"). Other numbers stay: "Ejercicio 2" and
    "Ejercicio 3", or two dates, are not the same line."""
    masked = _mask(text)
    if _PAGE_NUMBER_RE.match(masked):
        return masked
    words = " ".join(text.casefold().split())
    return _PAGE_REF_RE.sub(lambda m: _mask(m.group()), words, count=1)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A segment of a page's edge band, with what it repeats and where."""

    page: int
    zone: str  # "top" or "bottom"
    segment: Segment
    key: str
    depth: float
    """Distance from its edge: ``top`` for the top band, height - ``bottom`` for the bottom."""
    width: float
    """The page's width: a two-sided layout mirrors its running lines on facing pages."""
    rank: int
    """Its row's place from the edge: 0 for the outermost row."""
    band: bool
    """Whether its row is in the edge band (:func:`_edge_band`); a row past it may still be a
    running header's next line (:func:`drop_running_lines`)."""
    row_size: int
    """How many segments its row holds."""
    pitch_in: float
    """Row pitch to the row before it, toward the edge (0 for the outermost row)."""
    pitch_out: float
    """Row pitch to the row after it, toward the body (inf for the last row)."""

    def anchors(self) -> Iterator[tuple[str, int, int]]:
        """Its place, in buckets of :data:`_POSITION_TOLERANCE`: the same distance from its
        edge, and the same left edge (or the same distance from the right edge as another's
        from the left, mirrored), right edge or centre."""
        s, step = self.segment, _POSITION_TOLERANCE
        y = round(self.depth / step)
        yield "x0", y, round(s.x0 / step)
        yield "x0", y, round((self.width - s.x1) / step)
        yield "x1", y, round(s.x1 / step)
        yield "xc", y, round((s.x0 + s.x1) / 2 / step)


def _rows(segments: Sequence[Segment]) -> list[list[Segment]]:
    """Segments grouped into visual rows, top to bottom: a segment joins the row whose first
    segment it overlaps vertically by half the smaller height."""
    rows: list[list[Segment]] = []
    for segment in sorted(segments, key=lambda s: (s.top + s.bottom) / 2):
        if rows:
            first = rows[-1][0]
            overlap = min(first.bottom, segment.bottom) - max(first.top, segment.top)
            height = min(first.bottom - first.top, segment.bottom - segment.top)
            if overlap >= 0.5 * height:
                rows[-1].append(segment)
                continue
        rows.append([segment])
    return rows


def _edge_band(rows: Sequence[Sequence[Segment]]) -> int:
    """How many leading rows of ``rows`` a running line may occupy: the first row, or the first
    two or three when a pitch of :data:`_BAND_GAP` times the median row pitch follows them (a
    header over two lines, then the body)."""
    pitches = [abs(b[0].top - a[0].top) for a, b in itertools.pairwise(rows)]
    if pitches:
        usual = statistics.median(pitches)
        for depth, pitch in enumerate(pitches[:_EDGE_ROWS]):
            if pitch >= _BAND_GAP * usual:
                return depth + 1
    return 1


def _candidates(page: Page) -> Iterator[_Candidate]:
    """Segments of the page's first and last :data:`_EDGE_ROWS` rows within the outer edge
    zones, except rows between two equal ruling lines (:func:`_ruled_in`)."""
    rows = _rows(page.segments)
    for zone, ordered in (("top", rows), ("bottom", rows[::-1])):
        band = _edge_band(ordered)
        pitches = [abs(b[0].top - a[0].top) for a, b in itertools.pairwise(ordered)]
        for rank, row in enumerate(ordered[:_EDGE_ROWS]):
            pitch_in = pitches[rank - 1] if rank else 0.0
            pitch_out = pitches[rank] if rank < len(pitches) else float("inf")
            for segment in row:
                if _ruled_in(segment, page.hrules):
                    continue
                if zone == "top" and segment.bottom <= _EDGE_ZONE * page.height:
                    depth = segment.top
                elif zone == "bottom" and segment.top >= (1 - _EDGE_ZONE) * page.height:
                    depth = page.height - segment.bottom
                else:
                    continue
                key = _running_key(segment.text)
                yield _Candidate(
                    page.index,
                    zone,
                    segment,
                    key,
                    depth,
                    page.width,
                    rank,
                    rank < band,
                    len(row),
                    pitch_in,
                    pitch_out,
                )


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
    """Remove running headers/footers and page numbers (module docstring, step 3).

    In a page's edge band (:func:`_edge_band`, within the outer :data:`_EDGE_ZONE` of the
    height), a segment is dropped when, not a heading (font >= 12 % above the body) nor a line of
    12+ words:

    - its :func:`_running_key` sits at the same place (:data:`_POSITION_TOLERANCE`) on at least
      :data:`_RUNNING_MIN_PAGES` pages;
    - it is a number that, at the same place on as many pages, runs with the page index (its
      value minus the page's index is the same: page numbers beside text that stays);
    - in the top band, its words (2+) are a heading's of the document: a running header that
      repeats the current section's title changes with the section, so a short section's shows
      on too few pages to recur;
    - its text, digits masked, sits at the same place on as many pages with one of its numbers
      running with the page index (:func:`_rising_keys`: "12 | Chapter 1: Meet Kafka",
      "Manual de usuario - 5"), it is not bold (a per-page title, "Ejercicio 3") and no other
      segment is left on its row (a statement's date beside its payee and amount);
    - it is a page number form (``_PAGE_NUMBER_RE``) and no other segment is left on its row.

    Then a row just past the band, whose row toward the edge is gone whole, goes too when it is
    nearer that row than the next (pitch) and each of its segments recurs at its place as
    above (words, or a number running with the page index): a running header's second line
    when the gap to the body is under :data:`_BAND_GAP` times the usual pitch.

    Nothing is dropped when every segment of every page would go: the "headers" are the content.
    """
    candidates = [c for page in pages for c in _candidates(page)]
    band = [c for c in candidates if c.band]
    places = _places(band)
    headings = {
        _words_of(s.text)
        for page in pages
        for s in page.segments
        if s.size > body_size * HEADING_SIZE_RATIO
    }
    headings.discard("")
    doomed: set[int] = set()
    rising: list[_Candidate] = []
    numbers: list[_Candidate] = []
    for c in band:
        segment = c.segment
        if segment.size > body_size * HEADING_SIZE_RATIO or len(segment.words) >= 12:
            continue  # a heading or a body line, not a running line
        words = _words_of(segment.text)
        if any(_recurs(places, key, c) for key in _keys(c)) or (
            c.zone == "top" and len(words.split()) >= 2 and words in headings
        ):
            doomed.add(id(segment))
        elif _rises(places, c):
            rising.append(c)
        elif _PAGE_NUMBER_RE.match(_mask(segment.text)):
            numbers.append(c)
    by_index = {page.index: page for page in pages}
    kept_apart = doomed | {id(c.segment) for c in rising}
    for c in rising:
        if not _has_row_mate(c.segment, by_index[c.page].segments, kept_apart):
            doomed.add(id(c.segment))
    for c in numbers:
        if not _has_row_mate(c.segment, by_index[c.page].segments, doomed):
            doomed.add(id(c.segment))
    _drop_next_rows(candidates, doomed, body_size)
    if all(all(id(s) in doomed for s in page.segments) for page in pages):
        return
    for page in pages:
        page.segments = [s for s in page.segments if id(s) not in doomed]


_Places = dict[tuple[str, str, tuple[str, int, int]], set[int]]


def _places(candidates: Sequence[_Candidate]) -> _Places:
    """The pages on which each of the candidates' keys (:func:`_keys`, :func:`_rising_keys`)
    sits at each place (:meth:`_Candidate.anchors`)."""
    places: defaultdict[tuple[str, str, tuple[str, int, int]], set[int]] = defaultdict(set)
    for c in candidates:
        for key in (*_keys(c), *_rising_keys(c)):
            for anchor in c.anchors():
                places[(c.zone, key, anchor)].add(c.page)
    return places


def _rises(places: _Places, c: _Candidate) -> bool:
    """Whether the candidate, not bold, recurs at its place with a number running with the page
    index (:func:`_rising_keys`)."""
    if all(w.bold for w in c.segment.words):
        return False
    return any(_recurs(places, key, c) for key in _rising_keys(c))


def _drop_next_rows(candidates: Sequence[_Candidate], doomed: set[int], body_size: float) -> None:
    """Add to ``doomed`` the rows past the edge band that continue a running header or footer
    (:func:`drop_running_lines`): review 44's "ACME Servicios S.A." / "Procedimiento PR-07
    Copias de seguridad" 11 pt apart, the body 20 pt below at a 14 pt pitch."""
    places = _places(candidates)
    rows: defaultdict[tuple[int, str, int], list[_Candidate]] = defaultdict(list)
    for c in candidates:
        rows[(c.page, c.zone, c.rank)].append(c)
    for (page, zone, rank), row in sorted(rows.items(), key=lambda item: item[0][2]):
        if rank == 0 or row[0].band or len(row) < row[0].row_size:
            continue
        before = rows.get((page, zone, rank - 1), [])
        if not before or len(before) < before[0].row_size:
            continue
        if any(id(c.segment) not in doomed for c in before):
            continue
        if all(
            c.pitch_in < c.pitch_out
            and c.segment.size <= body_size * HEADING_SIZE_RATIO
            and len(c.segment.words) < 12
            and (any(_recurs(places, key, c) for key in _keys(c)) or _rises(places, c))
            for c in row
        ):
            doomed.update(id(c.segment) for c in row)


def _keys(candidate: _Candidate) -> tuple[str, ...]:
    """What the candidate must repeat at its place: its :func:`_running_key`, except for a bare
    number (arabic or roman), ``"#<value - page index>"``: page numbers at one place keep that
    difference from page to page, a table's number column does not."""
    text = candidate.segment.text.strip()
    if text.isdecimal():
        return (f"#{int(text) - candidate.page}",)
    value = _roman_value(text)
    if value is not None:
        return (f"#{value - candidate.page}",)
    return (candidate.key,)


def _rising_keys(candidate: _Candidate) -> tuple[str, ...]:
    """For text with numbers beside words, one key per number (the first four): the text with
    its digits masked, the number's position and its value minus the page index. A running
    line's page number keeps that difference from page to page ("12 | Chapter 1: Meet Kafka",
    "Chapter 1: Meet Kafka | 14"); a statement's dates and amounts do not."""
    text = candidate.segment.text
    if text.strip().isdecimal() or not any(ch.isdigit() for ch in text):
        return ()
    masked = _mask(text)
    return tuple(
        f"{masked}\0{j}:{int(number) - candidate.page}"
        for j, number in enumerate(re.findall(r"\d+", text)[:4])
    )


_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _roman_value(text: str) -> int | None:
    """The value of a lowercase or uppercase roman numeral ("xiv" -> 14), None for other text
    (the form is checked by :data:`_PAGE_NUMBER_RE`)."""
    folded = text.casefold()
    if not folded or not set(folded) <= _ROMAN.keys() or not _PAGE_NUMBER_RE.match(folded):
        return None
    values = [_ROMAN[ch] for ch in folded]
    return sum(-v if v < nxt else v for v, nxt in zip(values, [*values[1:], 0], strict=True))


def _recurs(places: _Places, key: str, c: _Candidate) -> bool:
    """Whether ``key`` sits at the candidate's place on at least :data:`_RUNNING_MIN_PAGES`
    pages."""
    for kind, y, x in c.anchors():
        seen: set[int] = set()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                seen |= places.get((c.zone, key, (kind, y + dy, x + dx)), set())
                if len(seen) >= _RUNNING_MIN_PAGES:
                    return True
    return False


def _words_of(text: str) -> str:
    """``text`` casefolded, its words alone, without a leading section number ("6.4.
    Composición" and "6.4 Composición" alike, and a heading whose number stands apart)."""
    words = re.findall(r"\w+", text.casefold())
    while words and words[0].isdigit():
        words.pop(0)
    return " ".join(words)


def _has_row_mate(segment: Segment, segments: Sequence[Segment], doomed: set[int]) -> bool:
    """Whether another segment, not being dropped, shares the segment's row (overlaps it
    vertically): a number beside a price list's item or a section number beside its title,
    unlike a page number alone or beside a running header."""
    return any(
        other is not segment
        and id(other) not in doomed
        and min(other.bottom, segment.bottom) - max(other.top, segment.top) > 0
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
