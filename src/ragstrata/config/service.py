"""HTTP service settings (:class:`ServiceConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragstrata.config.checks import check_finite, check_threads
from ragstrata.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """The HTTP service (``ragstrata serve``, see docs/service.md).

    ``host``/``port``: where to listen (loopback by default); ``data_dir``: root of the keys
    file and of every tenant's collections (unset: ``<home>/service``); ``max_upload_bytes``:
    largest request body of an upload in bytes (larger gets 413); ``max_upload_files``: files
    per upload request; ``rate_limit_per_s`` / ``rate_limit_burst``: per-API-key token bucket
    (sustained requests per second, bucket size; over it gets 429 with ``Retry-After``);
    ``read_wait_s``: how long a search/ask waits for an ingest running on the same collection
    before failing with RS503 (503); ``ingest_workers``: ingestion slices run at once;
    ``ingest_batch_files``: files per slice (one ingest and commit; the scheduler goes
    round-robin across tenants between slices, so a tenant's large upload delays another's by
    one slice at most); ``max_jobs_per_tenant``: ingestion jobs a tenant may have queued or
    running (one more gets 429); ``auth_failure_rate_per_s`` / ``auth_failure_burst``: budget of
    wrong API-key secrets per key id and per client address (over it, 429 before any hashing);
    ``metrics_public``: serve ``/metrics`` without a key (default: a key with the ``metrics``
    scope is needed); ``keep_alive_s``: seconds an idle HTTP connection stays open (above a
    proxy's or client's own idle timeout, so that they never reuse a connection the server is
    closing).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None
    max_upload_bytes: int = 50_000_000
    max_upload_files: int = 100
    rate_limit_per_s: float = 20.0
    rate_limit_burst: int = 40
    read_wait_s: float = 30.0
    ingest_workers: int = 1
    ingest_batch_files: int = 4
    max_jobs_per_tenant: int = 20
    auth_failure_rate_per_s: float = 0.2
    auth_failure_burst: int = 10
    metrics_public: bool = False
    keep_alive_s: int = 75

    def __post_init__(self) -> None:
        check_finite("service", self)
        if isinstance(self.data_dir, str):  # from TOML or RAGSTRATA_SERVICE_DATA_DIR
            object.__setattr__(self, "data_dir", Path(self.data_dir) if self.data_dir else None)
        if not self.host.strip():
            raise ConfigError("service.host is empty; use e.g. '127.0.0.1' or '0.0.0.0'")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"service.port={self.port} must be in [0, 65535] (0 = any free)")
        if self.max_upload_bytes < 1:
            raise ConfigError(f"service.max_upload_bytes={self.max_upload_bytes} must be >= 1")
        if self.max_upload_files < 1:
            raise ConfigError(f"service.max_upload_files={self.max_upload_files} must be >= 1")
        if not self.rate_limit_per_s > 0:
            raise ConfigError(f"service.rate_limit_per_s={self.rate_limit_per_s} must be > 0")
        if self.rate_limit_burst < 1:
            raise ConfigError(f"service.rate_limit_burst={self.rate_limit_burst} must be >= 1")
        if self.read_wait_s < 0:
            raise ConfigError(f"service.read_wait_s={self.read_wait_s} must be >= 0 seconds")
        check_threads("service.ingest_workers", self.ingest_workers, low=1)
        if self.ingest_batch_files < 1:
            raise ConfigError(
                f"service.ingest_batch_files={self.ingest_batch_files} must be >= 1 file"
            )
        if self.max_jobs_per_tenant < 1:
            raise ConfigError(
                f"service.max_jobs_per_tenant={self.max_jobs_per_tenant} must be >= 1 job"
            )
        if not self.auth_failure_rate_per_s > 0:
            raise ConfigError(
                f"service.auth_failure_rate_per_s={self.auth_failure_rate_per_s} must be > 0"
            )
        if self.auth_failure_burst < 1:
            raise ConfigError(f"service.auth_failure_burst={self.auth_failure_burst} must be >= 1")
        if self.keep_alive_s < 1:
            raise ConfigError(f"service.keep_alive_s={self.keep_alive_s} must be >= 1 second")

    def data_path(self, home: Path) -> Path:
        """The data directory: ``data_dir``, else ``<home>/service``."""
        return self.data_dir if self.data_dir is not None else home / "service"
