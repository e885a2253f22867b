"""Unit tests of ragstrata.ingest.text: decoding, normalization, plain-text paragraphs."""

from __future__ import annotations

import codecs
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.errors import DecodeError, EmptyDocumentError, IngestError
from ragstrata.ingest.text import decode_bytes, normalize_text, parse_text

SPANISH = "Añadir estado: el niño comió piña. ¿Qué pasó? ¡Acción!"


def test_utf8_plain() -> None:
    assert decode_bytes(SPANISH.encode("utf-8"), path="a.txt") == SPANISH


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
    ],
)
def test_bom_is_stripped(bom: bytes, encoding: str) -> None:
    data = bom + SPANISH.encode(encoding)
    assert decode_bytes(data, path="a.txt") == SPANISH


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe\x00garbage\x80\x81", b"\xff\xfehello world\n", b"\xfe\xffplain texts."],
)
def test_a_stray_utf16_mark_before_bytes_that_are_not_utf16_is_refused(data: bytes) -> None:
    # decoded as UTF-16 these pair into CJK-looking characters without a single space
    with pytest.raises(DecodeError, match=r"not utf-16-.e text"):
        decode_bytes(data, path="malo.md")


def test_utf16_text_without_latin_letters_is_kept() -> None:
    text = "你好世界。\n再见。"
    assert decode_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"), path="a.txt") == text


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
@pytest.mark.parametrize(
    "text",
    [
        "Añadir estado",
        SPANISH,
        "Información\n\nCanción del año, útil, también, acción.\n",
    ],
)
def test_western_single_byte_spanish(encoding: str, text: str) -> None:
    assert decode_bytes(text.encode(encoding), path="a.txt") == text


def test_cp1252_specials() -> None:
    text = "“Comillas” — 10 € … fin"
    assert decode_bytes(text.encode("cp1252"), path="a.txt") == text


def test_nul_bytes_are_binary() -> None:
    with pytest.raises(DecodeError) as info:
        decode_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", path="img.md")
    assert info.value.path == "img.md"
    assert isinstance(info.value, IngestError)


def test_many_control_chars_are_binary() -> None:
    data = bytes(range(1, 9)) * 50 + b"some text"
    with pytest.raises(DecodeError):
        decode_bytes(data, path="x.txt")


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n", codecs.BOM_UTF8, codecs.BOM_UTF8 + b"\n"])
def test_empty_or_whitespace(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        decode_bytes(data, path="e.md")


def test_normalize_line_ends_controls_nfc() -> None:
    raw = "a\r\nb\rc\n\x07d\te\x0cf\x7f\u0085" + "e\u0301"
    assert normalize_text(raw) == "a\nb\nc\nd\tef" + "\u00e9"


def test_invisible_characters_do_not_split_words() -> None:
    """Review 32: soft hyphens and zero-width spaces survived in Markdown and text (HTML
    dropped them), so BM25 indexed "configu" + "racion"; a BOM inside the text hid a heading."""
    assert normalize_text("configu\u00adración contra\u200bseña a\u2060b") == (
        "configuración contraseña ab"
    )
    assert normalize_text("uno\n\ufeff# Uso avanzado\n") == "uno\n# Uso avanzado\n"
    assert normalize_text("una configu\u00ad\nración larga") == "una configuración larga"
    assert normalize_text("emoji \U0001f468\u200d\U0001f4bb") == "emoji \U0001f468\u200d\U0001f4bb"


def test_crlf_and_lf_decode_identically() -> None:
    lf = "uno\n\ndos\ntres\n"
    assert decode_bytes(lf.replace("\n", "\r\n").encode(), path="a") == lf
    assert decode_bytes(lf.replace("\n", "\r").encode(), path="a") == lf


@given(st.text())
def test_normalize_is_idempotent_and_clean(s: str) -> None:
    once = normalize_text(s)
    assert normalize_text(once) == once
    assert "\r" not in once
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F) for ch in once)
    assert not any(ch in "\u00ad\u200b\u2060\ufeff" for ch in once)


def test_parse_text_paragraphs(check_blocks: Callable[..., None]) -> None:
    text = "  primer párrafo\nsigue aquí  \n\n\n segundo\n \n\ttercero\n"
    parsed = parse_text(text, fallback_title="notas")
    assert parsed.title == "notas"
    assert [text[b.start : b.end] for b in parsed.blocks] == [
        "primer párrafo\nsigue aquí",
        "segundo",
        "tercero",
    ]
    assert {b.kind for b in parsed.blocks} == {"paragraph"}
    check_blocks(text, parsed.blocks)


@given(st.text())
def test_parse_text_covers_everything(check_blocks: Callable[..., None], s: str) -> None:
    text = normalize_text(s)
    parsed = parse_text(text, fallback_title="x")
    assert all(b.kind == "paragraph" for b in parsed.blocks)
    check_blocks(text, parsed.blocks)


def test_utf8_with_one_stray_byte_stays_utf8() -> None:
    from ragstrata.ingest.text import decode_bytes

    data = "La canción del niño está aquí. ".encode() * 20 + b"\xff" + b" Fin."
    text = decode_bytes(data, path="mixed.md")
    assert "canción del niño" in text and "\ufffd" in text


def test_latin1_spanish_is_not_taken_for_broken_utf8() -> None:
    from ragstrata.ingest.text import decode_bytes

    text = decode_bytes("La canción del niño, señor.".encode("latin-1"), path="l1.txt")
    assert text == "La canción del niño, señor."
