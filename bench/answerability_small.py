"""Held-out evidence check on small indexes: hand rule, large-index model, small-index model.

An index under ``LEARNED_MIN_CHUNKS`` (500) chunks gets the small-index answerability model
(``generate/answerability_models/e5.small.json``); before it, the calibrated hand rule. This
bench scores each decision on the **held-out** rows of the small indexes of
:mod:`ragstrata.training.small_indexes` (SQuAD-es test-half articles, one index each, and runs
of 4 of their paragraphs; FastAPI test-half headings over 8-page group indexes, both
directions): per source, the share of answerable questions answered, of absent-paragraph
questions refused, refusal precision/F1 and the AUC of each score (``--half train`` gives the
same on the training rows). Decisions, all as :mod:`ragstrata.generate.evidence` takes them:

* ``hand``: ``max(dense, 0) + 0.5 × coverage`` under 1.10, or 0.94 for a question in another
  language than its hits (the old small-index default);
* ``large``: the shipped large-index model at its thresholds, with the strong-evidence guard;
* ``small``: the shipped small-index model at its thresholds, with the guard (the new default).

Rows come from the training script's cache (``python -m ragstrata.training.answerability
--scope small --work DIR --rows ROWS --large-rows LARGE_ROWS --out FILE``, which builds the
indexes and collects both halves), so no index is read here:

    PYTHONPATH=src python bench/answerability_small.py --rows ROWS
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ragstrata.eval.refusal import roc_auc
from ragstrata.generate.answerability import FEATURES, answerability_model
from ragstrata.generate.evidence import (
    CALIBRATED_MIN_EVIDENCE,
    CROSS_MIN_EVIDENCE,
    STRONG_EVIDENCE,
    hand_score,
)

DENSE = FEATURES.index("dense_best")
COVERAGE = FEATURES.index("coverage_best")
CROSS = FEATURES.index("cross_language")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument("--half", default="test", choices=("train", "test"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_small.json"))
    args = ap.parse_args()
    rows = [r for r in json.loads(args.rows.read_text()) if r[0].endswith("/" + args.half)]
    models = {"large": answerability_model("e5"), "small": answerability_model("e5", "small")}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for source in sorted({r[0] for r in rows}):
        sel = [r for r in rows if r[0] == source]
        x = np.array([r[3] for r in sel], dtype=float)
        y = np.array([r[2] for r in sel])
        hand = np.array([hand_score(v[DENSE], v[COVERAGE]) for v in x])
        cross = x[:, CROSS] == 1.0
        strong = hand >= STRONG_EVIDENCE
        scores = {"hand": hand}
        refused = {
            "hand": hand < np.where(cross, CROSS_MIN_EVIDENCE["e5"], CALIBRATED_MIN_EVIDENCE["e5"])
        }
        for name, model in models.items():
            p = np.array([model.probability(v) for v in x])
            thr = np.where(cross, model.cross_threshold or model.threshold, model.threshold)
            scores[name] = p
            refused[name] = (p < thr) & ~strong
        results[source] = {}
        for name, r in refused.items():
            tp = int((r & (y == 0)).sum())
            precision = tp / max(1, int(r.sum()))
            recall = tp / max(1, int((y == 0).sum()))
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            results[source][name] = {
                "answerable": int((y == 1).sum()),
                "absent": int((y == 0).sum()),
                "answered": round(1 - float(r[y == 1].mean()), 4),
                "absent_refused": round(recall, 4),
                "refusal_precision": round(precision, 4),
                "refusal_f1": round(f1, 4),
                "auc": round(roc_auc(list(scores[name]), list(y == 0)), 4),
            }
    print(f"held-out half: {args.half}; rows {args.rows}")
    print(
        "| source | rule | answerable | absent | answered | absent refused | refusal P | F1 | AUC |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for source, by_rule in results.items():
        for name, m in by_rule.items():
            print(
                f"| {source} | {name} | {m['answerable']} | {m['absent']} | {m['answered']} | "
                f"{m['absent_refused']} | {m['refusal_precision']} | {m['refusal_f1']} | "
                f"{m['auc']} |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"half": args.half, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
