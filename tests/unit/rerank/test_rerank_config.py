"""RerankConfig: defaults, validation and loading from TOML/environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import RagConfig, RerankConfig
from ragstrata.errors import ConfigError


def test_defaults_point_at_the_shipped_model() -> None:
    cfg = RerankConfig()
    assert (cfg.candidates, cfg.top_k, cfg.min_score) == (50, 5, None)
    # off by default: the shipped model did not pass the bar (docs/evaluation.md)
    assert cfg.enabled is False
    assert cfg.model_path.name == "minilm-l6-squad-es-headings"
    assert cfg.model_path.parent.name == "models"
    assert RerankConfig(model="~/ce").model_path == Path("~/ce").expanduser()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"candidates": 0},
        {"top_k": 0},
        {"batch_size": 0},
        {"max_length": 4},
        {"threads": -1},
        {"retrieval_weight": -0.5},
    ],
)
def test_bad_values_are_config_errors(kwargs: dict[str, int | float]) -> None:
    with pytest.raises(ConfigError, match="rerank"):
        RerankConfig(**kwargs)  # type: ignore[arg-type]


def test_loaded_from_environment_and_toml(tmp_path: Path) -> None:
    env = {
        "RAGSTRATA_RERANK_ENABLED": "false",
        "RAGSTRATA_RERANK_CANDIDATES": "20",
        "RAGSTRATA_RERANK_MIN_SCORE": "-2.5",
        "RAGSTRATA_HOME": str(tmp_path),
    }
    cfg = RagConfig.load(env=env).rerank
    assert (cfg.enabled, cfg.candidates, cfg.min_score) == (False, 20, -2.5)
    assert (
        RagConfig.load(env={**env, "RAGSTRATA_RERANK_MIN_SCORE": "none"}).rerank.min_score is None
    )
    toml = tmp_path / "c.toml"
    toml.write_text("[rerank]\nenabled = true\ntop_k = 3\nmodel = '/models/ce'\n")
    cfg = RagConfig.load(config_file=toml, env={}).rerank
    assert (cfg.enabled, cfg.top_k, cfg.model) == (True, 3, "/models/ce")
    with pytest.raises(ConfigError):
        RagConfig.load(env={"RAGSTRATA_RERANK_ENABLED": "maybe"})
