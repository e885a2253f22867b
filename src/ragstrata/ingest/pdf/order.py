"""Step 5 of the pipeline (see :mod:`ragstrata.ingest.pdf`): a page's segments to lines in
reading order (recursive XY-cut preferring columns)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from ragstrata.ingest.pdf.model import Line, Page, Segment

logger = logging.getLogger(__name__)

_MAX_SEGMENTS_FOR_LAYOUT = 6_000
"""Above this many segments a page is read top to bottom without column analysis."""
_MAX_CUT_DEPTH = 40
_COLUMN_GAP_EM = 0.6
"""Minimum width (em of the body font) of a vertical gap that separates columns."""
_COLUMN_MIN_SIDE = 0.2
"""Each side of a column cut must be at least this share of the page's text width."""


@dataclass(slots=True)
class _Cutter:
    """Recursive XY-cut with column-aware band grouping (module docstring, step 5)."""

    page: int
    min_gap: float
    min_side: float
    lines: list[Line] = field(default_factory=list)
    columns: int = 0

    def order(self, items: list[Segment], col: tuple[int, float, float], depth: int) -> None:
        if len(items) <= 1 or depth > _MAX_CUT_DEPTH:
            self.emit(items, col)
            return
        cut = self.vertical_cut(_coverage(items))
        if cut is not None and _splits_code_rows(items, cut):
            cut = None  # a wide gap inside code lines, not a gutter
        if cut is not None:
            left = [s for s in items if (s.x0 + s.x1) / 2 < cut]
            right = [s for s in items if (s.x0 + s.x1) / 2 >= cut]
            for side in (left, right):
                self.columns += 1
                bounds = (self.columns, min(s.x0 for s in side), max(s.x1 for s in side))
                self.order(side, bounds, depth + 1)
            return
        bands = _bands(items)
        if len(bands) == 1:
            self.emit(items, col)
            return
        reach: dict[int, int] = {}

        def extend(k: int) -> int:
            if k not in reach:
                reach[k] = self.extend(bands, k)
            return reach[k]

        i = 0
        while i < len(bands):
            j = extend(i)
            if j > i and extend(i + 1) > j:
                j = i  # the run of columns starts below this band (a title above them)
            group = [s for band in bands[i : j + 1] for s in band]
            self.order(group, col, depth + 1)
            i = j + 1

    def vertical_cut(self, coverage: Sequence[tuple[float, float]]) -> float | None:
        """x of the widest gap in ``coverage`` that separates columns, or None."""
        if len(coverage) < 2:
            return None
        lo, hi = coverage[0][0], coverage[-1][1]
        best: float | None = None
        best_width = 0.0
        for (_, a1), (b0, _) in pairwise(coverage):
            gap = b0 - a1
            if (
                gap >= self.min_gap
                and gap > best_width
                and a1 - lo >= self.min_side
                and hi - b0 >= self.min_side
            ):
                best, best_width = (a1 + b0) / 2, gap
        return best

    def extend(self, bands: Sequence[Sequence[Segment]], i: int) -> int:
        """Largest ``j`` such that bands ``i..j`` together have a column gap (else ``i``)."""
        best = i
        spans: list[tuple[float, float]] = [(s.x0, s.x1) for s in bands[i]]
        coverage = _merge_spans(spans)
        segments = list(bands[i])
        for j in range(i + 1, len(bands)):
            coverage = _merge_spans([*coverage, *((s.x0, s.x1) for s in bands[j])])
            segments.extend(bands[j])
            if len(coverage) < 2:
                break  # the bands fill the width: no gutter can reappear
            cut = self.vertical_cut(coverage)
            if cut is not None and not _splits_code_rows(segments, cut):
                best = j
        return best

    def emit(self, items: Sequence[Segment], col: tuple[int, float, float]) -> None:
        column, col_x0, col_x1 = col
        for row in _visual_lines(items):
            if len(row) == 1 and row[0].table:
                t = row[0]
                self.lines.append(
                    Line(
                        self.page, column, col_x0, col_x1, (), t.x0, t.top, t.x1, t.bottom, t.table
                    )
                )
                continue
            tables = [s for s in row if s.table]
            texts = [s for s in row if not s.table]
            for t in tables:
                self.lines.append(
                    Line(
                        self.page, column, col_x0, col_x1, (), t.x0, t.top, t.x1, t.bottom, t.table
                    )
                )
            if texts:
                words = tuple(w for s in texts for w in s.words)
                self.lines.append(
                    Line(
                        self.page,
                        column,
                        col_x0,
                        col_x1,
                        words,
                        min(s.x0 for s in texts),
                        min(s.top for s in texts),
                        max(s.x1 for s in texts),
                        max(s.bottom for s in texts),
                    )
                )


def _mono(segment: Segment) -> bool:
    return bool(segment.words) and all(w.mono for w in segment.words)


def _splits_code_rows(items: Sequence[Segment], cut: float) -> bool:
    """Whether the column cut at ``cut`` would only split code lines: every segment right of
    it is monospace and shares its row with a monospace segment left of it (a listing's
    right-aligned date or comment). Trial 48: maint-guide's ``-- Josip Rodin <joy-mg@...>``
    lost its ``Mon, 22 Mar 2010 ...`` to a column of its own, read after the listing."""
    left = [s for s in items if (s.x0 + s.x1) / 2 < cut]
    right = [s for s in items if (s.x0 + s.x1) / 2 >= cut]
    if not right or not all(_mono(s) for s in right):
        return False
    code = [s for s in left if _mono(s)]
    return all(any(c.top < s.bottom and s.top < c.bottom for c in code) for s in right)


def _merge_spans(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _coverage(items: Sequence[Segment]) -> list[tuple[float, float]]:
    return _merge_spans((s.x0, s.x1) for s in items)


def _bands(items: Sequence[Segment]) -> list[list[Segment]]:
    """Items split at horizontal gaps (boxes may overlap by up to 1 pt across a gap)."""
    ordered = sorted(items, key=lambda s: (s.top, s.x0))
    bands: list[list[Segment]] = [[ordered[0]]]
    bottom = ordered[0].bottom
    for item in ordered[1:]:
        if item.top >= bottom - 1.0:
            bands.append([item])
        else:
            bands[-1].append(item)
        bottom = max(bottom, item.bottom) if item.top < bottom - 1.0 else item.bottom
    return bands


def _visual_lines(items: Sequence[Segment]) -> list[list[Segment]]:
    """Items grouped into visual lines (vertical overlap >= half the smaller height), top to
    bottom, each left to right."""
    ordered = sorted(items, key=lambda s: ((s.top + s.bottom) / 2, s.x0))
    lines: list[tuple[float, float, list[Segment]]] = []
    for item in ordered:
        if lines:
            top, bottom, members = lines[-1]
            overlap = min(bottom, item.bottom) - max(top, item.top)
            if overlap >= 0.5 * min(bottom - top, item.bottom - item.top) and not item.table:
                members.append(item)
                lines[-1] = (min(top, item.top), max(bottom, item.bottom), members)
                continue
        lines.append((item.top, item.bottom, [item]))
    return [sorted(members, key=lambda s: s.x0) for _, _, members in lines]


def reading_order(page: Page, segments: list[Segment], body_size: float) -> list[Line]:
    if not segments:
        return []
    cutter = _Cutter(
        page=page.index,
        min_gap=max(_COLUMN_GAP_EM * body_size, 4.0),
        min_side=_COLUMN_MIN_SIDE * (max(s.x1 for s in segments) - min(s.x0 for s in segments)),
    )
    col = (0, min(s.x0 for s in segments), max(s.x1 for s in segments))
    if len(segments) > _MAX_SEGMENTS_FOR_LAYOUT:
        logger.warning("page %d has %d segments; read top to bottom", page.index + 1, len(segments))
        cutter.emit(segments, col)
    else:
        cutter.order(segments, col, 0)
    return cutter.lines
