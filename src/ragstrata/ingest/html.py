"""HTML parser: raw HTML -> a markdown-like text that this module writes, with block offsets.

The DOM (selectolax/lexbor) is walked once; every structural element is appended to the
output text as one block and its offsets are recorded as it is written, so
``text[b.start:b.end]`` is the block's rendering by construction. Blocks are separated by
one blank line. Rendering:

* ``h1``-``h6`` -> ``"## Title"`` (heading block, ``level``/``title`` set);
* ``p``, ``div``, ``dt``, ``dd`` and bare text -> paragraph (inline text, whitespace collapsed);
* ``pre`` -> fenced code block (the fence is longer than any backtick run in the content);
* ``table`` -> pipe table (header from ``th``/``thead`` or the first row, ``| --- |``
  separator, ``|`` escaped, newlines folded); layout tables (DocBook admonitions, tables
  with ``role="presentation"`` or block content in their cells) are rendered as their content;
* ``ul``/``ol`` -> one list block of ``- item`` / ``1. item`` lines (nested lists indented);
* ``blockquote`` -> quote block with ``> `` prefixes; ``hr`` -> rule ``---``.

Boilerplate is dropped: ``script``, ``style``, ``nav``, ``header``, ``footer``, ``head``,
``template``, hidden elements, ARIA navigation/banner/contentinfo roles, and navigation
classes (DocBook ``navheader``/``navfooter``, tables of contents ``toc`` and lists of
tables/figures, ``breadcrumb``...). Text in no recognised element is kept as paragraphs.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser

from ragstrata.ingest.text import ParsedText, normalize_text
from ragstrata.types import Block, BlockKind

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

__all__ = ["parse_html"]

_SKIP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "nav", "header", "footer", "head",
        "title", "meta", "link", "svg", "math", "iframe", "object", "embed", "canvas",
        "button", "select", "input", "textarea", "img", "colgroup", "col", "-comment",
        "-doctype",
    }
)  # fmt: skip
_SKIP_CLASSES = frozenset(
    {
        "navheader", "navfooter", "navigation", "navbar", "nav", "breadcrumb", "breadcrumbs",
        "toc", "list-of-tables", "list-of-figures", "list-of-examples", "list-of-equations",
        "skip-link", "skiplink", "visually-hidden", "sr-only",
    }
)  # fmt: skip
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_ADMONITION_CLASSES = frozenset(
    {"tip", "note", "caution", "warning", "important", "danger", "admonition"}
)
_BLOCK_TAGS = frozenset(
    {
        "html", "body", "main", "article", "section", "div", "p", "address", "aside",
        "center", "details", "dialog", "dl", "dt", "dd", "fieldset", "figure", "figcaption",
        "form", "legend", "summary", "caption", "li", "tr", "td", "th", "thead", "tbody",
        "tfoot", "hgroup", "menu", "optgroup", "option", "label",
    }
)  # fmt: skip
_HEADING_LEVEL = {f"h{i}": i for i in range(1, 7)}
_SEPARATE_TAGS = frozenset({"pre", "table", "ul", "ol", "blockquote", "hr"} | set(_HEADING_LEVEL))
_CELL_BLOCK_CSS = "pre, table, ul, ol, blockquote, h1, h2, h3, h4, h5, h6"
_SPACE_RE = re.compile(r"\s+")
_BACKTICKS_RE = re.compile(r"`+")
_LANGUAGE_RE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")
_MAX_DEPTH = 400
"""Deeper subtrees are flattened to text (keeps recursion bounded on pathological input)."""


def _collapse(text: str) -> str:
    """Whitespace runs (newlines included) -> one space; trimmed."""
    return _SPACE_RE.sub(" ", text).strip()


def _classes(node: LexborNode) -> set[str]:
    return set((node.attrs.get("class") or "").split())


def _is_boilerplate(node: LexborNode, tag: str) -> bool:
    if tag in _SKIP_TAGS:
        return True
    attrs = node.attrs
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    if (attrs.get("role") or "").lower() in _SKIP_ROLES:
        return True
    return not _SKIP_CLASSES.isdisjoint(_classes(node))


def _children(node: LexborNode) -> list[LexborNode]:
    return list(node.iter(include_text=True))


def _flat_text(node: LexborNode, *, skip_child_lists: bool = False) -> str:
    """Text of ``node`` on one line: inline elements joined as written (``apt(8)`` stays one
    word), block elements and ``br`` separated by a space, boilerplate skipped.
    ``skip_child_lists`` leaves out ``ul``/``ol`` children of ``node`` (rendered apart)."""
    parts: list[str] = []
    stack: list[LexborNode | str] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        tag = item.tag or ""
        if tag == "-text":
            parts.append(item.text_content or "")
            continue
        if tag == "br":
            parts.append(" ")
            continue
        if not tag or (item is not node and _is_boilerplate(item, tag)):
            continue
        if skip_child_lists and tag in ("ul", "ol") and item.parent == node:
            continue
        separate = tag in _BLOCK_TAGS or tag in _SEPARATE_TAGS
        if separate:
            stack.append(" ")
        stack.extend(reversed(_children(item)))
        if separate:
            stack.append(" ")
    return _collapse("".join(parts))


class _Writer:
    """Appends blocks to the output text and records their offsets.

    ``inline`` collects the text of the paragraph being built; a block-level element first
    flushes it as a paragraph block.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.blocks: list[Block] = []
        self.inline: list[str] = []

    # -- output ------------------------------------------------------------------------------

    def add(self, kind: BlockKind, content: str, *, level: int = 0, title: str = "") -> None:
        """Append ``content`` (normalized and trimmed) as one block; empty content is dropped."""
        content = normalize_text(content).strip()
        if not content:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(content)
        self.length += len(content)
        self.blocks.append(Block(kind=kind, start=start, end=self.length, level=level, title=title))

    def flush(self) -> None:
        """Emit the pending inline text as a paragraph (lines trimmed, blank lines dropped)."""
        if not self.inline:
            return
        raw = "".join(self.inline)
        self.inline.clear()
        lines = (_collapse(line) for line in raw.split("\n"))
        self.add("paragraph", "\n".join(line for line in lines if line))

    def text(self) -> str:
        return "".join(self.parts)

    # -- walking -----------------------------------------------------------------------------

    def walk(self, node: LexborNode, depth: int = 0) -> None:
        """Render ``node``'s children (not ``node`` itself)."""
        for child in _children(node):
            self.visit(child, depth + 1)

    def visit(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if tag == "-text":
            self.inline.append(_SPACE_RE.sub(" ", node.text_content or ""))
            return
        if not tag or _is_boilerplate(node, tag):
            return
        if depth > _MAX_DEPTH:
            self.inline.append(" " + _flat_text(node) + " ")
            return
        if tag in _HEADING_LEVEL:
            self.flush()
            title = normalize_text(_flat_text(node))
            level = _HEADING_LEVEL[tag]
            if title:
                self.add("heading", "#" * level + " " + title, level=level, title=title)
        elif tag == "pre":
            self.flush()
            self.add_code(node)
        elif tag == "table":
            self.flush()
            self.add_table(node, depth)
        elif tag in ("ul", "ol"):
            self.flush()
            self.add("list", "\n".join(_list_lines(node, indent=0)))
        elif tag == "blockquote":
            self.flush()
            inner = _Writer()
            inner.walk(node, depth)
            inner.flush()
            quoted = (("> " + line) if line else ">" for line in inner.text().split("\n"))
            self.add("quote", "\n".join(quoted))
        elif tag == "hr":
            self.flush()
            self.add("rule", "---")
        elif tag == "br":
            self.inline.append("\n")
        elif tag in _BLOCK_TAGS:
            self.flush()
            self.walk(node, depth)
            self.flush()
        else:  # inline element: a, span, code, em, strong, ...
            self.walk(node, depth)

    def add_code(self, node: LexborNode) -> None:
        code = node.text(deep=True).strip("\n").rstrip()
        if not code.strip():
            return
        longest = max((len(m) for m in _BACKTICKS_RE.findall(code)), default=0)
        fence = "`" * max(3, longest + 1)
        match = _LANGUAGE_RE.search(node.attrs.get("class") or "")
        if match is None:
            code_child = node.css_first("code")
            if code_child is not None:
                match = _LANGUAGE_RE.search(code_child.attrs.get("class") or "")
        language = match.group(1) if match else ""
        self.add("code", f"{fence}{language}\n{code}\n{fence}")

    def add_table(self, node: LexborNode, depth: int) -> None:
        rows = _table_rows(node)
        if _is_layout_table(node, rows):
            self.walk(node, depth)
            self.flush()
            return
        caption = node.css_first("caption")
        if caption is not None:
            self.add("paragraph", _collapse(caption.text()))
        rendered = _pipe_table(rows)
        if rendered:
            self.add("table", rendered)


def _table_rows(table: LexborNode) -> list[list[LexborNode]]:
    """The table's own ``tr`` rows (not those of nested tables), each as its cells."""
    rows: list[list[LexborNode]] = []
    for child in table.iter():
        if child.tag == "tr":
            rows.append([c for c in child.iter() if c.tag in ("td", "th")])
        elif child.tag in ("thead", "tbody", "tfoot"):
            for row in child.iter():
                if row.tag == "tr":
                    rows.append([c for c in row.iter() if c.tag in ("td", "th")])
    return rows


def _is_layout_table(table: LexborNode, rows: list[list[LexborNode]]) -> bool:
    """Tables used for layout, not data: rendered as their content instead of a pipe table."""
    if (table.attrs.get("role") or "").lower() in ("presentation", "none"):
        return True
    parent = table.parent
    if parent is not None and not _ADMONITION_CLASSES.isdisjoint(_classes(parent)):
        return True
    summary = (table.attrs.get("summary") or "").lower()
    if summary in _ADMONITION_CLASSES:
        return True
    return any(cell.css_first(_CELL_BLOCK_CSS) is not None for row in rows for cell in row)


def _cell_text(cell: LexborNode) -> str:
    """One-line cell text: whitespace collapsed, ``|`` escaped."""
    return _flat_text(cell).replace("|", "\\|")


def _pipe_table(rows: list[list[LexborNode]]) -> str:
    """Render rows as a pipe table; the header is the first row (``th`` or not)."""
    grid: list[list[str]] = []
    for row in rows:
        cells: list[str] = []
        for cell in row:
            cells.append(_cell_text(cell))
            span = cell.attrs.get("colspan") or "1"
            extra = int(span) - 1 if span.isdigit() else 0
            cells.extend([""] * min(max(extra, 0), 50))
        if any(cells):
            grid.append(cells)
    if not grid:
        return ""
    width = max(len(row) for row in grid)
    lines: list[str] = []
    for index, texts in enumerate(grid):
        padded = texts + [""] * (width - len(texts))
        lines.append("| " + " | ".join(padded) + " |")
        if index == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def _list_lines(node: LexborNode, *, indent: int) -> list[str]:
    """``- item`` / ``1. item`` lines of a ``ul``/``ol``; nested lists indented two spaces.

    An item's own text (everything but its nested lists) is folded onto one line.
    """
    ordered = node.tag == "ol"
    lines: list[str] = []
    number = 0
    pad = "  " * indent
    for item in node.iter(include_text=True):
        if item.tag == "-text":
            text = _collapse(item.text_content or "")
            if text:
                lines.append(f"{pad}- {text}")
            continue
        if item.tag != "li":
            if item.tag in ("ul", "ol"):
                lines.extend(_list_lines(item, indent=indent + 1))
            elif item.tag and not _is_boilerplate(item, item.tag):
                text = _flat_text(item)
                if text:
                    lines.append(f"{pad}- {text}")
            continue
        number += 1
        nested: list[str] = []
        for child in item.iter():
            if child.tag in ("ul", "ol"):
                nested.extend(_list_lines(child, indent=indent + 1))
        text = _flat_text(item, skip_child_lists=True)
        marker = f"{number}." if ordered else "-"
        if text:
            lines.append(f"{pad}{marker} {text}")
        lines.extend(nested)
    return lines


def parse_html(raw: str, *, fallback_title: str) -> ParsedText:
    """Parse an HTML document into markdown-like text with block offsets.

    Args:
        raw: the decoded HTML source (normalized or not; the output is normalized).
        fallback_title: title when the page has neither ``<title>`` nor ``<h1>`` text.

    Returns:
        ``ParsedText`` whose ``text`` is the rendering described in the module docstring;
        ``blocks`` may be empty when the page holds no text. ``metadata`` is empty.
    """
    tree = LexborHTMLParser(raw)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text()) if title_node is not None else ""
    writer = _Writer()
    root = tree.body or tree.root
    if root is not None:
        writer.walk(root)
        writer.flush()
    if not title:
        title = next((b.title for b in writer.blocks if b.kind == "heading" and b.level == 1), "")
    text = writer.text()
    return ParsedText(
        text=text,
        blocks=tuple(writer.blocks),
        title=unicodedata.normalize("NFC", title) or fallback_title,
    )
