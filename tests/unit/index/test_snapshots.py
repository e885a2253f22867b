"""Read snapshots: a generation is a loadable copy of the committed shard (sparse files stay
sparse), publications are rate-limited, a generation a reader holds is never removed under it,
and retiring withdraws every generation no reader holds."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragstrata.errors import IndexLockedError
from ragstrata.index import catalog, snapshots
from ragstrata.index.catalog import IndexLock, Manifest
from ragstrata.index.edge import EdgeStore
from ragstrata.testing.fakes import make_chunk

DIM = 8


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fill(store: EdgeStore, lo: int, n: int) -> None:
    chunks = [make_chunk(f"d{i}", 0, f"text {i}") for i in range(lo, lo + n)]
    v = np.random.default_rng(lo).standard_normal((n, DIM)).astype(np.float32)
    store.upsert(chunks, v / np.linalg.norm(v, axis=1, keepdims=True), [{1: 1.0}] * n)
    store.flush()


def manifest() -> Manifest:
    return Manifest(embedder="e", dim=DIM, analyzer="a", chunker="c", k1=1.2, b=0.75)


@pytest.fixture
def writer(tmp_path: Path) -> tuple[EdgeStore, snapshots.SnapshotPublisher, Clock]:
    store = EdgeStore(tmp_path / "shard", dim=DIM)
    clock = Clock()
    return store, snapshots.SnapshotPublisher(tmp_path, store.path, clock=clock), clock


def test_a_generation_is_the_committed_shard_and_opens_beside_the_writer(
    tmp_path: Path, writer: tuple[EdgeStore, snapshots.SnapshotPublisher, Clock]
) -> None:
    store, publisher, _ = writer
    fill(store, 0, 30)
    assert publisher.publish(manifest())
    fill(store, 30, 5)  # the writer goes on: the generation keeps the published state
    snap = snapshots.open_current(tmp_path, wait_s=0)
    assert snap is not None
    reader = EdgeStore(snap.path / "shard", dim=DIM)  # the writer's handle stays open
    try:
        assert reader.count() == 30 and store.count() == 35
        assert catalog.read_manifest(snap.path) == manifest()
    finally:
        reader.close()
        snap.release()
    wal = [
        p for p in (snap.path / "shard").rglob("*") if p.is_file() and p.stat().st_size >= 1 << 25
    ]
    assert wal and all(p.stat().st_blocks * 512 < p.stat().st_size for p in wal)  # still sparse
    store.close()


def test_publications_are_rate_limited_and_old_generations_removed(
    tmp_path: Path, writer: tuple[EdgeStore, snapshots.SnapshotPublisher, Clock]
) -> None:
    store, publisher, clock = writer
    fill(store, 0, 3)
    assert publisher.publish(manifest())
    clock.now += snapshots.MIN_INTERVAL_S / 2
    assert not publisher.publish(manifest())  # too soon
    held = snapshots.open_current(tmp_path, wait_s=0)
    assert held is not None
    clock.now += snapshots.MIN_INTERVAL_S
    assert publisher.publish(manifest())
    clock.now += snapshots.MIN_INTERVAL_S
    assert publisher.publish(manifest())
    names = sorted(p.name for p in (tmp_path / snapshots.READERS).iterdir() if p.is_dir())
    assert names == [held.path.name, "g000003"]  # g000002 went; the held g000001 stays
    with pytest.raises(IndexLockedError):  # a second reader of the same generation waits
        IndexLock.acquire(held.path, wait_s=0)
    held.release()
    publisher.retire()
    assert not (tmp_path / snapshots.READERS).exists()
    assert snapshots.open_current(tmp_path, wait_s=0) is None
    store.close()


def test_a_commit_skipped_by_the_rate_limit_is_published_once_due(
    tmp_path: Path, writer: tuple[EdgeStore, snapshots.SnapshotPublisher, Clock]
) -> None:
    store, publisher, clock = writer
    assert publisher.publish(manifest(), force=True)  # the early publication, empty
    assert not publisher.catch_up(manifest())  # nothing landed since
    fill(store, 0, 1)  # a one-chunk note commits within the interval: skipped
    clock.now += snapshots.MIN_INTERVAL_S / 4
    assert not publisher.publish(manifest()) and publisher.behind
    assert not publisher.catch_up(manifest())  # still too soon
    clock.now += snapshots.MIN_INTERVAL_S  # the next commit is being embedded: now due
    assert publisher.catch_up(manifest()) and not publisher.behind
    snap = snapshots.open_current(tmp_path, wait_s=0)
    assert snap is not None
    reader = EdgeStore(snap.path / "shard", dim=DIM)
    try:
        assert reader.count() == 1  # the note, searchable before the next commit lands
    finally:
        reader.close()
        snap.release()
    clock.now += snapshots.MIN_INTERVAL_S
    assert not publisher.catch_up(manifest())  # published already: no copy for nothing
    publisher.retire()
    store.close()


def test_a_new_publisher_never_reuses_a_generation_name(tmp_path: Path) -> None:
    (tmp_path / snapshots.READERS / "g000007").mkdir(parents=True)
    store = EdgeStore(tmp_path / "shard", dim=DIM)
    publisher = snapshots.SnapshotPublisher(tmp_path, store.path)
    publisher.publish(manifest(), force=True)
    assert snapshots.current_generation(tmp_path) == tmp_path / snapshots.READERS / "g000008"
    store.close()


def test_copy_sparse_tree_keeps_bytes_and_holes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    with open(src / "sub" / "sparse.bin", "wb") as fh:
        fh.write(b"head")
        fh.seek(8 << 20)
        fh.write(b"tail")
    (src / "plain.txt").write_text("plain", encoding="utf-8")
    snapshots.copy_sparse_tree(src, tmp_path / "dst")
    copied = tmp_path / "dst" / "sub" / "sparse.bin"
    assert copied.read_bytes() == (src / "sub" / "sparse.bin").read_bytes()
    assert (tmp_path / "dst" / "plain.txt").read_text(encoding="utf-8") == "plain"
    if hasattr(os, "SEEK_HOLE"):
        assert copied.stat().st_blocks * 512 < 1 << 20


def test_a_small_shard_is_published_early(
    tmp_path: Path, writer: tuple[EdgeStore, snapshots.SnapshotPublisher, Clock]
) -> None:
    store, publisher, _ = writer
    fill(store, 0, 3)
    assert publisher.publish_early(manifest())
    assert snapshots.current_generation(tmp_path) is not None
    store.close()


def test_a_large_shard_waits_for_the_first_commit(
    tmp_path: Path,
    writer: tuple[EdgeStore, snapshots.SnapshotPublisher, Clock],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, publisher, _ = writer
    monkeypatch.setattr(snapshots, "EAGER_BYTES", 0)
    fill(store, 0, 3)
    assert not publisher.publish_early(manifest())
    assert snapshots.current_generation(tmp_path) is None
    store.close()


def test_an_incomplete_copy_is_not_published(tmp_path: Path) -> None:
    from ragstrata.index.snapshots import _check_copy

    source, copy = tmp_path / "src", tmp_path / "copy"
    for root in (source, copy):
        (root / "segments" / "s1").mkdir(parents=True)
        (root / "edge_config.json").write_text("{}")
    _check_copy(source, copy)  # complete
    (copy / "edge_config.json").unlink()
    with pytest.raises(OSError, match=r"edge_config\.json"):
        _check_copy(source, copy)
    (copy / "edge_config.json").write_text("{}")
    (copy / "segments" / "s1").rmdir()
    with pytest.raises(OSError, match="no segment"):
        _check_copy(source, copy)
    (source / "segments" / "s1").rmdir()  # a new shard without segments yet: nothing to miss
    _check_copy(source, copy)
