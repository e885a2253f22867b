"""Lexical check of the code in an answer against the source it cites.

A sentence that cites a source vouches for its code too: the fenced blocks attached to it and
its inline ``code`` spans. :func:`unbacked_code` lists what of that code the cited passage does
not back, by these rules (a test of words, not of meaning):

1. **Imports.** An imported name must come from the same module in the passage, whenever the
   passage says where that name comes from. A passage says so in code (``from typing import
   Annotated``, ``import { useState } from 'react'``) or in prose with code spans
   (`` `Annotated` from `typing` ``, `` `Query` de `fastapi` ``). When the passage never says
   where a name comes from, the name and its module must both occur in the passage as words.
   A module imported whole (``import numpy as np``, ``import 'x.css'``) must occur as a word.
   The answer's own prose counts as an import claim too, when the sentence has an import verb
   (*import*, *comes from*, *importa*, *viene de*…) and code spans: "import `Annotated` from
   `pydantic`".
2. **Names.** Every other identifier of the code must occur in the passage as a whole word,
   with its case, and a dotted name whose head the code does not define (``typing.Annotated``,
   ``app.get``) must occur as written (spaces around the dots ignored). Exempt: keywords and
   builtins of Python and JavaScript, common HTML tags and attributes, one-character names,
   names the code defines itself (assignment targets, ``def``/``class``/``function``/``const``/
   ``let``/``var`` names, parameters, ``for`` targets, ``as`` aliases) and their attributes,
   and everything inside strings, comments and JSX text.

Module names compare case-insensitively, and ``fastapi`` matches ``fastapi.params`` (one is a
dotted prefix of the other); names compare exactly. Code that uses the right names wrongly
passes; so does an import the passage names nowhere when both of its words occur in it.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

_ID = r"[A-Za-z_$][\w$]*"


@dataclass(frozen=True, slots=True)
class Import:
    """One imported ``name`` of ``module`` (``name=None``: the module itself); ``shown`` is
    how it is reported when the passage does not back it."""

    module: str
    name: str | None
    shown: str


# ------------------------------------------------------------------------------ imports

_JS_IMPORT = re.compile(r"\bimport\s+(?:type\s+)?([\w$\s{},*]*?)\s*\bfrom\s*(['\"])([^'\"\n]+)\2")
_JS_BARE = re.compile(r"\bimport\s*(['\"])([^'\"\n]+)\1")
_PY_FROM = re.compile(r"\bfrom[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[\w*][\w \t,*]*)")
_PY_IMPORT = re.compile(
    r"(?:^|(?<=[;`]))[ \t]*import[ \t]+"
    r"([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)"
    r"[ \t]*(?=$|[;#`])",
    re.MULTILINE,
)
_NAMES = rf"(?:`{_ID}`(?:\s*(?:,|\band\b|\by\b|\bor\b|\bo\b)\s*)?)+"
_PROSE_FROM = re.compile(
    rf"({_NAMES})\s*\(?\s*"
    r"(?:(?:comes?|is|are|se|imported|importad[oa]s?|importan?|provided|viene|vienen|"
    r"provienen?)\s+)*"
    r"(?:from|de|desde)\s+"
    r"(?:(?:the|el|la|los|las|module|package|library|m[oó]dulo|paquete|biblioteca)\s+)*"
    r"`([\w.@/-]+)`",
    re.IGNORECASE,
)
_IMPORT_VERB = re.compile(
    r"\bimport\w*|\bimporta\w*|\bcomes?\s+from\b|\bvienen?\s+de\b|\bprovienen?\s+de\b",
    re.IGNORECASE,
)


def _js_clause(clause: str, module: str) -> tuple[list[Import], set[str]]:
    imports: list[Import] = []
    bound: set[str] = set()
    braces = re.search(r"\{([^}]*)\}", clause)
    rest = clause.replace(braces.group(0), " ") if braces else clause
    for part in (braces.group(1) if braces else "").split(","):
        words = [w for w in part.split() if w != "type"]
        if not words:
            continue
        name = words[0]
        bound.add(words[2] if len(words) >= 3 and words[1] == "as" else name)
        imports.append(Import(module, name, f"import {{ {name} }} from '{module}'"))
    star = re.search(rf"\*\s*as\s+({_ID})", rest)
    if star:
        bound.add(star.group(1))
        imports.append(Import(module, None, f"import * as {star.group(1)} from '{module}'"))
    default = re.match(rf"\s*({_ID})", rest.replace(star.group(0), " ") if star else rest)
    if default:
        bound.add(default.group(1))
        imports.append(Import(module, None, f"import {default.group(1)} from '{module}'"))
    return imports, bound


def code_imports(code: str) -> tuple[list[Import], set[str], list[tuple[int, int]]]:
    """The imports written as code in ``code`` (Python and JavaScript), the local names they
    bind, and their spans."""
    imports: list[Import] = []
    bound: set[str] = set()
    spans: list[tuple[int, int]] = []
    for m in _JS_IMPORT.finditer(code):
        found, names = _js_clause(m.group(1), m.group(3))
        imports += found
        bound |= names
        spans.append(m.span())
    for m in _JS_BARE.finditer(code):
        imports.append(Import(m.group(2), None, f"import '{m.group(2)}'"))
        spans.append(m.span())
    for m in _PY_FROM.finditer(code):
        module = m.group(1)
        for part in m.group(2).strip("()").split(","):
            words = part.split()
            if not words:
                continue
            name = words[0]
            bound.add(words[2] if len(words) >= 3 and words[1] == "as" else name)
            if name == "*":
                imports.append(Import(module, "*", f"from {module} import *"))
            else:
                imports.append(Import(module, name, f"from {module} import {name}"))
        spans.append(m.span())
    for m in _PY_IMPORT.finditer(code):
        for part in m.group(1).split(","):
            words = part.split()
            module = words[0]
            bound.add(words[2] if len(words) >= 3 else module.split(".")[0])
            imports.append(Import(module, None, f"import {module}"))
        spans.append(m.span())
    return imports, bound, spans


def prose_imports(text: str, *, claim: bool) -> list[Import]:
    """Imports stated in prose with code spans: "`Query` and `Path` from `fastapi`",
    "`Annotated` viene de `typing`". With ``claim`` (an answer's sentence) only when the text
    has an import verb; a source's plain "`Query` from `fastapi`" counts too."""
    if claim and not _IMPORT_VERB.search(text):
        return []
    out: list[Import] = []
    for m in _PROSE_FROM.finditer(text):
        module = m.group(2)
        for name in re.findall(rf"`({_ID})`", m.group(1)):
            out.append(Import(module, name, f"`{name}` from `{module}`"))
    return out


# ------------------------------------------------------------------------------- names

_HTML = frozenset(
    [
        "div",
        "span",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "button",
        "input",
        "form",
        "label",
        "img",
        "section",
        "main",
        "header",
        "footer",
        "nav",
        "table",
        "thead",
        "tbody",
        "tr",
        "td",
        "th",
        "br",
        "hr",
        "strong",
        "em",
        "code",
        "pre",
        "textarea",
        "select",
        "option",
        "className",
        "style",
        "key",
        "id",
        "href",
        "src",
        "alt",
        "value",
        "type",
        "name",
        "title",
    ]
)
_JS = frozenset(
    [
        "abstract",
        "arguments",
        "async",
        "await",
        "boolean",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "implements",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "of",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "console",
        "window",
        "document",
        "Math",
        "JSON",
        "Object",
        "Array",
        "String",
        "Number",
        "Boolean",
        "Promise",
        "Date",
        "Error",
        "Map",
        "Set",
        "Symbol",
        "RegExp",
        "parseInt",
        "parseFloat",
        "setTimeout",
        "setInterval",
        "clearTimeout",
        "fetch",
        "alert",
        "require",
        "module",
        "exports",
        "string",
        "number",
        "any",
        "unknown",
        "never",
    ]
)
EXEMPT = frozenset(
    {*keyword.kwlist, *keyword.softkwlist, *dir(builtins), "self", "cls", *_JS, *_HTML}
)
"""Identifiers never looked up in the passage."""

_STRIP = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\''
    r'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`'
    r"|/\*[\s\S]*?\*/|//[^\n]*|(?:^|(?<=\s))#[^\n]*",
    re.MULTILINE,
)
_JSX_TEXT = re.compile(
    r"(<[A-Za-z][\w.:-]*(?:\s(?:\{[^{}]*\}|[^<>{}])*)?/?>|</[A-Za-z][\w.:-]*\s*>|<>|</>)"
    r"([^<>]+)(?=<)"
)
_DEFINED = re.compile(rf"\b(?:def|class|function\*?|const|let|var)\s+({_ID})")
_DESTRUCTURED = re.compile(r"\b(?:const|let|var)\s+([\[{][^\]}=]*[\]}])")
_CALLABLE = re.compile(rf"\b(?:def|function\*?)\s*(?:{_ID})?\s*\(")
_ARROW = re.compile(rf"\(([^()]*)\)\s*=>|({_ID})\s*=>")
_LAMBDA = re.compile(r"\blambda\b([^:]*):")
_FOR = re.compile(r"\bfor\s*\(?\s*(?:const|let|var)?\s*([\w$,\s\[\]{}()]+?)\s+(?:in|of)\b")
_AS = re.compile(rf"\bas\s+({_ID})")
_ASSIGN = re.compile(r"^[ \t]*([\w$\[\],\s*]+?)[ \t]*(?::[^=\n]+)?=(?![=>])")
_CHAIN = re.compile(rf"(?<![\w$.])({_ID}(?:\s*\.\s*{_ID})*)")


def _balanced(text: str, start: int) -> str:
    """The text inside the parenthesis opened just before ``start``."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def _parameters(params: str) -> set[str]:
    """Names bound by a parameter list (defaults and annotations are not bound)."""
    bound: set[str] = set()
    depth = 0
    piece: list[str] = []
    pieces: list[str] = []
    for ch in params:
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        if ch == "," and depth == 0:
            pieces.append("".join(piece))
            piece = []
        else:
            piece.append(ch)
    pieces.append("".join(piece))
    for raw in pieces:
        p = raw.strip().lstrip("*.").strip()
        if p[:1] in ("{", "["):
            bound |= set(re.findall(_ID, p.split("=")[0]))
        elif m := re.match(_ID, p):
            bound.add(m.group())
    return bound


def _bound_names(code: str) -> set[str]:
    """Names ``code`` defines itself (see the module docstring)."""
    bound = set(_DEFINED.findall(code)) | set(_AS.findall(code))
    for m in _DESTRUCTURED.finditer(code):
        bound |= set(re.findall(_ID, m.group(1)))
    for m in _CALLABLE.finditer(code):
        bound |= _parameters(_balanced(code, m.end()))
    for m in _ARROW.finditer(code):
        bound |= _parameters(m.group(1)) if m.group(1) is not None else {m.group(2)}
    for m in _LAMBDA.finditer(code):
        bound |= _parameters(m.group(1))
    for m in _FOR.finditer(code):
        bound |= set(re.findall(_ID, m.group(1)))
    depth = 0
    for line in code.split("\n"):
        if depth == 0 and (assign := _ASSIGN.match(line)):
            bound |= set(re.findall(_ID, assign.group(1)))
        depth = max(
            0, depth + sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        )
    return bound


def _names(code: str, bound: set[str]) -> Iterator[str]:
    """Identifiers and dotted names of ``code`` to look up in the passage."""
    for m in _CHAIN.finditer(code):
        parts = re.split(r"\s*\.\s*", m.group(1))
        head = parts[0]
        if head in bound or head in EXEMPT or len(head) == 1:
            continue
        yield ".".join(parts)


def _jsx_expressions(text: str) -> str:
    """JSX text between tags with its words blanked and its ``{expressions}`` kept."""
    return re.sub(r"\{[^{}]*\}|[^{}]+", lambda m: m.group() if m.group()[0] == "{" else " ", text)


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(word)}(?![\w$])", text) is not None


def _chain_in(chain: str, text: str) -> bool:
    pattern = r"\s*\.\s*".join(re.escape(p) for p in chain.split("."))
    return re.search(rf"(?<![\w$]){pattern}(?![\w$])", text) is not None


# ------------------------------------------------------------------------------- check


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a passage says about imports: name → modules (casefolded), and ``*`` imports."""

    modules_of: dict[str, frozenset[str]]
    star: frozenset[str]


@lru_cache(maxsize=512)
def _facts(passage: str) -> _Facts:
    imports = code_imports(passage)[0] + prose_imports(passage, claim=False)
    modules_of: dict[str, set[str]] = {}
    star: set[str] = set()
    for imp in imports:
        if imp.name == "*":
            star.add(imp.module.casefold())
        elif imp.name is not None:
            modules_of.setdefault(imp.name, set()).add(imp.module.casefold())
    return _Facts({k: frozenset(v) for k, v in modules_of.items()}, frozenset(star))


def _same_module(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _backed(imp: Import, passage: str, facts: _Facts) -> bool:
    module = imp.module.casefold()
    module_named = (
        re.search(rf"(?<![\w.]){re.escape(module)}(?![\w])", passage.casefold()) is not None
    )
    if imp.name is None or imp.name == "*":
        return module_named
    stated = facts.modules_of.get(imp.name)
    if stated:
        return any(_same_module(module, m) for m in stated) or (
            any(_same_module(module, m) for m in facts.star) and _word_in(imp.name, passage)
        )
    return module_named and _word_in(imp.name, passage)


INLINE_CODE = re.compile(r"`(?=[^`\s])([^`\n]+)`")
"""An inline ``code`` span on one line; it starts with a non-space character, so that a stray
empty span (````) does not turn the prose after it into code."""


def code_spans(text: str) -> list[str]:
    """The inline ``code`` spans of a sentence, in order."""
    return INLINE_CODE.findall(text)


def unbacked_code(claim: str, blocks: Sequence[str], passage: str) -> list[str]:
    """What ``passage`` does not back of the code of a cited sentence: its import claims in
    prose, its inline code spans and the fenced ``blocks`` attached to it (see the module
    docstring). Each item as written (``from pydantic import Annotated``, ``app.gett``), in
    order, without repeats; empty when everything is backed."""
    facts = _facts(passage)
    missing: list[str] = []
    for imp in prose_imports(claim, claim=True):
        if not _backed(imp, passage, facts):
            missing.append(imp.shown)
    for code in [*code_spans(claim), *blocks]:
        imports, bound, spans = code_imports(code)
        for imp in imports:
            if not _backed(imp, passage, facts):
                missing.append(imp.shown)
        rest = code
        for a, b in sorted(spans, reverse=True):
            rest = rest[:a] + " " * (b - a) + rest[b:]
        rest = _STRIP.sub(" ", rest)
        rest = _JSX_TEXT.sub(lambda m: m.group(1) + _jsx_expressions(m.group(2)), rest)
        bound |= _bound_names(rest)
        for name in _names(rest, bound):
            found = _chain_in(name, passage) if "." in name else _word_in(name, passage)
            if not found:
                missing.append(name)
    return list(dict.fromkeys(missing))
