"""The file side of ``ingest``: paths -> discovered files -> files whose bytes changed -> parsed
documents, streamed from worker processes into the engine's
:class:`~ragstrata.index.writer.IndexWriter` (see :meth:`ragstrata.pipeline.Ragstrata.ingest`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragstrata.config import IngestConfig
from ragstrata.errors import SourceNotFoundError
from ragstrata.index.writer import ProgressCallback, skip_unchanged_files
from ragstrata.optional import require
from ragstrata.paths import path_text
from ragstrata.types import Document, IngestFailure


@dataclass(frozen=True, slots=True)
class ParsedPaths:
    """What :func:`parse_paths` found: ``documents`` yields the discovery failures, then each
    file's document (or failure) as its worker finishes, ``total`` items in all.
    ``skipped`` files were left unparsed (unchanged), ``bytes_read`` is the size of the others.
    ``gone(source)`` says whether an indexed source lies under the paths but no longer exists
    (what ``prune`` removes)."""

    documents: Iterator[Document | IngestFailure]
    total: int
    skipped: int
    bytes_read: int
    gone: Callable[[str], bool]


@contextmanager
def parse_paths(
    paths: Sequence[Path],
    *,
    config: IngestConfig,
    index_dir: Path,
    signature: Callable[[], str],
    progress: ProgressCallback | None = None,
) -> Iterator[ParsedPaths]:
    """Discover the files under ``paths`` and parse those that changed since the index at
    ``index_dir`` (its documents under the index signature ``signature()``, see
    :func:`~ragstrata.index.writer.skip_unchanged_files`) in worker processes; the workers
    stop when the context exits, also on an error.

    Raises SourceNotFoundError when none of ``paths`` exists (a missing path among existing
    ones is reported as a failure), MissingDependencyError without the ``ingest`` extra; both
    before anything is read or written.
    """
    from ragstrata.ingest.loader import discover, source_for
    from ragstrata.ingest.pool import auto_workers, load_many

    missing = [p for p in paths if not os.path.lexists(p)]
    if missing and len(missing) == len(paths):
        raise SourceNotFoundError(
            ", ".join(path_text(p) for p in missing),
            "no such file or directory; nothing was ingested (no index was created or changed)",
        )
    require("markdown_it", extra="ingest", package="markdown-it-py")
    require("selectolax", extra="ingest")
    files, errors = discover(list(paths), follow_symlinks=config.follow_symlinks)
    present = {source_for(p) for p in files}  # sources are text: see ragstrata.paths
    workers = auto_workers() if config.workers < 0 else config.workers
    files, skipped = skip_unchanged_files(index_dir, files, signature=signature)
    sizes = [_size(p) for p in files]
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
        done = 0
        for item, size in zip(loaded, sizes, strict=True):
            done += size
            if progress:
                progress("bytes", done, total_bytes)
            yield item

    roots = [p.resolve() for p in paths]

    def gone(source: str) -> bool:
        path = Path(source)
        under = any(path == r or path.is_relative_to(r) for r in roots)
        return under and source not in present and not path.exists()

    if progress:
        progress("discover", len(files), len(files))
    try:
        yield ParsedPaths(load_all(), len(files) + len(errors), skipped, total_bytes, gone)
    finally:
        loaded.close()  # stops the parser processes, also when indexing failed


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
