"""A cross-lingual retrieval set from parallel documentation: the same Markdown pages in two
languages, at the same relative paths under one folder per language (``docs/es/...``,
``docs/en/...``).

For the direction ``"es-en"`` the queries are the Spanish section headings (levels 1-3) of the
pages that exist in both languages; the corpus is every English page; the one relevant document
of a heading is the English page at the heading's relative path. ``"en-es"`` is the reverse.
A heading is the question "which page covers this?", asked in the other language.

Headings are read by the Markdown parser of a real ingest
(:func:`ragstrata.ingest.markdown.parse_markdown`): headings inside code fences are not
headings, and titles come without markup (code spans, links, emphasis, ``{ #anchor }``
suffixes). To keep the set honest, a heading is not a query when (first reason counted):

* ``short``: it has fewer than ``min_words`` words (``"Resumen"``, ``"Path"``);
* ``ambiguous``: it occurs (normalized) in more than one page of the query language
  (``"Recapitulación"``, ``"Documentación interactiva de la API"``): several pages would be
  right;
* ``untranslated``: it occurs (normalized) among the headings, of any level, of the gold page
  itself (``"OpenAPI y JSON Schema"`` is translated, ``"fastapi dev"`` is not): matching it needs
  no cross-lingual retrieval;
* ``repeated``: the same page already gave it (one query per heading text and page).

Normalization: Unicode NFKD, accents and case dropped, every run of characters that are not
letters or digits one space.

The corpus pages lose their MkDocs heading anchors (``## Recapitulación { #recap }`` ->
``## Recapitulación``), and nothing else. Translated pages keep the anchors of the original
language: in the FastAPI docs nearly every English heading is, slugified, an anchor of its
Spanish gold page (``{ #step-1-import-fastapi }``), so with the anchors left in ``en-es`` is
solved by English word matching (numbers in ``docs/evaluation.md``). A rendered page does not
show them.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragstrata.errors import ConfigError, IngestError
from ragstrata.eval.datasets import ArticleHalf, CorpusDoc, EvalDataset, article_split

__all__ = [
    "DROP_REASONS",
    "HeadingQuery",
    "Page",
    "language_folders",
    "load_parallel_docs",
    "normalize_heading",
    "page_split",
    "read_pages",
    "select_heading_queries",
    "strip_heading_anchors",
]

logger = logging.getLogger(__name__)

DROP_REASONS = ("short", "ambiguous", "untranslated", "repeated")
"""Why a heading is not a query, in the order the filters apply (see the module docstring)."""

MAX_QUERY_LEVEL = 3
"""Headings of levels 1 to 3 become queries; deeper ones are too local to name a page."""

_LANGUAGE_RE = re.compile(r"[a-z]{2}")
_NON_WORD_RE = re.compile(r"[\W_]+")
_ANCHOR_RE = re.compile(r"[ \t]*\{\s*#[^{}\s]*(?:\s[^{}]*)?\}[ \t]*$")  # { #recap } (MkDocs)


@dataclass(frozen=True, slots=True)
class Page:
    """One Markdown page: ``rel`` is its POSIX path under the language folder, ``text`` the
    normalized Markdown, ``title`` the parser's title (front matter, first level-1 heading, or
    the file stem), ``headings`` the ``(level, title)`` of every heading in order."""

    rel: str
    title: str
    text: str
    headings: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class HeadingQuery:
    """A kept heading: ``qid`` is ``f"{page}#{n}"`` where ``n`` is the heading's 1-based
    position among the page's headings of levels 1-3; ``page`` is the gold page's ``rel``."""

    qid: str
    text: str
    page: str


def normalize_heading(title: str) -> str:
    """Comparison key of a heading: NFKD, accents and case dropped, each run of non-letters
    and non-digits one space, trimmed. ``"¿Qué es *OpenAPI*?"`` -> ``"que es openapi"``."""
    decomposed = unicodedata.normalize("NFKD", title)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    return _NON_WORD_RE.sub(" ", plain).strip()


def select_heading_queries(
    query_pages: Mapping[str, Sequence[tuple[int, str]]],
    gold_pages: Mapping[str, Sequence[tuple[int, str]]],
    *,
    min_words: int = 2,
) -> tuple[list[HeadingQuery], Counter[str]]:
    """The heading queries of the query language, and how many headings each filter dropped.

    Pure: pages are given as ``rel -> (level, title)`` headings. ``query_pages`` are every page
    of the query language (all of them count for ``ambiguous``); only those whose ``rel`` is
    also in ``gold_pages`` give queries, in sorted ``rel`` order, headings in page order. The
    counter holds one count per :data:`DROP_REASONS` entry (the first reason that applies) and
    ``"headings"``, the candidate headings (levels 1-3 of pages present in both); ``"kept"``
    is ``len`` of the returned list.

    Invariants: every query's ``page`` is in ``gold_pages``; no query's normalized text is a
    normalized heading of its gold page; no two kept queries of different pages share a
    normalized text; each has at least ``min_words`` words.
    """
    pages_of: dict[str, set[str]] = {}
    for rel, headings in query_pages.items():
        for _, title in headings:
            pages_of.setdefault(normalize_heading(title), set()).add(rel)
    counts: Counter[str] = Counter(dict.fromkeys(("headings", *DROP_REASONS, "kept"), 0))
    kept: list[HeadingQuery] = []
    for rel in sorted(query_pages):
        if rel not in gold_pages:
            continue
        gold_keys = {normalize_heading(title) for _, title in gold_pages[rel]}
        seen: set[str] = set()
        candidates = [title for level, title in query_pages[rel] if level <= MAX_QUERY_LEVEL]
        for n, title in enumerate(candidates, start=1):
            counts["headings"] += 1
            key = normalize_heading(title)
            if len(key.split()) < min_words:
                counts["short"] += 1
            elif len(pages_of[key]) > 1:
                counts["ambiguous"] += 1
            elif key in gold_keys:
                counts["untranslated"] += 1
            elif key in seen:
                counts["repeated"] += 1
            else:
                seen.add(key)
                kept.append(HeadingQuery(qid=f"{rel}#{n}", text=title, page=rel))
    counts["kept"] = len(kept)
    return kept, counts


def strip_heading_anchors(text: str) -> str:
    """``text`` without the MkDocs attribute list (``{ #anchor }``) that ends a heading line:
    ``"## Resumen { #recap }"`` -> ``"## Resumen"``. Headings are found by the Markdown parser,
    so a ``#`` line in a code fence is left alone; every other character is kept."""
    from ragstrata.ingest.markdown import parse_markdown

    headings = [b for b in parse_markdown(text).blocks if b.kind == "heading"]
    for block in reversed(headings):
        line = text[block.start : block.end]
        stripped = _ANCHOR_RE.sub("", line)
        if stripped != line:
            text = text[: block.start] + stripped + text[block.end :]
    return text


def language_folders(path: Path) -> tuple[str, ...]:
    """The language folders of a parallel docs folder: its subfolders named by a two-letter
    lower-case code (ISO 639-1, ``es``, ``en``...) that hold Markdown files; sorted."""
    from ragstrata.ingest.loader import FORMATS

    if not path.is_dir():
        return ()
    found = []
    for sub in sorted(path.iterdir()):
        if not (sub.is_dir() and _LANGUAGE_RE.fullmatch(sub.name)):
            continue
        if any(FORMATS.get(f.suffix.lower()) == "markdown" for f in sub.rglob("*")):
            found.append(sub.name)
    return tuple(found)


def read_pages(folder: Path) -> dict[str, Page]:
    """Every Markdown page under ``folder`` (hidden files and folders skipped), decoded and
    parsed as ``ragstrata ingest`` would; keyed by POSIX path relative to ``folder``. A page
    that is empty or not text is left out with a warning (ingest would report it failed)."""
    from ragstrata.ingest.loader import FORMATS
    from ragstrata.ingest.markdown import parse_markdown
    from ragstrata.ingest.text import decode_bytes

    pages: dict[str, Page] = {}
    for file in sorted(folder.rglob("*")):
        rel_path = file.relative_to(folder)
        if any(part.startswith(".") for part in rel_path.parts) or not file.is_file():
            continue
        if FORMATS.get(file.suffix.lower()) != "markdown":
            continue
        try:
            text = decode_bytes(file.read_bytes(), path=file.as_posix())
        except IngestError as exc:
            logger.warning("%s: left out of the parallel docs (%s)", file, exc.reason)
            continue
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read the file ({exc})") from exc
        parsed = parse_markdown(text, fallback_title=file.stem)
        if not parsed.blocks:
            logger.warning("%s: left out of the parallel docs (no text blocks)", file)
            continue
        rel = rel_path.as_posix()
        pages[rel] = Page(
            rel=rel,
            title=parsed.title,
            text=text,
            headings=tuple((b.level, b.title) for b in parsed.blocks if b.kind == "heading"),
        )
    return pages


def page_split(pages: Sequence[str]) -> dict[str, ArticleHalf]:
    """Split pages (relative paths) in two halves for tuning (``"train"``) and reporting
    (``"test"``): :func:`~ragstrata.eval.datasets.article_split` over the pages ordered by the
    SHA-256 of their path, so that each half holds pages of every section of the docs (sorted
    paths would put whole folders, ``advanced/`` against ``tutorial/``, on one side).
    Deterministic; independent of the order given."""
    ordered = sorted(set(pages), key=lambda rel: hashlib.sha256(rel.encode("utf-8")).hexdigest())
    return article_split(ordered)


def load_parallel_docs(
    path: Path, *, direction: str, min_words: int = 2, strip_anchors: bool = True
) -> EvalDataset:
    """A cross-lingual :class:`EvalDataset` from a folder of parallel Markdown docs.

    Args:
        path: a folder with one subfolder per language (see :func:`language_folders`), the
            same page at the same relative path in each.
        direction: ``"<query language>-<document language>"``, e.g. ``"es-en"``: Spanish
            headings as queries, English pages as the corpus; ``"es-en:train"`` /
            ``"es-en:test"`` keep the queries whose gold page is in that half of
            :func:`page_split` (the corpus is always every page, so the halves share one index).
        min_words: headings with fewer words are not queries.
        strip_anchors: remove the ``{ #anchor }`` of the corpus pages' headings (see the
            module docstring); ``False`` keeps the pages byte for byte.

    Returns:
        ``corpus``: every page of the document language, doc id = its relative path, title =
        the parser's title, text = the page's Markdown (heading anchors removed unless
        ``strip_anchors`` is false), ``format="markdown"`` (indexed through the Markdown
        parser). ``queries``/``qrels``: the headings kept by
        :func:`select_heading_queries`, each with its page as the one relevant document.
        ``name`` is ``f"{folder}/{direction}"``, ``corpus_name`` ``f"{folder}/{language}"``.

    Raises:
        ConfigError: ``direction`` is not two distinct language folders of ``path`` (the
            message lists them), or a file cannot be read.
    """
    path = Path(path)
    direction, _, half = direction.partition(":")
    if half not in ("", "all", "train", "test"):
        raise ConfigError(
            f"{path}: page half {half!r} of --split is not one of all, train, test "
            "(e.g. es-en:train)"
        )
    languages = language_folders(path)
    directions = [f"{a}-{b}" for a in languages for b in languages if a != b]
    parts = direction.split("-")
    if len(parts) != 2 or direction not in directions:
        raise ConfigError(
            f"{path}: direction (--split) {direction!r} is not one of "
            + (", ".join(directions) if directions else "(no two language folders found)")
            + "; '<query language>-<document language>', e.g. es-en"
        )
    query_lang, doc_lang = parts
    query_pages = read_pages(path / query_lang)
    doc_pages = read_pages(path / doc_lang)
    queries, counts = select_heading_queries(
        {rel: page.headings for rel, page in query_pages.items()},
        {rel: page.headings for rel, page in doc_pages.items()},
        min_words=min_words,
    )
    if half in ("train", "test"):
        halves = page_split(sorted({q.page for q in queries}))
        queries = [q for q in queries if halves[q.page] == half]
    name = f"{path.name}/{direction}" + (f":{half}" if half in ("train", "test") else "")
    logger.info(
        "%s: %d headings (levels 1-%d) in %d pages with a translation; dropped %s; kept %d",
        name,
        counts["headings"],
        MAX_QUERY_LEVEL,
        sum(1 for rel in query_pages if rel in doc_pages),
        ", ".join(f"{counts[r]} {r}" for r in DROP_REASONS),
        counts["kept"],
    )
    return EvalDataset(
        name=name,
        corpus={
            rel: CorpusDoc(
                doc_id=rel,
                title=page.title,
                text=strip_heading_anchors(page.text) if strip_anchors else page.text,
                format="markdown",
            )
            for rel, page in doc_pages.items()
        },
        queries={q.qid: q.text for q in queries},
        qrels={q.qid: {q.page: 1} for q in queries},
        corpus_name=f"{path.name}/{doc_lang}",
    )
