#!/usr/bin/env python
"""Latency of the refusal check's reader (``generate/reader.py``) per (question, passage) pair,
three ways, against this machine's FLOP ceiling, in one run.

Takes ``--n`` SQuAD-es (question, gold paragraph) pairs, tokenized and cut as ``E5Reader`` does
(:func:`~ragstrata.generate.reader.pair_ids`, at most 320 tokens), and times, interleaved over
``--repeats`` rounds (median kept):

* **fp32, one pair per pass**: what ``E5Reader.score`` runs;
* **fp32, padded batches of 5**: one ``ask``'s five hits in one pass;
* **int8, one pair per pass**: the float32 graph after the embedders' ``quantize_dynamic``
  recipe (``embed.onnx.quantize_int8``), with the largest logit change against fp32.

Achieved GFLOP/s counts the encoder's projections and attention (12 layers, hidden 384, FFN
1536: per token ``2 (4 h^2 + 2 h f)`` plus ``4 s h``, ``s`` the pair's own length; padding not
counted) and is set against the fp32 ``MatMul`` ceiling of ``bench/embed_throughput.py``'s GEMM
microbenchmark (FFN shapes, same thread count, same run).

    PYTHONPATH=src python bench/reader_latency.py --n 40

Writes bench/results/reader_latency.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from embed_throughput import GEMM_SHAPES, Gemm

from ragstrata.embed.base import pad_right
from ragstrata.embed.e5_onnx import PASSAGE_PREFIX, QUERY_PREFIX
from ragstrata.embed.onnx import cpu_session, quantize_int8
from ragstrata.generate.reader import MAX_PAIR_TOKENS, E5Reader, ensure_reader_model, pair_ids

SQUAD = Path("../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz")
RESULTS = Path(__file__).resolve().parent / "results"
HIDDEN, FFN, LAYERS = 384, 1536, 12


def pair_flops(length: int) -> float:
    per_token = 2 * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN) + 4 * length * HIDDEN
    return float(LAYERS * length * per_token)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    reader = E5Reader(threads=args.threads)
    tok, session = reader._load()
    head, bias = reader._head, reader._bias
    assert head is not None
    fp32 = ensure_reader_model()
    int8_path = fp32.parent / "model.int8.onnx"
    if not int8_path.exists():
        quantize_int8(fp32, int8_path)
    int8 = cpu_session(int8_path, args.threads)

    with gzip.open(SQUAD) as raw:
        data = json.loads(raw.read())
    pairs: list[list[int]] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            qa = paragraph["qas"][0]
            question = tok.encode(QUERY_PREFIX + qa["question"]).ids
            passage = tok.encode(PASSAGE_PREFIX + paragraph["context"]).ids[1:]
            pairs.append(pair_ids(question, passage, limit=MAX_PAIR_TOKENS))
    step = max(1, len(pairs) // args.n)
    pairs = pairs[::step][: args.n]
    flops = sum(pair_flops(len(p)) for p in pairs)

    def run(sess: Any, rows: list[list[int]]) -> np.ndarray:
        ids, mask = pad_right(rows, 1)
        (pooled,) = sess.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
        return np.asarray(pooled, dtype=np.float32) @ head + bias

    ways = {
        "fp32, one pair per pass": lambda: np.concatenate([run(session, [p]) for p in pairs]),
        "fp32, batches of 5": lambda: np.concatenate(
            [run(session, pairs[i : i + 5]) for i in range(0, len(pairs), 5)]
        ),
        "int8, one pair per pass": lambda: np.concatenate([run(int8, [p]) for p in pairs]),
    }
    times: dict[str, list[float]] = {w: [] for w in ways}
    logits: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as work:
        gemm = [Gemm("fp32", shape, args.threads, Path(work)) for shape in GEMM_SHAPES[:2]]
        ceilings: list[float] = []
        for _ in range(args.repeats):
            for way, fn in ways.items():
                fn()  # warm
                start = time.perf_counter()
                logits[way] = fn()
                times[way].append(time.perf_counter() - start)
            ceilings.append(max(g.gflops(5) for g in gemm))
    ceiling = max(ceilings)
    reference = logits["fp32, one pair per pass"]
    rows = []
    for way, ts in times.items():
        seconds = statistics.median(ts)
        gflops = flops / seconds / 1e9
        rows.append(
            {
                "way": way,
                "ms_per_pair": round(seconds / len(pairs) * 1000, 1),
                "ms_per_question_5_pairs": round(seconds / len(pairs) * 5000, 0),
                "gflops": round(gflops, 1),
                "share_of_fp32_ceiling": round(gflops / ceiling, 3),
                "max_logit_change": round(float(np.abs(logits[way] - reference).max()), 4),
            }
        )
    mean_len = float(np.mean([len(p) for p in pairs]))
    print(f"{len(pairs)} pairs, mean {mean_len:.0f} tokens; fp32 ceiling {ceiling:.1f} GFLOP/s")
    print(
        "| way | ms / pair | ms / question (5 pairs) | GFLOP/s | share of fp32 ceiling | "
        "max logit change vs fp32 one-by-one |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['way']} | {r['ms_per_pair']} | {r['ms_per_question_5_pairs']:.0f} | "
            f"{r['gflops']} | {r['share_of_fp32_ceiling']} | {r['max_logit_change']} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "reader_latency.json").write_text(
        json.dumps(
            {
                "machine": platform.processor() or platform.machine(),
                "threads": args.threads,
                "pairs": len(pairs),
                "mean_tokens": round(mean_len, 1),
                "fp32_gemm_ceiling_gflops": round(ceiling, 1),
                "rows": rows,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
