"""The ``VectorStore`` stage protocol: one store for chunk payload, dense vector and BM25 vector."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ragstrata.errors import RetrievalError
from ragstrata.types import Chunk, FloatArray, meta_text

FilterValue = str | int | bool | Sequence[str] | Sequence[int]
Filters = Mapping[str, FilterValue]
"""Payload path → required value (a sequence means "any of"); all entries must match.
Paths: ``doc_id``, ``source``, ``title``, ``language`` (the chunk's detected language, ``und`` when
unknown), and ``meta.<key>`` for chunk metadata."""

FILTER_KEY = re.compile(r"doc_id|source|title|language|meta\.[A-Za-z0-9_]{1,64}")
"""The payload paths a filter may name."""


def check_filters(
    filters: Mapping[str, Any] | None, *, max_values: int | None = None
) -> Filters | None:
    """``filters`` checked: keys ``doc_id``, ``source``, ``title``, ``language`` or
    ``meta.<key>`` (:data:`FILTER_KEY`); values a string, an integer, a boolean, or a non-empty
    list or tuple of strings or integers ("any of"; at most ``max_values`` when given: the
    service caps what a request may send, the library does not, as ``eval-answers`` filters on
    every document but a few). Empty or ``None`` -> ``None``. Raises
    :class:`~ragstrata.errors.RetrievalError` naming the bad key or value: an unknown key would
    otherwise match nothing, silently (``{"lang": "en"}``)."""
    if not filters:
        return None
    checked: dict[str, FilterValue] = {}
    for key, value in filters.items():
        if not isinstance(key, str) or not FILTER_KEY.fullmatch(key):
            raise RetrievalError(
                f"filter key {str(key)[:80]!r} is not allowed; use doc_id, source, title, "
                "language or meta.<key>"
            )
        if isinstance(value, list | tuple):
            most = len(value) if max_values is None else max_values
            if not 1 <= len(value) <= most or not all(
                isinstance(v, str | int) and not isinstance(v, bool) for v in value
            ):
                bound = "at least one" if max_values is None else f"1 to {max_values}"
                raise RetrievalError(
                    f"filter {key!r}: a list must hold {bound} strings or integers"
                )
            checked[key] = _meta_values(value) if key.startswith("meta.") else list(value)
        elif isinstance(value, str | int | bool):
            if key.startswith("meta."):
                texts = _meta_values([value])
                checked[key] = texts[0] if len(texts) == 1 else texts
            else:
                checked[key] = value
        else:
            raise RetrievalError(
                f"filter {key!r}: {type(value).__name__} is not allowed; use a string, an "
                "integer, a boolean or a list of strings or integers"
            )
        if not key.startswith("meta."):
            checked[key] = _text_values(key, checked[key])
        if key == "title" or key.startswith("meta."):  # stored NFC (a source path is as on disk)
            checked[key] = _nfc(checked[key])
    return checked


def _nfc(value: FilterValue) -> FilterValue:
    """Text of a filter value in Unicode NFC, as titles and front matter are stored (review 30:
    a decomposed "María Núñez" matched nothing)."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [unicodedata.normalize("NFC", v) if isinstance(v, str) else v for v in value]
    return value


def _text_values(key: str, value: FilterValue) -> FilterValue:
    """A ``doc_id``, ``source``, ``title`` or ``language`` filter value checked to be text (a
    number matched nothing, and a number as the language crashed the search: trial 24); a
    language lowercased to its code (:func:`_language_code`). RetrievalError otherwise."""
    values: list[object] = list(value) if isinstance(value, list | tuple) else [value]
    texts = [v for v in values if isinstance(v, str)]
    if len(texts) < len(values):
        kinds = sorted({type(v).__name__ for v in values if not isinstance(v, str)})
        raise RetrievalError(
            f"filter {key!r}: give text (or a list of texts), not {', '.join(kinds)}"
        )
    if key == "language":
        texts = [_language_code(v) for v in texts]
    return texts if isinstance(value, list | tuple) else texts[0]


def _language_code(value: str) -> str:
    """A ``language`` filter value as chunks store it: a lowercase ISO 639-1 code (``es``,
    ``en``; a 3-letter one passes too) or ``und``. ``EN`` is ``en``; ``english`` is refused
    (it matched nothing, silently)."""
    code = value.strip().lower()
    if not re.fullmatch(r"[a-z]{2,3}", code):
        raise RetrievalError(
            f"filter 'language': {value[:40]!r} is not a language code; use a two-letter "
            "ISO 639-1 code such as 'es' or 'en' ('und' for text of no detected language)"
        )
    return code


_WHOLE = re.compile(r"-?\d{1,15}")
_WHOLE_POINT_ZERO = re.compile(r"(-?\d{1,15})\.0+")


def _meta_values(values: Sequence[str | int | bool]) -> list[str]:
    """Each value as metadata text (:func:`~ragstrata.types.meta_text`), a whole number also
    in its other written form, so that ``meta.version=2`` matches front matter's
    ``version: 2.0`` (stored "2.0") and ``meta.version=2.0`` its ``version: 2``; nothing else
    is rewritten ("0012" does not become 12, nor "2.10" 2.1); order kept, no repeats."""
    out: dict[str, None] = {}
    for value in values:
        text = meta_text(value)
        out[text] = None
        if isinstance(value, bool):
            continue
        if _WHOLE.fullmatch(text):
            out[f"{text}.0"] = None
        elif match := _WHOLE_POINT_ZERO.fullmatch(text):
            out[match.group(1)] = None
            out[f"{match.group(1)}.0"] = None
    return list(out)


SparseVector = Mapping[int, float]
"""Term id → weight (BM25 term-frequency component; the store applies IDF)."""

QUANTIZATIONS = ("none", "int8", "binary")
"""Dense-vector quantizations the Qdrant stores offer (``store.quantization``)."""


def search_params(
    models: Any, *, hnsw_ef: int | None, quantization: str, oversampling: float
) -> Any:
    """Qdrant ``SearchParams`` for a dense query: the HNSW beam ``hnsw_ef`` and, for a quantized
    vector, rescoring of ``limit x oversampling`` candidates with the float32 originals.
    ``models`` is the module holding ``SearchParams`` and ``QuantizationSearchParams``: the
    same names and fields in ``qdrant_edge`` and ``qdrant_client.models``."""
    return models.SearchParams(
        hnsw_ef=hnsw_ef,
        quantization=models.QuantizationSearchParams(rescore=True, oversampling=oversampling)
        if quantization != "none"
        else None,
    )


@runtime_checkable
class VectorStore(Protocol):
    """Chunk store with dense (cosine) and sparse (BM25 with IDF) search.

    Upserts are idempotent by ``chunk_id``. Search results are ``(chunk, score)`` sorted by
    descending score, at most ``limit`` long. Raises :class:`ragstrata.errors.StoreError` on
    I/O failure and :class:`ragstrata.errors.DimensionMismatchError` for a wrong vector dim.
    """

    @property
    def dim(self) -> int: ...

    def upsert(
        self, chunks: Sequence[Chunk], dense: FloatArray, sparse: Sequence[SparseVector]
    ) -> None:
        """Insert or replace ``chunks``; ``dense`` is float32 (n, dim), one sparse vector each."""
        ...

    def update_sparse(self, chunk_ids: Sequence[str], sparse: Sequence[SparseVector]) -> None:
        """Replace the sparse vectors of stored chunks (dense vectors and payloads stay): BM25
        weights recomputed for a new average chunk length. An empty vector leaves that chunk's
        as it is. Raises StoreError for a length mismatch or a failed write."""
        ...

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every chunk of the given documents (no error for unknown ids)."""
        ...

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove the given chunks (no error for unknown ids): rolls back an interrupted
        append of a large document's slice."""
        ...

    def dense_search(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity to ``vector`` (dim,)."""
        ...

    def sparse_search(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[Chunk, float]]:
        """Best chunks by BM25: sum over query terms of weight × IDF × document weight."""
        ...

    def dense_search_ids(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Like :meth:`dense_search` but ``(chunk_id, score)`` only: no payload is read."""
        ...

    def sparse_search_ids(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Like :meth:`sparse_search` but ``(chunk_id, score)`` only: no payload is read."""
        ...

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in input order; unknown ids are skipped."""
        ...

    def chunk_ids(self, filters: Filters | None = None) -> list[str]:
        """Ids of every stored chunk matching ``filters``."""
        ...

    def dense_vectors(self, chunk_ids: Sequence[str]) -> dict[str, FloatArray]:
        """Stored dense vectors by chunk id: float32 (dim,) each; unknown ids are absent.
        Lets a re-index reuse vectors instead of embedding unchanged text again."""
        ...

    def count(self, filters: Filters | None = None) -> int:
        """Number of stored chunks matching ``filters``."""
        ...

    def flush(self) -> None:
        """Make every accepted write durable."""
        ...

    def optimize(self) -> None:
        """Build the search indexes of what was written now, after a bulk write, instead of at
        the next threshold (a no-op where the backend builds them in the background)."""
        ...

    def close(self) -> None:
        """Flush and release files; the store must not be used afterwards."""
        ...


class ChunkReads:
    """The reads every :class:`VectorStore` derives from its id searches and :meth:`get`:
    ``dense_search``/``sparse_search`` are ``*_search_ids`` with the chunks fetched in one
    ``get`` (hits whose chunk vanished in between are dropped). Both ragstrata backends inherit
    it; a backend that can return payloads with its search may override both."""

    def dense_search_ids(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def sparse_search_ids(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        raise NotImplementedError

    def dense_search(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[Chunk, float]]:
        return self._with_chunks(self.dense_search_ids(vector, limit=limit, filters=filters))

    def sparse_search(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[Chunk, float]]:
        return self._with_chunks(self.sparse_search_ids(vector, limit=limit, filters=filters))

    def _with_chunks(self, hits: list[tuple[str, float]]) -> list[tuple[Chunk, float]]:
        chunks = {c.chunk_id: c for c in self.get([cid for cid, _ in hits])}
        return [(chunks[cid], score) for cid, score in hits if cid in chunks]
