"""Cross-encoder reranking latency: one query × 50 candidates, p50/p95 over real queries.

Usage: python bench/rerank_latency.py --index DIR --dataset BEIR_OR_SQUAD [--n 40]
       [--model FOLDER] [--threads 0] [--candidates 50]

For each of the first --n queries of the dataset, hybrid search on --index (an index of that
dataset's corpus, e.g. the one `ragstrata eval` built) gives the candidates; the timed part is
only ``reranker.score(query, passages)`` (tokenization + model), wall clock. The first call warms
the model and is not timed. Prints a Markdown table and writes bench/results/rerank_latency.json
(one entry per dataset, merged into the existing file).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.eval.runner import load_dataset
from ragstrata.pipeline import Ragstrata
from ragstrata.rerank.base import passage_text
from ragstrata.stages import load_reranker

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "rerank_latency.json")
    args = parser.parse_args()

    config = RagConfig.load().with_index(args.index)
    data = load_dataset(args.dataset, split=args.split)
    queries = [data.queries[q] for q in sorted(data.queries)][: args.n]
    model = args.model or config.rerank.model_path
    reranker = load_reranker(model, threads=args.threads)
    with Ragstrata(config) as engine:
        candidates = [
            [
                passage_text(h.chunk)
                for h in engine.search(
                    q, top_k=args.candidates, candidates=args.candidates, rerank=False
                ).hits
            ]
            for q in queries
        ]
    reranker.score(queries[0], candidates[0])  # warm-up
    wall: list[float] = []
    truncated = 0
    pairs = 0
    for query, passages in zip(queries, candidates, strict=True):
        t = time.perf_counter()
        result = reranker.score(query, passages)
        wall.append((time.perf_counter() - t) * 1000)
        truncated += result.truncated
        pairs += len(passages)
    row = {
        "model": reranker.name,
        "max_length": reranker.max_length,
        "threads": args.threads or "onnxruntime default",
        "candidates": args.candidates,
        "queries": len(wall),
        "p50_ms": round(statistics.median(wall), 1),
        "p95_ms": round(percentile(wall, 0.95), 1),
        "pairs_per_s": round(pairs / (sum(wall) / 1000), 1),
        "truncated_share": round(truncated / pairs, 3),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "load_avg_1min_at_end": round(os.getloadavg()[0], 1),
    }
    report = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    report[data.name] = row
    print("| dataset | candidates | p50 ms | p95 ms | pairs/s | truncated | load |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {data.name} | {row['candidates']} | {row['p50_ms']} | {row['p95_ms']} | "
        f"{row['pairs_per_s']} | {row['truncated_share']:.1%} | {row['load_avg_1min_at_end']} |"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
