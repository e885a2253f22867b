"""The FastAPI application: ``create_app(config)`` builds it, ``ragstrata serve`` runs it.

Routes (OpenAPI at ``/openapi.json``, interactive docs at ``/docs``):

=======  ==========================================  ===========================================
GET      ``/``                                        the web page (question box, cited answers)
GET      ``/healthz``                                 liveness, no key needed
GET      ``/metrics``                                 Prometheus text format, no key needed
GET      ``/v1/collections``                          the caller's collections with counts
GET      ``/v1/collections/{name}``                   one collection's counts
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

import json
import logging
import math
import re
import shutil
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Security
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from ragstrata import render
from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.embed.base import Embedder
from ragstrata.errors import IndexLockedError, RagError
from ragstrata.generate.answerer import TokenEvent
from ragstrata.pipeline import Ragstrata
from ragstrata.service.bodylimit import BodyLimitMiddleware
from ragstrata.service.errors import (
    AuthenticationError,
    InvalidRequestError,
    MethodNotAllowedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ServiceError,
    UnsupportedMediaTypeError,
    http_status,
)
from ragstrata.service.jobs import Job, JobManager
from ragstrata.service.keys import KEYS_FILE, KeyStore, Principal
from ragstrata.service.metrics import CONTENT_TYPE, MetricsMiddleware, ServiceMetrics
from ragstrata.service.ratelimit import KeyRateLimiter
from ragstrata.service.schemas import (
    AskRequest,
    AskResponse,
    CollectionOut,
    CollectionsResponse,
    DeleteResponse,
    DocumentsResponse,
    ErrorResponse,
    HealthResponse,
    JobOut,
    JobsResponse,
    SearchRequest,
    SearchResponse,
    TextUpload,
)
from ragstrata.service.streaming import ThreadedEvents
from ragstrata.service.tenancy import (
    COLLECTION_RE,
    AskOutcome,
    Collection,
    FileOutcome,
    TenantRegistry,
)
from ragstrata.service.uploads import check_file_type, safe_filename

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
MAX_JSON_BODY = 1_000_000
"""Largest body of a non-upload request (search, ask), bytes."""

_UPLOAD_PATH = re.compile(r"/v1/collections/[^/]+/documents/?")
_NAME = COLLECTION_RE.pattern
_HEX16 = r"[0-9a-f]{16}"


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


# ---------------------------------------------------------------------------- errors
def _error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _rag_error(error: RagError) -> JSONResponse:
    status = http_status(error)
    headers: dict[str, str] = {}
    if isinstance(error, AuthenticationError):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, RateLimitedError):
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    if isinstance(error, IndexLockedError):
        headers["Retry-After"] = "2"
    if status >= 500:
        logger.error("request failed: %s", error)
    message = error.args[0] if error.args else str(error)
    return _error_response(status, error.code, str(message), headers or None)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RagError)
    async def rag_error(request: Request, exc: RagError) -> JSONResponse:
        return _rag_error(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        response = _rag_error(InvalidRequestError(_validation_message(errors)))
        if any(err.get("type") == "json_invalid" for err in errors):
            response.status_code = 400  # not JSON at all (docs/service.md), not a schema mismatch
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            error: RagError = NotFoundError(f"no route {request.url.path[:200]!r}")
        elif exc.status_code == 405:
            error = MethodNotAllowedError(f"{request.method} is not allowed on this route")
        elif exc.status_code < 500:
            error = InvalidRequestError(str(exc.detail))
        else:
            error = ServiceError(str(exc.detail))
        response = _rag_error(error)
        response.status_code = exc.status_code
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error_response(500, ServiceError.code, "internal error; see the server log")


def _validation_message(errors: Sequence[Any]) -> str:
    parts = []
    for err in list(errors)[:5]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


# ---------------------------------------------------------------------------- auth
_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer rsk_...")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="An rsk_... API key.")


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


def _principal(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    api_key: Annotated[str | None, Security(_api_key)],
) -> Principal:
    state = _state(request)
    presented = bearer.credentials if bearer is not None else api_key
    if not presented:
        state.metrics.auth_failures.labels("missing").inc()
        raise AuthenticationError(
            "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
        )
    try:
        principal = state.keys.verify(presented)
    except AuthenticationError:
        state.metrics.auth_failures.labels("invalid").inc()
        raise
    wait = state.limiter.acquire(principal.key_id)
    if wait > 0:
        state.metrics.rate_limited.inc()
        raise RateLimitedError(
            f"rate limit of {state.limiter.rate:g} requests/s (burst {state.limiter.burst}) "
            f"exceeded for key {principal.key_id}; retry in {wait:.2f} s",
            retry_after_s=wait,
        )
    return principal


def _writer(principal: Annotated[Principal, Depends(_principal)], request: Request) -> Principal:
    if not principal.can("write"):
        _state(request).metrics.auth_failures.labels("scope").inc()
        raise PermissionDeniedError(f"key {principal.key_id} is read-only; use a key with 'write'")
    return principal


Reader = Annotated[Principal, Depends(_principal)]
Writer = Annotated[Principal, Depends(_writer)]
CollectionName = Annotated[
    str, PathParam(pattern=f"^{_NAME}$", description="Collection name.", examples=["docs"])
]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in (
        (400, "malformed body (not parseable as JSON)"),
        (401, "missing, unknown or revoked API key"),
        (403, "another tenant's collection, or a read-only key writing"),
        (404, "no such collection, document or job"),
        (422, "invalid request"),
        (429, "rate limit exceeded (see Retry-After)"),
        (503, "the collection is being written; retry (see Retry-After)"),
    )
}


def _collection(
    request: Request, principal: Principal, name: str, *, create: bool = False
) -> Collection:
    return _state(request).registry.collection(principal, name, create=create)


# ---------------------------------------------------------------------------- app
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
    _install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _add_routes(app)
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


def _add_routes(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(
            STATIC_DIR / "index.html", media_type="text/html", headers=_PAGE_HEADERS
        )

    @app.get("/healthz", response_model=HealthResponse, tags=["ops"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers. Needs no key."""
        return {"status": "ok"}

    @app.get(
        "/metrics",
        tags=["ops"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}}},
    )
    def metrics(request: Request) -> Response:
        """Prometheus text format. Needs no key: expose it to your scraper only."""
        return Response(_state(request).metrics.render(), media_type=CONTENT_TYPE)

    @app.get(
        "/v1/collections",
        response_model=CollectionsResponse,
        responses=_ERRORS,
        tags=["collections"],
    )
    def list_collections(request: Request, principal: Reader) -> dict[str, Any]:
        """The caller's collections with their document and chunk counts."""
        out = []
        for coll in _state(request).registry.collections(principal):
            docs, chunks = coll.counts()
            out.append({"name": coll.name, "documents": docs, "chunks": chunks})
        return {"tenant": principal.tenant, "collections": out}

    @app.get(
        "/v1/collections/{name}",
        response_model=CollectionOut,
        responses=_ERRORS,
        tags=["collections"],
    )
    def get_collection(request: Request, principal: Reader, name: CollectionName) -> dict[str, Any]:
        """One collection's counts."""
        coll = _collection(request, principal, name)
        docs, chunks = coll.counts()
        return {"name": coll.name, "documents": docs, "chunks": chunks}

    @app.get(
        "/v1/collections/{name}/documents",
        response_model=DocumentsResponse,
        responses=_ERRORS,
        tags=["documents"],
    )
    def list_documents(request: Request, principal: Reader, name: CollectionName) -> dict[str, Any]:
        """The collection's indexed documents by file name."""
        coll = _collection(request, principal, name)
        return {
            "collection": coll.name,
            "documents": [_document_json(d) for d in coll.documents()],
        }

    @app.post(
        "/v1/collections/{name}/documents",
        status_code=202,
        response_model=JobOut,
        responses={
            **_ERRORS,
            413: {"model": ErrorResponse, "description": "body over service.max_upload_bytes"},
            415: {
                "model": ErrorResponse,
                "description": "not multipart/JSON, or no file type fits",
            },
        },
        tags=["documents"],
        openapi_extra={"requestBody": _UPLOAD_BODY},
    )
    async def upload(request: Request, principal: Writer, name: CollectionName) -> JSONResponse:
        """Upload files (``multipart/form-data``, field ``files``) or JSON text documents.
        Creates the collection if needed, stages the files and returns the ingestion job (202);
        poll ``GET /v1/jobs/{job_id}`` for progress. A bad file is reported in the job and
        costs only itself."""
        state = _state(request)
        await run_in_threadpool(state.registry.check_access, principal, name)
        job_id = state.jobs.new_id()
        staging = state.registry.staging_dir(principal) / job_id
        try:
            staged, rejected = await _stage(request, state, staging)
            if not staged:
                raise _nothing_accepted(rejected)
            coll = await run_in_threadpool(_collection, request, principal, name, create=True)
            job = state.jobs.submit(job_id, coll, staged, rejected=rejected)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return JSONResponse(
            job.to_json(), status_code=202, headers={"Location": f"/v1/jobs/{job.job_id}"}
        )

    @app.delete(
        "/v1/collections/{name}/documents/{doc_id}",
        response_model=DeleteResponse,
        responses=_ERRORS,
        tags=["documents"],
    )
    def delete_document(
        request: Request,
        principal: Writer,
        name: CollectionName,
        doc_id: Annotated[str, PathParam(pattern=f"^{_HEX16}$")],
    ) -> dict[str, Any]:
        """Remove a document's chunks from the index and its uploaded file."""
        info = _collection(request, principal, name).delete_document(doc_id)
        return {"deleted": _document_json(info)}

    @app.post(
        "/v1/collections/{name}/search",
        response_model=SearchResponse,
        responses=_ERRORS,
        tags=["query"],
    )
    def search(
        request: Request, principal: Reader, name: CollectionName, body: SearchRequest
    ) -> dict[str, Any]:
        """Hybrid (or dense/BM25) search; every hit says each retriever's rank and score."""
        coll = _collection(request, principal, name)
        result = coll.search(body.query, top_k=body.top_k, mode=body.mode, filters=body.filters)
        return {
            "query": body.query,
            "hits": [render.hit_json(h, source=coll.display_name) for h in result.hits],
            "language_relation": result.language_relation,
            "timings_ms": dict(result.timings_ms),
        }

    @app.post(
        "/v1/collections/{name}/ask",
        response_model=AskResponse,
        responses={
            **_ERRORS,
            200: {
                "description": "The answer as JSON, or as server-sent events with stream=true: "
                "`token` events ({text}) as the answer is written, then `citations` "
                "({citations}), `explain` ({hits}, with explain=true) and `done` (the JSON "
                "answer without `retrieval`). An error after the first event ends the stream "
                "with an `error` event ({error: {code, message}}).",
                "content": {"text/event-stream": {"schema": _SSE_EVENT}},
            },
            502: {"model": ErrorResponse, "description": "the LLM server failed (RS800)"},
        },
        tags=["query"],
    )
    async def ask(
        request: Request, principal: Reader, name: CollectionName, body: AskRequest
    ) -> Any:
        """A cited answer from the collection, or a refusal when its documents do not say.
        With an LLM (``llm.provider``), each citation says whether it was ``verified`` against
        its source, and the answer carries the token ``usage`` and the version ``conflict``."""
        coll = await run_in_threadpool(_collection, request, principal, name)
        if not body.stream:
            outcome = await run_in_threadpool(
                coll.ask, body.question, filters=body.filters, explain=body.explain
            )
            return _answer_json(coll, outcome)
        events = ThreadedEvents(
            coll.ask_stream(body.question, filters=body.filters, explain=body.explain)
        )
        try:  # an error before the first event is an ordinary JSON error response
            first = await anext(events)
        except BaseException:
            events.close()
            raise
        return StreamingResponse(
            _sse(coll, first, events),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/v1/jobs", response_model=JobsResponse, responses=_ERRORS, tags=["jobs"])
    def list_jobs(request: Request, principal: Reader) -> dict[str, Any]:
        """The caller's recent ingestion jobs, newest first."""
        return {"jobs": _state(request).jobs.for_tenant(principal)}

    @app.get("/v1/jobs/{job_id}", response_model=JobOut, responses=_ERRORS, tags=["jobs"])
    def get_job(
        request: Request,
        principal: Reader,
        job_id: Annotated[str, PathParam(pattern=f"^{_HEX16}$")],
    ) -> dict[str, Any]:
        """An ingestion job's state, progress and per-file outcome."""
        return _state(request).jobs.get(principal, job_id)


_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_SSE_EVENT: dict[str, Any] = {
    "description": "One server-sent event; `data` is a JSON object.",
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {
            "type": "string",
            "enum": ["token", "citations", "explain", "done", "error"],
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}
_UPLOAD_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {"type": "array", "items": {"type": "string", "format": "binary"}}
                },
            }
        },
        "application/json": {"schema": {"$ref": "#/components/schemas/TextUpload"}},
    },
}


# ---------------------------------------------------------------------------- uploads
async def _stage(
    request: Request, state: ServiceState, staging: Path
) -> tuple[list[Path], list[FileOutcome]]:
    """Write the request's documents under ``staging`` with safe names; returns the staged
    paths and the files refused by name/type checks."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    svc = state.config.service
    items: list[tuple[str, str | None, UploadFile | bytes]] = []
    if kind == "multipart/form-data":
        try:
            form = await request.form(
                max_files=svc.max_upload_files, max_fields=svc.max_upload_files
            )
        except StarletteHTTPException as exc:  # malformed multipart
            raise InvalidRequestError(f"malformed multipart body: {exc.detail}") from exc
        for field, value in form.multi_items():
            if field not in ("files", "file"):
                raise InvalidRequestError(
                    f"unknown form field {field[:40]!r}; send files as 'files'"
                )
            if not isinstance(value, UploadFile):
                raise InvalidRequestError("form field 'files' must be a file, not a text value")
            items.append((value.filename or "", value.content_type, value))
    elif kind == "application/json":
        try:
            upload = TextUpload.model_validate_json(await request.body())
        except ValidationError as exc:
            raise InvalidRequestError(_validation_message(exc.errors())) from exc
        if len(upload.documents) > svc.max_upload_files:
            raise InvalidRequestError(
                f"{len(upload.documents)} documents exceed service.max_upload_files="
                f"{svc.max_upload_files}"
            )
        items = [(d.name, None, d.text.encode("utf-8")) for d in upload.documents]
    else:
        raise UnsupportedMediaTypeError(
            f"content type {kind or '(none)'!r} is not accepted; send multipart/form-data "
            '(field \'files\') or application/json ({"documents": [{"name", "text"}]})'
        )
    if not items:
        raise InvalidRequestError("no files in the upload; send at least one under 'files'")
    staged: list[Path] = []
    rejected: list[FileOutcome] = []
    seen: set[str] = set()
    for raw_name, content_type, content in items:
        name = safe_filename(raw_name)
        try:
            check_file_type(name, content_type)
        except UnsupportedMediaTypeError as exc:
            rejected.append(FileOutcome(name, "failed", exc.code, str(exc.args[0])))
            continue
        if name in seen:
            rejected.append(
                FileOutcome(name, "failed", InvalidRequestError.code, "duplicate name in upload")
            )
            continue
        seen.add(name)
        target = staging / name
        await run_in_threadpool(_write, target, content)
        staged.append(target)
    return staged, rejected


def _write(target: Path, content: UploadFile | bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        if isinstance(content, bytes):
            out.write(content)
        else:
            content.file.seek(0)
            shutil.copyfileobj(content.file, out, 1 << 20)


def _nothing_accepted(rejected: Sequence[FileOutcome]) -> RagError:
    detail = "; ".join(f"{r.name}: {r.reason}" for r in rejected[:10])
    if rejected and all(r.code == UnsupportedMediaTypeError.code for r in rejected):
        return UnsupportedMediaTypeError(f"no file of the upload can be ingested: {detail}")
    return InvalidRequestError(f"no file of the upload can be ingested: {detail}")


# ---------------------------------------------------------------------------- answers
def _document_json(info: Any) -> dict[str, Any]:
    return {"doc_id": info.doc_id, "name": info.name, "title": info.title, "chunks": info.chunks}


def _answer_json(coll: Collection, outcome: AskOutcome) -> dict[str, Any]:
    data = render.answer_json(outcome.answer, source=coll.display_name)
    ranks: dict[str, dict[str, Any]] = {}
    if outcome.retrieval is not None:
        hits = [render.hit_json(h, source=coll.display_name) for h in outcome.retrieval]
        data["retrieval"] = hits
        ranks = {h["chunk_id"]: h["explain"] for h in hits}
    passages = {h.chunk.chunk_id: h.chunk for h in outcome.answer.hits}
    for cited in data["citations"]:
        chunk = passages.get(cited["chunk_id"])
        passage = chunk.text if chunk is not None else cited["quote"]
        start = passage.find(cited["quote"]) if cited["quote"] else -1
        cited["passage"] = passage
        cited["highlight_start"] = start if start >= 0 else None
        cited["highlight_end"] = start + len(cited["quote"]) if start >= 0 else None
        cited["explain"] = ranks.get(cited["chunk_id"], {})
    return data


async def _sse(
    coll: Collection, first: TokenEvent | AskOutcome, rest: ThreadedEvents[TokenEvent | AskOutcome]
) -> AsyncIterator[bytes]:
    """The answer as server-sent events: ``token`` pieces as the generator writes them (with an
    LLM its raw text, before the citations are checked; whitespace kept), then ``citations``,
    ``explain`` (when the retrieval was asked for) and ``done``, which carries the JSON answer
    without ``retrieval``: replace the streamed text with its ``answer``. An error after the
    first event ends the stream with one ``error`` event. The generator is stopped when the
    client goes away."""
    try:
        event = first
        while isinstance(event, TokenEvent):
            yield _event("token", {"text": event.text})
            event = await anext(rest)
        data = _answer_json(coll, event)
        yield _event("citations", {"citations": data["citations"]})
        if data.get("retrieval") is not None:
            yield _event("explain", {"hits": data["retrieval"]})
        yield _event("done", {k: v for k, v in data.items() if k != "retrieval"})
    except RagError as exc:  # headers are sent: the status cannot change any more
        if http_status(exc) >= 500:
            logger.error("answer stream failed: %s", exc)
        message = exc.args[0] if exc.args else str(exc)
        yield _event("error", {"error": {"code": exc.code, "message": str(message)}})
    except Exception:
        logger.exception("answer stream of collection %s/%s failed", coll.tenant, coll.name)
        yield _event(
            "error",
            {"error": {"code": ServiceError.code, "message": "internal error; see the server log"}},
        )
    finally:
        rest.close()


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
