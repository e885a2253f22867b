"""How one engine holds an index directory: the index lock and its store, or a read snapshot.

An embedded shard has one owner (see :mod:`ragstrata.index.snapshots`), so an engine opens its
index once, through one :class:`IndexReader`, and shares that handle between its searches and,
when it writes, its writer. A reader of an idle index takes the index lock and opens the index
itself, rolling back an interrupted commit first; while another process writes an embedded
index, it reads the last snapshot that writer published instead: the committed state of a
recent commit, never half of one. A Qdrant server needs no snapshot: readers wait for the
writer's lock.
"""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path
from typing import Protocol

from ragstrata import stages
from ragstrata.config import StoreConfig
from ragstrata.errors import EmbedderMismatchError, IndexLockedError, StoreError
from ragstrata.index import catalog, snapshots
from ragstrata.index.base import VectorStore
from ragstrata.index.catalog import Manifest
from ragstrata.index.writer import recover

logger = logging.getLogger(__name__)

WAL_RETRY_S = 5.0
SNAPSHOT_RETRY_S = 0.5
"""Seconds between two tries when a published snapshot does not open (the writer publishes a
new one every few seconds, and none once it is done: then the reader takes the lock)."""
"""How long opening a snapshot's shard retries ``Can't init WAL: WouldBlock`` (the handle of a
reader that just released the snapshot goes when its object is collected)."""


class FitCheck(Protocol):
    """Raises EmbedderMismatchError (and kin) when an index built as ``manifest`` says does not
    fit the engine (see :func:`~ragstrata.index.catalog.check_compatible`)."""

    def __call__(self, manifest: Manifest, *, writing: bool = False) -> None: ...


class IndexReader:
    """The engine's handle on the index at ``index_dir``, whose store ``store`` describes.
    Cheap to construct: nothing is opened before :meth:`read_store` or :meth:`open_store`;
    :meth:`close` releases everything (the reader can then open again).

    ``fits`` checks each manifest before its store is opened. ``wait_s``: how long
    :meth:`read_store` waits for the index (a writer's first snapshot, or its lock) before
    IndexLockedError.
    """

    def __init__(
        self, index_dir: Path, store: StoreConfig, *, fits: FitCheck, wait_s: float
    ) -> None:
        self.index_dir = index_dir
        self.wait_s = wait_s
        self._config = store
        self._fits = fits
        self._lock: catalog.IndexLock | None = None
        self._store: VectorStore | None = None  # the index's own, or the snapshot's
        self._snapshot: snapshots.Snapshot | None = None  # read from while a writer runs
        self._reading: VectorStore | None = None  # self._store once opened for reading
        self._n_chunks: int | None = None

    @property
    def n_chunks(self) -> int | None:
        """The index's chunk count as its manifest said when :meth:`read_store` first opened
        it (read once; ``None`` before)."""
        return self._n_chunks

    @property
    def snapshot(self) -> snapshots.Snapshot | None:
        """The published snapshot read from (while another process writes), else ``None``."""
        return self._snapshot

    def read_store(self) -> VectorStore:
        """The store opened for reading, once: the manifest checked, the index lock taken and
        an interrupted commit rolled back; or, while a writer holds an embedded index, the last
        read snapshot it published (see :mod:`ragstrata.index.snapshots`). Raises
        IndexNotFoundError when there is no index, IndexLockedError when neither the lock nor a
        snapshot comes within ``wait_s`` seconds; a snapshot that does not open is retried (the
        current one again, a newer one, or the lock) until then, and its StoreError raised
        after."""
        if self._reading is None:
            # shared, read-only: a reader opened per call (MCP) does not parse it each time
            manifest = catalog.read_manifest_shared(self.index_dir)
            self._n_chunks = manifest.n_chunks
            self._fits(manifest)  # before any wait: a wrong embedder fails at once
            deadline = time.monotonic() + self.wait_s
            snapshot = self._wait_for_index()
            while snapshot is not None:
                try:
                    self._reading = self._open_snapshot(snapshot)
                    return self._reading
                except StoreError as exc:
                    # a copy the shard would not load (seen once in CI: "no segments were
                    # loaded"): wait for the writer's next generation or its lock
                    if isinstance(exc, EmbedderMismatchError) or time.monotonic() >= deadline:
                        raise
                    logger.warning("snapshot %s did not open (%s); retrying", snapshot.path, exc)
                    time.sleep(SNAPSHOT_RETRY_S)
                    snapshot = self._wait_for_index()
            store = self.open_store(manifest)
            if catalog.read_journal(self.index_dir) is not None:  # recovery edits its own copy
                recover(self.index_dir, store, catalog.read_manifest(self.index_dir))
            self._reading = store
        return self._reading

    def hold_lock(self, *, wait_s: float, purpose: str) -> None:
        """Take the index lock until :meth:`close` (IndexLockedError, naming ``purpose``, after
        ``wait_s`` seconds); nothing happens while it is held."""
        if self._lock is None:
            self._lock = catalog.IndexLock.acquire(self.index_dir, wait_s=wait_s, purpose=purpose)

    def open_store(self, manifest: Manifest, *, writing: bool = False) -> VectorStore:
        """The store this reader holds; when it holds none, the index's own, opened after
        ``fits(manifest, writing=writing)`` under the index lock (taken within ``wait_s``
        seconds). A writer closes a held snapshot first (:meth:`close`)."""
        if self._store is None:
            self._fits(manifest, writing=writing)
            self.hold_lock(wait_s=self.wait_s, purpose="open")
            self._store = stages.open_store(
                self._config,
                dim=manifest.dim,
                index_dir=self.index_dir,
                expected_chunks=manifest.n_chunks,
            )
        return self._store

    def close(self) -> None:
        """Close the store, then release the snapshot and the index lock (idempotent)."""
        if self._store is not None:
            store, self._store, self._reading = self._store, None, None
            try:
                store.close()
            except StoreError as exc:
                if self._snapshot is None:
                    raise
                # a read snapshot holds nothing of this reader's to save, and the readers of
                # one snapshot flush its segments at once when they close (CI57: a search
                # during an upload failed on another reader's atomic write)
                logger.warning("closing the read snapshot %s: %s", self._snapshot.path, exc)
        if self._snapshot is not None:
            self._snapshot.release()
            self._snapshot = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _wait_for_index(self) -> snapshots.Snapshot | None:
        """For a reader of an embedded index: take the index lock (then ``None``: open the
        index itself), or, while a writer holds it, lock its current read snapshot; polls both
        for up to ``wait_s`` seconds, then IndexLockedError."""
        if self._store is not None or self._lock is not None:
            return None
        if stages.store_backend(self._config) != "edge":
            return None  # a Qdrant server: readers wait for the writer, as before
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                self._lock = catalog.IndexLock.acquire(self.index_dir, purpose="open")
                return None
            except IndexLockedError:
                left = max(0.0, deadline - time.monotonic())
                snapshot = snapshots.open_current(self.index_dir, wait_s=left)
                if snapshot is not None:
                    return snapshot
                if left <= 0:
                    raise
            time.sleep(0.1)

    def _open_snapshot(self, snapshot: snapshots.Snapshot) -> VectorStore:
        """The store of a read snapshot this reader holds (released by :meth:`close`)."""
        try:
            manifest = catalog.read_manifest(snapshot.path)
            self._fits(manifest)
            self._store = self._open_snapshot_store(snapshot.path, manifest)
        except BaseException:
            snapshot.release()
            raise
        self._snapshot = snapshot
        logger.info("the index is being written; reading its snapshot %s", snapshot.path.name)
        return self._store

    def _open_snapshot_store(self, path: Path, manifest: Manifest) -> VectorStore:
        """The snapshot's store, retrying ``Can't init WAL: WouldBlock`` for up to
        :data:`WAL_RETRY_S` seconds."""
        deadline = time.monotonic() + WAL_RETRY_S
        while True:
            try:
                return stages.open_store(
                    self._config,
                    dim=manifest.dim,
                    index_dir=path,
                    expected_chunks=manifest.n_chunks,
                )
            except StoreError as exc:
                if "WouldBlock" not in str(exc) or time.monotonic() >= deadline:
                    raise
                gc.collect()
                time.sleep(0.05)
