"""HyDE as ``ask`` runs it: the hypothetical passage, its dense ranking from the given store,
fused with the hybrid hits (no model, no network)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragstrata.generate.base import ChatMessage, Completion, Usage
from ragstrata.retrieve.hyde import hyde_hits
from ragstrata.types import Chunk, Hit, RetrieverHit


def _chunk(cid: str) -> Chunk:
    return Chunk(
        chunk_id=cid,
        doc_id=cid,
        source=f"/docs/{cid}.md",
        title=cid,
        section_path=(),
        text=f"text of {cid}",
        start=0,
        end=10,
        index=0,
        total=1,
        token_count=3,
        parent_id=cid,
        content_hash=cid,
    )


class Passage:
    name = "fake:hyde"

    def __init__(self) -> None:
        self.asked: list[list[ChatMessage]] = []

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Any:
        self.asked.append(list(messages))
        return Completion(" Scurvy comes from a lack of vitamin C. ", Usage(1, 1), "stop")


class Embedder:
    def embed_query(self, text: str) -> np.ndarray:
        return np.array([1.0, 0.0], dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[0.0, 1.0]] * len(texts), dtype=np.float32)


class Store:
    def __init__(self) -> None:
        self.searched: list[tuple[np.ndarray, int, Any]] = []

    def dense_search_ids(
        self, vector: np.ndarray, *, limit: int, filters: Any = None
    ) -> list[tuple[str, float]]:
        self.searched.append((vector, limit, filters))
        return [("new", 0.9), ("a", 0.5)]

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return [_chunk(c) for c in chunk_ids]


def test_hyde_fuses_the_passage_ranking_from_the_given_store() -> None:
    hits = [Hit(_chunk("a"), 1, 0.03, (RetrieverHit("dense", 1, 0.7),))]
    store = Store()
    out = hyde_hits(
        Passage(),  # type: ignore[arg-type]
        Embedder(),  # type: ignore[arg-type]
        store,  # type: ignore[arg-type]
        "What causes scurvy?",
        hits,
        candidates=50,
        top_k=5,
        filters={"doc_id": "a"},
    )
    assert out.passage == "Scurvy comes from a lack of vitamin C." and out.ms >= 0
    vector, limit, filters = store.searched[0]
    assert limit == 50 and filters == {"doc_id": "a"}
    assert np.allclose(vector, np.array([1.0, 1.0]) / np.sqrt(2))
    assert [h.chunk.chunk_id for h in out.hits] == ["a", "new"]
    assert [e.retriever for e in out.hits[0].explain] == ["dense", "hyde"]
    assert [h.rank for h in out.hits] == [1, 2]
