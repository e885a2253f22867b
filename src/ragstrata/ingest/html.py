"""HTML parser: raw HTML -> a markdown-like text that this module writes, with block offsets.

The DOM (selectolax/lexbor) is walked once; every structural element is appended to the
output text as one block and its offsets are recorded as it is written, so
``text[b.start:b.end]`` is the block's rendering by construction. Blocks are separated by
one blank line. Rendering:

* ``h1``-``h6`` -> ``"## Title"`` (heading block, ``level``/``title`` set);
* ``p``, ``div``, ``dt``, ``dd`` and bare text -> paragraph (inline text, whitespace collapsed);
* ``pre`` -> fenced code block (the fence is longer than any backtick run in the content; the
  language comes from a ``language-*``/``lang-*`` class or a SyntaxHighlighter
  ``brush: name`` parameter, as Confluence's code macro writes it);
* ``table`` -> GFM pipe table (see :func:`_render_table`); layout tables (DocBook
  admonitions, ``role="presentation"``, a single cell, a nested table or a heading in a cell)
  are rendered as their content instead;
* ``ul``/``ol`` -> one list block of ``- item`` / ``1. item`` lines (nested lists indented;
  task-list items get ``[ ]``/``[x]``);
* ``blockquote`` -> quote block with ``> `` prefixes; ``hr`` -> rule ``---``.

Boilerplate is dropped: ``script``, ``style``, ``nav``, ``header``, ``footer``, ``head``,
``template``, hidden elements (``hidden``, ``aria-hidden="true"``, inline ``display: none`` or
``visibility: hidden``), ARIA navigation/banner/contentinfo roles, and navigation
classes (DocBook ``navheader``/``navfooter``, tables of contents ``toc``/``toc-macro`` and lists
of tables/figures, ``breadcrumb``...). Text in no recognised element is kept as paragraphs.

Cleaning: every block goes through :func:`~ragstrata.ingest.text.normalize_text` (Unicode NFC,
LF line ends, control characters removed); inline whitespace runs (NBSP included) become one
space; invisible format characters (zero-width space, soft hyphen, word joiner, BOM) are removed
outside code blocks.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser

from ragstrata.ingest.text import ParsedText, normalize_text
from ragstrata.types import Block, BlockKind

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

__all__ = ["HtmlRenderer", "cap_nesting", "parse_html"]

logger = logging.getLogger(__name__)

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
        "toc", "toc-macro", "list-of-tables", "list-of-figures", "list-of-examples",
        "list-of-equations", "skip-link", "skiplink", "visually-hidden", "sr-only",
    }
)  # fmt: skip
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_HIDDEN_STYLE_RE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
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
_LAYOUT_CELL_CSS = "table, h1, h2, h3, h4, h5, h6"
_SPACE_RE = re.compile(r"\s+")
_INVISIBLE_RE = re.compile("[\u200b\u00ad\u2060\ufeff]")
_BACKTICKS_RE = re.compile(r"`+")
_LANGUAGE_RE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")
_BRUSH_RE = re.compile(r"(?:^|;)\s*brush\s*:\s*([\w+#.-]+)")
_PLAIN_BRUSHES = frozenset({"text", "plain", "none", "plaintext"})
_CELL_BREAK = "<br>"
"""Line break inside a pipe-table cell (GFM renders it; a newline would end the row)."""
_HEADER_JOIN = " / "
"""Joins the texts of stacked header rows in one column (``Popularidad / V``)."""
_MAX_COLSPAN = 100
_MAX_DEPTH = 400
"""Element depth rendered as structure (deeper content becomes inline text), and the nesting
:func:`cap_nesting` lets through to the HTML parser."""
_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*>")
_NOT_NESTING = frozenset(
    # void elements, and elements whose end tag HTML lets the parser imply (a page of 5,000
    # unclosed <li> or <p> is flat, not 5,000 deep)
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th"}
    | {"thead", "tbody", "tfoot", "colgroup", "caption", "rb", "rt", "rp", "html", "head", "body"}
)
"""Deeper subtrees are flattened to text (keeps recursion bounded on pathological input)."""


def cap_nesting(raw: str, max_depth: int = _MAX_DEPTH) -> str:
    """``raw`` with the tags nested deeper than ``max_depth`` elements removed (their text is
    kept); ``raw`` itself when no tag is that deep.

    lexbor's tree builder checks the stack of open elements at every tag, so its time grows
    with the square of the nesting: 100,000 nested ``<div><span>`` (1.1 MB) took minutes. The
    scan is one regular-expression pass; tags inside comments or scripts count as tags, which
    can only flatten a page a little earlier.
    """
    depth = 0
    for m in _TAG_RE.finditer(raw):
        if m.group(2).lower() in _NOT_NESTING or m.group(0).endswith("/>"):
            continue
        depth = max(0, depth - 1) if m.group(1) else depth + 1
        if depth > max_depth:
            break
    else:
        return raw
    pieces: list[str] = []
    pos = depth = removed = 0
    for m in _TAG_RE.finditer(raw):
        if m.group(2).lower() in _NOT_NESTING or m.group(0).endswith("/>"):
            continue
        closing = bool(m.group(1))
        if not closing:
            depth += 1
        if depth > max_depth:
            pieces.append(raw[pos : m.start()])
            pos = m.end()
            removed += 1
        if closing:
            depth = max(0, depth - 1)
    pieces.append(raw[pos:])
    logger.warning(
        "HTML nested deeper than %d elements: %d tags beyond that depth removed, text kept",
        max_depth,
        removed,
    )
    return "".join(pieces)


def _collapse(text: str) -> str:
    """Whitespace runs (newlines and NBSP included) -> one space; invisible format characters
    removed; trimmed."""
    return _SPACE_RE.sub(" ", _INVISIBLE_RE.sub("", text)).strip()


def _classes(node: LexborNode) -> set[str]:
    return set((node.attrs.get("class") or "").split())


def _is_boilerplate(node: LexborNode, tag: str) -> bool:
    if tag in _SKIP_TAGS:
        return True
    attrs = node.attrs
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    if style and _HIDDEN_STYLE_RE.search(style):
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
        title = normalize_text(_collapse(title))
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
        lines = (_collapse(line) for line in raw.split("\n"))
        self._add("paragraph", "\n".join(line for line in lines if line))

    # -- walking -----------------------------------------------------------------------------

    def _walk(self, node: LexborNode, depth: int) -> None:
        for child in _children(node):
            self._visit(child, depth + 1)

    def _visit(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if tag == "-text":
            self._inline.append(_SPACE_RE.sub(" ", node.text_content or ""))
            return
        if not tag or _is_boilerplate(node, tag):
            return
        if depth > _MAX_DEPTH:
            self._inline.append(" " + _flat_text(node) + " ")
            return
        if tag in _HEADING_LEVEL:
            level = _HEADING_LEVEL[tag]
            self.heading(_flat_text(node), self._levels.get(level, level))
        elif tag == "pre":
            self._flush()
            self._add_code(node)
        elif tag == "table":
            self._flush()
            self._add_table(node, depth)
        elif tag in ("ul", "ol"):
            self._flush()
            self._add("list", "\n".join(_list_lines(node, indent=0)))
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
        elif tag in _BLOCK_TAGS:
            self._flush()
            self._walk(node, depth)
            self._flush()
        else:  # inline element: a, span, code, em, strong, ...
            self._walk(node, depth)

    def _add_code(self, node: LexborNode) -> None:
        code = node.text(deep=True).strip("\n").rstrip()
        if not code.strip():
            return
        longest = max((len(m) for m in _BACKTICKS_RE.findall(code)), default=0)
        fence = "`" * max(3, longest + 1)
        self._add("code", f"{fence}{_code_language(node)}\n{code}\n{fence}")

    def _add_table(self, node: LexborNode, depth: int) -> None:
        groups = _row_groups(node)
        if _is_layout_table(node, groups):
            self._walk(node, depth)
            self._flush()
            return
        caption = node.css_first("caption")
        if caption is not None:
            self._add("paragraph", _flat_text(caption))
        rendered = _render_table(groups)
        if rendered:
            self._add("table", rendered)


def _code_language(pre: LexborNode) -> str:
    """Language of a ``pre``: a ``language-x``/``lang-x`` class on it or its ``code`` child,
    else SyntaxHighlighter's ``data-syntaxhighlighter-params="brush: x; ..."`` (Confluence's
    code macro; ``text``/``plain``/``none`` mean no language). Empty when unknown."""
    match = _LANGUAGE_RE.search(pre.attrs.get("class") or "")
    if match is None:
        code_child = pre.css_first("code")
        if code_child is not None:
            match = _LANGUAGE_RE.search(code_child.attrs.get("class") or "")
    if match is not None:
        return match.group(1)
    brush = _BRUSH_RE.search(pre.attrs.get("data-syntaxhighlighter-params") or "")
    if brush is None:
        brush = _BRUSH_RE.search(pre.attrs.get("class") or "")  # SyntaxHighlighter 3 classes
    if brush is not None and brush.group(1).lower() not in _PLAIN_BRUSHES:
        return brush.group(1).lower()
    return ""


# -- tables ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cell:
    """One slot of the expanded table grid. ``copy`` marks the 2nd..nth column of a
    ``colspan`` (left empty in body rows, repeated in header rows)."""

    text: str
    header: bool
    copy: bool = False


_EMPTY_CELL = _Cell("", header=False)


def _row_cells(row: LexborNode) -> list[LexborNode]:
    return [c for c in row.iter() if c.tag in ("td", "th")]


def _row_groups(table: LexborNode) -> list[tuple[str, list[list[LexborNode]]]]:
    """The table's own rows (not those of nested tables) as ``(group, rows)`` in rendering
    order: ``thead`` groups first, then ``tbody`` groups and bare rows in source order, then
    ``tfoot``. Each row is its ``td``/``th`` cells."""
    heads: list[tuple[str, list[list[LexborNode]]]] = []
    bodies: list[tuple[str, list[list[LexborNode]]]] = []
    feet: list[tuple[str, list[list[LexborNode]]]] = []
    loose: list[list[LexborNode]] = []
    for child in table.iter():
        tag = child.tag
        if tag == "tr":
            loose.append(_row_cells(child))
            continue
        if tag not in ("thead", "tbody", "tfoot"):
            continue
        if loose:
            bodies.append(("tbody", loose))
            loose = []
        rows = [_row_cells(row) for row in child.iter() if row.tag == "tr"]
        {"thead": heads, "tbody": bodies, "tfoot": feet}[tag].append((tag, rows))
    if loose:
        bodies.append(("tbody", loose))
    return [*heads, *bodies, *feet]


def _is_layout_table(table: LexborNode, groups: list[tuple[str, list[list[LexborNode]]]]) -> bool:
    """Tables used for layout, not data: rendered as their content instead of a pipe table.

    Layout: ``role="presentation"``/``"none"``; DocBook admonitions (the parent's class or the
    table's ``summary`` is ``tip``, ``note``, ``warning``...); a single cell (a framed box); a
    nested table or a heading in a cell (page-layout grids). Lists, paragraphs, line breaks
    and code in cells do not make a layout table: they are folded into the cell.
    """
    if (table.attrs.get("role") or "").lower() in ("presentation", "none"):
        return True
    parent = table.parent
    if parent is not None and not _ADMONITION_CLASSES.isdisjoint(_classes(parent)):
        return True
    summary = (table.attrs.get("summary") or "").lower()
    if summary in _ADMONITION_CLASSES:
        return True
    cells = [cell for _, rows in groups for row in rows for cell in row]
    if len(cells) == 1:
        return True
    return any(cell.css_first(_LAYOUT_CELL_CSS) is not None for cell in cells)


def _cell_lines(cell: LexborNode) -> list[str]:
    """The lines of a cell: block elements (``p``, ``div``...) and ``br`` end a line; lists give
    one ``- item`` line per item; ``pre`` one line per code line; whitespace collapsed."""
    lines: list[str] = []
    current: list[str] = []

    def end_line() -> None:
        text = _collapse("".join(current))
        current.clear()
        if text:
            lines.append(text)

    stack: list[LexborNode | None] = list(reversed(_children(cell)))  # None: end of a line
    while stack:
        item = stack.pop()
        if item is None:
            end_line()
            continue
        tag = item.tag or ""
        if tag == "-text":
            current.append(item.text_content or "")
        elif tag == "br":
            end_line()
        elif not tag or _is_boilerplate(item, tag):
            continue
        elif tag == "pre":
            end_line()
            code_lines = (_collapse(line) for line in item.text(deep=True).split("\n"))
            lines.extend(line for line in code_lines if line)
        elif tag in ("ul", "ol"):
            end_line()
            lines.extend(line.strip() for line in _list_lines(item, indent=0))
        elif tag in _BLOCK_TAGS or tag in _SEPARATE_TAGS:
            stack.append(None)
            stack.extend(reversed(_children(item)))
            stack.append(None)
        else:
            stack.extend(reversed(_children(item)))
    end_line()
    return lines


def _cell_text(cell: LexborNode) -> str:
    """One-line cell text: lines joined with ``<br>``, ``|`` escaped as ``\\|``."""
    return _CELL_BREAK.join(line.replace("|", "\\|") for line in _cell_lines(cell))


def _span(cell: LexborNode, name: str) -> int:
    value = (cell.attrs.get(name) or "1").strip()
    return int(value) if value.isdigit() else 1


def _expand_spans(rows: list[list[LexborNode]]) -> list[list[_Cell]]:
    """One row group as a rectangular-ish grid with ``rowspan``/``colspan`` expanded.

    Algorithm after pandas' ``_expand_colspan_rowspan`` (``pandas/io/html.py``): a cell with
    ``rowspan=r`` is carried into the same column of the next ``r - 1`` rows of its group
    (``rowspan=0`` means to the end of the group, as in HTML); a cell with ``colspan=c`` fills
    ``c`` columns (at most 100), the copies flagged ``copy``.
    """
    grid: list[list[_Cell]] = []
    carried: dict[int, tuple[_Cell, int]] = {}  # column -> (cell, rows it still covers)

    def take_carried(out: list[_Cell], column: int) -> None:
        cell, left = carried.pop(column)
        out.append(cell)
        if left > 1:
            carried[column] = (cell, left - 1)

    for index, row in enumerate(rows):
        remaining = len(rows) - index
        out: list[_Cell] = []
        for node in row:
            while len(out) in carried:
                take_carried(out, len(out))
            text = _cell_text(node)
            header = node.tag == "th"
            colspan = min(max(_span(node, "colspan"), 1), _MAX_COLSPAN)
            rowspan = _span(node, "rowspan")
            rowspan = remaining if rowspan == 0 else min(max(rowspan, 1), remaining)
            for k in range(colspan):
                cell = _Cell(text, header=header, copy=k > 0)
                if rowspan > 1:
                    carried[len(out)] = (cell, rowspan - 1)
                out.append(cell)
        while carried and len(out) <= max(carried):
            if len(out) in carried:
                take_carried(out, len(out))
            else:
                out.append(_EMPTY_CELL)
        grid.append(out)
    return grid


def _render_table(groups: list[tuple[str, list[list[LexborNode]]]]) -> str:
    """Render row groups as a GFM pipe table with exactly one header row.

    Header rows: the ``thead`` rows, else the leading rows made only of ``th`` cells, else the
    first row. Several header rows are merged column by column (distinct texts joined with
    ``" / "``), since a pipe table (and the chunker, which repeats the header when it splits a
    table) has one header line. Colspan copies repeat the text in header rows (every column
    gets a name) and stay empty in body rows; rowspan repeats the text in every spanned row so
    each row reads alone. Rows whose cells are all empty are dropped; short rows are padded.
    """
    expanded = [(group, _expand_spans(rows)) for group, rows in groups]
    head: list[list[_Cell]] = []
    body: list[list[_Cell]] = []
    for group, grid in expanded:
        rows = [row for row in grid if any(cell.text for cell in row)]
        if group == "thead":
            head.extend(rows)
        elif not head and not body:
            leading = 0
            while leading < len(rows) - 1 and all(cell.header for cell in rows[leading]):
                leading += 1
            head, body = rows[:leading], rows[leading:]
        else:
            body.extend(rows)
    if not head and body:
        head, body = body[:1], body[1:]
    if not head:
        return ""
    width = max(len(row) for row in (*head, *body))
    header: list[str] = []
    for column in range(width):
        texts: list[str] = []
        for row in head:
            text = row[column].text if column < len(row) else ""
            if text and (not texts or texts[-1] != text):
                texts.append(text)
        header.append(_HEADER_JOIN.join(texts))
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * width]
    for row in body:
        texts = [cell.text if not cell.copy else "" for cell in row]
        texts += [""] * (width - len(texts))
        lines.append("| " + " | ".join(texts) + " |")
    return "\n".join(lines)


# -- lists -------------------------------------------------------------------------------------


def _task_marker(item: LexborNode, *, task_list: bool) -> str:
    """``"[x] "``/``"[ ] "`` for a task-list item (Confluence ``ul.inline-task-list`` with
    ``li.checked``, or an ``li`` holding a checkbox ``input``), else ``""``."""
    if task_list:
        return "[x] " if "checked" in _classes(item) else "[ ] "
    for child in item.iter():
        if child.tag == "input" and (child.attrs.get("type") or "").lower() == "checkbox":
            return "[x] " if "checked" in child.attrs else "[ ] "
    return ""


def _list_lines(node: LexborNode, *, indent: int) -> list[str]:
    """``- item`` / ``1. item`` lines of a ``ul``/``ol``; nested lists indented two spaces.

    An item's own text (everything but its nested lists) is folded onto one line.
    """
    ordered = node.tag == "ol"
    task_list = "inline-task-list" in _classes(node)
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
            lines.append(f"{pad}{marker} {_task_marker(item, task_list=task_list)}{text}")
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
    tree = LexborHTMLParser(cap_nesting(raw))
    title_node = tree.css_first("title")
    title = _collapse(title_node.text()) if title_node is not None else ""
    renderer = HtmlRenderer()
    root = tree.body or tree.root
    if root is not None:
        renderer.render(root)
    blocks = renderer.blocks
    if not title:
        title = next((b.title for b in blocks if b.kind == "heading" and b.level == 1), "")
    return ParsedText(
        text=renderer.text,
        blocks=blocks,
        title=unicodedata.normalize("NFC", title) or fallback_title,
    )
