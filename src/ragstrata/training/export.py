"""Export a trained cross-encoder to int8 ONNX (step 4 of the recipe in
:mod:`ragstrata.training.reranker`): ONNX (opset 17, dynamic batch/sequence, output ``logits``
(batch, 1)), then dynamic int8 quantization (per-channel MatMul weights, int8 word-embedding
table), packaged with its tokenizer and metadata as a folder
:class:`~ragstrata.rerank.cross_encoder.CrossEncoderReranker` loads.

Needs torch and transformers (extra ``torch``) to export and onnxruntime (extra ``rerank``)
to quantize; both are imported on first use.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragstrata.optional import require
from ragstrata.rerank.cross_encoder import META_FILE

_OPSET = 17
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export_onnx(model_dir: Path, target: Path) -> Path:
    """Export the sequence-classification model in ``model_dir`` to ONNX at ``target``: inputs
    ``input_ids``/``attention_mask``/``token_type_ids`` (int64, (batch, seq)), output
    ``logits`` float32 (batch, num_labels); dynamic batch and sequence axes."""
    require("torch", extra="torch")
    require("transformers", extra="torch", package="torch")
    import torch  # typed names, once require() has checked them
    from transformers import AutoModelForSequenceClassification

    from ragstrata.embed.local import _offline

    _offline()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), attn_implementation="eager"
    ).eval()

    class _Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    ids = torch.ones((2, 16), dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 10:] = 0
    axes = {name: {0: "batch", 1: "seq"} for name in _INPUTS}
    axes["logits"] = {0: "batch"}
    target.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            _Logits(model),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            input_names=list(_INPUTS),
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=_OPSET,
            dynamo=False,
        )
    return target


def quantize_int8(source: Path, target: Path) -> Path:
    """Dynamic int8 quantization of ``source`` into ``target``: MatMul weights per output
    channel, and the Gather of the word-embedding table (so the file is ~4x smaller).
    Activations are quantized per batch at run time."""
    quantization = require("onnxruntime.quantization", extra="rerank", package="onnx")
    quantization.quantize_dynamic(
        str(source),
        str(target),
        weight_type=quantization.QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Gather"],
    )
    return target


def package_model(model_dir: Path, out_dir: Path, *, extra_meta: Mapping[str, Any]) -> Path:
    """Write ``out_dir`` = int8 ONNX (``model.int8.onnx``) + tokenizer files + metadata of the
    CrossEncoder in ``model_dir``; returns the ONNX path. The fp32 export is not kept."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fp32 = out_dir / "model.fp32.onnx.tmp"
    try:
        export_onnx(model_dir, fp32)
        target = quantize_int8(fp32, out_dir / "model.int8.onnx")
    finally:
        fp32.unlink(missing_ok=True)
    shutil.copy2(model_dir / "tokenizer.json", out_dir / "tokenizer.json")
    meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
    meta.update(extra_meta)
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return target
