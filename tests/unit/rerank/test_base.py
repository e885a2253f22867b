"""Pure parts of the rerank stage: fused order, reranked hits, passage text."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ragstrata.errors import ConfigError
from ragstrata.rerank.base import RERANK, fused_order, passage_text, rerank_hits
from ragstrata.types import Chunk, Hit, RetrieverHit


def _chunk(i: int, *, path: tuple[str, ...] = ("Title", "Section")) -> Chunk:
    text = f"passage {i}"
    return Chunk(
        chunk_id=f"c{i:03d}",
        doc_id=f"d{i}",
        source=f"s{i}.md",
        title="Title",
        section_path=path,
        text=text,
        start=0,
        end=len(text),
        index=0,
        total=1,
        token_count=2,
        parent_id="p",
        content_hash="h",
    )


def _hits(n: int) -> list[Hit]:
    return [
        Hit(_chunk(i), i + 1, 1.0 / (61 + i), (RetrieverHit("dense", i + 1, 0.5),))
        for i in range(n)
    ]


def test_passage_text_puts_the_heading_path_first() -> None:
    assert passage_text(_chunk(1)) == "Title > Section\npassage 1"
    assert passage_text(_chunk(1, path=())) == "passage 1"
    chunk = _chunk(2)
    headed = replace(chunk, text="## Section {/*s*/}\n\npassage 2")
    assert passage_text(headed) == "Title > Section\npassage 2"


def test_fused_order_without_weight_is_the_cross_encoder_order_ties_by_position() -> None:
    assert fused_order(np.array([0.1, 0.9, 0.5, 0.9])) == [1, 3, 2, 0]


def test_fused_order_retrieval_prior_breaks_close_calls() -> None:
    scores = np.array([0.4, 0.5, -3.0])
    assert fused_order(scores) == [1, 0, 2]
    # position 0 is first in retrieval and second for the cross-encoder: a strong prior wins
    assert fused_order(scores, retrieval_weight=2.0) == [0, 1, 2]
    with pytest.raises(ConfigError):
        fused_order(scores, retrieval_weight=-1)


def test_rerank_hits_reorders_the_candidates_and_keeps_the_tail() -> None:
    hits = _hits(6)
    scores = np.array([0.0, 2.0, 1.0, -1.0], dtype=np.float32)  # 4 candidates of 6
    out = rerank_hits(hits, scores, top_k=6)
    assert [h.chunk.chunk_id for h in out] == ["c001", "c002", "c000", "c003", "c004", "c005"]
    assert [h.rank for h in out] == [1, 2, 3, 4, 5, 6]
    first = out[0]
    assert first.score == pytest.approx(2.0)
    assert first.explain[-1] == RetrieverHit(RERANK, 1, pytest.approx(2.0))
    assert first.retriever_score("dense") == 0.5  # retrieval explain kept
    assert first.retriever_score(RERANK) == pytest.approx(2.0)
    tail = out[4]
    assert tail.retriever_score(RERANK) is None and tail.score == hits[4].score


def test_rerank_hits_cuts_to_top_k_and_validates() -> None:
    hits = _hits(5)
    out = rerank_hits(hits, np.arange(5, dtype=np.float32), top_k=2)
    assert [h.chunk.chunk_id for h in out] == ["c004", "c003"]
    with pytest.raises(ConfigError):
        rerank_hits(hits, np.zeros(6), top_k=2)
    with pytest.raises(ConfigError):
        rerank_hits(hits, np.zeros(5), top_k=0)
    assert rerank_hits([], np.zeros(0), top_k=3) == ()
