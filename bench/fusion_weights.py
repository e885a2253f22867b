#!/usr/bin/env python
"""RRF weights per embedder and language relation, swept on the *training* halves.

For each ``--sets`` entry (``name=dataset:split:index_dir``) the script opens the already built
evaluation index (``ragstrata eval ... --index DIR`` builds it), runs the dense and the BM25
retriever once per query (``--candidates`` each, as ``ragstrata eval`` does), then fuses the
two rankings with weighted RRF (k = 60) for every dense weight in ``--weights`` (BM25 weight =
1 - dense weight; RRF is invariant to scaling both) and scores nDCG@10 and hit@5 at document
level, exactly as the evaluation runner does. As the hybrid retriever does, each arm reads
``4 × --candidates`` hits and keeps the first ``--candidates`` once each document keeps at most
``--max-chunks-per-doc`` (default 8, ``retrieval.max_chunks_per_doc``; 0: no cap, each arm
reads ``--candidates``). A ``dataset`` ending in ``.jsonl``/``.yaml`` is a golden file
(``ragstrata eval FILE --index DIR``'s format; its split is ignored). Each query is also
classified the way the hybrid retriever does
(:func:`ragstrata.text.language.language_relation`: the question's language against the
languages of the dense arm's top hits), so the table shows how often the rule calls a set
cross-lingual.

    python bench/fusion_weights.py --sets \\
        "scifact=../shared/data/beir-scifact:train:/tmp/ev/scifact-e5onnx" \\
        "xl-en-es=../shared/data/fastapi-docs-md:en-es:train:/tmp/ev/xl-en-es-e5onnx"

Prints one Markdown table (rows: sets; columns: bm25, dense, hybrid per weight, the share of
queries called cross-lingual) and writes ``bench/results/fusion_weights.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.eval.datasets import load_golden
from ragstrata.eval.metrics import hit_rate_at_k, ndcg_at_k
from ragstrata.eval.runner import golden_qrels, load_dataset
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.fusion import cap_per_document, rrf
from ragstrata.retrieve.hybrid import CAP_FETCH
from ragstrata.text.language import language_relation

RESULTS = Path(__file__).parent / "results" / "fusion_weights.json"


def _doc_ranking(ids: list[str], doc_of: dict[str, str], depth: int) -> list[str]:
    return list(dict.fromkeys(doc_of[i] for i in ids if i in doc_of))[:depth]


def sweep_set(
    dataset: Path,
    split: str,
    index_dir: Path,
    weights: list[float],
    candidates: int,
    per_doc: int = 8,
) -> dict[str, object]:
    manifest_embedder = json.loads((index_dir / "manifest.json").read_text())["embedder"]
    family = "e5-onnx" if manifest_embedder.startswith("e5-onnx:") else "minilm-onnx"
    config = RagConfig.load().with_index(index_dir)
    config = replace(config, embedder=replace(config.embedder, name=family))
    # closed before the next set opens its index: two sets on one index failed with RS503
    with Ragstrata(config) as engine:
        if dataset.suffix in {".jsonl", ".yaml", ".yml"}:  # golden: expected paths -> doc ids
            queries, qrels, unmatched = golden_qrels(engine, load_golden(dataset))
            if unmatched:
                raise SystemExit(f"{dataset}: {len(unmatched)} expectations match no document")
            name = dataset.name
        else:
            data = load_dataset(dataset, split=split)
            queries, qrels, name = data.queries, data.qrels, data.name
        qids = sorted(q for q in queries if qrels.get(q))
        per_query: list[dict[str, object]] = []
        started = time.perf_counter()
        for qid in qids:
            text = queries[qid]
            fetch = candidates * CAP_FETCH if per_doc else candidates
            dense = engine.search(text, top_k=fetch, mode="dense", candidates=fetch)
            bm25 = engine.search(text, top_k=fetch, mode="bm25", candidates=fetch)
            doc_of = {h.chunk.chunk_id: h.chunk.doc_id for h in (*dense.hits, *bm25.hits)}
            relation = language_relation(text, [h.chunk.language for h in dense.hits])
            rankings = {
                "dense": [(h.chunk.chunk_id, h.score) for h in dense.hits],
                "bm25": [(h.chunk.chunk_id, h.score) for h in bm25.hits],
            }
            rankings = {
                arm: cap_per_document(ranking, doc_of.get, per_document=per_doc, limit=candidates)
                if per_doc
                else ranking
                for arm, ranking in rankings.items()
            }
            rel = qrels[qid]
            row: dict[str, object] = {"qid": qid, "relation": relation}
            for arm in ("dense", "bm25"):
                ranked = _doc_ranking([i for i, _ in rankings[arm]], doc_of, 100)
                row[arm] = (ndcg_at_k(ranked, rel, 10), hit_rate_at_k(ranked, rel, 5))
            for w in weights:
                fused = rrf(rankings, k=60, weights={"dense": w, "bm25": 1.0 - w})
                ranked = _doc_ranking([f.item_id for f in fused], doc_of, 100)
                row[f"w{w:.2f}"] = (ndcg_at_k(ranked, rel, 10), hit_rate_at_k(ranked, rel, 5))
            per_query.append(row)
    n = len(per_query)

    def mean(key: str, i: int) -> float:
        return round(sum(r[key][i] for r in per_query) / n, 4)  # type: ignore[index]

    cols = ["bm25", "dense", *(f"w{w:.2f}" for w in weights)]
    by_relation = {}
    for relation in ("same", "cross", "unknown"):
        rows = [r for r in per_query if r["relation"] == relation]
        if rows:
            by_relation[relation] = {
                "n": len(rows),
                "ndcg@10": {
                    c: round(sum(r[c][0] for r in rows) / len(rows), 4)  # type: ignore[index]
                    for c in cols
                },
            }
    return {
        "by_relation": by_relation,
        "dataset": name,
        "embedder": manifest_embedder,
        "n_queries": n,
        "cross_share": round(sum(r["relation"] == "cross" for r in per_query) / n, 4),
        "ndcg@10": {c: mean(c, 0) for c in cols},
        "hit@5": {c: mean(c, 1) for c in cols},
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", required=True, help="name=dataset:split:index_dir")
    parser.add_argument(
        "--weights", default="0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", help="dense weights, comma list"
    )
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--max-chunks-per-doc", type=int, default=8, help="0: no cap")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    results = {}
    for spec in args.sets:
        name, _, rest = spec.partition("=")
        dataset, split, index = rest.split(":", 1)[0], *rest.split(":", 1)[1].rsplit(":", 1)
        results[name] = sweep_set(
            Path(dataset), split, Path(index), weights, args.candidates, args.max_chunks_per_doc
        )
        r = results[name]
        print(
            f"{name}: {r['n_queries']} queries, cross {r['cross_share']}, {r['seconds']} s",
            file=sys.stderr,
        )
    cols = ["bm25", "dense", *(f"w{w:.2f}" for w in weights)]
    print("| set | embedder | cross | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 3) + "|")
    for name, r in results.items():
        nd = r["ndcg@10"]
        print(
            f"| {name} | {str(r['embedder']).split(':')[0]} | {r['cross_share']} | "
            + " | ".join(f"{nd[c]:.4f}" for c in cols)
            + " |"
        )  # type: ignore[index]
    for name, r in results.items():
        for relation, part in r["by_relation"].items():  # type: ignore[attr-defined]
            nd = part["ndcg@10"]
            print(
                f"| {name} ({relation}, {part['n']}) | | | "
                + " | ".join(f"{nd[c]:.4f}" for c in cols)
                + " |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous.update(results)
    args.out.write_text(json.dumps(previous, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
