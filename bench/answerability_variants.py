"""Out-of-fold comparison of answerability training variants on the training rows (no test data).

Reads the rows cache the training script writes (``python -m ragstrata.training.answerability
... --rows ROWS``: SQuAD-es, SQuAD-es v2 and FastAPI training halves) and, with the training
script's own folds (by question, seeded), fit and loss weights, scores each variant's
out-of-fold probabilities on the SQuAD-es present/absent rows (all of them, and ``strict``:
without the absent rows whose hits still hold a gold answer string) and on the FastAPI rows:
AUC and the absent rows refused at 10 % / 15 % of answerable rows refused
(:func:`~ragstrata.eval.answers.evidence_curve`). Variants:

* ``base``: the shipped recipe;
* ``drop-doubtful``: fit without the doubtful negatives (``--drop-doubtful``), scored on the
  same rows as ``base``;
* ``+entity-missing``: one more feature, 1 when the question holds a name or number that no
  hit holds in full;
* ``+squares``: that, plus the squares of ``sentence_dense``, ``sentence_coverage``,
  ``dense_best`` and ``coverage_best``.

    PYTHONPATH=src python bench/answerability_variants.py --rows ROWS
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from ragstrata.eval.answers import evidence_curve
from ragstrata.generate.answerability import FEATURES
from ragstrata.training.answerability import SOURCE_WEIGHTS, _predict, fit_logistic, read_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_variants.json"))
    args = ap.parse_args()
    rows = read_rows(args.rows)
    x = np.array([r.features for r in rows], dtype=float)
    y = np.array([r.label for r in rows], dtype=float)
    sw = np.array([SOURCE_WEIGHTS.get(r.source, 1.0) for r in rows])
    doubtful = np.array([r.label == 0 and r.answer_in_hits for r in rows])
    qids = sorted({(r.source, r.qid) for r in rows})  # the training script's folds
    random.Random(args.seed).shuffle(qids)
    fold_of = {q: i % args.folds for i, q in enumerate(qids)}
    fold = np.array([fold_of[(r.source, r.qid)] for r in rows])
    squad = np.array([r.source == "squad-es" for r in rows])
    fastapi = np.array([r.source.startswith("fastapi") for r in rows])
    f = {name: i for i, name in enumerate(FEATURES)}
    missing = ((x[:, f["entities"]] == 1) & (x[:, f["entity_match"]] < 1)).astype(float)[:, None]
    squares = x[:, [f[n] for n in ("sentence_dense", "sentence_coverage", "dense_best")]] ** 2
    squares = np.hstack([squares, x[:, [f["coverage_best"]]] ** 2])
    everyone = np.ones(len(rows), dtype=bool)
    variants = {
        "base": (x, everyone),
        "drop-doubtful": (x, ~doubtful),
        "+entity-missing": (np.hstack([x, missing]), everyone),
        "+squares": (np.hstack([x, squares, missing]), everyone),
    }
    result: dict[str, object] = {"rows": str(args.rows), "n_rows": len(rows)}
    print(
        "| variant | SQuAD-es AUC | strict AUC | absent refused at ≤10 % / ≤15 % refused | "
        "FastAPI AUC |"
    )
    print("|---|---|---|---|---|")
    for name, (features, fit_on) in variants.items():
        oof = np.zeros(len(rows))
        for k in range(args.folds):
            train = (fold != k) & fit_on
            m, s, w, b = fit_logistic(features[train], y[train], sample_weight=sw[train])
            oof[fold == k] = _predict(features[fold == k], m, s, w, b)

        def curve(sel: np.ndarray, oof: np.ndarray = oof) -> dict[str, float]:
            return evidence_curve(
                [float(v) for v in oof[sel & (y == 1)]], [float(v) for v in oof[sel & (y == 0)]]
            )

        line = {
            "squad": curve(squad),
            "squad_strict": curve(squad & ~doubtful),
            "fastapi": curve(fastapi),
        }
        result[name] = line
        sq = line["squad"]
        print(
            f"| {name} | {sq['evidence_auc']} | {line['squad_strict']['evidence_auc']} | "
            f"{sq['evidence_recall_at_frr_0.10']} / {sq['evidence_recall_at_frr_0.15']} | "
            f"{line['fastapi']['evidence_auc']} |"
        )
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
