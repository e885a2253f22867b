"""Cross-encoder reranking: the :class:`~ragstrata.rerank.base.Reranker` protocol, a local
CrossEncoder/ONNX implementation (the shipped model's training recipe is
:mod:`ragstrata.training.reranker`, above the engine).

Nothing heavy is imported here; models load on first use.
"""

from __future__ import annotations

from ragstrata.rerank.base import Reranker, RerankScores, fused_order, passage_text, rerank_hits

__all__ = [
    "RerankScores",
    "Reranker",
    "fused_order",
    "passage_text",
    "rerank_hits",
]
