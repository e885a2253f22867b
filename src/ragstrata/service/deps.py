"""What the routes depend on: the API-key check (:data:`Reader`, :data:`Writer`: the key's
tenant, never the request's, and its rate limit), the shared state, the collection path
parameter and the error responses every ``/v1`` route documents."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi import Path as PathParam
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ragstrata.service.errors import AuthenticationError, PermissionDeniedError, RateLimitedError
from ragstrata.service.keys import Principal
from ragstrata.service.schemas import ErrorResponse
from ragstrata.service.state import ServiceState
from ragstrata.service.tenancy import COLLECTION_RE, Collection

_NAME = COLLECTION_RE.pattern
HEX16 = r"[0-9a-f]{16}"
"""Pattern of a document id and of a job id."""

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer rsk_...")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="An rsk_... API key.")


def state_of(request: Request) -> ServiceState:
    """The app's :class:`ServiceState`."""
    state: ServiceState = request.app.state.service
    return state


def authenticate(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    api_key: Annotated[str | None, Security(_api_key)],
) -> Principal:
    """The key's principal; raises AuthenticationError (RS701, 401) without a
    valid key, RateLimitedError (RS703, 429) over its rate limit or while the key id's or the
    client address's budget of wrong secrets is spent."""
    state = state_of(request)
    presented = bearer.credentials if bearer is not None else api_key
    if not presented:
        state.metrics.auth_failures.labels("missing").inc()
        raise AuthenticationError(
            "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
        )
    try:
        principal = state.keys.verify(presented, client=client_address(request))
    except AuthenticationError:
        state.metrics.auth_failures.labels("invalid").inc()
        raise
    wait = state.limiter.acquire(principal.key_id)
    if wait > 0:  # counted with every other 429 by the metrics middleware
        raise RateLimitedError(
            f"rate limit of {state.limiter.rate:g} requests/s (burst {state.limiter.burst}) "
            f"exceeded for key {principal.key_id}; retry in {max(1, math.ceil(wait))} s "
            "(Retry-After)",
            retry_after_s=wait,
        )
    return principal


def _require(principal: Principal, request: Request, scopes: tuple[str, ...], what: str) -> None:
    """PermissionDeniedError (RS702, 403) unless the key has one of ``scopes``."""
    if not any(principal.can(scope) for scope in scopes):
        state_of(request).metrics.auth_failures.labels("scope").inc()
        needed = " or ".join(repr(s) for s in scopes)
        raise PermissionDeniedError(
            f"key {principal.key_id} (scopes: {', '.join(principal.scopes)}) may not {what}; "
            f"use a key with {needed}"
        )


def require_reader(
    principal: Annotated[Principal, Depends(authenticate)], request: Request
) -> Principal:
    """The principal of a key with ``read`` (:data:`Reader`): list, search, ask. Raises
    PermissionDeniedError (RS702, 403) otherwise: a ``metrics`` key (a scraper's) read every
    document of its tenant (trial 40)."""
    _require(principal, request, ("read",), "list, search or ask")
    return principal


def require_job_reader(
    principal: Annotated[Principal, Depends(authenticate)], request: Request
) -> Principal:
    """The principal of a key with ``read`` or ``write`` (:data:`JobReader`): an uploader
    follows its own jobs. Raises PermissionDeniedError (RS702, 403) otherwise."""
    _require(principal, request, ("read", "write"), "read ingestion jobs")
    return principal


def require_writer(
    principal: Annotated[Principal, Depends(authenticate)], request: Request
) -> Principal:
    """The principal of a key with ``write`` (:data:`Writer`); raises PermissionDeniedError (RS702,
    403) otherwise."""
    _require(principal, request, ("write",), "upload or delete")
    return principal


def client_address(request: Request) -> str:
    """The peer's address as the ASGI server reports it (behind a reverse proxy, run uvicorn
    with ``--forwarded-allow-ips`` so that this is the client's, not the proxy's)."""
    return request.client.host if request.client is not None else ""


def require_metrics(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    api_key: Annotated[str | None, Security(_api_key)],
) -> None:
    """Allow ``GET /metrics``: always with ``service.metrics_public``, else only for a key with
    the ``metrics`` scope (401 without a valid key, 403 for a key without the scope)."""
    state = state_of(request)
    if state.config.service.metrics_public:
        return
    principal = authenticate(request, bearer, api_key)
    if not principal.can("metrics"):
        state.metrics.auth_failures.labels("scope").inc()
        raise PermissionDeniedError(
            f"key {principal.key_id} may not read /metrics; create one with "
            "`ragstrata keys create --tenant ops --scopes metrics` (or set "
            "service.metrics_public = true on a private network)"
        )


Reader = Annotated[Principal, Depends(require_reader)]
JobReader = Annotated[Principal, Depends(require_job_reader)]
Writer = Annotated[Principal, Depends(require_writer)]
CollectionName = Annotated[
    str, PathParam(pattern=f"^{_NAME}$", description="Collection name.", examples=["docs"])
]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in (
        (400, "malformed body (not parseable as JSON)"),
        (401, "missing, unknown or revoked API key"),
        (403, "another tenant's collection, or a key without the scope (read, write)"),
        (404, "no such collection, document or job"),
        (422, "invalid request"),
        (429, "rate limit exceeded (see Retry-After)"),
        (503, "the collection is being written; retry (see Retry-After)"),
    )
}


def open_collection(
    request: Request, principal: Principal, name: str, *, create: bool = False
) -> Collection:
    """The principal's collection ``name`` (see :meth:`TenantRegistry.collection`)."""
    return state_of(request).registry.collection(principal, name, create=create)
