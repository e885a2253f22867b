"""OpenAICompatEmbedder against a real HTTP server started on loopback by the test.

The server (:class:`FakeEmbeddingsServer`) implements ``POST /v1/embeddings`` deterministically:
a text's vector is the sum of per-word pseudo-random vectors seeded by the word's sha256, so
texts sharing words are close (dense search over it is meaningful). It can be scripted to answer
the next requests with any status, headers and body, to shuffle the ``index`` order, to scale
vectors (not normalized) or to return another dimension. Sleeping, the monotonic clock, the wall
clock and the jitter are injected, so nothing here really waits (beyond one 0.1 s timeout).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("httpx")

from ragstrata.config import EMBEDDERS, EmbedderConfig, RagConfig
from ragstrata.embed.base import Embedder
from ragstrata.embed.openai_compat import (
    RETRY_STATUSES,
    ApiRateLimiter,
    OpenAICompatEmbedder,
    backoff_delay,
    estimate_tokens,
    parse_retry_after,
    redact_url,
)
from ragstrata.errors import (
    ConfigError,
    DimensionMismatchError,
    EmbedderMismatchError,
    EmbeddingError,
)
from ragstrata.ratelimit import TokenBucket
from ragstrata.stages import load_embedder

NATIVE_DIM = 32
SECRET = "sk-test-SECRET-0123456789abcdef"
T0 = 1_700_000_000.0  # injected wall clock (Unix seconds)


# ---------------------------------------------------------------------- the loopback server
def word_vector(word: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim)


def raw_vector(text: str, dim: int = NATIVE_DIM) -> np.ndarray:
    """Unnormalized server vector: sum of word vectors (native size), cut to ``dim``."""
    words = re.findall(r"\w+", text.lower()) or [text]
    return np.sum([word_vector(w, NATIVE_DIM) for w in words], axis=0)[:dim]


def reference(text: str, dim: int = NATIVE_DIM) -> np.ndarray:
    vec = raw_vector(text, dim)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


@dataclass
class Reply:
    status: int
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeEmbeddingsServer:
    """``ThreadingHTTPServer`` on 127.0.0.1 (port 0) serving ``/v1/embeddings``."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.script: deque[Reply] = deque()
        self.shuffle = False
        self.scale = 1.0
        self.return_dim: int | None = None
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake.handle(self.path, dict(self.headers.items()), body)
                if reply.delay_s:
                    threading.Event().wait(reply.delay_s)
                payload = (
                    json.dumps(reply.body).encode() if isinstance(reply.body, dict) else reply.body
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        host, port = self.httpd.server_address[:2]
        self.url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def handle(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(Seen(path, {k.lower(): v for k, v in headers.items()}, body))
            if self.script:
                return self.script.popleft()
        if path != "/v1/embeddings":
            return Reply(404, {"error": {"message": f"no route {path}"}})
        texts = body["input"]
        dim = self.return_dim or body.get("dimensions") or NATIVE_DIM
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": (raw_vector(t, min(dim, NATIVE_DIM)) * self.scale).tolist()
                + [0.5] * max(0, dim - NATIVE_DIM),
            }
            for i, t in enumerate(texts)
        ]
        if self.shuffle:
            data.reverse()
        return Reply(200, {"object": "list", "data": data, "model": body["model"]})

    def __enter__(self) -> FakeEmbeddingsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


class FakeTime:
    """Injected monotonic clock + sleep: sleeping advances the clock and is recorded."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture()
def server() -> Iterator[FakeEmbeddingsServer]:
    with FakeEmbeddingsServer() as srv:
        yield srv


@pytest.fixture()
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture()
def make(
    server: FakeEmbeddingsServer, fake_time: FakeTime
) -> Iterator[Callable[..., OpenAICompatEmbedder]]:
    built: list[OpenAICompatEmbedder] = []

    def build(**kwargs: Any) -> OpenAICompatEmbedder:
        options: dict[str, Any] = {
            "base_url": server.url,
            "model": "fake-embed",
            "batch_size": 4,
            "sleep": fake_time.sleep,
            "clock": fake_time.clock,
            "wall_clock": lambda: T0,
            "jitter": lambda: 1.0,  # full jitter at its ceiling: delays are deterministic
        }
        options.update(kwargs)
        emb = OpenAICompatEmbedder(**options)
        built.append(emb)
        return emb

    yield build
    for emb in built:
        emb.close()


TEXTS = [f"document number {i} about topic {i % 3} with words w{i}" for i in range(10)]


# ---------------------------------------------------------------------- encoding
def test_satisfies_the_embedder_protocol(make: Callable[..., OpenAICompatEmbedder]) -> None:
    emb = make(dimensions=16, max_input_tokens=512)
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim, emb.max_seq_length, emb.special_tokens) == (
        "openai:fake-embed",
        16,
        512,
        0,
    )


def test_order_preserved_with_shuffled_index_and_batching(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    server.shuffle = True
    emb = make(batch_size=4)
    out = emb.embed_documents(TEXTS)
    assert out.shape == (10, NATIVE_DIM) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.stack([reference(t) for t in TEXTS]), atol=1e-6)
    assert [len(r.body["input"]) for r in server.requests] == [4, 4, 2]
    assert [t for r in server.requests for t in r.body["input"]] == TEXTS
    assert all(r.path == "/v1/embeddings" for r in server.requests)


def test_rows_are_l2_normalized_float32(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    server.scale = 37.5
    emb = make()
    out = emb.embed_documents(TEXTS[:3])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    query = emb.embed_query(TEXTS[0])
    assert query.shape == (NATIVE_DIM,) and query.dtype == np.float32
    np.testing.assert_allclose(query, out[0], atol=1e-6)


def test_request_body_and_auth_header(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    make(dimensions=8, api_key=SECRET).embed_query("hello")
    make().embed_query("hello")
    with_dims, plain = server.requests
    assert with_dims.body == {
        "model": "fake-embed",
        "input": ["hello"],
        "encoding_format": "float",
        "dimensions": 8,
    }
    assert with_dims.headers["authorization"] == f"Bearer {SECRET}"
    assert "dimensions" not in plain.body  # only sent when configured
    assert "authorization" not in plain.headers  # no key, no header


def test_empty_input_and_dimension_probe(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    assert make(dimensions=8).embed_documents([]).shape == (0, 8)
    assert server.requests == []  # the configured size needs no request
    emb = make()
    assert emb.dim == NATIVE_DIM  # learned with one probe request
    assert emb.dim == NATIVE_DIM
    assert len(server.requests) == 1


def test_base64_embeddings_are_decoded(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    import base64

    vec = np.arange(1, 5, dtype="<f4")
    encoded = base64.b64encode(vec.tobytes()).decode()
    server.script.append(Reply(200, {"data": [{"index": 0, "embedding": encoded}]}))
    np.testing.assert_allclose(make().embed_query("x"), vec / np.linalg.norm(vec), atol=1e-6)


# ---------------------------------------------------------------------- dimensions
def test_wrong_dimension_is_dimension_mismatch(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    server.return_dim = 12
    with pytest.raises(DimensionMismatchError, match=r"12-dim.*embedder\.dimensions=8"):
        make(dimensions=8).embed_documents(["a", "b"])


def test_dimension_change_between_responses_is_detected(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    emb = make()
    emb.embed_query("first")
    server.return_dim = NATIVE_DIM + 4
    with pytest.raises(DimensionMismatchError, match=f"{NATIVE_DIM + 4}-dim"):
        emb.embed_query("second")


def test_ragged_vectors_in_one_response(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    data = [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0, 0.0, 0.0]}]
    server.script.append(Reply(200, {"data": data}))
    with pytest.raises(DimensionMismatchError):
        make().embed_documents(["a", "b"])


# ---------------------------------------------------------------------- retries
def test_retry_on_5xx_then_success(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.extend([Reply(503, {"error": "overloaded"}), Reply(502, b"bad gateway")])
    out = make(backoff_base_s=0.5, backoff_cap_s=30.0).embed_documents(TEXTS[:2])
    np.testing.assert_allclose(out[1], reference(TEXTS[1]), atol=1e-6)
    assert len(server.requests) == 3
    assert fake_time.sleeps == [0.5, 1.0]  # jitter()=1: the ceilings base * 2**attempt


def test_retry_after_seconds_is_honored(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.append(
        Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "7"})
    )
    make().embed_query("x")
    assert fake_time.sleeps == [7.0]
    assert len(server.requests) == 2


def test_retry_after_http_date_and_ms_are_honored(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.append(Reply(503, b"", {"Retry-After": formatdate(T0 + 12, usegmt=True)}))
    server.script.append(Reply(429, b"", {"retry-after-ms": "250", "Retry-After": "9"}))
    make().embed_query("x")
    assert fake_time.sleeps == [12.0, 0.25]


def test_retry_after_beyond_the_limit_fails_at_once(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.append(Reply(429, {"error": {"message": "quota"}}, {"Retry-After": "3600"}))
    with pytest.raises(EmbeddingError, match="3600 s"):
        make(max_retry_after_s=120).embed_query("x")
    assert len(server.requests) == 1 and fake_time.sleeps == []


def test_gives_up_after_max_retries(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.extend(Reply(503, {"error": {"message": "down"}}) for _ in range(10))
    with pytest.raises(EmbeddingError) as info:
        make(max_retries=2, backoff_base_s=1.0, backoff_cap_s=1.5).embed_query("x")
    message = str(info.value)
    assert "after 3 attempts" in message and "HTTP 503: down" in message
    assert len(server.requests) == 3
    assert fake_time.sleeps == [1.0, 1.5]  # capped


def test_401_fails_fast_and_never_shows_the_key(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "code": "bad_key"}}
    server.script.append(Reply(401, echo))
    emb = make(api_key=SECRET, api_key_env="MY_EMBED_KEY")
    with pytest.raises(EmbeddingError) as info:
        emb.embed_query("x")
    message = str(info.value)
    assert "HTTP 401" in message and "Incorrect API key provided" in message
    assert "$MY_EMBED_KEY" in message
    assert SECRET not in message and SECRET not in repr(emb)
    assert len(server.requests) == 1 and fake_time.sleeps == []


def test_other_4xx_fails_at_once_with_server_message(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    message = "This model's maximum context length is 8192 tokens"
    server.script.append(Reply(400, {"object": "error", "message": message}))
    with pytest.raises(EmbeddingError, match="maximum context length"):
        make().embed_query("x")
    assert len(server.requests) == 1


def test_wrong_path_gives_a_hint(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder]
) -> None:
    bad = make(base_url=server.url.removesuffix("/v1"))  # forgot /v1
    with pytest.raises(EmbeddingError, match=r"HTTP 404: no route /embeddings.*base_url"):
        bad.embed_query("x")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"{not json"),
        Reply(200, {"data": "nope"}),
        Reply(200, {"data": [{"index": 5, "embedding": [1.0]}]}),
        Reply(200, {"data": [{"index": 0, "embedding": [1.0, float("nan")]}]}),
        Reply(200, {"data": []}),
    ],
    ids=["not-json", "data-not-list", "index-out-of-range", "nan", "count"],
)
def test_malformed_response_fails_without_retry(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], reply: Reply
) -> None:
    server.script.append(reply)
    with pytest.raises(EmbeddingError):
        make().embed_query("x")
    assert len(server.requests) == 1


def test_connection_refused_is_retried_then_reported(
    make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = make(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    with pytest.raises(EmbeddingError, match="after 3 attempts; last error: ConnectError"):
        emb.embed_query("x")
    assert len(fake_time.sleeps) == 2


def test_timeout_is_retried(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    server.script.append(Reply(200, {"data": []}, delay_s=0.3))  # answered too late
    out = make(timeout_s=0.1).embed_query("late")
    np.testing.assert_allclose(out, reference("late"), atol=1e-6)
    assert len(server.requests) == 2 and fake_time.sleeps == [0.5]


# ---------------------------------------------------------------------- rate limits
def test_requests_per_minute_spacing(
    server: FakeEmbeddingsServer, make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    emb = make(requests_per_minute=2, batch_size=1)
    emb.embed_documents(["a", "b", "c", "d"])  # a burst of 2, then one every 30 s
    assert fake_time.sleeps == pytest.approx([30.0, 30.0])
    assert len(server.requests) == 4


def test_tokens_per_minute_spacing(
    make: Callable[..., OpenAICompatEmbedder], fake_time: FakeTime
) -> None:
    text = "aaaaa bbbbb ccccc ddddd"
    assert estimate_tokens(text) == 4
    emb = make(tokens_per_minute=10, batch_size=1)
    emb.embed_documents([text, text, text])  # 10 -> 6 -> 2; the third waits for 2 tokens
    assert fake_time.sleeps == pytest.approx([12.0])  # 2 tokens at 10/60 per second


def test_token_bucket_allows_oversized_amounts_and_repays_them(fake_time: FakeTime) -> None:
    bucket = TokenBucket(3, 3 / 60, clock=fake_time.clock)
    assert bucket.wait_time(4) == 0.0  # full bucket: an oversized request may go
    bucket.take(4)  # level -1
    assert bucket.wait_time(3) == pytest.approx(80.0)
    fake_time.sleep(20.0)
    assert bucket.wait_time(3) == pytest.approx(60.0)


def test_rate_limiter_without_limits_never_sleeps(fake_time: FakeTime) -> None:
    limiter = ApiRateLimiter(
        requests_per_minute=None,
        tokens_per_minute=None,
        clock=fake_time.clock,
        sleep=fake_time.sleep,
    )
    assert all(limiter.acquire(10_000) == 0.0 for _ in range(100))
    assert fake_time.sleeps == []


# ---------------------------------------------------------------------- pure helpers
def test_backoff_is_full_jitter_and_capped() -> None:
    assert [backoff_delay(a, base_s=0.5, cap_s=4.0, jitter=lambda: 1.0) for a in range(6)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        4.0,
        4.0,
    ]
    assert backoff_delay(3, base_s=0.5, cap_s=4.0, jitter=lambda: 0.25) == 1.0
    assert backoff_delay(10_000, base_s=0.5, cap_s=30.0, jitter=lambda: 0.5) == 15.0
    assert backoff_delay(0, base_s=0.5, cap_s=4.0, jitter=lambda: 0.0) == 0.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "5"}, 5.0),
        ({"retry-after": " 0 "}, 0.0),
        ({"retry-after": formatdate(T0 + 30, usegmt=True)}, 30.0),
        ({"retry-after": formatdate(T0 - 30, usegmt=True)}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=T0) == expected


def test_retry_statuses() -> None:
    assert frozenset({429, 500, 502, 503, 504}) == RETRY_STATUSES


def test_redact_url() -> None:
    assert redact_url("https://u:p@example.com:8443/v1") == "https://example.com:8443/v1"
    assert redact_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"


def test_estimate_tokens_examples() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("   \n") == 0
    assert estimate_tokens("hello") == 1
    assert estimate_tokens("connection") == 2
    assert estimate_tokens("1234567") == 3
    assert estimate_tokens("ERR_CONN_RESET.") == 6
    assert estimate_tokens("数据库") == 3
    sentence = "The error ERR_CONN_RESET means the upstream server closed the connection."
    assert 15 <= estimate_tokens(sentence) <= 25  # cl100k: 15 tokens


@given(st.text(max_size=200))
def test_estimate_tokens_is_monotone_in_prefixes(text: str) -> None:
    counts = [estimate_tokens(text[:i]) for i in range(len(text) + 1)]
    assert counts == sorted(counts)


def test_counter_cut_respects_the_budget(make: Callable[..., OpenAICompatEmbedder]) -> None:
    counter = make().counter
    text = " ".join(TEXTS)
    cut = counter.cut(text, 20)
    assert counter.count(text[:cut]) <= 20 < counter.count(text[: cut + 1])


def test_constructor_validates(server: FakeEmbeddingsServer) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatEmbedder(base_url="ftp://x/v1", model="m")
    with pytest.raises(ConfigError, match="dimensions"):
        OpenAICompatEmbedder(base_url=server.url, model="m", dimensions=0)
    with pytest.raises(ConfigError, match="batch_size"):
        OpenAICompatEmbedder(base_url=server.url, model="m", batch_size=0)


# ---------------------------------------------------------------------- config + loading
def test_config_defaults_and_validation() -> None:
    assert "openai" in EMBEDDERS
    cfg = EmbedderConfig(name="openai")
    assert (cfg.base_url, cfg.model, cfg.dimensions, cfg.api_key_env) == (
        "https://api.openai.com/v1",
        "text-embedding-3-small",
        None,
        "OPENAI_API_KEY",
    )
    for kwargs, named in [
        ({"base_url": "api.openai.com/v1"}, "embedder.base_url"),
        ({"model": " "}, "embedder.model"),
        ({"dimensions": 0}, "embedder.dimensions"),
        ({"timeout_s": 0.0}, "embedder.timeout_s"),
        ({"max_retries": -1}, "embedder.max_retries"),
        ({"requests_per_minute": 0}, "embedder.requests_per_minute"),
        ({"tokens_per_minute": 0}, "embedder.tokens_per_minute"),
        ({"max_input_tokens": 8}, "embedder.max_input_tokens"),
    ]:
        with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
            EmbedderConfig(name="openai", **kwargs)


def test_config_never_echoes_a_key_put_in_api_key_env() -> None:
    with pytest.raises(ConfigError) as info:
        EmbedderConfig(name="openai", api_key_env=SECRET)
    assert "embedder.api_key_env" in str(info.value) and SECRET not in str(info.value)


def test_config_from_env_strings(tmp_path: Path) -> None:
    env = {
        "RAGSTRATA_HOME": str(tmp_path),
        "RAGSTRATA_EMBEDDER_NAME": "openai",
        "RAGSTRATA_EMBEDDER_BASE_URL": "http://127.0.0.1:8000/v1",
        "RAGSTRATA_EMBEDDER_DIMENSIONS": "256",
        "RAGSTRATA_EMBEDDER_TIMEOUT_S": "2.5",
        "RAGSTRATA_EMBEDDER_REQUESTS_PER_MINUTE": "none",
    }
    cfg = RagConfig.load(env=env).embedder
    assert (cfg.base_url, cfg.dimensions, cfg.timeout_s, cfg.requests_per_minute) == (
        "http://127.0.0.1:8000/v1",
        256,
        2.5,
        None,
    )


def test_resolve_api_key() -> None:
    cfg = EmbedderConfig(name="openai", api_key_env="MY_KEY")
    assert cfg.resolve_api_key({"MY_KEY": " sk-1 "}) == "sk-1"
    assert cfg.resolve_api_key({"MY_KEY": ""}) is None
    assert cfg.resolve_api_key({}) is None
    no_key = EmbedderConfig(name="openai", api_key_env="")
    assert no_key.resolve_api_key({"": "x", "OPENAI_API_KEY": "sk-1"}) is None


def test_load_embedder_routes_openai(
    server: FakeEmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSTRATA_TEST_EMBED_KEY", SECRET)
    cfg = EmbedderConfig(
        name="openai",
        base_url=server.url,
        model="fake-embed",
        dimensions=16,
        api_key_env="RAGSTRATA_TEST_EMBED_KEY",
        batch_size=3,
    )
    emb = load_embedder("openai", batch_size=cfg.batch_size, config=cfg)
    assert isinstance(emb, OpenAICompatEmbedder)
    assert emb.embed_documents(TEXTS[:4]).shape == (4, 16)
    assert [len(r.body["input"]) for r in server.requests] == [3, 1]
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    emb.close()
    with pytest.raises(ConfigError, match="needs its settings"):
        load_embedder("openai")


# ---------------------------------------------------------------------- end to end
def test_pipeline_ingests_and_searches_through_the_loopback_server(
    server: FakeEmbeddingsServer, tmp_path: Path
) -> None:
    pytest.importorskip("markdown_it")
    pytest.importorskip("qdrant_edge")
    from ragstrata.pipeline import Ragstrata

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "errors.md").write_text(
        "# Operations\n\n## Error codes\n\nThe error ERR_CONN_RESET means the upstream server "
        "closed the connection. Retry the request after a short delay.\n",
        encoding="utf-8",
    )
    (corpus / "billing.md").write_text(
        "# Billing\n\n## Invoices\n\nInvoices are sent on the first day of each month by "
        "email to the account owner.\n",
        encoding="utf-8",
    )

    def engine(**changes: Any) -> Ragstrata:
        settings: dict[str, Any] = {"base_url": server.url, "model": "fake-embed", **changes}
        cfg = EmbedderConfig(name="openai", batch_size=8, **settings)
        config = RagConfig(home=tmp_path / "home", embedder=cfg)
        # the pipeline builds its embedder with load_embedder(name, ...); pass the config here
        return Ragstrata(config, embedder=load_embedder("openai", config=cfg, batch_size=8))

    with engine() as rag:
        report = rag.ingest([corpus])
        assert (report.status, report.added) == ("ok", 2)
        assert rag.stats()["embedder"] == "openai:fake-embed"
        assert rag.stats()["dim"] == NATIVE_DIM
        hits = rag.search("when does the upstream server close the connection", mode="dense").hits
        assert hits[0].chunk.source.endswith("errors.md")
        hits = rag.search("monthly invoices by email", mode="dense").hits
        assert hits[0].chunk.source.endswith("billing.md")
    sent = [t for r in server.requests for t in r.body.get("input", [])]
    assert any("ERR_CONN_RESET" in t for t in sent)

    for changed in ({"dimensions": 16}, {"model": "other-model"}):
        with engine(**changed) as rag, pytest.raises(EmbedderMismatchError):
            rag.search("invoices", mode="dense")
