"""Deterministic stand-ins for the embedder and the LLM (no model, no network)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ragstrata.generate.base import ChatMessage, Completion, Delta, Usage
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.tokens import FunctionCounter
from ragstrata.types import Chunk, Hit, RetrieverHit


class HashEmbedder:
    """Bag of stemmed terms hashed into 256 dims, L2-normalized: cosine = term overlap."""

    name = "hash"
    dim = 256

    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for term in self.analyzer.terms(text):
                h = int(hashlib.md5(term.encode()).hexdigest()[:8], 16)
                out[i, h % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class ScriptedGenerator:
    """Answers with scripted texts in order; records the messages it was sent."""

    def __init__(self, *answers: str, context_window: int = 4096) -> None:
        self.answers = list(answers)
        self.calls: list[list[ChatMessage]] = []
        self.counter = FunctionCounter(lambda text: text.split())
        self.context_window = context_window

    @property
    def name(self) -> str:
        return "scripted:test"

    def complete(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Completion:
        text = "".join(d.text for d in self.stream(messages, max_tokens=max_tokens))
        return Completion(text, Usage(1, 1), "stop")

    def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Iterator[Delta]:
        self.calls.append(list(messages))
        text = self.answers.pop(0)
        pieces = text.split(" ")
        for i, piece in enumerate(pieces):
            yield Delta(piece + (" " if i < len(pieces) - 1 else ""))
        prompt = sum(self.counter.count(m.content) for m in messages)
        yield Delta("", done=True, usage=Usage(prompt, len(pieces)), finish_reason="stop")


def make_hit(
    doc: str,
    text: str,
    rank: int = 1,
    *,
    start: int = 0,
    dense: float = 0.8,
    path: tuple[str, ...] = ("Guide", "Part"),
    parent: str = "p",
    title: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> Hit:
    chunk = Chunk(
        chunk_id=f"{doc}-{start}",
        doc_id=doc,
        source=f"/corpus/{doc}.md",
        title=title or doc,
        section_path=path,
        text=text,
        start=start,
        end=start + len(text),
        index=0,
        total=1,
        token_count=len(text.split()),
        parent_id=parent,
        content_hash="h",
        metadata=dict(metadata or {}),
    )
    return Hit(chunk, rank, 1.0 / rank, (RetrieverHit("dense", rank, dense),))
