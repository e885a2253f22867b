#!/usr/bin/env python
"""Hybrid retrieval with and without the per-document cap (``retrieval.max_chunks_per_doc``)
on one evaluation set and an already built index: hit@5 at document level and the retrieval
time without the query embedding, each query run both ways, interleaved, on one engine.

    python bench/doc_cap.py ../shared/data/fastapi-docs-md es-en:test /tmp/ev/xl-es-en-e5onnx

Prints one Markdown table and writes ``bench/results/doc_cap.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.eval.metrics import hit_rate_at_k
from ragstrata.eval.runner import load_dataset
from ragstrata.pipeline import Ragstrata

RESULTS = Path(__file__).parent / "results" / "doc_cap.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("split")
    parser.add_argument("index", type=Path)
    parser.add_argument("--candidates", type=int, default=50, help="per arm (production: 50)")
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    data = load_dataset(args.dataset, split=args.split)
    embedder = json.loads((args.index / "manifest.json").read_text())["embedder"].split(":")[0]
    config = RagConfig.load().with_index(args.index)
    config = replace(config, embedder=replace(config.embedder, name=embedder))
    caps = (0, args.cap)
    ms: dict[int, list[float]] = {c: [] for c in caps}
    hits: dict[int, float] = dict.fromkeys(caps, 0.0)
    qids = sorted(q for q in data.queries if q in data.qrels)
    with Ragstrata(config) as engine:
        retriever = engine.retriever
        for qid in qids:
            for cap in caps:
                retriever.config = replace(config.retrieval, max_chunks_per_doc=cap)  # type: ignore[attr-defined]
                result = retriever.search(
                    data.queries[qid], top_k=args.candidates, candidates=args.candidates
                )
                t = result.timings_ms
                ms[cap].append(t["total"] - t.get("embed_query", 0.0))
                docs = list(dict.fromkeys(h.chunk.doc_id for h in result.hits))
                hits[cap] += hit_rate_at_k(docs, data.qrels[qid], 5)
    rows = {
        f"cap={cap}": {
            "hit@5": round(hits[cap] / len(qids), 4),
            "p50_ms": round(statistics.median(ms[cap]), 1),
            "p95_ms": round(sorted(ms[cap])[int(0.95 * (len(qids) - 1))], 1),
        }
        for cap in caps
    }
    print("| max_chunks_per_doc | hit@5 | p50 ms (no embedding) | p95 ms |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name[4:]} | {r['hit@5']:.4f} | {r['p50_ms']} | {r['p95_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous[f"{data.name}/{embedder}/candidates={args.candidates}"] = {
        "n_queries": len(qids),
        **rows,
    }
    args.out.write_text(json.dumps(previous, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
