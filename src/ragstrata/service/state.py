"""The state every route shares (:class:`ServiceState`), built once per app by
:func:`build_state`: API keys, rate limiter, tenants' collections, ingestion jobs, metrics."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.embed.base import Embedder
from ragstrata.errors import RagError
from ragstrata.pipeline import Ragstrata
from ragstrata.service.jobs import Job, JobManager
from ragstrata.service.keys import KEYS_FILE, KeyStore
from ragstrata.service.metrics import ServiceMetrics
from ragstrata.service.ratelimit import KeyRateLimiter
from ragstrata.service.tenancy import TenantRegistry


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

    def close(self) -> None:
        """Finish running jobs, cancel queued ones and close every collection (idempotent)."""
        self.jobs.shutdown()
        self.registry.close()


def build_state(
    config: RagConfig, *, embedder: Embedder | None = None, data_dir: Path | None = None
) -> ServiceState:
    """The service's shared state over ``data_dir`` (default ``config.service`` data path).
    Nothing is loaded yet: the embedder loads on the first search or upload."""
    svc = config.service
    root = (data_dir or svc.data_path(config.home)).resolve()
    root.mkdir(parents=True, exist_ok=True)
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
        root, config=config, embedder=shared, read_wait_s=svc.read_wait_s, on_violation=violation
    )

    def finished(job: Job) -> None:
        metrics.jobs.labels(job.state).inc()
        for outcome in [*job.rejected, *job.outcomes]:
            metrics.files.labels(outcome.status).inc()

    jobs = JobManager(workers=svc.ingest_workers, on_finish=finished)

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
        keys=KeyStore(root / KEYS_FILE),
        limiter=KeyRateLimiter(rate=svc.rate_limit_per_s, burst=svc.rate_limit_burst),
        registry=registry,
        jobs=jobs,
        metrics=metrics,
    )
