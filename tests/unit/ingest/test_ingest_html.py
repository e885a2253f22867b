"""Unit tests of ragstrata.ingest.html: rendering, boilerplate removal, block offsets."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.ingest.html import parse_html
from ragstrata.ingest.html_clean import cap_nesting


def _pieces(html: str) -> list[tuple[str, str]]:
    parsed = parse_html(html, fallback_title="f")
    return [(b.kind, parsed.text[b.start : b.end]) for b in parsed.blocks]


def test_page_fixture(fixtures_dir: Path, check_blocks: Callable[..., None]) -> None:
    raw = (fixtures_dir / "page.html").read_text(encoding="utf-8")
    parsed = parse_html(raw, fallback_title="page")
    check_blocks(parsed.text, parsed.blocks)
    assert parsed.title == "Capítulo 2. Paquetes"
    for boilerplate in (
        "Navegación", "menú principal", "cabecera", "pie de página", "Tabla de contenidos",
        "color: red", "var x",
    ):  # fmt: skip
        assert boilerplate not in parsed.text
    pieces = [(b.kind, parsed.text[b.start : b.end]) for b in parsed.blocks]
    heading = parsed.blocks[0]
    assert (heading.kind, heading.level, heading.title) == ("heading", 1, "Capítulo 2. Paquetes")
    assert pieces[0] == ("heading", "# Capítulo 2. Paquetes")
    assert ("paragraph", "Debian usa apt(8) para gestionar paquetes.") in pieces
    assert ("paragraph", "texto suelto en un div") in pieces
    assert ("paragraph", "Sugerencia") in pieces  # admonition table rendered as its content
    assert ("paragraph", "Use aptitude.") in pieces
    assert (
        "table",
        "| paquete | descripción |\n| --- | --- |\n"
        "| dpkg | gestor de bajo nivel \\| base |\n| apt | interfaz |",
    ) in pieces
    assert ("code", "```\n$ sudo apt update\n# comentario de shell\n```") in pieces
    assert ("list", "- uno\n- dos\n  - anidado") in pieces
    assert ("paragraph", "término") in pieces and ("paragraph", "definición") in pieces
    assert ("quote", "> una cita") in pieces
    assert [b.kind for b in parsed.blocks].count("table") == 1
    assert "\n\n\n" not in parsed.text


def test_table_without_th_uses_first_row() -> None:
    html = "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td></tr></table>"
    assert _pieces(html) == [("table", "| a | b |\n| --- | --- |\n| 1 |  |")]


def test_role_navigation_and_hidden_removed() -> None:
    html = (
        '<div role="navigation">menu</div><div class="breadcrumb">a / b</div>'
        "<p hidden>oculto</p><p>contenido</p>"
    )
    assert _pieces(html) == [("paragraph", "contenido")]


def test_pre_with_backticks_and_language() -> None:
    html = '<pre><code class="language-python">x = "```"\n</code></pre>'
    assert _pieces(html) == [("code", '````python\nx = "```"\n````')]


def test_title_falls_back_to_h1_then_argument() -> None:
    assert parse_html("<h1>Uno</h1><p>x</p>", fallback_title="f").title == "Uno"
    assert parse_html("<p>x</p>", fallback_title="f").title == "f"


def test_empty_page_has_no_blocks() -> None:
    parsed = parse_html(
        "<html><head><title>t</title></head><body> </body></html>", fallback_title="f"
    )
    assert parsed.blocks == ()
    assert parsed.text == ""


_FRAGMENTS = st.sampled_from(
    [
        "<p>", "</p>", "<div>", "</div>", "texto", " ", "\n", "<h2>", "</h2>", "<pre>", "</pre>",
        "<table>", "</table>", "<tr>", "<td>", "<th>", "<ul>", "<li>", "</ul>", "<ol>",
        "<blockquote>", "</blockquote>", "<br>", "<hr>", "<nav>", "</nav>", "a|b", "```",
        "&amp;", "&#0;", "&#x85;", "e\u0301", "<dl><dt>", "<dd>", "<script>", "</script>",
    ]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=50))
def test_blocks_are_valid_property(check_blocks: Callable[..., None], fragments: list[str]) -> None:
    parsed = parse_html("".join(fragments), fallback_title="f")
    check_blocks(parsed.text, parsed.blocks)
    assert "\r" not in parsed.text and "\x00" not in parsed.text


def _nesting(html: str) -> int:
    """Deepest element nesting of well-formed ``html`` (every tag closed)."""
    depth = deepest = 0
    for closing in re.findall(r"<(/?)[a-z]", html):
        depth = depth - 1 if closing else depth + 1
        deepest = max(deepest, depth)
    return deepest


def test_deep_nesting_is_capped_before_the_parser_sees_it() -> None:
    # lexbor's tree builder is quadratic in the nesting: 100,000 <div><span> took minutes
    n = 20_000
    html = "<h1>Deep</h1>" + "<div><span>" * n + "deep text" + "</span></div>" * n + "<p>after</p>"
    capped = cap_nesting(html)
    assert _nesting(html) == 2 * n and _nesting(capped) <= 400
    assert "deep text" in capped
    parsed = parse_html(html, fallback_title="x")
    assert "deep text" in parsed.text and "after" in parsed.text


def test_shallow_and_sloppy_html_is_left_alone() -> None:
    sloppy = "<ul>" + "<li>item" * 5_000 + "</ul>" + "<p>para" * 5_000 + "<br><img src=x>" * 500
    assert cap_nesting(sloppy) is sloppy
    page = "<div>" * 300 + "text" + "</div>" * 300
    assert cap_nesting(page) is page
