"""Query routes: hybrid search (``/search``) and cited answers (``/ask``), as JSON or, with
``stream``, as server-sent events."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from ragstrata import render
from ragstrata.errors import RagError
from ragstrata.generate.answerer import TokenEvent
from ragstrata.service.deps import ERROR_RESPONSES, CollectionName, Reader, open_collection
from ragstrata.service.errors import ServiceError, http_status, public_message
from ragstrata.service.schemas import (
    AskRequest,
    AskResponse,
    ErrorResponse,
    SearchRequest,
    SearchResponse,
)
from ragstrata.service.streaming import ThreadedEvents
from ragstrata.service.tenancy import AskOutcome, Collection

logger = logging.getLogger(__name__)

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

router = APIRouter()


@router.post(
    "/v1/collections/{name}/search",
    response_model=SearchResponse,
    responses=ERROR_RESPONSES,
    tags=["query"],
)
def search(
    request: Request, principal: Reader, name: CollectionName, body: SearchRequest
) -> dict[str, Any]:
    """Hybrid (or dense/BM25) search; every hit says each retriever's rank and score."""
    coll = open_collection(request, principal, name)
    result = coll.search(body.query, top_k=body.top_k, mode=body.mode, filters=body.filters)
    return {
        "query": body.query,
        "hits": [render.hit_json(h, source=coll.display_name) for h in result.hits],
        "language_relation": result.language_relation,
        "timings_ms": dict(result.timings_ms),
    }


@router.post(
    "/v1/collections/{name}/ask",
    response_model=AskResponse,
    responses={
        **ERROR_RESPONSES,
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
async def ask(request: Request, principal: Reader, name: CollectionName, body: AskRequest) -> Any:
    """A cited answer from the collection, or a refusal when its documents do not say.
    With an LLM (``llm.provider``), each citation says whether it was ``verified`` against
    its source, and the answer carries the token ``usage`` and the version ``conflict``."""
    coll = await run_in_threadpool(open_collection, request, principal, name)
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


# ---------------------------------------------------------------------------- answers
def quote_span(passage: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` lies in ``passage`` (character offsets), for the web page to mark it:
    the quote itself, else the one pipe-table row of the passage that holds every value of a
    row quoted as ``header: value; ...`` (the extractive answerer reads a row with its
    header, so the quote is not in the passage as written: trial 24, unmarked); None when
    neither is found."""
    if not quote:
        return None
    at = passage.find(quote)
    if at >= 0:
        return at, at + len(quote)
    values = [
        piece.strip()
        for pair in quote.split("; ")
        for piece in pair.split(": ", 1)[-1].split(", ")
        if piece.strip()
    ]
    found: list[tuple[int, int]] = []
    pos = 0
    for line in passage.split("\n"):
        if values and line.lstrip().startswith("|") and all(v in line for v in values):
            found.append((pos, pos + len(line)))
        pos += len(line) + 1
    return found[0] if len(found) == 1 else None


def _answer_json(coll: Collection, outcome: AskOutcome) -> dict[str, Any]:
    data = render.answer_json(outcome.answer, source=coll.display_name)
    data.update(render.evidence_json(outcome.answer))  # why it answered or refused, as MCP says
    ranks: dict[str, dict[str, Any]] = {}
    if outcome.retrieval is not None:
        hits = [render.hit_json(h, source=coll.display_name) for h in outcome.retrieval]
        data["retrieval"] = hits
        ranks = {h["chunk_id"]: h["explain"] for h in hits}
    passages = {h.chunk.chunk_id: h.chunk for h in outcome.answer.hits}
    # a quote from another chunk of an expanded section: that chunk (a review, 2026-12-06)
    passages.update({c.chunk_id: c for c in outcome.answer.cited_chunks})
    for cited in data["citations"]:
        chunk = passages.get(cited["chunk_id"])
        passage = chunk.text if chunk is not None else cited["quote"]
        passage, span = render.without_anchors(passage, quote_span(passage, cited["quote"]))
        cited["passage"] = passage
        cited["highlight_start"], cited["highlight_end"] = span or (None, None)
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
        # an index lock held elsewhere, or the collection's directory: no server path
        message = public_message(exc, hidden=[coll.root])
        yield _event("error", {"error": {"code": exc.code, "message": message}})
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
