"""BM25 sparse vectors: stable term ids and the document-side weight of each term.

Terms come from :class:`ragstrata.text.analyzer.Analyzer`. Term ids for sparse vectors are the
first 4 bytes of BLAKE2b of the term (stable across runs and machines); the index applies the
IDF factor at query time.
"""

from __future__ import annotations

import hashlib
from collections import Counter


def term_id(term: str) -> int:
    """Stable unsigned 32-bit id of ``term`` (BLAKE2b, first 4 bytes, big-endian)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def bm25_document_weights(
    tf: Counter[str], *, doc_len: int, avgdl: float, k1: float, b: float
) -> dict[int, float]:
    """BM25 term-frequency component per term id (Lucene form, Robertson & Zaragoza 2009):
    ``tf / (tf + k1 * (1 - b + b * doc_len / avgdl))``. The IDF factor
    ``ln(1 + (N - df + 0.5) / (df + 0.5))`` is applied by the index at query time."""
    norm = k1 * (1.0 - b + b * doc_len / avgdl) if avgdl > 0 else k1
    weights: dict[int, float] = {}
    for term, count in tf.items():
        key = term_id(term)
        weights[key] = weights.get(key, 0.0) + count / (count + norm)
    return weights
