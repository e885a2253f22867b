"""Operations routes: the web page (``GET /``), the API reference (``GET /docs``, rendered from
``/openapi.json`` by the page's own script, no CDN: it works offline), liveness (``/healthz``),
none of which needs a key, and Prometheus metrics (``/metrics``, a key with the ``metrics``
scope unless ``service.metrics_public``)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response

from ragstrata.service.deps import ERROR_RESPONSES, require_metrics, state_of
from ragstrata.service.metrics import CONTENT_TYPE
from ragstrata.service.schemas import HealthResponse

STATIC_DIR = Path(__file__).resolve().parent / "static"
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter()


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=_PAGE_HEADERS)


@router.get("/docs", include_in_schema=False)
def api_docs() -> FileResponse:
    """The API reference: ``static/apidocs.html`` renders ``/openapi.json`` with the service's
    own script and style (no asset from a CDN)."""
    return FileResponse(STATIC_DIR / "apidocs.html", media_type="text/html", headers=_PAGE_HEADERS)


@router.get("/healthz", response_model=HealthResponse, tags=["ops"])
def healthz() -> dict[str, str]:
    """Liveness: the process answers. Needs no key."""
    return {"status": "ok"}


@router.get(
    "/metrics",
    tags=["ops"],
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}},
        **{status: ERROR_RESPONSES[status] for status in (401, 403, 429)},
    },
    dependencies=[Depends(require_metrics)],
)
def metrics(request: Request) -> Response:
    """Prometheus text format (every tenant's collection names and counts). Needs a key with
    the ``metrics`` scope, unless ``service.metrics_public`` is set."""
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)
