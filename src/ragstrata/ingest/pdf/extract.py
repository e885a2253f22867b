"""Step 1 of the pipeline (see :mod:`ragstrata.ingest.pdf`): PDFium's pages to words and rules.

The only module that imports pypdfium2. :func:`read_pdf` opens the bytes, checks the caps
(RS212 ``ParserLimitError``, module constants ``_MAX_*``) page by page, turns each page's
characters into :class:`~ragstrata.ingest.pdf.model.Word` records grouped into segments
(:mod:`~ragstrata.ingest.pdf.rows`), reads the ruling lines, the Info dictionary and the
outline, and closes the document.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstrata.errors import (
    CorruptFileError,
    EmptyDocumentError,
    EncryptedDocumentError,
    NoTextLayerError,
    ParserLimitError,
)
from ragstrata.ingest.pdf.model import Frame, OutlineEntry, Page, Rule, Word, text_key
from ragstrata.ingest.pdf.rows import row_segments
from ragstrata.ingest.text import normalize_text
from ragstrata.optional import require

logger = logging.getLogger(__name__)

# PDFium is not thread-safe: one parse at a time per process.
_PDFIUM_LOCK = threading.Lock()

# --------------------------------------------------------------------------- limits (guards)
_MAX_PAGES_PER_DOCUMENT = 10_000
"""A PDF with more pages is refused (RS212) before any page is read."""
_MAX_TEXT_OBJECTS_PER_PAGE = 20_000
"""Text objects (one per text-show operator, inside form XObjects too) a page may hold; a page
with more is refused (RS212) before PDFium builds its text page, which costs about 200 bytes
per character (a page of 20,000 ``Tj`` of 100 characters: 2 M characters, 400 MB)."""
_MAX_OBJECTS_WALKED = 500_000
"""Page objects walked while counting text objects (a page of vector paths may hold many)."""
_MAX_CHARS_PER_PAGE = 250_000
"""Characters a page may hold (a dense page holds about 10,000); a page with more is refused
(RS212) before its characters are read into Python."""
_MAX_CHARS_PER_DOCUMENT = 10_000_000
"""Characters a document may hold, summed page by page as they are read; past it the PDF is
refused (RS212) without reading the remaining pages."""
_MAX_OBJECTS_PER_PAGE = 60_000
"""Page objects scanned for ruling lines and images; beyond this no table is detected."""
_MAX_RULES_PER_PAGE = 3_000
"""Ruling lines considered for table detection on one page."""
_MAX_OUTLINE_ENTRIES = 20_000
_SLOW_PAGE_S = 5.0

_RULE_MAX_THICKNESS = 2.5
_RULE_MIN_LENGTH = 8.0
_SPACE_CODES = frozenset(
    {0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x1680, 0x202F, 0x205F, 0x3000, 0xFEFF}
    | set(range(0x2000, 0x200C))
)
_LIGATURES = {
    0xFB00: "ff",
    0xFB01: "fi",
    0xFB02: "fl",
    0xFB03: "ffi",
    0xFB04: "ffl",
    0xFB05: "st",
    0xFB06: "st",
}
MARKER_SIZE_RATIO = 0.85
"""Digits that open a word in a font under this share of the word's letters' size are a
footnote marker, a word of their own ("¹¹La longitud" was read "11La longitud"); digits set in
the text's size stay joined ("11Apr29")."""

_PDFIUM_HYPHENS = frozenset({0x02, 0xFFFE})
"""PDFium marks a hyphen it judged to be an end-of-line hyphenation as U+0002
(``FPDFText_GetUnicode``) or U+FFFE (``FPDFText_GetText``); the next line follows with no
separator."""
_QUARTER_TURN = 1.5707963267948966
_MONO_RE = re.compile(
    r"mono|courier|consol|inconsolata|menlo|typewriter|fixed|cousine|"
    r"^(?:cm|sf|lm|ec|tx|pc|qc)tt|^lmmono|^txtt|code",
    re.IGNORECASE,
)
_BOLD_RE = re.compile(
    r"bold|black|heavy|semibold|demi|^(?:cm|sf|ec|lm|tc)bx|[-,]bd?$|bx\d", re.IGNORECASE
)
_SUBSET_RE = re.compile(r"^[A-Z]{6}\+")


@dataclass(frozen=True, slots=True)
class Extracted:
    """What PDFium gives the layout passes: every page (``pages[i].index == i``), the Info
    dictionary (normalized strings) and the outline entries with a destination page."""

    pages: list[Page]
    info: dict[str, str]
    outline: list[OutlineEntry]


def read_pdf(data: bytes, *, source: str) -> Extracted:
    """Open a PDF's bytes with PDFium and read its pages (step 1), Info and outline.

    One read at a time per process (PDFium is not thread-safe); the document is closed before
    this returns.

    Raises:
        MissingDependencyError: pypdfium2 is not installed (``pip install 'ragstrata[pdf]'``).
        CorruptFileError: not a PDF, truncated or damaged beyond what PDFium can repair,
            without pages, or with a page that cannot be loaded.
        EmptyDocumentError: the file is empty (0 bytes), RS203 as for every format.
        EncryptedDocumentError: the PDF needs a password to open.
        NoTextLayerError: no page has a text layer (scanned or image-only PDF).
        ParserLimitError: past a cap (module constants ``_MAX_*``).
    """
    pdfium = require("pypdfium2", extra="pdf")
    pdfium_c = require("pypdfium2.raw", extra="pdf", package="pypdfium2")

    if not data:
        raise EmptyDocumentError(source, "the file is empty (0 bytes)")  # RS203, as any format
    if b"%PDF-" not in data[:1024]:
        raise CorruptFileError(source, "not a PDF file: no '%PDF-' header in the first 1024 bytes")

    with _PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise _open_error(source, exc, pdfium_c) from exc
        try:
            pages = _read_pages(pdf, pdfium, pdfium_c, source=source)
            return Extracted(pages, _info(pdf, pdfium), _outline(pdf, pdfium, pages))
        finally:
            pdf.close()


def _open_error(source: str, exc: Any, pdfium_c: Any) -> Exception:
    code = getattr(exc, "err_code", None)
    if code == pdfium_c.FPDF_ERR_PASSWORD:
        return EncryptedDocumentError(
            source, "the PDF is password-protected; decrypt it first (e.g. qpdf --decrypt)"
        )
    if code == pdfium_c.FPDF_ERR_SECURITY:
        return EncryptedDocumentError(source, "the PDF uses an unsupported security handler")
    if code == pdfium_c.FPDF_ERR_FORMAT:
        return CorruptFileError(
            source, "damaged or truncated PDF: PDFium cannot read its structure"
        )
    return CorruptFileError(source, f"PDFium cannot open the file: {exc}")


def _read_pages(pdf: Any, pdfium: Any, pdfium_c: Any, *, source: str) -> list[Page]:
    """Every page, or an error: a page that cannot be read, too many pages, no text at all."""
    try:
        page_count = len(pdf)
    except pdfium.PdfiumError as exc:
        raise CorruptFileError(source, f"cannot count the pages: {exc}") from exc
    if page_count <= 0:
        raise CorruptFileError(source, "the PDF has no pages")
    if page_count > _MAX_PAGES_PER_DOCUMENT:
        raise ParserLimitError(
            source,
            f"the PDF has {page_count:,} pages, more than the {_MAX_PAGES_PER_DOCUMENT:,} a "
            "document may have; split it",
        )

    pages: list[Page] = []
    unreadable: list[int] = []
    budget = [_MAX_CHARS_PER_DOCUMENT]  # characters the remaining pages may still hold
    for index in range(page_count):
        started = time.perf_counter()
        try:
            pages.append(_extract_page(pdf, index, pdfium_c, source=source, budget=budget))
        except pdfium.PdfiumError as exc:
            logger.debug("%s: page %d cannot be read: %s", source, index + 1, exc)
            unreadable.append(index + 1)
        elapsed = time.perf_counter() - started
        if elapsed > _SLOW_PAGE_S:
            logger.warning("%s: page %d took %.1f s to extract", source, index + 1, elapsed)
    if unreadable:
        listed = ", ".join(map(str, unreadable[:10])) + (", ..." if len(unreadable) > 10 else "")
        raise CorruptFileError(
            source,
            f"damaged or truncated PDF: {len(unreadable)} of its {page_count} pages cannot be "
            f"read (page{'s' if len(unreadable) > 1 else ''} {listed}); repair it "
            "(e.g. qpdf in.pdf out.pdf) or download it again",
        )

    if not any(p.has_text for p in pages):
        if any(p.has_images for p in pages):
            reason = (
                f"no text layer on any of its {page_count} page(s): the pages are images "
                "(a scanned or image-only PDF); OCR it first, e.g. with ocrmypdf"
            )
        else:
            reason = f"none of its {page_count} page(s) holds text or images (a blank PDF)"
        raise NoTextLayerError(source, reason)
    return pages


def _info(pdf: Any, pdfium: Any) -> dict[str, str]:
    try:
        raw = pdf.get_metadata_dict(skip_empty=True)
    except (pdfium.PdfiumError, ValueError, UnicodeDecodeError) as exc:
        logger.debug("cannot read the PDF Info dictionary: %s", exc)
        return {}
    return {str(k): normalize_text(str(v)) for k, v in raw.items()}


def _extract_page(pdf: Any, index: int, pdfium_c: Any, *, source: str, budget: list[int]) -> Page:
    """Read page ``index``; ``budget[0]`` (characters the document may still hold) is charged
    with the page's characters. Raises ParserLimitError past a cap (module constants)."""
    page = pdf[index]
    try:
        text_objects = _count_text_objects(page.raw, pdfium_c)
        if text_objects > _MAX_TEXT_OBJECTS_PER_PAGE:
            raise ParserLimitError(
                source,
                f"page {index + 1} holds more than {_MAX_TEXT_OBJECTS_PER_PAGE:,} text objects "
                "(text-show operators); the PDF is refused before its text is built",
            )
        textpage = page.get_textpage()
        try:
            count = int(textpage.count_chars())
            if count > _MAX_CHARS_PER_PAGE:
                raise ParserLimitError(
                    source,
                    f"page {index + 1} holds {count:,} characters, more than the "
                    f"{_MAX_CHARS_PER_PAGE:,} a page may hold",
                )
            budget[0] -= count
            if budget[0] < 0:
                raise ParserLimitError(
                    source,
                    f"the PDF holds more than {_MAX_CHARS_PER_DOCUMENT:,} characters (reached "
                    f"on page {index + 1} of {len(pdf)}); split it",
                )
            frame = _frame(page, textpage, pdfium_c)
            words = _words(textpage, frame, pdfium_c, index)
        finally:
            textpage.close()
        hrules, vrules, has_images = _rules(page, frame, pdfium_c)
        width, height = frame.size
    finally:
        page.close()
    return Page(
        index=index,
        width=width,
        height=height,
        segments=row_segments(words),
        hrules=hrules,
        vrules=vrules,
        has_text=bool(words),
        has_images=has_images,
    )


def _count_text_objects(page: Any, pdfium_c: Any) -> int:
    """Text objects on a page, form XObjects included; stops counting past
    :data:`_MAX_TEXT_OBJECTS_PER_PAGE` or after :data:`_MAX_OBJECTS_WALKED` objects."""
    text_kind, form_kind = pdfium_c.FPDF_PAGEOBJ_TEXT, pdfium_c.FPDF_PAGEOBJ_FORM
    get_type = pdfium_c.FPDFPageObj_GetType
    count = walked = 0
    forms: list[Any] = []
    n = int(pdfium_c.FPDFPage_CountObjects(page))
    objects: Iterable[Any] = (pdfium_c.FPDFPage_GetObject(page, i) for i in range(n))
    while True:
        for obj in objects:
            kind = get_type(obj)
            if kind == text_kind:
                count += 1
                if count > _MAX_TEXT_OBJECTS_PER_PAGE:
                    return count
            elif kind == form_kind:
                forms.append(obj)
            walked += 1
            if walked >= _MAX_OBJECTS_WALKED:
                return count
        if not forms:
            return count
        form = forms.pop()
        n = int(pdfium_c.FPDFFormObj_CountObjects(form))
        objects = (pdfium_c.FPDFFormObj_GetObject(form, i) for i in range(n))


def _frame(page: Any, textpage: Any, pdfium_c: Any) -> Frame:
    """The page box and the turn that makes the page's dominant text direction horizontal.

    PDFium reports character angles clockwise in user space; text drawn rotated 90 degrees
    counter-clockwise (angle 3pi/2) reads upright after a 90 degree clockwise turn.
    """
    left, bottom, right, top = (float(v) for v in page.get_bbox())
    width, height = (float(v) for v in page.get_size())
    rotation = int(page.get_rotation() or 0)
    unrotated = (height, width) if rotation in (90, 270) else (width, height)
    if abs((right - left) - unrotated[0]) > 1 or abs((top - bottom) - unrotated[1]) > 1:
        left, bottom, right, top = 0.0, 0.0, unrotated[0], unrotated[1]
    count = min(int(textpage.count_chars()), _MAX_CHARS_PER_PAGE)
    votes: Counter[int] = Counter()
    step = max(1, count // 400)
    raw = textpage.raw
    for i in range(0, count, step):
        angle = float(pdfium_c.FPDFText_GetCharAngle(raw, i))
        if angle >= 0:
            votes[round(angle / _QUARTER_TURN) % 4] += 1
    quadrant = votes.most_common(1)[0][0] if votes else 0
    turn = {0: 0, 1: 270, 2: 180, 3: 90}[quadrant]
    return Frame(left, bottom, right, top, turn)


def _char_codes(raw: Any, count: int, pdfium_c: Any) -> list[int]:
    """The page's character codes, one per character index: one ``FPDFText_GetText`` call
    (UTF-16 units), or ``FPDFText_GetUnicode`` per character when the two do not line up."""
    if count <= 0:
        return []
    buffer = (ctypes.c_ushort * (count + 1))()
    written = int(pdfium_c.FPDFText_GetText(raw, 0, count, buffer))
    if written - 1 == count:
        return list(buffer[:count])
    return [int(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(count)]


@dataclass(slots=True)
class _WordBuilder:
    """Turns runs of character indices into words, reading boxes and fonts from PDFium.

    A run (characters between two spaces) normally becomes one word from the boxes of its first
    and last character; when those disagree (the run crosses a line or jumps left, as after
    PDFium's end-of-line hyphen) every character's box is read and the run is split.
    """

    raw: Any
    frame: Frame
    pdfium_c: Any
    expected_quadrant: int
    words: list[Word] = field(default_factory=list)
    styles: dict[tuple[bytes, int, int], tuple[bool, bool]] = field(default_factory=dict)
    _rect: Any = field(init=False)
    _rect_ref: Any = field(init=False)
    _buf: Any = field(init=False)
    _flags: Any = field(init=False)

    def __post_init__(self) -> None:
        self._rect = self.pdfium_c.FS_RECTF()
        self._rect_ref = ctypes.byref(self._rect)
        self._buf = ctypes.create_string_buffer(256)
        self._flags = ctypes.c_int()

    def box(self, index: int) -> tuple[float, float, float, float]:
        self.pdfium_c.FPDFText_GetLooseCharBox(self.raw, index, self._rect_ref)
        r = self._rect
        return self.frame.box(r.left, r.bottom, r.right, r.top)

    def size(self, index: int) -> float:
        return float(self.pdfium_c.FPDFText_GetFontSize(self.raw, index))

    def marker_end(self, chars: Sequence[str], indices: Sequence[int]) -> int:
        """Length of a footnote marker that opens the run: leading digits set smaller than the
        letter after them ("¹¹La longitud" read "11La"); 0 when none."""
        k = 0
        while k < len(chars) - 1 and k < 3 and chars[k].isdigit():
            k += 1
        if k == 0 or not chars[k].isalpha():
            return 0
        text_size = self.size(indices[k])
        return k if 0 < self.size(indices[0]) < MARKER_SIZE_RATIO * text_size else 0

    def add(self, chars: Sequence[str], indices: Sequence[int]) -> None:
        if len(chars) > 1 and chars[0].isdigit():
            cut = self.marker_end(chars, indices)
            if cut:
                self.add(chars[:cut], indices[:cut])
                chars, indices = chars[cut:], indices[cut:]
        first = self.box(indices[0])
        last = self.box(indices[-1]) if len(indices) > 1 else first
        height = first[3] - first[1]
        overlap = min(first[3], last[3]) - max(first[1], last[1])
        if (
            overlap >= 0.5 * min(height, last[3] - last[1])
            and last[0] >= first[0] - 0.5
            and last[2] - first[0] <= len(chars) * max(height, 1.0) + 1.0
        ):
            self.emit(
                chars,
                indices[0],
                (
                    min(first[0], last[0]),
                    min(first[1], last[1]),
                    max(first[2], last[2]),
                    max(first[3], last[3]),
                ),
            )
            return
        self.split(chars, indices)

    def split(self, chars: Sequence[str], indices: Sequence[int]) -> None:
        """Slow path: read every character's box and cut at line changes and gaps."""
        start = 0
        x0 = top = x1 = bottom = last_x0 = 0.0
        for k, index in enumerate(indices):
            cx0, ctop, cx1, cbottom = self.box(index)
            if k > start:
                height = bottom - top
                overlap = min(bottom, cbottom) - max(top, ctop)
                if (
                    overlap < 0.5 * min(height, cbottom - ctop)
                    or cx0 - x1 > 0.3 * height
                    or cx0 < last_x0 - 0.6 * height
                ):
                    self.emit(chars[start:k], indices[start], (x0, top, x1, bottom))
                    start = k
            if k == start:
                x0, top, x1, bottom = cx0, ctop, cx1, cbottom
            else:
                x0, top = min(x0, cx0), min(top, ctop)
                x1, bottom = max(x1, cx1), max(bottom, cbottom)
            last_x0 = cx0
        self.emit(chars[start:], indices[start], (x0, top, x1, bottom))

    def emit(
        self, chars: Sequence[str], index: int, bbox: tuple[float, float, float, float]
    ) -> None:
        pdfium_c, raw = self.pdfium_c, self.raw
        angle = float(pdfium_c.FPDFText_GetCharAngle(raw, index))
        if angle >= 0 and round(angle / _QUARTER_TURN) % 4 != self.expected_quadrant:
            return  # text at another angle than the page's (a margin stamp)
        size = float(pdfium_c.FPDFText_GetFontSize(raw, index)) or (bbox[3] - bbox[1]) / 1.15
        length = int(pdfium_c.FPDFText_GetFontInfo(raw, index, self._buf, 256, self._flags))
        name = self._buf.value if 0 < length <= 256 else b""
        weight = int(pdfium_c.FPDFText_GetFontWeight(raw, index))
        key = (name, int(self._flags.value), weight)
        style = self.styles.get(key)
        if style is None:
            style = _font_style(name, key[1], weight)
            self.styles[key] = style
        x0, top, x1, bottom = bbox
        self.words.append(Word("".join(chars), x0, top, x1, bottom, size, style[0], style[1]))


def _font_style(name: bytes, flags: int, weight: int) -> tuple[bool, bool]:
    """``(bold, mono)`` from the font's name (subset tag removed), descriptor flags
    (FixedPitch = bit 1, ForceBold = bit 19) and weight (>= 600 is bold)."""
    text = _SUBSET_RE.sub("", name.decode("latin-1"))
    bold = weight >= 600 or bool(flags & (1 << 18)) or bool(_BOLD_RE.search(text))
    mono = bool(flags & 1) or bool(_MONO_RE.search(text))
    return bold, mono


def _words(textpage: Any, frame: Frame, pdfium_c: Any, page_index: int) -> list[Word]:
    """Characters to words (module docstring, step 1)."""
    raw = textpage.raw
    count = min(int(textpage.count_chars()), _MAX_CHARS_PER_PAGE)  # checked by _extract_page
    quadrant = {0: 0, 270: 1, 180: 2, 90: 3}[frame.turn]
    builder = _WordBuilder(raw, frame, pdfium_c, quadrant)
    chars: list[str] = []
    indices: list[int] = []
    high = 0
    for i, u in enumerate(_char_codes(raw, count, pdfium_c)):
        if 0x20 < u < 0x7F or 0xA0 < u < 0x2000:
            ch = chr(u)
        elif u in _SPACE_CODES:
            if chars:
                builder.add(chars, indices)
                chars, indices = [], []
            continue
        elif u in _PDFIUM_HYPHENS:
            chars.append("-")
            indices.append(i)
            builder.add(chars, indices)  # the next line follows without a separator
            chars, indices = [], []
            continue
        elif u < 0x20 or 0x7F <= u < 0xA0 or u in (0xFFFD, 0xFFFF):
            continue
        elif 0xD800 <= u <= 0xDBFF:
            high = u
            continue
        elif 0xDC00 <= u <= 0xDFFF:
            if not high:
                continue
            ch = chr(0x10000 + ((high - 0xD800) << 10) + (u - 0xDC00))
            high = 0
        elif 0xE000 <= u <= 0xF8FF:
            continue  # private use: a symbol font without a Unicode mapping
        else:
            ch = _LIGATURES.get(u) or chr(u)
        chars.append(ch)
        indices.append(i)
    if chars:
        builder.add(chars, indices)
    return builder.words


def _rules(page: Any, frame: Frame, pdfium_c: Any) -> tuple[list[Rule], list[Rule], bool]:
    """Horizontal and vertical ruling lines (thin path objects and stroked path segments), and
    whether the page holds images. Form XObjects are not entered."""
    raw = page.raw
    count = int(pdfium_c.FPDFPage_CountObjects(raw))
    hrules: list[Rule] = []
    vrules: list[Rule] = []
    has_images = False
    if count > _MAX_OBJECTS_PER_PAGE:
        logger.warning("page has %d objects; ruling lines are not analysed", count)
        count = 0
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    fill_mode, stroke = ctypes.c_int(), ctypes.c_int()
    for k in range(count):
        obj = pdfium_c.FPDFPage_GetObject(raw, k)
        kind = int(pdfium_c.FPDFPageObj_GetType(obj))
        if kind in (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM):
            has_images = has_images or kind == pdfium_c.FPDF_PAGEOBJ_IMAGE
            continue
        if kind != pdfium_c.FPDF_PAGEOBJ_PATH or len(hrules) + len(vrules) > _MAX_RULES_PER_PAGE:
            continue
        if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            continue
        x0, y0, x1, y1 = frame.box(left.value, bottom.value, right.value, top.value)
        width, height = x1 - x0, y1 - y0
        if height <= _RULE_MAX_THICKNESS and width >= _RULE_MIN_LENGTH:
            hrules.append(Rule((y0 + y1) / 2, x0, x1))
        elif width <= _RULE_MAX_THICKNESS and height >= _RULE_MIN_LENGTH:
            vrules.append(Rule((x0 + x1) / 2, y0, y1))
        elif width >= _RULE_MIN_LENGTH and height >= _RULE_MIN_LENGTH:
            pdfium_c.FPDFPath_GetDrawMode(obj, ctypes.byref(fill_mode), ctypes.byref(stroke))
            if stroke.value and not fill_mode.value and _is_rectangle(obj, pdfium_c):
                hrules.append(Rule(y0, x0, x1))
                hrules.append(Rule(y1, x0, x1))
                vrules.append(Rule(x0, y0, y1))
                vrules.append(Rule(x1, y0, y1))
    return _merge_rules(hrules), _merge_rules(vrules), has_images


def _is_rectangle(obj: Any, pdfium_c: Any) -> bool:
    """Whether a path is a single closed 4-sided box (``re`` or m/l/l/l[/l]/h)."""
    segments = int(pdfium_c.FPDFPath_CountSegments(obj))
    return 4 <= segments <= 6


def _merge_rules(rules: list[Rule]) -> list[Rule]:
    """Join collinear rules that touch or overlap (table borders drawn cell by cell)."""
    rules = sorted(rules, key=lambda r: (round(r.pos), r.start))
    merged: list[Rule] = []
    for rule in rules:
        last = merged[-1] if merged else None
        if last is not None and abs(last.pos - rule.pos) <= 1.0 and rule.start <= last.end + 2.0:
            merged[-1] = Rule(last.pos, last.start, max(last.end, rule.end))
        else:
            merged.append(rule)
    return merged


def _outline(pdf: Any, pdfium: Any, pages: Sequence[Page]) -> list[OutlineEntry]:
    """Bookmarks with a destination page, as ``OutlineEntry`` (level 0 = top)."""
    entries: list[OutlineEntry] = []
    try:
        for n, bookmark in enumerate(pdf.get_toc(max_depth=8)):
            if n >= _MAX_OUTLINE_ENTRIES:
                break
            title = " ".join(normalize_text(bookmark.get_title() or "").split())
            dest = bookmark.get_dest()
            if not title or dest is None:
                continue
            index = dest.get_index()
            if index is None or not 0 <= index < len(pages):
                continue
            top: float | None = None
            try:
                _mode, view = dest.get_view()
                if len(view) >= 2 and view[1]:
                    top = pages[index].height - float(view[1])
            except (pdfium.PdfiumError, TypeError, ValueError, IndexError):
                top = None
            key = text_key(title)
            if key:
                entries.append(OutlineEntry(int(bookmark.level), title, key, index, top))
    except (pdfium.PdfiumError, ValueError, UnicodeDecodeError, OSError) as exc:
        logger.debug("cannot read the PDF outline: %s", exc)
    return entries
