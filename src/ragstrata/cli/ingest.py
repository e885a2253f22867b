"""The index-keeping commands: ``ingest`` (one pass), ``watch`` (kept in step with folders),
``forget`` (documents removed by path) and ``stats`` (what the index holds)."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragstrata.cli.common import (
    EXIT_PARTIAL,
    _engine,
    _fail,
    _term,
    _warn_memory,
    err,
    out,
    output_file,
    write_output,
)
from ragstrata.cli.options import ConfigOpt, IndexOpt, JsonOpt
from ragstrata.cli.progress import DEFAULT_PROGRESS_EVERY_S, IngestProgress, show_progress
from ragstrata.config import RagConfig
from ragstrata.errors import IndexNotFoundError, RagError
from ragstrata.paths import display_path

if TYPE_CHECKING:
    from ragstrata.types import IngestFailure, IngestWarning


def _print_failure(failure: IngestFailure) -> None:
    """The ``skipped`` line of a rejected file (stderr)."""
    err.print(
        f"[yellow]skipped[/] {escape(_term(failure.path))}: "
        f"{escape(f'[{failure.code}]')} {escape(_term(failure.reason))}",
        highlight=False,
    )


def _print_warning(warning: IngestWarning) -> None:
    """The ``warning`` line of a file ingested with a caveat (stderr)."""
    where, what = escape(_term(warning.path)), escape(_term(warning.message))
    err.print(f"[yellow]warning[/] {where}: {what}", highlight=False)


SOURCES_SHOWN = 10
"""Sources named one per line under a pruned or stale count; the rest are in ``--json``."""


def _print_sources(label: str, sources: list[str]) -> None:
    """One ``label PATH`` line per source (stderr), at most :data:`SOURCES_SHOWN`."""
    for source in sources[:SOURCES_SHOWN]:
        err.print(f"  {label} {escape(_term(source))}", highlight=False)
    if len(sources) > SOURCES_SHOWN:
        err.print(f"  ... and {len(sources) - SOURCES_SHOWN} more (--json lists them all)")


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``docker stop``, systemd) raised in the main thread: the same clean
    stop as Ctrl-C (workers stopped, no leaked semaphores), exit status 143."""


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`_Terminated` in the main thread (elsewhere: no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: object) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(done: IngestProgress, *, terminated: bool = False) -> typer.Exit:
    """Say what an ingest stopped by Ctrl-C (exit status 130, 128 + SIGINT) or SIGTERM (143)
    left behind."""
    err.print(
        f"interrupted: {done.chunks_committed} chunks committed from "
        f"{done.files_parsed} files parsed before {'SIGTERM' if terminated else 'Ctrl-C'}; "
        "every finished commit stays in the index, an unfinished one is rolled back by the "
        "next run; run the same command again to finish (unchanged files are skipped)",
        highlight=False,
    )
    return typer.Exit(143 if terminated else 130)


def ingest(
    paths: Annotated[
        list[Path],
        # readable=False: an unreadable file is reported as RS205 with the rest ingested
        typer.Argument(help="Files or folders to ingest (recursively).", readable=False),
    ],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write the JSON report to this file.")
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove indexed documents whose file is gone.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would change; write nothing.")
    ] = False,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="Parse again the files that failed before although they did not change.",
        ),
    ] = False,
    progress_every: Annotated[
        float,
        typer.Option(
            "--progress-every",
            min=0,
            help="When stderr is not a terminal (a log, CI), print a progress line every this "
            "many seconds; 0: none.",
        ),
    ] = DEFAULT_PROGRESS_EVERY_S,
) -> None:
    """Parse, chunk, embed and index documents (Markdown/MDX, HTML, Confluence, PDF, text).

    A file that failed before and did not change is reported again ("unchanged since last
    failure") without being parsed; --retry-failed parses it again.

    Exit status: 0 all indexed; 3 some files skipped (each reported with its path and RSxxx
    reason); 1 nothing indexed, an error, or no supported file found (RS201, nothing
    written); 130 interrupted (Ctrl-C), 143 stopped by SIGTERM: what was committed
    stays, the next run goes on.
    """
    from ragstrata.pipeline import WRITE_WAIT_S

    try:
        output_file(report, "--report")
        with _engine(index, config) as engine:
            try:
                with (
                    show_progress(err, every_s=progress_every, transient=json_out) as (
                        on_progress,
                        done,
                    ),
                    _sigterm_as_interrupt(),
                ):
                    result = engine.ingest(
                        paths,
                        progress=on_progress,
                        prune=prune,
                        dry_run=dry_run,
                        retry_failed=retry_failed,
                        lock_wait_s=WRITE_WAIT_S,
                    )
            except KeyboardInterrupt as exc:
                # the progress display is closed (its last line printed): what was skipped or
                # warned about so far, then the summary ends
                from ragstrata.index.writer import partial_report

                partial = partial_report(exc)
                if partial is not None:
                    for warning in partial.warnings:
                        _print_warning(warning)
                    for failure in partial.failures:
                        _print_failure(failure)
                raise _interrupted(done, terminated=isinstance(exc, _Terminated)) from None
            try:
                stats = engine.stats()
            except IndexNotFoundError:  # a dry run on a new index writes nothing
                stats = {"index": str(engine.index_dir), "documents": 0, "chunks": 0}
                stats["size_bytes"] = 0
        hidden_only = all(f.code == "RS211" for f in result.failures)
        if not (result.documents or result.pruned or result.stale) and hidden_only:
            # the paths held no supported file (hidden ones are skipped on purpose: review
            # 46) and none the index had (trial 43: exit 0 and a warning once an index
            # existed, RS201 and exit 1 before it: a script pointed at a wrong folder could
            # not tell)
            from ragstrata.indexing import nothing_to_ingest

            raise nothing_to_ingest(paths, result.failures, index_exists=True)
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    data = result.to_json() | {"index": stats}
    if report is not None:
        # paths are text already (ragstrata.paths); backslashreplace is the last guard
        write_output(report, json.dumps(data, indent=2, ensure_ascii=False), "--report")
    if json_out:
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        out.print(
            f"[bold]{result.status}[/]{' (dry run)' if dry_run else ''}: {result.added} added, "
            f"{result.updated} updated, {result.unchanged} unchanged, {result.pruned} pruned"
            + (f", {result.reindexed} re-indexed (new configuration)" if result.reindexed else "")
            + f"; {_count(result.chunks, 'chunk')} written ({result.embedded} embedded) "
            + (
                f"and BM25 weights of {_count(result.reweighted, 'chunk')} updated "
                if result.reweighted
                else ""
            )
            + f"in {result.seconds:.1f}s; "
            f"index has {_count(stats['documents'], 'document')}, "
            f"{_count(stats['chunks'], 'chunk')} "
            f"({stats['size_bytes'] / 1e6:.1f} MB) at {escape(_term(str(stats['index'])))}"
        )
        if result.stale:
            err.print(
                f"note: {_count(result.stale, 'indexed document')} from files that no longer "
                "exist under these paths (or that ingest now leaves out) "
                + ("is" if result.stale == 1 else "are")
                + " still searched and cited; add --prune to remove "
                + ("it" if result.stale == 1 else "them")
                + ":",
                highlight=False,
            )
            _print_sources("gone:", result.stale_sources)
        _print_sources("would prune:" if dry_run else "pruned:", result.pruned_sources)
        for warning in result.warnings:
            _print_warning(warning)
        for failure in result.failures:
            _print_failure(failure)
    if result.status != "ok":
        raise typer.Exit(EXIT_PARTIAL if result.status == "partial" else 1)


def watch(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Folders (or files) to keep indexed.", readable=False),
    ],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per sync (JSON Lines).")
    ] = False,
    debounce_ms: Annotated[
        int,
        typer.Option(
            "--debounce-ms",
            min=0,
            max=3_600_000,  # ragstrata.watch.MAX_DEBOUNCE_MS (imported lazily)
            help="Quiet time after the last change before a batch is synced (milliseconds).",
        ),
    ] = 300,
    once: Annotated[
        bool, typer.Option("--once", help="Sync once (ingest with prune) and exit.")
    ] = False,
) -> None:
    """Keep the index in step with folders: added, changed, renamed and deleted files are
    synced in batches (ingest --prune, journaled commits), one line per batch, until Ctrl-C."""
    import threading

    from ragstrata.watch import FolderWatcher, SyncOutcome, stop_on_signals

    reported: set[tuple[str, str]] = set()

    def show(outcome: SyncOutcome) -> None:
        report = outcome.report
        failures = report.failures if report is not None else []
        if json_out:
            data: dict[str, Any] = {
                "event": "sync",
                "sync": outcome.number,
                "changes": outcome.changes,
                "state": outcome.state,
                "seconds": round(outcome.seconds, 3),
                "index": {"documents": outcome.documents, "chunks": outcome.chunks},
            }
            if report is not None:
                data["report"] = report.to_json()
            if outcome.error is not None:
                data["error"] = {"code": outcome.error.code, "message": str(outcome.error)}
            print(json.dumps(data, ensure_ascii=False), flush=True)
        else:
            what = "initial sync" if outcome.number == 1 else _count(outcome.changes, "change")
            stamp = time.strftime("%H:%M:%S")
            if report is not None:
                counts = (
                    f"{report.added} added, {report.updated} changed, {report.pruned} removed, "
                    f"{len(failures)} failed"
                    + (f", {report.reindexed} re-indexed" if report.reindexed else "")
                )
            else:
                counts = outcome.state
            out.print(
                f"{stamp} sync {outcome.number} ({what}): {counts} in {outcome.seconds:.2f}s; "
                f"index has {_count(outcome.documents, 'document')}, "
                f"{_count(outcome.chunks, 'chunk')}",
                highlight=False,
            )
            if outcome.error is not None:
                err.print(
                    f"[yellow]sync failed[/] {escape(_term(str(outcome.error)))}"
                    + ("; retrying" if outcome.error.code == "RS503" else ""),
                    highlight=False,
                )
        # each rejected file once while it stays rejected, not on every sync
        now = {(f.path, f.code) for f in failures}
        if not json_out:
            for failure in failures:
                if (failure.path, failure.code) not in reported:
                    _print_failure(failure)
            for warning in report.warnings if report is not None else []:
                _print_warning(warning)  # files parsed in this sync only
        if report is not None:
            reported.clear()
            reported.update(now)

    try:
        cfg = _warn_memory(RagConfig.load(config_file=config).with_index(index))
        watcher = FolderWatcher(paths, config=cfg, debounce_ms=debounce_ms)
        if once:
            outcome = watcher.sync()
            show(outcome)
            if outcome.error is not None:
                raise _fail(outcome.error)
            if outcome.report is not None and outcome.report.status != "ok":
                raise typer.Exit(EXIT_PARTIAL if outcome.report.status == "partial" else 1)
            return
        if not json_out:
            err.print(
                f"watching {len(paths)} path(s) for index {escape(_term(str(cfg.index_path)))}; "
                "Ctrl-C to stop",
                highlight=False,
            )
        with stop_on_signals(threading.Event()) as stop:
            for outcome in watcher.run(stop):
                show(outcome)
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    if json_out:
        print(json.dumps({"event": "stopped"}), flush=True)
    else:
        err.print("stopped; the index lock is released", highlight=False)


def forget(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Files or folders as they were ingested; they need not exist any more."
        ),
    ],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be removed; change nothing.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Remove documents from the index by path: a file, or every document under a folder,
    whether or not it still exists (a folder moved, renamed or deleted, a link that now points
    elsewhere). The files themselves are not touched; ingesting them again adds them back.

    ``ingest --prune`` removes only what is gone from under the paths it is given, so the
    documents of a folder that no longer exists had no way out from the command line (review
    27). Each path matches the indexed sources equal to it or under it, read from the working
    directory as written and with links resolved; a path that matches none is RS205 and
    nothing is removed.
    """
    from ragstrata.errors import SourceNotFoundError
    from ragstrata.index.report import matching_documents, sources_under

    try:
        with _engine(index, config) as engine:
            manifest = engine.manifest()
            chosen: dict[str, str] = {}
            for raw in paths:
                found = matching_documents(manifest, sources_under([raw]))
                if not found:
                    raise SourceNotFoundError(
                        raw,
                        "no indexed document is this file or under this folder; nothing was "
                        "removed (`search --json` shows the indexed sources)",
                    )
                chosen.update(found)
            removed = 0 if dry_run else engine.delete(sorted(chosen))
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    sources = sorted(chosen.values())
    if json_out:
        print(json.dumps({"dry_run": dry_run, "removed": removed, "sources": sources}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    out.print(f"{verb} {_count(len(sources), 'document')}:", highlight=False)
    for source in sources:
        out.print(f"  {escape(_term(source))}", highlight=False)


def stats(
    index: IndexOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    documents: Annotated[
        bool,
        typer.Option(
            "--documents",
            help="Also list each indexed document (path, chunks, title) and each file that "
            "failed and is remembered (path, error code, reason).",
        ),
    ] = False,
) -> None:
    """Show what the index holds."""
    try:
        engine = _engine(index, config)
        data = engine.stats()
        listing = engine.listing() if documents else None
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    if json_out:
        if listing is not None:
            data["document_list"] = listing["documents"]
            data["failures"] = listing["failures"]
        print(json.dumps(data, indent=2))
        return
    bm25 = data["bm25"]
    lines = [
        f"index:     {_term(data['index'])}",
        f"documents: {data['documents']}"
        + (
            f" ({data['partial_documents']} only partly indexed: run ingest on them again)"
            if data.get("partial_documents")
            else ""
        )
        + (
            f" ({data['stale_analyzer_documents']} indexed with an older BM25 analyzer, found by "
            "dense search only: run ingest on their paths again)"
            if data.get("stale_analyzer_documents")
            else ""
        ),
        f"chunks:    {data['chunks']}",
        f"embedder:  {data['embedder']} (dim {data['dim']})",
        f"analyzer:  {data['analyzer']}",
        f"chunker:   {data['chunker']}",
        f"bm25:      k1={bm25['k1']} b={bm25['b']} avgdl={bm25['avgdl']}",
        f"size:      {data['size_bytes'] / 1e6:.1f} MB",
    ]
    out.print("\n".join(lines), highlight=False)
    if listing is None:
        return
    out.print(f"\n{_count(len(listing['documents']), 'document')}:", highlight=False)
    for doc in listing["documents"]:
        partial = "" if doc["complete"] else ", only partly indexed"
        out.print(
            f"  {escape(_term(display_path(doc['source'])))} "
            f"({_count(doc['chunks'], 'chunk')}{partial}) {escape(_term(doc['title']))}",
            highlight=False,
        )
    if listing["failures"]:
        out.print(f"\n{_count(len(listing['failures']), 'failed file')}:", highlight=False)
    for failure in listing["failures"]:
        out.print(
            f"  {escape(_term(display_path(failure['path'])))}: [{failure['code']}] "
            f"{escape(_term(failure['reason']))}",
            highlight=False,
        )


def _count(n: int, noun: str) -> str:
    """``"1 document"``, ``"2 documents"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
