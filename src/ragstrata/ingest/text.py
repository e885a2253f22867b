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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstrata.errors import DecodeError, EmptyDocumentError
from ragstrata.types import Block, IngestWarning

__all__ = [
    "DecodedText",
    "ParsedText",
    "decode_bytes",
    "decode_text",
    "find_mojibake",
    "normalize_text",
    "parse_text",
    "split_paragraphs",
]

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
_WESTERN_EXTRA = set("¡¿«»°ºª€…–—‘’‚“”„•·§©®±×÷¢£¥¬¨´¸µ¶¹²³¼½¾ ™‰†‡‹›ˆ˜")
_USUAL_LEGACY = set("áéíóúüñçàèìòùâêîôûäëïöãõåæøœßÁÉÍÓÚÜÑÇÀÈÌÒÙÂÊÎÔÛÄËÏÖÅÆØŒ") | (
    _WESTERN_EXTRA - set("×÷¦¬¨´¸µ¶¹²³¼½¾¤ˆ˜")
)
"""Non-ASCII characters of ordinary Western-European text read as cp1252; a file read as cp1252
that holds others (``ÿ``, ``þ``, ``Ã``, ``Â``: what stray bytes in an ASCII file become) gets a
``legacy_encoding`` warning."""
_MAX_REPLACED_RATIO = 0.05
"""Above this share of replaced (undecodable) characters a mostly-UTF-8 reading is given up for
whole-file encoding detection (which may reject the file with RS202), unless more lines are
clean UTF-8 with non-ASCII characters than lines hold bad bytes (whole-file detection would
garble every clean line: "Título" read as cp1250 is "TĂ­tulo")."""
_MAX_REPLACED_RATIO_CLEAN = 0.25
"""Above this share of replaced characters whole-file detection decides, clean lines or not."""

# What the bytes 0x80-0xBF (UTF-8 continuation bytes) become when read as cp1252.
_CP1252_CONTINUATION = bytes(range(0x80, 0xC0)).decode("cp1252", errors="ignore")
_MOJIBAKE_RE = re.compile(
    f"[\u00c2\u00c3][{re.escape(_CP1252_CONTINUATION)}]"  # Ã¡ for á, Â¿ for ¿
    f"|\u00e2[\u20ac\u201e][{re.escape(_CP1252_CONTINUATION)}]"  # â€™ for ’, â„¢ for ™
)
"""UTF-8 sequences of Latin-1 letters and common punctuation read as cp1252/Latin-1 ("mÃ¡s")."""
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
    warnings: tuple[IngestWarning, ...] = ()
    """What the parser found worth reporting (``path`` left empty: the loader fills it in)."""


@dataclass(frozen=True, slots=True)
class DecodedText:
    """What :func:`decode_text` returns: the normalized ``text`` and the ``warnings`` about how
    it was decoded (replaced bytes, mixed encodings, mojibake), each naming the path."""

    text: str
    warnings: tuple[IngestWarning, ...] = ()


def normalize_text(s: str) -> str:
    """Normalize decoded text: CRLF/CR -> LF, drop control characters (all C0/C1 controls and
    DEL except ``\\n`` and ``\\t``) and invisible format characters (:data:`INVISIBLE_RE`,
    a BOM included, wherever it is; a soft hyphen ending a line joins the word it cuts), then
    Unicode NFC.

    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    s = _CONTROL_RE.sub("", s)
    s = _SOFT_BREAK_RE.sub("", s)
    s = INVISIBLE_RE.sub("", s)
    return unicodedata.normalize("NFC", s)


INVISIBLE_RE = re.compile("[\u00ad\u200b\u2060\ufeff]")
"""Invisible format characters that split words for BM25 and the tokenizer: soft hyphen, zero
width space, word joiner, a BOM inside the text (two files pasted together); the HTML parser's
:func:`~ragstrata.ingest.html_clean.collapse` removes the same. Review 32:
"configu\u00adración" was indexed as "configu" and "racion", "contra\u200bseña" as "sena"
("contra" a stop word), "\ufeff# Uso" was no heading. (Zero-width joiners stay: emoji.)"""
_SOFT_BREAK_RE = re.compile("\u00ad[ \t]*\n[ \t]*" + r"(?=[^\W\d_])")
"""A soft hyphen at a line's end: the word goes on on the next line ("configu\u00ad" /
"ración")."""


_WORD_RE = re.compile(r"[^\W\d_]+")
_MAX_FOREIGN_WORDS = 0.2
"""Share of the words with a non-ASCII letter that may be mostly non-ASCII in text read as
cp1252 (:func:`_looks_western`)."""


def _looks_western(text: str) -> bool:
    """Whether ``text`` (decoded as cp1252) reads like Latin-script prose: every non-ASCII
    character is a Latin letter or common Western punctuation (``™``, ``‰`` and ``‹›`` among
    them), and they are a minority of the letters, or at most :data:`_MAX_FOREIGN_WORDS` of the
    words holding a non-ASCII letter are mostly made of them ("Año", "señaló": one in three or
    fewer; Cyrillic or Greek bytes read as cp1252: "Ïðèâåò", all of them). Until review 32
    the first rule was the only one, and a short accent-dense Spanish file ("Año\nNiño\nSeñal")
    failed it: it went to charset-normalizer, which read it as cp1006 ("Aﮦo")."""
    letters = non_ascii_chars = 0
    for ch in text:
        if ch.isascii():
            letters += ch.isalpha()
            continue
        non_ascii_chars += 1
        if ch in _WESTERN_EXTRA:
            continue
        if not ch.isalpha() or "LATIN" not in unicodedata.name(ch, ""):
            return False
    if non_ascii_chars <= 0.3 * max(letters, 1):  # a few (stray bytes in an ASCII file: "ÿþÃ")
        return True
    accented = foreign = 0
    for word in _WORD_RE.findall(text):
        non_ascii = sum(not ch.isascii() for ch in word)
        if non_ascii:
            accented += 1
            foreign += 2 * non_ascii > len(word)
    return foreign <= _MAX_FOREIGN_WORDS * accented


def _decode_detected(data: bytes, *, path: str) -> DecodedText:
    """Decode bytes that are not UTF-8: cp1252 when the result reads as Western text (the
    detector mislabels short Spanish Latin-1 text as cp1006/cp775), else charset-normalizer.
    A ``legacy_encoding`` warning names the encoding read when the cp1252 text holds characters
    outside :data:`_USUAL_LEGACY` (right for a Latin-1 file, wrong for stray bytes in an ASCII
    one: only the user can tell) and always for charset-normalizer's guess; a clean
    Latin-1/cp1252 file gets none."""
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:
        western = None
    if western is not None and _looks_western(western):
        unusual = sorted({ch for ch in western if not ch.isascii() and ch not in _USUAL_LEGACY})
        if not unusual:  # a clean Latin-1/cp1252 file: nothing to say
            return DecodedText(western, ())
        return DecodedText(western, (_legacy_warning(western, "cp1252", unusual, path=path),))

    import charset_normalizer  # local import: only needed for non-UTF-8 files

    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise DecodeError(path, "not valid UTF-8 and no text encoding could be detected")
    logger.debug("%s: detected encoding %s", path, best.encoding)
    text = str(best)
    return DecodedText(text, (_legacy_warning(text, best.encoding, (), path=path),))


def _legacy_warning(
    text: str, encoding: str, unusual: Sequence[str], *, path: str
) -> IngestWarning:
    """The ``legacy_encoding`` warning of a file read as ``encoding`` instead of UTF-8, naming
    up to 5 of its ``unusual`` characters."""
    size = max(len(text), 1)
    non_ascii = sum(not ch.isascii() for ch in text)
    shown = f", among them {' '.join(unusual[:5])}" if unusual else ""
    return IngestWarning(
        path,
        "legacy_encoding",
        f"not UTF-8: read as {encoding} ({non_ascii} non-ASCII character(s){shown}); stray "
        "bytes in a text file read this way too: if they look wrong, re-save the file as UTF-8",
        share=non_ascii / size,
    )


def _has_multibyte(loose: str) -> bool:
    """Whether UTF-8 text decoded with replacement holds a valid multi-byte sequence (which
    Latin-1/cp1252 text practically never does)."""
    return any(ord(ch) > 0x7F and ch != "\ufffd" for ch in loose)


def _replaced(data: bytes, loose: str) -> int:
    """How many U+FFFD a ``replace`` decode of ``data`` (giving ``loose``) introduced."""
    return loose.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")


def _decode_mixed(data: bytes, *, path: str) -> DecodedText | None:
    """Decode bytes that hold valid multi-byte UTF-8 but are not valid UTF-8 as a whole, line
    by line: a line that is valid UTF-8, or holds valid multi-byte sequences beside a few bad
    bytes, is UTF-8 (bad bytes become U+FFFD); a line with no valid multi-byte sequence that
    reads as Western text in cp1252 is cp1252 (a Latin-1 paragraph pasted into a UTF-8 file).

    Returns ``None`` (whole-file detection should decide) when more than
    :data:`_MAX_REPLACED_RATIO` of the characters had to be replaced and no more lines are
    clean multi-byte UTF-8 than hold replaced bytes, or when more than
    :data:`_MAX_REPLACED_RATIO_CLEAN` had to be.
    """
    pieces: list[str] = []
    replaced = legacy_lines = legacy_chars = clean_lines = bad_lines = 0
    for line in data.splitlines(keepends=True):
        try:
            pieces.append(line.decode("utf-8"))
            clean_lines += not line.isascii()
            continue
        except UnicodeDecodeError:
            pass
        loose = line.decode("utf-8", errors="replace")
        if not _has_multibyte(loose):
            try:
                legacy: str | None = line.decode("cp1252")
            except UnicodeDecodeError:
                legacy = None
            if legacy is not None and _looks_western(legacy):
                pieces.append(legacy)
                legacy_lines += 1
                legacy_chars += sum(not ch.isascii() for ch in legacy)
                continue
        pieces.append(loose)
        replaced += _replaced(line, loose)
        bad_lines += 1
    text = "".join(pieces)
    if replaced > _MAX_REPLACED_RATIO_CLEAN * len(text) or (
        replaced > _MAX_REPLACED_RATIO * len(text) and bad_lines >= clean_lines
    ):
        return None
    size = max(len(text), 1)
    warnings: list[IngestWarning] = []
    if replaced:
        warnings.append(
            IngestWarning(
                path,
                "replaced_bytes",
                f"{replaced} undecodable byte sequence(s) replaced by U+FFFD "
                f"({replaced / size:.2%} of characters); re-save the file as UTF-8 to keep them",
                share=replaced / size,
            )
        )
    if legacy_lines:
        warnings.append(
            IngestWarning(
                path,
                "mixed_encoding",
                f"mixed encodings: {legacy_lines} line(s) were not UTF-8 and were read as "
                f"cp1252 ({legacy_chars / size:.2%} of characters); re-save the file as UTF-8",
                share=legacy_chars / size,
            )
        )
    logger.debug("%s: mixed decode, %d replaced, %d cp1252 lines", path, replaced, legacy_lines)
    return DecodedText(text, tuple(warnings))


def find_mojibake(text: str) -> list[tuple[str, str]]:
    """The places where ``text`` holds UTF-8 that was once read as cp1252/Latin-1: each as
    ``(garbled, meant)``, e.g. ``("Ã¡", "á")``, in order of appearance. Only sequences that
    decode back to one character are counted, so "Ã" or "â" alone never are; nor is a quoted
    example of garbling shown next to its meaning (the repaired word within 80 characters, as
    in a document about encodings: '"mÃ¡s" for "más"')."""
    found: list[tuple[str, str]] = []
    for match in _MOJIBAKE_RE.finditer(text):
        garbled = match.group()
        try:
            meant = garbled.encode("cp1252").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        start, end = match.span()
        while start > 0 and text[start - 1].isalpha():
            start -= 1
        while end < len(text) and text[end].isalpha():
            end += 1
        repaired = text[start:end].replace(garbled, meant)
        nearby = text[max(0, start - 80) : start] + text[end : end + 80]
        quoted = start > 0 and text[start - 1] in "\"'`“‘«"
        if quoted and repaired in nearby:
            continue
        found.append((garbled, meant))
    return found


def _mojibake_warning(text: str, *, path: str) -> IngestWarning | None:
    found = find_mojibake(text)
    if not found:
        return None
    share = sum(len(g) for g, _ in found) / max(len(text), 1)
    garbled, meant = found[0]
    return IngestWarning(
        path,
        "mojibake",
        f"text looks garbled by a wrong encoding ({len(found)} place(s) such as "
        f"{garbled!r} for {meant!r}, {share:.2%} of characters): UTF-8 that was once read as "
        "cp1252/Latin-1; fix the source file (the text is indexed as it is)",
        share=share,
    )


def _looks_utf16(data: bytes) -> bool:
    """Whether ``data`` (no byte-order mark) looks like UTF-16 of Latin text: in its first 4 kB,
    most bytes at odd (little-endian) or even (big-endian) positions are NUL and almost none
    at the others."""
    head = data[:4096]
    even, odd = head[0::2], head[1::2]
    if len(odd) < 4:
        return False
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    return (odd_nul > 0.6 and even_nul < 0.05) or (even_nul > 0.6 and odd_nul < 0.05)


def _plausible_utf16(text: str) -> bool:
    """Whether text read as UTF-16 can be text: real UTF-16 files hold line breaks, spaces
    (ideographic ones included) or Latin characters (code points under U+0100); single-byte
    text or binary behind a stray ``FF FE`` pairs its bytes into characters from U+2020 up,
    none of which is whitespace."""
    return not text or any(ch < "\u0100" or ch.isspace() for ch in text)


def decode_bytes(data: bytes, *, path: str) -> str:
    """The normalized text of :func:`decode_text` (its warnings dropped)."""
    return decode_text(data, path=path).text


def decode_text(data: bytes, *, path: str) -> DecodedText:
    """Decode a file's bytes to normalized text (see :func:`normalize_text`), with warnings.

    A UTF-8/16/32 byte-order mark decides the encoding and is stripped; otherwise UTF-8 is
    tried strictly. Bytes with valid multi-byte UTF-8 that are not valid UTF-8 as a whole are
    decoded line by line (:func:`_decode_mixed`): a few bad bytes become U+FFFD
    (``replaced_bytes`` warning), Latin-1/cp1252 lines are read as cp1252 (``mixed_encoding``).
    Bytes without any (or with too many bad bytes: over 5 % of characters unless clean
    multi-byte UTF-8 lines outnumber the bad ones, over 25 % in any case) are decoded as a
    whole: cp1252 (Western text, Latin-1 included; a ``legacy_encoding`` warning when it holds
    characters outside :data:`_USUAL_LEGACY`, as stray bytes give), else charset-normalizer
    (always a ``legacy_encoding`` warning, naming the encoding guessed). Any decoded text
    is checked for mojibake (:func:`find_mojibake`, ``mojibake`` warning; the text is kept).

    Raises:
        DecodeError: the bytes look binary (NUL bytes without a UTF-16/32 BOM, more than 5 %
            control characters) or fit no encoding.
        EmptyDocumentError: nothing but whitespace after decoding.
    """
    text: str | None = None
    warnings: tuple[IngestWarning, ...] = ()
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise DecodeError(path, f"has a {encoding} byte-order mark but {exc}") from exc
            if encoding.startswith("utf-16") and not _plausible_utf16(text):
                raise DecodeError(
                    path,
                    f"has a {encoding} byte-order mark but is not {encoding} text (no space, "
                    "line break or Latin letter once decoded: bytes paired into CJK-looking "
                    "characters)",
                )
            break
    if text is None:
        if b"\x00" in data:
            if _looks_utf16(data):
                raise DecodeError(
                    path,
                    "contains NUL bytes between its characters: UTF-16 text without a "
                    "byte-order mark? Save it as UTF-8 (or UTF-16 with a BOM)",
                )
            raise DecodeError(path, "contains NUL bytes; it looks like a binary file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            mixed = None
            if _has_multibyte(data.decode("utf-8", errors="replace")):
                mixed = _decode_mixed(data, path=path)
            if mixed is not None:
                text, warnings = mixed.text, mixed.warnings
            else:
                detected = _decode_detected(data, path=path)
                text, warnings = detected.text, detected.warnings
    if text and len(_BINARY_CONTROL_RE.findall(text)) > _MAX_CONTROL_RATIO * len(text):
        raise DecodeError(path, "too many control characters; it looks like a binary file")
    text = normalize_text(text)
    if not text.strip():
        raise EmptyDocumentError(path, "the file is empty or holds only whitespace")
    mojibake = _mojibake_warning(text, path=path)
    return DecodedText(text, (*warnings, mojibake) if mojibake else warnings)


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
