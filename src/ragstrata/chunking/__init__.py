"""Structure-aware chunking (see :mod:`ragstrata.chunking.splitter`); token counters live in
:mod:`ragstrata.text.tokens`."""

from ragstrata.chunking.splitter import Chunker, StructureChunker, heading_prefix

__all__ = [
    "Chunker",
    "StructureChunker",
    "heading_prefix",
]
