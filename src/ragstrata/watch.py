"""Keep an index in step with folders as they change (``ragstrata watch``).

:class:`FolderWatcher` watches the roots with ``watchfiles`` (extra ``watch``) and, for every
batch of changes, runs one :meth:`Ragstrata.ingest(roots, prune=True)
<ragstrata.pipeline.Ragstrata.ingest>` over all the roots. That ingest re-reads no file whose
bytes match the manifest (SHA-256), re-indexes the changed and new ones and removes the
documents whose file is gone (a rename is a removal plus an addition), with the same journaled
commits as ``ragstrata ingest``: a watcher killed mid-sync loses nothing that was committed, and
the next start (or any ingest) rolls an interrupted commit back and redoes it. The ingest rules
of :func:`~ragstrata.ingest.loader.discover` (hidden files, unsupported types, Confluence
exports, ``ingest.follow_symlinks``) apply unchanged, because the files synced are the ones
discover finds; the change events only decide *when* to sync.

Each sync opens the index, takes the write lock (waiting up to ``lock_wait_s`` for a search
in progress), and closes it again, so between syncs other processes can search the index.

Limits: changes under a folder reached through a symbolic link whose target lies outside the
roots (``ingest.follow_symlinks = "all"``) are not watched, and are picked up only by the next
sync that something inside the roots triggers; a root deleted while watching is reported and no
longer watched (restart the watcher).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Literal

from ragstrata.config import RagConfig
from ragstrata.embed.base import Embedder
from ragstrata.errors import (
    ConfigError,
    EmbedderMismatchError,
    IndexLockedError,
    MissingDependencyError,
    RagError,
    SourceNotFoundError,
    StoreError,
)
from ragstrata.index import catalog
from ragstrata.index.report import IngestReport
from ragstrata.ingest.loader import FORMATS
from ragstrata.optional import require
from ragstrata.paths import path_text
from ragstrata.pipeline import Ragstrata

if TYPE_CHECKING:
    from watchfiles import Change

__all__ = [
    "DEFAULT_DEBOUNCE_MS",
    "FolderWatcher",
    "SyncOutcome",
    "SyncStopped",
    "stop_on_signals",
]

logger = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 300
"""Quiet time (ms) after the last change before a batch is synced."""

MIN_MAX_WAIT_MS = 1600
"""Changes that keep coming are synced at least this often (ms; watchfiles' own default)."""

LOCK_WAIT_S = 30.0
"""How long a sync waits for another process's hold on the index (a search, an ask)."""

RETRY_S = 5.0
"""After a sync that found the index locked, the next try comes this many seconds later."""
MAX_STORE_RETRY_S = 300.0
"""Longest wait between retries of a sync that failed on the store (:meth:`FolderWatcher.run`)."""


TICK_MS = 500
"""How often the watch loop wakes without changes (to start, and to retry a locked sync)."""

SyncState = Literal["synced", "failed", "interrupted"]


class SyncStopped(Exception):
    """A sync stopped between documents because the stop event was set; the documents
    committed before it stay indexed, the rest are synced by the next run."""


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    """One sync of the watched roots.

    ``number`` counts syncs from 1 (the initial sync); ``changes`` is the number of file
    events that triggered it (0 for the initial sync and for retries). ``state``: ``synced``
    (``report`` holds the ingest report), ``failed`` (``error`` says why; the changes are synced
    again later) or ``interrupted`` (stopped between documents, see :class:`SyncStopped`).
    ``documents`` and ``chunks`` are what the index holds afterwards; ``seconds`` the sync's
    wall time.
    """

    number: int
    changes: int
    state: SyncState
    report: IngestReport | None
    error: RagError | None
    documents: int
    chunks: int
    seconds: float


MAX_DEBOUNCE_MS = 3_600_000
"""One hour: a batch waits no longer for quiet (review 45: a huge value overflowed inside
watchfiles with a traceback)."""


class FolderWatcher:
    """Keeps the index of ``config`` in step with ``roots`` (folders or files).

    ``debounce_ms``: a batch of changes is synced once the roots have been quiet for this long
    (changes that keep coming are synced at least every ``max(1600, 4 × debounce_ms)`` ms).
    ``lock_wait_s``: how long one sync waits for a search holding the index. ``embedder``
    overrides ``config.embedder`` (a loaded model to share). Cheap to construct: raises
    ConfigError for a bad setting and SourceNotFoundError for a root that does not exist;
    nothing is loaded until the first sync.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        *,
        config: RagConfig,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        lock_wait_s: float = LOCK_WAIT_S,
        embedder: Embedder | None = None,
    ) -> None:
        if not roots:
            raise ConfigError("watch needs at least one folder or file to watch")
        if not 0 <= debounce_ms <= MAX_DEBOUNCE_MS:
            raise ConfigError(
                f"debounce_ms={debounce_ms} must be 0-{MAX_DEBOUNCE_MS:,} (milliseconds)"
            )
        if lock_wait_s < 0:
            raise ConfigError(f"lock_wait_s={lock_wait_s} must be >= 0 (seconds)")
        missing = [p for p in roots if not p.exists()]
        if missing:
            raise SourceNotFoundError(
                ", ".join(path_text(p) for p in missing),
                "no such file or directory; only existing folders and files can be watched",
            )
        self.roots = list(roots)
        self.config = config
        self.index_dir = config.index_path.resolve()
        self.debounce_ms = debounce_ms
        self.lock_wait_s = lock_wait_s
        resolved = [p.resolve() for p in roots]
        self._folders = [p for p in resolved if p.is_dir()]
        self._files = {p for p in resolved if not p.is_dir()}
        # a file is watched through its folder: editors save by replacing the file
        self._watched = sorted({*self._folders, *(p.parent for p in self._files)})
        # never opens the store: holds the embedder that every sync's engine shares
        self._models = Ragstrata(config, embedder=embedder)
        self._syncs = 0

    # ------------------------------------------------------------------ one sync
    def sync(self, *, stop: threading.Event | None = None, changes: int = 0) -> SyncOutcome:
        """Bring the index in step with the roots now: one ``ingest(roots, prune=True)``.

        The index is opened for this sync only (its lock is released when the sync ends).
        When ``stop`` is set mid-sync, the sync ends between documents (state
        ``interrupted``). An error that a later sync may not meet (the index held by another
        process past ``lock_wait_s``, a root gone, a store error) gives state ``failed``;
        errors of the setup (EmbedderMismatchError, MissingDependencyError, ConfigError) are
        raised.
        """
        self._syncs += 1
        started = time.perf_counter()

        def check_stop(event: str, done: int, total: int) -> None:
            if stop is not None and stop.is_set():
                raise SyncStopped(f"stopped during {event} ({done}/{total})")

        engine = Ragstrata(self.config, embedder=self._models.embedder)
        report: IngestReport | None = None
        error: RagError | None = None
        state: SyncState = "synced"
        try:
            report = engine.ingest(
                self.roots, prune=True, progress=check_stop, lock_wait_s=self.lock_wait_s
            )
        except SyncStopped:
            state = "interrupted"
        except (IndexLockedError, SourceNotFoundError) as exc:
            state, error = "failed", exc
        except (MissingDependencyError, ConfigError, EmbedderMismatchError):
            raise
        except RagError as exc:
            if self._syncs == 1:
                raise
            state, error = "failed", exc
        finally:
            engine.close()
        try:
            manifest = catalog.read_manifest(self.index_dir)
            documents, chunks = len(manifest.documents), manifest.n_chunks
        except RagError:  # no index yet (an initial sync that failed), or unreadable
            documents = chunks = 0
        return SyncOutcome(
            number=self._syncs,
            changes=changes,
            state=state,
            report=report,
            error=error,
            documents=documents,
            chunks=chunks,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ watching
    def relevant(self, change: Change, path: str) -> bool:
        """Whether a file event may change what the index should hold (the watch filter).

        Ignored: events inside the index directory (the watcher's own writes), below a hidden
        folder or on a hidden file (never ingested from a folder), on files that exist and
        have a type ingest skips, and, for a file given as a root, on its folder's other
        files. A path that no longer exists or is a folder counts (a folder moved away or
        renamed may be reported as one event for all its files)."""
        p = Path(path)
        if p.is_relative_to(self.index_dir):
            return False
        if p in self._files:
            return True
        root = next((r for r in self._folders if p.is_relative_to(r)), None)
        if root is None:
            return False
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            return False
        return p.suffix.lower() in FORMATS or not p.is_file()

    def run(self, stop: threading.Event) -> Iterator[SyncOutcome]:
        """Sync the roots once, then again after every batch of relevant changes, until
        ``stop`` is set; yields each sync's outcome.

        The watcher starts before the initial sync, so no change made while it runs is
        missed. A sync that found the index locked is retried every :data:`RETRY_S` seconds;
        one that failed on the store (StoreError: a Qdrant server unreachable) after
        :data:`RETRY_S`, then twice as long each time up to :data:`MAX_STORE_RETRY_S`; one that
        failed otherwise, at the next change. Errors of the initial sync other than
        a locked index are raised (see :meth:`sync`). Raises MissingDependencyError without
        the ``watch`` extra.
        """
        watch = require("watchfiles", extra="watch").watch
        quiet = self.debounce_ms
        batches = watch(
            *self._watched,
            watch_filter=self.relevant,
            debounce=max(MIN_MAX_WAIT_MS, 4 * quiet),
            step=max(quiet, 1),
            stop_event=stop,
            rust_timeout=TICK_MS,
            yield_on_timeout=True,
            ignore_permission_denied=True,
        )
        pending = True  # the initial sync
        retry_at = 0.0
        store_failures = 0  # syncs in a row that failed on the store
        changes = 0
        for batch in batches:  # ends when stop is set
            changes += len(batch)
            if stop.is_set():
                return
            if not batch and not (pending and time.monotonic() >= retry_at):
                continue
            outcome = self.sync(stop=stop, changes=changes)
            changes = 0
            yield outcome
            if outcome.state == "interrupted":
                return
            pending = outcome.state == "failed"
            locked = isinstance(outcome.error, IndexLockedError)  # a StoreError too
            on_store = isinstance(outcome.error, StoreError) and not locked
            store_failures = store_failures + 1 if on_store else 0
            if locked:
                retry_at = time.monotonic() + RETRY_S
            elif store_failures:
                # a Qdrant server restarting, unreachable for a while (review 45: the change
                # stayed unsynced until another one came): again, less and less often
                retry_at = time.monotonic() + min(
                    RETRY_S * 2 ** (store_failures - 1), MAX_STORE_RETRY_S
                )
            elif pending:
                retry_at = float("inf")  # wait for the next change


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[threading.Event]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM set ``stop`` instead of interrupting, so a
    watcher ends cleanly (between documents, its lock released); a second signal raises
    KeyboardInterrupt at once (an interrupted commit is rolled back by the next open). The
    previous handlers are restored on exit. Call from the main thread."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        # a sync parsing or embedding one large file reaches its next step only after a while
        # (a trial's Ctrl-C was silent for 40 s): say that the signal was heard
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(
                "stopping after the current step (the index stays consistent); "
                "press Ctrl-C again to stop at once\n"
            )
            sys.stderr.flush()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
