"""HTML parser: raw HTML -> a markdown-like text that this module writes, with block offsets.

The DOM (selectolax/lexbor) is walked once; every structural element is appended to the
output text as one block and its offsets are recorded as it is written, so
``text[b.start:b.end]`` is the block's rendering by construction. Blocks are separated by
one blank line. Rendering:

* ``h1``-``h6`` -> ``"## Title"`` (heading block, ``level``/``title`` set);
* ``p``, ``div``, ``dt``, ``dd`` and bare text -> paragraph (inline text, whitespace collapsed);
* ``pre`` -> fenced code block (the fence is longer than any backtick run in the content; the
  language comes from a ``language-*``/``lang-*`` class, a SyntaxHighlighter ``brush: name``
  parameter, as Confluence's code macro writes it, or a wrapper's Sphinx ``highlight-name``);
* ``table`` -> GFM pipe table (see :func:`~ragstrata.ingest.html_tables.render_table`); a
  table whose every row starts with a ``th`` label and has data cells is a record, rendered as
  a list of ``- label: value`` lines (:func:`~ragstrata.ingest.html_tables.key_value_lines`);
  layout tables (DocBook admonitions, ``role="presentation"``, a single cell, a nested table or
  a heading in a cell) are rendered as their content instead;
* ``ul``/``ol`` -> a list block of ``- item`` / ``1. item`` lines (nested lists indented;
  task-list items get ``[ ]``/``[x]``); a ``pre`` or ``table`` anywhere inside an item follows
  the item's line as a code or table block of its own
  (:func:`~ragstrata.ingest.html_tables.list_blocks`);
* ``blockquote`` -> quote block with ``> `` prefixes; ``hr`` -> rule ``---``.

A page with one ``<main>`` (or ``role="main"``) element is that element: what is outside it
is not rendered. Boilerplate is dropped: ``script``, ``style``, ``nav``, ``footer``, ``head``,
``template``, a ``header`` outside ``article``/``main``/``section`` (inside one it holds the
page's title), hidden elements (``hidden``, ``aria-hidden="true"``, inline ``display: none`` or
``visibility: hidden``), ARIA navigation/banner/contentinfo/search/dialog roles, navigation
classes (DocBook ``navheader``/``navfooter``, tables of contents ``toc``/``toc-macro`` and lists
of tables/figures, ``breadcrumb``, ``sidebar``...) and cookie or consent banners (a class or id
with ``cookie``, ``consent`` or ``gdpr``). Text in no recognised element is kept as paragraphs.

Cleaning: every block goes through :func:`~ragstrata.ingest.text.normalize_text` (Unicode NFC,
LF line ends, control characters removed); inline whitespace runs (NBSP included) become one
space; invisible format characters (zero-width space, soft hyphen, word joiner, BOM) are removed
outside code blocks.

This module holds the renderer (:class:`HtmlRenderer`) and the entry point (:func:`parse_html`);
the nesting guard, the boilerplate rules and the text cleaning are in
:mod:`ragstrata.ingest.html_clean`, the pipe tables and lists in
:mod:`ragstrata.ingest.html_tables`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser

from ragstrata.ingest.html_clean import (
    BLOCK_TAGS,
    HEADING_LEVEL,
    MAX_DEPTH,
    ancestors,
    cap_nesting_counted,
    close_self_closing,
    code_block,
    collapse,
    flat_text,
    is_boilerplate,
    node_children,
)
from ragstrata.ingest.html_tables import (
    is_layout_table,
    list_blocks,
    row_groups,
    table_parts,
)
from ragstrata.ingest.text import ParsedText, normalize_text
from ragstrata.types import Block, BlockKind, IngestWarning

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

__all__ = ["HtmlRenderer", "parse_html"]

_SPACE_RE = re.compile(r"\s+")


class HtmlRenderer:
    """Renders DOM subtrees as the markdown-like text of this module and records its blocks.

    Blocks are appended in call order, separated by one blank line; ``text[b.start:b.end]``
    is each block's rendering. ``heading_levels`` maps a source heading level (1-6, from
    ``h1``-``h6``) to the level written (levels not in the mapping are kept); callers that
    prepend their own headings with :meth:`heading` use it to nest the page's headings below
    them (see :mod:`ragstrata.ingest.confluence`).
    """

    def __init__(self, *, heading_levels: Mapping[int, int] | None = None) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._blocks: list[Block] = []
        self._inline: list[str] = []
        self._levels = dict(heading_levels or {})

    # -- public API --------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The text written so far."""
        return "".join(self._parts)

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The blocks written so far, in text order."""
        return tuple(self._blocks)

    def heading(self, title: str, level: int) -> None:
        """Append ``"#" * level + " " + title`` as a heading block (``level`` clamped to 1-6;
        an empty title writes nothing)."""
        self._flush()
        title = normalize_text(collapse(title))
        level = min(max(level, 1), 6)
        if title:
            self._add("heading", "#" * level + " " + title, level=level, title=title)

    def render(self, node: LexborNode) -> None:
        """Render ``node``'s children (not ``node``'s own tag), then end the open paragraph."""
        self._walk(node, 0)
        self._flush()

    # -- output ------------------------------------------------------------------------------

    def _add(self, kind: BlockKind, content: str, *, level: int = 0, title: str = "") -> None:
        """Append ``content`` (normalized and trimmed) as one block; empty content is dropped."""
        content = normalize_text(content).strip()
        if not content:
            return
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        start = self._length
        self._parts.append(content)
        self._length += len(content)
        self._blocks.append(
            Block(kind=kind, start=start, end=self._length, level=level, title=title)
        )

    def _flush(self) -> None:
        """Emit the pending inline text as a paragraph (lines trimmed, blank lines dropped)."""
        if not self._inline:
            return
        raw = "".join(self._inline)
        self._inline.clear()
        lines = (collapse(line) for line in raw.split("\n"))
        self._add("paragraph", "\n".join(line for line in lines if line))

    # -- walking -----------------------------------------------------------------------------

    def _walk(self, node: LexborNode, depth: int) -> None:
        for child in node_children(node):
            self._visit(child, depth + 1)

    def _visit(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if tag == "-text":
            self._inline.append(_SPACE_RE.sub(" ", node.text_content or ""))
            return
        if not tag or is_boilerplate(node, tag):
            return
        if depth > MAX_DEPTH:
            self._inline.append(" " + flat_text(node) + " ")
            return
        if tag in HEADING_LEVEL:
            level = HEADING_LEVEL[tag]
            title, body = _heading_parts(node)
            self.heading(title, self._levels.get(level, level))
            for child in body:  # blocks an unclosed heading swallowed, as the page's text
                self._visit(child, depth + 1)
            self._flush()
        elif tag == "pre":
            self._flush()
            self._add_code(node)
        elif tag == "table":
            self._flush()
            self._add_table(node, depth)
        elif tag in ("ul", "ol"):
            self._flush()
            for kind, content in list_blocks(node):
                self._add(kind, content)
        elif tag == "blockquote":
            self._flush()
            inner = HtmlRenderer(heading_levels=self._levels)
            inner._walk(node, depth)
            inner._flush()
            quoted = (("> " + line) if line else ">" for line in inner.text.split("\n"))
            self._add("quote", "\n".join(quoted))
        elif tag == "hr":
            self._flush()
            self._add("rule", "---")
        elif tag == "br":
            self._inline.append("\n")
        elif tag in BLOCK_TAGS:
            self._flush()
            self._walk(node, depth)
            self._flush()
        else:  # inline element: a, span, code, em, strong, ...
            self._walk(node, depth)

    def _add_code(self, node: LexborNode) -> None:
        block = code_block(node)
        if block:
            self._add("code", block)

    def _add_table(self, node: LexborNode, depth: int) -> None:
        groups = row_groups(node)
        if is_layout_table(node, groups):
            self._walk(node, depth)
            self._flush()
            return
        for kind, text in table_parts(node, groups):
            self._add(kind, text)


def _main(tree: LexborHTMLParser) -> LexborNode | None:
    """The page's one main content element (``<main>`` or ``role="main"``, the outermost when
    nested), or ``None`` when it has none or several: what is outside it (sidebars, banners,
    site menus without a ``nav``) is no content (review 32)."""
    found = tree.css("main, [role=main]")
    outer = [n for n in found if not any(p in found for p in ancestors(n))]
    return outer[0] if len(outer) == 1 else None


def parse_html(raw: str, *, fallback_title: str) -> ParsedText:
    """Parse an HTML document into markdown-like text with block offsets.

    Args:
        raw: the decoded HTML source (normalized or not; the output is normalized).
        fallback_title: title when the page has neither ``<title>`` nor ``<h1>`` text.

    Returns:
        ``ParsedText`` whose ``text`` is the rendering described in the module docstring;
        ``blocks`` may be empty when the page holds no text. ``metadata`` is empty;
        ``warnings`` holds an ``html_depth`` warning (path empty) when tags nested deeper than
        :data:`~ragstrata.ingest.html_clean.MAX_DEPTH` were removed.
    """
    capped, removed = cap_nesting_counted(close_self_closing(raw))
    tree = LexborHTMLParser(capped)
    title_node = tree.css_first("title")
    title = collapse(title_node.text()) if title_node is not None else ""
    renderer = HtmlRenderer()
    root = _main(tree) or tree.body or tree.root
    if root is not None:
        renderer.render(root)
    blocks = renderer.blocks
    if not title:
        title = next((b.title for b in blocks if b.kind == "heading" and b.level == 1), "")
    warnings: tuple[IngestWarning, ...] = ()
    if removed:
        warnings = (
            IngestWarning(
                "",
                "html_depth",
                f"HTML nested deeper than {MAX_DEPTH} elements: {removed} tags beyond that depth "
                "removed, their text kept (the page's structure below that depth is lost)",
            ),
        )
    return ParsedText(
        text=renderer.text,
        blocks=blocks,
        title=unicodedata.normalize("NFC", title) or fallback_title,
        warnings=warnings,
    )


_SWALLOWED = BLOCK_TAGS | {"table", "pre", "ul", "ol", "blockquote", "hr"} | set(HEADING_LEVEL)
"""Block elements that an HTML5 parser puts inside a heading whose end tag is missing."""


def _heading_parts(node: LexborNode) -> tuple[str, list[LexborNode]]:
    """A heading's title and the block children it swallowed. ``<h1>Copias<p>Las copias se
    hacen a las 02:00...<table>...`` (no ``</h1>``) made the paragraph and the table part of a
    150-character heading, and the answer could not quote the 02:00 (trial 48). When the
    heading's own text comes first and block elements follow it, the title is that text and
    the blocks are the page's content; a title wrapped in a block (``<h1><div>Title</div>``)
    or without block children is the heading's whole text, as before."""
    children = node_children(node)
    first = next((i for i, c in enumerate(children) if (c.tag or "") in _SWALLOWED), None)
    if first is None:
        return flat_text(node), []
    # the inline children before the first block, joined as written (as flat_text joins them)
    title = " ".join(
        "".join(
            (c.text_content or "") if c.tag == "-text" else flat_text(c)
            for c in children[:first]
            if c.tag == "-text" or not (c.tag or "-").startswith("-")
        ).split()
    )
    if not title:
        return flat_text(node), []
    return title, children[first:]
