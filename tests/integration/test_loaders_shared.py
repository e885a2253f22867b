"""Every file of the shared corpora loads, with valid blocks (see ``tests/conftest.py`` for
how the corpora are located and when a missing corpus skips or fails)."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from ragstrata.ingest import FORMATS, discover, load_document
from ragstrata.types import Document

_FRONT_MATTER_RE = re.compile(r"---[ \t]*\n(?:.*?\n)?---[ \t]*(?:\n|$)", re.DOTALL)
_CORPORA = {
    # name -> (format, minimum number of documents, minimum number of tables)
    "react-docs-es-mdx": ("markdown", 150, 0),
    "fastapi-docs-md": ("markdown", 250, 0),
    "html-debian-reference-es": ("html", 15, 150),
}


def _check_document(doc: Document) -> None:
    text = doc.text
    previous_end = 0
    gaps: list[str] = []
    for block in doc.blocks:
        assert 0 <= block.start < block.end <= len(text), (doc.source, block)
        assert block.start >= previous_end, (doc.source, block)
        piece = text[block.start : block.end]
        assert piece.strip() == piece, (doc.source, block)
        if block.kind == "heading":
            assert 1 <= block.level <= 6, (doc.source, block)
            assert "{/*" not in block.title, (doc.source, block.title)
        gaps.append(text[previous_end : block.start])
        previous_end = block.end
    gaps.append(text[previous_end:])
    match = _FRONT_MATTER_RE.match(text) if doc.format == "markdown" else None
    if match is not None:
        gaps[0] = gaps[0][match.end() :]
    for gap in gaps:
        assert not gap.strip(), (doc.source, gap.strip()[:80])
    assert doc.title, doc.source


@pytest.mark.parametrize("corpus", sorted(_CORPORA))
def test_every_file_loads(shared_corpus: Callable[[str], Path], corpus: str) -> None:
    fmt, min_docs, min_tables = _CORPORA[corpus]
    root = shared_corpus(corpus)
    files, errors = discover([root])
    assert errors == []
    files = [f for f in files if FORMATS[f.suffix.lower()] == fmt]
    assert len(files) >= min_docs
    kinds: Counter[str] = Counter()
    for path in files:
        doc = load_document(path)  # speed: bench/ingest_corpora.py; time limits: the ingest tests
        assert doc.format == fmt
        _check_document(doc)
        kinds.update(block.kind for block in doc.blocks)
    assert kinds["table"] >= min_tables
    assert kinds["heading"] > 0 and kinds["paragraph"] > 0 and kinds["code"] > 0


def test_fences_never_yield_headings(shared_corpus: Callable[[str], Path]) -> None:
    """No heading block of the MDX corpus contains a code fence (a fence split by an HTML
    block would turn ``# comment`` lines into headings)."""
    files, _ = discover([shared_corpus("react-docs-es-mdx")])
    for path in files:
        doc = load_document(path)
        for block in doc.blocks:
            if block.kind == "heading":
                assert "```" not in doc.text[block.start : block.end], (path, block)
            if block.kind == "html":
                assert doc.text[block.start : block.end].count("```") % 2 == 0, (path, block)


_DEBIAN = "html-debian-reference-es"
_NUMBER_RE = re.compile(r"^(?:Capítulo |Apéndice )?([0-9A-Z]+(?:\.[0-9]+)*)\.\s")
_UNESCAPED_PIPE_RE = re.compile(r"(?<!\\)\|")


@pytest.mark.shared
@pytest.mark.slow
def test_debian_reference_tables_navigation_and_sections(
    shared_corpus: Callable[[str], Path],
) -> None:
    """The DocBook Debian Reference (15 files): its 528 ``<table>`` elements are 170 data tables
    (``div.table-contents``), 328 admonition layout tables (``div.note``/``tip``/``warning``/
    ``caution``) and 30 navigation tables (``div.navheader``/``navfooter``). Exactly the 170 data
    tables become table blocks, each with its header row and every body row; navigation text
    never leaks; numbered headings nest into a consistent section tree."""
    from selectolax.lexbor import LexborHTMLParser

    from ragstrata.chunking.splitter import StructureChunker
    from ragstrata.text.tokens import CallableTokenCounter

    chunker = StructureChunker(
        CallableTokenCounter(lambda t: len(t.split())), max_tokens=512, overlap_ratio=0.0
    )
    files, errors = discover([shared_corpus(_DEBIAN)])
    files = [f for f in files if f.suffix == ".html"]  # SOURCE.md describes the corpus
    assert errors == [] and len(files) == 15
    kinds: Counter[str] = Counter()
    emitted = 0
    paths: set[tuple[str, ...]] = set()
    for path in files:
        tree = LexborHTMLParser(path.read_text(encoding="utf-8"))
        for table in tree.css("table"):
            parent = table.parent
            kinds[(parent.attrs.get("class") or "") if parent is not None else ""] += 1
        sources = tree.css("div.table-contents > table")
        doc = load_document(path)
        tables = [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "table"]
        assert len(tables) == len(sources), path.name
        emitted += len(tables)
        for source, rendered in zip(sources, tables, strict=True):
            lines = rendered.split("\n")
            header = [" ".join(th.text().split()) for th in source.css("thead th")]
            assert lines[0] == "| " + " | ".join(header) + " |"
            assert len(lines) - 2 == len(source.css("tbody > tr")), (path.name, lines[0])
            assert len({len(_UNESCAPED_PIPE_RE.findall(line)) for line in lines}) == 1
        assert not re.search(r"\b(?:Anterior|Siguiente)\b", doc.text), path.name
        blocks = {doc.text[b.start : b.end] for b in doc.blocks}
        assert "Inicio" not in blocks
        for nav in tree.css("div.navheader, div.navfooter"):
            for cell in nav.css("td, th"):
                assert " ".join(cell.text().split()) not in blocks - {""}, (path.name, cell)
        headings = [b for b in doc.blocks if b.kind == "heading"]
        assert headings and headings[0].level == 1 and headings[0].title == doc.title
        for chunk in chunker.chunk(doc):
            paths.add(chunk.section_path)
            numbers = [m.group(1) for t in chunk.section_path if (m := _NUMBER_RE.match(t))]
            for outer, inner in itertools.pairwise(numbers):
                assert inner.startswith(outer + "."), chunk.section_path
    nav_tables = kinds["navheader"] + kinds["navfooter"]
    admonitions = sum(kinds[k] for k in ("note", "tip", "warning", "caution", "important"))
    assert (sum(kinds.values()), kinds["table-contents"], nav_tables, admonitions) == (
        528,
        170,
        30,
        328,
    )
    assert emitted == 170
    assert (
        "Capítulo 9. Trucos del sistema",
        "9.1. The console tips",
        "9.1.1. Registro correcto de las actividades del intérprete de órdenes",
    ) in paths
