"""Exception handlers: every error leaves as ``{"error": {"code", "message"}}`` with the status
of :func:`ragstrata.service.errors.http_status` (plus ``WWW-Authenticate`` / ``Retry-After``
where they apply); FastAPI's own 404/405/422 and unexpected crashes are mapped the same way."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragstrata.errors import IndexLockedError, RagError
from ragstrata.service.errors import (
    AuthenticationError,
    CollectionBusyError,
    InvalidRequestError,
    MalformedBodyError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    ServiceError,
    UnsupportedMediaTypeError,
    http_status,
    public_message,
)
from ragstrata.service.uploads import media_type

logger = logging.getLogger(__name__)


def _error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _collections_root(request: Request) -> Path | None:
    """``<data_dir>/tenants`` of the app's service (None before it is built, in tests)."""
    state = getattr(request.app.state, "service", None)
    registry = getattr(state, "registry", None)
    root = getattr(registry, "root", None)
    return root if isinstance(root, Path) else None


def _rag_error(error: RagError, request: Request | None = None) -> JSONResponse:
    status = http_status(error)
    headers: dict[str, str] = {}
    if isinstance(error, AuthenticationError):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, RateLimitedError):
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    if isinstance(error, IndexLockedError):
        headers["Retry-After"] = "2"
        if not isinstance(error, CollectionBusyError):
            # another process holds it: the library's message names the server's path
            logger.warning("%s", error)
    # a store or model error may name the collection's directory on the server
    root = _collections_root(request) if request is not None else None
    message = public_message(error, collections_root=root)
    if status >= 500:
        logger.error("request failed: %s", error)
    return _error_response(status, error.code, str(message), headers or None)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RagError)
    async def rag_error(request: Request, exc: RagError) -> JSONResponse:
        return _rag_error(exc, request)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        declared = media_type(request.headers.get("content-type"))
        return _rag_error(request_error(exc.errors(), content_type=declared))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            error: RagError = NotFoundError(f"no route {request.url.path[:200]!r}")
        elif exc.status_code == 405:
            error = MethodNotAllowedError(f"{request.method} is not allowed on this route")
        elif isinstance(exc.__cause__, PayloadTooLargeError):
            # a chunked JSON body over the limit: FastAPI's body reader wraps the limit's
            # error as 400 "There was an error parsing the body" (review 33)
            return _rag_error(exc.__cause__)
        elif isinstance(exc.__cause__, UnicodeDecodeError):  # FastAPI's "error parsing the body"
            at = exc.__cause__.start
            error = MalformedBodyError(
                f"the body is not JSON: it is not UTF-8 text (byte "
                f"0x{exc.__cause__.object[at]:02x} at byte {at}); send UTF-8 JSON"
            )
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


def request_error(errors: Sequence[Any], *, content_type: str = "") -> ServiceError:
    """The error of a body that failed validation: :class:`UnsupportedMediaTypeError` (415)
    when the body was declared in another type than JSON (``content_type``, the request's
    media type without parameters; FastAPI then hands the route the raw text, and the
    mismatch would read "Input should be a valid dictionary"); :class:`MalformedBodyError`
    (400) when it is not JSON at all (docs/service.md), with the parser's reason and where;
    otherwise :class:`InvalidRequestError` (422) naming the fields."""
    json_type = content_type == "application/json" or content_type.endswith("+json")
    if content_type and not json_type and any(_in_body(err) for err in errors):
        return UnsupportedMediaTypeError(
            f"the body was sent as {content_type[:100]!r}; send a JSON object with "
            "Content-Type: application/json"
        )
    for err in errors:
        if err.get("type") == "missing" and tuple(err.get("loc", ())) == ("body",):
            return MalformedBodyError("the body is empty; send a JSON object")
        if err.get("type") == "json_invalid":
            reason = str((err.get("ctx") or {}).get("error") or err.get("msg", ""))
            reason = reason.removeprefix("Invalid JSON: ")
            at = [str(x) for x in err.get("loc", ()) if isinstance(x, int)]
            where = f" (at character {at[-1]})" if at else ""
            return MalformedBodyError(f"the body is not JSON: {reason}{where}")
    return InvalidRequestError(validation_message(errors))


def _in_body(error: Any) -> bool:
    """Whether a validation error is about the request body (not a path or query parameter)."""
    location = tuple(error.get("loc", ()))
    return bool(location) and location[0] == "body"


def validation_message(errors: Sequence[Any]) -> str:
    parts = []
    for err in list(errors)[:5]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)
