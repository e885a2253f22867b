"""Unit tests of ragstrata.ingest.html: cleaning, hidden content, code languages, task lists,
heading levels and the HtmlRenderer used by the Confluence parser."""

from __future__ import annotations

import unicodedata

from selectolax.lexbor import LexborHTMLParser

from ragstrata.ingest.html import HtmlRenderer, parse_html


def _pieces(html: str) -> list[tuple[str, str]]:
    parsed = parse_html(html, fallback_title="f")
    return [(b.kind, parsed.text[b.start : b.end]) for b in parsed.blocks]


def test_text_is_nfc_without_controls_or_invisible_characters() -> None:
    html = (
        "<h2>Configuracio\u0301n</h2>"
        "<p>lat\u200bencia\u00a0\u00a0alta&#7; y re\u00adcu\u2060pe\ufeffración\x0b</p>"
        "<pre>cafe\u0301 = 1</pre>"
    )
    parsed = parse_html(html, fallback_title="f")
    assert _pieces(html) == [
        ("heading", "## Configuración"),
        ("paragraph", "latencia alta y recuperación"),
        ("code", "```\ncafé = 1\n```"),
    ]
    assert parsed.blocks[0].title == "Configuración"
    assert unicodedata.is_normalized("NFC", parsed.text)


def test_inline_hidden_styles_are_dropped() -> None:
    html = (
        '<p>visible<span style="display:none">oculto</span></p>'
        '<div style="color: red; visibility: hidden">invisible</div>'
        '<div style="display: block">bloque</div>'
    )
    assert _pieces(html) == [("paragraph", "visible"), ("paragraph", "bloque")]


def test_syntaxhighlighter_brush_gives_the_language() -> None:
    html = (
        '<pre class="syntaxhighlighter-pre" data-syntaxhighlighter-params='
        '"brush: bash; gutter: false; theme: Confluence">ls -l</pre>'
        '<pre data-syntaxhighlighter-params="brush: text; gutter: false">plano</pre>'
        '<pre class="brush: sql;">SELECT 1;</pre>'
    )
    assert _pieces(html) == [
        ("code", "```bash\nls -l\n```"),
        ("code", "```\nplano\n```"),
        ("code", "```sql\nSELECT 1;\n```"),
    ]


def test_task_lists_get_checkboxes() -> None:
    html = (
        '<ul class="inline-task-list"><li class="checked">hecho</li><li>pendiente</li></ul>'
        '<ul><li><input type="checkbox" checked> sí</li><li><input type="checkbox"> no</li>'
        "<li>normal</li></ul>"
    )
    assert _pieces(html) == [
        ("list", "- [x] hecho\n- [ ] pendiente"),
        ("list", "- [x] sí\n- [ ] no\n- normal"),
    ]


def test_toc_macro_is_boilerplate() -> None:
    html = (
        "<div class='toc-macro rbtoc1'><ul><li><a href='#a'>Uno</a></li></ul></div>"
        "<h1>Uno</h1><p>texto</p>"
    )
    assert _pieces(html) == [("heading", "# Uno"), ("paragraph", "texto")]


def test_renderer_prepends_headings_and_relevels_the_page() -> None:
    tree = LexborHTMLParser("<div id='c'><h1>Sección</h1><p>a</p><h3>Sub</h3><p>b</p></div>")
    node = tree.css_first("#c")
    assert node is not None
    renderer = HtmlRenderer(heading_levels={1: 3, 3: 4})
    renderer.heading("Espacio", 1)
    renderer.heading("  Página  ", 2)
    renderer.heading("", 3)  # nothing written
    renderer.heading("Demasiado hondo", 9)  # clamped to 6
    renderer.render(node)
    text = renderer.text
    got = [(b.kind, b.level, b.title, text[b.start : b.end]) for b in renderer.blocks]
    assert got == [
        ("heading", 1, "Espacio", "# Espacio"),
        ("heading", 2, "Página", "## Página"),
        ("heading", 6, "Demasiado hondo", "###### Demasiado hondo"),
        ("heading", 3, "Sección", "### Sección"),
        ("paragraph", 0, "", "a"),
        ("heading", 4, "Sub", "#### Sub"),
        ("paragraph", 0, "", "b"),
    ]


def test_xhtml_self_closing_anchors_do_not_swallow_what_follows() -> None:
    """DocBook (the Debian reference) puts ``<a id="..."/>`` before every heading; an HTML
    parser reads it as an open ``<a>``, and the ordered list after it came out "- first",
    "1. second" (a new user's run). Void elements keep their self-closing form."""
    html = (
        '<html><body><h3 class="title"><a id="_the_reconfiguration"/>8.1.2 Reconfig</h3>'
        "<p>Este proceso consta de 2 pasos.</p><ol><li><p>Select the locales.</p></li>"
        "<li><p>Set the default.</p></li></ol><p>Fin<br/>línea</p></body></html>"
    )
    text = parse_html(html, fallback_title="x").text
    assert "1. Select the locales.\n2. Set the default." in text
    assert "Fin\nlínea" in text


def test_code_in_a_list_item_follows_its_step_as_a_code_block() -> None:
    """The Debian reference's steps hold their command in a ``<pre>``: it was folded into the
    step's line ("... como se muestra. localname @ localhost $ ssh -q -X ... Password:")."""
    html = (
        "<ol><li><p>Ejecute ssh(1) con la opción -X como se muestra.</p>"
        '<pre class="screen">$ ssh -q -X login@remote\nPassword:</pre></li>'
        "<li><p>Ejecute gitk.</p><ul><li>nested</li></ul></li></ol>"
    )
    assert parse_html(html, fallback_title="x").text == (
        "1. Ejecute ssh(1) con la opción -X como se muestra.\n"
        "```\n$ ssh -q -X login@remote\nPassword:\n```\n"
        "2. Ejecute gitk.\n  - nested"
    )
