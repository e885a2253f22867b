"""Held-out check of the answerability model at the decision level (no answer is written).

The test halves of the training sources (SQuAD-es v1.1 ``--split test`` articles, SQuAD-es v2
``test`` unanswerables, FastAPI ``es-en:test`` / ``en-es:test`` pages) are searched as ``ask``
searches them, with the same present/absent construction as the training script
(:func:`ragstrata.training.answerability.collect`); per source it prints the share of answerable
questions (gold retrieved) the check lets through and the share of absent/unanswerable ones it
refuses, for the shipped model and for the hand-made rule it replaces (``dense + 0.5 ×
coverage`` under 1.10, computed from the same features). Writes
bench/results/answerability_heldout.json.

    PYTHONPATH=src python bench/answerability_heldout.py --squad-index DIR --squad-v2-index DIR \\
        --es-en-index DIR --en-es-index DIR [--max-questions 400]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from ragstrata.eval.datasets import load_squad
from ragstrata.eval.parallel_docs import load_parallel_docs
from ragstrata.generate.answerability import FEATURES, answerability_model
from ragstrata.training.answerability import collect

DATA = Path("../shared/data")
OLD_THRESHOLD = 1.10


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("squad-index", "squad-v2-index", "es-en-index", "en-es-index"):
        ap.add_argument(f"--{name}", type=Path, required=True)
    ap.add_argument("--max-questions", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_heldout.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)

    def cap(items: list[tuple[str, str, frozenset[str]]]) -> list[tuple[str, str, frozenset[str]]]:
        return sorted(rng.sample(items, min(len(items), args.max_questions)))

    sq = load_squad(DATA / "squad-es-dev-small/dev-v1.1-es_small.json.gz", split="test")
    v2 = load_squad(DATA / "squad-es-dev-small/dev-v2.0-es_small.json.gz", split="test")

    def gold(data: object, q: str) -> frozenset[str]:
        return frozenset(d for d, g in data.qrels[q].items() if g > 0)  # type: ignore[attr-defined]

    rows = collect(
        args.squad_index,
        cap([(q, sq.queries[q], gold(sq, q)) for q in sorted(sq.queries)]),
        source="squad-es",
        absent=True,
    )
    rows += collect(
        args.squad_v2_index,
        cap([(q, t, frozenset()) for q, t in sorted(v2.unanswerable.items())]),
        source="squad-es-v2-unanswerable",
        absent=False,
    )
    for direction, index in (("es-en", args.es_en_index), ("en-es", args.en_es_index)):
        xl = load_parallel_docs(DATA / "fastapi-docs-md", direction=f"{direction}:test")
        rows += collect(
            index,
            cap([(q, xl.queries[q], gold(xl, q)) for q in sorted(xl.queries)]),
            source=f"fastapi-{direction}",
            absent=True,
        )
    model = answerability_model("e5")
    dense, coverage = FEATURES.index("dense_best"), FEATURES.index("coverage_best")
    cross = FEATURES.index("cross_language")
    result: dict[str, object] = {
        "threshold": model.threshold,
        "cross_threshold": model.cross_threshold,
        "old_threshold": OLD_THRESHOLD,
    }
    print(
        "| source | answerable (gold retrieved) | answered: model | answered: old rule | "
        "absent/unanswerable | refused: model | refused: old rule |"
    )
    print("|---|---|---|---|---|---|---|")
    for source in sorted({r.source for r in rows}):
        pos = [r for r in rows if r.source == source and r.label == 1]
        neg = [r for r in rows if r.source == source and r.label == 0]

        def new_ok(r: object) -> bool:
            f = r.features  # type: ignore[attr-defined]
            bar = model.threshold
            if f[cross] == 1.0 and model.cross_threshold is not None:
                bar = model.cross_threshold  # a question in another language than its hits
            return model.probability(f) >= bar

        def old_ok(r: object) -> bool:
            f = r.features  # type: ignore[attr-defined]
            return max(f[dense], 0.0) + 0.5 * f[coverage] >= OLD_THRESHOLD

        def share(items: list[object], pred: object) -> float:
            return round(sum(map(pred, items)) / max(1, len(items)), 4)  # type: ignore[arg-type]

        line = {
            "answerable": len(pos),
            "answered_model": share(pos, new_ok),
            "answered_old": share(pos, old_ok),
            "negatives": len(neg),
            "refused_model": round(1 - share(neg, new_ok), 4) if neg else None,
            "refused_old": round(1 - share(neg, old_ok), 4) if neg else None,
        }
        result[source] = line
        print(f"| {source} | " + " | ".join(str(v) for v in line.values()) + " |")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
