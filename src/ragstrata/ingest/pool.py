"""Parse files in a pool of worker processes, in order, with a bounded window.

Parsing runs beside embedding: while the calling process embeds one batch, workers parse the
next files. Results come back in input order, at most ``window`` documents ahead of the
consumer, so memory stays bounded on 10,000+ files. A worker that crashes (a segfault in a
native PDF library, say) or overruns ``timeout_s`` costs only the file it was parsing: it is
reported as a failure and the pool is rebuilt for the rest.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ragstrata.errors import IngestError
from ragstrata.paths import path_text
from ragstrata.types import Document, IngestFailure

__all__ = ["auto_workers", "load_many", "load_one"]

logger = logging.getLogger(__name__)


def auto_workers() -> int:
    """Default parser processes: one per core beyond the first (which embeds), 1 to 4."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def _watch_parent(parent_pid: int) -> None:
    """Worker initializer: exit when the parent process is gone (a SIGKILLed ingest must not
    leave orphan parsers behind; idle workers would otherwise wait on the queue forever)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="ragstrata-parent-watch", daemon=True).start()


def load_one(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Load one file; every failure becomes an :class:`IngestFailure` (nothing is raised)."""
    from ragstrata.ingest.loader import load_document

    try:
        return load_document(path, max_file_bytes=max_file_bytes)
    except IngestError as err:
        return IngestFailure(err.path, err.code, err.reason)
    except MemoryError:
        return IngestFailure(path_text(path), "RS200", "out of memory while parsing")
    except Exception as err:  # a parser bug must cost one file, not the batch
        logger.exception("unexpected parser failure on %s", path)
        return IngestFailure(
            path_text(path), "RS200", f"parser failed: {type(err).__name__}: {err}"
        )


def load_many(
    files: Sequence[Path],
    *,
    max_file_bytes: int,
    workers: int,
    window: int | None = None,
    timeout_s: float = 600.0,
    loader: Callable[[Path, int], Document | IngestFailure] = load_one,
) -> Iterator[Document | IngestFailure]:
    """Yield :func:`load_one` for each of ``files``, in order.

    ``workers`` = 0 parses in the calling process; otherwise a pool of ``workers`` processes
    (``spawn`` start method: safe beside the threads of ONNX Runtime/tokenizers) keeps up to
    ``window`` files (default ``4 × workers``) in flight. ``timeout_s`` bounds one file's parse
    (seconds, pool mode only). ``loader`` must be a picklable top-level function with the
    contract of :func:`load_one` (tests swap it).
    """
    if workers <= 0 or len(files) <= 1:
        for path in files:
            yield loader(path, max_file_bytes)
        return
    window = window or 4 * workers
    context = multiprocessing.get_context("spawn")
    pending: deque[tuple[Path, Future[Document | IngestFailure]]] = deque()
    todo = deque(files)
    suspects: deque[Path] = deque()  # in flight when a worker died: retried one at a time

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_watch_parent,
            initargs=(os.getpid(),),
        )

    executor = new_pool()
    try:
        while todo or pending or suspects:
            limit = 1 if suspects else window
            source = suspects if suspects else todo
            while source and len(pending) < limit:
                path = source.popleft()
                pending.append((path, executor.submit(loader, path, max_file_bytes)))
            path, future = pending.popleft()
            try:
                yield future.result(timeout=timeout_s)
                continue
            except FutureTimeout:
                crashed = False
            except BrokenProcessPool:
                crashed = True
            # the pool is unusable (a worker died or is stuck): rebuild it
            _terminate(executor)
            executor = new_pool()
            others = [p for p, _ in pending]
            pending.clear()
            if not crashed:
                yield IngestFailure(
                    path_text(path), "RS200", f"parsing took longer than {timeout_s:.0f} s; skipped"
                )
                todo.extendleft(reversed(others))  # innocent: parse them again, in order
            elif not others:
                yield IngestFailure(
                    path_text(path), "RS200", "the parser process crashed on this file"
                )
            else:
                # any of the files in flight may have killed the worker: retry them one by one
                suspects.extendleft(reversed([path, *others]))
    finally:
        _terminate(executor)


def _terminate(executor: ProcessPoolExecutor) -> None:
    """Shut a pool down without waiting for stuck workers."""
    processes = list(getattr(executor, "_processes", {}).values())  # no public API for this
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
