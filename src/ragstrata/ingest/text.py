"""Bytes to normalized text, and the plain-text parser.

Every loader goes through :func:`decode_bytes`, so ``Document.text`` is always *normalized*:
no byte-order mark, LF line ends only (CRLF and lone CR become LF), no control characters
other than ``\\n`` and ``\\t``, Unicode NFC. Block offsets are ``str`` indices into that text.
"""

from __future__ import annotations

import codecs
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ragstrata.errors import DecodeError, EmptyDocumentError
from ragstrata.types import Block

__all__ = ["ParsedText", "decode_bytes", "normalize_text", "parse_text", "split_paragraphs"]

logger = logging.getLogger(__name__)

# C0 controls except TAB (\x09) and LF (\x0a); CR is turned into LF before this runs. DEL, C1.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Controls that betray binary content once decoded (FF and VT do occur in old text files).
_BINARY_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_MAX_CONTROL_RATIO = 0.05
"""Above this share of control characters (per decoded character) the file is binary."""

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: FF FE 00 00 starts with FF FE
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Non-ASCII characters that Western (Spanish, French, German...) text is made of.
_WESTERN_EXTRA = set("¡¿«»°ºª€…–—‘’‚“”„•·§©®±×÷¢£¥¬¨´¸µ¶¹²³¼½¾ ")
_PARAGRAPH_RE = re.compile(r"\S(?:.*\S)?(?:\n[ \t]*\S(?:.*\S)?)*")
"""A run of non-blank lines, trimmed: the paragraphs of plain text."""


@dataclass(frozen=True, slots=True)
class ParsedText:
    """What a format parser returns: the document text and its structure.

    ``blocks`` are sorted by ``start``, do not overlap, and ``text[b.start:b.end]`` starts and
    ends with non-whitespace for every block. ``metadata`` holds front-matter keys (markdown)
    or is empty. ``title`` is never empty when the caller passed a non-empty fallback title.
    ``pages`` is empty for formats without pages; for paged formats (PDF) ``pages[i]`` is the
    offset in ``text`` where page ``i + 1`` starts (ascending, ``pages[0] == 0``).
    """

    text: str
    blocks: tuple[Block, ...]
    title: str
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: tuple[int, ...] = ()


def normalize_text(s: str) -> str:
    """Normalize decoded text: strip a leading BOM, CRLF/CR -> LF, drop control characters
    (all C0/C1 controls and DEL except ``\\n`` and ``\\t``), then Unicode NFC.

    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    s = s.removeprefix("\ufeff")
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    s = _CONTROL_RE.sub("", s)
    return unicodedata.normalize("NFC", s)


def _looks_western(text: str) -> bool:
    """Whether ``text`` (decoded as cp1252) reads like Latin-script prose: every non-ASCII
    character is a Latin letter or common Western punctuation, and they are a minority."""
    letters = 0
    non_ascii = 0
    for ch in text:
        if ch.isascii():
            letters += ch.isalpha()
            continue
        non_ascii += 1
        if ch in _WESTERN_EXTRA:
            continue
        if not ch.isalpha() or "LATIN" not in unicodedata.name(ch, ""):
            return False
    return non_ascii == 0 or non_ascii <= 0.3 * max(letters, 1)


def _decode_detected(data: bytes, *, path: str) -> str:
    """Decode bytes that are not UTF-8: cp1252 when the result reads as Western text (the
    detector mislabels short Spanish Latin-1 text as cp1006/cp775), else charset-normalizer."""
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:
        western = None
    if western is not None and _looks_western(western):
        return western

    import charset_normalizer  # local import: only needed for non-UTF-8 files

    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise DecodeError(path, "not valid UTF-8 and no text encoding could be detected")
    logger.debug("%s: detected encoding %s", path, best.encoding)
    return str(best)


def _mostly_utf8(data: bytes, *, path: str) -> str | None:
    """UTF-8 text with a few corrupt bytes (each becomes U+FFFD), or ``None``.

    Accepted when the bytes hold valid multi-byte UTF-8 sequences (which Latin-1/cp1252 text
    practically never does) and at most 1 in 1,000 bytes (at least 1) is invalid: one stray byte
    must not send a UTF-8 file to a guessed legacy encoding and garble all of it.
    """
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
    valid_multibyte = any(ord(ch) > 0x7F and ch != "\ufffd" for ch in text)
    if valid_multibyte and bad <= max(1, len(data) // 1000):
        logger.warning("%s: %d invalid UTF-8 byte sequence(s) replaced by U+FFFD", path, bad)
        return text
    return None


def decode_bytes(data: bytes, *, path: str) -> str:
    """Decode a file's bytes to normalized text (see :func:`normalize_text`).

    A UTF-8/16/32 byte-order mark decides the encoding and is stripped; otherwise UTF-8 is
    tried strictly, then cp1252 (Western text, Latin-1 included) and charset-normalizer.

    Raises:
        DecodeError: the bytes look binary (NUL bytes without a UTF-16/32 BOM, more than 5 %
            control characters) or fit no encoding.
        EmptyDocumentError: nothing but whitespace after decoding.
    """
    text: str | None = None
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise DecodeError(path, f"has a {encoding} byte-order mark but {exc}") from exc
            break
    if text is None:
        if b"\x00" in data:
            raise DecodeError(path, "contains NUL bytes; it looks like a binary file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = _mostly_utf8(data, path=path) or _decode_detected(data, path=path)
    if text and len(_BINARY_CONTROL_RE.findall(text)) > _MAX_CONTROL_RATIO * len(text):
        raise DecodeError(path, "too many control characters; it looks like a binary file")
    text = normalize_text(text)
    if not text.strip():
        raise EmptyDocumentError(path, "the file is empty or holds only whitespace")
    return text


def split_paragraphs(text: str, start: int = 0, end: int | None = None) -> list[Block]:
    """Paragraph blocks for ``text[start:end]``: runs of non-blank lines, trimmed.

    Offsets are absolute indices into ``text``; blocks are sorted and never overlap.
    """
    stop = len(text) if end is None else end
    return [
        Block(kind="paragraph", start=m.start(), end=m.end())
        for m in _PARAGRAPH_RE.finditer(text, start, stop)
    ]


def parse_text(text: str, *, fallback_title: str) -> ParsedText:
    """Parse plain text: one ``paragraph`` block per run of non-blank lines.

    ``text`` should already be normalized; the title is ``fallback_title`` (the file stem).
    """
    return ParsedText(text=text, blocks=tuple(split_paragraphs(text)), title=fallback_title)
