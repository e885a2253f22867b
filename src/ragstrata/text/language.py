"""Which language a text is written in: a document's (any language), a question's or a query's
(Spanish or English).

Documents are classified by py3langid (Lui & Baldwin 2012, "langid.py: An Off-the-shelf
Language Identification Tool", ACL demo track; the model ships inside the wheel: nothing is
downloaded at run time), see :func:`detect_language`.

Questions are too short for a statistical identifier (py3langid calls most of them wrongly or
not at all, see :func:`detect_language`'s 20-letter floor), so the decision counts cues:
``¿``/``¡``/``ñ``, accented vowels and Spanish function words against English function words;
:func:`query_language` falls back to py3langid restricted to the two languages when the cues are
tied.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from ragstrata.errors import MissingDependencyError

__all__ = [
    "RELATION_HITS",
    "UNDETERMINED",
    "Language",
    "LanguageRelation",
    "chunk_language",
    "detect_language",
    "hint_language",
    "language_relation",
    "query_language",
    "question_language",
    "relation_to_hits",
]

Language = Literal["es", "en"]
LanguageRelation = Literal["same", "cross", "unknown"]

UNDETERMINED = "und"
"""ISO 639-2 code for "undetermined", returned for text too short or too ambiguous to call."""

_SAMPLE_CHARS = 20_000
_MIN_LETTERS = 20
_MIN_PROBABILITY = 0.5
_PAIR_PROBABILITY = 0.9
"""Spanish or English under :data:`_MIN_PROBABILITY`: the two-language decision it needs."""
_CODE_RE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]+>|https?://\S+", re.DOTALL)

_ES_HINTS = frozenset(
    [
        "qué",
        "como",
        "cómo",
        "cuál",
        "cuáles",
        "dónde",
        "cuándo",
        "quién",
        "quiénes",
        "cuánto",
        "cuántos",
        "por",
        "para",
        "el",
        "la",
        "los",
        "las",
        "es",
        "son",
        "un",
        "una",
        "del",
        "al",
        "se",
        "con",
        "sin",
        "puedo",
        "puede",
        "debo",
        "hay",
        "hace",
        "sirve",
        "sobre",
        "entre",
        "desde",
        "mi",
        "mis",
        "su",
        "sus",
        "lo",
        "le",
        "les",
        "y",
        "o",
        "pero",
        "si",
        "también",
        "muy",
        # typed without accents, and greetings: a short "hola" got the English refusal
        "que",
        "cual",
        "donde",
        "cuando",
        "quien",
        "cuanto",
        "cuantos",
        "hola",
        "gracias",
        "buenos",
        "buenas",
        "necesito",
        "quiero",
        "tengo",
        "ayuda",
    ]
)
_EN_HINTS = frozenset(
    [
        "what",
        "how",
        "which",
        "where",
        "when",
        "who",
        "whom",
        "whose",
        "why",
        "is",
        "are",
        "the",
        "a",
        "an",
        "of",
        "to",
        "for",
        "in",
        "on",
        "with",
        "can",
        "does",
        "do",
        "should",
        "and",
        "or",
        "by",
        "from",
        "my",
        "your",
        "it",
        "this",
        "that",
        "there",
        "hello",
        "hi",
        "thanks",
        "please",
        "i",
        "you",
        "need",
        "want",
        "help",
    ]
)


_WORD_RE = re.compile(r"[a-záéíóúüñ]+")


_ES_QUESTION_HINTS = _ES_HINTS | {"de", "en"}
"""The Spanish cues of a question: the passage cues and Spanish's two most frequent words,
which English writes only in borrowings ("de facto", "en route"). Not for passages: a cue
there re-tags chunks at ingest (:func:`passage_language`)."""


def hint_language(text: str) -> Language | None:
    """``"es"``, ``"en"``, or ``None`` when the cues are tied (no function word, no accent).

    ``¿``/``¡`` mean Spanish; otherwise Spanish function words (:data:`_ES_QUESTION_HINTS`)
    plus twice the words with an accented vowel or an ``ñ`` are weighed against English
    function words. One ``ñ`` decided before: "How does the Muñoz team configure CORS
    middleware?" was Spanish, searched as cross-lingual and answered "in Spanish" (review 39).
    The text is NFC-normalized first (a decomposed "¿Qué" has no "é")."""
    lowered = unicodedata.normalize("NFC", text).lower()
    if any(ch in lowered for ch in "¿¡"):
        return "es"
    words = _WORD_RE.findall(lowered)
    es = sum(w in _ES_QUESTION_HINTS for w in words) + 2 * sum(
        any(c in w for c in "áéíóúñ") for w in words
    )
    en = sum(w in _EN_HINTS for w in words)
    if es == en:
        return None
    return "es" if es > en else "en"


def passage_language(text: str) -> Language | None:
    """``"es"`` or ``"en"`` for a passage by its function words, code and HTML removed, when
    one language has at least 3 of them and twice the other's; ``None`` otherwise. Unlike
    :func:`hint_language` (for questions) one ``ñ`` does not decide ("Español" in an English
    passage) and the words of a code block do not count ("for", "in", "is")."""
    words = _WORD_RE.findall(_CODE_RE.sub(" ", text).lower())
    es = sum(w in _ES_HINTS for w in words)
    en = sum(w in _EN_HINTS for w in words)
    if es >= 3 and es >= 2 * en:
        return "es"
    if en >= 3 and en >= 2 * es:
        return "en"
    return None


def has_function_word(text: str) -> bool:
    """Whether ``text`` holds a Spanish or English function word or question word of
    :func:`hint_language`'s lists ("qué", "el", "what", "the", ...): a sign that it is written
    in a language, as a gibberish string ("ñññ ñññ", "xxxx yyyy") is not."""
    return any(w in _ES_HINTS or w in _EN_HINTS for w in _WORD_RE.findall(text.lower()))


def _new_identifier() -> Any:
    """A fresh py3langid identifier over every language; raises ImportError without
    py3langid."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=1)
def _identifier() -> Any:
    """The per-document identifier (every language)."""
    try:
        return _new_identifier()
    except ImportError as exc:
        raise MissingDependencyError("py3langid", "ingest") from exc


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text``'s main language (``"es"``, ``"en"``...), or ``"und"``.

    Code spans, fenced code, HTML tags and URLs are removed first, then up to the first 20,000
    characters are classified. Returns ``"und"`` when fewer than 20 letters remain or the
    normalized probability of the best language is below 0.5, unless that language is
    Spanish or English and py3langid restricted to the two gives it at least 0.9.
    Deterministic.

    Raises:
        MissingDependencyError: py3langid is not installed (``pip install 'ragstrata[ingest]'``).
    """
    sample = _CODE_RE.sub(" ", text[: _SAMPLE_CHARS * 2])[:_SAMPLE_CHARS]
    if sum(ch.isalpha() for ch in sample) < _MIN_LETTERS:
        return UNDETERMINED
    ranked = _identifier().rank(sample)  # (language, probability), normalized, best first
    language, probability = ranked[0]
    if float(probability) >= _MIN_PROBABILITY:
        return str(language)
    if language in ("es", "en"):  # spread over many languages (a text repeating one
        # sentence: trial 25's Spanish file was "und" at 0.37), Spanish or English first:
        # decided between the two, when that is clear. The same ranking restricted to the
        # two (what py3langid's set_languages computes); a second identifier cost each
        # parse worker 0.5 s on its first such file (CI59: a 0.5 s parse limit ran out)
        shares = {lang: float(p) for lang, p in ranked if lang in ("es", "en")}
        total = sum(shares.values())
        if total > 0 and shares[language] / total >= _PAIR_PROBABILITY:
            return str(language)
    return UNDETERMINED


_MIN_CHUNK_WORDS = 12
"""Fewer words of prose than this (a caption, a list of names): the chunk keeps its
document's language."""


def chunk_language(text: str, document_language: str) -> str:
    """The language of one chunk's prose ``text`` (code removed by the caller or here: fences,
    code spans, HTML tags) in a document of ``document_language``: the other
    of Spanish and English (or either, in an ``und`` document) when the chunk's function words
    (:func:`passage_language`) and py3langid (:func:`detect_language`) both say so over at least 12
    words, else ``document_language``. A Spanish page with an untranslated English section (17 of
    the 179 pages of ``react-docs-es-mdx``) keeps ``es`` as its own language and gives that
    section's chunks ``en``: a ``language=en`` filter finds them and the language-neutral dense arm
    (:mod:`ragstrata.retrieve.hybrid`) shifts them as English. A document in another language
    (``fr``, ``gl``...) keeps its tag on every chunk."""
    if document_language not in ("es", "en", UNDETERMINED):
        return document_language
    if len(_WORD_RE.findall(_CODE_RE.sub(" ", text).lower())) < _MIN_CHUNK_WORDS:
        return document_language
    words = passage_language(text)
    if words is None or words == document_language:
        return document_language
    try:
        confirmed = detect_language(text) == words
    except MissingDependencyError:  # no py3langid (a bare install chunking a given document)
        return document_language
    return words if confirmed else document_language


def query_language(query: str) -> Language | None:
    """``"es"`` or ``"en"`` for a search query: :func:`hint_language`, and when its cues are
    tied, py3langid (Lui & Baldwin 2012) restricted to the two languages. ``None`` only when
    the cues are tied and py3langid is not installed, or the query has no letters.

    On the project's sets (``ragstrata.eval``), cues alone decide 55-72 % of the FastAPI
    headings and 93 % of the SciFact claims; with the fallback 97-100 % of every set is called,
    0.3-2 % wrongly.
    """
    language = hint_language(query)
    if language is not None or not any(ch.isalpha() for ch in query):
        return language
    try:
        ranked = dict(_identifier().rank(query))
    except MissingDependencyError:
        return None
    # the ranking over every language restricted to the two: what py3langid's set_languages
    # computes, without a second copy of the model in the process (about 75 MB)
    return "es" if float(ranked["es"]) > float(ranked["en"]) else "en"


def question_language(question: str) -> Language:
    """``es`` or ``en`` for a question: :func:`query_language` (the cues, py3langid when they
    tie), English when neither decides (also for other languages). With the cues alone,
    "Receta de paella valenciana" was refused in English (review 39)."""
    return query_language(question) or "en"


RELATION_HITS = 3
"""Hits whose languages decide :func:`language_relation`. In a folder that mixes languages the
first few hits say where the answer is: on 6 mixed indexes of 8 English and 8 other Spanish
FastAPI pages (training headings, ``bench/mixed_folders.py``), reading 3 instead of 10 took
Spanish→English hybrid hit@5 from 0.871 to 0.909 with the language-neutral dense arm, the
same-language directions moving by at most 0.008 (docs/evaluation.md, "Mixed folders"). In a
one-language index every hit has the same language, so the number does not matter there."""


def language_relation(query: str, hit_languages: Sequence[str]) -> LanguageRelation:
    """Whether a query is asked in the language of the passages that answer it.

    ``hit_languages``: the detected languages (ISO 639-1, ``"und"`` when unknown) of the top
    passages of a language-independent retriever (the dense arm), best first; the first
    :data:`RELATION_HITS` with a known language are read. Returns ``"cross"`` when the query's
    :func:`query_language` is known and fewer than half of those are in it, ``"same"`` when at
    least half are, and ``"unknown"`` when either side is unknown. Pure and deterministic.
    """
    return relation_to_hits(query_language(query), hit_languages)


def relation_to_hits(language: str | None, hit_languages: Sequence[str]) -> LanguageRelation:
    """:func:`language_relation` for a query whose language (:func:`query_language`, ``None``
    when unknown) is already known: for a caller that needs the language too."""
    known = [lang for lang in hit_languages if lang and lang != "und"][:RELATION_HITS]
    if language is None or not known:
        return "unknown"
    same = sum(lang == language for lang in known)
    return "same" if 2 * same >= len(known) else "cross"
