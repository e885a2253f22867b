"""Every file of the shared corpora loads, with valid blocks (see ``tests/conftest.py`` for
how the corpora are located and when a missing corpus skips or fails)."""

from __future__ import annotations

import re
import time
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
        started = time.perf_counter()
        doc = load_document(path)
        elapsed = time.perf_counter() - started
        assert elapsed < 5.0, f"{path} took {elapsed:.1f} s"
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
