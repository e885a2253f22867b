"""Step 2 of the pipeline (see :mod:`ragstrata.ingest.pdf`): words to visual rows and segments,
and the body font size."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ragstrata.ingest.pdf.model import Page, Segment, Word

_SEGMENT_GAP_EM = 0.8
"""Words on one row further apart than this (in em of the larger word) start a new segment."""


def word_rows(words: Sequence[Word]) -> list[list[Word]]:
    """Words grouped into visual rows: a word joins a recent row it overlaps vertically by at
    least half the smaller height (the row's box is its first word's, so rows do not chain)."""
    ordered = sorted(words, key=lambda w: (w.top + w.bottom) / 2)
    rows: list[tuple[float, float, list[Word]]] = []
    for word in ordered:
        height = word.bottom - word.top
        placed = False
        for r in range(len(rows) - 1, max(-1, len(rows) - 9), -1):
            rtop, rbottom, members = rows[r]
            overlap = min(rbottom, word.bottom) - max(rtop, word.top)
            if overlap >= 0.5 * min(height, rbottom - rtop):
                members.append(word)
                placed = True
                break
        if not placed:
            rows.append((word.top, word.bottom, [word]))
    return [sorted(members, key=lambda w: w.x0) for _, _, members in rows]


def _segment(words: Sequence[Word], table: str = "") -> Segment:
    return Segment(
        words=tuple(words),
        x0=min(w.x0 for w in words),
        top=min(w.top for w in words),
        x1=max(w.x1 for w in words),
        bottom=max(w.bottom for w in words),
        table=table,
    )


def row_segments(words: Sequence[Word]) -> list[Segment]:
    """Each visual row cut into segments at gaps wider than 0.8 em (module docstring, step 2)."""
    segments: list[Segment] = []
    for row in word_rows(words):
        current = [row[0]]
        for word in row[1:]:
            previous = current[-1]
            if word.x0 - previous.x1 > _SEGMENT_GAP_EM * max(word.size, previous.size, 1.0):
                segments.append(_segment(current))
                current = [word]
            else:
                current.append(word)
        segments.append(_segment(current))
    return segments


def body_font_size(pages: Sequence[Page]) -> float:
    """Most common font size (to 0.5 pt), weighted by characters: the body text size."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for segment in page.segments:
            for word in segment.words:
                sizes[round(word.size * 2) / 2] += len(word.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0
