"""Does HyDE help? SciFact test queries, hybrid vs hybrid + HyDE, with the packaged local LLM.

Usage: python bench/hyde_scifact.py [--split train|test] [--queries 40] [--distractors 1500]
                                    [--model 0.5b]

Decide on ``--split train`` (the default is set there), report ``--split test``.

A deterministic subset keeps it affordable on CPU: the first --queries test queries (by id),
and a corpus of their relevant abstracts plus the first --distractors other abstracts (by id).
The subset is indexed with the default embedder; each query runs plain hybrid retrieval and
hybrid fused with the HyDE dense ranking (ragstrata.retrieve.hyde). Prints nDCG@10, recall@10
and the LLM time per query, and writes bench/results/hyde_scifact.json.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.eval.datasets import load_beir
from ragstrata.eval.metrics import evaluate, paired_randomization_test
from ragstrata.eval.runner import dataset_documents
from ragstrata.generate.llama_local import LlamaGenerator
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.hyde import fuse_hyde, hyde_vector, timed_hypothetical

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir-scifact"


def doc_ranking(hits: tuple, depth: int = 10) -> list[str]:  # type: ignore[type-arg]
    seen: list[str] = []
    for h in hits:
        if h.chunk.doc_id not in seen:
            seen.append(h.chunk.doc_id)
    return seen[:depth]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", default="test", choices=["train", "test"])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--distractors", type=int, default=1500)
    parser.add_argument("--model", default="0.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--index", type=Path, help="default: /tmp/ragstrata-hyde-scifact-SPLIT")
    parser.add_argument("--out", type=Path, default=RESULTS / "hyde_scifact.json")
    args = parser.parse_args()

    data = load_beir(SHARED, split=args.split)
    qids = sorted(data.queries)[: args.queries]
    relevant = {d for q in qids for d in data.qrels[q]}
    others = [d for d in sorted(data.corpus) if d not in relevant][: args.distractors]
    keep = relevant | set(others)
    subset = replace(data, corpus={d: data.corpus[d] for d in keep if d in data.corpus})

    index = args.index or Path(f"/tmp/ragstrata-hyde-scifact-{args.split}")
    cfg = RagConfig.load(overrides={"retrieval.top_k": 20}).with_index(index)
    llm = LlamaGenerator(local_model=args.model, threads=args.threads, max_tokens=96)
    with Ragstrata(cfg) as engine:
        t = time.perf_counter()
        engine.add_documents(dataset_documents(subset))
        index_s = time.perf_counter() - t
        runs: dict[str, dict[str, list[str]]] = {"hybrid": {}, "hybrid+hyde": {}}
        llm_ms: list[float] = []
        for qid in qids:
            query = data.queries[qid]
            result = engine.search(query, top_k=20)
            runs["hybrid"][qid] = doc_ranking(result.hits)
            passage, ms = timed_hypothetical(llm, query)
            llm_ms.append(ms)
            store = engine.retriever.store
            ranking = store.dense_search_ids(hyde_vector(engine.embedder, query, passage), limit=50)
            fused = fuse_hyde(result.hits, ranking, store.get, top_k=20)
            runs["hybrid+hyde"][qid] = doc_ranking(fused)
    qrels = {q: data.qrels[q] for q in qids}
    metrics = ("ndcg@10", "recall@10", "mrr@10")
    report = {
        "queries": len(qids),
        "docs": len(subset.corpus),
        "index_seconds": round(index_s, 1),
        "llm": llm.name,
        "llm_ms_per_query": round(sum(llm_ms) / len(llm_ms), 1),
        "split": args.split,
        "modes": {m: evaluate(r, qrels, metrics).means for m, r in runs.items()},
    }
    scored = {m: evaluate(r, qrels, metrics) for m, r in runs.items()}
    report["p_value_ndcg@10"] = round(
        paired_randomization_test(
            [scored["hybrid"].per_query[q]["ndcg@10"] for q in sorted(scored["hybrid"].per_query)],
            [
                scored["hybrid+hyde"].per_query[q]["ndcg@10"]
                for q in sorted(scored["hybrid"].per_query)
            ],
        ),
        4,
    )
    print("| mode | " + " | ".join(metrics) + " |")
    print("|---|" + "---|" * len(metrics))
    for mode, means in report["modes"].items():
        print(f"| {mode} | " + " | ".join(f"{means[m]:.4f}" for m in metrics) + " |")
    print(f"LLM {report['llm_ms_per_query']} ms per query, {len(qids)} queries")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"paired randomization test on nDCG@10: p = {report['p_value_ndcg@10']}")
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    if "modes" in previous:  # the single-run format of an earlier version
        previous = {}
    previous[args.split] = report
    args.out.write_text(json.dumps(previous, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
