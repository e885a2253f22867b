"""The PDF parser's entry point: :func:`parse_pdf` runs the passes of :mod:`ragstrata.ingest.pdf`
in order."""

from __future__ import annotations

import re
from typing import Any

from ragstrata.ingest.pdf.blocks import assemble, build_items, collect_hyphenated
from ragstrata.ingest.pdf.extract import read_pdf
from ragstrata.ingest.pdf.headings import find_headings
from ragstrata.ingest.pdf.model import Line, Stats
from ragstrata.ingest.pdf.order import reading_order
from ragstrata.ingest.pdf.rows import body_font_size
from ragstrata.ingest.pdf.running import (
    drop_contents_lines,
    drop_decorative_rules,
    drop_running_lines,
)
from ragstrata.ingest.pdf.tables import detect_tables
from ragstrata.ingest.text import ParsedText

_JUNK_TITLE_RE = re.compile(
    r"^(?:untitled|microsoft word - .*|.*\.(?:dvi|tex|docx?|odt|pdf|ps|indd|qxd))$", re.IGNORECASE
)


def parse_pdf(data: bytes, *, source: str, fallback_title: str) -> ParsedText:
    """Parse a PDF's bytes into normalized text, blocks and page offsets.

    Args:
        data: the file's bytes.
        source: the path or name used in error messages.
        fallback_title: title when the PDF has neither an Info ``/Title`` nor a heading.

    Returns:
        ``ParsedText`` whose ``text`` is normalized (NFC, LF, no control characters); blocks
        (``heading`` with level and title, ``paragraph``, ``list``, ``code`` as a fenced block,
        ``table`` as a GFM pipe table) sorted, non-overlapping and trimmed; ``pages[i]`` the
        offset where page ``i + 1`` starts; ``title`` the Info title, else the first heading,
        else ``fallback_title``; ``metadata`` holds ``page_count``, ``author``/``subject``/
        ``keywords`` when set, and ``pages_without_text`` (1-based) when some pages have no
        text layer.
        Running headers/footers and page numbers are removed; see the module docstring for the
        reading-order, table, heading and de-hyphenation rules.

    Raises:
        MissingDependencyError: pypdfium2 is not installed (``pip install 'ragstrata[pdf]'``).
        CorruptFileError: not a PDF, truncated or damaged beyond what PDFium can repair,
            without pages, or with a page that cannot be loaded.
        EncryptedDocumentError: the PDF needs a password to open.
        NoTextLayerError: no page has a text layer (scanned or image-only PDF).
    """
    extracted = read_pdf(data, source=source)
    pages, info = extracted.pages, extracted.info
    page_count = len(pages)
    without_text = [p.index + 1 for p in pages if not p.has_text]

    stats = Stats(body_size=body_font_size(pages))
    drop_running_lines(pages, stats.body_size)
    drop_decorative_rules(pages)
    lines_by_page: list[list[Line]] = []
    for page in pages:
        segments = detect_tables(page, stats.body_size)
        lines_by_page.append(reading_order(page, segments, stats.body_size))
    drop_contents_lines(lines_by_page)
    collect_hyphenated(lines_by_page, stats)

    headings = find_headings(lines_by_page, extracted.outline, stats)
    items = build_items(lines_by_page, headings, stats)

    text, blocks, offsets = assemble(items, page_count)
    title = info.get("Title", "").strip()
    if not title or _JUNK_TITLE_RE.match(title):
        title = next((b.title for b in blocks if b.kind == "heading" and b.title), "") or (
            fallback_title
        )
    metadata: dict[str, Any] = {"page_count": page_count}
    for key in ("Author", "Subject", "Keywords"):
        value = " ".join(info.get(key, "").split())
        if value:
            metadata[key.lower()] = value
    if without_text:
        metadata["pages_without_text"] = without_text
    return ParsedText(
        text=text, blocks=tuple(blocks), title=title, metadata=metadata, pages=offsets
    )
