"""Embedded store on Qdrant Edge (``qdrant-edge-py``): the Qdrant engine in-process.

Schema (the same a Qdrant server collection uses, so a server backend can share it): named dense
vector ``dense`` (cosine, HNSW), named sparse vector ``bm25`` with the IDF modifier (Qdrant's
``ln(1 + (N - n + 0.5) / (n + 0.5))``), payload = the chunk's fields, keyword indexes on
``doc_id`` and ``source``. Point ids are the chunk ids (32 hex digits read as a UUID).
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragstrata.errors import DimensionMismatchError, StoreError
from ragstrata.index.base import QUANTIZATIONS, ChunkReads, Filters, SparseVector, search_params
from ragstrata.optional import require
from ragstrata.types import Chunk, FloatArray

DENSE = "dense"
SPARSE = "bm25"
_BATCH = 512
_INDEXED_FIELDS = ("doc_id", "source", "language")
MIN_FREE_BYTES = 64 * 2**20
"""Free space a write needs on the index's file system: Qdrant Edge's write-ahead log grows in
memory-mapped 32 MiB segments, and a segment mapped on a full disk kills the process with
SIGBUS at its first write (review 36: "Bus error", exit 135, no message), so two segments'
worth is checked before creating a shard and before each write."""


def ensure_free_space(path: Path, needed: int | None = None) -> None:
    """Raise StoreError when the file system holding ``path`` (or its nearest existing parent)
    has fewer than ``needed`` bytes free (default :data:`MIN_FREE_BYTES`)."""
    needed = MIN_FREE_BYTES if needed is None else needed
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError:
        return  # nothing to measure with: the write reports its own error
    if free < needed:
        raise StoreError(
            f"only {free / 2**20:.1f} MiB free on the disk holding {path}; writing the index "
            f"needs at least {needed / 2**20:.0f} MiB free (its write-ahead log grows in 32 MiB "
            "segments): free some space and run the command again (what is committed is kept)"
        )


def _quantization_config(qe: Any, quantization: str) -> Any:
    """Qdrant quantization for the dense vector: ``int8`` = scalar (4x smaller, kept in RAM),
    ``binary`` = 1 bit per dimension (32x smaller); ``none`` = float32 only. Searches over a
    quantized vector rescore the oversampled candidates with the float32 originals."""
    if quantization == "int8":
        return qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True)
    if quantization == "binary":
        return qe.BinaryQuantizationConfig(always_ram=True)
    return None


def _point_id(chunk_id: str) -> str:
    return str(uuid.UUID(hex=chunk_id[:32]))


_CHUNK_ID = re.compile(r"[0-9a-f]{32,64}")


def well_formed(chunk_ids: Sequence[str]) -> list[str]:
    """The ids of ``chunk_ids`` that have a chunk id's form (lower-case hex, 32-64 digits):
    any other string (``"nope"``, a citation's 12-digit short form) names no chunk."""
    return [c for c in chunk_ids if _CHUNK_ID.fullmatch(c)]


def chunk_to_payload(chunk: Chunk) -> dict[str, Any]:
    """JSON payload of a chunk (tuples as lists, metadata under ``meta``)."""
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "source": chunk.source,
        "title": chunk.title,
        "section_path": list(chunk.section_path),
        "text": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
        "index": chunk.index,
        "total": chunk.total,
        "token_count": chunk.token_count,
        "parent_id": chunk.parent_id,
        "content_hash": chunk.content_hash,
        "header": chunk.header,
        "footer": chunk.footer,
        "meta": dict(chunk.metadata),
        "language": chunk.language,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "page_breaks": list(chunk.page_breaks),
    }


def payload_to_chunk(payload: Mapping[str, Any]) -> Chunk:
    """Inverse of :func:`chunk_to_payload`."""
    return Chunk(
        chunk_id=str(payload["chunk_id"]),
        doc_id=str(payload["doc_id"]),
        source=str(payload["source"]),
        title=str(payload["title"]),
        section_path=tuple(payload["section_path"]),
        text=str(payload["text"]),
        start=int(payload["start"]),
        end=int(payload["end"]),
        index=int(payload["index"]),
        total=int(payload["total"]),
        token_count=int(payload["token_count"]),
        parent_id=str(payload["parent_id"]),
        content_hash=str(payload["content_hash"]),
        header=str(payload.get("header", "")),
        footer=str(payload.get("footer", "")),
        metadata=dict(payload.get("meta") or {}),
        language=str(payload.get("language") or "und"),
        page_start=_optional_int(payload.get("page_start")),
        page_end=_optional_int(payload.get("page_end")),
        page_breaks=tuple(int(b) for b in payload.get("page_breaks") or ()),
    )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


class EdgeStore(ChunkReads):
    """:class:`~ragstrata.index.base.VectorStore` on a Qdrant Edge shard at ``path``.

    Creates the shard when ``path`` holds none; ``hnsw_m``, ``ef_construct``, ``quantization``
    (``none``, ``int8``, ``binary``) and ``on_disk`` (float32 vectors memory-mapped from disk
    instead of held in RAM) apply only then, an existing shard keeps its own. ``oversampling``:
    with quantization, ``limit x oversampling`` candidates are scored on the quantized vectors
    and rescored with the originals. ``hnsw_ef``: HNSW search beam width (``None`` = the engine's
    default); 256 raised dense recall@10 at 1M chunks from 0.873 to 0.960 for +0.3 ms p95
    (docs/benchmarks.md, "Scale"). Raises MissingDependencyError without ``qdrant-edge-py``;
    StoreError when the shard cannot be opened or the quantization is unknown.
    """

    def __init__(
        self,
        path: Path,
        *,
        dim: int,
        hnsw_m: int = 16,
        ef_construct: int = 100,
        quantization: str = "none",
        on_disk: bool = False,
        oversampling: float = 2.0,
        hnsw_ef: int | None = 256,
    ) -> None:
        self._qe = qe = require("qdrant_edge", extra="local", package="qdrant-edge-py")
        self._dim = dim
        self.path = path
        if quantization not in QUANTIZATIONS:
            raise StoreError(f"unknown quantization {quantization!r}; choose {QUANTIZATIONS}")
        self._search_params = search_params(
            qe, hnsw_ef=hnsw_ef, quantization=quantization, oversampling=oversampling
        )
        config = qe.EdgeConfig(
            vectors={
                DENSE: qe.EdgeVectorParams(
                    size=dim,
                    distance=qe.Distance.Cosine,
                    on_disk=on_disk or None,
                    quantization_config=_quantization_config(qe, quantization),
                    hnsw_config=qe.HnswIndexConfig(
                        m=hnsw_m, ef_construct=ef_construct, full_scan_threshold=10_000
                    ),
                )
            },
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        try:
            if path.is_dir() and any(path.iterdir()):
                self._shard = qe.EdgeShard.load(str(path))
            else:
                ensure_free_space(path)
                path.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(path), config)
                for name in _INDEXED_FIELDS:
                    self._shard.update(
                        qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword)
                    )
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot open the Qdrant Edge shard at {path}: {exc}") from exc

    @property
    def dim(self) -> int:
        return self._dim

    # ------------------------------------------------------------------ writes
    def upsert(
        self, chunks: Sequence[Chunk], dense: FloatArray, sparse: Sequence[SparseVector]
    ) -> None:
        qe = self._qe
        if dense.shape != (len(chunks), self._dim):
            raise DimensionMismatchError(
                f"dense vectors have shape {dense.shape}, expected ({len(chunks)}, {self._dim})"
            )
        if len(sparse) != len(chunks):
            raise StoreError(f"{len(sparse)} sparse vectors for {len(chunks)} chunks")
        rows: list[list[float]] = dense.astype(np.float32, copy=False).tolist()
        for lo in range(0, len(chunks), _BATCH):
            points = []
            for i in range(lo, min(lo + _BATCH, len(chunks))):
                vector: dict[str, Any] = {DENSE: rows[i]}
                if sparse[i]:
                    vector[SPARSE] = self._sparse(sparse[i])
                points.append(
                    qe.Point(_point_id(chunks[i].chunk_id), vector, chunk_to_payload(chunks[i]))
                )
            self._apply(qe.UpdateOperation.upsert_points(points))

    def update_sparse(self, chunk_ids: Sequence[str], sparse: Sequence[SparseVector]) -> None:
        qe = self._qe
        if len(sparse) != len(chunk_ids):
            raise StoreError(f"{len(sparse)} sparse vectors for {len(chunk_ids)} chunks")
        rows = [(c, v) for c, v in zip(chunk_ids, sparse, strict=True) if v]
        for lo in range(0, len(rows), _BATCH):
            points = [
                qe.PointVectors(_point_id(c), {SPARSE: self._sparse(v)})
                for c, v in rows[lo : lo + _BATCH]
            ]
            self._apply(qe.UpdateOperation.update_vectors(points))

    def _sparse(self, vector: SparseVector) -> Any:
        """``vector`` as a Qdrant Edge ``SparseVector`` (term ids ascending)."""
        terms = sorted(vector.items())
        return self._qe.SparseVector(
            indices=[t for t, _ in terms], values=[float(w) for _, w in terms]
        )

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._apply(
                self._qe.UpdateOperation.delete_points_by_filter(
                    self._filter({"doc_id": list(doc_ids)})
                )
            )

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        for lo in range(0, len(chunk_ids), _BATCH):
            ids: list[Any] = [_point_id(c) for c in chunk_ids[lo : lo + _BATCH]]
            self._apply(self._qe.UpdateOperation.delete_points(ids))

    def _apply(self, operation: Any) -> None:
        ensure_free_space(self.path)
        try:
            self._shard.update(operation)
        except Exception as exc:
            raise StoreError(f"write to {self.path} failed: {exc}") from exc

    # ------------------------------------------------------------------ reads
    def dense_search_ids(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if vector.shape != (self._dim,):
            raise DimensionMismatchError(
                f"query vector has shape {vector.shape}, expected ({self._dim},)"
            )
        query = self._qe.Query.Nearest(vector.astype(np.float32).tolist(), using=DENSE)
        return self._query(query, limit, filters)

    def sparse_search_ids(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if not vector:
            return []
        query = self._qe.Query.Nearest(self._sparse(vector), using=SPARSE)
        return self._query(query, limit, filters)

    def _query(self, query: Any, limit: int, filters: Filters | None) -> list[tuple[str, float]]:
        request = self._qe.QueryRequest(
            limit=limit,
            query=query,
            filter=self._filter(filters),
            with_payload=False,
            params=self._search_params,
        )
        try:
            points = self._shard.query(request)
        except Exception as exc:
            raise StoreError(f"query on {self.path} failed: {exc}") from exc
        # point ids are the chunk ids read as UUIDs: no payload needed to know them
        return [(uuid.UUID(str(p.id)).hex, float(p.score)) for p in points]

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        known = well_formed(chunk_ids)
        if not known:
            return []
        records = self._shard.retrieve(
            [_point_id(c) for c in known], with_payload=True, with_vector=False
        )
        by_id = {}
        for record in records:
            chunk = payload_to_chunk(record.payload or {})
            by_id[chunk.chunk_id] = chunk
        return [by_id[c] for c in chunk_ids if c in by_id]

    def dense_vectors(self, chunk_ids: Sequence[str]) -> dict[str, FloatArray]:
        out: dict[str, FloatArray] = {}
        for lo in range(0, len(chunk_ids), _BATCH):
            ids: list[Any] = [_point_id(c) for c in chunk_ids[lo : lo + _BATCH]]
            try:
                records = self._shard.retrieve(ids, with_payload=False, with_vector=True)
            except Exception as exc:
                raise StoreError(f"reading vectors from {self.path} failed: {exc}") from exc
            for record in records:
                vectors = record.vector
                vector = vectors.get(DENSE) if isinstance(vectors, dict) else None
                if vector is not None:
                    out[uuid.UUID(str(record.id)).hex] = np.asarray(vector, dtype=np.float32)
        return out

    def chunk_ids(self, filters: Filters | None = None) -> list[str]:
        qe = self._qe
        out: list[str] = []
        offset: Any = None
        while True:
            records, offset = self._shard.scroll(
                qe.ScrollRequest(
                    offset=offset,
                    limit=1024,
                    filter=self._filter(filters),
                    with_payload=["chunk_id"],
                )
            )
            out.extend(str((r.payload or {})["chunk_id"]) for r in records)
            if offset is None:
                return out

    def count(self, filters: Filters | None = None) -> int:
        return int(
            self._shard.count(self._qe.CountRequest(exact=True, filter=self._filter(filters)))
        )

    def flush(self) -> None:
        try:
            self._shard.flush()
        except Exception as exc:
            raise StoreError(f"flush of {self.path} failed: {exc}") from exc

    def optimize(self) -> None:
        """Build HNSW/segment indexes now instead of at the next threshold (after bulk loads)."""
        self._shard.optimize()

    def close(self) -> None:
        """Flush, then close the shard; the shard is closed even when the flush fails (its
        StoreError is raised after)."""
        try:
            self.flush()
        finally:
            self._shard.close()

    def _filter(self, filters: Filters | None) -> Any:
        if not filters:
            return None
        qe = self._qe
        conditions = []
        for key, value in filters.items():
            if isinstance(value, str | int | bool):
                match: Any = qe.MatchValue(value)
            else:
                match = qe.MatchAny(list(value))
            conditions.append(qe.FieldCondition(key=key, match=match))
        return qe.Filter(must=conditions)
