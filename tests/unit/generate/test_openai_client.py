"""The OpenAI-compatible client against a mocked HTTP transport (no network)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ragstrata.errors import GenerationError
from ragstrata.generate.base import ChatMessage, ChatModel, collect
from ragstrata.generate.openai_client import OpenAIGenerator

pytest.importorskip("openai")

MESSAGES = [ChatMessage("system", "rules"), ChatMessage("user", "question")]


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def make(handler: Any, **kwargs: Any) -> tuple[OpenAIGenerator, list[float]]:
    sleeps: list[float] = []
    client = httpx.Client(transport=httpx.MockTransport(handler))
    gen = OpenAIGenerator(
        base_url="http://llm.test/v1",
        model="m",
        http_client=client,
        sleep=sleeps.append,
        **kwargs,
    )
    return gen, sleeps


def test_complete_sends_settings_and_reads_usage() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=completion("Hello [1]."))

    gen, _ = make(handler, max_tokens=50)
    assert isinstance(gen, ChatModel)
    out = gen.complete(MESSAGES)
    assert out.text == "Hello [1]." and out.usage.total_tokens == 14
    body = seen[0]
    assert body["temperature"] == 0.1 and body["max_tokens"] == 50 and body["model"] == "m"
    assert body["messages"][0] == {"role": "system", "content": "rules"}
    assert gen.name == "openai:m"


def test_retries_5xx_and_429_with_backoff_then_succeeds() -> None:
    statuses = [503, 429, 200]

    def handler(request: httpx.Request) -> httpx.Response:
        status = statuses.pop(0)
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "busy"}})
        return httpx.Response(200, json=completion("ok"))

    gen, sleeps = make(handler, max_retries=3)
    assert gen.complete(MESSAGES).text == "ok"
    assert sleeps == [0.5, 1.0]


def test_gives_up_after_retries_and_does_not_retry_4xx() -> None:
    calls = []

    def down(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("refused")

    gen, sleeps = make(down, max_retries=2)
    with pytest.raises(GenerationError, match="after 3 attempts") as info:
        gen.complete(MESSAGES)
    assert info.value.code == "RS800" and len(calls) == 3 and len(sleeps) == 2

    def unauthorized(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(401, json={"error": {"message": "bad key"}})

    gen, sleeps = make(unauthorized, max_retries=2)
    calls.clear()
    with pytest.raises(GenerationError, match="HTTP 401"):
        gen.complete(MESSAGES)
    assert len(calls) == 1 and not sleeps


def test_stream_yields_deltas_then_usage() -> None:
    def sse(obj: dict[str, Any]) -> str:
        return f"data: {json.dumps(obj)}\n\n"

    def chunk(content: str | None, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        }

    body = (
        sse(chunk("Hola "))
        + sse(chunk("mundo [1]."))
        + sse(chunk(None, "stop"))
        + sse(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24},
            }
        )
        + "data: [DONE]\n\n"
    )
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    gen, _ = make(handler)
    deltas = list(gen.stream(MESSAGES))
    assert [d.text for d in deltas if not d.done] == ["Hola ", "mundo [1]."]
    assert deltas[-1].done and deltas[-1].usage is not None
    assert deltas[-1].usage.total_tokens == 24
    assert sent[0]["stream"] is True and sent[0]["stream_options"] == {"include_usage": True}
    assert collect(iter(deltas)).text == "Hola mundo [1]."


def test_counter_is_offline_bpe() -> None:
    pytest.importorskip("bpe_openai")
    gen = OpenAIGenerator(base_url="http://llm.test/v1", model="gpt-4o-mini")
    assert gen.counter.count("hello world") == 2
    text = "word " * 50
    cut = gen.counter.cut(text, 10)
    assert gen.counter.count(text[:cut]) <= 10 < gen.counter.count(text[: cut + 5])


def _stream_chunk(content: str | None, finish: str | None = None) -> str:
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def test_a_key_the_server_echoes_is_not_in_the_error() -> None:
    """Trial 25 (2026-12-06): 'HTTP 401 ... Incorrect API key provided: sk-SECRET-abc123'."""
    key = "sk-SECRET-abc123"

    def unauthorized(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {key}"
        message = f"Incorrect API key provided: {key}"
        return httpx.Response(401, json={"error": {"message": message}})

    gen, _ = make(unauthorized, api_key=key)
    for call in (lambda: gen.complete(MESSAGES), lambda: list(gen.stream(MESSAGES))):
        with pytest.raises(GenerationError, match="HTTP 401") as info:
            call()
        assert key not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize(
    ("body", "content_type", "match"),
    [
        # a chunk that is not JSON (trial 25: a 117-line traceback)
        (_stream_chunk("Cada ") + "data: {this is not json\n\n", "text/event-stream", "not JSON"),
        # cut off before its end (trial 25: shown as a complete, verified answer)
        (_stream_chunk("Cada empleado tiene derecho "), "text/event-stream", "finish_reason"),
        # not a stream at all (trial 25: "the documents do not say")
        ('{"choices": [ {"message": oops', "application/json", "finish_reason"),
        ("<html><body>502 Bad Gateway</body></html>", "text/html", "finish_reason"),
    ],
)
def test_a_broken_stream_is_an_error_not_an_answer(
    body: str, content_type: str, match: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body, headers={"content-type": content_type})

    gen, _ = make(handler)
    with pytest.raises(GenerationError, match=match) as info:
        list(gen.stream(MESSAGES))
    assert info.value.code == "RS800"


def test_a_complete_stream_without_usage_still_ends() -> None:
    body = _stream_chunk("Hola [1].") + _stream_chunk(None, "stop") + "data: [DONE]\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    gen, _ = make(handler)
    deltas = list(gen.stream(MESSAGES))
    assert deltas[-1].done and deltas[-1].finish_reason == "stop"
    assert collect(iter(deltas)).text == "Hola [1]."


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"index": 0, "delta": {"content": 5}, "finish_reason": None}]},
        {"choices": 5},
        {"choices": [], "usage": 5},
    ],
)
def test_a_stream_chunk_of_another_shape_is_an_error(chunk: dict[str, Any]) -> None:
    """Re-test of trial 25 (2026-12-06): such chunks ended in a TypeError traceback."""
    body = f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', **chunk})}\n\n"
    body += _stream_chunk(None, "stop") + "data: [DONE]\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    gen, _ = make(handler)
    with pytest.raises(GenerationError) as info:
        list(gen.stream(MESSAGES))
    assert info.value.code == "RS800"


@pytest.mark.parametrize(("key", "header"), [(None, None), ("sk-test-123", "Bearer sk-test-123")])
def test_the_authorization_header_is_the_key_or_absent(key: str | None, header: str | None) -> None:
    """Without a key a request carries no Authorization header (it sent "Bearer not-needed",
    which a proxy in front of a local server may reject), streamed or not."""
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json=completion("ok"))

    gen, _ = make(handler, api_key=key)
    gen.complete(MESSAGES)
    assert seen == [header]
