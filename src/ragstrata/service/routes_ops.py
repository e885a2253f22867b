"""Operations routes: the web page (``GET /``), the API reference (``GET /docs``: Swagger UI,
``GET /redoc``: ReDoc, both from the assets the ``fastapi-offline`` package ships, served under
``/apidocs-assets``: no CDN, they work offline), liveness (``/healthz``), none of which needs a
key, and Prometheus metrics (``/metrics``, a key with the ``metrics`` scope unless
``service.metrics_public``)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

from ragstrata.optional import require
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


APIDOCS_ASSETS = "/apidocs-assets"
"""Where :func:`apidocs_assets_dir` is mounted (app.py)."""
_APIDOCS_HEADERS = {
    **_PAGE_HEADERS,
    # the two pages start their bundle with an inline script; nothing leaves the server
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' "
        "'unsafe-inline'; connect-src 'self'; img-src 'self' data:; worker-src 'self' blob:; "
        "font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"
    ),
}


def apidocs_assets_dir() -> Path:
    """The Swagger UI and ReDoc bundles of the ``fastapi-offline`` package (extra
    ``service``)."""
    module = require("fastapi_offline", extra="service", package="fastapi-offline")
    return Path(str(module.__file__)).resolve().parent / "static"


@router.get("/docs", include_in_schema=False)
def swagger_ui() -> HTMLResponse:
    """The API reference as Swagger UI, from packaged assets (works offline)."""
    page = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="ragstrata API reference",
        swagger_js_url=f"{APIDOCS_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{APIDOCS_ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{APIDOCS_ASSETS}/favicon.png",
    )
    page.headers.update(_APIDOCS_HEADERS)
    return page


@router.get("/redoc", include_in_schema=False)
def redoc() -> HTMLResponse:
    """The API reference as ReDoc, from packaged assets (works offline)."""
    page = get_redoc_html(
        openapi_url="/openapi.json",
        title="ragstrata API reference",
        redoc_js_url=f"{APIDOCS_ASSETS}/redoc.standalone.js",
        redoc_favicon_url=f"{APIDOCS_ASSETS}/favicon.png",
        with_google_fonts=False,
    )
    page.headers.update(_APIDOCS_HEADERS)
    return page


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
