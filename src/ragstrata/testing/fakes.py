"""Deterministic stand-ins for the embedder and the chat model (no model, no network), and
builders of chunks and hits for tests.

* :class:`HashEmbedder` satisfies :class:`~ragstrata.embed.base.Embedder`: a bag of stemmed
  terms hashed into 256 dims, so cosine similarity measures term overlap.
* :class:`ScriptedChatModel` satisfies :class:`~ragstrata.generate.base.ChatModel`: it answers
  with scripted texts in order and records the messages it was sent.
* :func:`make_chunk` builds a :class:`~ragstrata.types.Chunk` with content-hash ids (as the
  chunker makes them); :func:`make_hit` a ranked :class:`~ragstrata.types.Hit` over a chunk
  with readable ids (``"{doc}-{start}"``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ragstrata.generate.base import ChatMessage, ChatModel, Completion, Delta, Usage, collect
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.tokens import CallableTokenCounter, TokenCounter
from ragstrata.types import Chunk, FloatArray, Hit, RetrieverHit


def _words(text: str) -> int:
    return len(text.split())


class HashEmbedder:
    """Bag of stemmed terms hashed into 256 dims, L2-normalized: cosine = term overlap.

    Symmetric (a query is embedded as a one-text batch), deterministic across processes (md5,
    not ``hash()``); a text without terms embeds as the zero vector, the one row that is not of
    unit norm. ``counter`` counts whitespace-separated words.
    """

    name = "hash"
    dim = 256
    max_seq_length = 512
    special_tokens = 0

    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self._counter = CallableTokenCounter(_words)

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 ``(n, dim)``, rows of unit L2 norm; ``(0, dim)`` for no texts."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for term in self.analyzer.terms(text):
                h = int(hashlib.md5(term.encode()).hexdigest()[:8], 16)
                out[i, h % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out

    def embed_query(self, text: str) -> FloatArray:
        """float32 ``(dim,)``: the text's row as a document."""
        row: FloatArray = self.embed_documents([text])[0]
        return row


class ScriptedChatModel:
    """Answers with scripted texts in order; records the messages it was sent.

    Each generation (``complete`` or ``stream``) consumes the next answer (IndexError when the
    script is exhausted). ``stream`` yields the answer word by word (each word with its
    following space), then one ``done`` delta whose usage counts prompt words and answer
    pieces and whose ``finish_reason`` is the one given (``stop``); ``complete`` is that
    stream collected. ``counter`` counts words.
    """

    def __init__(
        self, *answers: str, context_window: int = 4096, finish_reason: str = "stop"
    ) -> None:
        self.answers = list(answers)
        self.calls: list[list[ChatMessage]] = []
        self.counter: TokenCounter = CallableTokenCounter(_words)
        self.context_window = context_window
        self.finish_reason = finish_reason

    @property
    def name(self) -> str:
        return "scripted:test"

    def complete(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Completion:
        return collect(self.stream(messages, max_tokens=max_tokens))

    def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Iterator[Delta]:
        self.calls.append(list(messages))
        text = self.answers.pop(0)
        pieces = text.split(" ")
        for i, piece in enumerate(pieces):
            yield Delta(piece + (" " if i < len(pieces) - 1 else ""))
        prompt = sum(self.counter.count(m.content) for m in messages)
        yield Delta(
            "", done=True, usage=Usage(prompt, len(pieces)), finish_reason=self.finish_reason
        )


class RecordedChatModel:
    """Answers with a recorded generation (``text``, set before each ``ask``), with ``base``'s
    name, tokenizer and window, so that context assembly budgets as the live run did.

    For re-checking recorded LLM answers with changed post-generation code (the citation
    checker runs after generation: the same question, index and text give the same pairs):
    ``bench/llm_answers.py --regrade``, ``bench/checker_paraphrases.py``. ``base`` is not
    asked to generate; only its ``counter`` is used (a local model loads its weights for it).
    """

    def __init__(self, base: ChatModel) -> None:
        self.base = base
        self.text = ""

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def counter(self) -> TokenCounter:
        return self.base.counter

    @property
    def context_window(self) -> int:
        return self.base.context_window

    def complete(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Completion:
        return collect(self.stream(messages, max_tokens=max_tokens))

    def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Iterator[Delta]:
        yield Delta(self.text)
        prompt = sum(self.counter.count(m.content) for m in messages)
        usage = Usage(prompt, self.counter.count(self.text))
        yield Delta("", done=True, usage=usage, finish_reason="stop")


def make_chunk(
    doc_id: str,
    index: int,
    text: str,
    *,
    source: str | None = None,
    language: str = "und",
    pages: tuple[int, int] | None = None,
    **meta: Any,
) -> Chunk:
    """Chunk ``index`` of three of ``doc_id`` (offsets ``index * 100`` on), with content-hash
    ``chunk_id``/``parent_id``/``content_hash`` and ``meta`` as its metadata: the same
    arguments give the same ids."""
    chunk_id = hashlib.blake2b(f"{doc_id}\x00{index}\x00{text}".encode(), digest_size=16)
    return Chunk(
        chunk_id=chunk_id.hexdigest(),
        doc_id=doc_id,
        source=source or f"docs/{doc_id}.md",
        title=f"Title of {doc_id}",
        section_path=("Guide", f"Part {index}"),
        text=text,
        start=index * 100,
        end=index * 100 + len(text),
        index=index,
        total=3,
        token_count=len(text.split()),
        parent_id=hashlib.sha256(f"{doc_id}/{index // 2}".encode()).hexdigest()[:32],
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        metadata=dict(meta),
        language=language,
        page_start=pages[0] if pages else None,
        page_end=pages[1] if pages else None,
        # a break in the text for each later page: payloads must keep them
        page_breaks=tuple(range(1, pages[1] - pages[0] + 1)) if pages else (),
    )


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
    """A dense hit at ``rank`` (score ``1 / rank``, cosine ``dense``) over the only chunk of
    ``doc`` (``chunk_id`` ``"{doc}-{start}"``, source ``/corpus/{doc}.md``)."""
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
