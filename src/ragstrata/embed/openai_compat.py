"""Embeddings from any OpenAI-compatible HTTP endpoint (``POST {base_url}/embeddings``).

Works with OpenAI and with servers that speak its embeddings API (vLLM, Hugging Face TEI,
Ollama, LiteLLM, llama.cpp, ...). :class:`OpenAICompatEmbedder` implements the
:class:`~ragstrata.embed.base.Embedder` protocol:

* requests ``{"model", "input": [...], "encoding_format": "float"}`` plus ``"dimensions"`` only
  when configured, ``batch_size`` texts each; rows are put back in input order by the
  response's ``index`` field, L2-normalized to float32 and checked against the expected
  dimension (:class:`~ragstrata.errors.DimensionMismatchError`);
* sends ``Authorization: Bearer <key>`` when a key is given; the key never appears in a log
  line, an error message (a server that echoes it is scrubbed) or ``repr``;
* paces requests with two token buckets (requests/min and estimated tokens/min);
* retries 429, 500, 502, 503, 504, connection errors and timeouts with capped exponential
  backoff with full jitter, ``sleep = uniform(0, min(cap, base * 2**attempt))`` (M. Brooker,
  "Exponential Backoff And Jitter", AWS Architecture Blog, 2015), except that a
  ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms`` header is honored as given;
  any other 4xx fails at once with the server's message.

Identity: :attr:`OpenAICompatEmbedder.name` is ``"openai:<model>"`` and
:attr:`OpenAICompatEmbedder.dim` the vector size; the index manifest records both, so changing
the model or the dimensions is refused as an embedder mismatch (``RS502``).

Token counting: a remote model's tokenizer is not available offline, so :func:`estimate_tokens`
estimates BPE tokens (OpenAI's ``cl100k``/``o200k``) from characters, erring on the high side
for English text; it sizes chunks and feeds the tokens/min bucket. ``max_seq_length`` is the
configured ``max_input_tokens`` (8191 for text-embedding-3); chunks default to 512 estimated
tokens, far below it, so an estimate that is off by 2x still fits the model.

Clock, sleep, wall clock and jitter are injectable, so tests run fast and deterministically.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ragstrata.embed.base import l2_normalize
from ragstrata.errors import (
    ConfigError,
    DimensionMismatchError,
    EmbeddingError,
)
from ragstrata.optional import require
from ragstrata.ratelimit import TokenBucket
from ragstrata.text.tokens import CallableTokenCounter, TokenCounter
from ragstrata.types import FloatArray

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses retried with backoff; every other non-2xx status fails at once."""

_PROBE_TEXT: Final = "dimension probe"
_PIECES: Final = re.compile(r"[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]")
_MAX_MESSAGE: Final = 500
_LOOPBACK: Final = frozenset({"localhost", "127.0.0.1", "::1"})


# ---------------------------------------------------------------------- pure helpers
def estimate_tokens(text: str) -> int:
    """Estimated BPE token count of ``text`` (no tokenizer needed; 0 for ``""``).

    A run of ASCII letters costs ``ceil(n / 5)``, a run of digits ``ceil(n / 3)`` (cl100k and
    o200k split numbers into groups of at most 3 digits), every other non-space character 1
    (punctuation, symbols, and each non-ASCII character, which covers CJK at about one token
    per character); whitespace is free. English prose comes out at about 4 characters and 0.63
    words per estimated token, about 1.2x the count of OpenAI's tokenizers (roughly 0.75 words
    per token); Markdown with code and tables at about 3 characters per token. It errs high, so
    chunks sized with it fit the model. Monotone: appending characters never lowers the count,
    as :meth:`TokenCounter.cut` needs.
    """
    total = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if first.isascii() and first.isalpha():
            total += -(-len(piece) // 5)
        elif first.isascii() and first.isdigit():
            total += -(-len(piece) // 3)
        else:
            total += 1
    return total


def backoff_delay(
    attempt: int, *, base_s: float, cap_s: float, jitter: Callable[[], float]
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` >= 0): full jitter,
    ``jitter() * min(cap_s, base_s * 2**attempt)`` with ``jitter()`` uniform in [0, 1)
    (Brooker 2015). Never negative, never above ``cap_s``."""
    ceiling = min(cap_s, base_s * 2.0 ** min(attempt, 62))
    return max(0.0, min(1.0, jitter())) * ceiling


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asks to wait, from ``retry-after-ms`` (milliseconds, as OpenAI sends)
    or ``Retry-After`` (delay-seconds or an HTTP date, RFC 9110 section 10.2.3); ``now`` is the
    Unix time for dates. A date in the past gives 0; ``None`` when absent or unparsable.
    ``headers`` must be case-insensitive (as ``httpx.Headers`` is) or lower-case."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = math.nan
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    if raw.isdigit():
        return float(raw)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None
    return max(0.0, when.timestamp() - now)


def redact_url(url: str) -> str:
    """``url`` without ``user:password@`` (safe for logs and error messages)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# ---------------------------------------------------------------------- rate limiting
class ApiRateLimiter:
    """Requests/min and tokens/min buckets (each optional), thread-safe.

    :meth:`acquire` blocks (through ``sleep``) until one request of ``tokens`` estimated tokens
    fits both limits, then charges it. Each bucket's capacity is one minute's allowance.
    """

    def __init__(
        self,
        *,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self._requests = (
            TokenBucket(requests_per_minute, requests_per_minute / 60.0, clock=clock)
            if requests_per_minute
            else None
        )
        self._tokens = (
            TokenBucket(tokens_per_minute, tokens_per_minute / 60.0, clock=clock)
            if tokens_per_minute
            else None
        )
        self._sleep = sleep
        self._lock = threading.Lock()

    def acquire(self, tokens: int) -> float:
        """Wait for room for one request of ``tokens`` tokens and charge it; returns the
        seconds waited (as asked of ``sleep``)."""
        waited = 0.0
        with self._lock:
            while True:
                wait = max(
                    self._requests.wait_time(1) if self._requests else 0.0,
                    self._tokens.wait_time(tokens) if self._tokens else 0.0,
                )
                if wait <= 1e-9:
                    break
                self._sleep(wait)
                waited += wait
            if self._requests:
                self._requests.take(1)
            if self._tokens:
                self._tokens.take(tokens)
        return waited


# ---------------------------------------------------------------------- the embedder
class OpenAICompatEmbedder:
    """Embedder over an OpenAI-compatible ``/embeddings`` endpoint (see the module docstring).

    Cheap constructor: arguments are validated at once (:class:`ConfigError`), the HTTP client
    is created on first use; ``httpx`` is needed (``pip install 'ragstrata[openai]'``,
    :class:`MissingDependencyError` otherwise). ``dimensions=None`` lets the server choose; the
    first access to :attr:`dim` before any embedding then costs one probe request.

    Errors: :class:`EmbeddingError` for a rejected request (4xx other than 429, with the
    server's message), for retries exhausted (with the number of attempts and the last
    status), for a ``Retry-After`` longer than ``max_retry_after_s`` and for a malformed
    response; :class:`DimensionMismatchError` for vectors of another size than expected.
    Thread-safe.
    """

    special_tokens = 0

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 5,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        max_input_tokens: int = 8191,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        api_key_env: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"base_url={redact_url(base_url)!r} is not an http(s) URL; use e.g. "
                "'https://api.openai.com/v1'"
            )
        if not model.strip():
            raise ConfigError("model is empty; set the server's model id")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions={dimensions} must be >= 1 or None")
        if batch_size < 1:
            raise ConfigError(f"batch_size={batch_size} must be >= 1")
        if not timeout_s > 0:
            raise ConfigError(f"timeout_s={timeout_s} must be > 0")
        if max_retries < 0:
            raise ConfigError(f"max_retries={max_retries} must be >= 0")
        if max_input_tokens < 1:
            raise ConfigError(f"max_input_tokens={max_input_tokens} must be >= 1")
        if backoff_base_s < 0 or backoff_cap_s < 0 or max_retry_after_s < 0:
            raise ConfigError("backoff_base_s, backoff_cap_s and max_retry_after_s must be >= 0")
        require("httpx", extra="openai")  # fail now, not at the first request
        self._url = base_url.rstrip("/") + "/embeddings"
        self._shown_url = redact_url(self._url)
        self._model = model
        self._api_key = api_key or None
        self._key_hint = (
            f"${api_key_env}" if api_key_env else "embedder.api_key_env (or pass api_key)"
        )
        self._dimensions = dimensions
        self._dim: int | None = dimensions
        self._batch_size = batch_size
        self._timeout_s = float(timeout_s)
        self._max_retries = max_retries
        self._max_input_tokens = max_input_tokens
        self._backoff_base_s = backoff_base_s
        self._backoff_cap_s = backoff_cap_s
        self._max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self._wall_clock = wall_clock
        self._jitter = jitter
        self._limiter = ApiRateLimiter(
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            clock=clock,
            sleep=sleep,
        )
        self._counter = CallableTokenCounter(estimate_tokens)
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        if parts.scheme == "http" and self._api_key and parts.hostname not in _LOOPBACK:
            logger.warning(
                "the embeddings API key is sent over plain http to %s; use https", parts.hostname
            )

    def __repr__(self) -> str:
        return (
            f"OpenAICompatEmbedder(base_url={self._shown_url.removesuffix('/embeddings')!r}, "
            f"model={self._model!r}, dimensions={self._dimensions!r}, "
            f"api_key={'<set>' if self._api_key else None})"
        )

    # ------------------------------------------------------------------ protocol attributes
    @property
    def name(self) -> str:
        """``"openai:<model>"``; the manifest records it together with :attr:`dim`."""
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        """The vector size: ``dimensions`` when configured, else learned from the server (one
        probe request if nothing was embedded yet)."""
        if self._dim is None:
            self._embed_batch([_PROBE_TEXT])
        assert self._dim is not None  # set by _embed_batch
        return self._dim

    @property
    def max_seq_length(self) -> int:
        return self._max_input_tokens

    @property
    def counter(self) -> TokenCounter:
        """Estimating counter (:func:`estimate_tokens`); no tokenizer is downloaded."""
        return self._counter

    # ------------------------------------------------------------------ encoding
    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 array (n, dim), rows L2-normalized, in input order; (0, dim) for no texts.
        Sends ``ceil(n / batch_size)`` requests (more on retries)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [
            self._embed_batch(texts[i : i + self._batch_size])
            for i in range(0, len(texts), self._batch_size)
        ]
        return np.concatenate(rows, axis=0)

    def embed_query(self, text: str) -> FloatArray:
        """float32 array (dim,), L2-normalized (the same encoding as documents)."""
        vec: FloatArray = self._embed_batch([text])[0]
        return vec

    def close(self) -> None:
        """Close the HTTP connection pool (idempotent; a later call opens a new one)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> OpenAICompatEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _http(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self._timeout_s),
                    headers={"User-Agent": "ragstrata"},
                    follow_redirects=False,
                )
            return self._client

    def _embed_batch(self, texts: Sequence[str]) -> FloatArray:
        payload: dict[str, Any] = {
            "model": self._model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        data = self._post(payload, tokens=sum(estimate_tokens(t) for t in texts))
        vectors = self._parse(data, len(texts))
        with self._lock:
            if self._dim is None:
                self._dim = vectors.shape[1]
        if vectors.shape[1] != self._dim:
            configured = (
                f"embedder.dimensions={self._dimensions}"
                if self._dimensions is not None
                else f"the {self._dim}-dim vectors it returned before"
            )
            raise DimensionMismatchError(
                f"{self._shown_url} returned {vectors.shape[1]}-dim vectors for model "
                f"{self._model!r}, but {configured}; set embedder.dimensions to the model's "
                "size (or unset it), or check that the server supports the dimensions parameter"
            )
        return l2_normalize(vectors)

    def _post(self, payload: Mapping[str, Any], *, tokens: int) -> Any:
        """POST with rate limiting and retries; returns the decoded JSON body."""
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        attempts = self._max_retries + 1
        last = "no attempt"
        for attempt in range(attempts):
            self._limiter.acquire(tokens)
            retry_after: float | None = None
            try:
                response = self._http().post(self._url, json=payload, headers=headers)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                last = f"{type(exc).__name__}: {self._scrub(str(exc)) or 'no detail'}"
            except httpx.HTTPError as exc:  # e.g. an unsupported URL: retrying cannot help
                raise EmbeddingError(
                    f"embeddings request to {self._shown_url} failed: "
                    f"{type(exc).__name__}: {self._scrub(str(exc))}"
                ) from exc
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return self._decode(response)
                message = self._error_message(response)
                last = f"HTTP {status}: {message}"
                if status not in RETRY_STATUSES:
                    raise EmbeddingError(
                        f"{self._shown_url} rejected the embeddings request for model "
                        f"{self._model!r}: {last}{self._hint(status)}"
                    )
                retry_after = parse_retry_after(response.headers, now=self._wall_clock())
                if retry_after is not None and retry_after > self._max_retry_after_s:
                    raise EmbeddingError(
                        f"{self._shown_url} asked to retry after {retry_after:.0f} s (more than "
                        f"{self._max_retry_after_s:.0f} s; quota exhausted?): {last}"
                    )
            if attempt == attempts - 1:
                break
            delay = (
                retry_after
                if retry_after is not None
                else backoff_delay(
                    attempt,
                    base_s=self._backoff_base_s,
                    cap_s=self._backoff_cap_s,
                    jitter=self._jitter,
                )
            )
            logger.warning(
                "embeddings request to %s failed (%s); retry %d of %d in %.2f s",
                self._shown_url,
                last,
                attempt + 1,
                self._max_retries,
                delay,
            )
            self._sleep(delay)
        raise EmbeddingError(
            f"embeddings request to {self._shown_url} failed after {attempts} attempt"
            f"{'s' if attempts != 1 else ''}; last error: {last}"
        )

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError
            raise EmbeddingError(
                f"{self._shown_url} answered HTTP {response.status_code} with a body that is "
                f"not JSON: {self._scrub(response.text[:200])!r}"
            ) from exc

    def _parse(self, data: Any, n: int) -> FloatArray:
        """(n, d) float32 rows in input order from an embeddings response body."""

        def bad(why: str) -> EmbeddingError:
            return EmbeddingError(
                f"{self._shown_url} returned a malformed embeddings response: {why}"
            )

        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise bad("no 'data' list")
        if len(items) != n:
            raise bad(f"{len(items)} embeddings for {n} inputs")
        rows: list[FloatArray | None] = [None] * n
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise bad(f"data[{position}] is not an object")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
                raise bad(f"data[{position}].index={index!r} is not in [0, {n})")
            if rows[index] is not None:
                raise bad(f"index {index} appears twice")
            rows[index] = self._vector(item.get("embedding"), position, bad)
        sizes = {row.shape[0] for row in rows if row is not None}
        if len(sizes) != 1:
            raise DimensionMismatchError(
                f"{self._shown_url} returned vectors of different sizes {sorted(sizes)} in one "
                "response"
            )
        return np.stack([row for row in rows if row is not None])

    @staticmethod
    def _vector(raw: Any, position: int, bad: Callable[[str], EmbeddingError]) -> FloatArray:
        if isinstance(raw, str):  # base64 little-endian float32, if the server ignores "float"
            try:
                buf = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise bad(f"data[{position}].embedding is a string but not base64") from exc
            if len(buf) % 4:
                raise bad(f"data[{position}].embedding has {len(buf)} bytes, not float32s")
            vec = np.frombuffer(buf, dtype="<f4").astype(np.float32)
        elif isinstance(raw, list):
            try:
                vec = np.asarray(raw, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise bad(f"data[{position}].embedding is not a list of numbers") from exc
        else:
            raise bad(f"data[{position}].embedding is missing")
        if vec.ndim != 1 or vec.shape[0] == 0:
            raise bad(f"data[{position}].embedding is not a non-empty flat list of numbers")
        if not np.all(np.isfinite(vec)):
            raise bad(f"data[{position}].embedding holds NaN or infinite values")
        return vec

    def _error_message(self, response: httpx.Response) -> str:
        """The server's error message (OpenAI, TEI, vLLM and FastAPI shapes), scrubbed of the
        API key and cut to 500 characters."""
        text = response.text
        message: Any = None
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict):
                message = error.get("message")
            elif isinstance(error, str):
                message = error
            message = message or body.get("message") or body.get("detail")
        if not isinstance(message, str):
            message = text.strip() or response.reason_phrase or "no message"
        return self._scrub(message)[:_MAX_MESSAGE]

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            if self._api_key is None:
                return f" (no API key was sent: set {self._key_hint})"
            return f" (check the API key in {self._key_hint})"
        if status == 404:
            return " (check embedder.base_url, e.g. it should end with /v1, and embedder.model)"
        return ""
