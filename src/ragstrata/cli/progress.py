"""What ``ingest`` prints while it runs: counts of the work really done, taken from the
engine's progress events (:data:`~ragstrata.index.report.ProgressCallback`), shown as two bars
on a terminal and as plain periodic lines anywhere else (a log file, CI, a service wrapper).

A file is *parsed* when the writer has taken its document (read, decoded, parsed, chunked); a
chunk is *embedded* when its vector is ready (embedded or reused) and *committed* once its
commit's journal is closed. The ingest is done only when every file is parsed and every chunk
committed, so neither display reaches its end while the last commit is still embedding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ragstrata.index.report import ProgressCallback

__all__ = ["DEFAULT_PROGRESS_EVERY_S", "IngestProgress", "show_progress"]

DEFAULT_PROGRESS_EVERY_S = 10.0
"""Seconds between two plain progress lines when stderr is not a terminal."""


def _clock_text(seconds: float) -> str:
    """``H:MM:SS`` of a non-negative duration in seconds."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@dataclass(slots=True)
class IngestProgress:
    """Running counts of one ingest, fed by its progress events (call the instance as the
    :data:`~ragstrata.index.report.ProgressCallback`); times in seconds of ``clock``.

    ``files_total`` is known from the first ``discover``/``parse`` event; ``chunks_queued``
    grows as documents are chunked, so the number of chunks still to come is known only once
    every file is parsed (:attr:`parsing_done`); until then :attr:`chunks_expected` extrapolates
    from the bytes parsed.
    """

    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    files_total: int | None = None
    files_parsed: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    chunks_queued: int = 0
    chunks_embedded: int = 0
    chunks_committed: int = 0
    first_chunk_at: float | None = None
    chunks_reweighted: int = 0
    reweight_total: int = 0
    files_unchanged: int = 0

    def __post_init__(self) -> None:
        self.started = self.clock()

    def __call__(self, event: str, done: int, total: int) -> None:
        if event == "discover":
            self.files_total = total if self.files_total is None else self.files_total
        elif event == "parse":
            self.files_parsed, self.files_total = done, total
        elif event == "bytes":
            self.bytes_done, self.bytes_total = done, total
        elif event == "chunk":
            self.chunks_queued += done
            if self.first_chunk_at is None:
                self.first_chunk_at = self.clock()
        elif event == "embed":
            self.chunks_embedded += done
        elif event == "commit":
            self.chunks_committed += done
        elif event == "reweight":  # after the last commit: BM25 weights brought up to date
            self.chunks_reweighted, self.reweight_total = done, total
        elif event == "unchanged":  # files skipped unparsed before discovery ends
            self.files_unchanged = done

    @property
    def parsing_done(self) -> bool:
        """Every file has been taken by the writer (parsed, or reported as failed)."""
        return self.files_total is not None and self.files_parsed >= self.files_total

    @property
    def finished(self) -> bool:
        """Every file parsed and every chunk committed."""
        return self.parsing_done and self.chunks_committed >= self.chunks_queued

    @property
    def chunks_expected(self) -> int | None:
        """All chunks once parsing is done; before, the chunks so far scaled by the share of
        bytes parsed (``None`` while nothing is parsed)."""
        if self.parsing_done:
            return self.chunks_queued
        if self.bytes_done <= 0 or self.bytes_total <= 0:
            return None
        scaled = round(self.chunks_queued * self.bytes_total / self.bytes_done)
        return max(self.chunks_queued, scaled)

    @property
    def rate(self) -> float | None:
        """Chunks embedded per second since the first chunk was queued (``None`` before)."""
        if self.first_chunk_at is None or not self.chunks_embedded:
            return None
        seconds = self.clock() - self.first_chunk_at
        return self.chunks_embedded / seconds if seconds > 0 else None

    def eta(self) -> float | None:
        """Seconds left at the measured :attr:`rate` for :attr:`chunks_expected`, or ``None``
        when either is unknown."""
        expected, rate = self.chunks_expected, self.rate
        if expected is None or rate is None:
            return None
        return max(0, expected - self.chunks_embedded) / rate

    def line(self) -> str:
        """One plain progress line (no markup, no control characters)."""
        total = "?" if self.files_total is None else str(self.files_total)
        queued = f"{self.chunks_queued}" + ("" if self.parsing_done else "+")  # "+": more to come
        rate, eta = self.rate, self.eta()
        parts = [
            f"ingest: {self.files_parsed}/{total} files parsed",
            f"{self.chunks_embedded}/{queued} chunks embedded",
            f"{self.chunks_committed} committed",
            f"{rate:.1f} chunks/s" if rate is not None else "- chunks/s",
            f"elapsed {_clock_text(self.clock() - self.started)}",
        ]
        if self.files_unchanged:  # a re-run: "0/0 files parsed" alone read as "found nothing"
            parts.append(f"{self.files_unchanged} files unchanged (not parsed again)")
        if eta is not None and not self.finished:
            parts.append(f"ETA {_clock_text(eta)}" + ("" if self.parsing_done else " (est.)"))
        if self.reweight_total:
            weighted = f"{self.chunks_reweighted}/{self.reweight_total}"
            parts.append(f"BM25 re-weighted {weighted} chunks")
        return ", ".join(parts)


class _EtaColumn(TimeRemainingColumn):
    """The time remaining, shown only on tasks with the field ``eta=True`` (the chunks bar)."""

    def render(self, task: Task) -> Text:
        if not task.fields.get("eta"):
            return Text("")
        return Text("ETA ") + super().render(task)


@contextmanager
def show_progress(
    console: Console, *, every_s: float = DEFAULT_PROGRESS_EVERY_S, transient: bool = False
) -> Iterator[tuple[ProgressCallback, IngestProgress]]:
    """Show an ingest's progress on ``console`` while the context runs; yields the callback to
    pass to the engine and the counts it keeps.

    On a terminal: a ``files`` bar (parsed of total) and a ``chunks`` bar (committed of the
    chunks expected, with the ETA from the measured embedding rate), and a ``BM25
    re-weighted`` bar once the run re-weights earlier chunks (after its last commit, see
    :meth:`~ragstrata.index.writer.IndexWriter.reweight`); ``transient`` clears them
    at the end. Elsewhere: :meth:`IngestProgress.line` every ``every_s`` seconds from a
    background thread, so a long embedding call still shows that the ingest is alive
    and one last line at the end when any was printed (``every_s`` <= 0: no lines).
    """
    state = IngestProgress()
    if console.is_terminal:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _EtaColumn(),
            console=console,
            transient=transient,
        ) as bar:
            files = bar.add_task("files parsed", total=None)
            chunks = bar.add_task("chunks committed", total=None, eta=True)
            reweighted: list[TaskID] = []  # its bar appears with the first re-weight event

            def on_event(event: str, done: int, total: int) -> None:
                state(event, done, total)
                if event == "reweight":
                    if not reweighted:
                        reweighted.append(bar.add_task("BM25 re-weighted", total=total))
                    bar.update(reweighted[0], completed=done, total=total)
                    return
                unchanged = state.files_unchanged
                bar.update(
                    files,
                    completed=state.files_parsed,
                    total=state.files_total,
                    description="files parsed" + (f" ({unchanged} unchanged)" if unchanged else ""),
                )
                expected = state.chunks_expected
                bar.update(
                    chunks,
                    completed=state.chunks_committed,
                    total=expected,
                    description="chunks committed"
                    + ("" if state.parsing_done else " (total est.)"),
                )

            yield on_event, state
        return
    stop = threading.Event()

    printed = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(every_s):
            console.print(state.line(), markup=False, highlight=False)
            printed.set()

    thread = threading.Thread(target=heartbeat, name="ragstrata-progress", daemon=True)
    if every_s > 0:
        thread.start()
    try:
        yield state, state
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        if printed.is_set():  # a log that showed progress also shows where it ended
            console.print(state.line(), markup=False, highlight=False)
