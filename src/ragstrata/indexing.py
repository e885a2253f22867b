"""The file side of ``ingest``: paths -> discovered files -> files whose bytes changed -> parsed
documents, streamed from worker processes into the engine's
:class:`~ragstrata.index.writer.IndexWriter` (see :meth:`ragstrata.pipeline.Ragstrata.ingest`).

Failed files are remembered: a parse failure is sent on with the file's ``doc_id`` and a
``retry_key`` (its SHA-256 and the parser limits), which the writer records in the manifest; the
next run reports a file whose record matches (same bytes, limits and index signature) as failed
again, ``unchanged``, without parsing it. A changed file, new limits, a new parser version or
``retry_failed`` parse it again. Not remembered: failures found without reading the file
(discovery, RS204 too large) or that say nothing about its bytes (RS205 unreadable).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragstrata.config import IngestConfig
from ragstrata.errors import (
    ConfigError,
    IngestError,
    SourceNotFoundError,
    StoreError,
    UnsupportedFormatError,
)
from ragstrata.index import catalog
from ragstrata.index.report import ProgressCallback, matching_documents, sources_under
from ragstrata.index.writer import file_sha256, skip_unchanged_files
from ragstrata.optional import require
from ragstrata.paths import path_text
from ragstrata.types import Document, IngestFailure


@dataclass(frozen=True, slots=True)
class ParsedPaths:
    """What :func:`parse_paths` found: ``documents`` yields the discovery failures, then each
    file's document (or failure) as its worker finishes, ``total`` items in all.
    ``skipped`` files were left unparsed (unchanged), ``bytes_read`` is the size of the others;
    files that failed before and did not change are among the failures, ``unchanged``.
    ``gone(source)`` says whether an indexed source lies under the paths but discovery no
    longer finds it, as a file that no longer exists or that the rules now leave out (what
    ``prune`` removes); a file discovery reported as an error is kept."""

    documents: Iterator[Document | IngestFailure]
    total: int
    skipped: int
    bytes_read: int
    gone: Callable[[str], bool]


def _within_index(path: Path, index_dir: Path) -> bool:
    """Whether ``path`` is ``index_dir`` or lies inside it (both resolved; False when either
    cannot be resolved)."""
    try:
        return path.resolve().is_relative_to(index_dir.resolve())
    except (OSError, RuntimeError):
        return False


@contextmanager
def parse_paths(
    paths: Sequence[Path],
    *,
    config: IngestConfig,
    index_dir: Path,
    signature: Callable[[], str],
    progress: ProgressCallback | None = None,
    retry_failed: bool = False,
) -> Iterator[ParsedPaths]:
    """Discover the files under ``paths`` and parse those that changed since the index at
    ``index_dir`` (its documents under the index signature ``signature()``, see
    :func:`~ragstrata.index.writer.skip_unchanged_files`) in worker processes; the workers
    stop when the context exits, also on an error. Files whose last ingest failed and that did
    not change are reported as failed again without being parsed, unless ``retry_failed``
    (see the module docstring).

    Raises SourceNotFoundError when none of ``paths`` exists (a missing path among existing
    ones is reported as a failure), ConfigError when one is the index or inside it,
    UnsupportedFormatError (RS201) when no supported file is found under them and there is no
    index at ``index_dir`` yet (an empty index would be created), MissingDependencyError
    without the ``ingest`` extra; all before anything is read or written.
    """
    from ragstrata.ingest.loader import discover, source_for
    from ragstrata.ingest.pool import auto_workers, load_many

    missing = [p for p in paths if not os.path.lexists(p)]
    if missing and len(missing) == len(paths):
        raise SourceNotFoundError(
            ", ".join(path_text(p) for p in missing),
            "no such file or directory; nothing was ingested (no index was created or changed)"
            + _still_indexed(index_dir, missing),
        )
    built = (index_dir / catalog.MANIFEST).exists()  # else a folder of documents: RS500 later
    inside = [p for p in paths if built and _within_index(Path(p), index_dir)]
    if inside:  # trial 24: `watch idx --index idx` synced nothing, silently
        raise ConfigError(
            f"{', '.join(path_text(p) for p in inside)} is the index ({path_text(index_dir)}) "
            "or a folder inside it, not documents: name the folder of your documents (the "
            "index is where --index or RAGSTRATA_INDEX put it)"
        )
    require("markdown_it", extra="ingest", package="markdown-it-py")
    require("selectolax", extra="ingest")
    files, errors = discover(list(paths), follow_symlinks=config.follow_symlinks)
    if missing:  # review 45: one root of several gone said no more than "no such file"
        # discovery names a missing root made absolute; the hint shows it as it was written
        hints = {_reported_path(p): _still_indexed(index_dir, [p]) for p in missing}
        errors = [
            SourceNotFoundError(e.path, e.reason + hint)
            if isinstance(e, SourceNotFoundError) and (hint := hints.get(_reported_path(e.path)))
            else e
            for e in errors
        ]
    if not files and not (index_dir / catalog.MANIFEST).exists():
        raise nothing_to_ingest(paths, errors)
    present = {source_for(p) for p in files}  # sources are text: see ragstrata.paths
    workers = auto_workers() if config.workers < 0 else config.workers
    files, skipped = skip_unchanged_files(index_dir, files, signature=signature)
    if progress and skipped:
        progress("unchanged", skipped, skipped)
    known: list[IngestFailure] = []
    if not retry_failed:
        files, known = _known_failures(index_dir, files, signature=signature, config=config)
    files, sizes = smallest_first(files)
    # a file over max_file_bytes is refused on its size, at no parsing cost: counted, it made
    # the estimated total hours for a run of seconds (trial 48: ETA 2:34:43, done in 52 s)
    sizes = [size if size <= config.max_file_bytes else 0 for size in sizes]
    total_bytes = sum(sizes)

    # the parser processes start now, beside the store and the embedder being opened
    loaded = load_many(
        files,
        max_file_bytes=config.max_file_bytes,
        workers=workers,
        timeout_s=config.parse_timeout_s,
        max_memory_mb=config.max_worker_memory_mb,
    )

    def load_all() -> Iterator[Document | IngestFailure]:
        for err in errors:
            yield IngestFailure(err.path, err.code, err.reason)
        yield from known
        done = 0
        for path, item, size in zip(files, loaded, sizes, strict=True):
            done += size
            if progress:
                progress("bytes", done, total_bytes)
            yield _remembered(path, item, config) if isinstance(item, IngestFailure) else item

    # in the form of indexed sources: a name's non-UTF-8 bytes as \xNN escapes (path_text)
    roots = [Path(path_text(p.resolve())) for p in paths]

    reported = [Path(path_text(_reported_path(e.path))) for e in errors]

    def gone(source: str) -> bool:
        # not found by this discovery: the file is gone, or the rules now leave it out (a
        # Confluence export's attachments/ once its index.html is back: they stayed in the
        # index for good, neither unchanged nor pruned); a file discovery reported, or any
        # file under a folder it reported (one it could not list), is not pruned for it
        path = Path(source)
        under = any(path == r or path.is_relative_to(r) for r in roots)
        return (
            under
            and source not in present
            and not any(path == r or path.is_relative_to(r) for r in reported)
        )

    if progress:
        progress("discover", len(files), len(files))
    try:
        total = len(files) + len(errors) + len(known)
        yield ParsedPaths(load_all(), total, skipped, total_bytes, gone)
    finally:
        loaded.close()  # stops the parser processes, also when indexing failed


def _still_indexed(index_dir: Path, missing: Sequence[Path]) -> str:
    """A hint for paths that do not exist: how many indexed documents lie under them and the
    command that removes them (``ingest --prune`` cannot: it prunes under existing paths,
    review 27); ``""`` when none does or there is no readable index."""
    try:
        manifest = catalog.read_manifest(index_dir)
    except StoreError:
        return ""
    under = len(matching_documents(manifest, sources_under(missing)))
    if not under:
        return ""
    shown = " ".join(path_text(p) for p in missing)
    if under == 1:
        return (
            "; 1 indexed document came from there and stays searchable: "
            f"`ragstrata forget {shown}` removes it"
        )
    return (
        f"; {under} indexed documents came from there and stay searchable: "
        f"`ragstrata forget {shown}` removes them"
    )


def _reported_path(path: str | Path) -> Path:
    """A path discovery reported, as indexed sources name files (resolved); a path that does
    not resolve (a symbolic link loop raises RuntimeError on Python 3.11 and 3.12) is taken
    as written, made absolute."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def nothing_to_ingest(
    paths: Sequence[Path],
    errors: Sequence[IngestError | IngestFailure],
    *,
    index_exists: bool = False,
) -> IngestError:
    """The error (RS201) of an ingest that found no supported file under ``paths``, naming
    them and the first entries that were skipped (``errors``: discovery's, or a run's
    failures); ``index_exists``: the paths held nothing the existing index has either, so it
    is unchanged (else no index was created)."""
    from ragstrata.ingest.loader import FORMATS

    known = ", ".join(sorted(FORMATS))
    # files of a supported type were found but skipped (a FIFO, links leaving the paths):
    # "no supported files" would send the user looking for the wrong cause; hidden files are
    # skipped on purpose and do not count
    readable = [e for e in errors if Path(e.path).suffix.lower() in FORMATS and e.code != "RS211"]
    if readable:
        reason = "no file could be read; nothing was ingested"
    else:
        reason = f"no supported files found (extensions: {known}); nothing was ingested"
    reason += " (the index is unchanged)" if index_exists else " (no index was created)"
    if errors:
        shown = "; ".join(f"{e.path}: [{e.code}] {e.reason}" for e in errors[:3])
        more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
        reason += f"; {len(errors)} skipped: {shown}{more}"
    where = ", ".join(path_text(p) for p in paths)
    return UnsupportedFormatError(where, reason)


_NOT_REMEMBERED = frozenset({"RS204", "RS205"})
"""Failure codes not worth remembering: found by a ``stat`` alone (too large), or saying
nothing about the file's bytes (unreadable: permissions, a race). Nor is a parser process
that died (RS200 with :data:`~ragstrata.ingest.pool.CRASH_REASON`: the out-of-memory killer or
a script without its ``__main__`` guard is as likely a cause as the file; remembered, it was
reported again while the file stayed the same, until ``--retry-failed``, after its cause was
gone: review 36); a parser that raised on the file (RS200 ``parser failed: ...``) is."""


def _crashed(code: str, reason: str) -> bool:
    """Whether a failure is a parser process that died (:data:`_NOT_REMEMBERED`)."""
    from ragstrata.ingest.pool import CRASH_REASON

    return code == "RS200" and reason.startswith(CRASH_REASON)


def _retry_key(file_hash: str, config: IngestConfig) -> str:
    """What a parse failure depends on besides the index signature: the file's bytes and the
    parser limits (hex SHA-256, opaque)."""
    limits = f"{config.max_file_bytes}|{config.parse_timeout_s}|{config.max_worker_memory_mb}"
    return hashlib.sha256(f"{file_hash}|{limits}".encode()).hexdigest()


def _remembered(path: Path, failure: IngestFailure, config: IngestConfig) -> IngestFailure:
    """``failure`` of the parsed file ``path`` with the ``doc_id`` and ``retry_key`` the writer
    records it under (and its path as the document's source), when it is worth remembering."""
    from ragstrata.ingest.loader import doc_id_for, source_for

    if failure.code in _NOT_REMEMBERED or _crashed(failure.code, failure.reason):
        # not recorded (no retry key), but named: a version indexed before stays searchable,
        # and the report says so (review 27: RS204/RS205 lacked the note RS202/RS203 have)
        return dataclasses.replace(failure, doc_id=doc_id_for(path))
    file_hash = file_sha256(path)
    if not file_hash:
        return failure
    return dataclasses.replace(
        failure,
        path=source_for(path),
        doc_id=doc_id_for(path),
        retry_key=_retry_key(file_hash, config),
    )


def _known_failures(
    index_dir: Path, files: list[Path], *, signature: Callable[[], str], config: IngestConfig
) -> tuple[list[Path], list[IngestFailure]]:
    """Split ``files`` into those to parse and the failures recorded in the index at
    ``index_dir`` for files that did not change since (same bytes, limits and ``signature()``),
    reported again as ``unchanged``. Without a readable manifest and journal nothing is split
    off."""
    from ragstrata.ingest.loader import doc_id_for

    try:
        manifest = catalog.read_manifest(index_dir)
    except StoreError:
        return files, []
    if not manifest.failures or catalog.read_journal(index_dir) == []:
        return files, []
    wanted = signature()
    keep: list[Path] = []
    known: list[IngestFailure] = []
    for path in files:
        doc_id = doc_id_for(path)
        entry = manifest.failures.get(doc_id)
        # a crash recorded by an earlier version is tried again (_NOT_REMEMBERED)
        if (
            entry is not None
            and entry.signature == wanted
            and not _crashed(entry.code, entry.reason)
        ):
            file_hash = file_sha256(path)
            if file_hash and entry.retry_key == _retry_key(file_hash, config):
                reason = f"unchanged since last failure ({entry.failed_at}): {entry.reason}"
                known.append(
                    IngestFailure(
                        entry.path,
                        entry.code,
                        reason,
                        doc_id=doc_id,
                        retry_key=entry.retry_key,
                        unchanged=True,
                    )
                )
                continue
        keep.append(path)
    return keep, known


def smallest_first(files: Sequence[Path]) -> tuple[list[Path], list[int]]:
    """``files`` in ascending size (bytes; ties keep their discovery order) and their sizes.

    Documents are parsed, embedded and committed in this order, so a folder's small files
    become searchable first: one 15 MB one-line text file (5,301 chunks, about 12 minutes of
    embedding here) listed first kept every other file of its folder out of the index until it
    was done. Shortest job first also gives the least mean time until a file is searchable
    (a classic scheduling result); the run's total time does not change. The order does not
    change the index: chunk ids are content hashes, and BM25 weights that an early commit
    computed with a shorter average chunk length are recomputed at the end of the run
    (:meth:`~ragstrata.index.writer.IndexWriter.reweight`; before it existed, this order moved
    held-out BM25 rankings: React ES->ES BM25 hit@5 1.0 -> 0.95)."""
    sizes = [_size(p) for p in files]
    order = sorted(range(len(files)), key=lambda i: sizes[i])
    return [files[i] for i in order], [sizes[i] for i in order]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
