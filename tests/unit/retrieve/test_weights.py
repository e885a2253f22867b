"""Calibrated RRF weights per embedder and language relation."""

from __future__ import annotations

import pytest

from ragstrata.config import EMBEDDERS, RetrievalConfig
from ragstrata.config.embedder import embedder_family
from ragstrata.errors import ConfigError
from ragstrata.retrieve.weights import (
    CALIBRATED_WEIGHTS,
    UNCALIBRATED_WEIGHTS,
    fusion_weights_for,
)


def test_every_packaged_embedder_is_calibrated() -> None:
    for name in set(EMBEDDERS) - {"auto", "openai"}:
        assert embedder_family(name) in CALIBRATED_WEIGHTS, name


def test_defaults_follow_the_embedder_and_the_relation() -> None:
    e5 = fusion_weights_for("e5-onnx:multilingual-e5-small", RetrievalConfig())
    assert e5.pick("same") == {"dense": 0.4, "bm25": 0.6}
    assert e5.pick("unknown") == e5.pick("same")
    assert e5.pick("cross") == {"dense": 0.9, "bm25": 0.1}
    assert e5.pick("cross", "en") == {"dense": 0.9, "bm25": 0.1}
    # a Spanish question over English passages: BM25's shared names count for more (train sweep)
    assert e5.pick("cross", "es") == {"dense": 0.8, "bm25": 0.2}
    assert e5.pick("same", "es") == e5.pick("same")
    minilm = fusion_weights_for("minilm-onnx:all-MiniLM-L6-v2", RetrievalConfig())
    assert minilm.pick("same") == {"dense": 0.6, "bm25": 0.4}
    assert fusion_weights_for("openai:text-embedding-3-small", RetrievalConfig()) == (
        UNCALIBRATED_WEIGHTS
    )


def test_a_set_weight_replaces_only_itself() -> None:
    config = RetrievalConfig(dense_weight=1.0, cross_bm25_weight=0.5)
    weights = fusion_weights_for("e5-onnx", config)
    assert weights.same == (1.0, 0.6)
    assert weights.cross == (0.9, 0.5)
    # a cross-lingual weight set in the config replaces that weight for every query language
    assert weights.pick("cross", "es") == {"dense": 0.8, "bm25": 0.5}
    both = fusion_weights_for(
        "e5-onnx", RetrievalConfig(cross_dense_weight=0.7, cross_bm25_weight=0.3)
    )
    assert both.pick("cross", "es") == both.pick("cross", "en") == {"dense": 0.7, "bm25": 0.3}
    assert fusion_weights_for("e5-onnx", RetrievalConfig(dense_weight=1.0)).pick("cross", "es") == {
        "dense": 0.8,
        "bm25": 0.2,
    }


@pytest.mark.parametrize("prefix", ["", "cross_"])
def test_both_weights_of_a_pair_zero_is_an_error(prefix: str) -> None:
    with pytest.raises(ConfigError, match="both 0"):
        RetrievalConfig(**{f"{prefix}dense_weight": 0.0, f"{prefix}bm25_weight": 0.0})
    with pytest.raises(ConfigError, match="out of range"):
        RetrievalConfig(**{f"{prefix}dense_weight": -1.0})


def test_fusion_weights_are_hashable_values() -> None:
    """Review 46: a frozen FusionWeights held a dict and could not be hashed or cached."""
    config = RetrievalConfig()
    first = fusion_weights_for("e5-onnx", config)
    assert hash(first) == hash(fusion_weights_for("e5-onnx", config))
    assert len({first, fusion_weights_for("minilm-onnx", config)}) == 2
