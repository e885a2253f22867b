"""Held-out evidence check on small indexes: hand rule, large-index model, small-index model.

An index under ``LEARNED_MIN_CHUNKS`` (500) chunks gets the small-index answerability model
(``generate/answerability_models/e5.small.json``); before it, the calibrated hand rule. This
bench scores each decision on the **held-out** rows of the small indexes of
:mod:`ragstrata.training.small_indexes` (SQuAD-es test-half articles, one index each, and runs
of 4 of their paragraphs; FastAPI test-half headings over 8-page group indexes, both
directions): per source, the share of answerable questions answered, of absent-paragraph
questions refused, refusal precision/F1 and the AUC of each score (``--half train`` gives the
same on the training rows). Decisions, all as :mod:`ragstrata.generate.evidence` takes them:

* ``hand``: :class:`~ragstrata.generate.evidence.HandRule`, ``max(dense, 0) + 0.5 × coverage``
  under 1.10, or 0.94 for a question in another language than its hits (the old small-index
  default);
* ``large``: :class:`~ragstrata.generate.evidence.LearnedRule` with the shipped large-index
  model at its thresholds, strong-evidence guard included;
* ``small``: the same with the shipped small-index model (the new default).

Rows come from the training script's cache (``python -m ragstrata.training.answerability
--scope small --work DIR --rows ROWS --large-rows LARGE_ROWS --out FILE``, which builds the
indexes and collects both halves), so no index is read here:

    PYTHONPATH=src python bench/answerability_small.py --rows ROWS
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragstrata.eval.refusal import roc_auc
from ragstrata.generate.answerability import FEATURES, answerability_model
from ragstrata.generate.evidence import (
    CALIBRATED_MIN_EVIDENCE,
    CROSS_MIN_EVIDENCE,
    EvidenceRule,
    HandRule,
    LearnedRule,
    hand_score,
)
from ragstrata.training.answerability import read_rows, refusal_scores
from ragstrata.types import Evidence

DENSE = FEATURES.index("dense_best")
COVERAGE = FEATURES.index("coverage_best")
CROSS = FEATURES.index("cross_language")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument("--half", default="test", choices=("train", "test"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_small.json"))
    args = ap.parse_args()
    rows = [r for r in read_rows(args.rows) if r.source.endswith("/" + args.half)]
    models = {"large": answerability_model("e5"), "small": answerability_model("e5", "small")}
    # each decision: the rule itself, and the score it reads from a row's features
    rules: dict[str, tuple[EvidenceRule, Callable[[Sequence[float]], float]]] = {
        "hand": (
            HandRule(CALIBRATED_MIN_EVIDENCE["e5"], cross_threshold=CROSS_MIN_EVIDENCE["e5"]),
            lambda f: hand_score(f[DENSE], f[COVERAGE]),
        )
    }
    for name, model in models.items():
        rule = LearnedRule(model, model.threshold, cross_threshold=model.cross_threshold)
        rules[name] = (rule, model.probability)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for source in sorted({r.source for r in rows}):
        sel = [r for r in rows if r.source == source]
        y = np.array([r.label for r in sel])
        results[source] = {}
        for name, (rule, score) in rules.items():
            evidence = [
                Evidence(f[DENSE], f[COVERAGE], score(f), cross=f[CROSS] == 1.0)
                for f in (r.features for r in sel)
            ]
            refused = np.array([rule.refuses(ev) for ev in evidence])
            scores = refusal_scores((~refused).astype(float), y, 0.5)
            results[source][name] = {
                "answerable": int((y == 1).sum()),
                "absent": int((y == 0).sum()),
                "answered": round(1 - scores["false_refusal"], 4),
                "absent_refused": scores["recall"],
                "refusal_precision": scores["precision"],
                "refusal_f1": scores["f1"],
                "auc": round(roc_auc([ev.score for ev in evidence], list(y == 0)), 4),
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
