"""BM25 through our analyzer + Qdrant Edge, cross-checked against bm25s (Lucene variant).

Both sides see the same pre-tokenized term lists, so any difference is in the scoring: our
document weights (``bm25_document_weights``), the query vector (``query_sparse_vector``) and
the IDF that Qdrant applies at query time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragstrata.index.bm25 import bm25_document_weights, term_id
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.hybrid import query_sparse_vector
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Chunk

bm25s = pytest.importorskip("bm25s")

pytestmark = pytest.mark.shared

N_DOCS = 200
N_QUERIES = 20
K1, B = 1.2, 0.75
TOP = 10


def _chunk(doc_id: str, text: str) -> Chunk:
    return Chunk(
        chunk_id=hashlib.blake2b(doc_id.encode(), digest_size=16).hexdigest(),
        doc_id=doc_id,
        source=f"scifact/{doc_id}",
        title="",
        section_path=(),
        text=text,
        start=0,
        end=len(text),
        index=0,
        total=1,
        token_count=0,
        parent_id="",
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


@pytest.fixture(scope="module")
def scifact(shared_data: Path) -> tuple[list[tuple[str, str]], list[str]]:
    root = shared_data / "beir-scifact"
    docs: list[tuple[str, str]] = []
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs.append((row["_id"], f"{row['title']}\n{row['text']}"))
            if len(docs) == N_DOCS:
                break
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for _, line in zip(range(N_QUERIES), fh, strict=False)]
    return docs, queries


@pytest.fixture(scope="module")
def indexes(scifact, tmp_path_factory):
    docs, queries = scifact
    analyzer = Analyzer(languages=("english",))
    tokens = [analyzer.terms(text) for _, text in docs]
    assert all(tokens), "every sample document has terms"
    # hashed term ids must be collision-free on this sample, or the comparison is meaningless
    vocab = {t for doc in tokens for t in doc}
    assert len({term_id(t) for t in vocab}) == len(vocab)

    avgdl = sum(len(t) for t in tokens) / len(tokens)
    chunks = [_chunk(doc_id, text) for doc_id, text in docs]
    weights = [
        bm25_document_weights(Counter(t), doc_len=len(t), avgdl=avgdl, k1=K1, b=B) for t in tokens
    ]
    dense = np.random.default_rng(0).standard_normal((len(docs), 8)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    store = EdgeStore(tmp_path_factory.mktemp("bm25ref") / "shard", dim=8)
    store.upsert(chunks, dense, weights)

    reference = bm25s.BM25(k1=K1, b=B, method="lucene", dtype="float64")
    reference.index(tokens, show_progress=False)
    yield analyzer, store, reference, [c.doc_id for c in chunks], queries
    store.close()


def test_sample_is_large_enough(indexes) -> None:
    _, store, _, doc_ids, queries = indexes
    assert store.count() == len(doc_ids) == N_DOCS
    assert len(queries) == N_QUERIES


def test_scores_match_bm25s(indexes) -> None:
    analyzer, store, reference, doc_ids, queries = indexes
    compared = 0
    for query in queries:
        q_terms = analyzer.terms(query)
        vector = query_sparse_vector(analyzer, query)
        ours = store.sparse_search(vector, limit=TOP)
        # bm25s sums a repeated query token once per occurrence, as our query tf weight does
        known = [t for t in q_terms if t in reference.vocab_dict]
        if not known:
            assert ours == []
            continue
        ref_scores = reference.get_scores(known)
        order = sorted(range(len(doc_ids)), key=lambda i: (-ref_scores[i], doc_ids[i]))
        ref_top = [(doc_ids[i], float(ref_scores[i])) for i in order if ref_scores[i] > 0][:TOP]
        assert len(ours) == len(ref_top), query
        for rank, ((chunk, score), (ref_id, ref_score)) in enumerate(
            zip(ours, ref_top, strict=True), start=1
        ):
            assert score == pytest.approx(ref_score, rel=1e-4), (query, rank)
            if chunk.doc_id != ref_id:
                # only a tie (within tolerance) may swap two documents
                assert ref_scores[doc_ids.index(chunk.doc_id)] == pytest.approx(
                    ref_score, rel=1e-4
                ), (query, rank)
            compared += 1
    assert compared >= 100, "the sample queries must exercise the comparison"


def test_repeated_query_term_counts_per_occurrence(indexes) -> None:
    analyzer, store, reference, _, _ = indexes
    once = store.sparse_search(query_sparse_vector(analyzer, "insulin"), limit=5)
    twice = store.sparse_search(query_sparse_vector(analyzer, "insulin insulin"), limit=5)
    assert once, "the sample mentions insulin"
    assert [c.doc_id for c, _ in once] == [c.doc_id for c, _ in twice]
    for (_, s1), (_, s2) in zip(once, twice, strict=True):
        assert s2 == pytest.approx(2 * s1, rel=1e-5)
    ref = reference.get_scores(analyzer.terms("insulin insulin"))
    assert twice[0][1] == pytest.approx(float(ref.max()), rel=1e-4)
