"""``ragstrata.stages``: every configured name has a constructor, unknown names keep their
errors, and nothing is loaded until a stage is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata import stages
from ragstrata.config import EMBEDDERS, LLM_PROVIDERS, LLMConfig, StoreConfig
from ragstrata.errors import ConfigError, EmbeddingError
from ragstrata.index.base import VectorStore


def test_every_embedder_name_but_auto_has_a_constructor() -> None:
    assert set(stages.EMBEDDER_FACTORIES) == set(EMBEDDERS) - {"auto"}


def test_unknown_embedder_keeps_its_error() -> None:
    with pytest.raises(EmbeddingError, match="unknown embedder 'nope'; choose one of auto, "):
        stages.load_embedder("nope")
    with pytest.raises(ConfigError, match="embedder 'openai' needs its settings"):
        stages.load_embedder("openai")


def test_every_llm_provider_is_built_or_none() -> None:
    assert set(stages.GENERATOR_FACTORIES) == set(LLM_PROVIDERS) - {"none"}
    assert stages.load_generator(LLMConfig()) is None


def test_store_backend_follows_store_url(tmp_path: Path) -> None:
    assert stages.store_backend(StoreConfig()) == "edge"
    assert stages.store_backend(StoreConfig(url="local:")) == "qdrant"
    for config in (StoreConfig(), StoreConfig(url="local:")):
        store = stages.open_store(config, dim=4, index_dir=tmp_path / stages.store_backend(config))
        try:
            assert isinstance(store, VectorStore)
            assert store.dim == 4 and store.count() == 0
        finally:
            store.close()
