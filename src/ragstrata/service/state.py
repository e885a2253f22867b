"""The state every route shares (:class:`ServiceState`), built once per app by
:func:`build_state`: API keys, rate limiter, tenants' collections, ingestion jobs, metrics."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.embed.base import Embedder
from ragstrata.errors import ConfigError, RagError
from ragstrata.pipeline import Ragstrata
from ragstrata.service.jobs import JOBS_FILE, Job, JobLog, JobManager
from ragstrata.service.keys import KEYS_FILE, KeyStore
from ragstrata.service.metrics import ServiceMetrics
from ragstrata.service.ratelimit import KeyRateLimiter
from ragstrata.service.tenancy import Collection, TenantRegistry
from ragstrata.stages import load_generator


@dataclass(frozen=True, slots=True)
class ServiceState:
    """Everything the routes share; built once by :func:`create_app`."""

    config: RagConfig
    data_dir: Path
    keys: KeyStore
    limiter: KeyRateLimiter
    registry: TenantRegistry
    jobs: JobManager
    metrics: ServiceMetrics
    data_lock: IO[str] | None = None

    def close(self) -> None:
        """Stop running slices at their next group of chunks embedded, cancel what is left,
        close every collection and release the data directory (idempotent)."""
        self.jobs.shutdown()
        self.registry.close()
        if self.data_lock is not None and not self.data_lock.closed:
            self.data_lock.close()  # closing the file releases its flock


LOCK_FILE = "serve.lock"
"""The data directory's lock file: held by one service for its life, it names its process."""


def claim_data_dir(data_dir: Path) -> IO[str]:
    """Hold ``data_dir/serve.lock`` (an exclusive ``flock``) and write this process's id in
    it; the returned file holds the lock until it is closed. Taken before anything in
    ``data_dir`` is touched: a second service on the same directory would delete the first
    one's staged uploads and mark its queued and running jobs failed (review 33), then share
    its job records and take its collections' locks.

    Raises:
        ConfigError: another service holds the directory (its process id named).
    """
    import fcntl

    handle = open(data_dir / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 - held
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.seek(0)
        other = handle.read().strip() or "unknown"
        handle.close()
        raise ConfigError(
            f"another ragstrata serve (process {other}) already serves the data directory "
            f"{data_dir}; stop it, or give this one another --data-dir"
        ) from exc
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def build_state(
    config: RagConfig, *, embedder: Embedder | None = None, data_dir: Path | None = None
) -> ServiceState:
    """The service's shared state over ``data_dir`` (default ``config.service`` data path),
    which it holds (:func:`claim_data_dir`) until :meth:`ServiceState.close`. Nothing is loaded
    yet: the embedder loads on the first search or upload.

    Raises:
        ConfigError: another service holds ``data_dir``; nothing in it was touched.
    """
    svc = config.service
    root = (data_dir or svc.data_path(config.home)).resolve()
    root.mkdir(parents=True, exist_ok=True)
    lock = claim_data_dir(root)
    try:
        return _build(config, root, embedder, lock)
    except BaseException:
        lock.close()
        raise


def _build(config: RagConfig, root: Path, embedder: Embedder | None, lock: IO[str]) -> ServiceState:
    svc = config.service
    shutil.rmtree(root / "staging", ignore_errors=True)  # uploads whose job died with the server
    if (
        embedder is None
    ):  # one model for every collection: `auto` means the default (not loaded yet)
        name = resolve_embedder_name(config.embedder.name, None)
        model_config = replace(config, embedder=replace(config.embedder, name=name))
    shared = embedder if embedder is not None else Ragstrata(model_config).embedder

    def violation(tenant: str, collection: str) -> None:
        metrics.tenancy_violations.inc()

    registry = TenantRegistry(
        root,
        config=config,
        embedder=shared,
        read_wait_s=svc.read_wait_s,
        on_violation=violation,
        # one LLM for every collection (cheap to construct; the model loads on first use)
        generator=load_generator(config.llm),
    )

    def finished(job: Job, collection: Collection | None) -> None:
        metrics.jobs.labels(job.state).inc()
        for outcome in [*job.rejected, *job.outcomes]:
            metrics.files.labels(outcome.status).inc()

    def failed(collection: Collection) -> None:
        # a failed first upload must not leave an empty collection that reserves its name
        registry.discard_if_empty(
            collection, busy=lambda: jobs.busy(collection.tenant, collection.name)
        )

    jobs = JobManager(
        workers=svc.ingest_workers,
        batch_files=svc.ingest_batch_files,
        max_per_tenant=svc.max_jobs_per_tenant,
        log=JobLog(root / JOBS_FILE),
        on_finish=finished,
        on_failed=failed,
        held=registry.held_outcomes,
        settle=registry.settle_interrupted,
    )

    def counts() -> Iterable[tuple[str, str, int, int]]:
        for coll in registry.opened():
            try:
                docs, chunks = coll.counts()
            except RagError:  # unreadable manifest: skip it in this scrape
                continue
            yield coll.tenant, coll.name, docs, chunks

    metrics = ServiceMetrics(counts=counts, active_jobs=jobs.active)
    return ServiceState(
        config=config,
        data_dir=root,
        keys=KeyStore(
            root / KEYS_FILE,
            failure_rate_per_s=svc.auth_failure_rate_per_s,
            failure_burst=svc.auth_failure_burst,
        ),
        limiter=KeyRateLimiter(rate=svc.rate_limit_per_s, burst=svc.rate_limit_burst),
        registry=registry,
        jobs=jobs,
        metrics=metrics,
        data_lock=lock,
    )
