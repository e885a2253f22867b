"""BM25 text analysis: identifiers kept whole and by part, Spanish + English stemming, CJK bigrams.

For each raw token (``\\w`` runs joined by ``- _ / . : @``):

* the whole token, lowercased and accent-folded, when it looks like an identifier (contains a
  joiner, a digit, an underscore or inner capitals): ``ERR_CONN_RESET`` → ``err_conn_reset``,
  ``/v1/users`` → ``/v1/users``, ``SEC-A002`` → ``sec-a002``;
* its parts split at joiners, camelCase and letter/digit boundaries (``err``, ``conn``,
  ``reset``; ``v1`` → ``v``, ``1``; ``sec``, ``a002``, ``a``, ``002``), each analysed as a word;
* words are lowercased, stop words dropped, stemmed with the Snowball stemmers of the configured
  languages (one term per distinct stem), then accent-folded (``canción`` → ``cancion``);
* runs of CJK characters become overlapping character bigrams (Lucene's CJKAnalyzer scheme), so
  CJK text never vanishes from the index.

Terms become sparse-vector ids and BM25 weights in :mod:`ragstrata.index.bm25`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ragstrata.errors import ConfigError
from ragstrata.optional import require

_TOKEN = re.compile(r"[/#@]?\w+(?:[-_/.:@]+\w+)*/?")
_PART = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-ZÀ-Þ]?[a-zß-ÿ]+|[A-ZÀ-Þ]+(?![a-zß-ÿ])|\d+|[^\W\d_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET) and the most frequent
# Spanish function words (subset of the Snowball Spanish stop list).
STOPWORDS: dict[str, frozenset[str]] = {
    "english": frozenset(
        [
            "a",
            "an",
            "and",
            "are",
            "as",
            "at",
            "be",
            "but",
            "by",
            "for",
            "if",
            "in",
            "into",
            "is",
            "it",
            "no",
            "not",
            "of",
            "on",
            "or",
            "such",
            "that",
            "the",
            "their",
            "then",
            "there",
            "these",
            "they",
            "this",
            "to",
            "was",
            "will",
            "with",
        ]
    ),
    "spanish": frozenset(
        [
            "de",
            "la",
            "que",
            "el",
            "en",
            "y",
            "a",
            "los",
            "del",
            "se",
            "las",
            "por",
            "un",
            "para",
            "con",
            "no",
            "una",
            "su",
            "al",
            "lo",
            "como",
            "más",
            "pero",
            "sus",
            "le",
            "ya",
            "o",
            "este",
            "sí",
            "porque",
            "esta",
            "entre",
            "cuando",
            "muy",
            "sin",
            "sobre",
            "también",
            "me",
            "hasta",
            "hay",
            "donde",
            "quien",
            "desde",
            "todo",
            "nos",
            "durante",
            "todos",
            "uno",
            "les",
            "ni",
            "contra",
            "otros",
            "ese",
            "eso",
            "ante",
            "ellos",
            "e",
            "esto",
            "mí",
            "antes",
            "algunos",
            "qué",
            "unos",
            "yo",
            "otro",
            "otras",
            "otra",
            "él",
            "tanto",
            "esa",
            "estos",
            "mucho",
            "quienes",
            "nada",
            "muchos",
            "cual",
            "poco",
            "ella",
            "estar",
            "estas",
            "algunas",
            "algo",
            "nosotros",
            "es",
            "son",
            "fue",
            "ha",
            "han",
        ]
    ),
}
LANGUAGES = ("english", "spanish")


def fold_accents(text: str) -> str:
    """Remove combining marks after NFD (``canción`` → ``cancion``, ``ñ`` → ``n``)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class Analyzer:
    """Text → BM25 terms. ``languages`` ⊆ ("english", "spanish"); raises ConfigError otherwise,
    MissingDependencyError without PyStemmer."""

    def __init__(self, languages: Sequence[str] = LANGUAGES, *, stopwords: bool = True) -> None:
        unknown = [lang for lang in languages if lang not in LANGUAGES]
        if unknown or not languages:
            raise ConfigError(f"bm25 languages {list(languages)!r}: choose from {LANGUAGES}")
        stemmer = require("Stemmer", extra="local", package="PyStemmer")
        self.languages = tuple(languages)
        self._stemmers: list[Any] = [stemmer.Stemmer(lang) for lang in self.languages]
        self._stop = (
            frozenset().union(*(STOPWORDS[lang] for lang in self.languages))
            if stopwords
            else frozenset()
        )
        self._word = lru_cache(maxsize=200_000)(self._word_terms)

    @property
    def signature(self) -> str:
        """Identifies the analysis; an index built with another signature must be rebuilt."""
        return f"v1:{'+'.join(self.languages)}:stop={int(bool(self._stop))}"

    def _word_terms(self, word: str) -> tuple[str, ...]:
        lower = word.lower()
        if lower in self._stop:
            return ()
        stems = dict.fromkeys(fold_accents(s.stemWord(lower)) for s in self._stemmers)
        return tuple(stems)

    def terms(self, text: str) -> list[str]:
        """Analysed terms of ``text`` in order (with repeats). ``text`` is NFC-normalized first,
        as ingested text is: a decomposed "parámetros" gave the terms of "para" and "metros"."""
        if not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
        out: list[str] = []
        for match in _TOKEN.finditer(text):
            raw = match.group(0)
            if _CJK.search(raw):
                out.extend(_cjk_bigrams(raw))
                rest = _CJK.sub(" ", raw).strip()
                if rest:  # Latin text glued to CJK ("useStateフック") is analysed as usual
                    out.extend(self.terms(rest))
                continue
            parts = _PART.findall(raw)
            identifier = (
                len(parts) > 1
                or any(ch.isdigit() for ch in raw)
                or any(ch.isupper() for ch in raw[1:])
            )
            if identifier:
                whole = fold_accents(raw.lower())
                out.append(whole)
                for part in parts:
                    pieces = _CAMEL.findall(part)
                    for piece in pieces if len(pieces) > 1 else [part]:
                        out.extend(t for t in self._word(piece) if t != whole)
                    folded = fold_accents(part.lower())
                    if len(pieces) > 1 and folded != whole:
                        out.append(folded)
            else:
                out.extend(self._word(raw))
        return out

    def accented_stop_terms(self, text: str) -> set[str]:
        """Terms of the words of ``text`` that are stop words once accent-folded but not as
        written: the question words "cuál", "cómo", "dónde", "cuándo", "quién" (stop words
        "cual", "como", ...) give the terms ``cual``, ``como``/``com``, ... because the stop
        list is checked before folding. The index keeps them (changing the analysis would
        re-index every corpus); the retriever leaves them out of a query
        (:class:`~ragstrata.retrieve.hybrid.HybridRetriever`)."""
        out: set[str] = set()
        rest = text
        for match in _TOKEN.finditer(text):
            raw = match.group(0)
            lower = raw.lower()
            if lower not in self._stop and fold_accents(lower) in self._stop:
                out.update(self._word(raw))
                rest = rest[: match.start()] + " " * len(raw) + rest[match.end() :]
        return out - set(self.terms(rest)) if out else out  # "com" of example.com stays

    def joined_forms(self, text: str) -> list[tuple[str, tuple[str, ...]]]:
        """Plain words of ``text`` that may be identifiers typed in lower case ("usestate" for
        ``useState``): ``(whole, terms)`` for each word of letters only, at least 4 long, not
        a stop word, whose lower-case, accent-folded form ``whole`` is not among its own
        ``terms`` (the stems :meth:`terms` gives it). An identifier is indexed under its whole
        lower-case form (``usestate``), a plain word under its stems (``usest``), so the two
        never meet; the retriever adds ``whole`` to a query where the index knows it and not
        the word's stems (:class:`~ragstrata.retrieve.hybrid.HybridRetriever`)."""
        out: list[tuple[str, tuple[str, ...]]] = []
        for match in _TOKEN.finditer(text):
            raw = match.group(0)
            if len(raw) < 4 or not raw.isalpha() or _CJK.search(raw) or not raw.islower():
                continue
            terms = self._word(raw)
            whole = fold_accents(raw)
            if terms and whole not in terms:
                out.append((whole, terms))
        return list(dict.fromkeys(out))

    def term_frequencies(self, text: str) -> Counter[str]:
        """Term → count in ``text``."""
        return Counter(self.terms(text))


def _cjk_bigrams(raw: str) -> list[str]:
    """Overlapping character bigrams of each CJK run (a lone character stays a unigram)."""
    out: list[str] = []
    run: list[str] = []
    for ch in raw + " ":
        if _CJK.match(ch):
            run.append(ch)
            continue
        if len(run) == 1:
            out.extend(run)
        elif run:
            out.extend("".join(run[i : i + 2]) for i in range(len(run) - 1))
        run = []
    return out


def term_weights(terms: set[str], texts: Sequence[set[str]]) -> dict[str, float]:
    """Rarity weight of each of ``terms`` among ``texts`` (each a set of analysed terms):
    ``log(1 + n / (df + 0.5))``, ``n`` texts, ``df`` of them holding the term (the inverse
    document frequency of Robertson & Spärck Jones, 1976, over the given texts instead of the
    index: the extractive answerer's candidate sentences, the answerability check's hits).
    Every weight is positive, so a text's weighted coverage is 0 exactly when it shares no
    term. For quote choice, against the plain share on 300 SQuAD-es questions
    (docs/generation.md): answers containing a gold answer 0.800 → 0.840 (train articles),
    0.760 → 0.810 (test articles)."""
    n = len(texts)
    return {t: math.log1p(n / (sum(t in x for x in texts) + 0.5)) for t in terms}
