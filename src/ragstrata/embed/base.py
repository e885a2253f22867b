"""The ``Embedder`` stage protocol and shared helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragstrata.text.tokens import TokenCounter
from ragstrata.types import FloatArray


@runtime_checkable
class Embedder(Protocol):
    """Dense text encoder for asymmetric retrieval (queries vs documents).

    ``name`` identifies model and version; an index records it and refuses another embedder.
    ``dim`` is the embedding dim; ``max_seq_length`` the model's input limit in tokens
    (special tokens included); ``special_tokens`` how many of those the model adds itself;
    ``counter`` counts tokens with the model's own tokenizer.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_seq_length(self) -> int: ...

    @property
    def special_tokens(self) -> int: ...

    @property
    def counter(self) -> TokenCounter: ...

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 array (n, dim), each row L2-normalized; (0, dim) for no texts."""
        ...

    def embed_query(self, text: str) -> FloatArray:
        """float32 array (dim,), L2-normalized."""
        ...


def l2_normalize(vectors: npt.NDArray[np.floating]) -> FloatArray:
    """Rows scaled to unit L2 norm (zero rows stay zero); returns float32 (n, dim)."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    out: FloatArray = (arr / norms).astype(np.float32, copy=False)
    return out


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of ``texts`` grouped in batches of similar length (longest first), so padding
    inside a batch is minimal; every index appears exactly once."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def pad_right(
    rows: Sequence[Sequence[int]], pad_id: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Token id rows right-padded with ``pad_id`` to the longest: ``(input_ids,
    attention_mask)``, both int64 ``(len(rows), longest)``, the mask 1 on each row's own ids."""
    width = max((len(r) for r in rows), default=0)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask
