"""Unit tests of ragstrata.ingest.markdown: block kinds, offsets, titles, front matter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.ingest.markdown import clean_heading_title, parse_markdown
from ragstrata.ingest.text import normalize_text
from ragstrata.types import Block


def _pieces(text: str, blocks: tuple[Block, ...]) -> list[tuple[str, str]]:
    return [(b.kind, text[b.start : b.end]) for b in blocks]


def test_mdx_sample(fixtures_dir: Path, check_blocks: Callable[..., None]) -> None:
    text = (fixtures_dir / "mdx_sample.md").read_text(encoding="utf-8")
    parsed = parse_markdown(text, fallback_title="mdx_sample")
    check_blocks(text, parsed.blocks)
    assert parsed.text == text
    assert parsed.title == "useState"
    assert parsed.metadata == {"title": "useState", "description": "Un Hook de React"}
    pieces = _pieces(text, parsed.blocks)
    assert pieces[0] == ("html", "<Intro>")  # front matter is not a block
    headings = [b for b in parsed.blocks if b.kind == "heading"]
    assert [(h.level, h.title) for h in headings] == [(2, "Añadir estado"), (2, "Título setext")]
    assert ("heading", "Título setext\n-------------") in pieces
    code = [p for k, p in pieces if k == "code"]
    assert code == ["```js\n# not a heading\n\nexport default function App() {}\n```"]
    assert ("html", "<Sandpack>") in pieces and ("html", "</Sandpack>") in pieces
    assert ("table", "| Nombre | Valor |\n| ------ | ----- |\n| a      | 1     |") in pieces
    assert ("list", "- uno\n- dos\n  - anidado") in pieces
    assert ("quote", "> cita") in pieces
    assert ("rule", "***") in pieces
    assert ("paragraph", "[ref]: /learn/state") in pieces  # reference definition kept
    assert ("paragraph", "/// tip\nConsejo de FastAPI.\n///") in pieces
    assert pieces[-1] == ("paragraph", "{* ../../docs_src/first_steps/tutorial001.py hl[3] *}")


def test_hash_inside_fence_is_not_heading() -> None:
    text = "```bash\n# comment\n## another\n```\n\n~~~\n# tilde\n~~~\n"
    parsed = parse_markdown(text)
    assert [b.kind for b in parsed.blocks] == ["code", "code"]


def test_component_wrapping_fence_not_split() -> None:
    text = "<Sandpack>\n```js\n# uno\n\n# dos\n```\n</Sandpack>\n"
    parsed = parse_markdown(text)
    assert _pieces(text, parsed.blocks) == [
        ("html", "<Sandpack>"),
        ("code", "```js\n# uno\n\n# dos\n```"),
        ("html", "</Sandpack>"),
    ]


def test_html_comment_block_keeps_fence_inside() -> None:
    text = "<!--\n```\n# x\n\n```\n-->\n\nafter\n"
    parsed = parse_markdown(text)
    assert [b.kind for b in parsed.blocks] == ["html", "paragraph"]


def test_indented_code_block() -> None:
    text = "intro\n\n    code line\n    # more\n\nend\n"
    parsed = parse_markdown(text)
    assert _pieces(text, parsed.blocks) == [
        ("paragraph", "intro"),
        ("code", "code line\n    # more"),
        ("paragraph", "end"),
    ]


def test_title_precedence() -> None:
    assert parse_markdown("# Uno {/*one*/}\n\n# Dos\n", fallback_title="stem").title == "Uno"
    assert parse_markdown("## Dos\n\ntexto\n", fallback_title="stem").title == "stem"
    assert parse_markdown("---\ntitle: FM\n---\n# H1\n").title == "FM"


def test_heading_titles_are_cleaned() -> None:
    assert clean_heading_title("Añadir estado {/*adding-state*/}") == "Añadir estado"
    assert clean_heading_title("First Steps { #first-steps }") == "First Steps"
    text = "### `useState(x)` y **más** {/**odd*/} {/*b*/}\n## Path { #path-params }\n"
    titles = [b.title for b in parse_markdown(text).blocks]
    assert titles == ["useState(x) y más", "Path"]


def test_invalid_front_matter_is_tolerated(check_blocks: Callable[..., None]) -> None:
    text = "---\ntitle: [unclosed\n: :\n---\n\n# Real\n"
    parsed = parse_markdown(text, fallback_title="x")
    assert parsed.metadata == {}
    assert parsed.title == "Real"
    check_blocks(text, parsed.blocks)


def test_non_mapping_front_matter() -> None:
    parsed = parse_markdown("---\n- a\n- b\n---\ntext\n")
    assert parsed.metadata == {}
    assert [b.kind for b in parsed.blocks] == ["paragraph"]


def test_crlf_and_lf_give_identical_blocks(fixtures_dir: Path) -> None:
    lf = (fixtures_dir / "mdx_sample.md").read_text(encoding="utf-8")
    crlf_normalized = normalize_text(lf.replace("\n", "\r\n"))
    assert crlf_normalized == lf
    assert parse_markdown(crlf_normalized).blocks == parse_markdown(lf).blocks


def test_raw_crlf_offsets_stay_valid(check_blocks: Callable[..., None]) -> None:
    text = "# T\r\n\r\npara\rline\r\n\r\n```\r\n# c\r\n```\r\n"
    parsed = parse_markdown(text)
    check_blocks(text, parsed.blocks)
    assert [b.kind for b in parsed.blocks] == ["heading", "paragraph", "code"]


def test_empty_and_whitespace() -> None:
    assert parse_markdown("").blocks == ()
    assert parse_markdown(" \n\n\t\n").blocks == ()
    assert parse_markdown("---\ntitle: t\n---\n").blocks == ()


_LINES = st.sampled_from(
    [
        "", "", "texto", "  sangrado", "    código indentado", "# Título {/*id*/}", "## H2",
        "Setext", "===", "---", "***", "```", "```js", "~~~", "- item", "  - sub", "1. uno",
        "> cita", ">", "| a | b |", "|---|---|", "| 1 | 2 |", "<Sandpack>", "</Sandpack>",
        "<div>", "</div>", "<!--", "-->", "[ref]: /url", "/// tip", "///", "{* x.py hl[3] *}",
        "\t tab", "* star", "+ plus", "<Intro />", "\u00a0", "ñ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=40), st.booleans())
def test_blocks_cover_document_property(
    check_blocks: Callable[..., None], lines: list[str], front: bool
) -> None:
    text = "\n".join(lines)
    if front:
        text = "---\ntitle: t\n---\n" + text
    parsed = parse_markdown(text)
    check_blocks(text, parsed.blocks)
    for block in parsed.blocks:
        if block.kind == "heading":
            assert "{/*" not in block.title


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_property(check_blocks: Callable[..., None], raw: str) -> None:
    text = normalize_text(raw)
    check_blocks(text, parse_markdown(text).blocks)


def test_front_matter_version_keeps_its_text() -> None:
    from ragstrata.assemble.context import version_key
    from ragstrata.ingest.markdown import parse_markdown

    new = parse_markdown("---\nversion: 1.10\nweight: 1.5\n---\n# T\n\nBody.\n").metadata
    old = parse_markdown("---\nversion: 1.9\n---\n# T\n\nBody.\n").metadata
    assert new["version"] == "1.10" and new["weight"] == 1.5
    assert version_key(new["version"]) > version_key(old["version"])


def test_code_in_a_list_item_is_a_code_block_of_its_own() -> None:
    """Review 42: a fenced code block in a list item was part of the list block, which the
    chunker splits by lines, so a block that fitted one chunk was cut in two."""
    text = (
        "1. Instale:\n\n   ```bash\n   sudo apt install nginx\n   ```\n\n"
        "2. Compruebe:\n\n       systemctl status nginx\n\n"
        "- ```js\n  f();\n  ```\n- fin\n"
    )
    parsed = parse_markdown(text)
    assert _pieces(text, parsed.blocks) == [
        ("list", "1. Instale:"),
        ("code", "```bash\n   sudo apt install nginx\n   ```"),
        ("list", "2. Compruebe:"),
        ("code", "systemctl status nginx"),
        ("list", "-"),  # the item's marker stays list text; the fence starts at its backticks
        ("code", "```js\n  f();\n  ```"),
        ("list", "- fin"),
    ]


def test_code_in_a_quote_is_a_code_block_with_its_markers() -> None:
    """Review 42: a code block in a quote was quote text, split by lines."""
    text = "> Nota:\n>\n> ```bash\n> ls\n> ```\n>\n> Fin.\n"
    assert _pieces(text, parse_markdown(text).blocks) == [
        ("quote", "> Nota:\n>"),
        ("code", "> ```bash\n> ls\n> ```"),
        ("quote", ">\n> Fin."),
    ]
