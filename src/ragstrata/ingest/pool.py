"""Parse files in a pool of worker processes, in order, with a bounded window.

Parsing runs beside embedding: while the calling process embeds one batch, workers parse the
next files. Results come back in input order, at most ``window`` documents ahead of the
consumer, so memory stays bounded on 10,000+ files. A worker that crashes (a segfault in a
native PDF library, say), overruns ``timeout_s`` or grows past ``max_memory_mb`` costs only the
file it was parsing: it is reported as a failure and the pool is rebuilt for the rest.

Every file goes through a worker, a one-file ingest or a one-file upload too: the isolation
and the limits are the point of the pool, not only its parallelism (``workers=0``, parsing in
the calling process without either, is for tests and debugging).

Memory limit (Linux): each worker watches its own resident set size (``/proc/self/statm``,
every 50 ms) and exits with :data:`_EXIT_OVER_MEMORY` once it passes ``max_memory_mb``; the
parent reads that exit status and reports the file. As a backstop for growth faster than the
watch, the worker's address space (``RLIMIT_AS``) is limited to what it maps at start plus twice
the limit plus 1 GiB of mappings it never touches: an allocation past it fails (``MemoryError``
in Python, reported as the memory limit; a crash in native code), which costs the file as well.
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

from ragstrata.errors import IngestError, ParserLimitError
from ragstrata.paths import path_text
from ragstrata.types import Document, IngestFailure

__all__ = ["ParseResults", "auto_workers", "load_many", "load_one"]

logger = logging.getLogger(__name__)

_EXIT_OVER_MEMORY = 86
"""Exit status of a worker that stopped itself for passing its memory limit."""
_EXIT_OVER_TIME = 87
"""Exit status of a worker that stopped itself for parsing one file past ``timeout_s``."""
_BACKSTOP_GRACE_S = 30.0
"""The parent gives up on a result ``timeout_s`` plus this long after it starts waiting: the
worker times its own parse (:func:`_parse_in_worker`), so the parent's wait is the backstop for
a parser stuck in native code, and must not count a rebuilt pool's start (a second or two)."""
_MEMORY_POLL_S = 0.05
_EXIT_STATUS_WAIT_S = 1.0
"""How long :func:`_terminate` waits for a joined worker's exit status to be recorded."""
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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


def _statm_bytes(field: int) -> int | None:
    """One field of /proc/self/statm in bytes (0: address space, 1: resident set), or None
    where /proc is missing (not Linux)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[field]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


def _rss_bytes() -> int | None:
    """This process's resident set size in bytes (Linux), or None where /proc is missing."""
    return _statm_bytes(1)


def _limit_memory(max_memory_mb: int) -> None:
    """Worker initializer part: exit with :data:`_EXIT_OVER_MEMORY` once the resident set
    passes ``max_memory_mb`` MiB, and cap the address space as a backstop (see the module
    docstring)."""
    limit = max_memory_mb * 2**20
    try:
        import resource
    except ImportError:  # not on POSIX: no backstop
        pass
    else:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        # above what the worker already maps (thread stacks and allocator arenas grow with the
        # core count), so the backstop stays a backstop on a many-core machine
        backstop = (_statm_bytes(0) or 0) + 2 * limit + 2**30
        if hard != resource.RLIM_INFINITY:
            backstop = min(backstop, hard)
        if soft == resource.RLIM_INFINITY or soft > backstop:
            resource.setrlimit(resource.RLIMIT_AS, (backstop, hard))
    if _rss_bytes() is None:
        return

    def watch() -> None:
        while True:
            rss = _rss_bytes()
            if rss is not None and rss > limit:
                os._exit(_EXIT_OVER_MEMORY)
            time.sleep(_MEMORY_POLL_S)

    threading.Thread(target=watch, name="ragstrata-memory-watch", daemon=True).start()


def _init_worker(parent_pid: int, max_memory_mb: int | None) -> None:
    """Worker initializer: ignore Ctrl-C (the terminal sends SIGINT to the whole process group;
    the parent stops the workers itself, so no worker prints a KeyboardInterrupt traceback),
    leave with the parent, keep under the memory limit; load the parsers now
    (:func:`~ragstrata.ingest.loader.warm_up`), so that the first file's time limit counts its
    parse, not the loading (about a second)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _watch_parent(parent_pid)
    if max_memory_mb:
        _limit_memory(max_memory_mb)
    from ragstrata.ingest.loader import warm_up

    try:
        warm_up()
    except Exception:  # a missing parser dependency: each file's parse reports it
        logger.debug("parser warm-up failed", exc_info=True)


def load_one(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Load one file; every failure becomes an :class:`IngestFailure` (nothing is raised)."""
    from ragstrata.ingest.loader import load_document

    try:
        return load_document(path, max_file_bytes=max_file_bytes)
    except IngestError as err:
        return IngestFailure(err.path, err.code, err.reason)
    except MemoryError:
        return IngestFailure(
            path_text(path),
            ParserLimitError.code,
            "the parser ran out of memory (see ingest.max_worker_memory_mb)",
        )
    except Exception as err:  # a parser bug must cost one file, not the batch
        logger.exception("unexpected parser failure on %s", path)
        return IngestFailure(
            path_text(path), "RS200", f"parser failed: {type(err).__name__}: {err}"
        )


def _parse_in_worker(
    loader: Callable[[Path, int], Document | IngestFailure],
    path: Path,
    max_file_bytes: int,
    max_memory_mb: int | None,
    timeout_s: float,
) -> Document | IngestFailure:
    """``loader(path, max_file_bytes)`` in a pool worker. A MemoryError (the address-space
    backstop) becomes the file's RS212 failure here, once the ``except`` block has let go of
    the parse's frames: sent back as an exception, it was pickled with a traceback that still
    held the memory the parse took, which can fail for want of memory and lose the reason (CI
    once got RS200 for a file over the limit).

    The worker exits with :data:`_EXIT_OVER_TIME` once this parse has run ``timeout_s``
    seconds: the limit counts the parse itself, from its start. The parent's own wait on the
    result could not: it starts when the consumer asks for the file, so a file parsed while the
    consumer was embedding others was never timed (a new user's 1.47 s PDF went through
    ``ingest.parse_timeout_s = 0.2``), and a stuck one got longer than the limit. A parser
    stuck in native code that holds the GIL delays this timer; the parent's wait stays as the
    backstop for it."""
    timer = threading.Timer(timeout_s, os._exit, args=(_EXIT_OVER_TIME,))
    timer.daemon = True
    timer.start()
    try:
        return loader(path, max_file_bytes)
    except MemoryError:
        pass
    finally:
        timer.cancel()
    return _over_memory(path, max_memory_mb)


def load_many(
    files: Sequence[Path],
    *,
    max_file_bytes: int,
    workers: int,
    window: int | None = None,
    timeout_s: float = 600.0,
    max_memory_mb: int | None = None,
    loader: Callable[[Path, int], Document | IngestFailure] = load_one,
) -> ParseResults:
    """Yield :func:`load_one` for each of ``files``, in order.

    ``workers`` = 0 parses in the calling process, without isolation or limits; otherwise a
    pool of ``min(workers, len(files))`` processes (``spawn`` start method: safe beside the
    threads of ONNX Runtime/tokenizers) keeps up to ``window`` files (default ``4 × workers``)
    in flight, a single file included. ``timeout_s`` bounds one file's parse (seconds);
    ``max_memory_mb`` one worker's resident memory (MiB; None or 0: no limit). A file over
    either limit is yielded as an :class:`IngestFailure` with code RS212, a file whose worker
    crashed with RS200; the pool is rebuilt and the other files go on. ``loader`` must be a
    picklable top-level function with the contract of :func:`load_one` (tests swap it).

    The workers start, and the first ``window`` files are submitted, when this is called (not
    on the first ``next``): a caller that loads models before it consumes overlaps the two.
    Consume or ``close()`` the iterator to stop the workers.
    """
    if workers <= 0 or not files:
        return ParseResults(loader(path, max_file_bytes) for path in files)
    workers = min(workers, len(files))
    window = window or 4 * workers
    context = multiprocessing.get_context("spawn")
    pending: deque[tuple[Path, Future[Document | IngestFailure]]] = deque()
    todo = deque(files)
    suspects: deque[Path] = deque()  # in flight when a worker died: retried one at a time

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(), max_memory_mb or None),
        )

    def submit_more(executor: ProcessPoolExecutor) -> None:
        """Fill the window. A pool found broken here (a worker died after the last result was
        taken) takes no more files: the path goes back to the front of its queue, and the
        broken futures already pending get the pool rebuilt (CI once caught the submit
        raising BrokenProcessPool out of the iterator)."""
        limit = 1 if suspects else window
        source = suspects if suspects else todo
        while source and len(pending) < limit:
            path = source.popleft()
            try:
                future = executor.submit(
                    _parse_in_worker, loader, path, max_file_bytes, max_memory_mb, timeout_s
                )
            except BrokenProcessPool:
                source.appendleft(path)
                return
            pending.append((path, future))

    current: list[ProcessPoolExecutor] = []  # the live pool, for ParseResults.close

    def rebuild(
        executor: ProcessPoolExecutor,
    ) -> tuple[ProcessPoolExecutor, list[int | None]]:
        """Stop an unusable pool and start a new one (the live one from now on); returns it
        and the old workers' exit codes."""
        exit_codes = _terminate(executor)
        fresh = new_pool()
        current[:] = [fresh]
        return fresh, exit_codes

    def results(executor: ProcessPoolExecutor) -> Iterator[Document | IngestFailure]:
        try:
            while todo or pending or suspects:
                submit_more(executor)
                if not pending:  # broken with nothing in flight: nothing to blame, rebuild
                    executor, _ = rebuild(executor)
                    continue
                path, future = pending.popleft()
                try:
                    yield future.result(timeout=timeout_s + _BACKSTOP_GRACE_S)
                    continue
                except FutureTimeout:
                    crashed = False
                except BrokenProcessPool:
                    crashed = True
                except MemoryError:  # the address-space backstop hit before the RSS watch
                    yield _over_memory(path, max_memory_mb)
                    continue
                except Exception as err:  # the loader broke its contract: cost one file only
                    logger.error("parser failure on %s: %s: %s", path, type(err).__name__, err)
                    yield IngestFailure(
                        path_text(path), "RS200", f"parser failed: {type(err).__name__}: {err}"
                    )
                    continue
                # the pool is unusable (a worker died or is stuck): rebuild it
                executor, exit_codes = rebuild(executor)
                others = [p for p, _ in pending]
                pending.clear()
                if not crashed:
                    yield _over_time(path, timeout_s)
                    todo.extendleft(reversed(others))  # innocent: parse them again, in order
                elif others:
                    # any of the files in flight may have killed the worker: retry one by one
                    suspects.extendleft(reversed([path, *others]))
                elif _EXIT_OVER_MEMORY in exit_codes:
                    yield _over_memory(path, max_memory_mb)
                elif _EXIT_OVER_TIME in exit_codes:
                    yield _over_time(path, timeout_s)
                else:
                    yield IngestFailure(path_text(path), "RS200", _crash_reason(exit_codes))
        finally:
            _terminate(executor)

    # start the workers and the first files now, while the caller loads its models
    first = new_pool()
    current.append(first)
    submit_more(first)
    return ParseResults(results(first), stop=lambda: _terminate(current[0]))


class ParseResults(Iterator[Document | IngestFailure]):
    """The iterator :func:`load_many` returns; ``close()`` stops its workers at once, even
    when it was never iterated (a caller that fails before it consumes)."""

    def __init__(
        self,
        results: Iterator[Document | IngestFailure],
        *,
        stop: Callable[[], object] | None = None,
    ) -> None:
        self._results = results
        self._stop = stop

    def __next__(self) -> Document | IngestFailure:
        return next(self._results)

    def close(self) -> None:
        close = getattr(self._results, "close", None)
        if close is not None:
            close()
        if self._stop is not None:
            self._stop()


def _over_time(path: Path, timeout_s: float) -> IngestFailure:
    """The RS212 failure of a file whose parse ran past ``timeout_s`` seconds."""
    return IngestFailure(
        path_text(path),
        ParserLimitError.code,
        f"parse took longer than {timeout_s:g} s (ingest.parse_timeout_s); skipped",
    )


def _over_memory(path: Path, max_memory_mb: int | None) -> IngestFailure:
    """The RS212 failure of a file whose parse passed the worker's memory limit."""
    limit = f"{max_memory_mb} MB of memory" if max_memory_mb else "the memory available"
    return IngestFailure(
        path_text(path),
        ParserLimitError.code,
        f"parser exceeded {limit} (ingest.max_worker_memory_mb); skipped",
    )


CRASH_REASON = "the parser process crashed on this file"
"""How the reason of a file whose parser process died begins (not remembered as a failed file:
the machine's out-of-memory killer or a script without its ``__main__`` guard is as likely a
cause as the file)."""


def _crash_reason(exit_codes: Sequence[int | None]) -> str:
    """The reason reported for a file whose worker died, naming the signal when there is one."""
    import signal

    for code in exit_codes:
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if name != "SIGTERM":  # SIGTERM: a sibling stopped by _terminate
                return f"{CRASH_REASON} ({name})"
    statuses = sorted({code for code in exit_codes if code is not None and code > 0})
    if statuses:
        # a worker that exits with a status (no signal) died in Python, most often while
        # re-importing the calling script: the spawn start method runs its top-level code again
        return (
            f"{CRASH_REASON} (exit status {statuses[0]}); "
            "if ragstrata runs from a script, put the script's top-level code under "
            '`if __name__ == "__main__":` (worker processes import the script again)'
        )
    return CRASH_REASON


def _terminate(executor: ProcessPoolExecutor) -> list[int | None]:
    """Shut a pool down without waiting for stuck workers; the workers' exit statuses (a
    negative signal number for a killed one, None for one that would not stop)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())  # no public API
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    # the pool's own manager thread joins a broken pool's workers too: when its waitpid reaps a
    # worker first, ours sees no child and exitcode reads None until that thread records the
    # status (a worker that left over the memory limit was reported as a plain crash, RS200)
    codes = [process.exitcode for process in processes]
    deadline = time.monotonic() + _EXIT_STATUS_WAIT_S
    while None in codes and time.monotonic() < deadline:
        time.sleep(0.01)
        codes = [process.exitcode for process in processes]
    return codes
