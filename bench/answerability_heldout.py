"""Held-out check of the answerability model at the decision level (no answer is written).

The test halves of the training sources (SQuAD-es v1.1 ``--split test`` articles, SQuAD-es v2
``test`` unanswerables, FastAPI ``es-en:test`` / ``en-es:test`` pages) are searched as ``ask``
searches them, with the same present/absent construction as the training script
(:func:`ragstrata.training.answerability.collect`); per source it prints the share of answerable
questions (gold retrieved) the check lets through and the share of absent/unanswerable ones it
refuses, for the shipped model and for the hand-made rule it replaces (``dense + 0.5 ×
coverage`` under 1.10, computed from the same features). Both decisions are the rules'
own (:class:`~ragstrata.generate.evidence.LearnedRule` with the model's thresholds and its
strong-evidence guard, :class:`~ragstrata.generate.evidence.HandRule`), applied to an
:class:`~ragstrata.types.Evidence` built from the features. Per source it also gives the model's
AUC (answerable against absent/unanswerable, :func:`~ragstrata.eval.answers.evidence_curve`)
and, for SQuAD-es, the refusals of the absent questions whose hits hold no gold answer
(``strict``: the article does not repeat the fact). Writes
bench/results/answerability_heldout.json.

    PYTHONPATH=src python bench/answerability_heldout.py --squad-index DIR --squad-v2-index DIR \\
        --es-en-index DIR --en-es-index DIR [--max-questions 400] [--model FILE]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from ragstrata.eval.answers import evidence_curve
from ragstrata.eval.datasets import load_squad
from ragstrata.eval.parallel_docs import load_parallel_docs
from ragstrata.generate.answerability import FEATURES, AnswerabilityModel, answerability_model
from ragstrata.generate.evidence import HandRule, LearnedRule, hand_score
from ragstrata.training.answerability import Question, Row, collect, read_rows, write_rows
from ragstrata.types import Evidence

DATA = Path("../shared/data")
OLD_THRESHOLD = 1.10


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("squad-index", "squad-v2-index", "es-en-index", "en-es-index"):
        ap.add_argument(f"--{name}", type=Path, required=True)
    ap.add_argument("--max-questions", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", type=Path, help="a model JSON (default: the shipped e5 model)")
    ap.add_argument(
        "--rows", type=Path, help="cache of the collected rows (read when it exists, else written)"
    )
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_heldout.json"))
    args = ap.parse_args()
    if args.rows is not None and args.rows.is_file():
        rows = read_rows(args.rows)
    else:
        rows = _collect(args)
        if args.rows is not None:
            write_rows(rows, args.rows)
    model = (
        AnswerabilityModel.from_json(json.loads(args.model.read_text(encoding="utf-8")))
        if args.model
        else answerability_model("e5")
    )
    learned = LearnedRule(model, model.threshold, cross_threshold=model.cross_threshold)
    old = HandRule(OLD_THRESHOLD)
    dense, coverage = FEATURES.index("dense_best"), FEATURES.index("coverage_best")
    cross = FEATURES.index("cross_language")

    def measure(r: Row) -> tuple[Evidence, Evidence]:
        f = r.features
        new = Evidence(f[dense], f[coverage], model.probability(f), cross=f[cross] == 1.0)
        return new, Evidence(f[dense], f[coverage], hand_score(f[dense], f[coverage]))

    measured = {id(r): measure(r) for r in rows}  # each row's evidence, once

    result: dict[str, object] = {
        "model": str(args.model) if args.model else "shipped e5",
        "threshold": model.threshold,
        "cross_threshold": model.cross_threshold,
        "old_threshold": OLD_THRESHOLD,
    }
    print(
        "| source | answerable (gold retrieved) | answered: model | answered: old rule | "
        "absent/unanswerable | refused: model | refused: old rule | refused: model, strict | "
        "model AUC |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for source in sorted({r.source for r in rows}):
        pos = [r for r in rows if r.source == source and r.label == 1]
        neg = [r for r in rows if r.source == source and r.label == 0]
        strict = [r for r in neg if not r.answer_in_hits]

        def refused_share(items: list[Row], which: int) -> float | None:
            if not items:
                return None
            rule = (learned, old)[which]
            return round(sum(rule.refuses(measured[id(r)][which]) for r in items) / len(items), 4)

        answered = [
            None if v is None else round(1 - v, 4)
            for v in (refused_share(pos, 0), refused_share(pos, 1))
        ]
        curve = evidence_curve(
            [measured[id(r)][0].score for r in pos], [measured[id(r)][0].score for r in neg]
        )
        line = {
            "answerable": len(pos),
            "answered_model": answered[0],
            "answered_old": answered[1],
            "negatives": len(neg),
            "refused_model": refused_share(neg, 0),
            "refused_old": refused_share(neg, 1),
            "refused_model_strict": refused_share(strict, 0) if len(strict) < len(neg) else None,
            "auc_model": curve.get("evidence_auc"),
        }
        result[source] = line
        print(f"| {source} | " + " | ".join(str(v) for v in line.values()) + " |")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def _collect(args: argparse.Namespace) -> list[Row]:
    """The held-out rows of every source, searched on the four indexes."""
    rng = random.Random(args.seed)

    def cap(items: list[Question]) -> list[Question]:
        return sorted(rng.sample(items, min(len(items), args.max_questions)))

    sq = load_squad(DATA / "squad-es-dev-small/dev-v1.1-es_small.json.gz", split="test")
    v2 = load_squad(DATA / "squad-es-dev-small/dev-v2.0-es_small.json.gz", split="test")

    def gold(data: object, q: str) -> frozenset[str]:
        return frozenset(d for d, g in data.qrels[q].items() if g > 0)  # type: ignore[attr-defined]

    rows = collect(
        args.squad_index,
        cap([(q, sq.queries[q], gold(sq, q), sq.answers.get(q, ())) for q in sorted(sq.queries)]),
        source="squad-es",
        absent=True,
    )
    rows += collect(
        args.squad_v2_index,
        cap([(q, t, frozenset(), ()) for q, t in sorted(v2.unanswerable.items())]),
        source="squad-es-v2-unanswerable",
        absent=False,
    )
    for direction, index in (("es-en", args.es_en_index), ("en-es", args.en_es_index)):
        xl = load_parallel_docs(DATA / "fastapi-docs-md", direction=f"{direction}:test")
        rows += collect(
            index,
            cap([(q, xl.queries[q], gold(xl, q), ()) for q in sorted(xl.queries)]),
            source=f"fastapi-{direction}",
            absent=True,
        )
    return rows


if __name__ == "__main__":
    main()
