"""Search latency on an existing index: p50/p95 per stage for bm25, dense and hybrid.

Usage: python bench/search_latency.py --index DIR [--queries FILE] [--n 200]

Queries are the lines of --queries, or else the headings of the indexed chunks (real text from
the corpus itself). The first query of each mode warms the model and is not timed. Prints a
Markdown table and writes bench/results/search_latency.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.pipeline import Ragstrata

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS / "search_latency.json")
    args = parser.parse_args()

    engine = Ragstrata(RagConfig.load().with_index(args.index))
    stats = engine.stats()
    if args.queries:
        queries = [q.strip() for q in args.queries.read_text(encoding="utf-8").splitlines()]
    else:
        store = engine.retriever.store
        chunks = store.get(store.chunk_ids()[: args.n * 3])
        queries = list(dict.fromkeys(" ".join(c.section_path[-2:]) for c in chunks))
    queries = [q for q in queries if q][: args.n]
    rows = {}
    for mode in ("bm25", "dense", "hybrid"):
        engine.search(queries[0], mode=mode)  # warm-up
        totals: list[float] = []
        wall: list[float] = []
        for query in queries:
            t = time.perf_counter()
            result = engine.search(query, mode=mode)
            wall.append((time.perf_counter() - t) * 1000)
            totals.append(result.timings_ms["total"])
        rows[mode] = {
            "p50_ms": round(statistics.median(wall), 2),
            "p95_ms": round(percentile(wall, 0.95), 2),
            "queries": len(wall),
        }
    engine.close()
    report = {"index": stats, "modes": rows}
    print(f"index: {stats['documents']} documents, {stats['chunks']} chunks, {stats['embedder']}")
    print("| mode | p50 ms | p95 ms | queries |\n|---|---|---|---|")
    for mode, row in rows.items():
        print(f"| {mode} | {row['p50_ms']} | {row['p95_ms']} | {row['queries']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
