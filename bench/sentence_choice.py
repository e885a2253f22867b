"""The extractive answerer's sentence choice with and without the reader, on the same hits.

``ask``'s extractive answerer scores each candidate sentence ``0.7 · cosine + 0.3 · coverage``
(plus a rank prior) and quotes up to 3 sentences within 0.75 of the best; with a reader (the
evidence check's, ``llm.reader``) it adds ``weight × sigmoid(logit)`` to the
:data:`~ragstrata.generate.extractive.READER_SENTENCES` best sentences, the reader reading each
under its section's headings. This bench retrieves each question's hits once (the engine's
default hybrid search) and re-picks the quotes at each ``--weights`` value (0 = no reader), so
the rows differ only by the sentence choice. No refusal is applied: every question is answered.

Sets are ``NAME=INDEX:QUESTIONS`` (a golden JSONL/YAML file whose entries give ``answers``, or
a SQuAD-format file, then ``:SPLIT[:MAX]`` picks the article half and the first MAX questions).
Per set and weight: answers containing a gold answer (normalized, :mod:`ragstrata.eval.
answer_metrics`), mean token F1, mean words; and, pooled over the sets, the paired
randomization test of each weight against 0.

    PYTHONPATH=src python bench/sentence_choice.py --tag train --weights 0,0.1,0.2,0.3,0.4 \\
        --set en-en=IDX_EN:eval/questions/fastapi-written-train.en-en.jsonl \\
        --set squad=IDX_SQUAD:../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz:train:150

Writes bench/results/sentence_choice-<tag>.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np


class CachedReader:
    """The packaged reader with each (question, passage) pair scored once; ``pairs`` counts
    the pairs it scored and ``seconds`` the time it took."""

    def __init__(self, reader: Any) -> None:
        self.inner = reader
        self.name = reader.name
        self._logits: dict[tuple[str, str], float] = {}
        self.pairs = 0
        self.seconds = 0.0

    def score(self, question: str, passages: list[str]) -> Any:
        missing = [p for p in dict.fromkeys(passages) if (question, p) not in self._logits]
        if missing:
            t = time.perf_counter()
            logits = self.inner.score(question, missing)
            self.seconds += time.perf_counter() - t
            self.pairs += len(missing)
            for passage, logit in zip(missing, logits, strict=True):
                self._logits[question, passage] = float(logit)
        return np.array([self._logits[question, p] for p in passages], dtype=np.float32)


def load_cases(engine: Any, spec: str) -> list[Any]:
    """The answer cases of ``QUESTIONS[:SPLIT[:MAX]]`` for the engine's index."""
    from ragstrata.eval.answers import cases_from_dataset, cases_from_golden
    from ragstrata.eval.datasets import load_golden
    from ragstrata.eval.runner import golden_qrels, load_dataset

    path, _, rest = spec.partition(":")
    split, _, most = rest.partition(":")
    if path.endswith((".jsonl", ".yaml", ".yml")):
        golden = load_golden(Path(path))
        _, qrels, _ = golden_qrels(engine, golden)
        cases = cases_from_golden(golden, qrels)
    else:
        cases = cases_from_dataset(load_dataset(Path(path), split=split or "test"))
    return cases[: int(most)] if most else cases


def run_set(name: str, spec: str, weights: list[float]) -> dict[str, Any]:
    from ragstrata.assemble.context import assemble
    from ragstrata.config import RagConfig
    from ragstrata.embed.cache import CachedEmbedder
    from ragstrata.eval.answer_metrics import contains_answer, max_token_f1
    from ragstrata.generate.citations import MARKER
    from ragstrata.generate.extractive import READER_SENTENCES, ExtractiveAnswerer
    from ragstrata.pipeline import Ragstrata

    index, _, questions = spec.partition(":")
    with Ragstrata(RagConfig.load().with_index(Path(index))) as engine:
        cases = load_cases(engine, questions)
        # every weight re-picks the same sentences: each is embedded once
        embedder = CachedEmbedder(engine.read_embedder, passages=1_000_000, queries=100_000)
        reader = CachedReader(engine._reader())
        contexts = [
            assemble(
                engine.search(case.question).hits,
                counter=embedder.counter,
                budget_tokens=engine.config.answer.context_tokens,
            )
            for case in cases
        ]
        rows: dict[str, Any] = {}
        for weight in weights:
            answerer = ExtractiveAnswerer(
                embedder,
                engine.analyzer,
                max_sentences=engine.config.answer.max_sentences,
                rank_weight=engine.config.answer.rank_weight,
                reader=reader if weight > 0 else None,
                reader_weight=weight,
                reader_top=READER_SENTENCES,
            )
            contains, f1, words = [], [], []
            for case, context in zip(cases, contexts, strict=True):
                text = MARKER.sub(" ", answerer.pick_quotes(case.question, context).text)
                contains.append(contains_answer(text, case.answers))
                f1.append(max_token_f1(text, case.answers))
                words.append(len(text.split()))
            rows[str(weight)] = {
                "contains_gold": float(np.mean(contains)),
                "f1": float(np.mean(f1)),
                "words": float(np.mean(words)),
                "per_question": {"contains": contains, "f1": f1, "words": words},
            }
    return {
        "set": name,
        "spec": spec,
        "n": len(cases),
        "reader_pairs": reader.pairs,
        "reader_ms_per_pair": 1000 * reader.seconds / max(reader.pairs, 1),
        "weights": rows,
    }


def pooled(results: list[dict[str, Any]], weights: list[float]) -> dict[str, Any]:
    """Per weight, the pooled means over every question of every set and the paired
    randomization p-value against weight 0 (or the first weight)."""
    from ragstrata.eval.metrics import paired_randomization_test

    base = str(weights[0])
    out: dict[str, Any] = {}
    for weight in weights:
        key = str(weight)
        row: dict[str, Any] = {}
        for metric in ("contains", "f1", "words"):
            a = [float(v) for r in results for v in r["weights"][base]["per_question"][metric]]
            b = [float(v) for r in results for v in r["weights"][key]["per_question"][metric]]
            row[metric] = float(np.mean(b))
            row[f"{metric}_p"] = 1.0 if key == base else paired_randomization_test(a, b)
        out[key] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=INDEX:QUESTIONS")
    parser.add_argument("--weights", default="0,0.2", help="comma-separated; 0 = no reader")
    parser.add_argument("--tag", default="run", help="names the results file")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    results = []
    for item in args.set:
        name, _, spec = item.partition("=")
        results.append(run_set(name, spec, weights))
    print("| set | n | weight | contains gold | token F1 | words |")
    print("|---|---|---|---|---|---|")
    for r in results:
        for key, row in r["weights"].items():
            print(
                f"| {r['set']} | {r['n']} | {key} | {row['contains_gold']:.4f} | "
                f"{row['f1']:.4f} | {row['words']:.1f} |"
            )
    summary = pooled(results, weights)
    print()
    print("| pooled weight | contains gold (p) | token F1 (p) | words (p) |")
    print("|---|---|---|---|")
    for key, row in summary.items():
        print(
            f"| {key} | {row['contains']:.4f} ({row['contains_p']:.4f}) | "
            f"{row['f1']:.4f} ({row['f1_p']:.4f}) | {row['words']:.1f} ({row['words_p']:.4f}) |"
        )
    for r in results:
        ms = r["reader_ms_per_pair"]
        print(f"{r['set']}: reader {r['reader_pairs']} pairs, {ms:.1f} ms each")
    out = Path("bench/results") / f"sentence_choice-{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "machine": platform.processor() or platform.machine(),
        "weights": weights,
        "pooled": summary,
        "sets": results,
    }
    out.write_text(json.dumps(data, indent=1), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
