"""Load files into :class:`~ragstrata.types.Document` and discover the files to load.

``load_document`` is deterministic: the same file at the same path gives the same
``doc_id`` (hash of the resolved path) and ``content_hash`` (hash of the normalized text),
so re-ingesting is idempotent.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat as stat_mode
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragstrata.config import FollowSymlinks
from ragstrata.errors import (
    CorruptFileError,
    EmptyDocumentError,
    FileTooLargeError,
    HiddenFileError,
    IngestError,
    NotRegularFileError,
    OutsideRootsError,
    SourceNotFoundError,
    UnsupportedFormatError,
)
from ragstrata.ingest.confluence import (
    EXPORT_ASSET_DIRS,
    is_export_root,
    looks_like_confluence,
    parse_confluence,
)
from ragstrata.ingest.text import ParsedText, decode_text, normalize_text, parse_text
from ragstrata.paths import path_text
from ragstrata.text.language import detect_language
from ragstrata.types import Document

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "FORMATS",
    "PARSER_VERSION",
    "discover",
    "doc_id_for",
    "document_from_text",
    "load_document",
    "source_for",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 20_000_000

PARSER_VERSION = "12"
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


def _archive_hint(path: Path) -> str:
    """A hint for a file named on purpose that ingest cannot read but whose contents it can:
    an archive (a Confluence space export is a .zip of HTML pages), or a Confluence XML
    export (``entities.xml``: the HTML export is the one ingest reads)."""
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith((".zip", ".tar", ".tar.gz", ".tgz", ".7z", ".rar")):
        return "; unpack the archive and ingest the folder (a Confluence HTML export: its folder)"
    if path.suffix.lower() == ".xml":
        return (
            "; of a Confluence space, export it as HTML (Space settings > Export space > HTML) "
            "and ingest that folder"
        )
    return ""


def _format_of(path: Path) -> str | None:
    return FORMATS.get(path.suffix.lower())


def doc_id_for(path: Path) -> str:
    """Document id: the first 16 hex digits of SHA-256 of the resolved absolute POSIX path's
    bytes (``os.fsencode``: a file name that is not UTF-8 has an id too)."""
    return _doc_id(path.resolve().as_posix())


def source_for(path: Path) -> str:
    """A document's ``source``: the resolved absolute POSIX path as text (see
    :func:`~ragstrata.paths.path_text`: bytes that are not UTF-8 appear as ``\\xNN``)."""
    return path_text(path.resolve().as_posix())


def _doc_id(source: str) -> str:
    return hashlib.sha256(os.fsencode(source)).hexdigest()[:16]


def _kind(mode: int) -> str:
    """What a non-regular file is, in words (for the reason of RS209)."""
    if stat_mode.S_ISDIR(mode):
        return "a directory"
    if stat_mode.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat_mode.S_ISSOCK(mode):
        return "a socket"
    if stat_mode.S_ISCHR(mode) or stat_mode.S_ISBLK(mode):
        return "a device"
    return "a special file"


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF file (rename it to .pdf)"),
    (b"PK\x03\x04", "a ZIP archive (such as .docx, .xlsx, .odt or .epub)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "an executable (ELF)"),
)
"""Leading bytes of formats that are no text, and what the file is: a text-format file that
starts with one is refused with RS206 (an uncompressed PDF named ``.md`` was indexed as PDF
syntax)."""


def _is_binary_format(data: bytes, magic: bytes) -> bool:
    """Whether ``data``, which starts with ``magic``, is that format and not text that happens
    to begin with the same letters ("%PDF-1.7 is the version ..." in a note, "GIF89a ..."): a
    PDF has an object or end-of-file marker, the other formats non-text bytes early on."""
    if magic == b"%PDF-":
        return b" obj" in data[:65536] or b"%%EOF" in data[-2048:] or b"\x00" in data[:1024]
    head = data[len(magic) : 512]
    return len(head) < 8 or any(byte < 9 or 13 < byte < 32 for byte in head)


def _parse_bytes(data: bytes, *, fmt: str, source: str, stem: str) -> ParsedText:
    if fmt == "pdf":
        from ragstrata.ingest.pdf import parse_pdf

        return parse_pdf(data, source=source, fallback_title=stem)
    for magic, what in _MAGIC:
        if data.startswith(magic) and _is_binary_format(data, magic):
            raise CorruptFileError(source, f"is {what}, not {fmt} text (it starts with {magic!r})")
    decoded = decode_text(data, path=source)
    parsed = _parse(decoded.text, fmt=fmt, stem=stem)
    if not decoded.warnings and not parsed.warnings:
        return parsed
    # the parsers do not know the path: their warnings name it from here
    named = tuple(replace(w, path=w.path or source) for w in parsed.warnings)
    return replace(parsed, warnings=(*decoded.warnings, *named))


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
        :func:`~ragstrata.text.language.detect_language`); ``pages`` the page offsets (PDF);
        ``metadata`` holds the front-matter keys plus ``modified`` (mtime, ISO-8601
        UTC) and ``size_bytes``; ``warnings`` what decoding and parsing found worth reporting
        (see :func:`~ragstrata.ingest.text.decode_text`; HTML nested too deep), each naming
        ``source``.

    Raises:
        UnsupportedFormatError: the extension is not in :data:`FORMATS`.
        SourceNotFoundError: the file does not exist or cannot be read.
        NotRegularFileError: the path is a FIFO, socket, device or directory (never opened,
            never read: a FIFO cannot make ingest hang).
        FileTooLargeError: the file is larger than ``max_file_bytes``.
        DecodeError: the file is binary or in no detectable encoding.
        CorruptFileError, EncryptedDocumentError, NoTextLayerError: PDF-specific failures.
        EmptyDocumentError: the file holds no text, or parsing yields no blocks.
    """
    resolved = path.resolve()
    source = source_for(resolved)
    stem = path_text(path.stem)
    fmt = _format_of(path)
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise UnsupportedFormatError(
            source,
            f"unsupported extension {path.suffix!r}; supported extensions: {known}"
            + _archive_hint(path),
        )
    try:
        stat = resolved.stat()
    except OSError as exc:
        raise SourceNotFoundError(source, f"cannot stat the file: {exc.strerror}") from exc
    if not stat_mode.S_ISREG(stat.st_mode):
        raise NotRegularFileError(source, f"{_kind(stat.st_mode)}, not a regular file; not read")
    if stat.st_size > max_file_bytes:
        raise FileTooLargeError(
            source,
            f"{stat.st_size} bytes exceeds max_file_bytes={max_file_bytes}; "
            "raise ingest.max_file_bytes or split the file",
        )
    data = _read_regular(resolved, source)

    parsed = _parse_bytes(data, fmt=fmt, source=source, stem=stem)
    if not parsed.blocks:
        raise EmptyDocumentError(source, f"the {fmt} file holds no text blocks")
    check_has_words(parsed.text, fmt=fmt, source=source)

    metadata: dict[str, Any] = dict(parsed.metadata)
    metadata["modified"] = datetime.fromtimestamp(stat.st_mtime, tz=UTC).isoformat()
    metadata["size_bytes"] = stat.st_size
    return Document(
        doc_id=_doc_id(resolved.as_posix()),
        source=source,
        title=parsed.title or stem,
        text=parsed.text,
        blocks=parsed.blocks,
        content_hash=hashlib.sha256(parsed.text.encode("utf-8")).hexdigest(),
        format=fmt,
        metadata=metadata,
        language=detect_language(parsed.text),
        pages=parsed.pages,
        file_hash=hashlib.sha256(data).hexdigest(),
        warnings=parsed.warnings,
    )


UNBROKEN_RUN_CHARS = 1000
"""A run of this many characters without white space is no word (base64, a hash list, a dump)."""
MAX_UNBROKEN_SHARE = 0.9
"""A document of at least :data:`MIN_CHECKED_CHARS` characters with more than this share of them
in unbroken runs is refused (:func:`check_has_words`)."""
MIN_CHECKED_CHARS = 20_000
_UNBROKEN = re.compile(rf"\S{{{UNBROKEN_RUN_CHARS},}}")


def warm_up() -> None:
    """Load now what a process's first parse would load on the way (the Markdown and HTML
    parsers and py3langid's model: about a second together, measured 0.96 s for a first 60-byte
    Markdown file and 0.001 s for the second), so that a parser worker's time limit
    (``ingest.parse_timeout_s``) counts the parse of its first file, not the loading. The PDF
    parser is left to its first PDF: importing it and pypdfium2 takes about 0.1 s."""
    for fmt, text in (
        ("markdown", "# Prueba\n\nUna frase de prueba para cargar los analizadores.\n"),
        ("html", "<h1>Test</h1><p>A sentence of test text that loads the parsers.</p>"),
    ):
        document_from_text(text, fmt=fmt, doc_id="warm-up", source="warm-up", stem="warm-up")


def check_has_words(text: str, *, fmt: str, source: str) -> None:
    """Raise EmptyDocumentError (RS203) when ``text`` is at least :data:`MIN_CHECKED_CHARS`
    characters long and more than :data:`MAX_UNBROKEN_SHARE` of them are in runs of
    :data:`UNBROKEN_RUN_CHARS` or more without white space: such a file has nothing a question
    can match, and its runs cost the embedder real time (a 5 MB run is about 650,000 e5
    tokens, tens of minutes on two cores; a new user's 19 MB one-line file became 7,561
    chunks). Documents with some long runs (an inline base64 image beside prose) pass."""
    if len(text) < MIN_CHECKED_CHARS:
        return
    unbroken = sum(m.end() - m.start() for m in _UNBROKEN.finditer(text))
    share = unbroken / len(text)
    if share > MAX_UNBROKEN_SHARE:
        raise EmptyDocumentError(
            source,
            f"the {fmt} file holds no words: {share:.0%} of its {len(text):,} characters are in "
            f"runs of {UNBROKEN_RUN_CHARS:,} or more without a space or line break (base64, a "
            "hash list, a binary dump?); not indexed",
        )


def _read_regular(path: Path, source: str) -> bytes:
    """The bytes of ``path``, opened without blocking and checked to be a regular file once
    open (a file swapped for a FIFO after the ``stat`` is refused, not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SourceNotFoundError(source, f"cannot read the file: {exc.strerror}") from exc
    with open(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat_mode.S_ISREG(mode):
            raise NotRegularFileError(source, f"{_kind(mode)}, not a regular file; not read")
        try:
            return fh.read()
        except OSError as exc:
            raise SourceNotFoundError(source, f"cannot read the file: {exc.strerror}") from exc


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


def _target_mode(path: Path, target: Path, errors: list[IngestError]) -> int | None:
    """``st_mode`` of ``target`` (the resolved ``path``), or ``None`` with a
    SourceNotFoundError (RS205) for ``path`` in ``errors`` when it cannot be stat'ed."""
    try:
        return target.stat().st_mode
    except OSError as exc:
        errors.append(SourceNotFoundError(path, f"cannot stat: {exc.strerror}"))
        return None


def _resolve_link(path: Path) -> Path | IngestError:
    """The resolved target of ``path``, or the error that reports it: RS209 for a link that
    dangles or loops, RS205 for a path that is missing or cannot be resolved."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:  # Python 3.11-3.12: a loop of links
        return NotRegularFileError(path, "symbolic link loop")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return NotRegularFileError(path, "symbolic link loop")
        if exc.errno != errno.ENOENT:
            return SourceNotFoundError(path, f"cannot resolve the path: {exc.strerror}")
        if not path.is_symlink():
            return SourceNotFoundError(path, "no such file or directory")
        try:
            target = path_text(os.readlink(path))
        except OSError:
            target = "?"
        return NotRegularFileError(
            path, f"dangling symbolic link (its target {target} does not exist)"
        )


def _link_refusal(target: Path, roots: Sequence[Path], follow: FollowSymlinks) -> str | None:
    """Why a link to ``target`` is not followed, or ``None`` when it is."""
    if follow == "never":
        return (
            f'symbolic link to {path_text(target)} not followed (ingest.follow_symlinks = "never")'
        )
    if follow == "inside" and not any(target.is_relative_to(root) for root in roots):
        return (
            f"symbolic link leads outside the paths given to ingest, to {path_text(target)}; "
            'set ingest.follow_symlinks = "all" to follow it'
        )
    return None


def _walk(
    top: Path,
    *,
    roots: Sequence[Path],
    follow: FollowSymlinks,
    errors: list[IngestError],
) -> list[Path]:
    """Supported regular files under ``top``, sorted. Hidden folders, files of unsupported
    types and, in a Confluence HTML export, its ``index.html`` and asset folders are skipped
    silently; hidden files of a supported type, special files and links that are broken or
    not followed (see :func:`discover`) are skipped and appended to ``errors``. No file is
    opened, and each folder is listed once (links cannot make the walk loop)."""
    found: list[Path] = []
    visited: set[tuple[int, int]] = set()
    # (folder as walked, its real path, the real paths of the folders it was reached through)
    stack: list[tuple[Path, Path, tuple[Path, ...]]] = [(top, top.resolve(), ())]
    while stack:
        folder, real, above = stack.pop()
        try:
            st = os.stat(folder)
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            errors.append(SourceNotFoundError(folder, f"cannot list: {exc.strerror}"))
            continue
        if (st.st_dev, st.st_ino) in visited:
            continue  # reached again through a link: its files are already listed
        visited.add((st.st_dev, st.st_ino))
        chain = (*above, real)
        skipped: frozenset[str] = frozenset()
        if any(e.name == "index.html" for e in entries) and is_export_root(folder):
            skipped = EXPORT_ASSET_DIRS | {"index.html"}
            logger.debug("%s: Confluence export; index.html and asset folders skipped", folder)
        for entry in entries:
            path = Path(entry.path)
            supported = _format_of(path) is not None
            if entry.name in skipped:
                continue
            if entry.name.startswith("."):
                # an Emacs lock file (".#notes.md", a dangling link while a buffer is modified)
                # is the editor's, not a document someone hid (review 45: watch reported it
                # failed and exited 3)
                lock = entry.name.startswith(".#") and entry.is_symlink()
                if supported and not lock and not entry.is_dir(follow_symlinks=False):
                    errors.append(
                        HiddenFileError(
                            path,
                            "hidden file (its name starts with '.'); give it explicitly "
                            "to ingest it",
                        )
                    )
                continue
            if not entry.is_symlink():
                if entry.is_dir(follow_symlinks=False):
                    stack.append((path, real / entry.name, chain))
                elif not supported:
                    continue
                elif entry.is_file(follow_symlinks=False):
                    found.append(path)
                else:
                    kind = _kind(entry.stat(follow_symlinks=False).st_mode)
                    errors.append(
                        NotRegularFileError(path, f"{kind}, not a regular file; not opened")
                    )
                continue
            target = _resolve_link(path)
            if not isinstance(target, Path):
                if supported:
                    errors.append(target)
                continue
            mode = _target_mode(path, target, errors)
            if mode is None:
                continue
            if stat_mode.S_ISDIR(mode):
                if target in chain or real.is_relative_to(target):
                    errors.append(
                        NotRegularFileError(
                            path,
                            f"symbolic link loop: it points to {path_text(target)}, a folder "
                            "that contains it",
                        )
                    )
                    continue
            elif not supported:
                continue
            elif not stat_mode.S_ISREG(mode):
                errors.append(
                    NotRegularFileError(
                        path, f"symbolic link to {_kind(mode)} ({path_text(target)}); not opened"
                    )
                )
                continue
            refusal = _link_refusal(target, roots, follow)
            if refusal is not None:
                errors.append(OutsideRootsError(path, refusal))
            elif stat_mode.S_ISDIR(mode):
                stack.append((path, target, chain))
            else:
                found.append(path)
    return sorted(found)


def discover(
    paths: Sequence[Path], *, follow_symlinks: FollowSymlinks = "inside"
) -> tuple[list[Path], list[IngestError]]:
    """Expand files and directories into the list of files to load, without opening any.

    Each path given is a root (a file given directly is its own root); symbolic links among
    the paths given are resolved, as the caller named them. Directories are walked
    recursively: hidden folders and files with unsupported extensions are skipped silently.
    Only regular files are returned. A symbolic link found in a folder is followed (a file is
    returned, a folder walked) when ``follow_symlinks`` allows it: ``"inside"`` (default)
    when its resolved target lies under one of the roots, ``"never"`` never, ``"all"``
    always. Skipped and reported instead: a link not followed (RS210), a link that dangles or
    loops and a FIFO, socket or device (RS209), a hidden file of a supported type (RS211);
    a broken link or special file whose name has an unsupported extension is skipped
    silently, like any unsupported file. In a directory that is the top of a Confluence HTML
    export (its ``index.html`` is a Confluence space index, see
    :func:`~ragstrata.ingest.confluence.is_export_root`), ``index.html`` (the page tree) and
    the ``attachments/``, ``images/`` and ``styles/`` folders are skipped, so only the pages
    are loaded. A file given explicitly must have a supported extension (and is loaded even
    when it is hidden, a Confluence index or an attachment).

    Returns:
        ``(files, errors)``: unique files in a deterministic order (arguments in the given
        order, each directory's files sorted), and one error per path skipped and reported
        (``SourceNotFoundError`` for a missing path, ``UnsupportedFormatError`` for an explicit
        file of unknown type, and the above). Nothing is raised. Paths are absolute (a
        relative one is taken from the working directory, links not resolved), so a skipped
        file is reported in the same form as the sources of the documents loaded.
    """
    paths = [Path(os.path.abspath(path)) for path in paths]
    files: list[Path] = []
    errors: list[IngestError] = []
    seen: set[str] = set()

    def add(candidate: Path) -> None:
        key = candidate.resolve().as_posix()
        if key not in seen:
            seen.add(key)
            files.append(candidate)

    targets = [_resolve_link(path) for path in paths]
    roots = [target for target in targets if isinstance(target, Path)]
    for path, target in zip(paths, targets, strict=True):
        if not isinstance(target, Path):
            errors.append(target)
            continue
        mode = _target_mode(path, target, errors)
        if mode is None:
            continue
        if stat_mode.S_ISDIR(mode):
            for candidate in _walk(path, roots=roots, follow=follow_symlinks, errors=errors):
                add(candidate)
        elif not stat_mode.S_ISREG(mode):
            errors.append(
                NotRegularFileError(path, f"{_kind(mode)}, not a regular file; not opened")
            )
        elif _format_of(path) is None:
            known = ", ".join(sorted(FORMATS))
            errors.append(
                UnsupportedFormatError(
                    path,
                    f"unsupported extension {path.suffix!r}; supported: {known}"
                    + _archive_hint(path),
                )
            )
        else:
            add(path)
    unique = {(e.code, e.path): e for e in errors}  # a folder under another root is walked twice
    return files, list(unique.values())
