"""PDF parsing (placeholder until the pypdfium2/pdfplumber parser lands)."""

from __future__ import annotations

from ragstrata.errors import UnsupportedFormatError
from ragstrata.ingest.text import ParsedText

__all__ = ["parse_pdf"]


def parse_pdf(data: bytes, *, source: str, fallback_title: str) -> ParsedText:
    """Not implemented yet; raises UnsupportedFormatError."""
    raise UnsupportedFormatError(source, "PDF parsing is not available yet")
