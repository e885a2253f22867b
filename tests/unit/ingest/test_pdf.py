"""Unit tests of the PDF parser on small PDFs written by hand in the test (no binary fixtures).

:func:`build_pdf` writes a minimal PDF 1.4 file: standard 14 fonts (WinAnsi), text lines at
given positions and angles, stroked ruling lines, an optional image, an outline, an Info title
and, for the encryption test, a standard security handler whose user password is not empty.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pdf_builder import Page, build_pdf
from ragstrata.chunking.splitter import StructureChunker
from ragstrata.errors import (
    CorruptFileError,
    EmptyDocumentError,
    EncryptedDocumentError,
    IngestError,
    MissingDependencyError,
    NoTextLayerError,
    ParserLimitError,
)
from ragstrata.ingest.loader import load_document
from ragstrata.ingest.pdf import extract as pdf_module
from ragstrata.ingest.pdf import parse_pdf
from ragstrata.ingest.text import ParsedText, normalize_text
from ragstrata.text.tokens import CallableTokenCounter

pytest.importorskip("pypdfium2")


def parse(data: bytes, fallback: str = "fallback") -> ParsedText:
    return parse_pdf(data, source="test.pdf", fallback_title=fallback)


def block_texts(parsed: ParsedText, kind: str) -> list[str]:
    return [parsed.text[b.start : b.end] for b in parsed.blocks if b.kind == kind]


def flat(text: str) -> str:
    return " ".join(text.split())


PROSE = [
    "Retrieval augmented generation needs clean text from",
    "every source format, including portable documents that",
    "were laid out for printing rather than for reading by",
    "programs, so the parser has to rebuild the reading order.",
]


# --------------------------------------------------------------------------- invariants
def test_blocks_are_valid_and_text_normalized(check_blocks: Callable[..., None]) -> None:
    page = Page().text(72, 720, "Invariants", size=18, font="F2").lines(72, 690, PROSE)
    page.lines(72, 620, ["def main():", "    return 42"], font="F3")
    parsed = parse(build_pdf([page]))
    check_blocks(parsed.text, parsed.blocks)
    assert parsed.text == normalize_text(parsed.text)
    assert parsed.pages == (0,)
    assert parsed.metadata["page_count"] == 1


# --------------------------------------------------------------------------- reading order
def two_column_page() -> Page:
    left = [f"left column line number {k} says" for k in range(1, 9)]
    left.append("and the crossing sentence starts in the left")
    right = ["column and ends at the top of the right one."]
    right += [f"right column line number {k} says" for k in range(1, 9)]
    page = Page().text(200, 740, "A Two Column Page", size=16, font="F2")
    page.lines(50, 700, left).lines(320, 700, right)
    return page


def test_two_columns_read_left_then_right() -> None:
    parsed = parse(build_pdf([two_column_page()]))
    text = flat(parsed.text)
    assert "starts in the left column and ends at the top of the right one." in text
    last_left = text.index("left column line number 8")
    first_right = text.index("right column line number 1")
    assert text.index("left column line number 1") < last_left < first_right
    assert text.index("A Two Column Page") < text.index("left column line number 1")


def test_blank_line_aligned_across_columns_does_not_interleave() -> None:
    page = Page()
    page.lines(50, 700, ["left paragraph one line one", "left paragraph one line two."])
    page.lines(50, 650, ["left paragraph two line one", "left paragraph two line two."])
    page.lines(320, 700, ["right paragraph one line one", "right paragraph one line two."])
    page.lines(320, 650, ["right paragraph two line one", "right paragraph two line two."])
    text = flat(parse(build_pdf([page])).text)
    assert text.index("left paragraph two") < text.index("right paragraph one")


def test_rotated_page_reads_upright_and_margin_stamp_is_dropped() -> None:
    sideways = Page(rotate=90)
    sideways.text(100, 100, "first rotated line of the page", angle=90)
    sideways.text(114, 100, "second rotated line of the page", angle=90)
    stamped = Page().lines(72, 700, PROSE).text(30, 300, "STAMP1234", angle=90)
    parsed = parse(build_pdf([sideways, stamped]))
    text = flat(parsed.text)
    assert "first rotated line of the page second rotated line of the page" in text
    assert "STAMP1234" not in text


def test_a_table_of_contents_page_is_dropped_and_a_single_leader_kept() -> None:
    """A smoke test's searches over lshort-spanish ranked its table of contents in the top 5:
    a page of dot-leader entries names every section. A page with one leader (a price) keeps
    it."""
    contents = Page().text(72, 740, "Contents")
    entries = [
        "1. Getting started . . . . . . . . . . 1",
        "1.1. The name of the game . . . . . . . 1",
        "1.2. Basics . . . . . . . . . . . . . . 2",
        "2.3.Lost leader entry",
        "2. Typesetting text . . . . . . . . . . 17",
        "2.1. Structure . . . . . . . . . . . . . 17",
        "A.1. Installing . . . . . . . . . . . . 90",
        "Preface V",
    ]
    contents.lines(72, 700, entries)
    body = Page().lines(72, 700, [*PROSE[:2], "Total price . . . . . . . . 12"])
    text = flat(parse(build_pdf([contents, body])).text)
    gone_lines = ("Getting started", "The name of the game", "Lost leader entry", "Installing")
    for gone in (*gone_lines, "Preface"):
        assert gone not in text, text
    assert "Contents" in text and "Total price" in text
    assert PROSE[0].split()[0] in text


# --------------------------------------------------------------------------- tables
def test_booktabs_table_becomes_pipe_table() -> None:
    page = Page().lines(72, 740, PROSE[:2]).text(72, 700, "Table 1: Results of the runs")
    page.hline(100, 400, 690, 0.8).hline(100, 400, 673, 0.5).hline(100, 400, 620, 0.8)
    page.text(110, 680, "Name").text(220, 680, "Score").text(300, 680, "Notes")
    for k, (name, score, note) in enumerate(
        [("alpha", "12", "first run"), ("beta", "7", "second run"), ("gamma", "31", "last")]
    ):
        page.text(110, 661 - 13 * k, name).text(220, 661 - 13 * k, score)
        page.text(300, 661 - 13 * k, note)
    page.lines(72, 590, PROSE[2:])
    parsed = parse(build_pdf([page]))
    tables = block_texts(parsed, "table")
    assert tables == [
        "| Name | Score | Notes |\n| --- | --- | --- |\n| alpha | 12 | first run |\n"
        "| beta | 7 | second run |\n| gamma | 31 | last |"
    ]
    text = parsed.text
    assert text.index("Table 1") < text.index("| Name") < text.index("programs, so the")


def test_grid_table_with_wrapped_cell() -> None:
    page = Page().text(72, 740, "Packages with programs in text mode:")
    xs = [80, 180, 260, 500]
    ys = [720, 705, 678, 663]
    for y in ys:
        page.hline(xs[0], xs[-1], y)
    for x in xs[1:-1]:
        page.vline(x, ys[-1], ys[0])
    page.text(85, 709, "package", font="F2").text(185, 709, "size", font="F2")
    page.text(265, 709, "description", font="F2")
    page.text(85, 688, "vim").text(185, 688, "3570")
    page.text(265, 694, "Vi IMproved, a text editor").text(265, 682, "for programmers")
    page.text(85, 667, "mc").text(185, 667, "1482").text(265, 667, "file manager")
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "table") == [
        "| package | size | description |\n| --- | --- | --- |\n"
        "| vim | 3570 | Vi IMproved, a text editor for programmers |\n"
        "| mc | 1482 | file manager |"
    ]


def test_a_cell_centred_between_the_lines_of_a_wrapped_cell_joins_its_row() -> None:
    """Debian reference p. 39 (2026-12-06): the group "dip" sits halfway between the two lines
    of its wrapped description, a visual line of its own, and the row was read as two rows,
    "| | acceso limitado ... |" and "| dip | (dialup IP) ... |" (116 such rows in the PDF)."""
    page = Page().text(72, 740, "Grupos importantes del sistema:")
    for y in (725, 710, 694, 664, 648):
        page.hline(80, 500, y)
    page.vline(160, 648, 725)
    page.text(85, 714, "grupo", font="F2").text(165, 714, "descripción", font="F2")
    page.text(85, 698, "dialout").text(165, 698, "acceso directo a los puertos serie")
    page.text(165, 683, "acceso limitado a los puertos serie para")
    page.text(85, 676, "dip")
    page.text(165, 669, "(dialup IP) a pares confiables")
    page.text(85, 652, "cdrom").text(165, 652, "dispositivos CD-ROM")
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "table") == [
        "| grupo | descripción |\n| --- | --- |\n"
        "| dialout | acceso directo a los puertos serie |\n"
        "| dip | acceso limitado a los puertos serie para (dialup IP) a pares confiables |\n"
        "| cdrom | dispositivos CD-ROM |"
    ]


def test_a_code_cell_running_past_the_rules_stays_in_its_table() -> None:
    """Debian reference p. 84 (2026-12-06): a row whose code cell ran past the right end of
    the rules (``~a{install,upgrade,...}``) was read as prose between two tables: the table was
    cut in two there and the row lost from both."""
    page = Page().lines(72, 740, PROSE[:2])
    for y in (700, 686, 672, 658, 644):
        page.hline(100, 400, y)
    page.text(110, 690, "regla").text(260, 690, "fórmula")
    page.text(110, 676, "instalados").text(260, 676, "~i")
    page.text(110, 662, "pendientes").text(260, 662, "~a{install,upgrade,downgrade,purge,hold}")
    page.text(110, 648, "nuevos").text(260, 648, "~N")
    page.lines(72, 610, PROSE[2:])
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "table") == [
        "| regla | fórmula |\n| --- | --- |\n| instalados | ~i |\n"
        "| pendientes | ~a{install,upgrade,downgrade,purge,hold} |\n| nuevos | ~N |"
    ]


def test_a_ruled_tip_with_gaps_at_one_place_on_each_line_reads_as_prose() -> None:
    """Debian reference pp. 71 and 226 (2026-12-06): the justified lines of a ruled tip left
    a wide gap at the same place on each line, and the box was read as a 2-column table
    ("| sugerencia | |"), or, in four more tips, as two columns of text."""
    page = Page().lines(72, 740, PROSE[:2])
    page.hline(100, 400, 700).hline(100, 400, 640)
    page.text(110, 688, "sugerencia", font="F2")
    page.text(110, 674, "Para un sistema Debian con la").text(260, 674, "versión estable, incluya")
    page.text(110, 660, "las líneas de seguridad en").text(260, 660, "sources.list como en el")
    page.text(110, 646, "ejemplo anterior.")
    page.lines(72, 610, PROSE[2:])
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "table") == []
    assert (
        "sugerencia Para un sistema Debian con la versión estable, incluya las líneas de "
        "seguridad en sources.list como en el ejemplo anterior."
    ) in flat(parsed.text)


def test_a_caption_under_a_table_ends_it_and_a_ruled_tip_is_no_table() -> None:
    """A new user's trial (2026-12-06): in the Debian reference, a table's caption under it
    ("Cuadro 1.6: ...") and the ruled box of a tip after it were read as rows of the table."""
    page = Page().lines(72, 740, PROSE[:2])
    page.hline(100, 400, 700).hline(100, 400, 686).hline(100, 400, 650)  # the table
    page.text(110, 690, "umask").text(220, 690, "archivo").text(300, 690, "uso")
    page.text(110, 674, "0022").text(220, 674, "-rw-r--r--").text(300, 674, "usuario")
    page.text(110, 660, "0002").text(220, 660, "-rw-rw-r--").text(300, 660, "grupo")
    page.text(150, 636, "Cuadro 1.6: Ejemplos de valores de umask")
    page.hline(100, 400, 622).hline(100, 400, 590)  # the tip's box, as wide as the table
    page.text(110, 610, "sugerencia").text(110, 597, "Active UPG con umask 002 en ~/.bashrc.")
    page.lines(72, 560, PROSE[2:])
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "table") == [
        "| umask | archivo | uso |\n| --- | --- | --- |\n| 0022 | -rw-r--r-- | usuario |\n"
        "| 0002 | -rw-rw-r-- | grupo |"
    ]
    text = flat(parsed.text)
    assert "Cuadro 1.6: Ejemplos de valores de umask" in text
    assert "sugerencia Active UPG con umask 002 en ~/.bashrc." in text


def test_a_long_line_in_a_later_column_is_a_cell_not_prose() -> None:
    """A new user's trial (2026-12-06): a table whose second column held one long line was cut
    there (the line read as prose between the rules), the rows after it became a new table
    with a data row as its header, and `ask` answered "cdrom: audio"."""
    page = Page().lines(72, 740, PROSE[:2])
    page.hline(100, 500, 700).hline(100, 500, 686).hline(100, 500, 620)
    page.text(110, 690, "grupo").text(190, 690, "descripción")
    rows = [
        ("dialout", "acceso directo a los puertos serie"),
        ("dip", "acceso limitado a los puertos serie para conexiones a internet por vía"),
        ("cdrom", "dispositivos CD-ROM"),
        ("audio", "dispositivo de audio"),
    ]
    for k, (group, text) in enumerate(rows):
        page.text(110, 674 - 13 * k, group).text(190, 674 - 13 * k, text)
    page.lines(72, 590, PROSE[2:])
    tables = block_texts(parse(build_pdf([page])), "table")
    assert len(tables) == 1, tables
    assert (
        "| dip | acceso limitado a los puertos serie para conexiones a internet por vía |"
        in (tables[0])
    )
    assert tables[0].startswith("| grupo | descripción |")


def test_two_rules_around_prose_are_not_a_table() -> None:
    page = Page().hline(72, 540, 720).lines(72, 705, PROSE).hline(72, 540, 650)
    parsed = parse(build_pdf([page]))
    assert not block_texts(parsed, "table")
    assert "rebuild the reading order." in flat(parsed.text)


# --------------------------------------------------------------------------- running lines
def test_running_headers_footers_and_page_numbers_are_dropped() -> None:
    pages = []
    for k in range(1, 5):
        page = Page().text(72, 760, "ACME Quarterly Report", size=9)
        page.text(500, 760, f"{k} / 4", size=9)
        topic = ["apples", "bridges", "comets", "dunes"][k - 1]
        page.lines(72, 700, [f"This page is about {topic}.", *PROSE[k - 1 :]])
        page.text(290, 40, f"Page {k} of 4", size=9)
        pages.append(page)
    parsed = parse(build_pdf(pages))
    assert "ACME" not in parsed.text
    assert not re.search(r"Page \d of 4|\d / 4", parsed.text)
    for topic in ("apples", "bridges", "comets", "dunes"):
        assert f"This page is about {topic}." in parsed.text


def test_a_running_header_that_repeats_a_section_title_is_dropped() -> None:
    """A new user's trial (2026-12-06): a short section's running header ("6.4 Composición de
    la página", on one page) stayed in the text: it shows on too few pages to count as
    repeated, but it repeats the section's heading."""
    first = Page().text(72, 740, "6.4.", size=16, font="F2")  # the number stands apart
    first.text(130, 740, "Composición de la página", size=16, font="F2").lines(72, 700, PROSE)
    second = Page().text(72, 760, "6.4 Composición de la página", size=9)
    second.text(500, 760, "125", size=9).lines(72, 700, PROSE[::-1])
    parsed = parse(build_pdf([first, second]))
    assert flat(parsed.text).count("Composición de la página") == 1
    assert "rebuild the reading order." in parsed.text


PAYEES = ["Ferretería Sol", "Papelería Luna", "Gasolinera Norte", "Imprenta Sur"]


def statement(*, running: bool) -> tuple[bytes, list[tuple[str, str, str]]]:
    """Review 42's ``extracto.pdf``: 4 pages of date / payee / amount rows without rules, a title
    over page 1's; ``running`` adds a bank header and a "Página N de 4" footer to every page."""
    rows = [
        (
            f"{k % 28 + 1:02d}/{k // 28 + 1:02d}/2024",
            f"Pago a {PAYEES[k % 4]}",
            f"{k * 37 % 990 + 10},{k * 13 % 100:02d}",
        )
        for k in range(160)
    ]
    pages, i = [], 0
    for n in range(4):
        page = Page()
        if running:
            page.text(72, 765, "Banco Ejemplo · Cuenta corriente", size=8)
            page.text(280, 30, f"Página {n + 1} de 4", size=8)
        y = 740
        if n == 0:
            page.text(72, y, "Extracto de movimientos", size=16, font="F2")
            y -= 30
        while y > 60 and i < len(rows):
            date, payee, amount = rows[i]
            page.text(72, y, date).text(160, y, payee).text(480, y, amount)
            y -= 14
            i += 1
        pages.append(page)
    return build_pdf(pages), rows[:i]


@pytest.mark.parametrize("running", [False, True])
def test_a_statement_keeps_the_rows_at_the_top_and_bottom_of_its_pages(running: bool) -> None:
    """Review 42: the dates and amounts of the first and last three rows of each page were
    dropped as running lines ("#/#/#" and "#,#" recur at the page's edges on every page), and
    page 1's first row too."""
    data, rows = statement(running=running)
    text = flat(parse(data).text)
    missing = [row for row in rows if " ".join(row) not in text]
    assert not missing
    assert "Extracto de movimientos" in text
    if running:
        assert "Banco Ejemplo" not in text
        assert not re.search(r"Página \d de 4", text)


def test_a_price_list_continued_at_the_top_of_a_page_keeps_its_prices() -> None:
    """Review 42's ``precios.pdf``: the price list goes on at the top of pages 2 and 3; each
    price, far from its fruit, was dropped as a lone page number."""
    prices = [("Manzana", "12"), ("Pera", "15"), ("Naranja", "9"), ("Uva", "31"), ("Kiwi", "22")]
    prices += [("Mango", "48"), ("Fresa", "27"), ("Cereza", "53"), ("Limón", "7"), ("Melón", "19")]
    first = Page().text(72, 740, "Lista de precios de la frutería", size=16, font="F2")
    first.lines(72, 710, ["Los precios están en euros por kilo y se revisan cada semana."])
    y = 670
    for name, price in prices[:3]:
        first.text(72, y, name).text(400, y, price)
        y -= 14
    for k in range(40):
        first.text(72, y, f"Línea de relleno {k} con texto normal para ocupar la página.")
        y -= 14
        if y < 80:
            break
    pages = [first]
    for chunk in (prices[3:6], prices[6:]):
        page = Page()
        y = 740
        for name, price in chunk:
            page.text(72, y, name).text(400, y, price)
            y -= 14
        for k in range(30):
            page.text(72, y - 20, f"Más texto de relleno {k} sobre la fruta y su conservación.")
            y -= 14
        pages.append(page)
    text = flat(parse(build_pdf(pages)).text)
    for name, price in prices:
        assert f"{name} {price}" in text


def test_an_exercise_sheet_keeps_its_titles_and_repeated_instructions() -> None:
    """Review 42's ``ejercicios.pdf``: "Ejercicio N" (bold, body size) and an instruction line
    repeated on every page were dropped as running headers, with the heading path."""
    pages = []
    for n in range(1, 5):
        page = Page().text(72, 740, f"Ejercicio {n}", font="F2")
        page.lines(
            72,
            720,
            [
                f"Calcule la derivada de la función número {n} y justifique cada paso.",
                "Indique las reglas de derivación que aplica en su respuesta.",
                "Escriba el resultado final simplificado al máximo posible.",
            ],
        )
        pages.append(page)
    text = flat(parse(build_pdf(pages)).text)
    for n in range(1, 5):
        assert f"Ejercicio {n}" in text
    assert text.count("Indique las reglas de derivación que aplica en su respuesta.") == 4


def test_a_running_header_beside_a_number_column_goes_and_the_numbers_stay() -> None:
    """A real running header and page number (101-104) over a list that opens every page with
    a number far from its label: only the header and the page number go."""
    pages = []
    for n in range(1, 5):
        page = Page().text(72, 765, "Catálogo de piezas 2024", size=8)
        page.text(520, 765, str(100 + n), size=8)
        y = 735
        for k in range(3):
            page.text(72, y, f"Pieza {n}{k}").text(400, y, str(10 * n + k))
            y -= 14
        page.lines(72, y - 20, PROSE)
        pages.append(page)
    text = flat(parse(build_pdf(pages)).text)
    assert "Catálogo" not in text
    assert not re.search(r"\b10[1-4]\b", text)
    for n in range(1, 5):
        for k in range(3):
            assert f"Pieza {n}{k} {10 * n + k}" in text


def test_running_lines_with_their_page_number_in_the_same_run_are_dropped() -> None:
    """Review 44: a header or footer whose page number shares its text run ("12 | Chapter 1:
    Meet Kafka", "Manual de usuario - 5") differed from page to page once only page-number
    forms were masked, and stayed on every page. Its number runs with the page index."""
    pages = []
    for i in range(6):
        n = i + 11
        page = Page()
        if i % 2 == 0:
            page.text(72, 750, f"{n} | Chapter 1: Meet Kafka", size=9)
        else:
            page.text(330, 750, f"Publish/Subscribe Messaging | {n}", size=9)
        page.lines(72, 700, PROSE)
        page.text(72, 40, f"Manual de usuario - {n}", size=8)
        page.text(400, 40, f"Pagina {i + 1} di 6", size=8)
        pages.append(page)
    text = flat(parse(build_pdf(pages)).text)
    for probe in ("Chapter 1", "Messaging", "Manual de usuario", "Pagina"):
        assert probe not in text
    assert text.count(flat(" ".join(PROSE))) == 6


def test_the_second_line_of_a_running_header_near_the_body_is_dropped() -> None:
    """Review 44: a two-line header (9 pt, 11 pt apart) 20 pt above a body set at a 14 pt
    pitch: the gap is under 1.5x the pitch, so the edge band was the first line only and the
    second stayed on every page. A repeated body line under a title that stays is kept."""
    pages = []
    for i in range(5):
        page = Page().text(72, 760, "ACME Servicios S.A.", size=9)
        page.text(72, 749, "Procedimiento PR-07 Copias de seguridad", size=9)
        page.text(72, 729, f"Paso {i + 1}").text(72, 715, "Compruebe el registro antes de seguir.")
        page.lines(72, 701, PROSE, step=14)
        page.text(300, 40, str(i + 1), size=9)
        pages.append(page)
    text = flat(parse(build_pdf(pages)).text)
    assert "ACME" not in text and "PR-07" not in text
    for i in range(5):
        assert f"Paso {i + 1} Compruebe el registro antes de seguir." in text


def test_a_single_page_keeps_its_first_line() -> None:
    page = Page().text(72, 760, "ACME Quarterly Report", size=9).lines(72, 700, PROSE)
    assert "ACME Quarterly Report" in parse(build_pdf([page])).text


# --------------------------------------------------------------------------- de-hyphenation
def test_dehyphenation_rule() -> None:
    page = Page().lines(
        72,
        700,
        [
            "We ran an exam-",
            "ple of the method on Hewlett-",
            "Packard machines during COVID-",
            "19 and found a well-",
            "known result, the well-known effect of the",
            "method on all of the machines we have tested.",
        ],
    )
    text = flat(parse(build_pdf([page])).text)
    assert (
        "We ran an example of the method on Hewlett-Packard machines during COVID-19 and "
        "found a well-known result, the well-known effect of the method" in text
    )


def test_a_capitalized_word_broken_at_a_line_end_is_joined_when_written_whole_elsewhere() -> None:
    """A new user's trial (2026-12-06): "solo ha ELI-MINADO los paquetes" (the Debian
    reference, p. 86) kept its line-end hyphen, the rule keeping any hyphen before a capital;
    the word is joined when the document writes it whole elsewhere ("eliminado")."""
    page = Page().lines(
        72,
        700,
        [
            "Compruebe que solo ha ELI-",
            "MINADO los paquetes que deseaba, sin Hewlett-",
            "Packard; un paquete eliminado no se puede usar en los equipos que tenemos.",
        ],
    )
    text = flat(parse(build_pdf([page])).text)
    assert "solo ha ELIMINADO los paquetes que deseaba, sin Hewlett-Packard; un" in text


def test_a_smaller_footnote_number_is_not_glued_to_the_word_after_it() -> None:
    """A new user's trial (2026-12-06): footnotes read "11La longitud ..." and "4La ...", the
    footnote's smaller number glued to its first word; digits in the text's size stay joined."""
    page = (
        Page()
        .lines(72, 700, PROSE)
        .text(72, 120, "4", size=6)
        .text(72 + 0.556 * 6, 117, "La longitud del nombre es corta, como 11Apr29.", size=9)
    )
    text = flat(parse(build_pdf([page])).text)
    assert "4 La longitud del nombre es corta, como 11Apr29." in text, text[-200:]


def test_a_path_or_hyphenated_name_broken_at_a_line_end_keeps_its_hyphen() -> None:
    """A new user's trial (2026-12-06): "ttf-mscorefonts-" + "installer" and
    "http://security.debian.org/debian-" + "security/" lost their hyphen; a path is joined
    only when the word it splits is written whole elsewhere ("/etc/es-" + "critura")."""
    page = Page().lines(
        72,
        700,
        [
            "Instale el paquete ttf-mscorefonts-",
            "installer desde http://security.debian.org/debian-",
            "security/ y lea /srv/lectura/es-",
            "critura antes de la escritura de los archivos del sistema.",
        ],
    )
    text = flat(parse(build_pdf([page])).text)
    assert "ttf-mscorefonts-installer desde http://security.debian.org/debian-security/" in text
    assert "/srv/lectura/escritura antes" in text


def test_a_heading_over_two_lines_is_de_hyphenated() -> None:
    """The same trial: "... montaje de otra par- tición" (a heading broken over two lines)."""
    page = Page().text(72, 740, "9.6.14. Expansión mediante el montaje de otra par-", size=14)
    page.text(72, 722, "tición", size=14).lines(72, 690, PROSE)
    parsed = parse(build_pdf([page]))
    assert "9.6.14. Expansión mediante el montaje de otra partición" in flat(parsed.text)


# --------------------------------------------------------------------------- pages
def test_a_paragraph_that_crosses_a_page_break_is_one_paragraph() -> None:
    """Review 32: "configu-" at the foot of a page and "ración adicional" at the top of the
    next stayed two paragraphs ("configu-" / "ración"), so BM25 never saw "configuración" and
    a sentence crossing any page break was cut in two."""
    first = Page().text(72, 720, "1. Red", size=18, font="F2")
    first.lines(
        72,
        690,
        [
            "El administrador revisa la red antes de instalar el paquete y anota los cambios",
            "en el registro. La instalación completa requiere una configu-",
        ],
        size=10,
    )
    second = Page().lines(
        72,
        720,
        [
            "ración adicional del cortafuegos, según el manual de la empresa, y se",
            "reinicia el servicio.",
        ],
        size=10,
    )
    third = Page().lines(72, 720, ["una frase que empieza en minúscula tras un punto."], size=10)
    parsed = parse(build_pdf([first, second, third]))
    paragraphs = [flat(t) for t in block_texts(parsed, "paragraph")]
    assert paragraphs == [
        "El administrador revisa la red antes de instalar el paquete y anota los cambios en el "
        "registro. La instalación completa requiere una configuración adicional del "
        "cortafuegos, según el manual de la empresa, y se reinicia el servicio.",
        "una frase que empieza en minúscula tras un punto.",  # after a stop: a new paragraph
    ]
    # page 2 starts inside the joined paragraph, at its first word
    assert parsed.text[parsed.pages[1] :].startswith("ración adicional")
    assert parsed.text[parsed.pages[2] :].startswith("una frase")


def test_a_smaller_block_or_an_indented_line_after_a_page_break_starts_anew() -> None:
    """A footnote-sized line or an indented first line is no continuation."""
    open_end = Page().lines(72, 700, ["Este párrafo termina sin punto y la página se acaba"])
    smaller = Page().lines(72, 720, ["nota al pie en letra más pequeña"], size=7)
    indented = Page().lines(110, 720, ["sangría de un párrafo nuevo en minúscula que"])
    indented.lines(72, 708, ["sigue en la línea siguiente hasta el final del párrafo."])
    for page in (smaller, indented):
        parsed = parse(build_pdf([open_end, page]))
        assert len(block_texts(parsed, "paragraph")) == 2


def test_page_offsets_map_text_to_its_page(tmp_path: Path) -> None:
    pages = [
        Page().lines(72, 700, [f"Page {name} holds the word {name}word.", *PROSE])
        for name in ("one", "two", "three")
    ]
    pages.insert(2, Page())  # a blank page 3
    parsed = parse(build_pdf(pages))
    assert len(parsed.pages) == 4 and parsed.pages[0] == 0
    assert list(parsed.pages) == sorted(parsed.pages)
    assert parsed.metadata["pages_without_text"] == [3]
    for number, name in ((1, "one"), (2, "two"), (4, "three")):
        at = parsed.text.index(f"{name}word")
        assert parsed.pages[number - 1] <= at
        assert number == len(parsed.pages) or at < parsed.pages[number]

    path = tmp_path / "paged.pdf"
    path.write_bytes(build_pdf(pages))
    doc = load_document(path)
    assert doc.format == "pdf" and doc.pages == parsed.pages
    assert doc.page_range(doc.text.index("threeword"), doc.text.index("threeword") + 9) == (4, 4)
    chunker = StructureChunker(CallableTokenCounter(lambda s: len(s.split())), max_tokens=80)
    chunks = chunker.chunk(doc)
    assert chunks
    for chunk in chunks:
        assert chunk.page_start is not None and chunk.page_end is not None
        for number, name in ((1, "one"), (2, "two"), (4, "three")):
            if f"{name}word" in chunk.text:
                assert chunk.page_start <= number <= chunk.page_end
                at = chunk.text.index(f"{name}word")  # a quote of it cites its own page
                assert chunk.pages_of(at, at + len(name) + 4) == (number, number)
    assert any(c.page_end != c.page_start for c in chunks)  # some chunk spans pages


# --------------------------------------------------------------------------- structure
def test_font_based_headings_levels_and_title() -> None:
    page = Page().text(72, 740, "A Study of Things", size=20, font="F2")
    page.text(72, 700, "Introduction", size=14, font="F2").lines(72, 680, PROSE)
    page.text(72, 620, "Background", size=14, font="F2").lines(72, 600, PROSE)
    page.text(72, 540, "Earlier work", size=12, font="F2").lines(72, 522, PROSE)
    parsed = parse(build_pdf([page]))
    headings = [(b.level, b.title) for b in parsed.blocks if b.kind == "heading"]
    assert headings == [
        (1, "A Study of Things"),
        (2, "Introduction"),
        (2, "Background"),
        (3, "Earlier work"),
    ]
    assert parsed.title == "A Study of Things"


def test_outline_gives_heading_levels_and_info_gives_title() -> None:
    page = Page().text(72, 740, "1 Overview", size=12, font="F2").lines(72, 720, PROSE)
    page.text(72, 660, "1.1 Scope of the work", size=11, font="F2").lines(72, 640, PROSE)
    page2 = Page().text(72, 740, "2 Results", size=12, font="F2").lines(72, 720, PROSE)
    outline = [(0, "Overview", 0, 752), (1, "Scope of the work", 0, 672), (0, "Results", 1, 752)]
    parsed = parse(build_pdf([page, page2], title="The Info Title", outline=outline))
    headings = [(b.level, b.title) for b in parsed.blocks if b.kind == "heading"]
    assert headings == [(1, "1 Overview"), (2, "1.1 Scope of the work"), (1, "2 Results")]
    assert parsed.title == "The Info Title"


def test_a_chapter_label_above_its_title_opens_the_chapter() -> None:
    """Review 42: "Capítulo 5" on a line of its own above the chapter's title was a paragraph
    ending the previous chapter's last section (9 chapters of the maint-guide)."""
    page = Page().text(72, 740, "Capítulo 1", size=14, font="F1")
    page.text(72, 715, "Empezando", size=20, font="F2").lines(72, 690, PROSE)
    page2 = Page().text(72, 740, "Capítulo 2", size=14, font="F1")
    page2.text(72, 715, "Primeros pasos", size=20, font="F2").lines(72, 690, PROSE)
    outline = [(0, "Empezando", 0, 752), (0, "Primeros pasos", 1, 752)]
    parsed = parse(build_pdf([page, page2], outline=outline))
    headings = [b.title for b in parsed.blocks if b.kind == "heading"]
    assert headings == ["Capítulo 1 Empezando", "Capítulo 2 Primeros pasos"]
    assert not any(
        parsed.text[b.start : b.end].startswith("Capítulo")
        for b in parsed.blocks
        if b.kind != "heading"
    )


def test_a_paragraph_ending_in_a_chapter_reference_keeps_it() -> None:
    """Review 44: a paragraph's last wrapped line "Chapter 3." (body font, at the paragraph's
    line pitch) right above a heading was taken for a chapter label and moved into it."""
    page = Page().text(72, 720, "Installation", size=16, font="F2")
    page.lines(
        72,
        690,
        [
            "The installer copies the files and writes the configuration. The options",
            "that control the network setup and the proxy are described in detail in",
            "Chapter 3.",
        ],
    )
    page.text(72, 640, "Upgrading", size=16, font="F2").lines(72, 610, PROSE[:2])
    parsed = parse(build_pdf([page]))
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == [
        "Installation",
        "Upgrading",
    ]
    assert "described in detail in Chapter 3." in parsed.text


def test_a_chapter_label_in_the_body_font_set_apart_by_a_gap_opens_the_chapter() -> None:
    page = Page().lines(72, 740, PROSE[:2]).text(72, 700, "Chapter 2", size=10)
    page.text(72, 675, "Going further", size=20, font="F2").lines(72, 650, PROSE)
    parsed = parse(build_pdf([page]))
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == ["Chapter 2 Going further"]


def test_title_falls_back_to_the_given_title() -> None:
    parsed = parse(build_pdf([Page().lines(72, 700, PROSE)]), fallback="report-2024")
    assert parsed.title == "report-2024"
    assert not [b for b in parsed.blocks if b.kind == "heading"]


def test_code_block_keeps_indentation_and_list_items() -> None:
    page = Page().lines(72, 740, ["Run the program like this:"])
    page.lines(72, 720, ["def main():", "    return 42"], font="F3")
    page.lines(72, 680, ["Then check:"])
    page.lines(72, 660, ["• the output is 42", "• nothing else is printed"])
    parsed = parse(build_pdf([page]))
    assert block_texts(parsed, "code") == ["```\ndef main():\n    return 42\n```"]
    assert block_texts(parsed, "list") == ["- the output is 42\n- nothing else is printed"]


# --------------------------------------------------------------------------- errors
def test_corrupt_inputs_raise_corrupt_file_error() -> None:
    good = build_pdf([Page().lines(72, 700, PROSE)])
    for data, reason in (
        (b"plain text, not a PDF at all", "not a PDF"),
        (good[: len(good) // 2], "truncated"),
        (b"%PDF-1.4\n" + bytes(range(256)) * 4, "damaged"),
    ):
        with pytest.raises(CorruptFileError, match=reason) as info:
            parse(data)
        assert info.value.code == "RS206" and info.value.path == "test.pdf"


def test_an_empty_pdf_is_an_empty_document_as_in_every_format() -> None:
    # RS203 like an empty .md (a new user's run found RS206 for a 0-byte .pdf, 2026-12-03)
    with pytest.raises(EmptyDocumentError, match=r"empty \(0 bytes\)") as info:
        parse(b"")
    assert info.value.code == "RS203"


def test_unloadable_page_raises_corrupt_file_error() -> None:
    good = build_pdf([Page().lines(72, 700, PROSE) for _ in range(3)])
    start = good.index(b"9 0 obj\n") + len(b"9 0 obj\n")  # page 2's dictionary
    end = good.index(b"\nendobj", start)
    damaged = good[:start] + b"(" + b"x" * (end - start - 2) + b")" + good[end:]
    with pytest.raises(CorruptFileError, match=r"1 of its 3 pages cannot be read \(page 2\)"):
        parse(damaged)


def test_encrypted_pdf_raises_encrypted_document_error() -> None:
    with pytest.raises(EncryptedDocumentError, match="password") as info:
        parse(build_pdf([Page().lines(72, 700, PROSE)], encrypt=True))
    assert info.value.code == "RS207"


def test_image_only_pdf_raises_no_text_layer_error() -> None:
    with pytest.raises(NoTextLayerError, match="OCR") as info:
        parse(build_pdf([Page(image=True), Page(image=True)]))
    assert info.value.code == "RS208" and "image-only" in info.value.reason


def test_image_only_page_is_noted_in_metadata() -> None:
    parsed = parse(build_pdf([Page().lines(72, 700, PROSE), Page(image=True)]))
    assert parsed.metadata["pages_without_text"] == [2]
    assert parsed.pages == (0, len(parsed.text))


def test_missing_pypdfium2_raises_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pypdfium2", None)
    with pytest.raises(MissingDependencyError, match=r"ragstrata\[pdf\]"):
        parse(build_pdf([Page().lines(72, 700, PROSE)]))


def test_damaged_files_raise_only_ingest_errors() -> None:
    good = build_pdf([two_column_page(), Page().lines(72, 700, PROSE)], title="t")
    rng = random.Random(1234)
    for _ in range(40):
        data = bytearray(good)
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        cut = rng.choice([len(data), rng.randrange(16, len(data))])
        try:
            parsed = parse(bytes(data[:cut]))
        except IngestError:
            continue
        assert parsed.text == normalize_text(parsed.text)


def _inflating_page(operators: int, chars: int) -> Page:
    """A page whose content stream repeats a text-show operator: ``operators`` text objects of
    ``chars`` characters each (in one BT block, so PDFium keeps every one)."""
    page = Page()
    show = b"(" + b"A" * chars + b") Tj "
    page.ops.append(b"BT /F1 10 Tf 72 700 Td " + show * operators + b"ET")
    return page


def test_a_page_of_too_many_text_operators_is_refused_before_its_text_is_built() -> None:
    # 25,000 Tj of 100 characters: 2.5 M characters, ~500 MB of PDFium text page if built
    data = build_pdf([Page().lines(72, 700, PROSE), _inflating_page(25_000, 100)], compress=True)
    assert len(data) < 50_000  # a few KB on disk, like the hostile files this guards against
    with pytest.raises(ParserLimitError) as info:
        parse(data)
    assert info.value.code == "RS212" and info.value.path == "test.pdf"
    assert "page 2 holds more than 20,000 text objects" in info.value.reason


def test_a_page_over_the_character_cap_is_refused_with_a_reason() -> None:
    data = build_pdf([_inflating_page(100, 3_000)], compress=True)  # 300,000 characters
    with pytest.raises(ParserLimitError, match=r"page 1 holds 300,000 characters, more than"):
        parse(data)


def test_document_caps_on_characters_and_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = [Page().lines(72, 700, PROSE) for _ in range(4)]
    import pypdfium2

    one = pypdfium2.PdfDocument(build_pdf(pages[:1]))
    per_page = one[0].get_textpage().count_chars()  # what the cap counts
    one.close()
    monkeypatch.setattr(pdf_module, "_MAX_CHARS_PER_DOCUMENT", 2 * per_page + 1)
    with pytest.raises(ParserLimitError, match=r"more than [\d,]+ characters \(reached on page 3"):
        parse(build_pdf(pages))
    monkeypatch.setattr(pdf_module, "_MAX_PAGES_PER_DOCUMENT", 3)
    with pytest.raises(ParserLimitError, match="the PDF has 4 pages, more than the 3"):
        parse(build_pdf(pages))


def test_a_hostile_pdf_in_a_batch_costs_only_itself(tmp_path: Path) -> None:
    from ragstrata.ingest.pool import load_many
    from ragstrata.types import Document, IngestFailure

    (tmp_path / "good.pdf").write_bytes(build_pdf([Page().lines(72, 700, PROSE)]))
    (tmp_path / "bomb.pdf").write_bytes(build_pdf([_inflating_page(40_000, 200)], compress=True))
    files = [tmp_path / "bomb.pdf", tmp_path / "good.pdf"]
    bomb, good = load_many(files, max_file_bytes=10**7, workers=1, max_memory_mb=1024)
    assert isinstance(good, Document)
    assert isinstance(bomb, IngestFailure) and bomb.code == "RS212"
    assert "text objects" in bomb.reason  # refused by the cap, not by the memory limit
