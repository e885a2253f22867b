"""HyDE: Hypothetical Document Embeddings (Gao, Ma, Lin & Callan 2022, "Precise Zero-Shot Dense
Retrieval without Relevance Labels").

The LLM writes a short passage that would answer the question; the passage is embedded with the
document encoder, averaged with the query vector (both unit length, then re-normalized), and
the dense ranking of that vector is fused by RRF with the normal hybrid ranking (dense + BM25 of
the question itself). Off by default (``llm.hyde``): its effect has not been measured yet
(``bench/hyde_scifact.py`` measures it on a SciFact subset, see docs/generation.md).
:func:`hyde_hits` is the whole step as ``ask`` runs it, given the chat model, the embedder and
the store to search.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragstrata.embed.base import Embedder
from ragstrata.generate.base import ChatMessage, ChatModel
from ragstrata.index.base import Filters, VectorStore
from ragstrata.retrieve.copies import COPY_LOOKAHEAD, collapse_copies
from ragstrata.retrieve.fusion import rrf
from ragstrata.text.language import question_language
from ragstrata.types import Chunk, Hit

HYDE_TOKENS = 96
"""Length cap of the hypothetical passage."""

_INSTRUCTIONS = {
    "en": "Write a short factual passage (2-3 sentences) that answers the question, as it would "
    "appear in a reference document. Do not say you are unsure.",
    "es": "Escribe un pasaje breve y factual (2-3 frases) que responda a la pregunta, como "
    "aparecería en un documento de referencia. No digas que no estás seguro.",
}


def hypothetical_passage(
    generator: ChatModel, question: str, *, max_tokens: int = HYDE_TOKENS
) -> str:
    """The LLM's hypothetical answer passage (in the question's language)."""
    lang = question_language(question)
    messages = [
        ChatMessage("system", _INSTRUCTIONS[lang]),
        ChatMessage("user", question.strip()),
    ]
    return generator.complete(messages, max_tokens=max_tokens).text.strip()


def hyde_vector(embedder: Embedder, question: str, passage: str) -> npt.NDArray[np.float32]:
    """``normalize(embed_query(question) + embed_documents([passage])[0])``, float32 ``(dim,)``."""
    q = embedder.embed_query(question)
    if not passage:
        return q
    d = embedder.embed_documents([passage])[0]
    v = (q + d).astype(np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else q


def fuse_hyde(
    hits: Sequence[Hit],
    hyde_ranking: Sequence[tuple[str, float]],
    fetch: Callable[[Sequence[str]], Sequence[Chunk]],
    *,
    top_k: int,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> tuple[Hit, ...]:
    """RRF of the hybrid hits (as one ranking, ``hybrid``) and the HyDE dense ranking
    (``hyde``); ``fetch`` loads chunks not among ``hits``. Each fused hit keeps its hybrid
    explain entries and gains a ``hyde`` entry (rank, cosine); copies of a passage are one hit
    (:func:`~ragstrata.retrieve.copies.collapse_copies`)."""
    fused = rrf(
        {"hybrid": [(h.chunk.chunk_id, h.score) for h in hits], "hyde": list(hyde_ranking)},
        k=k,
        weights=weights,
    )[: top_k + COPY_LOOKAHEAD]  # read on: copies fold, top_k distinct passages remain
    known = {h.chunk.chunk_id: h for h in hits}
    missing = [f.item_id for f in fused if f.item_id not in known]
    chunks = {c.chunk_id: c for c in fetch(missing)} if missing else {}
    out: list[Hit] = []
    for f in fused:
        base = known.get(f.item_id)
        chunk = base.chunk if base is not None else chunks.get(f.item_id)
        if chunk is None:
            continue
        explain = (base.explain if base is not None else ()) + tuple(
            e for e in f.explain if e.retriever == "hyde"
        )
        copies = base.copies if base is not None else ()
        out.append(Hit(chunk, len(out) + 1, f.score, explain, copies))
    return tuple(collapse_copies(out)[:top_k])


def timed_hypothetical(generator: ChatModel, question: str) -> tuple[str, float]:
    """:func:`hypothetical_passage` and its wall-clock milliseconds."""
    t = time.perf_counter()
    passage = hypothetical_passage(generator, question)
    return passage, (time.perf_counter() - t) * 1000


@dataclass(frozen=True, slots=True)
class HydeHits:
    """The hits fused with the HyDE ranking, the hypothetical ``passage`` and ``ms``: the
    wall-clock milliseconds of writing it."""

    hits: tuple[Hit, ...]
    passage: str
    ms: float


def hyde_hits(
    chat_model: ChatModel,
    embedder: Embedder,
    store: VectorStore,
    question: str,
    hits: Sequence[Hit],
    *,
    candidates: int,
    top_k: int,
    rrf_k: int = 60,
    filters: Filters | None = None,
) -> HydeHits:
    """``hits`` fused (:func:`fuse_hyde`) with the dense ranking of ``store`` for the
    :func:`hyde_vector` of ``question`` and the chat model's hypothetical passage: the
    ``candidates`` nearest chunks under ``filters``, cut to ``max(len(hits), top_k)``."""
    passage, ms = timed_hypothetical(chat_model, question)
    vector = hyde_vector(embedder, question, passage)
    ranking = store.dense_search_ids(vector, limit=candidates, filters=filters)
    fused = fuse_hyde(hits, ranking, store.get, top_k=max(len(hits), top_k), k=rrf_k)
    return HydeHits(fused, passage, ms)
