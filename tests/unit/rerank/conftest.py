"""A tiny random cross-encoder (2 layers, hidden 32) saved as a sentence-transformers folder,
plus its fp32 and int8 ONNX exports; built once per session (a few seconds, no download)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
    """The tiny model exported to ONNX fp32 (``model.onnx``) next to its tokenizer."""
    pytest.importorskip("onnxruntime")
    from ragstrata.training.reranker import export_onnx

    folder = tmp_path_factory.mktemp("tiny-onnx")
    export_onnx(tiny_cross_encoder, folder / "model.onnx")
    shutil.copy2(tiny_cross_encoder / "tokenizer.json", folder / "tokenizer.json")
    return folder
