"""Errors of the HTTP service (``RS7xx``) and the one map from any :class:`RagError` to an HTTP
status.

Every error response has the body ``{"error": {"code": "RSxxx", "message": "..."}}``; the codes
are stable and documented in docs/service.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from ragstrata.errors import (
    ConfigError,
    EmbedderMismatchError,
    GenerationError,
    IndexLockedError,
    IndexNotFoundError,
    IngestError,
    MissingDependencyError,
    RagError,
    RetrievalError,
)


class ServiceError(RagError):
    """Base of the service's own errors; an unexpected server-side failure (500)."""

    code = "RS700"


class AuthenticationError(ServiceError):
    """No API key, or one that is unknown or revoked (401)."""

    code = "RS701"


class PermissionDeniedError(ServiceError):
    """The key is valid but may not do this: another tenant's collection, or a read-only key
    writing (403)."""

    code = "RS702"


class RateLimitedError(ServiceError):
    """The key sent more requests than its token bucket allows (429); ``retry_after_s`` says
    when the next one will be accepted."""

    code = "RS703"

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PayloadTooLargeError(ServiceError):
    """The request body exceeds ``service.max_upload_bytes`` (413)."""

    code = "RS704"


class UnsupportedMediaTypeError(ServiceError):
    """The request's or an uploaded file's content type is not accepted (415)."""

    code = "RS705"


class NotFoundError(ServiceError):
    """No such collection, document, job or route for this tenant (404)."""

    code = "RS706"


class InvalidRequestError(ServiceError):
    """The request does not match the API's schema (422)."""

    code = "RS707"


class CollectionBusyError(IndexLockedError):
    """A collection's upload job holds it longer than a read may wait (503, RS503, like any
    index lock). Any other lock (another process) gets a message without server paths."""


def public_message(
    error: RagError, *, hidden: Sequence[Path] = (), collections_root: Path | None = None
) -> str:
    """``error``'s message as a client may read it (a response, a job's record that any of
    the tenant's keys can list): an index lock held by another process is described without
    the server's path to it, and each of the ``hidden`` directories (a collection's), and any
    collection directory under ``collections_root`` (``<data_dir>/tenants``, whose children
    are ``<tenant>/<collection>``), is removed from any other message: a path inside one
    reads relative to it, the directory itself "the collection". No code prefix."""
    message = str(error.args[0]) if error.args else ""
    if isinstance(error, IndexLockedError) and not isinstance(error, CollectionBusyError):
        return (
            "the collection's index is held by another process (a command-line ingest of "
            "it, or a second server on this data directory); try again when it finishes"
        )
    for path in hidden:
        message = message.replace(f"{path}{os.sep}", "").replace(str(path), "the collection")
    if collections_root is not None:
        root = re.escape(str(collections_root))
        sep = re.escape(os.sep)
        inside = rf"{root}{sep}[^{sep}\s'\"]+{sep}[^{sep}\s'\"]+"
        message = re.sub(rf"{inside}{sep}", "", message)
        message = re.sub(inside, "the collection", message)
        message = message.replace(str(collections_root), "the server's data directory")
    return message


class MalformedBodyError(InvalidRequestError):
    """The request body is not JSON at all (400; same code as a schema mismatch)."""


class MethodNotAllowedError(ServiceError):
    """The route exists but not with this HTTP method (405)."""

    code = "RS708"


class TenancyViolationError(ServiceError):
    """A store returned data outside the tenant's directory: never expected, the request fails
    instead of leaking it (500)."""

    code = "RS709"


class InterruptedJobError(ServiceError):
    """An ingestion job the server stopped before it finished (its record says which files
    were indexed); only ever a job's ``error``, never a response (500 if raised)."""

    code = "RS710"


_STATUS: tuple[tuple[type[RagError], int], ...] = (
    # most specific first
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (RateLimitedError, 429),
    (PayloadTooLargeError, 413),
    (UnsupportedMediaTypeError, 415),
    (NotFoundError, 404),
    (MalformedBodyError, 400),
    (InvalidRequestError, 422),
    (MethodNotAllowedError, 405),
    (IndexNotFoundError, 404),
    (IndexLockedError, 503),
    (EmbedderMismatchError, 409),
    (GenerationError, 502),
    (MissingDependencyError, 500),
    (ConfigError, 422),
    (RetrievalError, 422),
    (IngestError, 422),
)


def http_status(error: RagError) -> int:
    """The HTTP status of ``error``: 4xx for what the client can fix, 502 when the LLM server
    failed, 503 for a busy index, 500 for anything else (a server-side failure)."""
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return status
    return 500
