"""Prometheus metrics of one app (its own registry, so several apps can live in one process).

Exposed at ``GET /metrics`` in the Prometheus text format (``prometheus-client``), to a key with
the ``metrics`` scope (or to anyone with ``service.metrics_public``):

* ``ragstrata_http_requests_total{method,route,status}`` and
  ``ragstrata_http_request_duration_seconds{method,route}`` (histogram); ``route`` is the route
  template (``/v1/collections/{name}/search``), never the raw path, so labels stay bounded;
* ``ragstrata_ingest_jobs_total{state}`` (finished jobs), ``ragstrata_ingest_jobs_active``,
  ``ragstrata_ingest_files_total{status}``;
* ``ragstrata_collection_documents{tenant,collection}`` and
  ``ragstrata_collection_chunks{tenant,collection}`` (collections opened since start);
* ``ragstrata_auth_failures_total{reason}``, ``ragstrata_rate_limited_total`` (every response
  with status 429: request rate, key-verification budget, full job queue),
  ``ragstrata_tenancy_violations_total`` (must stay 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

CollectionCounts = Callable[[], Iterable[tuple[str, str, int, int]]]
"""Yields ``(tenant, collection, documents, chunks)`` for the collections to report."""


class _Collections(Collector):
    """Documents and chunks per collection, read at scrape time."""

    def __init__(self, counts: CollectionCounts) -> None:
        self._counts = counts

    def collect(self) -> Iterable[Metric]:
        docs = GaugeMetricFamily(
            "ragstrata_collection_documents",
            "Documents indexed per collection",
            labels=["tenant", "collection"],
        )
        chunks = GaugeMetricFamily(
            "ragstrata_collection_chunks",
            "Chunks indexed per collection",
            labels=["tenant", "collection"],
        )
        for tenant, name, n_docs, n_chunks in self._counts():
            docs.add_metric([tenant, name], n_docs)
            chunks.add_metric([tenant, name], n_chunks)
        yield docs
        yield chunks


class ServiceMetrics:
    """The app's counters and histograms; ``counts`` feeds the per-collection gauges and
    ``active_jobs`` the active-jobs gauge."""

    def __init__(self, *, counts: CollectionCounts, active_jobs: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "ragstrata_http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "ragstrata_http_request_duration_seconds",
            "HTTP request latency until the response starts, by method and route template",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.jobs = Counter(
            "ragstrata_ingest_jobs", "Finished ingestion jobs by final state", ["state"], registry=r
        )
        self.files = Counter(
            "ragstrata_ingest_files", "Uploaded files by outcome", ["status"], registry=r
        )
        self.auth_failures = Counter(
            "ragstrata_auth_failures", "Requests refused with 401 or 403", ["reason"], registry=r
        )
        self.rate_limited = Counter(
            "ragstrata_rate_limited", "Requests refused with 429", registry=r
        )
        self.tenancy_violations = Counter(
            "ragstrata_tenancy_violations",
            "Results dropped because they were outside the tenant (must stay 0)",
            registry=r,
        )
        active = Gauge(
            "ragstrata_ingest_jobs_active", "Ingestion jobs queued or running", registry=r
        )
        active.set_function(lambda: float(active_jobs()))
        r.register(_Collections(counts))

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Pure ASGI middleware: counts every HTTP request and times it until its response starts
    (for a streamed answer, until the first byte)."""

    def __init__(self, app: ASGIApp, *, metrics: Callable[[], ServiceMetrics | None]) -> None:
        self.app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics = self._metrics() if scope["type"] == "http" else None
        if metrics is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                metrics.latency.labels(method, _route(scope)).observe(time.perf_counter() - started)
            await send(message)

        method = scope["method"] if scope["method"] in _METHODS else "OTHER"
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            metrics.requests.labels(method, _route(scope), str(status)).inc()
            if status == 429:  # every 429, whichever limit refused it
                metrics.rate_limited.inc()


def _route(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"
