"""Load files into :class:`~ragstrata.types.Document` and discover the files to load.

``load_document`` is deterministic: the same file at the same path gives the same
``doc_id`` (hash of the resolved path) and ``content_hash`` (hash of the normalized text),
so re-ingesting is idempotent.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragstrata.errors import (
    EmptyDocumentError,
    FileTooLargeError,
    IngestError,
    SourceNotFoundError,
    UnsupportedFormatError,
)
from ragstrata.ingest.confluence import (
    EXPORT_ASSET_DIRS,
    is_export_root,
    looks_like_confluence,
    parse_confluence,
)
from ragstrata.ingest.language import detect_language
from ragstrata.ingest.text import ParsedText, decode_bytes, normalize_text, parse_text
from ragstrata.types import Document

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "FORMATS",
    "PARSER_VERSION",
    "discover",
    "doc_id_for",
    "document_from_text",
    "load_document",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 20_000_000

PARSER_VERSION = "3"
"""Bumped whenever a parser's output for the same bytes changes: documents indexed under
another version are re-parsed by the next ``ingest`` (vectors of unchanged chunks are reused)."""

FORMATS: Mapping[str, str] = MappingProxyType(
    {
        ".md": "markdown",
        ".mdx": "markdown",
        ".markdown": "markdown",
        ".html": "html",
        ".htm": "html",
        ".xhtml": "html",
        ".txt": "text",
        ".text": "text",
        ".rst": "text",
        ".log": "text",
        ".pdf": "pdf",
    }
)
"""Lower-case file extension -> format name (``markdown``, ``html``, ``text`` or ``pdf``)."""


def _format_of(path: Path) -> str | None:
    return FORMATS.get(path.suffix.lower())


def doc_id_for(path: Path) -> str:
    """Document id: the first 16 hex digits of SHA-256 of the resolved absolute POSIX path."""
    return _doc_id(path.resolve().as_posix())


def _doc_id(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def _parse_bytes(data: bytes, *, fmt: str, source: str, stem: str) -> ParsedText:
    if fmt == "pdf":
        from ragstrata.ingest.pdf import parse_pdf

        return parse_pdf(data, source=source, fallback_title=stem)
    return _parse(decode_bytes(data, path=source), fmt=fmt, stem=stem)


def _parse(text: str, *, fmt: str, stem: str) -> ParsedText:
    if fmt == "markdown":
        from ragstrata.ingest.markdown import parse_markdown

        return parse_markdown(text, fallback_title=stem)
    if fmt == "html":
        if looks_like_confluence(text):
            return parse_confluence(text, fallback_title=stem, file_stem=stem)
        from ragstrata.ingest.html import parse_html

        return parse_html(text, fallback_title=stem)
    return parse_text(text, fallback_title=stem)


def load_document(path: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Document:
    """Read, decode and parse one file.

    Args:
        path: the file; its extension picks the format (see :data:`FORMATS`).
        max_file_bytes: size limit in bytes; larger files are refused before being read.

    Returns:
        A ``Document`` whose ``source`` is the resolved absolute POSIX path, ``doc_id`` the
        first 16 hex digits of its SHA-256, ``content_hash`` the SHA-256 of ``text`` (for HTML,
        ``text`` is the rendered markdown-like text), ``format`` one of ``markdown``/``html``/
        ``text``/``pdf`` (a Confluence HTML export page is ``html``, parsed by
        :func:`~ragstrata.ingest.confluence.parse_confluence`, with ``metadata["confluence"]``);
        ``language`` the detected language (see
        :func:`~ragstrata.ingest.language.detect_language`); ``pages`` the page offsets (PDF);
        ``metadata`` holds the front-matter keys plus ``modified`` (mtime, ISO-8601
        UTC) and ``size_bytes``.

    Raises:
        UnsupportedFormatError: the extension is not in :data:`FORMATS`.
        SourceNotFoundError: the file does not exist or cannot be read.
        FileTooLargeError: the file is larger than ``max_file_bytes``.
        DecodeError: the file is binary or in no detectable encoding.
        CorruptFileError, EncryptedDocumentError, NoTextLayerError: PDF-specific failures.
        EmptyDocumentError: the file holds no text, or parsing yields no blocks.
    """
    resolved = path.resolve()
    source = resolved.as_posix()
    fmt = _format_of(path)
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise UnsupportedFormatError(
            source, f"unsupported extension {path.suffix!r}; supported extensions: {known}"
        )
    try:
        stat = resolved.stat()
    except OSError as exc:
        raise SourceNotFoundError(source, f"cannot stat the file: {exc.strerror}") from exc
    if not resolved.is_file():
        raise SourceNotFoundError(source, "not a regular file")
    if stat.st_size > max_file_bytes:
        raise FileTooLargeError(
            source,
            f"{stat.st_size} bytes exceeds max_file_bytes={max_file_bytes}; "
            "raise ingest.max_file_bytes or split the file",
        )
    try:
        data = resolved.read_bytes()
    except OSError as exc:
        raise SourceNotFoundError(source, f"cannot read the file: {exc.strerror}") from exc

    parsed = _parse_bytes(data, fmt=fmt, source=source, stem=path.stem)
    if not parsed.blocks:
        raise EmptyDocumentError(source, f"the {fmt} file holds no text blocks")

    metadata: dict[str, Any] = dict(parsed.metadata)
    metadata["modified"] = datetime.fromtimestamp(stat.st_mtime, tz=UTC).isoformat()
    metadata["size_bytes"] = stat.st_size
    return Document(
        doc_id=_doc_id(source),
        source=source,
        title=parsed.title or path.stem,
        text=parsed.text,
        blocks=parsed.blocks,
        content_hash=hashlib.sha256(parsed.text.encode("utf-8")).hexdigest(),
        format=fmt,
        metadata=metadata,
        language=detect_language(parsed.text),
        pages=parsed.pages,
        file_hash=hashlib.sha256(data).hexdigest(),
    )


def document_from_text(text: str, *, fmt: str, doc_id: str, source: str, stem: str) -> Document:
    """Parse text that does not come from a file (an evaluation corpus) as :func:`load_document`
    parses a file's decoded bytes.

    Args:
        text: the document; normalized here (:func:`~ragstrata.ingest.text.normalize_text`),
            as decoding a file would.
        fmt: ``markdown``, ``html`` or ``text`` (PDF needs the bytes: use ``load_document``).
        doc_id: the document id, kept as given.
        source: the document's source label, kept as given.
        stem: the fallback title (``load_document`` passes the file stem).

    Returns:
        A ``Document`` built as :func:`load_document` builds one, except that ``metadata`` holds
        the front matter only (no file, so no ``modified``/``size_bytes``) and ``file_hash`` is
        empty.

    Raises:
        UnsupportedFormatError: ``fmt`` is not ``markdown``, ``html`` or ``text``.
        EmptyDocumentError: parsing yields no blocks.
    """
    if fmt not in ("markdown", "html", "text"):
        raise UnsupportedFormatError(
            source, f"format {fmt!r} cannot be parsed from text; use markdown, html or text"
        )
    normalized = normalize_text(text)
    parsed = _parse(normalized, fmt=fmt, stem=stem)
    if not parsed.blocks:
        raise EmptyDocumentError(source, f"the {fmt} text holds no text blocks")
    return Document(
        doc_id=doc_id,
        source=source,
        title=parsed.title or stem,
        text=parsed.text,
        blocks=parsed.blocks,
        content_hash=hashlib.sha256(parsed.text.encode("utf-8")).hexdigest(),
        format=fmt,
        metadata=dict(parsed.metadata),
        language=detect_language(parsed.text),
    )


def _walk(root: Path, errors: list[IngestError]) -> list[Path]:
    """Supported files under ``root``, sorted; hidden entries and symlinked dirs skipped, and
    in a Confluence HTML export its ``index.html`` and asset folders."""
    found: list[Path] = []

    def on_error(exc: OSError) -> None:
        errors.append(SourceNotFoundError(exc.filename or root, f"cannot list: {exc.strerror}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        skipped: frozenset[str] = frozenset()
        if "index.html" in filenames and is_export_root(Path(dirpath)):
            skipped = EXPORT_ASSET_DIRS | {"index.html"}
            logger.debug("%s: Confluence export; index.html and asset folders skipped", dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in skipped)
        for name in filenames:
            if name.startswith(".") or name in skipped:
                continue
            candidate = Path(dirpath, name)
            if _format_of(candidate) is not None and candidate.is_file():
                found.append(candidate)
    return sorted(found)


def discover(paths: Sequence[Path]) -> tuple[list[Path], list[IngestError]]:
    """Expand files and directories into the list of files to load.

    Directories are walked recursively (symlinked directories are not followed, so loops
    cannot hang; hidden files and directories are skipped; files with unsupported extensions
    are skipped silently). In a directory that is the top of a Confluence HTML export (its
    ``index.html`` is a Confluence space index, see
    :func:`~ragstrata.ingest.confluence.is_export_root`), ``index.html`` (the page tree) and
    the ``attachments/``, ``images/`` and ``styles/`` folders are skipped, so only the pages
    are loaded. A file given explicitly must have a supported extension (and is loaded even
    when it is a Confluence index or attachment).

    Returns:
        ``(files, errors)``: unique files in a deterministic order (arguments in the given
        order, each directory's files sorted), and one error per bad argument
        (``SourceNotFoundError`` for a missing path, ``UnsupportedFormatError`` for an explicit
        file of unknown type). Nothing is raised.
    """
    files: list[Path] = []
    errors: list[IngestError] = []
    seen: set[str] = set()

    def add(candidate: Path) -> None:
        key = candidate.resolve().as_posix()
        if key not in seen:
            seen.add(key)
            files.append(candidate)

    for path in paths:
        if path.is_dir():
            for candidate in _walk(path, errors):
                add(candidate)
        elif path.is_file():
            if _format_of(path) is None:
                known = ", ".join(sorted(FORMATS))
                errors.append(
                    UnsupportedFormatError(
                        path, f"unsupported extension {path.suffix!r}; supported: {known}"
                    )
                )
            else:
                add(path)
        elif path.exists() or path.is_symlink():
            errors.append(SourceNotFoundError(path, "not a regular file or directory"))
        else:
            errors.append(SourceNotFoundError(path, "no such file or directory"))
    return files, errors
