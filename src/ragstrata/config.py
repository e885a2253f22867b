"""Configuration: one frozen dataclass per stage, validated at construction.

:class:`RagConfig` is what the library, the CLI and (later) the service all build. It comes from,
in increasing precedence: defaults, a TOML file (``$RAGSTRATA_HOME/config.toml`` or an explicit
path), then environment variables (``RAGSTRATA_*``). Nothing outside this module reads
``os.environ``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ragstrata.errors import ConfigError

EMBEDDERS = ("minilm", "minilm-onnx", "minilm-onnx-fp32", "e5")
"""Packaged embedders: ``minilm`` (all-MiniLM-L6-v2 on torch), ``minilm-onnx`` (the same model on
ONNX Runtime, int8), ``minilm-onnx-fp32`` (ONNX Runtime, fp32: same vectors as torch) and ``e5``
(multilingual-e5-small, 4-bit)."""


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
    """Which packaged embedder to use and how to batch it.

    ``name``: one of :data:`EMBEDDERS`; ``batch_size``: texts per forward pass (>= 1);
    ``threads``: intra-op threads for the model (0 = library default).
    """

    name: str = "minilm-onnx"
    batch_size: int = 32
    threads: int = 0

    def __post_init__(self) -> None:
        if self.name not in EMBEDDERS:
            raise ConfigError(
                f"embedder.name={self.name!r} is unknown; choose one of {', '.join(EMBEDDERS)}"
            )
        if self.batch_size < 1:
            raise ConfigError(f"embedder.batch_size={self.batch_size} must be >= 1")
        if self.threads < 0:
            raise ConfigError(f"embedder.threads={self.threads} must be >= 0")


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
    not both 0).
    """

    top_k: int = 5
    candidates: int = 50
    rrf_k: int = 60
    dense_weight: float = 0.6
    bm25_weight: float = 0.4

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"retrieval.top_k={self.top_k} must be >= 1")
        if self.candidates < 1:
            raise ConfigError(f"retrieval.candidates={self.candidates} must be >= 1")
        if self.rrf_k < 1:
            raise ConfigError(f"retrieval.rrf_k={self.rrf_k} must be >= 1")
        _check_range("retrieval.dense_weight", self.dense_weight, 0.0, 1e6)
        _check_range("retrieval.bm25_weight", self.bm25_weight, 0.0, 1e6)
        if self.dense_weight == 0 and self.bm25_weight == 0:
            raise ConfigError("retrieval.dense_weight and retrieval.bm25_weight are both 0")


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """Extractive answerer and context assembly.

    ``context_tokens``: token budget of the assembled context; ``max_sentences``: sentences in an
    extractive answer; ``min_dense_score``: refuse when the best hit's cosine similarity is
    below it and no query term matched lexically (see docs/configuration.md).
    """

    context_tokens: int = 1500
    max_sentences: int = 3
    min_dense_score: float = 0.30

    def __post_init__(self) -> None:
        if self.context_tokens < 64:
            raise ConfigError(f"answer.context_tokens={self.context_tokens} must be >= 64")
        if self.max_sentences < 1:
            raise ConfigError(f"answer.max_sentences={self.max_sentences} must be >= 1")
        _check_range("answer.min_dense_score", self.min_dense_score, -1.0, 1.0)


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """Ingestion limits: files above ``max_file_bytes`` are rejected (reported, not fatal)."""

    max_file_bytes: int = 20_000_000

    def __post_init__(self) -> None:
        if self.max_file_bytes < 1:
            raise ConfigError(f"ingest.max_file_bytes={self.max_file_bytes} must be >= 1")


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
        ``[retrieval]``, ``[answer]``, ``[ingest]``). Environment variables are
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


def _coerce(name: str, type_name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        if type_name.startswith("int"):
            return None if value.lower() in ("", "none") and "None" in type_name else int(value)
        if type_name.startswith("float"):
            return float(value)
    except ValueError as exc:
        raise ConfigError(f"{name}={value!r} is not a valid {type_name}") from exc
    return value
