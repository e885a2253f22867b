"""Conformance suite of the :class:`~ragstrata.chunking.splitter.Chunker` protocol: the chunk
invariants over a small corpus of varied Markdown (prose, headings, code, tables, lists,
multibyte text, a long run without spaces).

Subclass :class:`ChunkerContract` and provide:

* a ``chunker`` pytest fixture returning the instance under test;
* ``tokens_used(chunker, chunk)``: the tokens the chunk costs against the budget (default
  ``chunk.token_count``; a chunker that prefixes a heading path or adds special tokens counts
  them here), and the class attribute ``max_tokens``, the budget;
* optionally ``documents()``, to add documents of the formats the chunker is meant for.

Invariants: every chunk within the token budget and never empty; ``document.text[start:end]``
is the chunk's text; ids deterministic (re-chunking gives equal chunks) and unique; provenance
(document id, source, title, language, index/total, section path, parent id) carried over; a
stable ``signature``; ``embedding_text`` holds the chunk's text.
ragstrata's own chunker is subclassed in ``tests/contract/test_chunker_contract.py``.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from ragstrata.chunking.splitter import Chunker
from ragstrata.ingest.markdown import parse_markdown
from ragstrata.ingest.text import normalize_text
from ragstrata.types import Chunk, Document

PROSE = (
    "Dependencies with yield run their exit code after the response is sent. "
    "A dependency can declare sub-dependencies, and FastAPI resolves the whole graph once per "
    "request. "
)
SPANISH = "El estado de un componente se conserva mientras se renderice en la misma posición. "
CODE = "```python\n" + "\n".join(f"def f{i}(x: int) -> int:\n    return x + {i}" for i in range(40))
TABLE = "| key | value |\n| --- | --- |\n" + "\n".join(f"| k{i} | valor {i} |" for i in range(60))

MARKDOWN: dict[str, str] = {
    "guide": (
        f"# Guide\n\nIntro. {PROSE}\n\n## Install\n\n{PROSE * 6}\n\n"
        f"### Linux\n\n- one\n- two\n- {PROSE}\n\n## Configure\n\n{CODE}\n```\n\n{TABLE}\n"
    ),
    "spanish": f"# Componentes\n\n{SPANISH * 30}\n\n## Estado\n\n{SPANISH * 3}東京タワー😀\n",
    "no-headings": f"{PROSE * 10}\n\n{PROSE}",
    "long-run": f"# Run\n\n{'x' * 5000}\n\nafter the run.\n",
    "tiny": "# Only a title\n\nx\n",
}
"""Markdown sources of :meth:`ChunkerContract.documents`, by name."""


def markdown_document(name: str, text: str, *, language: str = "en") -> Document:
    """A :class:`Document` parsed from Markdown ``text`` (``doc_id`` and source from ``name``)."""
    parsed = parse_markdown(normalize_text(text), fallback_title=name)
    return Document(
        doc_id=f"doc-{name}",
        source=f"/docs/{name}.md",
        title=parsed.title,
        text=parsed.text,
        blocks=parsed.blocks,
        content_hash=f"hash-{name}",
        format="markdown",
        metadata=parsed.metadata,
        language=language,
    )


class ChunkerContract:
    """Tests every :class:`Chunker` must pass (see the module docstring)."""

    max_tokens: ClassVar[int] = 0
    """The token budget the ``chunker`` fixture was built with."""

    @pytest.fixture
    def chunker(self) -> Chunker:
        raise NotImplementedError("subclasses provide the chunker under test")

    def tokens_used(self, chunker: Chunker, chunk: Chunk) -> int:
        """Tokens ``chunk`` costs against ``max_tokens``."""
        return chunk.token_count

    def documents(self) -> list[Document]:
        """The documents every test chunks (Markdown of :data:`MARKDOWN`)."""
        return [
            markdown_document(name, text, language="es" if name == "spanish" else "en")
            for name, text in MARKDOWN.items()
        ]

    @pytest.fixture
    def chunked(self, chunker: Chunker) -> list[tuple[Document, list[Chunk]]]:
        return [(doc, chunker.chunk(doc)) for doc in self.documents()]

    # ------------------------------------------------------------------ invariants
    def test_every_chunk_within_the_token_budget(
        self, chunker: Chunker, chunked: list[tuple[Document, list[Chunk]]]
    ) -> None:
        assert self.max_tokens > 0, "set max_tokens to the chunker's budget"
        for _, chunks in chunked:
            for chunk in chunks:
                assert 0 < self.tokens_used(chunker, chunk) <= self.max_tokens, chunk

    def test_chunks_are_never_empty(self, chunked: list[tuple[Document, list[Chunk]]]) -> None:
        for doc, chunks in chunked:
            assert chunks, f"{doc.doc_id} has text but no chunks"
            for chunk in chunks:
                assert chunk.text.strip(), chunk
                assert chunk.token_count > 0

    def test_offsets_reproduce_the_text(self, chunked: list[tuple[Document, list[Chunk]]]) -> None:
        for doc, chunks in chunked:
            for chunk in chunks:
                assert 0 <= chunk.start < chunk.end <= len(doc.text)
                assert doc.text[chunk.start : chunk.end] == chunk.text
            starts = [c.start for c in chunks]
            assert starts == sorted(starts), "chunks come in reading order"

    def test_every_block_is_covered(self, chunked: list[tuple[Document, list[Chunk]]]) -> None:
        for doc, chunks in chunked:
            covered = bytearray(len(doc.text))
            for chunk in chunks:
                covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
            for block in doc.blocks:
                lost = [
                    i for i in range(block.start, block.end) if not covered[i]
                ]  # whitespace between split pieces is the only text a chunk may drop
                assert all(doc.text[i].isspace() for i in lost), (doc.doc_id, block)

    def test_deterministic_ids(
        self, chunker: Chunker, chunked: list[tuple[Document, list[Chunk]]]
    ) -> None:
        for doc, chunks in chunked:
            again = chunker.chunk(doc)
            assert again == chunks
            ids = [c.chunk_id for c in chunks]
            assert len(set(ids)) == len(ids) and all(ids)

    def test_provenance_fields(self, chunked: list[tuple[Document, list[Chunk]]]) -> None:
        for doc, chunks in chunked:
            sections: dict[str, tuple[str, ...]] = {}
            for position, chunk in enumerate(chunks):
                assert (chunk.doc_id, chunk.source, chunk.title) == (
                    doc.doc_id,
                    doc.source,
                    doc.title,
                )
                assert chunk.language == doc.language
                assert (chunk.index, chunk.total) == (position, len(chunks))
                assert isinstance(chunk.section_path, tuple)
                assert all(isinstance(p, str) and p for p in chunk.section_path)
                assert chunk.parent_id and chunk.content_hash
                assert sections.setdefault(chunk.parent_id, chunk.section_path) == (
                    chunk.section_path
                ), "one parent section, one heading path"
                assert (chunk.page_start, chunk.page_end) == (None, None)  # no pages in Markdown

    def test_a_document_without_text_has_no_chunks(self, chunker: Chunker) -> None:
        empty = markdown_document("empty", "")
        assert chunker.chunk(empty) == []

    def test_signature_is_stable_text(self, chunker: Chunker) -> None:
        signature = chunker.signature
        assert isinstance(signature, str) and signature
        assert chunker.signature == signature

    def test_embedding_text_holds_the_chunk(
        self, chunker: Chunker, chunked: list[tuple[Document, list[Chunk]]]
    ) -> None:
        for _, chunks in chunked:
            for chunk in chunks:
                text = chunker.embedding_text(chunk)
                assert isinstance(text, str)
                words = chunk.text.split()
                assert not words or words[0] in text, "the chunk's own text is embedded"
