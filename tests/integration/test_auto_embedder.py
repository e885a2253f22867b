"""``embedder.name = "auto"`` (the default): an index keeps the embedder it was built with."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import EmbedderConfig, RagConfig
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow


def test_an_index_built_with_another_embedder_opens_under_auto(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "guide.md").write_text(
        "# Guide\n\n## Rate limits\n\nEach API key may send 100 requests per minute.\n",
        encoding="utf-8",
    )
    index = tmp_path / "index"
    old = RagConfig(home=tmp_path, index_dir=index, embedder=EmbedderConfig(name="minilm-onnx"))
    with Ragstrata(old) as engine:
        assert not engine.ingest([corpus]).failures

    default = RagConfig(home=tmp_path, index_dir=index)
    assert default.embedder.name == "auto"
    with Ragstrata(default) as engine:
        assert engine.embedder_name == "minilm-onnx"
        hits = engine.search("how many requests per minute?").hits
        assert hits and hits[0].chunk.source.endswith("guide.md")
        assert engine.manifest().embedder.startswith("minilm-onnx:")

    fresh = RagConfig(home=tmp_path, index_dir=tmp_path / "new-index")
    assert Ragstrata(fresh).embedder_name == "e5-onnx"
