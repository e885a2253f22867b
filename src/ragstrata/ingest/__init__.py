"""Loaders: files -> :class:`~ragstrata.types.Document` (normalized text + structural blocks).

Public API::

    discover(paths) -> (files, errors)        expand directories, report missing/unsupported
    load_document(path, *, max_file_bytes)    read + decode + parse one file
    decode_bytes(data, *, path) -> str        bytes -> normalized text
    normalize_text(s) -> str                  LF line ends, no control characters, NFC
    parse_markdown(text, *, fallback_title)   Markdown/MDX -> ParsedText
    parse_html(raw, *, fallback_title)        HTML -> ParsedText (markdown-like rendering)
    parse_text(text, *, fallback_title)       plain text -> ParsedText (paragraphs)

The markdown and HTML parsers (markdown-it-py, selectolax) are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragstrata.ingest.loader import (
    DEFAULT_MAX_FILE_BYTES,
    FORMATS,
    discover,
    doc_id_for,
    load_document,
)
from ragstrata.ingest.text import ParsedText, decode_bytes, normalize_text, parse_text

if TYPE_CHECKING:
    from ragstrata.ingest.html import parse_html
    from ragstrata.ingest.markdown import parse_markdown

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "FORMATS",
    "ParsedText",
    "decode_bytes",
    "discover",
    "doc_id_for",
    "load_document",
    "normalize_text",
    "parse_html",
    "parse_markdown",
    "parse_text",
]


def __getattr__(name: str) -> Any:
    """Import the parsers that need third-party libraries only when first asked for."""
    if name == "parse_markdown":
        from ragstrata.ingest.markdown import parse_markdown

        return parse_markdown
    if name == "parse_html":
        from ragstrata.ingest.html import parse_html

        return parse_html
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
