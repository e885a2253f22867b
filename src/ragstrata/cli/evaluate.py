"""The evaluation commands: ``eval`` (retrieval ablation), ``eval-refusal``, ``eval-answers``,
``eval-citations``, and ``reranker train`` (fine-tuning on the training halves of the evaluation
data; SciFact is never a source)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ragstrata.cli.common import (
    EXIT_REGRESSION,
    _Command,
    _engine,
    _eval_index,
    _fail,
    _Group,
    _llm_overrides,
    err,
    out,
    output_file,
    read_report,
    write_output,
)
from ragstrata.cli.options import BaselineOpt, ConfigOpt, EvalIndexOpt, SquadIndexOpt
from ragstrata.config import RagConfig
from ragstrata.errors import ConfigError, RagError
from ragstrata.pipeline import Ragstrata

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ragstrata.eval.answers import AnswerCase
    from ragstrata.types import Document


def eval_cmd(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="Your golden .yaml/.yml/.jsonl file (scored against --index), a BEIR "
            "folder, a SQuAD JSON file/folder, or parallel Markdown docs (es/, en/)."
        ),
    ],
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="BEIR: qrels split. SQuAD: all, or the train/test half of the articles. "
            "Parallel docs: es-en or en-es (query language-document language), optionally "
            "with :train or :test (halves of the pages).",
        ),
    ] = "test",
    modes: Annotated[
        str, typer.Option("--modes", help="Comma-separated: bm25,dense,hybrid,hybrid+rerank.")
    ] = "bm25,dense,hybrid",
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the full report (with per-query) here.")
    ] = None,
    compare_file: Annotated[
        Path | None, typer.Option("--compare", help="Earlier --json report to compare against.")
    ] = None,
    baseline: BaselineOpt = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Allowed absolute drop below the baseline.")
    ] = 0.01,
    max_queries: Annotated[
        int | None, typer.Option("--max-queries", min=1, help="Score only the first N queries.")
    ] = None,
    index: EvalIndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ablation on labeled data: nDCG@10, MRR@10, hit@k, recall@k, MAP and latency per mode.

    The corpus is indexed once into --index (default $RAGSTRATA_HOME/eval/<corpus>-<embedder>)
    and reused by later runs; the SQuAD splits share one index. For SQuAD the default split,
    test, is the held-out half of the articles: --split all scores every question.
    """
    wanted = [m.strip() for m in modes.split(",") if m.strip()]
    try:
        unknown = [m for m in wanted if m not in ("bm25", "dense", "hybrid", "hybrid+rerank")]
        if unknown or not wanted:
            raise ConfigError(f"--modes {modes!r}: choose from bm25, dense, hybrid, hybrid+rerank")
        output_file(json_file, "--json")
        earlier = read_report(compare_file, "--compare", key="modes", writer="eval")
        gate_on = read_report(baseline, "--baseline", key="modes", writer="eval")
        if dataset.suffix.lower() in GOLDEN_SUFFIXES:
            if split != "test":  # review 47: ignored without a word
                err.print(
                    f"[yellow]warning[/] --split {split} does not apply to a golden file: "
                    "every entry is scored (split the file itself to hold questions out)"
                )
            report, unmatched = _golden(dataset, wanted, index, config, max_queries)
            for item in unmatched:
                err.print(f"[yellow]warning[/] expected source not in the index: {item}")
        else:
            report = _ablation(dataset, split, wanted, max_queries, index, config)
    except RagError as exc:
        raise _fail(exc) from exc
    _print_eval(report, json_file, earlier, gate_on, tolerance)


def eval_refusal(
    dataset: Annotated[Path, typer.Argument(help="SQuAD v2.0 JSON file (.json or .json.gz).")],
    max_questions: Annotated[
        int | None,
        typer.Option("--max-questions", min=10, help="Use an evenly spaced subset."),
    ] = None,
    negatives: Annotated[
        str,
        typer.Option(
            "--negatives",
            help="What must be refused: 'unanswerable' (SQuAD v2 is_impossible questions) or "
            "'absent' (answerable questions searched where their article is not indexed).",
        ),
    ] = "unanswerable",
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the report (and features) here.")
    ] = None,
    index: SquadIndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Calibrate the refusal threshold (llm.min_evidence) on SQuAD v2: prints refusal
    precision, recall and F1 on held-out articles (docs/evaluation.md)."""
    from ragstrata.eval.datasets import load_squad
    from ragstrata.eval.refusal import calibrate, collect, collect_out_of_corpus

    try:
        output_file(json_file, "--json")
        cfg = RagConfig.load(config_file=config)
        name = load_squad(dataset).corpus_name
        if index is None:
            index = _eval_index(cfg, name)
        err.print(f"indexing {dataset} into {index} (reused when unchanged)")
        started = time.perf_counter()
        if negatives not in ("unanswerable", "absent"):
            raise ConfigError(f"--negatives {negatives!r}: choose unanswerable or absent")
        with Ragstrata(cfg.with_index(index)) as engine:
            features = collect(engine, dataset, max_questions=max_questions)
            if negatives == "absent":
                features = collect_out_of_corpus(engine, dataset, max_questions=max_questions)
            embedder = engine.manifest().embedder
        report = calibrate(features, dataset=f"{name} ({negatives})", embedder=embedder)
        report.seconds = time.perf_counter() - started
    except RagError as exc:
        raise _fail(exc) from exc
    t = report.test
    out.print(
        f"{report.dataset} ({report.embedder}): {report.n_questions} questions, "
        f"{report.n_unanswerable} unanswerable; calibration {report.n_calibration}, "
        f"test {report.n_test} (split by article)",
        highlight=False,
    )
    out.print(
        f"score = dense + {report.weight} x coverage; threshold {report.threshold:.4f} "
        f"(best calibration F1 {report.calibration.f1:.4f})",
        highlight=False,
    )
    table = Table(title="refusal on the test half (positive = unanswerable)")
    for col in ("threshold", "precision", "recall", "F1", "answerable refused"):
        table.add_column(col, justify="right")
    for row in report.table:
        mark = " *" if abs(row.threshold - round(report.threshold, 4)) < 1e-9 else ""
        table.add_row(
            f"{row.threshold:.4f}{mark}",
            f"{row.precision:.4f}",
            f"{row.recall:.4f}",
            f"{row.f1:.4f}",
            f"{row.false_refusal_rate:.4f}",
        )
    out.print(table)
    out.print(
        f"chosen: precision {t.precision:.4f} recall {t.recall:.4f} F1 {t.f1:.4f} "
        f"(answerable refused {t.false_refusal_rate:.4f}); ROC AUC {report.test_auc:.4f}; "
        f"refuse-everything F1 {report.refuse_all_f1:.4f}",
        highlight=False,
    )
    if json_file is not None:
        data = report.to_json()
        data["features"] = [
            [f.qid, f.article, f.unanswerable, round(f.dense, 5), round(f.coverage, 5)]
            for f in features
        ]
        write_output(json_file, json.dumps(data, indent=2), "--json")


def eval_answers(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="SQuAD JSON file/folder, or a golden .yaml/.jsonl file whose entries give "
            "'answers' (scored against the --index you built)."
        ),
    ],
    split: Annotated[
        str, typer.Option("--split", help="SQuAD: all, or the train/test half of the articles.")
    ] = "test",
    max_queries: Annotated[
        int | None, typer.Option("--max-queries", min=1, help="Ask only the first N questions.")
    ] = None,
    absent: Annotated[
        float,
        typer.Option(
            "--absent",
            min=0.0,
            max=1.0,
            help="Share of the questions whose gold documents are removed (from a copy of the "
            "index) and asked again, to score refusals; 0 skips it.",
        ),
    ] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the absent draw.")] = 0,
    absent_scope: Annotated[
        str,
        typer.Option(
            "--absent-scope",
            help="question (default): each drawn question searched among every document but its "
            "own gold ones (its article's other paragraphs stay); drawn: one copy of the index "
            "without every drawn question's gold documents.",
        ),
    ] = "question",
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm", help="Answerer: none (extractive), local, openai. Default: llm.provider."
        ),
    ] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the full report (with per-question).")
    ] = None,
    baseline: BaselineOpt = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Allowed absolute change past the baseline.")
    ] = 0.01,
    index: EvalIndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer-level evaluation through `ask`: share answered, answer contains a gold answer,
    token F1, cites the gold document, unverified citations, latency; refusals on questions
    whose gold documents were removed (docs/evaluation.md)."""
    from ragstrata.eval.answers import answer_markdown, gate, run_answer_eval

    try:
        if absent_scope not in ("drawn", "question"):
            raise ConfigError(f"--absent-scope {absent_scope!r}: choose drawn or question")
        output_file(json_file, "--json")
        gate_on = read_report(baseline, "--baseline", key="metrics", writer="eval-answers")
        cfg = RagConfig.load(config_file=config, overrides=_llm_overrides(llm))
        cases, documents, name, cfg = _answer_cases(dataset, split, max_queries, index, cfg)
        err.print(
            f"asking {len(cases)} questions on {cfg.index_path} "
            f"(+ {round(absent * len(cases))} with their gold documents removed)"
        )

        def progress(stage: str, done: int, total: int) -> None:
            if done % 50 == 0 or done == total:
                err.print(f"[dim]{stage}: {done}/{total}[/]", highlight=False)

        report = run_answer_eval(
            cfg,
            cases,
            name=name,
            documents=documents,
            absent_fraction=absent,
            seed=seed,
            absent_scope="drawn" if absent_scope == "drawn" else "question",
            progress=progress,
        )
    except RagError as exc:
        raise _fail(exc) from exc
    result = report.to_json()
    out.print(
        f"{report.dataset}: {len(report.outcomes)} questions, {len(report.absent)} asked with "
        f"{report.absent_removed_docs} gold documents removed; {report.n_docs} docs, "
        f"embedder {report.embedder}, answerer {report.answerer}, {report.seconds:.0f} s",
        highlight=False,
    )
    print(answer_markdown(result))
    if json_file is not None:
        write_output(json_file, json.dumps(result, indent=1, ensure_ascii=False), "--json")
    if gate_on is not None:
        _exit_on_regressions(gate(result, gate_on, tolerance=tolerance), tolerance)


def _answer_cases(
    dataset: Path, split: str, max_queries: int | None, index: Path | None, cfg: RagConfig
) -> tuple[list[AnswerCase], Iterable[Document] | None, str, RagConfig]:
    """Cases, documents to index (``None``: the index is the user's), report name and the
    configuration pointing at the index, for ``eval-answers``."""
    from ragstrata.eval.answers import cases_from_dataset, cases_from_golden
    from ragstrata.eval.datasets import load_golden
    from ragstrata.eval.runner import dataset_documents, golden_qrels, load_dataset

    if dataset.suffix.lower() in GOLDEN_SUFFIXES:
        golden = load_golden(dataset)
        cfg = cfg.with_index(index)
        ambiguous: list[str] = []
        with Ragstrata(cfg) as engine:
            _, qrels, unmatched = golden_qrels(engine, golden, ambiguous=ambiguous)
        for item in unmatched:
            err.print(f"[yellow]warning[/] expected source not in the index: {item}")
        _warn_ambiguous(ambiguous)
        # an entry whose expected sources are none of them in the index is left out, as
        # `eval` leaves it out (trial 25: scored as answerable, its document missing)
        lost = {g.query_id for g in golden if g.expected and not qrels.get(g.query_id)}
        if lost:
            shown = ", ".join(sorted(lost)[:5]) + (" ..." if len(lost) > 5 else "")
            err.print(
                f"[yellow]warning[/] {len(lost)} entries are not scored: none of their "
                f"expected sources is in the index: {shown}"
            )
        cases = [c for c in cases_from_golden(golden, qrels) if c.qid not in lost][:max_queries]
        unscored = [g.query_id for g in golden if not g.answers]
        if unscored and cases:  # left out, not failed: say which
            shown = ", ".join(unscored[:5]) + (" ..." if len(unscored) > 5 else "")
            err.print(
                f"[yellow]warning[/] {len(unscored)} entries give no 'answers' and are not "
                f"scored: {shown}"
            )
        if not cases:
            raise ConfigError(f"{dataset}: no entry gives 'answers'; add expected answer strings")
        return cases, None, dataset.name, cfg
    data = load_dataset(dataset, split=split)
    cases = cases_from_dataset(data, max_queries=max_queries)
    if not cases:
        raise ConfigError(f"{dataset}: no question with gold answer strings (BEIR has none)")
    if index is None:
        slug = data.corpus_name.replace("/", "-")
        index = _eval_index(cfg, slug)
    return cases, dataset_documents(data), data.name, cfg.with_index(index)


def eval_citations(
    corpora: Annotated[
        list[Path], typer.Argument(help="Corpus folders (Markdown/MDX) to draw claims from.")
    ],
    per_corpus: Annotated[int, typer.Option("--per-corpus", min=2, help="Chunks drawn.")] = 40,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the report.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Precision/recall of the citation checker on a deterministic labeled sample
    (supported: copied/shortened sentences; unsupported: other documents' sentences and
    perturbed facts), settings chosen on the dev half (docs/evaluation.md)."""
    from ragstrata.eval.citation_check import build_pairs, corpus_chunks, evaluate_checker
    from ragstrata.generate.citations import CitationChecker

    try:
        output_file(json_file, "--json")
        engine = Ragstrata(RagConfig.load(config_file=config))
        chunks = {folder.name: corpus_chunks(engine, folder) for folder in corpora}
        pairs = build_pairs(chunks, per_corpus=per_corpus)
        report = evaluate_checker(CitationChecker(engine.embedder, engine.analyzer), pairs)
    except RagError as exc:
        raise _fail(exc) from exc
    data = report.to_json()
    data["embedder"] = engine.embedder.name
    out.print(json.dumps(data, indent=2), highlight=False)
    if json_file is not None:
        write_output(json_file, json.dumps(data, indent=2), "--json")


GOLDEN_SUFFIXES = (".yaml", ".yml", ".jsonl")
"""Extensions (any case) of a golden file: the user's own questions over ``--index``."""


def _golden(
    path: Path,
    modes: list[str],
    index: Path | None,
    config: Path | None,
    max_queries: int | None = None,
) -> tuple[Any, list[str]]:
    from ragstrata.eval.datasets import load_golden
    from ragstrata.eval.runner import run_golden

    golden = load_golden(path)[:max_queries]
    if not golden:
        raise ConfigError(
            f"{path}: holds no entries; write one per question: '- query: ...' with "
            "'expected: [source, ...]' (docs/evaluation.md, \"Your own corpus: golden files\")"
        )
    engine = _engine(index, config)
    ambiguous: list[str] = []
    try:
        return run_golden(engine, golden, name=path.name, modes=modes, ambiguous=ambiguous)
    finally:
        engine.close()
        _warn_ambiguous(ambiguous)


def _warn_ambiguous(items: list[str]) -> None:
    for item in items:
        err.print(
            f"[yellow]warning[/] {item}: each is relevant; write more of the path to name one",
            highlight=False,
        )


def _ablation(
    dataset: Path,
    split: str,
    modes: list[str],
    max_queries: int | None,
    index: Path | None,
    config: Path | None,
) -> Any:
    from ragstrata.eval.runner import load_dataset, run_ablation

    data = load_dataset(dataset, split=split)
    cfg = RagConfig.load(config_file=config)
    if index is None:
        slug = data.corpus_name.replace("/", "-")
        index = _eval_index(cfg, slug)
    engine = Ragstrata(cfg.with_index(index))
    err.print(f"indexing {len(data.corpus)} documents into {index} (reused when unchanged)")
    try:
        return run_ablation(engine, data, modes=modes, max_queries=max_queries)
    finally:
        engine.close()


def _exit_on_regressions(failures: list[str], tolerance: float) -> None:
    """Print a gate's regressions and exit 4 when there are any, else say it passed (the
    retrieval gate of ``eval`` and the answer gate of ``eval-answers`` alike)."""
    for failure in failures:
        err.print(f"[red]regression[/] {failure}", highlight=False)
    if failures:
        raise typer.Exit(EXIT_REGRESSION)
    err.print(f"[green]gate passed[/] (tolerance {tolerance})")


def _print_eval(
    report: Any,
    json_file: Path | None,
    earlier: dict[str, Any] | None,
    baseline: dict[str, Any] | None,
    tolerance: float,
) -> None:
    from ragstrata.eval.runner import compare, gate, markdown_table

    result = report.to_json()
    out.print(
        f"{report.dataset}: {report.n_queries} quer{'y' if report.n_queries == 1 else 'ies'} "
        f"({report.skipped_queries} without "
        f"relevant docs skipped), {report.n_docs} docs, {report.n_chunks} chunks, "
        f"embedder {report.embedder}",
        highlight=False,
    )
    print(markdown_table(result))
    if json_file is not None:
        write_output(json_file, json.dumps(result, indent=1), "--json")
    if earlier is not None:
        print()
        print(compare(result, earlier))
    if baseline is not None:
        _exit_on_regressions(gate(result, baseline, tolerance=tolerance), tolerance)


reranker_app = typer.Typer(
    cls=_Group,
    name="reranker",
    help="Train and export the cross-encoder reranker.",
    no_args_is_help=True,
)


@reranker_app.command("train", cls=_Command)
def reranker_train(
    squad: Annotated[
        Path,
        typer.Option(
            "--squad",
            help="SQuAD v1.1 JSON (e.g. SQuAD-es small): only the training half of its articles "
            "is read.",
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the int8 ONNX model + tokenizer + metadata.")
    ],
    docs: Annotated[
        list[Path] | None,
        typer.Option("--docs", help="Markdown/HTML folders for heading -> section pseudo-queries."),
    ] = None,
    parallel_docs: Annotated[
        list[Path] | None,
        typer.Option(
            "--parallel-docs",
            help="Parallel docs folders (es/, en/...): heading pseudo-queries from the training "
            "pages of the cross-lingual page split only.",
        ),
    ] = None,
    work_dir: Annotated[
        Path | None,
        typer.Option("--work-dir", help="Groups + torch checkpoint (default: <out>.work)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 13,
    negatives: Annotated[int, typer.Option("--negatives", min=1)] = 3,
    neighbours: Annotated[
        int, typer.Option("--neighbours", min=0, help="Same-article negatives per SQuAD group.")
    ] = 1,
    max_length: Annotated[int, typer.Option("--max-length", min=32, max=512)] = 256,
    epochs: Annotated[float, typer.Option("--epochs")] = 1.0,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1)] = None,
    squad_groups: Annotated[int, typer.Option("--squad-groups", min=0)] = 850,
    doc_groups: Annotated[int, typer.Option("--doc-groups", min=0)] = 300,
    dev_queries: Annotated[
        int,
        typer.Option(
            "--dev-queries", min=0, help="Held-out SQuAD training questions for the fusion weight."
        ),
    ] = 100,
    time_budget: Annotated[
        float | None, typer.Option("--time-budget-min", help="Stop training after N minutes.")
    ] = None,
    threads: Annotated[int, typer.Option("--threads", min=1)] = 1,
    index: SquadIndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Fine-tune all-MiniLM-L6-v2 (from its wheel) into a cross-encoder on SQuAD-es training
    questions + heading pseudo-queries, export it to int8 ONNX and pick its fusion weight on
    held-out training questions. The SQuAD index defaults to the one `ragstrata eval` builds.
    SciFact is evaluation-only data and cannot be a source."""
    from ragstrata.eval.datasets import load_squad
    from ragstrata.training.reranker import TrainSettings, run_training

    try:
        settings = TrainSettings(
            seed=seed,
            negatives=negatives,
            neighbours=neighbours,
            max_length=max_length,
            epochs=epochs,
            max_steps=max_steps,
            squad_groups=squad_groups,
            doc_groups=doc_groups,
            dev_queries=dev_queries,
            time_budget_s=None if time_budget is None else time_budget * 60,
            threads=threads,
        )
        dataset = load_squad(squad, split="train")
        cfg = RagConfig.load(config_file=config)
        if index is None:
            # every split shares the corpus: reuse the index `ragstrata eval` builds
            index = _eval_index(cfg, dataset.corpus_name)
        with Ragstrata(cfg.with_index(index)) as engine:
            report = run_training(
                engine,
                dataset,
                docs or [],
                out_dir,
                work_dir or out_dir.with_name(out_dir.name + ".work"),
                settings,
                parallel=parallel_docs or [],
                log=lambda line: err.print(line, highlight=False, markup=False),
            )
    except RagError as exc:
        raise _fail(exc) from exc
    print(json.dumps(report.to_json(), indent=2))
