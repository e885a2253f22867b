"""Answer-string metrics (pure): SQuAD-style normalization, "contains a gold answer", token F1.

The definitions follow the official SQuAD v1.1 evaluation script (Rajpurkar et al. 2016):
normalize both strings (lowercase, remove punctuation, remove articles, collapse white
space), then compare tokens. Two changes for a multilingual project:

* accents are folded (Unicode NFKD, combining marks dropped: ``"Ramírez"`` and ``"ramirez"``
  match, ``"año"`` becomes ``"ano"``), and punctuation is SQuAD's (ASCII
  ``string.punctuation``, backticks and ``=`` included) plus every Unicode ``P*`` character
  (``¿``, ``¡``, ``«``, ``»``), removed as SQuAD removes it (``"1,000"`` -> ``"1000"``,
  ``"`rrf_k`"`` -> ``"rrfk"``);
* the articles removed are the English ``a, an, the`` and the Spanish ``el, la, los, las, un,
  una, unos, unas``, whatever the language of the text. Both sides are normalized alike, so a
  Spanish preposition ``a`` disappearing from both costs nothing.

"Contains" is the measure for answers that quote whole sentences (the extractive answerer):
the normalized gold answer occurs as a run of whole tokens in the normalized answer. Token F1
is SQuAD's: the harmonic mean of token precision and recall over the multiset of shared
tokens; both take the best of the gold answers.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "ARTICLES",
    "answer_tokens",
    "contains_answer",
    "max_token_f1",
    "normalize_answer",
    "token_f1",
]

ARTICLES = frozenset({"a", "an", "the", "el", "la", "los", "las", "un", "una", "unos", "unas"})
"""Articles removed by :func:`normalize_answer` (English and Spanish)."""

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_LINK_TARGET = re.compile(r"(\[[^\]\n]*\])(?:\([^)\n]*\)|\[[^\]\n]*\])")
"""The target of a Markdown link or image (``[text](url)``, ``[text][ref]``): dropped, its text
kept."""
_HTML_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>\n]*)?/?>")
"""An HTML tag (``<kbd>``, ``</abbr>``): dropped, the text between tags kept."""
_CODE_SPAN = re.compile(r"(`+)([^`\n]+?)\1")
"""An inline code span: its text is code, read as it is (a JSX tag in it is not markup)."""


def normalize_answer(text: str) -> str:
    """``text`` lowercased, accents folded, punctuation removed, articles removed, white space
    collapsed to single spaces (SQuAD's ``normalize_answer`` plus accent folding and Spanish
    articles). ``normalize_answer("¿El Año 1.500?") == "ano 1500"``. Markup is read as a reader
    sees it: a Markdown link's target and HTML tags are dropped first (``"[the docs](x.md)"``
    -> ``"docs"``, ``"<kbd>Ctrl</kbd>"`` -> ``"ctrl"``), so a gold answer copied from a
    Markdown source matches the same sentence shown as text; inside an inline code span
    nothing is dropped and its punctuation separates words (``"`<Fragment key={k}>`"`` ->
    ``"fragment key k"``: a JSX tag there was dropped as HTML, 2026-12-06)."""
    pieces: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_HTML_TAG.sub(" ", _LINK_TARGET.sub(r"\1", text[at : span.start()])))
        pieces.append(" " + re.sub(r"[^\w\s]", " ", span.group(2)) + " ")
        at = span.end()
    pieces.append(_HTML_TAG.sub(" ", _LINK_TARGET.sub(r"\1", text[at:])))
    text = "".join(pieces)
    decomposed = unicodedata.normalize("NFKD", text.lower())
    kept = [
        ch
        for ch in decomposed
        if not unicodedata.combining(ch)
        and ch not in _ASCII_PUNCTUATION
        and not unicodedata.category(ch).startswith("P")
    ]
    words = re.split(r"\s+", "".join(kept))
    return " ".join(w for w in words if w and w not in ARTICLES)


def answer_tokens(text: str) -> list[str]:
    """The tokens of the normalized ``text`` (split on spaces)."""
    normalized = normalize_answer(text)
    return normalized.split(" ") if normalized else []


def contains_answer(prediction: str, golds: Sequence[str]) -> bool:
    """Whether some gold answer, normalized, occurs in the normalized ``prediction`` as a run
    of whole tokens (``"1500"`` is not found in ``"15000"``). Gold answers that normalize to
    nothing (``"the"``) are ignored; ``False`` when none is left."""
    padded = f" {normalize_answer(prediction)} "
    return any(
        gold_norm and f" {gold_norm} " in padded
        for gold_norm in (normalize_answer(g) for g in golds)
    )


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 of one prediction against one gold answer, in [0, 1]: ``0.0`` when
    either side has no token or no token is shared."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    common = Counter(pred) & Counter(ref)
    shared = sum(common.values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred)
    recall = shared / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_token_f1(prediction: str, golds: Sequence[str]) -> float:
    """The best :func:`token_f1` over ``golds`` (``0.0`` for no gold answer)."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)
