"""Decoding keeps a file with a few bad bytes or mixed encodings, and says so per file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.errors import DecodeError
from ragstrata.ingest.html_clean import MAX_DEPTH
from ragstrata.ingest.loader import load_document
from ragstrata.ingest.text import decode_text, find_mojibake

SPANISH = "Él dijo que la canción del niño es más útil. "


def test_a_few_bad_bytes_in_a_short_utf8_file_are_replaced_and_reported() -> None:
    # 2 bad bytes in ~230 bytes: was read as cp1252 ("Ă‰l ... mĂˇs"), silently garbled
    data = SPANISH.encode() * 5 + b"\xe9\xe9 fin"
    decoded = decode_text(data, path="/docs/notas.md")
    assert decoded.text.startswith(SPANISH) and decoded.text.count("\ufffd") == 2
    [warning] = decoded.warnings
    assert warning.kind == "replaced_bytes" and warning.path == "/docs/notas.md"
    assert "2 undecodable byte" in warning.message
    assert warning.share == pytest.approx(2 / len(decoded.text))


def test_bytes_that_are_undefined_in_cp1252_no_longer_reject_the_file() -> None:
    # "Á" is C3 81 and 0x81 is undefined in cp1252: this file was rejected whole as RS202
    data = "ÁRBOL más niño. ".encode() * 10 + b"\xff\xfe\xfa\n"
    decoded = decode_text(data, path="arbol.md")
    assert decoded.text.startswith("ÁRBOL más niño.")
    assert [w.kind for w in decoded.warnings] == ["replaced_bytes"]
    assert "3 undecodable" in decoded.warnings[0].message


def test_a_latin1_paragraph_in_a_utf8_file_is_read_as_cp1252() -> None:
    utf8 = "Intro en UTF-8: canción. ".encode() * 10
    latin1 = "Párrafo pegado: acción, señor, árbol.".encode("latin-1")
    decoded = decode_text(utf8 + b"\n\n" + latin1 + b"\n", path="mix.txt")
    assert "canción" in decoded.text and "acción, señor, árbol" in decoded.text
    assert "\ufffd" not in decoded.text and "Ã" not in decoded.text
    [warning] = decoded.warnings
    assert warning.kind == "mixed_encoding" and "1 line(s)" in warning.message
    assert 0 < warning.share < 0.05


def test_a_mostly_undecodable_file_keeps_its_error() -> None:
    data = "ñ".encode() + bytes(range(0x80, 0x100)) * 20  # one valid sequence, then noise
    with pytest.raises(DecodeError) as info:
        decode_text(data, path="junk.md")
    assert info.value.path == "junk.md"


def test_stray_bytes_in_an_ascii_file_read_as_cp1252_are_reported() -> None:
    # a new user's file: ASCII with the bytes FF FE C3 28 was read as "ÿþÃ(" without a word,
    # and the garbled text reached a cited answer
    data = b"The SMTP server \xff\xfe\xc3\x28 uses port 587 for outgoing mail.\n"
    decoded = decode_text(data, path="smtp.md")
    assert "ÿþÃ(" in decoded.text  # kept: the text is indexed, the user is told
    [warning] = decoded.warnings
    assert warning.kind == "legacy_encoding" and warning.path == "smtp.md"
    assert "read as cp1252" in warning.message and "Ã þ ÿ" in warning.message
    assert warning.share == pytest.approx(3 / len(decoded.text))


def test_clean_utf8_and_clean_latin1_have_no_warning() -> None:
    assert decode_text(SPANISH.encode(), path="a.md").warnings == ()
    assert decode_text(SPANISH.encode("latin-1"), path="a.md").warnings == ()


@pytest.mark.parametrize(
    ("garbled", "meant"),
    [("mÃ¡s", "más"), ("niÃ±o", "niño"), ("Â¿quÃ©?", "¿qué?"), ("donâ€™t", "don’t")],
)
def test_mojibake_is_found_and_warned_about(garbled: str, meant: str) -> None:
    found = find_mojibake(f"Hola {garbled} adiós")
    assert found and all(m in meant for _, m in found)
    decoded = decode_text(f"Texto: {garbled} y más texto normal.\n".encode(), path="/x/m.md")
    [warning] = decoded.warnings
    assert warning.kind == "mojibake" and warning.path == "/x/m.md"
    assert warning.share > 0 and decoded.text.count(garbled) == 1  # the text is not rewritten


def test_mojibake_pattern_spares_real_text() -> None:
    text = "São Paulo, Ärger, Straße» «Ça va», Â la carte? Ã secas. â€ sola. 25 °C, 3ª."
    assert find_mojibake(text) == []


def test_loader_puts_the_warnings_on_the_document(tmp_path: Path) -> None:
    path = tmp_path / "notas.md"
    path.write_bytes(b"# Notas\n\n" + SPANISH.encode() * 5 + b"\xe9 fin\n")
    doc = load_document(path)
    assert [(w.kind, w.path) for w in doc.warnings] == [("replaced_bytes", doc.source)]


def test_html_depth_warning_names_the_file(tmp_path: Path) -> None:
    n = MAX_DEPTH + 50
    page = tmp_path / "deep.html"
    page.write_text(
        "<h1>Deep</h1>" + "<div>" * n + "deep text" + "</div>" * n + "<p>after</p>",
        encoding="utf-8",
    )
    doc = load_document(page)
    assert "deep text" in doc.text
    [warning] = doc.warnings
    assert warning.kind == "html_depth" and warning.path == doc.source
    assert f"deeper than {MAX_DEPTH}" in warning.message


def test_an_example_of_garbling_shown_with_its_meaning_is_not_mojibake() -> None:
    # a document about encodings (this project's own docs) quotes examples with their meaning
    text = 'UTF-8 read as cp1252 ("mÃ¡s" for "más", "Â¿" for "¿", "â€™" for "’") is detected.'
    assert find_mojibake(text) == []
    assert find_mojibake("La canciÃ³n es mÃ¡s larga.") == [("Ã³", "ó"), ("Ã¡", "á")]


def test_clean_utf8_lines_are_kept_beside_a_short_line_of_bad_bytes() -> None:
    # a new user's file: 4 bad bytes in 75 characters (over 5 %) sent the whole file to
    # detection, which read it as cp1250: "# TĂ­tulo", "El cĂłdigo secreto" were indexed and cited
    data = (
        b"Hola \xff\xfe mundo \xc3\x28 caf\xe9 inv\xc3\xa1lido\n"
        + "# Título\nEl código secreto es ZANAHORIA-42.\n".encode()
    )
    decoded = decode_text(data, path="invalid-utf8.md")
    assert "# Título\nEl código secreto es ZANAHORIA-42." in decoded.text
    assert "inválido" in decoded.text and decoded.text.count("\ufffd") == 4
    [warning] = decoded.warnings
    assert warning.kind == "replaced_bytes" and "4 undecodable" in warning.message


def test_a_mostly_garbled_file_with_clean_lines_still_goes_to_detection() -> None:
    clean = "Línea limpia número uno.\nLínea limpia número dos.\n".encode()
    noise = bytes(range(0x80, 0x100)) * 4 + b"\n"  # 512 bad bytes on one line
    with pytest.raises(DecodeError):
        decode_text(clean + noise, path="noise.md")


@pytest.mark.parametrize(
    "text",
    [
        "Guía de instalación de Microsoft Office™ en España.\nEl técnico señaló que no.\n",
        "# Límites\n\nLa tasa máxima es 0,5 ‰ según la ley. Él señaló que había bebido poco.\n",
        "Año\nNiño\nSeñal\n",  # short and accent-dense
        "‹Nota› El niño dijo «sí» † y se fue.\n",
    ],
)
def test_spanish_cp1252_files_are_read_as_cp1252(text: str) -> None:
    """Review 32: one ™, ‰, † or ‹› in a Spanish ANSI file, or a short accent-dense one, sent
    it to charset-normalizer, which read "España" as "Espańa" (cp1250) or "Año" as "Aﮦo"."""
    decoded = decode_text(text.encode("cp1252"), path="es.txt")
    assert decoded.text == text
    assert decoded.warnings == ()


def test_cyrillic_and_greek_legacy_files_are_not_read_as_cp1252() -> None:
    for text, encoding in [
        ("Привет, как дела? Это тест русского текста.", "cp1251"),
        ("Hello world. Привет мир и ещё немного текста здесь.", "cp1251"),
        ("Γειά σου κόσμε, αυτό είναι ένα τεστ.", "cp1253"),
    ]:
        decoded = decode_text(text.encode(encoding), path="x.txt")
        assert decoded.text == text
        assert [w.kind for w in decoded.warnings] == ["legacy_encoding"]


def test_invalid_front_matter_is_a_warning_naming_the_file(tmp_path: Path) -> None:
    """Review 32: an unquoted colon (``title: Guía: instalación rápida``) dropped the front
    matter with a log line naming no file; ``ingest --json`` showed no warning."""
    page = tmp_path / "guia.md"
    page.write_text(
        "---\ntitle: Guía: instalación rápida\nversion: 2\n---\n\n# Guía\n\nTexto.\n",
        encoding="utf-8",
    )
    doc = load_document(page)
    assert "title" not in doc.metadata and "Texto." in doc.text
    [warning] = doc.warnings
    assert warning.kind == "front_matter" and warning.path == doc.source
    assert "not valid YAML" in warning.message and "line 2" in warning.message
    page.write_text("---\n- a\n- b\n---\n\n# Guía\n", encoding="utf-8")
    assert [w.kind for w in load_document(page).warnings] == ["front_matter"]
    page.write_text("---\ntitle: 'Guía: instalación'\n---\n\n# Guía\n", encoding="utf-8")
    assert load_document(page).warnings == ()
