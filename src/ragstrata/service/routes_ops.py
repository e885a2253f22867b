"""Operations routes, no key needed: the web page (``GET /``), liveness (``/healthz``) and
Prometheus metrics (``/metrics``)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from ragstrata.service.deps import state_of
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


@router.get("/healthz", response_model=HealthResponse, tags=["ops"])
def healthz() -> dict[str, str]:
    """Liveness: the process answers. Needs no key."""
    return {"status": "ok"}


@router.get(
    "/metrics",
    tags=["ops"],
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}}},
)
def metrics(request: Request) -> Response:
    """Prometheus text format. Needs no key: expose it to your scraper only."""
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)
