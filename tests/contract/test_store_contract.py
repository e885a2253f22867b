"""The :class:`~ragstrata.testing.store.StoreContract` suite on every ``VectorStore`` backend.

Backends: the embedded Qdrant Edge shard (three quantizations), always; :class:`QdrantStore` on
qdrant-client's local mode, always (the same client code that talks to a server);
:class:`QdrantStore` on a real Qdrant server when ``RAGSTRATA_QDRANT_URL`` names one
(``QDRANT_API_KEY`` is sent if set), each test in a fresh collection that is dropped afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragstrata.config import StoreConfig
from ragstrata.errors import DimensionMismatchError, StoreError
from ragstrata.index.base import VectorStore
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.fusion import rrf
from ragstrata.testing.store import DIM, Filled, StoreContract, sparse, unit_vectors

SERVER_URL = os.environ.get("RAGSTRATA_QDRANT_URL", "")


class TestEdgeStore(StoreContract):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Callable[[], VectorStore]:
        return lambda: EdgeStore(tmp_path / "shard", dim=DIM)


class TestEdgeStoreInt8OnDisk(StoreContract):
    """Scalar int8 quantization in RAM, float32 originals memory-mapped; searches rescore."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Callable[[], VectorStore]:
        return lambda: EdgeStore(tmp_path / "shard", dim=DIM, quantization="int8", on_disk=True)


class TestEdgeStoreBinary(StoreContract):
    """Binary quantization (1 bit per dimension) with rescoring by the float32 vectors."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Callable[[], VectorStore]:
        return lambda: EdgeStore(tmp_path / "shard", dim=DIM, quantization="binary")


# ---------------------------------------------------------------------- QdrantStore backends
class QdrantStoreContract(StoreContract):
    """The shared contract plus what only the Qdrant backend offers: server-side hybrid (Query
    API prefetch + RRF) and the schema check of an existing collection."""

    @pytest.fixture
    def qdrant_store(self, store: VectorStore) -> Any:
        from ragstrata.index.qdrant import QdrantStore

        assert isinstance(store, QdrantStore)
        return store

    def test_collection_schema_matches_the_embedded_engine(self, qdrant_store: Any) -> None:
        from qdrant_client import models

        from ragstrata.index.edge import DENSE, SPARSE

        params = qdrant_store._client.get_collection(qdrant_store.collection).config.params
        assert params.vectors[DENSE].size == DIM
        assert params.vectors[DENSE].distance == models.Distance.COSINE
        assert params.sparse_vectors[SPARSE].modifier == models.Modifier.IDF

    def test_server_hybrid_equals_unweighted_python_rrf(
        self, filled: Filled, qdrant_store: Any
    ) -> None:
        query, terms = unit_vectors(1, seed=5)[0], sparse("alpha", "beta", "notes")
        fused = rrf(
            {
                "dense": qdrant_store.dense_search_ids(query, limit=6),
                "bm25": qdrant_store.sparse_search_ids(terms, limit=6),
            },
            k=60,
        )
        got = qdrant_store.hybrid_search_ids(query, terms, limit=6, candidates=6, rrf_k=60)
        assert [cid for cid, _ in got] == [f.item_id for f in fused]
        assert [s for _, s in got] == pytest.approx([f.score for f in fused], rel=1e-12)

    def test_server_hybrid_weights_scale_the_rank(self, filled: Filled, qdrant_store: Any) -> None:
        """Qdrant's weighted RRF is ``1 / (rank / w + k)`` (k = rrf_k here), not ragstrata's
        ``w / (rank + k)``: documented in docs/deploy.md, pinned here."""
        _, _, dense = filled
        query, terms = dense[1], sparse("troubleshooting")
        dense_ids = [c for c, _ in qdrant_store.dense_search_ids(query, limit=6)]
        bm25_ids = [c for c, _ in qdrant_store.sparse_search_ids(terms, limit=6)]
        w_dense, w_bm25, k = 0.6, 0.4, 60
        expected: dict[str, float] = {}
        for ids, w in ((dense_ids, w_dense), (bm25_ids, w_bm25)):
            for rank, cid in enumerate(ids, start=1):
                expected[cid] = expected.get(cid, 0.0) + 1.0 / (rank / w + k)
        got = qdrant_store.hybrid_search_ids(
            query, terms, limit=6, candidates=6, rrf_k=k, weights=(w_dense, w_bm25)
        )
        assert dict(got) == pytest.approx({c: expected[c] for c, _ in got}, rel=1e-9)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)

    def test_server_hybrid_filters_and_empty_sparse(
        self, filled: Filled, qdrant_store: Any
    ) -> None:
        store, chunks, dense = filled
        got = qdrant_store.hybrid_search_ids(
            dense[0], sparse("alpha"), limit=10, candidates=10, filters={"doc_id": "doc-b"}
        )
        assert {cid for cid, _ in got} == {chunks[3].chunk_id, chunks[4].chunk_id}
        dense_only = qdrant_store.hybrid_search_ids(dense[0], {}, limit=3, candidates=10)
        assert [cid for cid, _ in dense_only] == [
            cid for cid, _ in store.dense_search_ids(dense[0], limit=3)
        ]
        with pytest.raises(DimensionMismatchError):
            qdrant_store.hybrid_search_ids(
                np.ones(DIM + 1, dtype=np.float32), {}, limit=3, candidates=3
            )

    def test_reopen_with_another_dim_is_refused(
        self, make_store: Callable[[], VectorStore], qdrant_store: Any
    ) -> None:
        from ragstrata.index.qdrant import QdrantStore

        if not self.persistent:
            pytest.skip("this backend keeps nothing after close()")
        location, collection = qdrant_store.location, qdrant_store.collection
        qdrant_store.close()
        with pytest.raises(DimensionMismatchError, match="8-d"):
            QdrantStore(
                location,
                dim=DIM * 2,
                collection=collection,
                api_key=StoreConfig().resolve_api_key(),  # a server's key, if one is set
            )
        make_store().close()  # the refused open left the location usable


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when the machine has one: qdrant-client's local mode commits SQLite
    once per point, ~23 ms each on a disk (1,500 points: 35 s) and ~0.5 ms on tmpfs."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        path = Path(tempfile.mkdtemp(prefix="ragstrata-qdrant-", dir=shm))
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield tmp_path


class TestQdrantLocalStore(QdrantStoreContract):
    """QdrantStore on qdrant-client's local mode (``local:PATH``)."""

    @pytest.fixture
    def make_store(self, fast_dir: Path) -> Callable[[], VectorStore]:
        pytest.importorskip("qdrant_client")
        from ragstrata.index.qdrant import QdrantStore

        return lambda: QdrantStore(f"local:{fast_dir / 'qdrant'}", dim=DIM)

    def test_second_open_of_a_local_path_is_refused(self, store: VectorStore) -> None:
        from ragstrata.index.qdrant import QdrantStore

        assert isinstance(store, QdrantStore)
        with pytest.raises(StoreError, match="already accessed"):
            QdrantStore(store.location, dim=DIM)


class TestQdrantMemoryStore(QdrantStoreContract):
    """QdrantStore on qdrant-client's in-memory local mode (``:memory:``): nothing persists."""

    persistent = False

    @pytest.fixture
    def make_store(self) -> Callable[[], VectorStore]:
        pytest.importorskip("qdrant_client")
        from ragstrata.index.qdrant import QdrantStore

        return lambda: QdrantStore(":memory:", dim=DIM)


@pytest.mark.skipif(not SERVER_URL, reason="RAGSTRATA_QDRANT_URL names no Qdrant server")
class TestQdrantServerStore(QdrantStoreContract):
    """QdrantStore on the Qdrant server at ``$RAGSTRATA_QDRANT_URL``, one collection per test."""

    @pytest.fixture
    def make_store(self) -> Iterator[Callable[[], VectorStore]]:
        pytest.importorskip("qdrant_client")
        from qdrant_client import QdrantClient

        from ragstrata.index.qdrant import QdrantStore

        config = StoreConfig(url=SERVER_URL, collection=f"ragstrata-test-{uuid.uuid4().hex[:12]}")
        yield lambda: QdrantStore.from_config(config, dim=DIM, index_dir=Path("unused"))
        admin = QdrantClient(url=SERVER_URL, api_key=config.resolve_api_key())
        admin.delete_collection(config.collection)
        admin.close()
