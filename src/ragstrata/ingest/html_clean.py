"""Cleaning for the HTML parser (:mod:`ragstrata.ingest.html`): what is dropped and how text is
tidied, before and while the DOM is rendered.

* :func:`cap_nesting` (:func:`cap_nesting_counted`) runs on the raw source before parsing:
  tags nested deeper than :data:`MAX_DEPTH` elements are removed (their text is kept), so the
  parser's time stays bounded on pathological input; the caller reports how many.
* :func:`is_boilerplate` says which elements are not content (the list is in the docstring of
  :mod:`ragstrata.ingest.html`): skipped tags, hidden elements, ARIA navigation roles and
  navigation classes.
* :func:`collapse` turns whitespace runs (NBSP included) into one space and removes invisible
  format characters (zero-width space, soft hyphen, word joiner, BOM); :func:`flat_text` is a
  node's text on one line, boilerplate skipped.

The tag classes :data:`BLOCK_TAGS`, :data:`SEPARATE_TAGS` and :data:`HEADING_LEVEL` are shared
by the renderer (:mod:`ragstrata.ingest.html`) and the tables and lists
(:mod:`ragstrata.ingest.html_tables`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ragstrata.ingest.text import INVISIBLE_RE

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

__all__ = [
    "BLOCK_TAGS",
    "HEADING_LEVEL",
    "MAX_DEPTH",
    "SEPARATE_TAGS",
    "ancestors",
    "cap_nesting",
    "cap_nesting_counted",
    "collapse",
    "flat_text",
    "is_boilerplate",
    "node_children",
    "node_classes",
]

_SKIP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "nav", "footer", "head",
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
        "sidebar", "side-bar", "sidenav",
    }
)  # fmt: skip
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "dialog", "alertdialog"})
_CONSENT_CLASS_RE = re.compile(r"cookie|consent|gdpr", re.IGNORECASE)
"""A class naming a cookie or consent banner ("cookie-consent", "CookieConsent",
"gdpr-notice"): review 32 found "Utilizamos cookies propias..." as a page's first chunk."""
_CONSENT_ID_RE = re.compile(
    r"(?:cookie|consent|gdpr)\w*?[-_]?(?:banner|notice|bar|popup|modal|dialog|overlay)"
    r"|cookiebot|onetrust",
    re.IGNORECASE,
)
"""An id naming such a banner ("cookie-banner", "CybotCookiebotDialog"): an id alone may be a
section's, written from its title ("consentimiento-informado"), so it must name a banner."""
_SECTIONING = frozenset({"article", "main", "section"})
_HIDDEN_STYLE_RE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
BLOCK_TAGS = frozenset(
    {
        "html", "body", "main", "article", "section", "div", "p", "address", "aside",
        "center", "details", "dialog", "dl", "dt", "dd", "fieldset", "figure", "figcaption",
        "form", "legend", "summary", "caption", "li", "tr", "td", "th", "thead", "tbody",
        "tfoot", "hgroup", "menu", "optgroup", "option", "label",
    }
)  # fmt: skip
HEADING_LEVEL = {f"h{i}": i for i in range(1, 7)}
SEPARATE_TAGS = frozenset({"pre", "table", "ul", "ol", "blockquote", "hr"} | set(HEADING_LEVEL))
_SPACE_RE = re.compile(r"\s+")
MAX_DEPTH = 400
"""Element depth rendered as structure (deeper content becomes inline text), and the nesting
:func:`cap_nesting` lets through to the HTML parser."""
_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*>")
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr"}
)
"""HTML's void elements: they never have content or an end tag."""
_NOT_NESTING = _VOID | frozenset(
    # and elements whose end tag HTML lets the parser imply (a page of 5,000 unclosed <li> or
    # <p> is flat, not 5,000 deep)
    {"p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th"}
    | {"thead", "tbody", "tfoot", "colgroup", "caption", "rb", "rt", "rp", "html", "head", "body"}
)
"""Deeper subtrees are flattened to text (keeps recursion bounded on pathological input)."""


_SELF_CLOSING_RE = re.compile(r"<([A-Za-z][A-Za-z0-9:-]*)((?:\s[^<>]*?)?)\s*/>")


def close_self_closing(raw: str) -> str:
    """``raw`` with XHTML's self-closing non-void elements written as an empty pair:
    ``<a id="x"/>`` becomes ``<a id="x"></a>``. An HTML parser reads ``<a id="x"/>`` as an
    open ``<a>`` that swallows what follows: every DocBook page (the Debian reference) puts one
    before each heading, and the ordered lists after it were rendered "- first", "1. second".
    Void elements (``<br/>``, ``<img/>``) are left as they are."""

    def pair(m: re.Match[str]) -> str:
        tag = m.group(1)
        if tag.lower() in _VOID:
            return m.group(0)
        return f"<{tag}{m.group(2)}></{tag}>"

    return _SELF_CLOSING_RE.sub(pair, raw) if "/>" in raw else raw


def cap_nesting(raw: str, max_depth: int = MAX_DEPTH) -> str:
    """``raw`` with the tags nested deeper than ``max_depth`` elements removed (their text is
    kept); ``raw`` itself when no tag is that deep. See :func:`cap_nesting_counted`."""
    return cap_nesting_counted(raw, max_depth)[0]


def cap_nesting_counted(raw: str, max_depth: int = MAX_DEPTH) -> tuple[str, int]:
    """``(capped, removed)``: ``raw`` with the tags nested deeper than ``max_depth`` elements
    removed (their text is kept), and how many tags were removed (``(raw, 0)`` when no tag is
    that deep; the caller reports it, naming the file).

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
        return raw, 0
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
    return "".join(pieces), removed


def collapse(text: str) -> str:
    """Whitespace runs (newlines and NBSP included) -> one space; invisible format characters
    removed; trimmed."""
    return _SPACE_RE.sub(" ", INVISIBLE_RE.sub("", text)).strip()


def node_classes(node: LexborNode) -> set[str]:
    return set((node.attrs.get("class") or "").split())


def is_boilerplate(node: LexborNode, tag: str) -> bool:
    """Whether ``node`` (its tag ``tag``) is no content: a skipped tag, a ``header`` outside an
    ``article``/``main``/``section`` (a site banner; inside one it holds the page's title and
    lead: review 32), a hidden element, a navigation, banner or dialog role, a navigation class
    or a cookie/consent banner."""
    if tag in _SKIP_TAGS:
        return True
    if tag == "header" and not any((p.tag or "") in _SECTIONING for p in ancestors(node)):
        return True
    attrs = node.attrs
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    if style and _HIDDEN_STYLE_RE.search(style):
        return True
    if (attrs.get("role") or "").lower() in _SKIP_ROLES:
        return True
    if tag not in HEADING_LEVEL and (
        _CONSENT_CLASS_RE.search(attrs.get("class") or "")
        or _CONSENT_ID_RE.search(attrs.get("id") or "")
    ):
        return True
    return not _SKIP_CLASSES.isdisjoint(node_classes(node))


def ancestors(node: LexborNode) -> Iterator[LexborNode]:
    """``node``'s parent, its parent's parent, ... up to the document's root."""
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def node_children(node: LexborNode) -> list[LexborNode]:
    return list(node.iter(include_text=True))


_BACKTICKS_RE = re.compile(r"`+")
_LANGUAGE_RE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")
_HIGHLIGHT_RE = re.compile(r"(?:^|\s)highlight-([\w+#.-]+)")  # Sphinx: div.highlight-bash
_BRUSH_RE = re.compile(r"(?:^|;)\s*brush\s*:\s*([\w+#.-]+)")
_PLAIN_BRUSHES = frozenset({"text", "plain", "none", "plaintext"})
_PLAIN_HIGHLIGHTS = _PLAIN_BRUSHES | {"default"}  # Sphinx's highlight-default: no name given
_WRAPPER_LEVELS = 3
"""How many ancestors of a ``pre`` are read for a language class: Sphinx writes
``<div class="highlight-bash"><div class="highlight"><pre>``."""
_WRAPPER_STOP = frozenset({"li", "td", "th", "body", "main", "article", "section", "table"})


def _wrapper_language(pre: LexborNode) -> str:
    """Language named by a wrapper of ``pre`` (``language-x``/``lang-x`` or Sphinx's
    ``highlight-x`` class on one of its nearest :data:`_WRAPPER_LEVELS` ancestors, not past a
    list item, table cell or section); empty when none names one."""
    for level, parent in enumerate(ancestors(pre)):
        if level >= _WRAPPER_LEVELS or (parent.tag or "") in _WRAPPER_STOP:
            break
        classes = parent.attrs.get("class") or ""
        match = _LANGUAGE_RE.search(classes) or _HIGHLIGHT_RE.search(classes)
        if match is not None:
            name = match.group(1)
            # GitHub's scope names: highlight-source-python, highlight-text-html-basic
            # (review 44: read as "source-python")
            scope = re.fullmatch(r"(?:source|text)-([\w+#.]+).*", name)
            if scope is not None:
                name = scope.group(1)
            return "" if name.lower() in _PLAIN_HIGHLIGHTS else name
    return ""


def code_language(pre: LexborNode) -> str:
    """Language of a ``pre``: a ``language-x``/``lang-x`` class on it or its ``code`` child,
    else SyntaxHighlighter's ``data-syntaxhighlighter-params="brush: x; ..."`` (Confluence's
    code macro; ``text``/``plain``/``none`` mean no language), else a wrapper's class
    (:func:`_wrapper_language`: Sphinx's ``highlight-bash``, review 42). Empty when unknown."""
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
    if brush is not None:
        return "" if brush.group(1).lower() in _PLAIN_BRUSHES else brush.group(1).lower()
    return _wrapper_language(pre)


def code_block(pre: LexborNode) -> str:
    """A ``pre`` as a fenced code block (language from :func:`code_language`; the fence is
    longer than any backtick run inside), or ``""`` when it holds only white space."""
    code = _pre_text(pre).strip("\n").rstrip()
    if not code.strip():
        return ""
    longest = max((len(m) for m in _BACKTICKS_RE.findall(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{code_language(pre)}\n{code}\n{fence}"


def _pre_text(pre: LexborNode) -> str:
    """The text of a ``pre`` with its line breaks, also those written as ``<br>`` or as one
    block element per line (``<div>``/``<p>``/``<li>``, as some highlighters and wikis write
    code): ``text(deep=True)`` ran such lines together (review 32: "sudo apt updatesudo apt
    install nginx")."""
    parts: list[str] = []
    stack: list[LexborNode | str] = [pre]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if parts and not parts[-1].endswith("\n"):
                parts.append(item)
            continue
        tag = item.tag or ""
        if tag == "-text":
            parts.append(item.text_content or "")
        elif tag == "br":
            parts.append("\n")
        elif tag and not tag.startswith("-"):
            block = item is not pre and tag in BLOCK_TAGS
            if block:
                stack.append("\n")  # after it: a line break unless one ends it already
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
            stack.extend(reversed(node_children(item)))
    return "".join(parts)


def flat_text(node: LexborNode, *, skip: Sequence[LexborNode] = ()) -> str:
    """Text of ``node`` on one line: inline elements joined as written (``apt(8)`` stays one
    word), block elements and ``br`` separated by a space, boilerplate skipped, and so are
    the descendants in ``skip`` (a list item's nested lists, code and tables, rendered apart)."""
    parts: list[str] = []
    stack: list[LexborNode | str] = [node]
    # by the node's identity: ``in skip`` compared serialized HTML (review 44: one <li> of
    # 8,000 <pre> took 45 s)
    skipped = {n.mem_id for n in skip}
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
        if not tag or (item is not node and is_boilerplate(item, tag)):
            continue
        if skipped and tag in SEPARATE_TAGS and item.mem_id in skipped:
            continue
        separate = tag in BLOCK_TAGS or tag in SEPARATE_TAGS
        if separate:
            stack.append(" ")
        stack.extend(reversed(node_children(item)))
        if separate:
            stack.append(" ")
    return collapse("".join(parts))
