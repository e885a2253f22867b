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
    parsed = parse_html(html, fallback_title="x")
    assert parsed.text == (
        "1. Ejecute ssh(1) con la opción -X como se muestra.\n\n"
        "```\n$ ssh -q -X login@remote\nPassword:\n```\n\n"
        "2. Ejecute gitk.\n  - nested"
    )
    assert [b.kind for b in parsed.blocks] == ["list", "code", "list"]  # code kept whole


def test_code_and_tables_nested_in_a_list_item_are_blocks_under_its_line() -> None:
    """Review 42: Sphinx wraps a ``pre`` in ``div``s (``<div class="highlight-bash"><div
    class="highlight"><pre>``), and an item's ``table`` is no direct child either; both were
    folded into the item's line ("Instale: sudo apt install nginx sudo systemctl ...")."""
    html = (
        "<ol><li><p>Instale:</p><div class='highlight-bash notranslate'><div class='highlight'>"
        "<pre><span></span>sudo<span> </span>apt install nginx\nsudo systemctl enable nginx\n"
        "</pre></div></div></li>"
        "<li><p>Puertos:</p><div><table><thead><tr><th>Puerto</th><th>Servicio</th></tr></thead>"
        "<tbody><tr><td>80</td><td>HTTP</td></tr></tbody></table></div>"
        "<ul><li>sub<div><pre>no es del paso 2</pre></div></li></ul></li></ol>"
        "<div class='highlight-default'><div class='highlight'><pre>x = 1</pre></div></div>"
    )
    parsed = parse_html(html, fallback_title="x")
    assert [(b.kind, parsed.text[b.start : b.end]) for b in parsed.blocks] == [
        ("list", "1. Instale:"),
        ("code", "```bash\nsudo apt install nginx\nsudo systemctl enable nginx\n```"),
        ("list", "2. Puertos:"),
        ("table", "| Puerto | Servicio |\n| --- | --- |\n| 80 | HTTP |"),
        ("list", "- sub"),  # a block has no surrounding white space: its indent goes
        ("code", "```\nno es del paso 2\n```"),
        ("code", "```\nx = 1\n```"),  # highlight-default names no language
    ]


def test_githubs_highlight_scope_names_the_language() -> None:
    """Review 44: GitHub's ``highlight-source-shell`` was read as the language "source-shell"."""
    html = (
        "<h1>Readme</h1><div class='highlight highlight-source-shell notranslate'>"
        "<pre>pip install acme</pre></div>"
        "<div class='highlight highlight-text-html-basic'><pre>&lt;b&gt;x&lt;/b&gt;</pre></div>"
    )
    fences = [text.split("\n")[0] for kind, text in _pieces(html) if kind == "code"]
    assert fences == ["```shell", "```html"]


def test_an_articles_header_is_content_and_a_sites_header_is_not() -> None:
    """Review 32: every ``header`` was dropped, and with an article's the page's h1 and lead."""
    html = (
        "<body><header><p>Mi Sitio · Inicio · Blog</p></header>"
        "<article><header><h1>Cómo migrar a PostgreSQL 16</h1>"
        "<p>Guía paso a paso para equipos pequeños.</p></header>"
        "<h2>Requisitos</h2><p>Necesita acceso de superusuario.</p></article></body>"
    )
    parsed = parse_html(html, fallback_title="f")
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == [
        "Cómo migrar a PostgreSQL 16",
        "Requisitos",
    ]
    assert "Guía paso a paso" in parsed.text and "Mi Sitio" not in parsed.text


def test_only_the_main_element_is_rendered_and_consent_banners_are_dropped() -> None:
    """Review 32: a cookie banner and a sidebar menu were a page's first chunk."""
    html = (
        '<body><div id="cookie-banner" class="cookie-consent"><p>Utilizamos cookies propias '
        "y de terceros. Aceptar todas</p></div>"
        '<div class="sidebar"><ul><li>Instalación</li><li>Configuración</li></ul></div>'
        "<main><h1>Configurar el proxy</h1><p>Edite el archivo /etc/proxy.conf.</p></main>"
        "</body>"
    )
    assert _pieces(html) == [
        ("heading", "# Configurar el proxy"),
        ("paragraph", "Edite el archivo /etc/proxy.conf."),
    ]
    # no main element (or two): the body, consent banners and sidebars still dropped
    no_main = html.replace("<main>", "<div>").replace("</main>", "</div>")
    assert _pieces(no_main) == _pieces(html)
    two = "<body><main><p>uno</p></main><main><p>dos</p></main></body>"
    assert [text for _, text in _pieces(two)] == ["uno", "dos"]
    # a section whose id comes from its title is no banner
    privacy = (
        '<section id="consentimiento-informado"><h2 id="gdpr">GDPR</h2><p>Texto.</p></section>'
        '<div id="CybotCookiebotDialog"><p>Aceptar</p></div>'
    )
    assert [text for _, text in _pieces(privacy)] == ["## GDPR", "Texto."]


def test_code_lines_written_as_br_or_one_element_per_line_stay_lines() -> None:
    """Review 32: ``<pre>`` lines written with ``<br>`` or ``<div>`` ran together."""
    html = (
        "<pre>sudo apt update<br>sudo apt install nginx<br/>systemctl status nginx</pre>"
        "<pre><div>make</div><div>make install</div></pre>"
        '<pre><span class="l">x = 1\n</span><span class="l">y = 2</span></pre>'
    )
    assert [text for _, text in _pieces(html)] == [
        "```\nsudo apt update\nsudo apt install nginx\nsystemctl status nginx\n```",
        "```\nmake\nmake install\n```",
        "```\nx = 1\ny = 2\n```",
    ]


def test_ordered_lists_keep_their_start_and_values() -> None:
    """Review 32: ``<ol start="3">`` was numbered from 1: a procedure split by a code block
    read as two step 1s."""
    html = (
        "<ol><li>Descargue.</li><li>Descomprima.</li></ol><pre>tar xf a.tgz</pre>"
        '<ol start="3"><li>Ejecute el instalador.</li><li>Reinicie.</li></ol>'
        '<ol><li value="7">Paso siete</li><li>Paso ocho</li></ol><ol start="x"><li>Uno</li></ol>'
    )
    lists = [text for kind, text in _pieces(html) if kind == "list"]
    assert lists == [
        "1. Descargue.\n2. Descomprima.",
        "3. Ejecute el instalador.\n4. Reinicie.",
        "7. Paso siete\n8. Paso ocho",
        "1. Uno",
    ]


def test_an_unclosed_heading_does_not_swallow_the_page() -> None:
    """Trial 48: ``<h1>Copias de seguridad<p>...`` without ``</h1>`` made the paragraph and the
    table part of a 150-character heading, and the answer could not quote the 02:00."""
    html = (
        "<h1>Copias de seguridad<p>Las copias se hacen a las 02:00.</p>"
        "<table><tr><th>tipo</th><th>retención</th></tr><tr><td>diaria</td><td>35 días</td>"
        "</tr></table><h2>Restauración</h2><p>Abre un ticket.</p>"
    )
    parsed = parse_html(html, fallback_title="f")
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == [
        "Copias de seguridad",
        "Restauración",
    ]
    kinds = [kind for kind, _ in _pieces(html)]
    assert kinds == ["heading", "paragraph", "table", "heading", "paragraph"], _pieces(html)
    assert ("paragraph", "Las copias se hacen a las 02:00.") in _pieces(html)
    # a title wrapped in a block, or with inline markup only, is the heading's whole text
    assert _pieces("<h2><div>Título <b>envuelto</b></div></h2><p>Texto.</p>")[0] == (
        "heading",
        "## Título envuelto",
    )
    assert _pieces("<h2>API <code>get()</code> v2</h2><p>Texto.</p>")[0] == (
        "heading",
        "## API get() v2",
    )
