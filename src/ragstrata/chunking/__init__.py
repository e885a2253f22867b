"""Structure-aware chunking and token counting (see :mod:`ragstrata.chunking.splitter`)."""

from ragstrata.chunking.splitter import Chunker, StructureChunker, heading_prefix
from ragstrata.chunking.tokens import CallableTokenCounter, HFTokenCounter, TokenCounter

__all__ = [
    "CallableTokenCounter",
    "Chunker",
    "HFTokenCounter",
    "StructureChunker",
    "TokenCounter",
    "heading_prefix",
]
