"""BM25 sparse vectors (``ragstrata.index.bm25``): stable term ids, document weights."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from ragstrata.index.bm25 import bm25_document_weights, term_id


def test_term_id_stable_and_uint32() -> None:
    # BLAKE2b-32 of "user", big-endian: fixed so that indexes built elsewhere stay valid
    digest = hashlib.blake2b(b"user", digest_size=4).digest()
    assert term_id("user") == int.from_bytes(digest, "big")
    assert term_id("user") == term_id("user")
    assert term_id("user") != term_id("users")
    for term in ["", "a", "数据", "err_conn_reset", "x" * 1000]:
        assert 0 <= term_id(term) < 2**32


def test_bm25_document_weights_formula() -> None:
    tf = Counter({"alpha": 3, "beta": 1})
    weights = bm25_document_weights(tf, doc_len=4, avgdl=8.0, k1=1.2, b=0.75)
    norm = 1.2 * (1 - 0.75 + 0.75 * 4 / 8.0)
    assert weights == {
        term_id("alpha"): pytest.approx(3 / (3 + norm)),
        term_id("beta"): pytest.approx(1 / (1 + norm)),
    }
    # longer-than-average documents get lower weights for the same tf
    long = bm25_document_weights(tf, doc_len=40, avgdl=8.0, k1=1.2, b=0.75)
    assert long[term_id("beta")] < weights[term_id("beta")]
