"""Upload hygiene: safe file names and accepted content types. Pure functions.

A client's file name is only a hint: :func:`safe_filename` keeps its last path component,
normalizes it and replaces anything outside letters, digits, ``.``, ``-``, ``_`` and space, so
the result can never leave the directory it is joined to (no ``..``, no separators, no hidden
files, no device names). The extension decides the format, as for ``ragstrata ingest``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import PurePosixPath

from ragstrata.ingest.loader import FORMATS
from ragstrata.service.errors import UnsupportedMediaTypeError

MAX_NAME_CHARS = 120
"""Characters a stored upload name keeps at most (its extension included)."""

MAX_NAME_BYTES = 200
"""UTF-8 bytes a stored upload name keeps at most: Linux file names hold 255 bytes, and 120
CJK characters are 360 (review 33: such an upload was answered 500 and its other files lost)."""

_NAME_HASH_CHARS = 8

_ACCEPTED_TYPES: dict[str, frozenset[str]] = {
    "markdown": frozenset({"text/markdown", "text/x-markdown", "text/mdx", "text/plain"}),
    "html": frozenset({"text/html", "application/xhtml+xml"}),
    "text": frozenset({"text/plain", "text/x-rst", "text/prs.fallenstein.rst"}),
    "pdf": frozenset({"application/pdf", "application/x-pdf"}),
}
"""Declared content types accepted per format, besides ``application/octet-stream`` and none
(browsers send ``application/octet-stream`` or nothing for extensions they do not know)."""

_GENERIC = frozenset({"", "application/octet-stream", "binary/octet-stream"})
_UNSAFE = re.compile(r"[^\w.\- ]+")


def safe_filename(name: str) -> str:
    """A file name that is safe to join to an upload directory.

    ``"../../etc/passwd.md"`` -> ``"passwd.md"``; ``"C:\\\\x\\\\a b.md"`` -> ``"a b.md"``;
    ``".env"`` -> ``"env"``; ``"...md"`` -> ``"upload.md"``; ``""`` -> ``"upload"``. The
    result is NFC, at most :data:`MAX_NAME_CHARS` characters and :data:`MAX_NAME_BYTES` UTF-8
    bytes (a longer name is cut, its extension kept, a hash of the whole name added), never
    starts with ``.`` or ``-``, and contains no path separator or control character.
    """
    # the HTML form encoding escapes these three in a multipart file name (curl and browsers)
    name = re.sub(r"%0[aAdD]", " ", name.replace("%22", '"'))
    last = PurePosixPath(name.replace("\\", "/")).name
    cleaned = unicodedata.normalize("NFC", last)
    cleaned = "".join(ch for ch in cleaned if unicodedata.category(ch)[0] != "C")
    # the extension is cleaned apart: "...md" kept only "md" (trial 24), refused as a file
    # without extension under a name the user never sent
    base = cleaned.rstrip(" .-_")
    suffix = PurePosixPath(base).suffix if base else ""
    stem = _UNSAFE.sub("_", base[: len(base) - len(suffix)]).lstrip(" .-_").rstrip(" .")
    stem = re.sub(r"\.{2,}", ".", stem)
    cleaned = ((stem or "upload") + _UNSAFE.sub("_", suffix)).rstrip(" .-_") or "upload"
    if len(cleaned) > MAX_NAME_CHARS or len(cleaned.encode("utf-8")) > MAX_NAME_BYTES:
        cleaned = _shortened(cleaned)
    return cleaned


def _shortened(name: str) -> str:
    """``name`` cut to :data:`MAX_NAME_CHARS` characters and :data:`MAX_NAME_BYTES` bytes, its
    extension kept and ``-`` plus 8 hex digits of its SHA-256 before it: two long names that
    differ only past the cut stay two documents (review 33: the second upload replaced the
    first, "…-2023.md" and "…-2024.md" cut to one name)."""
    stem, dot, ext = name.rpartition(".")
    if not (dot and stem and 0 < len(ext) <= 10):
        stem, ext = name, ""
    tail = f"-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:_NAME_HASH_CHARS]}"
    tail += f".{ext}" if ext else ""
    chars = MAX_NAME_CHARS - len(tail)
    room = MAX_NAME_BYTES - len(tail.encode("utf-8"))
    kept = stem[:chars]
    while len(kept.encode("utf-8")) > room:  # cut on a character boundary
        kept = kept[:-1]
    return kept.rstrip(" .-_") + tail


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lower case, without its parameters
    (``"Text/Plain; charset=utf-8"`` -> ``"text/plain"``; ``None`` -> ``""``)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def check_file_type(name: str, content_type: str | None) -> str:
    """The format of an uploaded file (``markdown``, ``html``, ``text`` or ``pdf``).

    Raises UnsupportedMediaTypeError when the extension of ``name`` is not one ragstrata parses,
    or the declared ``content_type`` contradicts it (``image/png`` for ``notes.md``).
    """
    suffix = PurePosixPath(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise UnsupportedMediaTypeError(
            f"{name}: unsupported extension {suffix or '(none)'!r}; supported: {known}"
        )
    declared = media_type(content_type)
    if declared not in _GENERIC and declared not in _ACCEPTED_TYPES.get(fmt, frozenset()):
        raise UnsupportedMediaTypeError(
            f"{name}: content type {declared!r} does not match a {fmt} file; send "
            f"{', '.join(sorted(_ACCEPTED_TYPES.get(fmt, frozenset())))} or "
            "application/octet-stream"
        )
    return fmt
