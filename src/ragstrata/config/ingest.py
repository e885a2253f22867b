"""Ingestion settings: reading files (:class:`IngestConfig`) and cutting them into chunks
(:class:`ChunkerConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragstrata.config.checks import MAX_THREADS, check_count, check_finite, check_range
from ragstrata.errors import ConfigError

FollowSymlinks = Literal["inside", "never", "all"]
"""Which symbolic links found in a folder ``ingest`` follows (``ingest.follow_symlinks``)."""

FOLLOW_SYMLINKS: tuple[FollowSymlinks, ...] = ("inside", "never", "all")


@dataclass(frozen=True, slots=True)
class ChunkerConfig:
    """Structure-aware chunker settings.

    ``max_tokens``: upper bound on a chunk's tokens *including* its heading-path prefix and the
    model's special tokens; ``None`` means ``min(512, embedder.max_seq_length)`` so that no chunk
    is ever truncated by the embedder. ``overlap_ratio``: share of ``max_tokens`` repeated between
    consecutive chunks of one section, in [0, 0.5) (default 0.12). ``max_prefix_tokens``: the
    heading-path prefix embedded with each chunk is cut to this many tokens.
    """

    max_tokens: int | None = None
    overlap_ratio: float = 0.12
    max_prefix_tokens: int = 32

    def __post_init__(self) -> None:
        check_finite("chunker", self)
        if self.max_tokens is not None and self.max_tokens < 16:
            raise ConfigError(f"chunking.max_tokens={self.max_tokens} must be >= 16 (or unset)")
        check_range("chunking.overlap_ratio", self.overlap_ratio, 0.0, 0.5, high_open=True)
        if self.max_prefix_tokens < 0:
            raise ConfigError(f"chunking.max_prefix_tokens={self.max_prefix_tokens} must be >= 0")


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """Ingestion limits and parallelism.

    ``max_file_bytes``: larger files are rejected (reported, not fatal). ``workers``: parser
    processes beside the embedding process (-1 = auto: cores - 1, between 1 and 4; 0 = parse in
    the calling process). ``parse_timeout_s``: one file's parse time limit in seconds (worker
    processes only); a file over it is reported (RS212) and skipped. ``max_worker_memory_mb``:
    resident memory one parser process may use, in MiB (0 = no limit; otherwise >= 256); a
    file that drives its parser over it is reported (RS212), the process is replaced and the
    batch goes on (worker processes only, enforced on Linux). ``follow_symlinks``: which
    symbolic links found in a folder are followed: ``inside`` (default) those whose target lies
    under one of the paths given to ``ingest``, ``never`` none, ``all`` every one; a link not
    followed is reported (RS210), never read.
    """

    max_file_bytes: int = 20_000_000
    workers: int = -1
    parse_timeout_s: float = 600.0
    follow_symlinks: FollowSymlinks = "inside"
    max_worker_memory_mb: int = 2048

    def __post_init__(self) -> None:
        check_finite("ingest", self)
        if self.max_file_bytes < 1:
            raise ConfigError(f"ingest.max_file_bytes={self.max_file_bytes} must be >= 1")
        check_count(
            "ingest.workers",
            self.workers,
            -1,
            MAX_THREADS,
            what="-1 = auto, 0 = in this process; each worker is a process",
        )
        if self.parse_timeout_s <= 0:
            raise ConfigError(f"ingest.parse_timeout_s={self.parse_timeout_s} must be > 0")
        if self.follow_symlinks not in FOLLOW_SYMLINKS:
            raise ConfigError(
                f"ingest.follow_symlinks={self.follow_symlinks!r}; choose inside, never or all"
            )
        if self.max_worker_memory_mb != 0 and self.max_worker_memory_mb < 256:
            raise ConfigError(
                f"ingest.max_worker_memory_mb={self.max_worker_memory_mb} must be 0 (no limit) "
                "or >= 256 (MiB): a parser process needs about 100 MiB before it reads a file"
            )
