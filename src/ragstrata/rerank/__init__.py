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
    "load_reranker",
    "passage_text",
    "rerank_hits",
]


def load_reranker(
    path: object,
    *,
    batch_size: int = 16,
    max_length: int | None = None,
    threads: int = 0,
) -> Reranker:
    """A :class:`~ragstrata.rerank.cross_encoder.CrossEncoderReranker` over the local folder
    ``path`` (ONNX export preferred over torch weights). Raises ConfigError for a bad folder."""
    from pathlib import Path

    from ragstrata.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(
        Path(str(path)), batch_size=batch_size, max_length=max_length, threads=threads
    )
