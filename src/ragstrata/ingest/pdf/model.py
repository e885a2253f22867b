"""The records the PDF passes hand each other, and the few helpers several passes read.

All coordinates are display space: points, origin at the page's top-left, y downward (see
:class:`Frame`). Nothing here touches PDFium, so every later pass can be tested on records built
by hand.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ragstrata.types import BlockKind

HEADING_SIZE_RATIO = 1.12
"""A line in a font at least this much larger than the body font may be a heading."""
_KEY_RE = re.compile(r"[\W_]+")
LEADERS_RE = re.compile(r"(?:\s?[.·…]){4,}\s*")
"""Dot leaders (a table of contents' "Introduction ....... 3")."""


@dataclass(frozen=True, slots=True)
class Word:
    """A run of characters without a space, in display coordinates (points, y downward)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    bold: bool
    mono: bool


@dataclass(frozen=True, slots=True)
class Segment:
    """Words of one visual row with no wide gap, or a detected table (``table`` markdown)."""

    words: tuple[Word, ...]
    x0: float
    top: float
    x1: float
    bottom: float
    table: str = ""

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def size(self) -> float:
        return max((w.size for w in self.words), default=0.0)


@dataclass(frozen=True, slots=True)
class Rule:
    """A ruling line: horizontal (``pos`` = y, ``start``..``end`` = x) or vertical."""

    pos: float
    start: float
    end: float


@dataclass(slots=True)
class Page:
    """One page's extraction result (mutable while the document-level passes run)."""

    index: int
    width: float
    height: float
    segments: list[Segment]
    hrules: list[Rule]
    vrules: list[Rule]
    has_text: bool
    has_images: bool


@dataclass(frozen=True, slots=True)
class Line:
    """One line in reading order: words (or a table) with its column's extent."""

    page: int
    column: int
    col_x0: float
    col_x1: float
    words: tuple[Word, ...]
    x0: float
    top: float
    x1: float
    bottom: float
    table: str = ""

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)


@dataclass(frozen=True, slots=True)
class Style:
    size: float
    bold: bool
    mono: bool


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    level: int
    title: str
    key: str
    page: int
    top: float | None


@dataclass(frozen=True, slots=True)
class Item:
    """A block before text assembly. A paragraph keeps its ``first`` and ``last`` lines (for
    the page-break rule); ``joins`` is the separator (``" "`` or ``""``) of a paragraph that
    continues the previous page's last one, None otherwise."""

    kind: BlockKind
    text: str
    page: int
    level: int = 0
    title: str = ""
    first: Line | None = None
    last: Line | None = None
    joins: str | None = None


@dataclass(slots=True)
class Stats:
    body_size: float
    hyphenated: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)
    """Words of 4+ letters written inside lines, casefolded: a line-end hyphen before an
    uppercase letter is dropped when the joined word is one of them ("ELI-" + "MINADO")."""


@dataclass(slots=True)
class Frame:
    """Maps PDF user space to display space (points, origin top-left, y downward)."""

    left: float
    bottom: float
    right: float
    top: float
    turn: int  # 0, 90, 180, 270: rotation applied so the dominant text runs left to right

    def box(
        self, left: float, bottom: float, right: float, top: float
    ) -> tuple[float, float, float, float]:
        """``(x0, top, x1, bottom)`` in display space of a user-space box."""
        if self.turn == 0:
            return left - self.left, self.top - top, right - self.left, self.top - bottom
        if self.turn == 90:
            return bottom - self.bottom, left - self.left, top - self.bottom, right - self.left
        if self.turn == 180:
            return self.right - right, bottom - self.bottom, self.right - left, top - self.bottom
        return self.top - top, self.right - right, self.top - bottom, self.right - left

    @property
    def size(self) -> tuple[float, float]:
        w, h = self.right - self.left, self.top - self.bottom
        return (h, w) if self.turn in (90, 270) else (w, h)


def line_style(line: Line) -> Style:
    """The line's font size (most characters, to 0.5 pt), and bold/mono when >= 90 % of its
    characters are."""
    weights: Counter[float] = Counter()
    bold = mono = total = 0
    for word in line.words:
        n = len(word.text)
        weights[round(word.size * 2) / 2] += n
        total += n
        bold += n if word.bold else 0
        mono += n if word.mono else 0
    size = weights.most_common(1)[0][0] if weights else 0.0
    return Style(size, total > 0 and bold >= 0.9 * total, total > 0 and mono >= 0.9 * total)


def text_key(text: str) -> str:
    """Case-folded text without spaces, punctuation or underscores: what outline titles and
    heading lines are matched on."""
    return _KEY_RE.sub("", text.casefold())
