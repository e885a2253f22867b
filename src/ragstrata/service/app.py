"""The FastAPI application: ``create_app(config)`` builds it, ``ragstrata serve`` runs it.

Routes (OpenAPI at ``/openapi.json``, its reference page at ``/docs``, served offline):

=======  ==========================================  ===========================================
GET      ``/``                                        the web page (question box, cited answers)
GET      ``/healthz``                                 liveness, no key needed
GET      ``/docs``                                    the API reference (no key, no CDN)
GET      ``/metrics``                                 Prometheus text; a ``metrics``-scope key
GET      ``/v1/collections``                          the caller's collections with counts
GET      ``/v1/collections/{name}``                   one collection's counts
DELETE   ``/v1/collections/{name}``                   the collection with its documents
GET      ``/v1/collections/{name}/documents``         its documents
POST     ``/v1/collections/{name}/documents``         upload files (multipart) or JSON text: 202
DELETE   ``/v1/collections/{name}/documents/{id}``    remove one document
POST     ``/v1/collections/{name}/search``            hybrid search with per-retriever ranks
POST     ``/v1/collections/{name}/ask``               cited answer; ``stream`` -> SSE
GET      ``/v1/jobs``, ``/v1/jobs/{job_id}``          ingestion jobs and their progress
=======  ==========================================  ===========================================

Every ``/v1`` route needs an API key (``Authorization: Bearer rsk_...`` or ``X-API-Key``);
the tenant is the key's, never the request's. Errors are ``{"error": {"code", "message"}}``
with the status of :func:`ragstrata.service.errors.http_status`. The process must be the only
one serving a data directory (each collection's index is locked by the process that opened it):
run one uvicorn worker.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from ragstrata.config import RagConfig
from ragstrata.embed.base import Embedder
from ragstrata.service import routes_collections, routes_jobs, routes_ops, routes_query
from ragstrata.service.bodylimit import BodyLimitMiddleware
from ragstrata.service.handlers import install_error_handlers
from ragstrata.service.metrics import MetricsMiddleware
from ragstrata.service.routes_ops import STATIC_DIR
from ragstrata.service.schemas import TextUpload
from ragstrata.service.state import build_state

MAX_JSON_BODY = 1_000_000
"""Largest body of a non-upload request (search, ask), bytes."""

_UPLOAD_PATH = re.compile(r"/v1/collections/[^/]+/documents/?")


def create_app(
    config: RagConfig | None = None,
    *,
    embedder: Embedder | None = None,
    data_dir: Path | None = None,
) -> FastAPI:
    """The service over ``data_dir`` (default: ``config.service.data_path(config.home)``).

    ``embedder`` shares an already loaded model (tests); otherwise ``config.embedder`` is loaded
    on first use. The app closes its jobs and collections on shutdown (lifespan); callers that
    never start it can call ``app.state.service.close()``.
    """
    cfg = config or RagConfig.load()
    state = build_state(cfg, embedder=embedder, data_dir=data_dir)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(state.close)

    app = FastAPI(
        title="ragstrata",
        version=_version(),
        summary="Cited answers and hybrid search over each tenant's documents.",
        lifespan=lifespan,
        # FastAPI's own Swagger UI and ReDoc pages load their scripts from a CDN (blank
        # offline): routes_ops serves them from packaged assets instead
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = state
    svc = cfg.service

    def limit_for(scope: Scope) -> tuple[int, str]:
        if scope.get("method") == "POST" and _UPLOAD_PATH.fullmatch(scope["path"]):
            return (
                svc.max_upload_bytes,
                "uploads are capped by service.max_upload_bytes: send fewer or smaller files "
                "per request",
            )
        return MAX_JSON_BODY, "search and ask bodies are capped at 1 MB: shorten the request"

    app.add_middleware(BodyLimitMiddleware, limit_for=limit_for)
    app.add_middleware(MetricsMiddleware, metrics=lambda: state.metrics)
    install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.mount(
        routes_ops.APIDOCS_ASSETS,
        StaticFiles(directory=routes_ops.apidocs_assets_dir()),
        name="apidocs-assets",
    )
    for routes in (routes_ops, routes_collections, routes_query, routes_jobs):  # spec order
        app.include_router(routes.router)
    _document_upload_schema(app)
    return app


def _document_upload_schema(app: FastAPI) -> None:
    """Add :class:`TextUpload` (read by hand, so FastAPI does not see it) to the spec's
    components, where the upload's request body refers to it."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        spec = generate()
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        if "TextUpload" not in schemas:
            upload = TextUpload.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(upload.pop("$defs", {}))
            schemas["TextUpload"] = upload
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def _version() -> str:
    from ragstrata import __version__

    return __version__
