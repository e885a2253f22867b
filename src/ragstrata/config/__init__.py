"""Configuration: one frozen dataclass per stage, validated at construction.

:class:`RagConfig` is what the library, the CLI and (later) the service all build. It comes from,
in increasing precedence: defaults, a TOML file (``$RAGSTRATA_HOME/config.toml`` or an explicit
path), then environment variables (``RAGSTRATA_*``). Nothing outside this package reads
``os.environ``.

One module per stage, each config validated in its ``__post_init__``: :mod:`.ingest` (ingest,
chunking), :mod:`.embedder`, :mod:`.index` (BM25, store), :mod:`.retrieval` (retrieval,
rerank), :mod:`.answer` (answer, LLM), :mod:`.service`; :mod:`.load` builds :class:`RagConfig`
from them; :mod:`.checks` holds the checks they share. Every public name is handed on here:
import from ``ragstrata.config``.
"""

from __future__ import annotations

from ragstrata.config.answer import LLM_PROVIDERS, LOCAL_LLMS, AnswerConfig, LLMConfig
from ragstrata.config.embedder import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    EmbedderConfig,
    resolve_embedder_name,
)
from ragstrata.config.index import STORE_LOCAL_PREFIX, STORE_MEMORY, BM25Config, StoreConfig
from ragstrata.config.ingest import FOLLOW_SYMLINKS, ChunkerConfig, FollowSymlinks, IngestConfig
from ragstrata.config.load import RagConfig, default_home
from ragstrata.config.retrieval import RerankConfig, RetrievalConfig
from ragstrata.config.service import ServiceConfig

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "FOLLOW_SYMLINKS",
    "LLM_PROVIDERS",
    "LOCAL_LLMS",
    "STORE_LOCAL_PREFIX",
    "STORE_MEMORY",
    "AnswerConfig",
    "BM25Config",
    "ChunkerConfig",
    "EmbedderConfig",
    "FollowSymlinks",
    "IngestConfig",
    "LLMConfig",
    "RagConfig",
    "RerankConfig",
    "RetrievalConfig",
    "ServiceConfig",
    "StoreConfig",
    "default_home",
    "resolve_embedder_name",
]
