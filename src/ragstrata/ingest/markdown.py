"""Markdown / MDX parser: normalized text -> :class:`ParsedText` with character-offset blocks.

markdown-it-py (CommonMark + GFM tables + YAML front matter) gives every top-level block its
source line range (``token.map``); this module turns those ranges into ``Block`` offsets into
the unchanged input text. Invariants (checked by property tests and over the shared corpora):

* blocks are sorted, do not overlap, and ``text[b.start:b.end]`` has no surrounding whitespace;
* every non-whitespace character outside the front matter lies in exactly one block (lines no
  token claims, such as link reference definitions, become ``paragraph`` blocks);
* a ``#`` line inside a fenced code block is never a heading: an HTML/MDX block such as
  ``<Sandpack>`` that runs straight into a code fence ends before the fence, so the fence is
  parsed whole (CommonMark would let the HTML block swallow the fence's first half).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.rules_block.html_block import HTML_SEQUENCES, html_block
from mdit_py_plugins.front_matter import front_matter_plugin

from ragstrata.ingest.text import ParsedText, split_paragraphs
from ragstrata.types import Block, BlockKind, IngestWarning

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from markdown_it.rules_block import StateBlock
    from markdown_it.token import Token

__all__ = ["clean_heading_title", "parse_markdown"]


_KIND_BY_TOKEN: dict[str, BlockKind] = {
    "heading_open": "heading",
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "table_open": "table",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
    "html_block": "html",
    "hr": "rule",
}
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")  # markdown-it normalizes exactly these to "\n"
_FENCE_OPEN_RE = re.compile(r"(`{3,}|~{3,})")
_MDX_ANCHOR_RE = re.compile(r"\{/\*.*?\*/\}")  # {/*use-state*/}
_ATTR_LIST_RE = re.compile(r"\{\s*#[^{}\s]*(?:\s[^{}]*)?\}\s*$")  # { #first-steps } (MkDocs)
_SPACE_RE = re.compile(r"\s+")


def clean_heading_title(raw: str) -> str:
    """Heading display text: MDX anchors ``{/*id*/}`` and MkDocs ``{ #id }`` attribute lists
    removed, whitespace collapsed. ``"Añadir estado {/*adding-state*/}"`` -> ``"Añadir estado"``.
    """
    text = _MDX_ANCHOR_RE.sub(" ", raw)
    text = _ATTR_LIST_RE.sub(" ", text)
    return _SPACE_RE.sub(" ", text).strip()


def _heading_title(source: str) -> str:
    """Display title of a heading from its inline markdown source: anchors removed first (an
    anchor such as ``{/**id*/}`` would otherwise be read as emphasis), then markup."""
    source = _ATTR_LIST_RE.sub(" ", _MDX_ANCHOR_RE.sub(" ", source))
    if not source.strip():
        return ""
    plain = "".join(_inline_plain(token) for token in _parser().parseInline(source))
    return clean_heading_title(plain)


def _inline_plain(token: Token | None) -> str:
    """Plain text of an ``inline`` token: text and code spans kept, markup and HTML dropped."""
    if token is None or token.children is None:
        return ""
    parts: list[str] = []
    for child in token.children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_inline_plain(child))
    return "".join(parts)


def _html_block_stopping_at_fences(
    state: StateBlock, start_line: int, end_line: int, silent: bool
) -> bool:
    """CommonMark ``html_block`` rule, except that a block ending on a blank line (types 6
    and 7: ``<div>``, ``<Sandpack>``...) also ends before a line that opens a code fence."""
    matched = html_block(state, start_line, end_line, silent)
    if silent or not matched:
        return matched
    token = state.tokens[-1]
    if token.map is None:
        return matched
    first = state.src[
        state.bMarks[start_line] + state.tShift[start_line] : state.eMarks[start_line]
    ]
    ends_on_blank = False
    for opening, closing, _ in HTML_SEQUENCES:
        if opening.search(first):
            ends_on_blank = bool(closing.search(""))
            break
    if not ends_on_blank:
        return matched
    for line in range(start_line + 1, token.map[1]):
        if state.sCount[line] - state.blkIndent >= 4:
            continue
        pos = state.bMarks[line] + state.tShift[line]
        if _FENCE_OPEN_RE.match(state.src, pos, state.eMarks[line]):
            token.map = [start_line, line]
            token.content = state.getLines(start_line, line, state.blkIndent, True)
            state.line = line
            break
    return matched


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The shared markdown-it parser (built on first use; parsing is re-entrant)."""
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    md.block.ruler.at(
        "html_block",
        _html_block_stopping_at_fences,
        {"alt": ["paragraph", "reference", "blockquote"]},
    )
    return md


def _line_starts(text: str) -> list[int]:
    """Offset of the first character of every line (markdown-it's line numbering), plus a
    final sentinel ``len(text)``, so line ``i`` spans ``starts[i]:starts[i + 1]``."""
    starts = [0]
    starts.extend(m.end() for m in _LINE_BREAK_RE.finditer(text))
    starts.append(len(text))
    return starts


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace (may be empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_TEXT_KEYS = ("version",)
"""Front-matter keys whose numeric-looking values stay text (``1.10`` is not ``1.1``)."""


def _front_matter(content: str) -> tuple[dict[str, Any], str]:
    """Front matter as a dict, and ``""``; invalid YAML or a non-mapping yields ``{}`` and what
    was wrong (reported as a ``front_matter`` warning naming the file: review 32 found
    ``title: Guía: instalación rápida`` dropped with a log line that named no file)."""
    try:
        data = yaml.safe_load(content)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 2} of the file" if mark is not None else ""  # after ---
        return {}, (
            f"front matter is not valid YAML ({problem}{where}): ignored, so its keys (title, "
            "version...) were not read; quote a value that holds ': '"
        )
    if data is None:
        return {}, ""
    if not isinstance(data, dict):
        return {}, (f"front matter is a {type(data).__name__}, not a mapping of keys: ignored")
    out = {str(key): value for key, value in data.items()}
    if any(type(out.get(key)) in (int, float) for key in _TEXT_KEYS):
        # YAML reads `version: 1.10` as the float 1.1; keep the text as written
        node = yaml.compose(content)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value in _TEXT_KEYS and isinstance(value_node, yaml.ScalarNode):
                    out[key_node.value] = value_node.value
    return out, ""


def _fence_start(text: str, token: Token, line_start: int, line_end: int) -> int:
    """Where a code block inside a list or quote begins: at its fence when the fence shares
    its line with an item marker (``- ```js``: the marker stays list text), otherwise at the
    line's first character, so a fence inside a quote keeps its ``> `` prefix."""
    start = _trim(text, line_start, line_end)[0]
    if token.type == "fence":
        at = text.find(token.markup, start, line_end)
        if at > start and text[start:at].replace(">", "").strip():
            return at
    return start


def _around_inner_blocks(
    text: str,
    tokens: Sequence[Token],
    index: int,
    start: int,
    end: int,
    offset: Callable[[int], int],
) -> list[Block]:
    """The list or quote block ``text[start:end]`` (opened by ``tokens[index]``), with each
    code block (fenced or indented) inside it, and each pipe table inside a list, as a block
    of its own between blocks of the container's kind. The chunker keeps tables and code
    whole and repeats a table's header above each piece of it: inside a list a long table's
    later pieces were bare rows (review 32: "| opción-40 | ..." under no column names), and a
    151-token code block in a long list was cut in two although it fitted one chunk (review
    42). A code block in a quote keeps its ``> `` markers (:func:`_fence_start`)."""
    container = _KIND_BY_TOKEN[tokens[index].type]
    blocks: list[Block] = []
    at = start
    for i in range(index + 1, len(tokens)):  # by index: a slice copied the rest of the list
        token = tokens[i]  # for every container (review 44: 40,000 quotes took 57 s, now 3 s)
        if token.level == 0:  # the container's own closing token: nothing of it follows
            break
        if token.map is None:
            continue
        if token.type == "table_open" and container == "list":
            kind: BlockKind = "table"
            b_start = _trim(text, offset(token.map[0]), offset(token.map[1]))[0]
        elif token.type in ("fence", "code_block"):
            kind = "code"
            b_start = _fence_start(text, token, offset(token.map[0]), offset(token.map[0] + 1))
        else:
            continue
        b_start, b_end = _trim(text, b_start, offset(token.map[1]))
        if not (at <= b_start < b_end <= end):
            continue
        before = _trim(text, at, b_start)
        if before[0] < before[1]:
            blocks.append(Block(kind=container, start=before[0], end=before[1]))
        blocks.append(Block(kind=kind, start=b_start, end=b_end))
        at = b_end
    rest = _trim(text, at, end)
    if rest[0] < rest[1]:
        blocks.append(Block(kind=container, start=rest[0], end=rest[1]))
    return blocks


def parse_markdown(text: str, *, fallback_title: str = "") -> ParsedText:
    """Parse Markdown/MDX ``text`` into blocks with offsets into ``text`` itself.

    Args:
        text: the document, normally already normalized (LF line ends); it is not changed,
            and front matter stays in it (as metadata, not as a block).
        fallback_title: title when there is neither a front-matter ``title`` nor a level-1
            heading (loaders pass the file stem).

    Returns:
        ``ParsedText`` whose blocks have kinds heading (with ``level`` 1-6 and cleaned
        ``title``), paragraph, code (fenced or indented, fence lines included), table, list
        (a top-level list; a table or code block inside one of its items is a block of its own
        between the list's parts), quote (a code block inside it likewise, its ``>`` markers
        kept), html and rule. ``metadata`` is the front matter;
        ``warnings`` holds a ``front_matter`` warning (path empty) when it could not be read.
    """
    tokens = _parser().parse(text)
    starts = _line_starts(text)
    n_lines = len(starts) - 1

    def offset(line: int) -> int:
        return starts[min(line, n_lines)]

    metadata: dict[str, Any] = {}
    warnings: list[IngestWarning] = []
    blocks: list[Block] = []
    covered_to = 0  # character offset up to which the source is claimed by a token
    first_h1 = ""
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        line_start, line_end = token.map
        raw_start, raw_end = offset(line_start), offset(line_end)
        if token.type == "front_matter":
            metadata, problem = _front_matter(token.content)
            if problem:
                warnings.append(IngestWarning("", "front_matter", problem))
            covered_to = max(covered_to, raw_end)
            continue
        if raw_start > covered_to:  # lines no token claims, e.g. link reference definitions
            blocks.extend(split_paragraphs(text, covered_to, raw_start))
        start, end = _trim(text, max(raw_start, covered_to), raw_end)
        covered_to = max(covered_to, raw_end)
        if start >= end:
            continue
        kind = _KIND_BY_TOKEN.get(token.type, "paragraph")
        if kind == "heading":
            level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            title = _heading_title(inline.content if inline is not None else "")
            if level == 1 and not first_h1:
                first_h1 = title
            blocks.append(Block(kind="heading", start=start, end=end, level=level, title=title))
        elif kind in ("list", "quote"):
            blocks.extend(_around_inner_blocks(text, tokens, index, start, end, offset))
        else:
            blocks.append(Block(kind=kind, start=start, end=end))
    if covered_to < len(text):
        blocks.extend(split_paragraphs(text, covered_to, len(text)))

    fm_title = metadata.get("title")
    title = str(fm_title).strip() if fm_title is not None else ""
    return ParsedText(
        text=text,
        blocks=tuple(blocks),
        title=title or first_h1 or fallback_title,
        metadata=metadata,
        warnings=tuple(warnings),
    )
