"""Would a late-interaction (MaxSim) feature help the answerability check? Measured, not shipped.

The e5 ONNX graph's last hidden states (before mean pooling, exposed as an extra graph output)
give token vectors; MaxSim of a question against a passage is the mean, over the question's
tokens, of each token's best cosine to a passage token (ColBERT's score, here from a model
trained only for pooled vectors). Three variants over the first 3 hits: MaxSim to the chunk,
the mean of the weakest half of the question's tokens, and the best MaxSim to one of the
answerability check's sentences (:func:`~ragstrata.generate.answerability.answer_sentences`).

SQuAD-es **training** questions (seeded sample) are searched on the index as the training
script does, present and with their own paragraph removed; each row holds the 26 shipped
features and the three MaxSim values. Printed: each MaxSim variant's AUC alone,
``sentence_dense``'s, and the out-of-fold AUC (5 folds by question, 3 seeds) of the shipped
logistic recipe without and with them.

    PYTHONPATH=src python bench/answerability_maxsim.py --index SQUAD_INDEX [--questions 400]

Writes bench/results/answerability_maxsim.json.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragstrata.eval.refusal import roc_auc
from ragstrata.generate.answerability import (
    FEATURES,
    answer_sentences,
    answerability_features,
    sentence_cosines,
)
from ragstrata.training.answerability import (
    ExcludingStore,
    _MemoEmbedder,
    _predict,
    _squad_questions,
    fit_logistic,
)
from ragstrata.types import Hit

SQUAD = Path("../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz")
VARIANTS = ("maxsim_chunk", "maxsim_weak_half", "maxsim_sentence")


class TokenStates:
    """L2-normalized last-layer token vectors of e5 (the prefix and ``<s>``/``</s>`` dropped)."""

    def __init__(self, embedder: Any) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        from ragstrata.embed.e5_onnx import ensure_e5_model

        embedder.warm_up()
        model = onnx.load(str(ensure_e5_model(embedder.variant, cache_dir=embedder._cache_dir)))
        unsqueezed = {n.output[0] for n in model.graph.node if n.op_type == "Unsqueeze"}
        masked = [n for n in model.graph.node if n.op_type == "Mul" and n.input[1] in unsqueezed]
        self.name = masked[-1].input[0]  # the hidden states the pooling multiplies by the mask
        model.graph.output.append(helper.make_tensor_value_info(self.name, TensorProto.FLOAT, None))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        self.session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = embedder._load_tokenizer()
        self.cache: dict[tuple[str, str], np.ndarray] = {}

    def __call__(self, text: str, prefix: str) -> np.ndarray:
        key = (prefix, text)
        if key not in self.cache:
            skip = len(self.tokenizer.encode(prefix).ids) - 1  # <s> + the prefix's tokens
            ids = np.array([self.tokenizer.encode(prefix + text).ids[:512]], dtype=np.int64)
            (x,) = self.session.run([self.name], {"input_ids": ids, "attention_mask": ids * 0 + 1})
            x = x[0][skip:-1] if len(x[0]) > skip + 1 else x[0]
            self.cache[key] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return self.cache[key]


def maxsim(states: TokenStates, question: str, hits: Sequence[Hit]) -> list[float]:
    """The three :data:`VARIANTS` of ``question`` over ``hits``."""
    q = states(question, "query: ")
    chunk = weak = sentence = 0.0
    for h in hits[:3]:
        best = (q @ states(h.chunk.text, "passage: ").T).max(axis=1)
        chunk = max(chunk, float(best.mean()))
        weak = max(weak, float(np.sort(best)[: max(1, len(best) // 2)].mean()))
    for s in answer_sentences(hits)[:24]:
        sentence = max(sentence, float((q @ states(s, "passage: ").T).max(axis=1).mean()))
    return [chunk, weak, sentence]


def collect(index: Path, n: int) -> list[tuple[str, int, list[float], list[float]]]:
    """(qid, label, shipped features, MaxSim variants) of ``n`` training questions."""
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata
    from ragstrata.retrieve.hybrid import HybridRetriever

    questions = sorted(random.Random(0).sample(_squad_questions(SQUAD, unanswerable=False), n))
    config = RagConfig.load(env={}).with_index(index)
    rows = []
    with Ragstrata(config) as engine:
        store, manifest, analyzer = engine._read_store(), engine.manifest(), engine.analyzer
        memo = _MemoEmbedder(engine.embedder)
        states = TokenStates(engine.embedder)
        full = HybridRetriever(store, memo, analyzer, config.retrieval)  # type: ignore[arg-type]

        def row(qid: str, label: int, text: str, hits: Sequence[Hit]) -> None:
            cosines = sentence_cosines(text, hits, memo)  # type: ignore[arg-type]
            features = answerability_features(text, hits, analyzer, cosines=cosines)
            rows.append((qid, label, features, maxsim(states, text, hits)))

        for qid, text, gold, _ in questions:
            hits = full.search(text).hits
            if any(h.chunk.doc_id in gold for h in hits):
                row(qid, 1, text, hits)
            excluded = frozenset(c for d in gold for c in manifest.documents[d].chunk_ids)
            part = HybridRetriever(
                ExcludingStore(store, excluded),  # type: ignore[arg-type]
                memo,  # type: ignore[arg-type]
                analyzer,
                config.retrieval,
            )
            row(qid, 0, text, part.search(text).hits)
            part.close()
        full.close()
    return rows


def out_of_fold_auc(x: np.ndarray, y: np.ndarray, qids: list[str]) -> float:
    """Mean over seeds 0-2 of the AUC of 5-fold (by question) logistic probabilities."""
    aucs = []
    for seed in (0, 1, 2):
        order = sorted(set(qids))
        random.Random(seed).shuffle(order)
        fold_of = {q: i % 5 for i, q in enumerate(order)}
        fold = np.array([fold_of[q] for q in qids])
        p = np.zeros(len(y))
        for k in range(5):
            m, s, w, b = fit_logistic(x[fold != k], y[fold != k])
            p[fold == k] = _predict(x[fold == k], m, s, w, b)
        aucs.append(roc_auc(list(p), list(y == 0)))
    return round(float(np.mean(aucs)), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, required=True, help="the SQuAD-es v1.1 small index")
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--out", type=Path, default=Path("bench/results/answerability_maxsim.json"))
    args = ap.parse_args()
    rows = collect(args.index, args.questions)
    qids = [r[0] for r in rows]
    y = np.array([r[1] for r in rows], dtype=float)
    base = np.array([r[2] for r in rows], dtype=float)
    extra = np.array([r[3] for r in rows], dtype=float)
    result: dict[str, Any] = {"rows": len(rows), "answerable": int(y.sum()), "alone": {}}
    for j, name in enumerate(VARIANTS):
        result["alone"][name] = round(roc_auc(list(extra[:, j]), list(y == 0)), 4)
    dense = FEATURES.index("sentence_dense")
    result["alone"]["sentence_dense"] = round(roc_auc(list(base[:, dense]), list(y == 0)), 4)
    result["out_of_fold"] = {"shipped features": out_of_fold_auc(base, y, qids)}
    for j, name in enumerate(VARIANTS):
        both = np.hstack([base, extra[:, [j]]])
        result["out_of_fold"][f"+ {name}"] = out_of_fold_auc(both, y, qids)
    result["out_of_fold"]["+ all three"] = out_of_fold_auc(np.hstack([base, extra]), y, qids)
    print(json.dumps(result, indent=1))
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
