"""Shared pytest fixtures.

``shared_data`` locates the shared corpora (``<repo>/../shared/data``). When they are absent
the tests that need them are skipped, unless ``RAGSTRATA_REQUIRE_SHARED=1``, which turns the
skip into a failure (CI sets it so that a missing corpus cannot pass silently).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def _require(path: Path) -> Path:
    if path.exists():
        return path
    reason = f"shared corpus not found at {path} (expected <repo>/../shared/data/...)"
    if os.environ.get("RAGSTRATA_REQUIRE_SHARED") == "1":
        pytest.fail(f"{reason}; RAGSTRATA_REQUIRE_SHARED=1 makes this an error")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Root of the shared corpora; skips (or fails, see module docstring) when absent."""
    return _require(SHARED_DATA)


@pytest.fixture(scope="session")
def shared_corpus() -> Callable[[str], Path]:
    """``shared_corpus("react-docs-es-mdx")`` -> that corpus' directory, skipping (or
    failing) when it is absent."""
    return lambda name: _require(SHARED_DATA / name)


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The packaged all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from ragstrata.embed.local import MiniLMEmbedder

    return MiniLMEmbedder()
