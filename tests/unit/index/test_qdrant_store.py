"""``store.*`` configuration and the ``QdrantStore`` location handling (the store's behaviour is
in the shared contract suite, tests/contract/test_store_contract.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ragstrata.config import RagConfig, StoreConfig
from ragstrata.errors import ConfigError, MissingDependencyError, StoreError


def test_default_store_is_the_embedded_engine(tmp_path: Path) -> None:
    config = RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    assert config.store == StoreConfig()
    assert config.store.url == ""
    assert config.store.write_ordering == "strong"


@pytest.mark.parametrize(
    "url",
    ["", ":memory:", "local:", "local:/tmp/q", "local:///tmp/q", "http://qdrant:6333",
     "https://xyz.cloud.qdrant.io"],
)  # fmt: skip
def test_accepted_urls(url: str) -> None:
    assert StoreConfig(url=url).url == url


@pytest.mark.parametrize("name", ["d", "docs-e5_v1", "ragstrata.acme-x.docs", "a" * 255])
def test_accepted_collections(name: str) -> None:
    """Dots inside: the service names a tenant collection's Qdrant collection with them."""
    assert StoreConfig(collection=name).collection == name


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"url": "qdrant:6333"}, "store.url"),
        ({"url": "ftp://host"}, "store.url"),
        ({"url": "http://"}, "store.url"),
        ({"collection": ""}, "store.collection"),
        ({"collection": "a/b"}, "store.collection"),
        ({"collection": "."}, "store.collection"),
        ({"collection": ".."}, "store.collection"),
        ({"collection": "docs."}, "store.collection"),
        ({"collection": ".docs"}, "store.collection"),
        ({"timeout_s": 0}, "store.timeout_s"),
        ({"shard_number": 0}, "store.shard_number"),
        ({"replication_factor": 0}, "store.replication_factor"),
        ({"replication_factor": 2, "write_consistency_factor": 3}, "store.write_consistency"),
        ({"write_ordering": "eventual"}, "store.write_ordering"),
        ({"quantization": "int4"}, "store.quantization"),
        ({"oversampling": 0.5}, "store.oversampling"),
        ({"hnsw_ef": 2}, "store.hnsw_ef"),
    ],
)
def test_invalid_values_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        StoreConfig(**kwargs)  # type: ignore[arg-type]


def test_api_key_is_read_from_the_named_variable_and_never_echoed() -> None:
    config = StoreConfig(api_key_env="MY_QDRANT_KEY")
    assert config.resolve_api_key({"MY_QDRANT_KEY": " s3cret "}) == "s3cret"
    assert config.resolve_api_key({}) is None
    assert StoreConfig(api_key_env="").resolve_api_key({"QDRANT_API_KEY": "x"}) is None
    with pytest.raises(ConfigError) as info:
        StoreConfig(api_key_env="sk-live-123/456")
    assert "sk-live" not in str(info.value)


def test_store_settings_from_env_and_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[store]\nurl = "http://10.0.0.5:6333"\nreplication_factor = 2\n', encoding="utf-8"
    )
    config = RagConfig.load(
        env={
            "RAGSTRATA_HOME": str(tmp_path),
            "RAGSTRATA_STORE_PREFER_GRPC": "true",
            "RAGSTRATA_STORE_TIMEOUT_S": "2.5",
            "RAGSTRATA_STORE_WRITE_CONSISTENCY_FACTOR": "2",
        }
    )
    assert config.store == StoreConfig(
        url="http://10.0.0.5:6333",
        replication_factor=2,
        write_consistency_factor=2,
        prefer_grpc=True,
        timeout_s=2.5,
    )
    off = RagConfig.load(
        env={"RAGSTRATA_HOME": str(tmp_path / "x"), "RAGSTRATA_STORE_PREFER_GRPC": "0"}
    )
    assert off.store.prefer_grpc is False
    with pytest.raises(ConfigError, match=r"store\.prefer_grpc"):
        RagConfig.load(
            env={"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_STORE_PREFER_GRPC": "maybe"}
        )


# ---------------------------------------------------------------------- QdrantStore locations
def test_locations(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    from ragstrata.index.qdrant import QdrantStore

    store = QdrantStore(f"local://{tmp_path}/abs", dim=4)  # local:///abs/path form
    store.close()
    assert (tmp_path / "abs").is_dir()
    with pytest.raises(ConfigError, match="local:PATH"):
        QdrantStore("local:", dim=4)
    with pytest.raises(ConfigError, match="not a Qdrant location"):
        QdrantStore("qdrant:6333", dim=4)
    with pytest.raises(ConfigError, match="write_ordering"):
        QdrantStore(":memory:", dim=4, write_ordering="eventual")
    store = QdrantStore.from_config(StoreConfig(url="local:"), dim=4, index_dir=tmp_path / "idx")
    assert store.location == f"local:{tmp_path / 'idx' / 'qdrant'}"
    store.close()


def test_unreachable_server_is_a_store_error() -> None:
    pytest.importorskip("qdrant_client")
    from ragstrata.index.qdrant import QdrantStore

    # loopback port 1: nothing listens, the connection is refused at once
    with pytest.raises(StoreError, match="cannot open the Qdrant collection"):
        QdrantStore("http://127.0.0.1:1", dim=4, timeout_s=2)


def test_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragstrata.index.qdrant import QdrantStore

    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(MissingDependencyError, match=r"ragstrata\[qdrant\]"):
        QdrantStore(":memory:", dim=4)


@pytest.mark.parametrize(
    ("quantization", "kind"),
    [("int8", "ScalarQuantization"), ("binary", "BinaryQuantization"), ("none", "NoneType")],
)
def test_server_collection_quantization_config(quantization: str, kind: str) -> None:
    """The collection a server gets: qdrant-client's own models (local mode does not keep the
    quantization config, so the object handed to create_collection is what can be checked)."""
    pytest.importorskip("qdrant_client")
    from ragstrata.index.qdrant import QdrantStore

    store = QdrantStore(":memory:", dim=8, quantization=quantization, on_disk=True)
    try:
        config = store._quantization_config()
        assert type(config).__name__ == kind
        if quantization == "int8":
            assert config.scalar.type.value == "int8" and config.scalar.always_ram is True
        info = store._client.get_collection(store.collection)
        assert info.config.params.vectors["dense"].on_disk is True
    finally:
        store.close()


def test_local_mode_searches_without_a_warning_per_query(tmp_path: Path) -> None:
    """Review 45: local mode warned on every query that it ignores search parameters (a
    UserWarning on the CLI's stderr per search); it is given none."""
    import warnings

    import numpy as np

    pytest.importorskip("qdrant_client")
    from ragstrata.index.qdrant import QdrantStore

    store = QdrantStore(f"local:{tmp_path / 'q'}", dim=4, collection="c")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert store.dense_search_ids(np.ones(4, dtype=np.float32), limit=3) == []
    finally:
        store.close()
