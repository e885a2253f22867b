"""Cross-encoder reranking: the :class:`~ragstrata.rerank.base.Reranker` protocol, a local
CrossEncoder/ONNX implementation and the training recipe of the shipped model.

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
