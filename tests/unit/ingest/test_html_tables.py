"""Unit tests of ragstrata.ingest.html tables: spans, header rows, cell content, layout tables."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.ingest.html import parse_html

_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _pieces(html: str) -> list[tuple[str, str]]:
    parsed = parse_html(html, fallback_title="f")
    return [(b.kind, parsed.text[b.start : b.end]) for b in parsed.blocks]


def _tables(html: str) -> list[str]:
    return [text for kind, text in _pieces(html) if kind == "table"]


def test_stacked_header_rows_merge_with_colspan_and_rowspan() -> None:
    html = (
        "<table><thead>"
        '<tr><th rowspan="2">Paquete</th><th colspan="2">Popularidad</th>'
        '<th rowspan="2">Tamaño</th></tr>'
        "<tr><th>V</th><th>I</th></tr>"
        "</thead><tbody><tr><td>mc</td><td>54</td><td>226</td><td>1482</td></tr></tbody></table>"
    )
    assert _tables(html) == [
        "| Paquete | Popularidad / V | Popularidad / I | Tamaño |\n"
        "| --- | --- | --- | --- |\n"
        "| mc | 54 | 226 | 1482 |"
    ]


def test_rowspan_repeats_and_body_colspan_leaves_empty_cells() -> None:
    html = (
        "<table><tr><th>a</th><th>b</th><th>c</th></tr>"
        '<tr><td rowspan="2">x</td><td>1</td><td>2</td></tr>'
        "<tr><td>3</td><td>4</td></tr>"
        '<tr><td colspan="3">nota</td></tr></table>'
    )
    assert _tables(html) == [
        "| a | b | c |\n| --- | --- | --- |\n| x | 1 | 2 |\n| x | 3 | 4 |\n| nota |  |  |"
    ]


def test_rowspan_zero_and_overlong_rowspan_stay_in_their_group() -> None:
    html = (
        "<table><thead><tr><th>k</th><th>v</th></tr></thead><tbody>"
        '<tr><td>1</td><td rowspan="0">igual</td></tr><tr><td>2</td></tr></tbody>'
        '<tbody><tr><td rowspan="99">3</td><td>x</td></tr></tbody></table>'
    )
    assert _tables(html) == ["| k | v |\n| --- | --- |\n| 1 | igual |\n| 2 | igual |\n| 3 | x |"]


def test_rowspan_in_a_middle_column() -> None:
    html = (
        "<table><tr><th>a</th><th>b</th><th>c</th></tr>"
        '<tr><td>1</td><td rowspan="2">m</td><td>2</td></tr>'
        "<tr><td>3</td><td>4</td></tr></table>"
    )
    assert _tables(html) == ["| a | b | c |\n| --- | --- | --- |\n| 1 | m | 2 |\n| 3 | m | 4 |"]


def test_leading_th_rows_without_thead_are_the_header() -> None:
    html = (
        '<table><tr><th colspan="2">Red</th></tr><tr><th>orden</th><th>uso</th></tr>'
        "<tr><td>ip</td><td>direcciones</td></tr></table>"
    )
    assert _tables(html) == ["| Red / orden | Red / uso |\n| --- | --- |\n| ip | direcciones |"]


def test_tfoot_is_rendered_last() -> None:
    html = (
        "<table><tfoot><tr><td>total</td><td>3</td></tr></tfoot>"
        "<thead><tr><th>k</th><th>n</th></tr></thead>"
        "<tbody><tr><td>a</td><td>3</td></tr></tbody></table>"
    )
    assert _tables(html) == ["| k | n |\n| --- | --- |\n| a | 3 |\n| total | 3 |"]


def test_block_content_in_cells_is_folded_with_br_and_pipes_escaped() -> None:
    html = (
        "<table><tr><th>orden</th><th>notas</th></tr><tr>"
        "<td><code>a | b</code></td>"
        "<td><p>uno</p><p>dos<br>tres</p><ul><li>x</li><li>y|z</li></ul>"
        "<pre>l1\n  l2</pre><ol><li>p</li></ol></td>"
        "</tr></table>"
    )
    assert _tables(html) == [
        "| orden | notas |\n| --- | --- |\n"
        "| a \\| b | uno<br>dos<br>tres<br>- x<br>- y\\|z<br>l1<br>l2<br>1. p |"
    ]


def test_nested_table_makes_the_outer_one_a_layout_table() -> None:
    html = (
        "<table><tr><td><p>intro</p>"
        "<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "</td><td>lado</td></tr></table>"
    )
    assert _pieces(html) == [
        ("paragraph", "intro"),
        ("table", "| k | v |\n| --- | --- |\n| 1 | 2 |"),
        ("paragraph", "lado"),
    ]


def test_single_cell_and_presentation_tables_are_layout() -> None:
    html = (
        "<table><tr><td>un recuadro</td></tr></table>"
        '<table role="presentation"><tr><td>a</td><td>b</td></tr></table>'
    )
    assert _pieces(html) == [("paragraph", "un recuadro"), ("paragraph", "a"), ("paragraph", "b")]


def test_docbook_admonition_and_navigation_tables() -> None:
    html = (
        '<div class="navheader"><table summary="Navigation header"><tr><th colspan="3">'
        "Capítulo 3</th></tr><tr><td><a href='ch02.html'><img alt='Anterior'></a></td>"
        "<td>&nbsp;</td><td><a href='ch04.html'>Siguiente</a></td></tr></table><hr></div>"
        '<div class="note"><table border="0" summary="Note"><tr>'
        '<td rowspan="2"><img alt="[Nota]"></td><th>Nota</th></tr>'
        "<tr><td><p>Texto de la nota.</p></td></tr></table></div>"
        '<div class="table"><p class="title"><b>Tabla 3.1. Cargadores</b></p>'
        '<div class="table-contents"><table summary="Cargadores" border="1">'
        "<thead><tr><th>paquete</th><th>descripción</th></tr></thead>"
        "<tbody><tr><td>grub-efi</td><td>GRUB <code>2</code> | EFI</td></tr></tbody>"
        "</table></div></div>"
        '<div class="navfooter"><table summary="Navigation footer"><tr>'
        "<td>Capítulo 2</td><td><a href='index.html'>Inicio</a></td></tr></table></div>"
    )
    assert _pieces(html) == [
        ("paragraph", "Nota"),
        ("paragraph", "Texto de la nota."),
        ("paragraph", "Tabla 3.1. Cargadores"),
        ("table", "| paquete | descripción |\n| --- | --- |\n| grub-efi | GRUB 2 \\| EFI |"),
    ]


def test_caption_precedes_the_table() -> None:
    html = "<table><caption>Puertos</caption><tr><th>n</th></tr><tr><td>22</td></tr></table>"
    assert _pieces(html) == [("paragraph", "Puertos"), ("table", "| n |\n| --- |\n| 22 |")]


def test_a_table_of_labelled_rows_is_a_record_not_a_header_and_rows() -> None:
    """Trial 24 (2026-12-06): a server's record (each row a ``th`` label and a value, as in
    Confluence's Page Properties) became a pipe table under its first row, and `ask`
    answered "Sistema operativo: Memoria; Debian 12: 64 GB"."""
    html = (
        "<table><tr><th>Sistema operativo</th><td>Debian 12</td></tr>"
        "<tr><th>Memoria:</th><td>64 GB</td></tr>"
        "<tr><th>Discos</th><td>2 × 1 TB<br>RAID 1</td><td>SSD</td></tr></table>"
    )
    assert _pieces(html) == [
        (
            "list",
            "- Sistema operativo: Debian 12\n- Memoria: 64 GB\n- Discos: 2 × 1 TB; RAID 1; SSD",
        )
    ]
    # a header row over labelled rows is a table, as before
    both = (
        "<table><tr><th></th><th>db-01</th><th>db-02</th></tr>"
        "<tr><th>Memoria</th><td>64 GB</td><td>32 GB</td></tr></table>"
    )
    assert _tables(both) == [
        "|  | db-01 | db-02 |\n| --- | --- | --- |\n| Memoria | 64 GB | 32 GB |"
    ]


def test_empty_rows_are_dropped_and_short_rows_padded() -> None:
    html = (
        "<table><tr><th>a</th><th>b</th><th>c</th></tr><tr><td> </td><td></td></tr>"
        "<tr><td>1</td></tr></table>"
    )
    assert _tables(html) == ["| a | b | c |\n| --- | --- | --- |\n| 1 |  |  |"]


def test_huge_colspan_is_capped() -> None:
    html = '<table><tr><th colspan="100000">x</th></tr><tr><td>1</td></tr></table>'
    (table,) = _tables(html)
    assert table.split("\n")[1].count("---") == 100


_CELL_TEXT = st.sampled_from(["a", "b|c", "x<br>y", "<p>p</p><p>q</p>", "", "<ul><li>i</li></ul>"])
_SPAN = st.sampled_from(["", ' colspan="2"', ' rowspan="2"', ' rowspan="0"', ' colspan="3"'])


@st.composite
def _random_table(draw: st.DrawFn) -> str:
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        cells = []
        for _ in range(draw(st.integers(1, 4))):
            tag = draw(st.sampled_from(["td", "th"]))
            cells.append(f"<{tag}{draw(_SPAN)}>{draw(_CELL_TEXT)}</{tag}>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = draw(st.sampled_from(["", "<thead><tr><th>h1</th><th>h2</th></tr></thead>"]))
    return f"<table>{head}<tbody>{''.join(rows)}</tbody></table>"


@settings(max_examples=150, deadline=None)
@given(_random_table())
def test_pipe_tables_are_rectangular_property(check_blocks: Callable[..., None], html: str) -> None:
    parsed = parse_html(html, fallback_title="f")
    check_blocks(parsed.text, parsed.blocks)
    for block in parsed.blocks:
        if block.kind != "table":
            continue
        lines = parsed.text[block.start : block.end].split("\n")
        assert len(lines) >= 2
        assert re.fullmatch(r"\|( --- \|)+", lines[1])
        widths = {len(_UNESCAPED_PIPE.findall(line)) for line in lines}
        assert len(widths) == 1, lines
