"""Citations in LLM answers: parse the markers, map labels to sources, verify each claim.

Parsing accepts the forms models actually write: ``[1]``, ``[1][2]``, ``[1, 3]``,
``[Fuente-2]``, ``[Source 1; Source 3]`` and ``(Source-2, Source-4)``. The answer is split into
sentences; the markers after a sentence's final punctuation belong to it. Labels outside
``1..n`` are reported and dropped.

Verification (:class:`CitationChecker`) is a documented semantic + lexical test, not an NLI
model (none is installable offline here, see docs/generation.md). A claim is *supported* by a
cited passage when

1. every number in the claim occurs in the passage (``3.11``, ``100``, ``2024``...),
2. every "name" in the claim occurs in the passage or its headings: code identifiers
   (``snake_case``, ``camelCase``, ``dotted.names``, ``call()``, backticked text; ``.m()``
   also as ``m``), and capitalized words that do not start the sentence, which may also occur
   in the other context passages of the same document (the subject a document names once),
3. a negated claim (``not``, ``never``, ``no``, ``nunca``…) is backed by a negated passage
   sentence (the closest one),
4. the claim's code is backed by the passage: its import claims, inline ``code`` spans and
   the fenced code blocks attached to it pass the lexical test of
   :mod:`ragstrata.generate.code_check` (imported names come from the module the passage
   names; every other identifier occurs in the passage), and
5. ``semantic_weight · cos + (1 − semantic_weight) · coverage >= threshold``, where ``cos`` is
   the best cosine similarity between the claim and one or two consecutive sentences of the
   passage (the engine's embedder, document-side encoding on both sides) and ``coverage`` the
   share of the claim's BM25 terms (stemmed, stop words removed) found in the passage or its
   document title and heading path (the model is shown each source with its section).

A fenced code block is not a claim of its own: it belongs to the sentence that introduces it
(the one just before it) when that sentence cites a source, else to the sentence just after it
when that one does, else to both, and is checked against the sources of the sentence it belongs
to (for an uncited sentence: the sources post-hoc attribution tries). Marker-like text inside
code (``x = [1]``) is code, not a citation.

The weights were chosen on the development half of a labeled sample and the precision/recall
measured on the other half (``ragstrata eval-citations``, docs/evaluation.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ragstrata.assemble.context import Context, Source
from ragstrata.embed.base import Embedder
from ragstrata.generate.code_check import INLINE_CODE, unbacked_code
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.spans import after_abbreviation, continues_sentence, sentence_spans
from ragstrata.types import Citation, Grounding, UnsupportedClaim

_WORD = r"(?:fuentes?|sources?|src|refs?|documentos?|docs?|citas?)"
_BRACKET_LABEL = rf"(?:{_WORD}\s*[-#:]?\s*)?\d{{1,3}}(?:\s*[-–]\s*\d{{1,3}})?"
_PAREN_LABEL = rf"{_WORD}\s*[-#:]?\s*\d{{1,3}}"
_AND = r"(?:\s*[,;]\s*(?:y\s+|and\s+)?|\s+(?:y|and)\s+)"
"""Between two labels of one marker: "1, 2", "1; 2", "1, y 2", "1 and 2", "1 y 2"."""
MARKER = re.compile(
    rf"(?<!\w)\[\[\s*{_BRACKET_LABEL}(?:{_AND}{_BRACKET_LABEL})*\s*\]\](?!\()"
    rf"|(?<!\w)\[\s*{_BRACKET_LABEL}(?:{_AND}{_BRACKET_LABEL})*\s*\](?!\()"
    rf"|\(\s*{_PAREN_LABEL}(?:{_AND}{_PAREN_LABEL})*\s*\)",
    re.IGNORECASE,
)
"""One citation marker; its labels are the integers inside it, a range ``[1-3]`` (hyphen or en
dash) standing for each label of it. A Markdown link ``[3](https://...)`` is no marker (review 29:
an answer quoting a numbered link list was checked as citing source 3). A doubled ``[[2]]``
(some models write wiki-style markers) is one marker: its inner ``[2]`` alone left ``[]`` in
the checked answer (review 47)."""

MAX_RANGE = 20
"""Labels one range marker stands for at most (``[1-500]`` is read as ``[1-20]``)."""

_FENCE = re.compile(r"^\s*(```|~~~)")

MIN_CLAIM_WORDS = 2
"""A sentence needs this many words (2+ letters) to be a claim."""


def marker_labels(marker: str) -> list[int]:
    """The labels inside one marker, in order (``"(Source-2, Source-4)"`` → ``[2, 4]``,
    ``"[1-3]"`` → ``[1, 2, 3]``, at most :data:`MAX_RANGE` per range)."""
    labels: list[int] = []
    for first, last in _LABEL_OR_RANGE.findall(marker):
        a, b = int(first), int(last or first)
        labels.extend(range(a, min(b, a + MAX_RANGE - 1) + 1) if a <= b else [a, b])
    return labels


_LABEL_OR_RANGE = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")


@dataclass(frozen=True, slots=True)
class Claim:
    """One sentence of an answer. ``start``/``end``: its span in the answer (markers
    included); ``text``: the sentence without markers; ``labels``: valid cited labels in order
    of appearance (no repeats); ``invalid``: cited labels outside ``1..n``; ``code``: the
    fenced code blocks that belong to it (their lines, without the fences)."""

    start: int
    end: int
    text: str
    labels: tuple[int, ...]
    invalid: tuple[int, ...]
    code: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """An answer split into claims, with every marker's span and labels."""

    text: str
    claims: tuple[Claim, ...]
    markers: tuple[tuple[int, int, tuple[int, ...]], ...]

    @property
    def labels(self) -> list[int]:
        """Valid labels in first-use order."""
        return list(dict.fromkeys(label for c in self.claims for label in c.labels))

    @property
    def invalid(self) -> list[int]:
        """Out-of-range labels in first-use order."""
        return list(dict.fromkeys(label for c in self.claims for label in c.invalid))


_STOP = r"[.!?。][*_\"'”’»)]*"
"""A sentence's stop, and the closing emphasis or quotes after it: "**... al año.** [5] Las
..." was one claim (trial 25), which no source supports whole."""
_BOUNDARY = re.compile(_STOP + r"(?=[\s\x00]|$)|\n")
_STOP_AT_END = re.compile(_STOP + r"\s*$")
_DANGLING_ITEM = re.compile(r"\n[ \t]*(?:\d{1,3}[.)]|[-*+])[ \t]*$")


def _masked(text: str) -> str:
    """``text`` with each citation marker replaced by as many NULs."""
    return MARKER.sub(lambda m: "\x00" * len(m.group()), text)


def _goes_on(masked: str, stop: int) -> bool:
    """Whether the sentence of ``masked`` goes on past the stop before ``masked[stop]``, by the
    passages' rule (:func:`~ragstrata.text.spans.continues_sentence`: an abbreviation, a lower-case
    word next); markers after the stop (NULs) are skipped, a line break ends it."""
    after = stop
    while after < len(masked) and masked[after] in " \t\x00":
        after += 1
    if after >= len(masked) or masked[after] == "\n":
        return False
    return continues_sentence(masked, stop, after, len(masked))


def _segments(text: str, masked: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``; ``masked`` is ``text`` with markers replaced by NULs."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(masked):
        end = m.end()
        if m.group() != "\n" and _goes_on(masked, m.start() + 1):
            continue  # "Dra. Marta", "e.g. by", "p. ej. en", "EE. UU.": one claim (review 29)
        if m.group() != "\n":  # markers (and spaces before them) after the punctuation
            absorbed = re.match(r"(?:[ \t]*\x00+)+", masked[end:])
            if absorbed:
                end += absorbed.end()
        if end > start:
            spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def complete_sentences(text: str) -> str:
    """``text`` up to its last complete sentence, with that sentence's markers (the sentence
    split of :func:`parse_answer`); a list number or bullet left dangling after it is dropped.
    ``""`` when no sentence is complete. For an answer cut at its token limit."""
    masked = _masked(text)
    spans = _segments(text, masked)
    cut = len(text)
    if spans and not _STOP_AT_END.search(masked[spans[-1][0] :].replace("\x00", "").rstrip()):
        cut = spans[-1][0]
    return _DANGLING_ITEM.sub("", text[:cut].rstrip()).rstrip()


def parse_answer(text: str, n_sources: int) -> ParsedAnswer:
    """Split ``text`` into :class:`Claim` sentences and read their citation markers.

    Lines inside fenced code blocks and sentences of fewer than :data:`MIN_CLAIM_WORDS` words
    are not claims; markers in such sentences (and on fence lines) are still listed in
    ``markers``. Text inside code (between the fences, or in an inline ``code`` span) holds no
    markers. Each fenced block is attached to a claim (see the module docstring). Labels
    outside ``1..n_sources`` go to ``invalid``.
    """
    fenced = _fenced_ranges(text)
    code = [_inner(text, a, b) for a, b in fenced] + [m.span() for m in INLINE_CODE.finditer(text)]
    markers = [
        (m.start(), m.end(), tuple(marker_labels(m.group())))
        for m in MARKER.finditer(text)
        if not any(a <= m.start() < b for a, b in code)
    ]
    masked = list(text)
    for start, end, _ in markers:
        masked[start:end] = "\x00" * (end - start)
    claims: list[Claim] = []
    for start, end in _segments(text, "".join(masked)):
        if any(a <= start < b for a, b in fenced):
            continue
        inside = [mk for mk in markers if start <= mk[0] < end]
        plain = text[start:end]
        for m_start, m_end, _ in reversed(inside):
            plain = plain[: m_start - start] + plain[m_end - start :]
        plain = re.sub(r"\*\*|__", "", plain)  # bold: markup, not words of the claim
        plain = re.sub(r"\s+", " ", plain).strip()
        plain = re.sub(r"\s+([.,;:!?])", r"\1", plain)
        if inside:  # "Redis [1], [3]." left "Redis,."
            plain = re.sub(r"[,;]+([.!?:]?)$", r"\1", plain)
        if len(re.findall(r"[^\W\d_]{2,}", plain)) < MIN_CLAIM_WORDS:
            continue  # markup residue ("/// note", "</source>"), not a claim
        labels = [lab for mk in inside for lab in mk[2]]
        valid = tuple(dict.fromkeys(lab for lab in labels if 1 <= lab <= n_sources))
        invalid = tuple(dict.fromkeys(lab for lab in labels if not 1 <= lab <= n_sources))
        claims.append(Claim(start, end, plain, valid, invalid))
    blocks: dict[int, list[str]] = {}
    for a, b in fenced:
        inner_start, inner_end = _inner(text, a, b)
        for owner in _code_owners(claims, a, b):
            blocks.setdefault(owner, []).append(text[inner_start:inner_end])
    claims = [replace(c, code=tuple(blocks.get(ci, ()))) for ci, c in enumerate(claims)]
    return ParsedAnswer(text, tuple(claims), tuple(markers))


def _inner(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of a fenced block's code: its fence lines excluded."""
    first = text.find("\n", start, end)
    inner_start = end if first < 0 else first + 1
    last = text.rfind("\n", inner_start, end)
    closed = last >= 0 and _FENCE.match(text[last + 1 : end]) is not None
    return inner_start, (last if closed else end)


def _code_owners(claims: Sequence[Claim], start: int, end: int) -> list[int]:
    """The claims a fenced block at ``start:end`` belongs to: the claim just before it when it
    cites a source, else the one just after it when that one does, else both (whichever gets a
    citation by post-hoc attribution then vouches for the code too)."""
    before = max((i for i, c in enumerate(claims) if c.end <= start), default=None)
    after = min((i for i, c in enumerate(claims) if c.start >= end), default=None)
    for candidate in (before, after):
        if candidate is not None and claims[candidate].labels:
            return [candidate]
    return [i for i in (before, after) if i is not None]


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    pos, open_at = 0, -1
    for line in text.split("\n"):
        if _FENCE.match(line):
            if open_at < 0:
                open_at = pos
            else:
                ranges.append((open_at, pos + len(line)))
                open_at = -1
        pos += len(line) + 1
    if open_at >= 0:
        ranges.append((open_at, len(text)))
    return ranges


# ------------------------------------------------------------------------------ verify

_NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,]\d+)*(?!\d)")
"""A number, also when written against letters ("v2.2.0", "Python3.12", "8GB", "500ms": review
29 found each of them "supported" by a source giving another)."""
_IDENT = re.compile(
    r"`([^`]+)`"  # backticked
    r"|\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)\b"  # dotted.name
    r"|\b([a-z]+_[\w]+|[a-z]+[A-Z]\w*|\w+\(\))"  # snake_case, camelCase, call()
)
_NAME = re.compile(r"(?<!^)\b([A-ZÁÉÍÓÚÑ][\w-]*[A-Za-z0-9])")
_SENTENCE_START = re.compile(r"[.!?]\s$")
"""A capitalized word after this starts a sentence, not a name, unless the period ends an
abbreviation ("Dra. Marta López", "Mr. Smith": review 29)."""


_EN_NUMBERS = [
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "-",  # "ten": also Spanish ("ten en cuenta", keep in mind), 10 on every such claim
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_ES_NUMBERS = [
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "-",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
]
NUMBER_WORDS: dict[str, int] = {
    word: n
    for words in (_EN_NUMBERS, _ES_NUMBERS)
    for n, word in enumerate(words, 2)
    if word != "-"
}
"""Numbers 2-20 written as English or Spanish words. "one"/"uno"/"una" (also a pronoun and
articles), Spanish "once" (English "once") and English "ten" (Spanish "ten en cuenta": the
cross-lingual bench's Spanish claims all needed a 10) are left out."""
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


def claim_numbers(text: str) -> set[str]:
    """Numbers in a claim (``3.11``, ``100``, ``1,5``), thousands separators kept as written,
    and numbers 2-20 written as words (``"five"``, ``"cinco"`` → ``"5"``)."""
    numbers = {m.group().rstrip(".,") for m in _NUMBER.finditer(text)}
    return numbers | {str(NUMBER_WORDS[m.group().lower()]) for m in _NUMBER_WORD.finditer(text)}


def claim_identifiers(text: str) -> set[str]:
    """Code identifiers of a claim: backticked text, ``dotted.names``, ``snake_case``,
    ``camelCase`` and ``call()``."""
    names = {next(g for g in m.groups() if g).strip() for m in _IDENT.finditer(text)}
    return {n for n in names if len(n) > 1}


def claim_capitalized(text: str) -> set[str]:
    """Capitalized words of a claim that do not start it (``FastAPI``, ``Hook``, ``Debian``)."""
    stripped = text.lstrip("\"'¿¡(* -")
    names = {
        m.group(1)
        for m in _NAME.finditer(stripped)
        if m.start() > 0
        and (
            not _SENTENCE_START.search(stripped, max(0, m.start() - 2), m.start())
            or after_abbreviation(stripped, m.start())
        )
    }
    return {n for n in names if len(n) > 1}


def claim_names(text: str) -> set[str]:
    """Code identifiers and mid-sentence capitalized words of a claim."""
    return claim_identifiers(text) | claim_capitalized(text)


def identifier_forms(name: str) -> tuple[str, ...]:
    """The forms under which a source may write identifier ``name``: as written, and without
    a method's leading dot and call parentheses (``.add_task()`` → ``add_task``; a source
    writes ``background_tasks.add_task(...)``)."""
    bare = name.strip().lstrip(".")
    if bare.endswith("()"):
        bare = bare[:-2]
    return tuple(dict.fromkeys(f for f in (name, bare) if len(f) > 1))


_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|nothing|nobody|neither|nor|nunca|jam[aá]s|ninguna?"
    r"|ningún|ninguno|nadie|nada|tampoco|ni)\b"
    r"|\b(?:(?!(?-i:None)\b)none|(?-i:None)(?=\s+of\b))\b"
    r"|n['’]t\b",
    re.IGNORECASE,
)
"""Negation words, English and Spanish. Python's ``None`` is none ("None of them" is; review
47: "the default value is `None`" made every claim denying its passage verified), and inline
code is read as blank (:func:`_negations`)."""
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _negations(text: str) -> Iterator[re.Match[str]]:
    """The negation words of ``text`` (:data:`_NEGATION`) outside inline code spans, with
    their offsets in ``text``."""
    return _NEGATION.finditer(_CODE_SPAN.sub(lambda m: " " * len(m.group()), text))


_PRIVATIVE = re.compile(r"\b(?:without|sin(?!\s+embargo\b))\b", re.IGNORECASE)
"""Words that negate without a negation word ("runs without installing anything"): a claim
with one is not said to contradict a negated source sentence."""
DENIAL_SPAN = 4
"""Words after a source's negation word read by the contradiction test (``_denies``)."""
DENIED_WORDS = 2
"""Of those, how many distinct words a claim without negation must share a term with for the
source to deny it (review 29: "Refunds are available after 30 days" was verified by "Refunds are not
available after 30 days")."""


_REFERENCE = re.compile(
    r",?\s*\b(?:(?:as|is|are)\s+)?(?:stated|mentioned|indicated|shown|described|explained|noted|"
    r"specified|given)\s+in\s+(?:the\s+)?(?:provided\s+|given\s+)?"
    r"(?:sources?|documents?|documentation|context|text)(?:\s*\d+)?\b"
    r"|,?\s*\b(?:according\s+to|based\s+on)\s+(?:the\s+)?(?:provided\s+|given\s+)?"
    r"(?:sources?|documents?|documentation|context)(?:\s*\d+)?\b"
    r"|,?\s*\b(?:como\s+se\s+)?(?:menciona|indica|describe|explica|muestra|señala|dice)\s+en\s+"
    r"(?:el|la|los|las)\s+(?:fuentes?|documentos?|documentación|contexto|texto)(?:\s*\d+)?\b"
    r"|,?\s*\b(?:según|de\s+acuerdo\s+con)\s+(?:el|la|los|las)\s+"
    r"(?:fuentes?|documentos?|documentación|contexto)(?:\s*\d+)?\b",
    re.IGNORECASE,
)
"""A phrase that points at the sources instead of saying something ("as stated in the source",
"según la fuente 2"): left out of the claim the checker tests (it adds words, a capitalized
"Source" and a number that no passage contains)."""


def claim_content(claim: str) -> str:
    """``claim`` without its references to the sources (:data:`_REFERENCE`); the claim itself
    when nothing else would be left."""
    content = re.sub(r"\s+([.,;:!?])", r"\1", _REFERENCE.sub("", claim)).strip(" ,;:")
    return content if len(content.split()) >= MIN_CLAIM_WORDS else claim


_POINTER = re.compile(
    r"^(?:this|that|it|these|the\s+(?:information|answer|value|details?))\b[^.]*?\b"
    r"(?:can\s+be\s+found|is\s+found|are\s+found|(?:is|are)\s+(?:described|mentioned|listed|"
    r"shown|given|explained|documented|stated))\b[^.]*?\b(?:in|under|on)\b"
    r"|^(?:esto|este\s+(?:valor|dato)|esta\s+(?:información|respuesta)|se|lo)\b[^.]*?"
    r"\b(?:se\s+encuentra|puede\s+encontrar|se\s+(?:menciona|describe|indica|explica|muestra|"
    r"detalla))\b[^.]*?\ben\b",
    re.IGNORECASE,
)


def is_pointer(claim: str) -> bool:
    """Whether ``claim`` only says where something is written ("This can be found in the
    table under Error codes", "Este valor se encuentra en la línea 3 del documento"): such a
    sentence asserts nothing to check, so it is not attributed and never counts as a verified
    claim (it would pass the lexical test against the very heading it names)."""
    return bool(_POINTER.search(claim_content(claim)))


def _negated(text: str) -> bool:
    """Whether ``text`` contains a negation word (English or Spanish)."""
    return next(_negations(text), None) is not None


def _norm(text: str) -> str:
    """``text`` for the names check: accents and case folded, spaces made one ("Jose Munoz"
    is the source's "José Muñoz": an English answer often drops them)."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"\s+", " ", bare).casefold()


_GROUPED = re.compile(r"\d{1,3}(?:([.,\u00a0\u202f ])\d{3})(?:\1\d{3})*")
"""A number written with a thousands separator ("1,000", "1.000", "10 000")."""


def _number_forms(number: str) -> list[str]:
    """Regular expressions for the ways a passage may write ``number`` of a claim: as written,
    with the other decimal mark ("1,5" / "1.5"), with or without thousands separators ("1000" /
    "1,000" / "1.000" / "1 000") and leading zeros ("2:00" / "02:00")."""
    forms = {number, number.replace(",", ".") if "," in number else number.replace(".", ",")}
    digits = number
    if _GROUPED.fullmatch(number):
        digits = re.sub(r"\D", "", number)
        forms.add(digits)
    patterns = [re.escape(f) for f in forms]
    if digits.isdigit():
        core = digits.lstrip("0") or "0"
        patterns.append("0*" + re.escape(core))
        if len(core) > 3:
            head, tail = core[: len(core) % 3 or 3], core[len(core) % 3 or 3 :]
            groups = [tail[i : i + 3] for i in range(0, len(tail), 3)]
            patterns.append(re.escape(head) + "".join(rf"[.,\u00a0\u202f ]{g}" for g in groups))
    return patterns


def _number_in(number: str, passage: str) -> bool:
    """Whether ``passage`` writes ``number`` (:func:`_number_forms`), not as part of a longer
    number."""
    if any(re.search(rf"(?<!\d){p}(?!\d)", passage) for p in _number_forms(number)):
        return True
    words = [w for w, n in NUMBER_WORDS.items() if str(n) == number]  # "3": "three", "tres"
    return (
        bool(words) and re.search(rf"\b(?:{'|'.join(words)})\b", passage, re.IGNORECASE) is not None
    )


@dataclass(frozen=True, slots=True)
class Support:
    """How well one passage supports one claim. ``score`` in [0, 1]; ``cosine`` and
    ``coverage`` are its parts; ``missing`` lists numbers/names absent from the passage;
    ``evidence`` is the passage sentence(s) closest to the claim, ``(start, end)`` in the
    passage."""

    verified: bool
    score: float
    cosine: float
    coverage: float
    missing: tuple[str, ...]
    evidence: tuple[int, int]


@dataclass(frozen=True, slots=True)
class CheckerSettings:
    """``semantic_weight`` in [0, 1]; ``threshold`` on the blended score; ``check_names``:
    require the claim's names/identifiers in the passage; ``check_code``: require the claim's
    code to be backed by the passage (:func:`~ragstrata.generate.code_check.unbacked_code`).
    Defaults chosen by ``ragstrata eval-citations`` on its development half with
    ``minilm-onnx`` (docs/evaluation.md)."""

    semantic_weight: float = 0.4
    threshold: float = 0.6
    check_names: bool = True
    check_code: bool = True
    cross_threshold: float | None = None
    """For a claim and a passage in different languages (Spanish and English): the cosine
    alone must reach it, the lexical coverage is not blended (a translation shares almost no
    terms with its source). ``None``: such pairs get the same-language rule (an English-only
    embedder's cosines say nothing across languages)."""


CALIBRATED_CHECKER: dict[str, CheckerSettings] = {
    name: CheckerSettings(semantic_weight=0.4, threshold=0.775, cross_threshold=0.87)
    for name in ("e5-onnx", "e5-onnx-q4", "e5-onnx-fp32", "e5")
}
"""Checker settings per embedder (the name's prefix before ``:``) where they differ from the
defaults: chosen by ``ragstrata eval-citations`` on its development half with ``e5-onnx``
(test half: precision 0.9405, recall 0.9875; docs/evaluation.md). e5's cosines sit higher than
MiniLM's, so the same blend needs a higher threshold. ``cross_threshold`` chosen by
``bench/citation_crosslingual.py`` on the training pages of fastapi-docs-md (test pages:
precision 0.9868, recall 0.9217 on 6,316 pairs; the blend's recall there: 0.0423). Other
embedders get
:class:`CheckerSettings` ()."""


def checker_settings_for(embedder: str) -> CheckerSettings:
    """The calibrated :class:`CheckerSettings` of ``embedder`` (a name such as
    ``e5-onnx:multilingual-e5-small``), else the defaults."""
    return CALIBRATED_CHECKER.get(embedder.split(":", 1)[0], CheckerSettings())


class CitationChecker:
    """Semantic + lexical support test of (claim, passage) pairs (see the module docstring).

    ``embedder`` embeds claims and passage sentences (document-side encoding, unit vectors);
    ``analyzer`` gives BM25 terms; ``settings`` default to those calibrated for the embedder
    (:func:`checker_settings_for`). Raises nothing of its own; embedder errors propagate.
    """

    def __init__(
        self,
        embedder: Embedder,
        analyzer: Analyzer,
        settings: CheckerSettings | None = None,
    ) -> None:
        self.embedder = embedder
        self.analyzer = analyzer
        self.settings = settings or checker_settings_for(embedder.name)
        self._cache: dict[str, Any] = {}

    def _windows(self, passage: str) -> list[tuple[int, int]]:
        spans = [
            s for s in sentence_spans(passage, 0, len(passage)) if passage[s[0] : s[1]].strip()
        ]
        if not spans:
            return [(0, len(passage))]
        pairs = [(spans[i][0], spans[i + 1][1]) for i in range(len(spans) - 1)]
        return spans + pairs

    def features(
        self,
        claims: Sequence[str],
        passages: Sequence[str],
        *,
        code: Sequence[Sequence[str]] | None = None,
        headings: Sequence[str] | None = None,
        documents: Sequence[str] | None = None,
        languages: Sequence[str] | None = None,
    ) -> list[Support]:
        """:class:`Support` of ``claims[i]`` by ``passages[i]`` (same length), with the
        configured settings; ``code[i]``: the fenced code blocks of claim ``i`` (none when
        ``code`` is ``None``); ``headings[i]``: the passage's document title and heading path,
        where the names check also looks (a section "Use CORSMiddleware" backs the name
        ``CORSMiddleware``); ``documents[i]``: the other context passages of the passage's
        document, where capitalized words are also looked for (a passage of the FastAPI
        tutorial backs ``FastAPI`` although only its neighbour names it); identifiers and
        numbers must be in the passage or its headings; ``languages[i]``: the passage's
        document language (``es``, ``en``, ``und``...): a claim in the other of Spanish and
        English is judged by ``settings.cross_threshold`` when set. Embeds all claims and
        passage windows in two batches. Raises ``ValueError`` when the sequences differ in
        length."""
        if len(claims) != len(passages) or (code is not None and len(code) != len(claims)):
            raise ValueError(f"{len(claims)} claims for {len(passages)} passages")
        if headings is not None and len(headings) != len(claims):
            raise ValueError(f"{len(headings)} headings for {len(claims)} claims")
        if documents is not None and len(documents) != len(claims):
            raise ValueError(f"{len(documents)} documents for {len(claims)} claims")
        if languages is not None and len(languages) != len(claims):
            raise ValueError(f"{len(languages)} languages for {len(claims)} claims")
        if not claims:
            return []
        claims = [claim_content(c) for c in claims]
        cross = [False] * len(claims)
        if languages is not None and self.settings.cross_threshold is not None:
            from ragstrata.text.language import query_language

            said = {c: query_language(c) for c in set(claims)}
            cross = [
                said[c] is not None and lang in ("es", "en") and said[c] != lang
                for c, lang in zip(claims, languages, strict=True)
            ]
        windows = [self._windows(p) for p in passages]
        texts = [p[a:b] for p, ws in zip(passages, windows, strict=True) for a, b in ws]
        unique = list(dict.fromkeys(texts))
        vectors = self.embedder.embed_documents(unique) if unique else np.zeros((0, 1))
        index = {t: i for i, t in enumerate(unique)}
        distinct = list(dict.fromkeys(claims))  # each claim is paired with several sources
        row_of = {c: i for i, c in enumerate(distinct)}
        claim_vecs = self.embedder.embed_documents(distinct)[[row_of[c] for c in claims]]
        out: list[Support] = []
        for ci, (claim, passage, ws) in enumerate(zip(claims, passages, windows, strict=True)):
            rows = [index[passage[a:b]] for a, b in ws]
            sims = vectors[rows] @ claim_vecs[ci]
            best = int(np.argmax(sims))
            blocks = code[ci] if code is not None else ()
            heading = headings[ci] if headings is not None else ""
            document = documents[ci] if documents is not None else ""
            out.append(
                self._decide(
                    claim,
                    passage,
                    float(sims[best]),
                    ws[best],
                    blocks,
                    heading,
                    document,
                    cross=cross[ci],
                )
            )
        return out

    def _denies(self, evidence: str, terms: set[str]) -> bool:
        """Whether ``evidence`` negates what a claim of analysed ``terms`` asserts: in one of
        its sentences that holds at least half of the claim's terms, at least
        :data:`DENIED_WORDS` of the :data:`DENIAL_SPAN` words right after a negation word share
        a term with the claim ("Refunds are **not available after** 30 days"
        against "Refunds are available after 30 days"; "tres proyectos y no incluye soporte
        telefónico" does not deny "incluye tres proyectos": one shared word)."""
        if not terms:
            return False
        sentences = [
            line[a:b]
            for line in evidence.split("\n")
            for a, b in sentence_spans(line, 0, len(line))
        ]  # a heading or a "/// tip" line is a sentence of its own
        for sentence in sentences:
            # the sentence says what the claim says (half its terms at least), not another
            # thing next to it ("Notice that you are not passing the router itself")
            if len(terms & set(self.analyzer.terms(sentence))) < len(terms) / 2:
                continue
            for m in _negations(sentence):
                after = sentence[m.end() :].split()[:DENIAL_SPAN]
                # distinct words: "no son JSON a JSON" shares one, not two
                shared = {w.lower() for w in after if terms & set(self.analyzer.terms(w))}
                if len(shared) >= DENIED_WORDS:
                    return True
        return False

    def _decide(
        self,
        claim: str,
        passage: str,
        cosine: float,
        evidence: tuple[int, int],
        blocks: Sequence[str] = (),
        heading: str = "",
        document: str = "",
        *,
        cross: bool = False,
    ) -> Support:
        s = self.settings
        terms = set(self.analyzer.terms(claim))
        shown = set(self.analyzer.terms(passage)) | set(self.analyzer.terms(heading))
        coverage = len(terms & shown) / len(terms) if terms else 0.0
        missing = [n for n in sorted(claim_numbers(claim)) if not _number_in(n, passage)]
        if s.check_names:
            folded = _norm(passage) + "\n" + _norm(heading)
            missing += [
                n
                for n in sorted(claim_identifiers(claim))
                if not any(_norm(f) in folded for f in identifier_forms(n))
            ]
            in_document = folded + "\n" + _norm(document)
            missing += [
                n
                for n in sorted(claim_capitalized(claim) - set(missing))
                if _norm(n) not in in_document
            ]
        said = passage[evidence[0] : evidence[1]]
        if _negated(claim) and not _negated(said):
            missing.append("(negation)")
        elif not _negated(claim) and not _PRIVATIVE.search(claim) and self._denies(said, terms):
            missing.append("(negation)")  # "are available" against "are not available"
        if s.check_code:
            missing += [m for m in unbacked_code(claim, blocks, passage) if m not in missing]
        if cross and s.cross_threshold is not None:  # a translation shares few terms
            score = max(cosine, 0.0)
            verified = not missing and score >= s.cross_threshold
        else:
            score = s.semantic_weight * max(cosine, 0.0) + (1 - s.semantic_weight) * coverage
            verified = not missing and score >= s.threshold
        return Support(verified, round(score, 4), cosine, coverage, tuple(missing), evidence)

    def check(
        self, claim: str, passage: str, *, code: Sequence[str] = (), heading: str = ""
    ) -> Support:
        """:class:`Support` of one pair (``code``: the claim's fenced code blocks)."""
        return self.features([claim], [passage], code=[code], headings=[heading])[0]


# ----------------------------------------------------------------------------- ground

Unsupported = Literal["flag", "remove"]


@dataclass(frozen=True, slots=True)
class Grounded:
    """The answer rewritten with canonical, renumbered markers, its citations (one per cited
    source, numbered 1..k in first-use order), their legend, and what the check found
    (``grounding``; :attr:`diagnostics` is its JSON)."""

    text: str
    citations: tuple[Citation, ...]
    legend: tuple[str, ...]
    grounding: Grounding

    @property
    def diagnostics(self) -> dict[str, Any]:
        """:attr:`grounding` as JSON (``claims``, ``verified_claims``, ``invalid_labels``,
        ``unsupported``, ``uncited``, ``attributed``, ``reattributed``)."""
        return self.grounding.to_json()


_SURROGATE = re.compile("[\ud800-\udfff]")


def ground(
    answer: str,
    context: Context,
    checker: CitationChecker | None,
    *,
    unsupported: Unsupported = "flag",
    attribute: bool = True,
) -> Grounded:
    """Parse ``answer``'s citations against ``context``, verify each (claim, cited source)
    pair with ``checker`` (``None``: not verified, ``verified`` stays ``True`` and ``support``
    ``None``), and rewrite the markers as ``[a][b]`` in the new numbering.

    A citation is ``verified`` when every claim citing it is supported by its passage. With
    ``unsupported="remove"`` the markers of unsupported (claim, source) pairs are removed and
    sources left uncited disappear from the citations. With ``attribute`` (and a checker), a
    claim the model left without any citation gets the source that supports it best, when one
    does (post-hoc attribution; small models often forget markers); its marker is inserted
    before the sentence's final punctuation; a claim whose cited sources all fail the check
    gets, the same way, the source that supports it best in place of its own (small models
    also mis-number their sources). Diagnostics: ``invalid_labels`` (out-of-range
    labels, removed from the text), ``unsupported`` (claims with the labels that do not
    support them, and ``missing``: what those sources lack, numbers, names or code),
    ``uncited`` (claims left without any valid citation), ``attributed`` (claims that got their
    citation from the checker), ``reattributed`` (claims whose citation the checker replaced),
    ``claims`` (number of claims), ``verified_claims`` (claims with
    at least one supporting citation). ``answer`` is read in Unicode NFC (passages are stored
    so), lone surrogates (a JSON escape of a server) replaced by U+FFFD.
    """
    answer = unicodedata.normalize("NFC", _SURROGATE.sub("\ufffd", answer))
    sources = {s.label: s for s in context.sources}
    parsed = parse_answer(answer, len(context.sources))
    labels_of = {ci: list(c.labels) for ci, c in enumerate(parsed.claims)}
    pairs = [(ci, label) for ci, c in enumerate(parsed.claims) for label in c.labels]
    pointers = {ci for ci, c in enumerate(parsed.claims) if is_pointer(c.text)}
    bare = [ci for ci, c in enumerate(parsed.claims) if not c.labels and ci not in pointers]
    cited = [ci for ci, c in enumerate(parsed.claims) if c.labels and ci not in pointers]
    if attribute and checker is not None:
        pairs += [(ci, label) for ci in bare for label in sources]
        pairs += [
            (ci, label)
            for ci in cited
            for label in sources
            if label not in parsed.claims[ci].labels
        ]
    supports: dict[tuple[int, int], Support] = {}
    if checker is not None and pairs:
        # the passage's own language when its function words say it clearly and its
        # document is tagged Spanish, English or undetermined, else its document's: a mixed
        # document is tagged with one language (a re-test of trial 25: an English section of
        # a Spanish-tagged file failed Spanish claims)
        passage_language = {label: _language_of(source) for label, source in sources.items()}
        found = checker.features(
            [parsed.claims[ci].text for ci, _ in pairs],
            [sources[label].body for _, label in pairs],
            code=[parsed.claims[ci].code for ci, _ in pairs],
            headings=[_heading_of(sources[label]) for _, label in pairs],
            documents=[_same_document(sources[label], context.sources) for _, label in pairs],
            languages=[passage_language[label] for _, label in pairs],
        )
        supports = dict(zip(pairs, found, strict=True))
    attributed: list[int] = []
    reattributed: list[int] = []
    if attribute and checker is not None:
        for ci in cited:
            if any(supports[ci, lab].verified for lab in labels_of[ci]):
                continue
            passing = [lab for lab in sources if supports[ci, lab].verified]
            if passing:
                labels_of[ci] = [max(passing, key=lambda lab: supports[ci, lab].score)]
                reattributed.append(ci)
        for ci in bare:
            options = [supports[ci, lab] for lab in sources if supports[ci, lab].verified]
            if options:
                best = max(
                    sources, key=lambda lab: (supports[ci, lab].verified, supports[ci, lab].score)
                )
                labels_of[ci] = [best]
                attributed.append(ci)
    keep: dict[int, list[int]] = {}
    unsupported_claims: list[UnsupportedClaim] = []
    for ci, claim in enumerate(parsed.claims):
        bad = [
            lab for lab in labels_of[ci] if (ci, lab) in supports and not supports[ci, lab].verified
        ]
        if bad:
            missing = dict.fromkeys(m for lab in bad for m in supports[ci, lab].missing)
            unsupported_claims.append(UnsupportedClaim(claim.text, tuple(bad), tuple(missing)))
        keep[ci] = [lab for lab in labels_of[ci] if unsupported == "flag" or lab not in bad]
    # "remove": a sentence none of whose citations holds goes with them (trial 25: only its
    # marker went, and "La luna está hecha de queso [1]" stayed, uncited, in the answer)
    # and so does one without a marker that no source supports (a re-test of trial 25: it
    # stayed, with no "not supported" line), when the checker looked for one
    # ... but not a heading or a lead-in line ("Los pasos son:"), which assert nothing
    looked = attribute and checker is not None
    dropped = {
        ci
        for ci, claim in enumerate(parsed.claims)
        if unsupported == "remove"
        and not keep[ci]
        and ci not in pointers
        and (labels_of[ci] or (looked and ci in bare and not _lead_in(parsed.text, claim)))
    }
    uncited = tuple(parsed.claims[ci].text for ci in keep if not keep[ci])
    for ci in dropped:
        del keep[ci]
    order = list(dict.fromkeys(lab for ci in keep for lab in keep[ci]))
    renumber = {old: new for new, old in enumerate(order, start=1)}
    text = _rewrite(parsed, keep, renumber, set(attributed), dropped)
    citations: list[Citation] = []
    legend: list[str] = []
    for old in order:
        source = sources[old]
        claim_supports = [
            supports[ci, old] for ci in keep if old in keep[ci] and (ci, old) in supports
        ]
        verified = all(s.verified for s in claim_supports) if claim_supports else True
        best_support = max(claim_supports, key=lambda s: s.score, default=None)
        citations.append(_citation(renumber[old], source, best_support, verified))
        legend.append(source.legend_line(renumber[old]))
    verified_claims = sum(
        1
        for ci in keep
        if ci not in pointers
        and any((ci, lab) not in supports or supports[ci, lab].verified for lab in keep[ci])
    )
    grounding = Grounding(
        claims=len(parsed.claims),
        verified_claims=verified_claims,
        invalid_labels=tuple(parsed.invalid),
        unsupported=tuple(unsupported_claims),
        uncited=uncited,
        attributed=tuple(parsed.claims[ci].text for ci in attributed),
        reattributed=tuple(parsed.claims[ci].text for ci in reattributed),
    )
    return Grounded(text, tuple(citations), tuple(legend), grounding)


def _citation(label: int, source: Source, support: Support | None, verified: bool) -> Citation:
    """The citation of ``source``: its quote is the checker's evidence window in the chunk it
    names, and its pages are the quote's (the chunk's whole range when the quote is not found
    in the chunk's text)."""
    chunk = source.hit.chunk
    start, end = source.span
    body = source.body
    pages = None
    if support is not None:
        a, b = support.evidence
        if source.parts:  # an expanded section: the chunk that holds the quote (a review,
            chunk = source.chunk_at(a, b)  # 2026-12-06: the hit's, which did not hold it)
            start, end = chunk.start, chunk.end
            at = next((pa for pa, _, c in source.parts if c.chunk_id == chunk.chunk_id), -1)
            if at >= 0:  # a window over two parts is cut to the named chunk's (review 39:
                a, b = max(a, at), min(b, at + len(chunk.text))  # the quote ran past it)
        else:
            at = body.find(chunk.text)  # the rendered passage: heading line, text, footer
        quote = body[a:b].strip()
        if at >= 0 and a < b:
            inner = max(0, a - at), min(len(chunk.text), max(0, b - at))
            pages = chunk.pages_of(*inner)
    else:
        quote = body.strip().split("\n", 1)[0][:300]
    if pages is None and chunk.page_start is not None:  # review 39: LLM citations had none
        pages = chunk.page_start, chunk.page_end or chunk.page_start
    return Citation(
        label=label,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        source=chunk.source,
        heading_path=chunk.section_path,
        start=start,
        end=end,
        score=source.hit.score,
        quote=quote,
        verified=verified,
        support=support.score if support is not None else None,
        page_start=pages[0] if pages else None,
        page_end=pages[1] if pages else None,
    )


def _rewrite(
    parsed: ParsedAnswer,
    keep: dict[int, list[int]],
    renumber: dict[int, int],
    attributed: set[int] | None = None,
    dropped: set[int] | None = None,
) -> str:
    """The answer with each claim's markers replaced by one canonical group at the position of
    its first marker (other markers removed); markers outside claims are removed. Claims in
    ``attributed`` get their group there too, or, with no marker of their own (an
    out-of-range one counts), before their final punctuation. Claims in ``dropped`` are
    removed with their markers."""
    text = parsed.text
    gone = dropped or set()
    edits: list[tuple[int, int, str]] = [
        (parsed.claims[ci].start, parsed.claims[ci].end, "") for ci in gone
    ]
    if gone:  # a code block only a removed sentence vouched for goes with it (a review)
        for a, b in _fenced_ranges(text):
            owners = _code_owners(parsed.claims, a, b)
            if owners and set(owners) <= gone:
                edits.append((a, b, ""))
    claim_of: dict[int, int] = {}
    for ci, claim in enumerate(parsed.claims):
        for mi, (start, _, _) in enumerate(parsed.markers):
            if claim.start <= start < claim.end:
                claim_of.setdefault(mi, ci)
    placed: set[int] = set()
    last_end: dict[int, int] = {}  # where each claim's previous marker ends
    for mi, (start, end, _) in enumerate(parsed.markers):
        owner = claim_of.get(mi)
        if owner in gone:
            continue
        replacement = ""
        if owner is not None and owner not in placed:
            placed.add(owner)
            replacement = "".join(f"[{renumber[lab]}]" for lab in keep[owner] if lab in renumber)
        elif owner is not None and _SEPARATOR.fullmatch(text, last_end[owner], start):
            start = last_end[owner]  # "[1], [3]": the comma between the markers goes too
        if owner is not None:
            last_end[owner] = end
        edits.append((start, end, replacement))
    for ci in sorted(attributed or ()):
        if ci in placed or ci in gone:  # its marker (out of range: trial 25, "[1] [1]") took it
            continue
        claim = parsed.claims[ci]
        end = claim.start + len(text[claim.start : claim.end].rstrip())
        if end > claim.start and text[end - 1] in ".!?:":
            end -= 1
        group = "".join(f"[{renumber[lab]}]" for lab in keep[ci] if lab in renumber)
        edits.append((end, end, f" {group}"))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return _tidy(text)


_SEPARATOR = re.compile(r"\s*(?:[,;]|\by\b|\band\b)?\s*")


def _lead_in(text: str, claim: Claim) -> bool:
    """Whether ``claim`` is a heading line or ends in ``:`` (a lead-in to a list or code)."""
    written = text[claim.start : claim.end].strip()
    return written.startswith("#") or written.rstrip(" *_").endswith(":")


def _tidy(text: str) -> str:
    """Spaces left by removed markers cleaned up, outside fenced code only (code keeps its
    indentation), and runs of blank lines left by removed sentences made one."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            line = re.sub(r"(?<=\S)[ \t]+([.,;:!?])", r"\1", line)
            line = re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", line)
            if not line.strip() and len(out) >= 1 and not out[-1].strip():
                continue  # a second blank line in a row, outside code
        out.append(line)
    return "\n".join(out).strip()


def _language_of(source: Source) -> str:
    """A source's language for the cross-lingual rule (see :func:`ground`)."""
    from ragstrata.text.language import passage_language

    tagged = source.hit.chunk.language
    if tagged not in ("es", "en", "und"):
        return tagged
    return passage_language(source.body) or tagged


def _same_document(source: Source, sources: Sequence[Source]) -> str:
    """The bodies of the other sources of ``source``'s document, one per line (where the
    names check looks for capitalized words)."""
    doc_id = source.hit.chunk.doc_id
    return "\n".join(
        s.body for s in sources if s.label != source.label and s.hit.chunk.doc_id == doc_id
    )


def _heading_of(source: Source) -> str:
    """The document title and heading path of a source, one per line (names check)."""
    chunk = source.hit.chunk
    return "\n".join([chunk.title, *chunk.section_path])
