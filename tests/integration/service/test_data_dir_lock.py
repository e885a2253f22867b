"""One service per data directory: the second one stops before it touches anything there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from service_helpers import Service

from ragstrata.config import IngestConfig, RagConfig
from ragstrata.errors import ConfigError
from ragstrata.service.app import create_app
from ragstrata.service.jobs import JOBS_FILE
from ragstrata.service.state import LOCK_FILE, build_state


def _config(home: Path) -> RagConfig:
    return RagConfig(home=home, ingest=IngestConfig(workers=0))


def test_a_second_service_on_a_served_data_dir_touches_nothing(
    service: Service, minilm: Any, tmp_path: Path
) -> None:
    """Review 33: a second ``serve`` built its state (deleting ``staging/``, where the first
    one's queued uploads wait, and marking the first one's jobs failed RS710) before it
    found the lock and stopped."""
    root = service.state.data_dir
    staged = root / "staging" / "acme" / "job1" / "a.md"
    staged.parent.mkdir(parents=True)
    staged.write_text("# queued upload\n", encoding="utf-8")
    jobs_before = (root / JOBS_FILE).read_bytes() if (root / JOBS_FILE).exists() else None
    with pytest.raises(ConfigError, match="already serves the data directory"):
        create_app(_config(tmp_path / "home2"), embedder=minilm, data_dir=root)
    assert staged.read_text(encoding="utf-8") == "# queued upload\n"
    jobs_after = (root / JOBS_FILE).read_bytes() if (root / JOBS_FILE).exists() else None
    assert jobs_after == jobs_before
    assert (root / LOCK_FILE).read_text(encoding="utf-8").strip().isdigit()


def test_a_closed_service_releases_its_data_dir(minilm: Any, tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    first = build_state(config, embedder=minilm, data_dir=tmp_path / "data")
    with pytest.raises(ConfigError):
        build_state(config, embedder=minilm, data_dir=tmp_path / "data")
    first.close()
    first.close()  # idempotent
    second = build_state(config, embedder=minilm, data_dir=tmp_path / "data")
    second.close()
