"""Does the reader help the refusal check of small indexes (under 500 chunks) too?

The reader (``generate/reader.py``) is blended into the refusal check of large indexes only
(``e5.reader.json`` was fitted with the large-index model's probability). This bench asks the
same of the small indexes most users start with, on the small indexes of
:mod:`ragstrata.training.small_indexes` (SQuAD-es one index per article; FastAPI groups of 8
pages, both directions), each question asked with its paragraph or page indexed (a row when it
is retrieved) and with its own gold documents removed:

* ``dev`` rows, to decide on: the questions of the 5 SQuAD-es training-half articles and of the
  FastAPI training pages that ``bench/reader_gpu.py`` kept out of the reader's training (its dev
  rows: same article and page rule);
* ``test`` / ``test_es-en`` / ``test_en-es`` rows, to report: test-half articles and test pages.

Per split, the decisions as ``generate/evidence.py`` takes them (strong-evidence guard
included): the small-index model alone at its thresholds (the shipped default), the large
blend's formula with the small model's probability at its threshold 0.2632, and a blend refitted
on the dev rows (threshold refusing 10 % of dev answerable rows).

    PYTHONPATH=src python bench/reader_small.py --work DIR [--articles 6] [--groups 4]

Writes bench/results/reader_small.json (rows included, so ``--rows`` re-scores without
searching again).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

SQUAD = Path("../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz")
PARALLEL = Path("../shared/data/fastapi-docs-md")
HITS = 5


def reader_dev_articles() -> tuple[set[str], list[str]]:
    """The SQuAD-es training-half articles ``bench/reader_gpu.py`` kept out of the reader's
    training (its last 20 %), and the test-half articles in id order."""
    from ragstrata.eval.datasets import load_squad

    def articles(split: str) -> list[str]:
        data = load_squad(SQUAD, split=split)
        return sorted({d.split("-")[0] for q in data.qrels.values() for d in q}, key=int)

    train = articles("train")
    return set(train[int(len(train) * 0.8) :]), articles("test")


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ragstrata.config import RagConfig
    from ragstrata.generate.answerability import READER_HITS
    from ragstrata.generate.evidence import LearnedRule
    from ragstrata.generate.reader import packaged_reader
    from ragstrata.pipeline import Ragstrata
    from ragstrata.training.answerability import search_without_docs
    from ragstrata.training.small_indexes import build_index, parallel_groups, squad_groups

    dev_articles, test_articles = reader_dev_articles()
    keep_test = set(test_articles[: args.articles])
    plan: list[tuple[Any, dict[str, str]]] = []  # (group, qid -> split)
    for group in squad_groups(SQUAD, per_article=args.per_article, seed=0):
        article = group.name.split("-")[1]
        if article in dev_articles:
            plan.append((group, {q[0]: "dev" for h, q in group.questions if h == "train"}))
        elif article in keep_test:
            plan.append((group, {q[0]: "test" for h, q in group.questions if h == "test"}))
    for direction in ("es-en", "en-es"):
        for group in parallel_groups(
            PARALLEL, direction, groups=args.groups, per_group=args.per_group, seed=0
        ):
            splits = {}
            for half, (qid, _, gold, _) in group.questions:
                if half == "test":
                    splits[qid] = f"test_{direction}"
                elif sum(map(ord, min(gold))) % 5 == 0:  # reader_gpu.py's dev pages
                    splits[qid] = "dev"
            plan.append((group, splits))

    reader = packaged_reader(0)
    with Ragstrata(RagConfig.load(env={}).with_index(args.work / "_embedder")) as loader:
        embedder = loader.embedder
    rows: list[dict[str, Any]] = []
    started = time.time()
    for group, splits in plan:
        if not splits:
            continue
        index = build_index(group, args.work, embedder)
        cfg = RagConfig.load(env={}).with_index(index)
        with Ragstrata(cfg, embedder=embedder) as engine:
            engine.search("x")
            store, manifest = engine._read_store(), engine.manifest()
            rule = engine._evidence_rule()  # what ask uses: the small-index model here
            assert isinstance(rule, LearnedRule) and rule.model.scope == "small", rule
            for _, (qid, text, gold, _) in group.questions:
                split = splits.get(qid)
                if split is None:
                    continue
                rows_of = []
                hits = engine.search(text).hits
                if any(h.chunk.doc_id in gold for h in hits):
                    rows_of.append((hits, 1))
                absent = search_without_docs(
                    store,
                    manifest,
                    gold,
                    engine.read_embedder,
                    engine.analyzer,
                    engine.config.retrieval,
                    text,
                )
                rows_of.append((absent, 0))
                for found, label in rows_of:
                    ev = rule.measure(text, found, engine.analyzer)
                    passages = [h.chunk.rendered for h in found[:READER_HITS]]
                    logit = float(reader.score(text, passages).max()) if passages else -1e9
                    rows.append(
                        {
                            "split": split,
                            "group": group.name,
                            "label": label,
                            "p": ev.score,
                            "reader": logit,
                            "cross": ev.cross,
                            "strong": ev.strong,
                            "threshold": rule.threshold_for(ev),
                        }
                    )
        print(f"{group.name}: {len(rows)} rows, {time.time() - started:.0f} s", flush=True)
    return rows


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    p, a = scores[y == 1], scores[y == 0]
    if not len(p) or not len(a):
        return float("nan")
    return float((p[:, None] > a[None, :]).mean() + 0.5 * (p[:, None] == a[None, :]).mean())


def judge(refused: np.ndarray, y: np.ndarray) -> dict[str, float]:
    absent, present = refused[y == 0], refused[y == 1]
    tp, fp = int(absent.sum()), int(present.sum())
    precision, recall = tp / max(tp + fp, 1), tp / max(len(absent), 1)
    return {
        "absent_refused": round(recall, 4),
        "answerable_refused": round(float(present.mean()) if len(present) else 0.0, 4),
        "refusal_f1": round(2 * precision * recall / max(precision + recall, 1e-9), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path(".reader-small"))
    ap.add_argument("--rows", type=Path, default=None, help="re-score the rows of a run")
    ap.add_argument("--articles", type=int, default=6, help="test-half articles")
    ap.add_argument("--per-article", type=int, default=15)
    ap.add_argument("--groups", type=int, default=4, help="FastAPI groups per direction")
    ap.add_argument("--per-group", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("bench/results/reader_small.json"))
    args = ap.parse_args()
    from sklearn.linear_model import LogisticRegression

    from ragstrata.generate.answerability import reader_blend

    if args.rows is not None:
        rows = json.loads(args.rows.read_text(encoding="utf-8"))["rows"]
    else:
        rows = collect(args)
    large = reader_blend("e5")
    dev = [r for r in rows if r["split"] == "dev"]
    fit = LogisticRegression(C=1.0).fit(
        np.array([[r["reader"], r["p"]] for r in dev]), np.array([r["label"] for r in dev])
    )

    def refit(r: dict[str, Any]) -> float:
        z = fit.intercept_[0] + fit.coef_[0][0] * r["reader"] + fit.coef_[0][1] * r["p"]
        return float(1 / (1 + np.exp(-z)))

    dev_present = np.array([refit(r) for r in dev if r["label"] == 1])
    refit_threshold = float(np.quantile(dev_present, 0.10))
    report: dict[str, Any] = {
        "refit": {
            "reader_weight": float(fit.coef_[0][0]),
            "p_weight": float(fit.coef_[0][1]),
            "bias": float(fit.intercept_[0]),
            "threshold": refit_threshold,
        },
        "splits": {},
    }
    print(
        "| split | rows (answerable) | decision | AUC | absent refused | answerable refused | "
        "refusal F1 |"
    )
    print("|---|---|---|---|---|---|---|")
    for split in ("dev", "test", "test_es-en", "test_en-es"):
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        y = np.array([r["label"] for r in part])
        strong = np.array([r["strong"] for r in part])
        p = np.array([r["p"] for r in part])
        small_t = np.array([r["threshold"] for r in part])
        blend = np.array([large.probability(r["reader"], r["p"]) for r in part])
        refitted = np.array([refit(r) for r in part])
        decisions = {
            "small model alone (shipped)": (p, (p < small_t) & ~strong),
            "large blend formula, 0.2632": (blend, (blend < large.threshold) & ~strong),
            "blend refitted on dev": (refitted, (refitted < refit_threshold) & ~strong),
        }
        report["splits"][split] = {}
        for name, (score, refused) in decisions.items():
            res = {"rows": len(y), "answerable": int(y.sum()), "auc": round(auc(score, y), 4)}
            res |= judge(refused, y)
            report["splits"][split][name] = res
            print(
                f"| {split} | {len(y)} ({int(y.sum())}) | {name} | {res['auc']} | "
                f"{res['absent_refused']} | {res['answerable_refused']} | {res['refusal_f1']} |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report | {"rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
