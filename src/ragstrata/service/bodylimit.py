"""Request body size limits (pure ASGI middleware).

A request whose ``Content-Length`` exceeds its route's limit gets 413 before any byte of the
body is read; a body sent without a length (chunked) is counted as it arrives and the request
fails with :class:`~ragstrata.service.errors.PayloadTooLargeError` (413) at the byte that
crosses the limit, so nothing past the limit is ever buffered or written to disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragstrata.service.errors import PayloadTooLargeError

LimitFor = Callable[[Scope], tuple[int, str]]
"""Scope -> the largest body (bytes) its route accepts, and what to do when a body is larger
(the end of the 413 message: it names the route's own limit and fix)."""


class BodyLimitMiddleware:
    """Enforce ``limit_for(scope)`` bytes on every HTTP request body."""

    def __init__(self, app: ASGIApp, *, limit_for: LimitFor) -> None:
        self.app = app
        self._limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, advice = self._limit_for(scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(send, _message(limit, advice))
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLargeError(_message(limit, advice))
            return message

        await self.app(scope, limited, send)


def _message(limit: int, advice: str) -> str:
    return f"the request body exceeds {limit} bytes; {advice}"


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Send, message: str) -> None:
    body = json.dumps({"error": {"code": PayloadTooLargeError.code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
