"""Read snapshots: the committed state an embedded index's writer publishes for readers.

A Qdrant Edge shard has one owner: ``EdgeShard.load`` takes an exclusive lock on the shard's
write-ahead log, and a second handle on the same directory fails (``Can't init WAL:
WouldBlock``, in this process or another; Qdrant's docs: "only one EdgeShard may be open on a
given directory at a time"). Loading also writes to the directory (WAL replay, tracker
journals). So while ``ingest`` holds the index, no reader can open its shard.

Instead, the writer publishes copies of the committed state. After a commit (journal cleared,
shard flushed, manifest replaced), :class:`SnapshotPublisher` copies the shard and the manifest
into ``readers/g<N>/`` (copied under a temporary name, then renamed, so a generation directory
is complete or absent) and points ``readers/current`` at it. Copies are rate-limited: one at
most every :data:`MIN_INTERVAL_S` seconds and at most :data:`MAX_COPY_SHARE` of the writer's
time, so a reader sees a state at most a few commits old and never half a commit. A reader
that finds the index lock held opens the current generation under that generation's own lock
(:func:`open_current`); the writer never waits for readers: a generation a reader holds is
removed at a later publication, or by the next writer.

Layout::

    readers/current     JSON {"generation": "g000003"}, replaced atomically
    readers/g000003/    manifest.json + shard/ (+ .lock, held by the reader using it)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragstrata.errors import IndexLockedError
from ragstrata.index import catalog
from ragstrata.index.catalog import IndexLock, Manifest

logger = logging.getLogger(__name__)

READERS = "readers"
CURRENT = "current"
MIN_INTERVAL_S = 2.0
"""Seconds between two publications, at least."""
EAGER_BYTES = 64 << 20
"""A shard that occupies at most this much disk is published as soon as the writer has opened
it (readers need not wait for the first commit); a larger one before the first commit only, so
an ingest that changes nothing copies nothing."""
MAX_COPY_SHARE = 0.1
"""Largest share of the writer's time spent copying snapshots (the interval grows with the
measured copy time: a 0.5 s copy is repeated at most every 5 s)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A published generation held by one reader: ``path`` holds ``manifest.json`` and
    ``shard/``; ``lock`` (the generation's own) is released with :meth:`release`."""

    path: Path
    lock: IndexLock

    def release(self) -> None:
        self.lock.release()


class SnapshotPublisher:
    """Publishes the committed state of the index at ``index_dir`` (its shard at
    ``shard_dir``) for readers; used by the one writer, which holds the index lock.

    ``clock`` returns seconds (monotonic); tests pass a fake one.
    """

    def __init__(
        self,
        index_dir: Path,
        shard_dir: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index_dir = index_dir
        self.shard_dir = shard_dir
        self._root = index_dir / READERS
        self._clock = clock
        self._next_at = 0.0
        self._generation = _latest_number(self._root)
        self.published = 0
        """Generations published by this publisher."""
        self.behind = False
        """A commit landed that no generation shows yet (:meth:`publish` skipped it for its
        rate limit or a failed copy); :meth:`catch_up` publishes it once the limit allows."""

    def publish(self, manifest: Manifest, *, force: bool = False) -> bool:
        """Copy the shard (flushed by the caller, no commit in flight) and ``manifest`` into a
        new generation and make it current, unless one was published too recently (``force``
        publishes anyway). Returns whether a generation was published; older generations no
        reader holds are removed. A copy that fails (a full disk) is logged and skipped: the
        ingest goes on, readers keep the previous generation."""
        now = self._clock()
        if not force and now < self._next_at:
            self.behind = True
            return False
        started = time.perf_counter()
        self._generation += 1
        name = f"g{self._generation:06d}"
        tmp = self._root / f".{name}.tmp"
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            copy_sparse_tree(self.shard_dir, tmp / "shard")
            _check_copy(self.shard_dir, tmp / "shard")
            catalog.write_manifest(tmp, manifest)
            os.replace(tmp, self._root / name)
            catalog.atomic_write(self._root / CURRENT, json.dumps({"generation": name}))
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            self._next_at = now + MIN_INTERVAL_S
            self.behind = True
            logger.warning("could not publish a read snapshot of %s: %s", self.index_dir, exc)
            return False
        copy_s = time.perf_counter() - started
        self._next_at = now + max(MIN_INTERVAL_S, copy_s / MAX_COPY_SHARE)
        self.published += 1
        self.behind = False
        self._remove_unused(keep=name)
        return True

    def catch_up(self, manifest: Manifest) -> bool:
        """Publish the last commit when :meth:`publish` skipped it and the rate limit now
        allows; call it while the next commit is being prepared (its chunks embedded: the
        shard and ``manifest`` still hold the last commit's state). Without it a commit that
        landed within :data:`MIN_INTERVAL_S` of the previous publication stayed invisible
        until the commit after it, which a large document's 256-chunk slice can delay by
        minutes (a one-chunk note committed 1 s after the early publication was unsearchable
        for the 45 s of the big file's first slice). Returns whether it published."""
        return self.behind and self.publish(manifest)

    def publish_early(self, manifest: Manifest) -> bool:
        """Publish the committed state at once when the shard is small (:data:`EAGER_BYTES`);
        call it after recovery, with no commit in flight."""
        allocated = sum(p.stat().st_blocks * 512 for p in self.shard_dir.rglob("*") if p.is_file())
        return allocated <= EAGER_BYTES and self.publish(manifest, force=True)

    def retire(self) -> None:
        """The writer is done (readers can open the index itself again): withdraw the current
        generation and remove every generation no reader holds."""
        with contextlib.suppress(FileNotFoundError):
            (self._root / CURRENT).unlink()
        self._remove_unused(keep=None)
        with contextlib.suppress(OSError):
            self._root.rmdir()  # only when empty

    def _remove_unused(self, *, keep: str | None) -> None:
        if not self._root.is_dir():
            return
        for path in self._root.iterdir():
            if path.name == keep or not path.is_dir():
                continue
            if path.name.startswith("."):  # a copy a killed writer left behind
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                lock = IndexLock.acquire(path, wait_s=0.0, purpose="remove")
            except IndexLockedError:
                continue  # a reader has it open: removed later
            try:
                shutil.rmtree(path, ignore_errors=True)
            finally:
                lock.release()


SHARD_CONFIG = "edge_config.json"
SEGMENTS = "segments"


def _check_copy(source: Path, copy: Path) -> None:
    """Raise OSError when ``copy`` lacks the shard config or every segment that ``source``
    has now: the shard rewrote them while they were copied (one CI run published such a copy;
    a reader could not load it). The publication is then skipped and retried later."""
    for name in (SHARD_CONFIG, SEGMENTS):
        if (source / name).exists() and not (copy / name).exists():
            raise OSError(f"incomplete shard copy: {name} missing")
    segments = source / SEGMENTS
    if segments.is_dir() and any(segments.iterdir()) and not any((copy / SEGMENTS).iterdir()):
        raise OSError("incomplete shard copy: no segment")


def current_generation(index_dir: Path) -> Path | None:
    """The directory of the generation ``readers/current`` names, or ``None``."""
    try:
        data = json.loads((index_dir / READERS / CURRENT).read_text(encoding="utf-8"))
        name = str(data["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not name.startswith("g") or "/" in name:
        return None
    return index_dir / READERS / name


def open_current(index_dir: Path, *, wait_s: float) -> Snapshot | None:
    """The current published generation, locked for this reader (waiting up to ``wait_s``
    seconds for another reader of the same generation); ``None`` when none is published or it
    was removed meanwhile. Raises IndexLockedError when another reader holds it longer."""
    for _ in range(3):  # the writer may replace the generation between the read and the lock
        path = current_generation(index_dir)
        if path is None or not path.is_dir():
            return None
        lock = IndexLock.acquire(path, wait_s=wait_s, purpose="read")
        if (path / catalog.MANIFEST).is_file() and (path / "shard").is_dir():
            return Snapshot(path, lock)
        # removed while we waited (the lock re-created an empty directory): clean up, retry
        shutil.rmtree(path, ignore_errors=True)
        lock.release()
    return None


def copy_sparse_tree(source: Path, target: Path) -> None:
    """Copy the directory ``source`` to ``target`` (which must not exist), keeping holes in
    sparse files: the shard's write-ahead log preallocates 32 MB segments it barely uses."""
    target.mkdir(parents=True)
    for entry in os.scandir(source):
        dest = target / entry.name
        if entry.is_dir(follow_symlinks=False):
            copy_sparse_tree(Path(entry.path), dest)
        elif entry.is_file(follow_symlinks=False):
            _copy_sparse_file(Path(entry.path), dest)


def _copy_sparse_file(source: Path, target: Path) -> None:
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        if seek_data is None or seek_hole is None:
            shutil.copyfileobj(src, dst, 1 << 20)
            return
        fd, offset = src.fileno(), 0
        while offset < size:
            try:
                start = os.lseek(fd, offset, seek_data)
            except OSError:  # no data after offset (ENXIO): the rest is a hole
                break
            end = os.lseek(fd, start, seek_hole)
            src.seek(start)
            dst.seek(start)
            left = end - start
            while left > 0:
                block = src.read(min(left, 1 << 20))
                if not block:
                    break
                dst.write(block)
                left -= len(block)
            offset = end
        dst.truncate(size)


def _latest_number(root: Path) -> int:
    """The highest generation number under ``root`` (0 without any), so a new writer never
    reuses the name of a generation a reader may still hold."""
    numbers = [0]
    if root.is_dir():
        for path in root.iterdir():
            name = path.name.lstrip(".").removesuffix(".tmp")
            if name.startswith("g") and name[1:].isdigit():
                numbers.append(int(name[1:]))
    return max(numbers)
