"""Does keeping recent vectors (``CachedEmbedder``) speed up ``ask``?

Usage: python bench/ask_embed_cache.py --index DIR [--data ../shared/data] [--n 40]
                                       [--out bench/results/ask_embed_cache.json]

One engine on a SQuAD-es index (``ragstrata eval ../shared/data/squad-es-dev-small/
dev-v1.1-es_small.json.gz --index DIR`` builds it), extractive ``ask`` of ``--n`` test-half
questions in three settings, interleaved question by question (order rotated) so a change of
machine load touches all alike:

* ``plain``: every stage embeds for itself (the question up to three times, the first hits'
  sentences twice: answerability check, then the extractive answerer);
* ``fresh``: a new, empty :class:`~ragstrata.embed.cache.CachedEmbedder` per question (what one
  ``ask`` gains by itself);
* ``kept``: one cache for the whole run (what a session or the service gains: questions about
  the same passages reuse their sentences).

Prints p50 ms per setting, the ratio to ``plain`` and whether the answers are identical; writes
``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from ragstrata.config import RagConfig
from ragstrata.embed.cache import CachedEmbedder
from ragstrata.eval.datasets import load_squad
from ragstrata.pipeline import Ragstrata

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ask_embed_cache.json")
    args = ap.parse_args()
    squad = args.data / "squad-es-dev-small" / "dev-v1.1-es_small.json.gz"
    data = load_squad(squad, split="test")
    questions = [data.queries[q] for q in sorted(data.queries)[: args.n]]
    cfg = RagConfig.load(env={}).with_index(args.index)
    times: dict[str, list[float]] = {"plain": [], "fresh": [], "kept": []}
    texts: dict[str, list[str]] = {k: [] for k in times}
    load = []
    with Ragstrata(cfg) as engine:
        kept = CachedEmbedder(engine.embedder)
        engine.ask(questions[0])  # load the models
        names = list(times)
        for i, question in enumerate(questions):
            for name in names[i % 3 :] + names[: i % 3]:
                embedder = {
                    "plain": engine.embedder,
                    "fresh": CachedEmbedder(engine.embedder),
                    "kept": kept,
                }[name]
                engine._read_embedder = embedder  # what search and ask embed with
                engine._retriever = None
                started = time.perf_counter()
                answer = engine.ask(question)
                times[name].append(time.perf_counter() - started)
                texts[name].append(answer.text)
            load.append(os.getloadavg()[0])
    plain = statistics.median(times["plain"])
    rows = {
        name: {
            "p50_ms": round(1000 * statistics.median(v), 1),
            "ratio_to_plain": round(statistics.median(v) / plain, 3),
            "identical_answers": sum(
                a == b for a, b in zip(texts[name], texts["plain"], strict=True)
            ),
        }
        for name, v in times.items()
    }
    result = {
        "index": str(args.index),
        "questions": len(questions),
        "settings": rows,
        "load_avg_1m": [round(min(load), 2), round(max(load), 2)],
    }
    print("| setting | p50 ms | ratio to plain | answers identical to plain |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['p50_ms']} | {row['ratio_to_plain']} | "
            f"{row['identical_answers']}/{len(questions)} |"
        )
    print(f"load avg 1m {result['load_avg_1m']}")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
