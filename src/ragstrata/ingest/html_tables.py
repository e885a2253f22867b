"""Tables and lists of the HTML parser (:mod:`ragstrata.ingest.html`): DOM -> GFM pipe-table
text and ``- item`` / ``1. item`` list lines.

Both live here because a table cell folds the lists it holds into its own lines
(:func:`list_lines` is used by the cell rendering as well as by the renderer). Layout tables
(:func:`is_layout_table`) are not rendered here: the renderer walks them as ordinary content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragstrata.ingest.html_clean import (
    BLOCK_TAGS,
    SEPARATE_TAGS,
    code_block,
    collapse,
    flat_text,
    is_boilerplate,
    node_children,
    node_classes,
)

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

    from ragstrata.types import BlockKind

__all__ = [
    "is_layout_table",
    "key_value_lines",
    "list_blocks",
    "list_lines",
    "render_table",
    "row_groups",
    "table_parts",
]


_ADMONITION_CLASSES = frozenset(
    {"tip", "note", "caution", "warning", "important", "danger", "admonition"}
)
_LAYOUT_CELL_CSS = "table, h1, h2, h3, h4, h5, h6"
_CELL_BREAK = "<br>"
"""Line break inside a pipe-table cell (GFM renders it; a newline would end the row)."""
_HEADER_JOIN = " / "
"""Joins the texts of stacked header rows in one column (``Popularidad / V``)."""
_MAX_COLSPAN = 100


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


def row_groups(table: LexborNode) -> list[tuple[str, list[list[LexborNode]]]]:
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


def is_layout_table(table: LexborNode, groups: list[tuple[str, list[list[LexborNode]]]]) -> bool:
    """Tables used for layout, not data: rendered as their content instead of a pipe table.

    Layout: ``role="presentation"``/``"none"``; DocBook admonitions (the parent's class or the
    table's ``summary`` is ``tip``, ``note``, ``warning``...); a single cell (a framed box); a
    nested table or a heading in a cell (page-layout grids). Lists, paragraphs, line breaks
    and code in cells do not make a layout table: they are folded into the cell.
    """
    if (table.attrs.get("role") or "").lower() in ("presentation", "none"):
        return True
    parent = table.parent
    if parent is not None and not _ADMONITION_CLASSES.isdisjoint(node_classes(parent)):
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
        text = collapse("".join(current))
        current.clear()
        if text:
            lines.append(text)

    stack: list[LexborNode | None] = list(reversed(node_children(cell)))  # None: end of a line
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
        elif not tag or is_boilerplate(item, tag):
            continue
        elif tag == "pre":
            end_line()
            code_lines = (collapse(line) for line in item.text(deep=True).split("\n"))
            lines.extend(line for line in code_lines if line)
        elif tag in ("ul", "ol"):
            end_line()
            lines.extend(line.strip() for line in list_lines(item, indent=0))
        elif tag in BLOCK_TAGS or tag in SEPARATE_TAGS:
            stack.append(None)
            stack.extend(reversed(node_children(item)))
            stack.append(None)
        else:
            stack.extend(reversed(node_children(item)))
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


def key_value_lines(groups: list[tuple[str, list[list[LexborNode]]]]) -> list[str]:
    """A table whose rows each start with a ``th`` label followed by data cells (Confluence's
    Page Properties and Space Details, a server's record: no header row, one label per row)
    as ``- label: value`` lines (several values joined with ``; ``, a cell's line breaks too);
    ``[]`` for any other table. As a pipe table its first row became the header, and every
    other row read under it: "Sistema operativo: Memoria; Debian 12: 64 GB" (trial 24)."""
    if any(group == "thead" for group, _ in groups):
        return []
    rows = [
        row
        for _, group_rows in groups
        for row in _expand_spans(group_rows)
        if any(cell.text for cell in row)
    ]
    if not rows or not all(
        row[0].header
        and row[0].text
        and any(not cell.header and cell.text and not cell.copy for cell in row[1:])
        for row in rows
    ):
        return []
    lines: list[str] = []
    for row in rows:
        values = [cell.text for cell in row[1:] if cell.text and not cell.copy]
        label = row[0].text.replace(_CELL_BREAK, " ").rstrip(":")
        value = "; ".join(values).replace(_CELL_BREAK, "; ").replace("\\|", "|")
        lines.append(f"- {label}: {value}")
    return lines


def render_table(groups: list[tuple[str, list[list[LexborNode]]]]) -> str:
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
        return "[x] " if "checked" in node_classes(item) else "[ ] "
    for child in item.iter():
        if child.tag == "input" and (child.attrs.get("type") or "").lower() == "checkbox":
            return "[x] " if "checked" in child.attrs else "[ ] "
    return ""


def _int_attr(node: LexborNode, name: str, default: int) -> int:
    """The integer attribute ``name`` of ``node`` (``default`` when absent or not a number;
    kept within 0..1,000,000)."""
    value = (node.attrs.get(name) or "").strip()
    try:
        return max(0, min(int(value), 1_000_000)) if value else default
    except ValueError:
        return default


def _item_blocks(item: LexborNode) -> list[LexborNode]:
    """The nested lists, ``pre`` and non-layout tables anywhere inside list item ``item``, in
    document order: not inside a nested item, nor inside one another (a ``pre`` in a table
    cell is the table's). Sphinx wraps code in ``div``s (``<li><p>..</p><div
    class="highlight-bash"><div class="highlight"><pre>``), so direct children are not
    enough: review 42 found such code and an item's table folded into its prose line."""
    found: list[LexborNode] = []
    stack = list(reversed(node_children(item)))
    while stack:
        node = stack.pop()
        tag = node.tag or ""
        if not tag or tag.startswith("-") or tag == "li" or is_boilerplate(node, tag):
            continue
        if tag in ("ul", "ol", "pre") or (
            tag == "table" and not is_layout_table(node, row_groups(node))
        ):
            found.append(node)
        else:
            stack.extend(reversed(node_children(node)))
    return found


def table_parts(
    table: LexborNode, groups: list[tuple[str, list[list[LexborNode]]]] | None = None
) -> list[tuple[BlockKind, str]]:
    """A data table's blocks in reading order: its caption's text (``"paragraph"``), then a
    record's ``- label: value`` lines (one ``"list"`` block, :func:`key_value_lines`) or its
    GFM pipe table (``"table"``, :func:`render_table`); empty ones left out. ``groups``: the
    table's :func:`row_groups` when the caller has them."""
    groups = row_groups(table) if groups is None else groups
    parts: list[tuple[BlockKind, str]] = []
    caption = table.css_first("caption")
    if caption is not None and (title := flat_text(caption)):
        parts.append(("paragraph", title))
    if pairs := key_value_lines(groups):
        parts.append(("list", "\n".join(pairs)))
    elif rendered := render_table(groups):
        parts.append(("table", rendered))
    return parts


def _item_table_parts(table: LexborNode, pad: str) -> list[tuple[BlockKind, str]]:
    """A table inside a list item: its caption and a record's lines under the item, a pipe
    table at the margin (:func:`table_parts`)."""
    parts: list[tuple[BlockKind, str]] = []
    for kind, text in table_parts(table):
        if kind == "table":
            parts.append((kind, text))
        else:
            parts.extend(("list", f"{pad}  {line}") for line in text.split("\n"))
    return parts


def _list_parts(node: LexborNode, *, indent: int) -> list[tuple[BlockKind, str]]:
    """The parts of a ``ul``/``ol`` in order: each ``("list", line)`` one item line, each
    ``("code", fence)`` or ``("table", pipe_table)`` a block of an item (see
    :func:`list_lines`)."""
    ordered = node.tag == "ol"
    task_list = "inline-task-list" in node_classes(node)
    parts: list[tuple[BlockKind, str]] = []
    number = _int_attr(node, "start", 1) - 1  # <ol start="3">: a procedure split by code
    pad = "  " * indent
    for item in node.iter(include_text=True):
        if item.tag == "-text":
            text = collapse(item.text_content or "")
            if text:
                parts.append(("list", f"{pad}- {text}"))
            continue
        if item.tag != "li":
            if item.tag in ("ul", "ol"):
                parts.extend(_list_parts(item, indent=indent + 1))
            elif item.tag and not is_boilerplate(item, item.tag):
                text = flat_text(item)
                if text:
                    parts.append(("list", f"{pad}- {text}"))
            continue
        number = _int_attr(item, "value", number + 1)  # <li value="7">
        inner = _item_blocks(item)
        nested: list[tuple[BlockKind, str]] = []
        for child in inner:
            if child.tag in ("ul", "ol"):
                nested.extend(_list_parts(child, indent=indent + 1))
            elif child.tag == "pre":
                if block := code_block(child):
                    nested.append(("code", block))  # the step's command under it, as code
            else:
                nested.extend(_item_table_parts(child, pad))
        text = flat_text(item, skip=inner)
        marker = f"{number}." if ordered else "-"
        if text:
            parts.append(("list", f"{pad}{marker} {_task_marker(item, task_list=task_list)}{text}"))
        parts.extend(nested)
    return parts


def list_lines(node: LexborNode, *, indent: int) -> list[str]:
    """``- item`` / ``1. item`` lines of a ``ul``/``ol``; nested lists indented two spaces. An
    ``ol``'s numbers start at its ``start`` attribute, and an item's ``value`` sets its own
    (review 32: a procedure split by a code block was numbered as two step 1s).

    An item's own text (everything but its nested lists, code and tables) is folded onto one
    line; a ``pre`` anywhere in the item (not in a nested item) follows that line as a fenced
    code block and a ``table`` as a pipe table, both at the margin, so that fence and table
    detection find them; the items keep their own numbers.
    """
    return [line for _, part in _list_parts(node, indent=indent) for line in part.split("\n")]


def list_blocks(node: LexborNode) -> list[tuple[BlockKind, str]]:
    """A ``ul``/``ol`` as blocks: runs of item lines as ``list`` blocks, each code block and
    pipe table of an item a ``code`` or ``table`` block of its own between them (the chunker
    keeps code and tables whole, and repeats a split table's header), with the text of
    :func:`list_lines`."""
    blocks: list[tuple[BlockKind, str]] = []
    for kind, part in _list_parts(node, indent=0):
        if kind == "list" and blocks and blocks[-1][0] == "list":
            blocks[-1] = ("list", blocks[-1][1] + "\n" + part)
        else:
            blocks.append((kind, part))
    return blocks
