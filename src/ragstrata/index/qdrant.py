"""Qdrant server or cluster store through ``qdrant-client`` (extra ``[qdrant]``).

The collection has the schema of the embedded engine (:mod:`ragstrata.index.edge`): named dense
vector ``dense`` (cosine, HNSW), named sparse vector ``bm25`` with the IDF modifier, payload =
:func:`~ragstrata.index.edge.chunk_to_payload`, keyword payload indexes on ``doc_id``,
``source`` and ``language``, point id = the chunk id read as a UUID. Upserts are idempotent by
chunk id; deletes go by ``doc_id`` filter; every write waits for the server to apply it.

Locations (``store.url``):

- ``http://host:6333`` / ``https://…`` — a Qdrant server or cluster (REST, or gRPC on port
  6334 with ``prefer_grpc``);
- ``local:PATH`` (``local:///abs/path`` also works) — qdrant-client's *local mode* on ``PATH``:
  the same client API running in-process in pure Python, one process at a time. A test stand-in,
  not an engine (exact search, all points in RAM, payload indexes ignored);
- ``:memory:`` — local mode in memory, lost on :meth:`QdrantStore.close`.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ragstrata.config.index import STORE_LOCAL_PREFIX as LOCAL_PREFIX
from ragstrata.config.index import STORE_MEMORY as MEMORY
from ragstrata.errors import ConfigError, DimensionMismatchError, StoreError
from ragstrata.index.base import QUANTIZATIONS, ChunkReads, Filters, SparseVector, search_params
from ragstrata.index.edge import (
    _INDEXED_FIELDS,
    DENSE,
    SPARSE,
    _point_id,
    chunk_to_payload,
    payload_to_chunk,
    well_formed,
)
from ragstrata.optional import require
from ragstrata.types import Chunk, FloatArray

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

    from ragstrata.config import StoreConfig

_BATCH = 256
"""Points per upsert request (a REST body of ~256 chunks stays well under the 32 MB limit)."""
_SCROLL_PAGE = 1024
WRITE_ORDERINGS = ("weak", "medium", "strong")
_T = TypeVar("_T")


def _local_path(location: str) -> str:
    """``local:PATH`` or ``local://PATH`` → ``PATH`` (may be empty)."""
    rest = location[len(LOCAL_PREFIX) :]
    return rest[2:] if rest.startswith("//") else rest


def _connect(
    location: str, *, api_key: str | None, timeout: int, prefer_grpc: bool
) -> QdrantClient:
    """A qdrant-client for ``location`` (``http(s)://``, ``local:PATH``, :data:`MEMORY`);
    ConfigError for another form, StoreError when it cannot be opened."""
    require("qdrant_client", extra="qdrant", package="qdrant-client")
    from qdrant_client import QdrantClient

    if location == MEMORY:
        client_kwargs: dict[str, Any] = {"location": MEMORY}
    elif location.startswith(LOCAL_PREFIX):
        path = _local_path(location)
        if not path:
            raise ConfigError(
                f"store.url={location!r} names no directory; write local:PATH "
                "(or leave the path out in the config to use <index>/qdrant)"
            )
        Path(path).mkdir(parents=True, exist_ok=True)
        # HybridRetriever runs the BM25 query on a worker thread
        client_kwargs = {"path": path, "force_disable_check_same_thread": True}
    elif location.startswith(("http://", "https://")):
        client_kwargs = {
            "url": location,
            "api_key": api_key,
            "timeout": timeout,
            "prefer_grpc": prefer_grpc,
            "check_compatibility": False,
        }
    else:
        raise ConfigError(
            f"store.url={location!r} is not a Qdrant location; use http(s)://HOST:6333, "
            f"local:PATH or {MEMORY}"
        )
    try:
        return QdrantClient(**client_kwargs)
    except Exception as exc:  # portalocker: the local path is held by another process
        raise StoreError(f"cannot open Qdrant at {location}: {exc}") from exc


def _config_location(config: StoreConfig, index_dir: Path) -> str:
    """``config.url``, with ``local:`` and no path meaning ``<index_dir>/qdrant``."""
    if config.url.startswith(LOCAL_PREFIX) and not _local_path(config.url):
        return f"{LOCAL_PREFIX}{index_dir / 'qdrant'}"
    return config.url


def drop_collection(config: StoreConfig, *, index_dir: Path) -> bool:
    """Delete the Qdrant collection ``config.collection`` at ``config.url`` (``index_dir``: the
    index it belongs to, for a ``local:`` url without a path) with every point it holds; returns
    whether it existed. A service collection's delete (review 45: only its directory went, and
    a collection re-created under the same name searched the deleted documents again). Raises
    StoreError when Qdrant cannot be reached or refuses."""

    def drop(client: QdrantClient) -> bool:
        if not client.collection_exists(config.collection):
            return False
        client.delete_collection(config.collection)
        return True

    return _with_client(config, index_dir, "deleting", drop)


def delete_points(config: StoreConfig, chunk_ids: Sequence[str], *, index_dir: Path) -> int:
    """Delete the points of ``chunk_ids`` from the Qdrant collection ``config.collection`` (a
    collection another index may share: nothing else is touched); returns how many ids were
    sent (0 when the collection does not exist). Raises StoreError as :func:`drop_collection`."""
    from qdrant_client import models

    def delete(client: QdrantClient) -> int:
        if not chunk_ids or not client.collection_exists(config.collection):
            return 0
        for lo in range(0, len(chunk_ids), _BATCH):
            points: list[int | str | uuid.UUID] = [
                _point_id(c) for c in chunk_ids[lo : lo + _BATCH]
            ]
            client.delete(config.collection, points_selector=models.PointIdsList(points=points))
        return len(chunk_ids)

    return _with_client(config, index_dir, "deleting points of", delete)


def _with_client(
    config: StoreConfig, index_dir: Path, what: str, act: Callable[[QdrantClient], _T]
) -> _T:
    """``act(client)`` on a client of ``config``'s Qdrant, closed after; StoreError naming
    ``what`` was done to the collection when it fails."""
    location = _config_location(config, index_dir)
    client = _connect(
        location,
        api_key=config.resolve_api_key(),
        timeout=_whole_seconds(config.timeout_s),
        prefer_grpc=config.prefer_grpc,
    )
    try:
        return act(client)
    except Exception as exc:  # qdrant-client raises its transport's errors as they come
        raise StoreError(
            f"{what} the Qdrant collection {config.collection!r} at {location} failed: {exc}"
        ) from exc
    finally:
        client.close()


def _whole_seconds(timeout_s: float) -> int:
    """``timeout_s`` as the whole seconds qdrant-client takes (at least 1)."""
    return max(1, math.ceil(timeout_s))


class QdrantStore(ChunkReads):
    """:class:`~ragstrata.index.base.VectorStore` on a Qdrant collection through qdrant-client.

    ``location``: see the module docstring. ``dim``: the embedding dim. The collection is created
    with the schema above when missing (``shard_number``, ``replication_factor`` and
    ``write_consistency_factor`` apply only then; ``None`` = the server's default); an existing
    one is checked: a dense dim other than ``dim`` raises DimensionMismatchError, a missing
    ``dense``/``bm25`` vector or a ``bm25`` without the IDF modifier raises StoreError.
    ``write_ordering`` (``weak``/``medium``/``strong``) orders writes across replicas; ragstrata
    deletes a document's chunks and then upserts its new ones, which may reuse chunk ids, so the
    default ``strong`` keeps replicas from applying them out of order.

    Raises ConfigError for a bad location or option, MissingDependencyError without
    ``qdrant-client``, StoreError when the server cannot be reached or the local path is in use.
    """

    def __init__(
        self,
        location: str,
        *,
        dim: int,
        collection: str = "ragstrata",
        api_key: str | None = None,
        timeout_s: float = 30.0,
        prefer_grpc: bool = False,
        shard_number: int | None = None,
        replication_factor: int | None = None,
        write_consistency_factor: int | None = None,
        write_ordering: str = "strong",
        hnsw_m: int = 16,
        ef_construct: int = 100,
        quantization: str = "none",
        on_disk: bool = False,
        oversampling: float = 2.0,
        hnsw_ef: int | None = 256,
    ) -> None:
        if dim < 1:
            raise ConfigError(f"dim={dim} must be >= 1")
        if write_ordering not in WRITE_ORDERINGS:
            raise ConfigError(
                f"store.write_ordering={write_ordering!r}; "
                f"choose one of {', '.join(WRITE_ORDERINGS)}"
            )
        require("qdrant_client", extra="qdrant", package="qdrant-client")
        from qdrant_client import models  # typed names, once checked

        self._models = models
        self._dim = dim
        if quantization not in QUANTIZATIONS:
            raise ConfigError(f"store.quantization={quantization!r}; choose {QUANTIZATIONS}")
        self._quantization = quantization
        self._on_disk = on_disk
        self.is_local = location == MEMORY or location.startswith(LOCAL_PREFIX)
        # local mode searches exactly (brute force) and warned on every query that it ignores
        # search parameters (review 45: a UserWarning on the CLI's stderr per search)
        self._search_params = (
            None
            if self.is_local
            else search_params(
                models, hnsw_ef=hnsw_ef, quantization=quantization, oversampling=oversampling
            )
        )
        self.collection = collection
        self.location = location
        self._ordering = models.WriteOrdering(write_ordering)
        self._timeout = _whole_seconds(timeout_s)
        self._client: QdrantClient = _connect(
            location, api_key=api_key, timeout=self._timeout, prefer_grpc=prefer_grpc
        )
        try:
            self._ensure_collection(
                hnsw_m=hnsw_m,
                ef_construct=ef_construct,
                shard_number=shard_number,
                replication_factor=replication_factor,
                write_consistency_factor=write_consistency_factor,
            )
        except BaseException:
            self._client.close()
            raise

    @classmethod
    def from_config(
        cls, config: StoreConfig, *, dim: int, index_dir: Path, expected_chunks: int = 0
    ) -> QdrantStore:
        """The store ``config`` describes (``local:`` with no path = ``<index_dir>/qdrant``).

        ``expected_chunks``: how many chunks the index directory's manifest lists; when it is
        positive and the collection is empty, the manifest belongs to another store (``store.url``
        changed, or the collection was dropped) and StoreError says so, instead of every document
        passing as "unchanged" while nothing is searchable.
        """
        location = _config_location(config, index_dir)
        store = cls(
            location,
            dim=dim,
            collection=config.collection,
            api_key=config.resolve_api_key(),
            timeout_s=config.timeout_s,
            prefer_grpc=config.prefer_grpc,
            shard_number=config.shard_number,
            replication_factor=config.replication_factor,
            write_consistency_factor=config.write_consistency_factor,
            write_ordering=config.write_ordering,
            quantization=config.quantization,
            on_disk=config.on_disk,
            oversampling=config.oversampling,
            hnsw_ef=config.hnsw_ef,
        )
        if expected_chunks > 0 and store.count() == 0:
            store.close()
            if location == MEMORY:  # review 45: "built for another store.url" misled
                raise StoreError(
                    f"the index at {index_dir} lists {expected_chunks} chunks but store.url "
                    f"{MEMORY!r} holds nothing: vectors written to {MEMORY!r} are gone once the "
                    "store that wrote them closes; use local:PATH or a Qdrant server and a new "
                    "--index directory"
                )
            raise StoreError(
                f"the index at {index_dir} lists {expected_chunks} chunks but the Qdrant "
                f"collection {config.collection!r} at {location} is empty: the index directory "
                "was built for another store.url; use a new --index directory for this store "
                "(or set store.url back)"
            )
        return store

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"QdrantStore({self.location!r}, collection={self.collection!r}, dim={self._dim})"

    # ------------------------------------------------------------------ schema
    def _quantization_config(self) -> Any:
        """The collection's quantization (same meaning as the embedded store's, see
        :func:`ragstrata.index.edge._quantization_config`)."""
        m = self._models
        if self._quantization == "int8":
            return m.ScalarQuantization(
                scalar=m.ScalarQuantizationConfig(
                    type=m.ScalarType.INT8, quantile=0.99, always_ram=True
                )
            )
        if self._quantization == "binary":
            return m.BinaryQuantization(binary=m.BinaryQuantizationConfig(always_ram=True))
        return None

    def _ensure_collection(
        self,
        *,
        hnsw_m: int,
        ef_construct: int,
        shard_number: int | None,
        replication_factor: int | None,
        write_consistency_factor: int | None,
    ) -> None:
        m = self._models
        try:
            exists = self._client.collection_exists(self.collection)
            if not exists:
                try:
                    self._client.create_collection(
                        self.collection,
                        vectors_config={
                            DENSE: m.VectorParams(
                                size=self._dim,
                                distance=m.Distance.COSINE,
                                hnsw_config=m.HnswConfigDiff(
                                    m=hnsw_m, ef_construct=ef_construct, full_scan_threshold=10_000
                                ),
                                on_disk=self._on_disk or None,
                            )
                        },
                        sparse_vectors_config={
                            SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)
                        },
                        shard_number=shard_number,
                        replication_factor=replication_factor,
                        write_consistency_factor=write_consistency_factor,
                        quantization_config=self._quantization_config(),
                    )
                except Exception:
                    # another worker may have created it in the meantime: then check its schema
                    if not self._client.collection_exists(self.collection):
                        raise
                else:
                    if not self.is_local:  # local mode ignores keyword indexes (and warns)
                        for name in _INDEXED_FIELDS:
                            self._client.create_payload_index(
                                self.collection,
                                name,
                                field_schema=m.PayloadSchemaType.KEYWORD,
                                wait=True,
                            )
                    return
            params = self._client.get_collection(self.collection).config.params
        except Exception as exc:
            raise StoreError(
                f"cannot open the Qdrant collection {self.collection!r} at {self.location}: {exc}"
            ) from exc
        self._check_schema(params)

    def _check_schema(self, params: models.CollectionParams) -> None:
        m = self._models
        where = f"the Qdrant collection {self.collection!r} at {self.location}"
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        dense = vectors.get(DENSE)
        if dense is None or dense.distance != m.Distance.COSINE:
            raise StoreError(
                f"{where} has no cosine vector named {DENSE!r}: it was not made by ragstrata; "
                "set store.collection to another name"
            )
        if dense.size != self._dim:
            raise DimensionMismatchError(
                f"{where} holds {dense.size}-d vectors but the embedder gives {self._dim}-d; "
                "set store.collection to another name, or embedder.name back"
            )
        sparse = (params.sparse_vectors or {}).get(SPARSE)
        if sparse is None or sparse.modifier != m.Modifier.IDF:
            raise StoreError(
                f"{where} has no sparse vector {SPARSE!r} with the IDF modifier: it was not made "
                "by ragstrata; set store.collection to another name"
            )

    # ------------------------------------------------------------------ writes
    def upsert(
        self, chunks: Sequence[Chunk], dense: FloatArray, sparse: Sequence[SparseVector]
    ) -> None:
        """Insert or replace ``chunks`` (dense float32 (n, dim)), in requests of 256 points.

        Each request is idempotent; a failure part-way leaves earlier requests applied (the
        index journal rolls such a commit back, see :mod:`ragstrata.index.catalog`).
        """
        m = self._models
        if dense.shape != (len(chunks), self._dim):
            raise DimensionMismatchError(
                f"dense vectors have shape {dense.shape}, expected ({len(chunks)}, {self._dim})"
            )
        if len(sparse) != len(chunks):
            raise StoreError(f"{len(sparse)} sparse vectors for {len(chunks)} chunks")
        for lo in range(0, len(chunks), _BATCH):
            points = []
            for i in range(lo, min(lo + _BATCH, len(chunks))):
                vector: dict[str, Any] = {DENSE: dense[i].astype(np.float32).tolist()}
                if sparse[i]:
                    vector[SPARSE] = self._sparse(sparse[i])
                points.append(
                    m.PointStruct(
                        id=_point_id(chunks[i].chunk_id),
                        vector=vector,
                        payload=chunk_to_payload(chunks[i]),
                    )
                )
            self._write("upsert", self._client.upsert, points=points)

    def update_sparse(self, chunk_ids: Sequence[str], sparse: Sequence[SparseVector]) -> None:
        """Replace the sparse vectors of stored chunks, in requests of 256 points."""
        m = self._models
        if len(sparse) != len(chunk_ids):
            raise StoreError(f"{len(sparse)} sparse vectors for {len(chunk_ids)} chunks")
        rows = [(c, v) for c, v in zip(chunk_ids, sparse, strict=True) if v]
        for lo in range(0, len(rows), _BATCH):
            points = [
                m.PointVectors(id=_point_id(c), vector={SPARSE: self._sparse(v)})
                for c, v in rows[lo : lo + _BATCH]
            ]
            self._write("update_vectors", self._client.update_vectors, points=points)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            selector = self._models.FilterSelector(filter=self._must({"doc_id": list(doc_ids)}))
            self._write("delete", self._client.delete, points_selector=selector)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        for lo in range(0, len(chunk_ids), _BATCH):
            selector = self._models.PointIdsList(
                points=[_point_id(c) for c in chunk_ids[lo : lo + _BATCH]]
            )
            self._write("delete", self._client.delete, points_selector=selector)

    def _write(self, what: str, method: Any, **kwargs: Any) -> None:
        try:
            method(self.collection, wait=True, ordering=self._ordering, **kwargs)
        except Exception as exc:
            raise StoreError(
                f"{what} on the Qdrant collection {self.collection!r} at {self.location} "
                f"failed: {exc}"
            ) from exc

    # ------------------------------------------------------------------ reads
    def dense_search_ids(
        self, vector: FloatArray, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        return self._query(self._dense(vector), DENSE, limit, filters)

    def sparse_search_ids(
        self, vector: SparseVector, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if not vector:
            return []
        return self._query(self._sparse(vector), SPARSE, limit, filters)

    def hybrid_search_ids(
        self,
        dense: FloatArray,
        sparse: SparseVector,
        *,
        limit: int,
        candidates: int,
        filters: Filters | None = None,
        rrf_k: int = 60,
        weights: tuple[float, float] | None = None,
    ) -> list[tuple[str, float]]:
        """Server-side hybrid: one Query API request, a dense and a BM25 prefetch of
        ``candidates`` hits each, fused by Qdrant's RRF; ``(chunk_id, rrf_score)`` best first.

        Qdrant scores rank ``r`` (1-based) of a list with weight ``w`` as ``1 / (r / w + k' - 1)``;
        the store passes ``k' = rrf_k + 1``, so unweighted (``weights=None``) scores equal
        :func:`ragstrata.retrieve.fusion.rrf` with ``k=rrf_k`` exactly. ``weights``
        (dense, bm25) are *not* equivalent to ragstrata's weighted RRF (``w / (rrf_k + r)``):
        Qdrant divides the rank by the weight, which gives ``w / (r + w * rrf_k)``, so orders
        can differ. Ties are broken by chunk id here and arbitrarily by Qdrant. Needs a server
        that accepts parameterized RRF (``{"rrf": {"k": …}}``); an older one fails with
        StoreError.
        """
        m = self._models
        if rrf_k < 1:
            raise ConfigError(f"rrf k={rrf_k} must be >= 1")
        if weights is not None and min(weights) < 0:
            raise ConfigError(f"rrf weights {weights} must be >= 0")
        flt = self._filter(filters)
        prefetch = [
            m.Prefetch(
                query=self._dense(dense),
                using=DENSE,
                limit=candidates,
                filter=flt,
                params=self._search_params,
            )
        ]
        weight_list = list(weights) if weights is not None else None
        if sparse:
            prefetch.append(
                m.Prefetch(query=self._sparse(sparse), using=SPARSE, limit=candidates, filter=flt)
            )
        elif weight_list is not None:
            weight_list = weight_list[:1]
        query = m.RrfQuery(rrf=m.Rrf(k=rrf_k + 1, weights=weight_list))
        try:
            points = self._client.query_points(
                self.collection,
                prefetch=prefetch,
                query=query,
                query_filter=flt,
                limit=limit,
                with_payload=False,
                search_params=self._search_params,
                timeout=self._timeout,
            ).points
        except Exception as exc:
            raise StoreError(f"hybrid query on {self.collection!r} failed: {exc}") from exc
        hits = [(uuid.UUID(str(p.id)).hex, float(p.score)) for p in points]
        return sorted(hits, key=lambda h: (-h[1], h[0]))

    def _dense(self, vector: FloatArray) -> list[float]:
        if vector.shape != (self._dim,):
            raise DimensionMismatchError(
                f"query vector has shape {vector.shape}, expected ({self._dim},)"
            )
        values: list[float] = vector.astype(np.float32).tolist()
        return values

    def _sparse(self, vector: SparseVector) -> models.SparseVector:
        terms = sorted(vector.items())
        return self._models.SparseVector(
            indices=[t for t, _ in terms], values=[float(w) for _, w in terms]
        )

    def _query(
        self, query: Any, using: str, limit: int, filters: Filters | None
    ) -> list[tuple[str, float]]:
        try:
            points = self._client.query_points(
                self.collection,
                query=query,
                using=using,
                query_filter=self._filter(filters),
                limit=limit,
                with_payload=False,
                search_params=self._search_params,
                timeout=self._timeout,
            ).points
        except Exception as exc:
            raise StoreError(
                f"query on the Qdrant collection {self.collection!r} failed: {exc}"
            ) from exc
        # point ids are the chunk ids read as UUIDs: no payload needed to know them
        return [(uuid.UUID(str(p.id)).hex, float(p.score)) for p in points]

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        known = well_formed(chunk_ids)
        if not known:
            return []
        try:
            records = self._client.retrieve(
                self.collection,
                ids=[_point_id(c) for c in known],
                with_payload=True,
                with_vectors=False,
            )
        except Exception as exc:
            raise StoreError(f"retrieve from {self.collection!r} failed: {exc}") from exc
        by_id = {}
        for record in records:
            chunk = payload_to_chunk(record.payload or {})
            by_id[chunk.chunk_id] = chunk
        return [by_id[c] for c in chunk_ids if c in by_id]

    def dense_vectors(self, chunk_ids: Sequence[str]) -> dict[str, FloatArray]:
        """Stored dense vectors by chunk id, float32 (dim,) each; unknown ids are absent. The
        server keeps cosine vectors L2-normalized, so these are unit vectors."""
        out: dict[str, FloatArray] = {}
        for lo in range(0, len(chunk_ids), _BATCH):
            try:
                records = self._client.retrieve(
                    self.collection,
                    ids=[_point_id(c) for c in chunk_ids[lo : lo + _BATCH]],
                    with_payload=False,
                    with_vectors=[DENSE],
                )
            except Exception as exc:
                raise StoreError(f"reading vectors from {self.collection!r} failed: {exc}") from exc
            for record in records:
                vector = record.vector.get(DENSE) if isinstance(record.vector, dict) else None
                if vector is not None:
                    out[uuid.UUID(str(record.id)).hex] = np.asarray(vector, dtype=np.float32)
        return out

    def chunk_ids(self, filters: Filters | None = None) -> list[str]:
        out: list[str] = []
        offset: Any = None
        while True:
            try:
                records, offset = self._client.scroll(
                    self.collection,
                    scroll_filter=self._filter(filters),
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=["chunk_id"],
                    with_vectors=False,
                )
            except Exception as exc:
                raise StoreError(f"scroll over {self.collection!r} failed: {exc}") from exc
            out.extend(str((r.payload or {})["chunk_id"]) for r in records)
            if offset is None:
                return out

    def count(self, filters: Filters | None = None) -> int:
        try:
            result = self._client.count(
                self.collection, count_filter=self._filter(filters), exact=True
            )
        except Exception as exc:
            raise StoreError(f"count on {self.collection!r} failed: {exc}") from exc
        return int(result.count)

    def flush(self) -> None:
        """No-op: every write waited (``wait=True``) until the server applied it to its WAL."""

    def optimize(self) -> None:
        """No-op: a Qdrant server builds its indexes in the background (local mode has none)."""

    def close(self) -> None:
        """Close the connection (local mode: write and unlock its directory); idempotent."""
        self._client.close()

    def _filter(self, filters: Filters | None) -> models.Filter | None:
        return self._must(filters) if filters else None

    def _must(self, filters: Filters) -> models.Filter:
        """All ``filters`` as one Qdrant filter (a sequence value means "any of")."""
        m = self._models
        conditions: list[Any] = []
        for key, value in filters.items():
            match: Any
            if isinstance(value, str | int | bool):
                match = m.MatchValue(value=value)
            else:
                match = m.MatchAny(any=list(value))
            conditions.append(m.FieldCondition(key=key, match=match))
        flt: models.Filter = m.Filter(must=conditions)
        return flt
