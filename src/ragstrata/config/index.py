"""Index settings: BM25 parameters (:class:`BM25Config`) and where chunks and vectors live
(:class:`StoreConfig`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ragstrata.config.checks import check_api_key_env, check_finite, check_range, read_api_key
from ragstrata.errors import ConfigError

STORE_MEMORY = ":memory:"
"""``store.url`` of a Qdrant held in this process's memory only (gone when the store closes)."""
STORE_LOCAL_PREFIX = "local:"
"""``store.url`` prefix of a Qdrant kept on disk by qdrant-client's local mode (``local:PATH``)."""


@dataclass(frozen=True, slots=True)
class BM25Config:
    """Okapi BM25 parameters (Robertson & Zaragoza 2009): ``k1`` in [0, 3], ``b`` in [0, 1]."""

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        check_finite("bm25", self)
        check_range("bm25.k1", self.k1, 0.0, 3.0)
        check_range("bm25.b", self.b, 0.0, 1.0)


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
        check_finite("store", self)
        url = self.url
        if url and url != STORE_MEMORY and not url.startswith(STORE_LOCAL_PREFIX):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(
                    f"store.url={self.url!r} is not a Qdrant location; use empty (embedded), "
                    "'http://HOST:6333', 'https://HOST', 'local:PATH' or ':memory:'"
                )
        # dots inside: a service joins the tenant collection's name with them (Qdrant allows
        # them, but not a name of dots alone)
        if not re.fullmatch(
            r"[A-Za-z0-9_-](?:[A-Za-z0-9_.-]{0,253}[A-Za-z0-9_-])?", self.collection
        ):
            raise ConfigError(
                f"store.collection={self.collection!r} must be 1-255 letters, digits, '_', '-' "
                "or '.' (not first or last)"
            )
        check_api_key_env("store", self.api_key_env, example="QDRANT_API_KEY")
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
        return read_api_key(self.api_key_env, env)
