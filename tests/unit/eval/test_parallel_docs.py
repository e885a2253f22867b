"""The cross-lingual heading -> page set of ragstrata.eval.parallel_docs: the filters on a small
folder built here, and its invariants on the shared FastAPI docs (es/, en/)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ragstrata.errors import ConfigError
from ragstrata.eval.datasets import EvalDataset
from ragstrata.eval.parallel_docs import (
    Page,
    language_folders,
    load_parallel_docs,
    normalize_heading,
    read_pages,
    select_heading_queries,
    strip_heading_anchors,
)
from ragstrata.eval.runner import dataset_documents, load_dataset

ES_INTRO = """\
# Primeros pasos { #first-steps }

Texto de la introducción.

## Instala `fastapi` con *pip* { #install }

```bash
# Esto no es un encabezado
pip install fastapi
```

## Resumen { #recap }

## Documentación interactiva { #docs }

## FastAPI CLI tools

#### Un detalle profundo de nivel cuatro

## Instala [`fastapi`](https://fastapi.tiangolo.com) con **pip**
"""

EN_INTRO = """\
# First steps { #first-steps }

Introduction text.

## Install `fastapi` with *pip* { #install }

```bash
# This is not a heading
pip install fastapi
```

## Recap { #recap }

## Interactive docs { #docs }

## FastAPI CLI tools

#### A deep level four detail
"""

PAGES = {
    "es/guide/intro.md": ES_INTRO,
    "es/other.md": "# Otra página útil\n\n## Documentación interactiva\n\nMás texto.\n",
    "es/only-es.md": "# Página solo en español\n\nTexto.\n",
    "en/guide/intro.md": EN_INTRO,
    "en/other.md": "# Another useful page\n\n## Interactive docs\n\nMore text.\n",
    "en/extra.md": "# English only page\n\nText.\n",
    "en/empty.md": "  \n",
    "en/.hidden/secret.md": "# Hidden page here\n",
    "en/notes.txt": "not markdown\n",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "minidocs"
    for rel, text in PAGES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "fr").mkdir()  # a language-like folder without Markdown is not a language
    return root


def test_normalize_heading() -> None:
    assert normalize_heading("¿Qué es *OpenAPI*?") == "que es openapi"
    assert normalize_heading("  Recapitulación  ") == "recapitulacion"
    assert normalize_heading("`fastapi dev` --reload") == "fastapi dev reload"
    assert normalize_heading("snake_case name") == "snake case name"


def test_strip_heading_anchors() -> None:
    assert strip_heading_anchors(EN_INTRO) == EN_INTRO.replace(" { #first-steps }", "").replace(
        " { #install }", ""
    ).replace(" { #recap }", "").replace(" { #docs }", "")
    # only headings lose them; '#' lines in code fences are not headings
    text = "```\n# comment { #x }\n```\n\nSee { #not-a-heading }\n"
    assert strip_heading_anchors(text) == text


def test_select_heading_queries_filters_in_order() -> None:
    query_pages = {
        "a.md": [(1, "Página A uno"), (2, "Resumen"), (2, "Ejemplo común"), (2, "Same Name")],
        "b.md": [(1, "Página B dos"), (4, "Ejemplo común"), (2, "Página A uno!")],
        "c.md": [(1, "Sin traducción alguna")],
    }
    gold_pages = {
        "a.md": [(1, "Page A one"), (3, "Same name")],
        "b.md": [(1, "Page B two")],
    }
    queries, counts = select_heading_queries(query_pages, gold_pages)
    assert [(q.qid, q.text, q.page) for q in queries] == [("b.md#1", "Página B dos", "b.md")]
    assert counts == {
        "headings": 6,  # levels 1-3 of a.md and b.md; c.md has no gold page
        "short": 1,  # Resumen
        "ambiguous": 3,  # Ejemplo común (any level counts), Página A uno twice
        "untranslated": 1,  # Same Name
        "repeated": 0,
        "kept": 1,
    }


def test_language_folders(folder: Path, tmp_path: Path) -> None:
    assert language_folders(folder) == ("en", "es")
    assert language_folders(folder / "en") == ()  # guide/ is not a language code
    assert language_folders(tmp_path / "absent") == ()


def test_read_pages_parses_like_ingest(folder: Path) -> None:
    pages = read_pages(folder / "en")
    # hidden folders, non-Markdown files and empty pages are left out
    assert sorted(pages) == ["extra.md", "guide/intro.md", "other.md"]
    intro = pages["guide/intro.md"]
    assert intro.title == "First steps"
    assert intro.text == EN_INTRO
    # markup and { #anchor } removed; the '#' line in the code fence is not a heading
    assert intro.headings == (
        (1, "First steps"),
        (2, "Install fastapi with pip"),
        (2, "Recap"),
        (2, "Interactive docs"),
        (2, "FastAPI CLI tools"),
        (4, "A deep level four detail"),
    )


def test_es_en(folder: Path) -> None:
    ds = load_parallel_docs(folder, direction="es-en")
    assert ds.name == "minidocs/es-en"
    assert ds.corpus_name == "minidocs/en"
    # the corpus is every English page, translated or not
    assert sorted(ds.corpus) == ["extra.md", "guide/intro.md", "other.md"]
    doc = ds.corpus["guide/intro.md"]
    assert (doc.doc_id, doc.title, doc.text, doc.format) == (
        "guide/intro.md",
        "First steps",
        strip_heading_anchors(EN_INTRO),
        "markdown",
    )
    assert "{ #" not in doc.text
    kept = load_parallel_docs(folder, direction="es-en", strip_anchors=False)
    assert kept.corpus["guide/intro.md"].text == EN_INTRO
    assert kept.queries == ds.queries
    # short (Resumen), ambiguous (Documentación interactiva, also in other.md), untranslated
    # (FastAPI CLI tools), repeated (the second Instala...), level 4, and headings in code
    # fences are out; only-es.md has no English page
    assert ds.queries == {
        "guide/intro.md#1": "Primeros pasos",
        "guide/intro.md#2": "Instala fastapi con pip",
        "other.md#1": "Otra página útil",
    }
    assert ds.qrels == {
        "guide/intro.md#1": {"guide/intro.md": 1},
        "guide/intro.md#2": {"guide/intro.md": 1},
        "other.md#1": {"other.md": 1},
    }
    assert ds.unanswerable == {}


def test_en_es(folder: Path) -> None:
    ds = load_parallel_docs(folder, direction="en-es")
    assert ds.corpus_name == "minidocs/es"
    assert sorted(ds.corpus) == ["guide/intro.md", "only-es.md", "other.md"]
    assert ds.queries == {
        "guide/intro.md#1": "First steps",
        "guide/intro.md#2": "Install fastapi with pip",
        "other.md#1": "Another useful page",
    }
    assert all(judged == {qid.split("#")[0]: 1} for qid, judged in ds.qrels.items())


def test_min_words(folder: Path) -> None:
    ds = load_parallel_docs(folder, direction="es-en", min_words=4)
    assert list(ds.queries.values()) == ["Instala fastapi con pip"]


@pytest.mark.parametrize("direction", ["test", "fr-en", "es-es", "es-en-fr", "es_en"])
def test_bad_direction(folder: Path, direction: str) -> None:
    with pytest.raises(ConfigError, match="is not one of en-es, es-en"):
        load_parallel_docs(folder, direction=direction)


def test_load_dataset_detects_parallel_docs(folder: Path) -> None:
    ds = load_dataset(folder, split="en-es")
    assert ds.name == "minidocs/en-es"
    with pytest.raises(ConfigError, match="direction \\(--split\\) 'test'"):
        load_dataset(folder)
    with pytest.raises(ConfigError, match="parallel Markdown docs"):
        load_dataset(folder / "en")


def test_pages_are_indexed_through_the_markdown_parser(folder: Path) -> None:
    ds = load_parallel_docs(folder, direction="es-en")
    docs = {doc.doc_id: doc for doc in dataset_documents(ds)}
    assert sorted(docs) == sorted(ds.corpus)
    intro = docs["guide/intro.md"]
    assert intro.format == "markdown"
    assert intro.source == "minidocs/en/guide/intro.md"
    assert intro.title == "First steps"
    assert intro.text == strip_heading_anchors(EN_INTRO)
    kinds = [b.kind for b in intro.blocks]
    assert kinds.count("heading") == 6 and "code" in kinds
    code = next(b for b in intro.blocks if b.kind == "code")
    assert intro.text[code.start : code.end].startswith("```bash")
    assert [b.title for b in intro.blocks if b.kind == "heading"][1] == "Install fastapi with pip"


# --------------------------------------------------------------------------- shared corpus


@pytest.fixture(scope="module")
def fastapi_sets(shared_corpus: Callable[[str], Path]) -> dict[str, EvalDataset]:
    root = shared_corpus("fastapi-docs-md")
    return {d: load_parallel_docs(root, direction=d) for d in ("es-en", "en-es")}


@pytest.fixture(scope="module")
def fastapi_pages(shared_corpus: Callable[[str], Path]) -> dict[str, dict[str, Page]]:
    root = shared_corpus("fastapi-docs-md")
    return {lang: read_pages(root / lang) for lang in ("es", "en")}


@pytest.mark.shared
@pytest.mark.parametrize(
    ("direction", "n_docs", "n_queries"), [("es-en", 155, 786), ("en-es", 124, 770)]
)
def test_fastapi_docs_sets(
    fastapi_sets: dict[str, EvalDataset],
    fastapi_pages: dict[str, dict[str, Page]],
    direction: str,
    n_docs: int,
    n_queries: int,
) -> None:
    ds = fastapi_sets[direction]
    query_lang, doc_lang = direction.split("-")
    assert ds.name == f"fastapi-docs-md/{direction}"
    assert len(ds.corpus) == n_docs
    assert len(ds.queries) == len(ds.qrels) == n_queries
    gold_headings, query_pages = fastapi_pages[doc_lang], fastapi_pages[query_lang]
    keys = [normalize_heading(text) for text in ds.queries.values()]
    assert len(set(keys)) == len(keys)  # no heading text names two pages
    for qid, text in ds.queries.items():
        (page,) = ds.qrels[qid]
        assert qid.startswith(page + "#")
        assert page in ds.corpus and page in query_pages  # the page exists in both languages
        # the gold page does not hold the query as a heading: it has to be translated
        gold = {normalize_heading(t) for _, t in gold_headings[page].headings}
        assert normalize_heading(text) not in gold
        assert len(normalize_heading(text).split()) >= 2
        assert "`" not in text and "{ #" not in text and "](" not in text
    assert not any(re.search(r"\{ *#", doc.text) for doc in ds.corpus.values())


@pytest.mark.shared
def test_fastapi_pages_keep_their_structure(fastapi_sets: dict[str, EvalDataset]) -> None:
    ds = fastapi_sets["es-en"]
    docs = {doc.doc_id: doc for doc in dataset_documents(ds)}
    assert len(docs) == len(ds.corpus)
    first_steps = docs["docs/tutorial/first-steps.md"]
    assert first_steps.title == "First Steps"
    assert first_steps.language == "en"
    kinds = {b.kind for b in first_steps.blocks}
    assert {"heading", "code", "paragraph"} <= kinds
