"""The citation checker on real LLM answers: (claim, source) pairs from recorded generations.

Usage: python bench/checker_paraphrases.py --dataset SQUAD_JSON --index SQUAD_INDEX
           --dev TRAIN_ANSWERS.json --test TEST_ANSWERS.json
           [--out bench/results/checker_paraphrases.json]

``ragstrata eval-citations`` calibrates the checker on copied, shortened and perturbed source
sentences; an LLM paraphrases instead ("El valor devuelto por `useEffect` es `undefined`" for
"`useEffect` devuelve `undefined`"). This bench takes the raw answers that ``ragstrata
eval-answers --llm local --json F`` recorded (``raw_answer`` per question, asked on a SQuAD
index and, for the "paragraph absent" questions, on its pruned copy, which eval-answers keeps
next to the index) and replays each through the same retrieval, assembly and
:func:`~ragstrata.generate.citations.ground` (the recorded text stands in for the model: the
checker runs after generation, so the pairs it sees are the ones the live run saw).

Labels, per (claim, source) pair the checker scored:
* supported: the raw answer contains a gold answer, the claim contains it, and the source is a
  gold paragraph;
* unsupported: the source is not a gold paragraph and does not contain a gold answer, for a
  claim that contains one (answerable questions), or any claim (absent questions: its gold
  paragraph was removed, whatever the model wrote is not in the context);
* everything else is left out (claims without the answer, sources that repeat it).

The threshold of ``w · cosine + (1 − w) · coverage`` is chosen on the ``--dev`` file's pairs
(eval-answers run on the training half of the articles) with the rule of eval-citations (best
F1 over the same grid, middle of the tied thresholds, ``w`` kept), and reported on the
``--test`` file's pairs (test half). Per file it also reports answers: how many raw answers that
contain a gold answer come out answered (some claim verified), and how many absent questions
come out answered, at the current and at the chosen settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragstrata.config import RagConfig
from ragstrata.eval.answer_metrics import contains_answer
from ragstrata.eval.answers import absent_index, absent_subset, cases_from_dataset
from ragstrata.eval.citation_check import THRESHOLD_GRID, score
from ragstrata.eval.runner import load_dataset
from ragstrata.generate import citations
from ragstrata.generate.citations import CheckerSettings, checker_settings_for
from ragstrata.generate.llama_local import LlamaGenerator
from ragstrata.pipeline import Ragstrata
from ragstrata.testing.fakes import RecordedChatModel

RESULTS = Path(__file__).resolve().parent / "results"


@dataclasses.dataclass
class Row:
    """One replayed answer: ``pairs`` are ``(counts, label or None, Support)`` for every
    (claim, source) pair; ``counts``: the pair is one ``ground`` checks (a cited claim's own
    sources, every source for an uncited claim)."""

    qid: str
    absent: bool
    raw_contains_gold: bool
    pairs: list[tuple[bool, bool | None, Any]]


def replay(
    engine: Ragstrata,
    model: RecordedChatModel,
    rows: Sequence[dict[str, Any]],
    cases: dict[str, Any],
    *,
    absent: bool,
) -> list[Row]:
    """Ask each recorded row again with its raw answer; label every (claim, source) pair of
    the context ``ground`` saw."""
    from ragstrata.generate import answer as answer_module

    seen: list[Any] = []
    original = answer_module.ground

    def spy(raw: str, context: Any, checker: Any, **kw: Any) -> Any:
        seen.append((context, checker))
        return original(raw, context, checker, **kw)

    out: list[Row] = []
    answer_module.ground = spy  # type: ignore[assignment]
    try:
        for r in rows:
            if not r.get("raw_answer"):
                continue
            case = cases[r["qid"]]
            model.text = r["raw_answer"]
            seen.clear()
            engine.ask(case.question)
            if not seen:  # refused before generation: the evidence rule changed since
                continue
            context, checker = seen[0]
            sources = list(context.sources)
            parsed = citations.parse_answer(r["raw_answer"], len(sources))
            pairs = [(c, s) for c in parsed.claims for s in sources]
            supports = checker.features(
                [c.text for c, _ in pairs],
                [s.body for _, s in pairs],
                code=[c.code for c, _ in pairs],
                headings=[citations._heading_of(s) for _, s in pairs],
                documents=[citations._same_document(s, sources) for _, s in pairs],
            )
            raw_gold = contains_answer(r["raw_answer"], case.answers)
            row = Row(r["qid"], absent, raw_gold, [])
            for (claim, source), support in zip(pairs, supports, strict=True):
                counts = not claim.labels or source.label in claim.labels
                in_source = contains_answer(source.body, case.answers)
                gold = source.hit.chunk.doc_id in case.gold_docs
                label: bool | None = None
                if absent:
                    label = None if in_source else False
                elif raw_gold and contains_answer(claim.text, case.answers):
                    label = True if gold else (None if in_source else False)
                row.pairs.append((counts, label, support))
            out.append(row)
    finally:
        answer_module.ground = original  # type: ignore[assignment]
    return out


def verified(support: Any, settings: CheckerSettings) -> bool:
    w = settings.semantic_weight
    blended = w * max(support.cosine, 0.0) + (1 - w) * support.coverage
    return not support.missing and blended >= settings.threshold


def answered(row: Row, settings: CheckerSettings) -> bool:
    """Whether ``ask`` would answer: some claim has a verified pair (cited claims are checked
    against their sources, uncited ones against every source by attribution)."""
    return any(counts and verified(s, settings) for counts, _, s in row.pairs)


def run_file(
    path: Path, dataset: Path, index: Path, config: RagConfig, model: RecordedChatModel
) -> list[Row]:
    report = json.loads(path.read_text())
    split = report.get("split") or ("train" if "train" in path.name else "test")
    data = load_dataset(dataset, split=split)
    present = report["per_query"]
    cases = {c.qid: c for c in cases_from_dataset(data) if c.qid in {r["qid"] for r in present}}
    ordered = [cases[r["qid"]] for r in present]
    rows: list[Row] = []
    with Ragstrata(config.with_index(index), generator=model) as engine:
        rows += replay(engine, model, present, cases, absent=False)
        manifest = engine.manifest()
    fraction = report["n_absent"] / max(1, report["n_questions"])
    drawn = absent_subset(ordered, fraction=fraction, seed=report["seed"])
    removed = sorted({d for c in drawn for d in c.gold_docs if d in manifest.documents})
    sources = {manifest.documents[d].source for d in removed}
    reduced = absent_index(index, index.parent, sources)
    with Ragstrata(config.with_index(reduced), generator=model) as engine:
        engine.add_documents([], prune=lambda s: s in sources)
        rows += replay(engine, model, report.get("per_query_absent", []), cases, absent=True)
    return rows


def summary(rows: Sequence[Row], settings: CheckerSettings) -> dict[str, Any]:
    labeled = [(s, y) for r in rows for _, y, s in r.pairs if y is not None]
    pr = score([verified(s, settings) for s, _ in labeled], [y for _, y in labeled])
    right = [r for r in rows if not r.absent and r.raw_contains_gold]
    absent = [r for r in rows if r.absent]
    return {
        "settings": dataclasses.asdict(settings),
        "pairs": pr.to_json(),
        "raw_correct_answered": f"{sum(answered(r, settings) for r in right)}/{len(right)}",
        "absent_answered": f"{sum(answered(r, settings) for r in absent)}/{len(absent)}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--dev", type=Path, required=True, help="eval-answers JSON, train split")
    parser.add_argument("--test", type=Path, required=True, help="eval-answers JSON, test split")
    parser.add_argument("--out", type=Path, default=RESULTS / "checker_paraphrases.json")
    args = parser.parse_args()
    config = RagConfig.load()
    model = RecordedChatModel(LlamaGenerator.from_config(config.llm))
    with Ragstrata(config.with_index(args.index)) as engine:
        current = checker_settings_for(engine.embedder_name)
    dev = run_file(args.dev, args.dataset, args.index, config, model)
    test = run_file(args.test, args.dataset, args.index, config, model)
    labeled = [(s, y) for r in dev for _, y, s in r.pairs if y is not None]
    w = current.semantic_weight
    grid = {
        t: score(
            [verified(s, dataclasses.replace(current, threshold=t)) for s, _ in labeled],
            [y for _, y in labeled],
        )
        for t in THRESHOLD_GRID
    }
    top = max(r.f1 for r in grid.values())
    tied = [t for t in THRESHOLD_GRID if grid[t].f1 >= top - 1e-12]
    chosen = dataclasses.replace(current, threshold=tied[len(tied) // 2])
    result = {
        "dataset": str(args.dataset),
        "semantic_weight": w,
        "dev_grid_f1": {str(t): round(r.f1, 4) for t, r in grid.items()},
        "current": {"dev": summary(dev, current), "test": summary(test, current)},
        "chosen": {"dev": summary(dev, chosen), "test": summary(test, chosen)},
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
