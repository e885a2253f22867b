"""The cross-lingual query shift: pure arithmetic on the shipped per-language means."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.config import EMBEDDERS
from ragstrata.config.embedder import embedder_family
from ragstrata.errors import ConfigError
from ragstrata.retrieve.language_shift import (
    OFFSET_FAMILIES,
    LanguageOffsets,
    language_offsets_for,
)


def _offsets() -> LanguageOffsets:
    return LanguageOffsets(
        family="toy",
        means={
            "es": np.array([0.0, 1.0, 0.0], np.float32),
            "en": np.array([1.0, 0.0, 0.0], np.float32),
        },
    )


def test_the_shift_moves_by_the_difference_of_the_means_and_renormalizes() -> None:
    query = np.array([0.0, 0.6, 0.8], np.float32)
    moved = _offsets().shift(query, source="es", target="en")
    assert moved is not None
    expected = np.array([1.0, -0.4, 0.8], np.float32)
    np.testing.assert_allclose(moved, expected / np.linalg.norm(expected), rtol=1e-6)
    assert moved.dtype == np.float32


@pytest.mark.parametrize(
    ("source", "target", "vector"),
    [
        ("es", "es", [1.0, 0.0, 0.0]),
        ("fr", "en", [1.0, 0.0, 0.0]),
        ("es", "de", [1, 0, 0]),
        ("es", "en", [1.0, 0.0]),
    ],
)
def test_no_shift_for_one_language_an_unknown_one_or_another_model(
    source: str, target: str, vector: list[float]
) -> None:
    assert _offsets().shift(np.array(vector, np.float32), source=source, target=target) is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3))
def test_a_shifted_vector_has_unit_length(values: list[float]) -> None:
    query = np.array(values, np.float32)
    if np.linalg.norm(query + np.array([1, -1, 0], np.float32)) < 1e-3:
        return
    offsets = _offsets()
    there = offsets.shift(query, source="es", target="en")
    assert there is not None
    assert np.linalg.norm(there) == pytest.approx(1.0, abs=1e-5)


def test_json_round_trip_and_malformed_files() -> None:
    offsets = _offsets()
    back = LanguageOffsets.from_json(offsets.to_json())
    assert back.family == "toy" and set(back.means) == {"es", "en"}
    np.testing.assert_allclose(back.means["es"], offsets.means["es"])
    with pytest.raises(ConfigError, match="malformed"):
        LanguageOffsets.from_json({"family": "x"})
    with pytest.raises(ConfigError, match="shape"):
        LanguageOffsets(
            family="x", means={"es": np.zeros(3, np.float32), "en": np.zeros(4, np.float32)}
        )


def test_the_e5_family_ships_spanish_and_english_means() -> None:
    offsets = language_offsets_for("e5-onnx:multilingual-e5-small")
    assert offsets is not None and offsets.family == "e5"
    assert set(offsets.means) == {"es", "en"}
    assert all(v.shape == (384,) for v in offsets.means.values())
    # mean unit vectors of many questions: long, and the two languages close but distinct
    gap = float(np.linalg.norm(offsets.means["en"] - offsets.means["es"]))
    assert 0.05 < gap < 0.5
    assert "train" in offsets.source
    e5_names = [n for n in EMBEDDERS if embedder_family(n) == "e5"]
    assert "e5" in OFFSET_FAMILIES and len(e5_names) == 4
    for name in e5_names:
        assert language_offsets_for(name) is offsets


def test_english_only_and_uncalibrated_embedders_get_no_shift() -> None:
    assert language_offsets_for("minilm-onnx:all-MiniLM-L6-v2") is None
    assert language_offsets_for("openai:text-embedding-3-small") is None
