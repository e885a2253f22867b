"""Command-line interface (typer + rich): a thin layer over :class:`ragstrata.pipeline.Ragstrata`.

Exit codes: 0 ok; 1 error (message on stderr with its ``RSxxx`` code); 2 usage error;
3 ingest finished with some files rejected ("partial"); 4 evaluation below its baseline.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ragstrata.config import RagConfig, resolve_embedder_name
from ragstrata.errors import ConfigError, IndexNotFoundError, RagError
from ragstrata.paths import display_path, path_text
from ragstrata.pipeline import Ragstrata
from ragstrata.types import Answer, Hit


def _without_flag_types(params: list[Any]) -> list[Any]:
    """Give flags (``--json``, ``--stream/--no-stream``, ``--help``) an empty metavar: typer's
    help otherwise prints ``<bool>`` beside every one, although a flag takes no value. (typer's
    parameters are classes of the click it bundles, so flags are told by ``is_flag``.)"""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(typer.core.TyperCommand):
    """A typer command whose help shows no type for flags (see :func:`_without_flag_types`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


class _Group(typer.core.TyperGroup):
    """A typer group whose help shows no type for flags (see :func:`_without_flag_types`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


if TYPE_CHECKING:
    from collections.abc import Iterable

    from ragstrata.eval.answers import AnswerCase
    from ragstrata.types import Document

app = typer.Typer(
    cls=_Group,
    name="ragstrata",
    help="Retrieval-augmented answers with citations over your documents (offline).",
    no_args_is_help=True,
    add_completion=False,
)
out = Console(soft_wrap=True)  # no hard wraps in piped output (paths stay greppable)
err = Console(stderr=True, soft_wrap=True)

EXIT_PARTIAL = 3

IndexOpt = Annotated[
    Path | None,
    typer.Option("--index", help="Index directory (default: $RAGSTRATA_HOME/index)."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML config file (default: $RAGSTRATA_HOME/config.toml)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 control characters and the bidirectional marks and overrides."""


def _term(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` (a file name, a message naming one) safe to print on a terminal: control
    characters and bidirectional overrides become ``\\xNN``/``\\uNNNN`` escapes (a name cannot
    move the cursor, change colours or reorder the line), undecodable bytes ``\\xNN``
    (:func:`~ragstrata.paths.path_text`). ``keep_newlines`` keeps ``\\n`` (multi-line
    messages)."""

    def escaped(match: re.Match[str]) -> str:
        ch = match.group()
        return ch if keep_newlines and ch == "\n" else ascii(ch)[1:-1]

    return _CONTROL.sub(escaped, path_text(text))


def _warn_empty(index_dir: Path) -> None:
    """The one-line warning of ``search``/``ask`` on an index that holds no document."""
    err.print(
        f"[yellow]warning[/] the index at {escape(_term(str(index_dir)))} holds no documents; "
        "run `ragstrata ingest` first",
        highlight=False,
    )


def _engine(index: Path | None, config: Path | None) -> Ragstrata:
    return Ragstrata(RagConfig.load(config_file=config).with_index(index))


def _fail(exc: RagError) -> typer.Exit:
    err.print(
        f"[bold red]error[/] {escape(_term(str(exc), keep_newlines=True))}",
        highlight=False,
        markup=True,
    )
    return typer.Exit(2 if isinstance(exc, ConfigError) else 1)


def _version(value: bool) -> None:
    if value:
        from ragstrata import __version__

        print(f"ragstrata {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Retrieval-augmented answers with citations over your documents (offline)."""


@app.command(cls=_Command)
def ingest(
    paths: Annotated[
        list[Path],
        # readable=False: an unreadable file is reported as RS205 with the rest ingested
        typer.Argument(help="Files or folders to ingest (recursively).", readable=False),
    ],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write the JSON report to this file.")
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove indexed documents whose file is gone.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would change; write nothing.")
    ] = False,
) -> None:
    """Parse, chunk, embed and index documents (Markdown/MDX, HTML, Confluence exports, PDF,
    text)."""
    try:
        with (
            _engine(index, config) as engine,
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=err,
                transient=json_out,
                disable=not err.is_terminal,
            ) as bar,
        ):
            task = bar.add_task("documents", total=None)
            counts = {"chunks": 0, "bytes": 0, "total_bytes": 0}

            def on_progress(event: str, done: int, total: int) -> None:
                if event == "embed":
                    counts["chunks"] += done
                elif event == "bytes":
                    counts["bytes"], counts["total_bytes"] = done, total
                else:
                    bar.update(task, completed=done, total=total)
                bar.update(
                    task,
                    description=(
                        f"documents · {counts['chunks']} chunks · "
                        f"{counts['bytes'] / 1e6:.1f}/{counts['total_bytes'] / 1e6:.1f} MB"
                    ),
                )

            result = engine.ingest(paths, progress=on_progress, prune=prune, dry_run=dry_run)
            try:
                stats = engine.stats()
            except IndexNotFoundError:  # a dry run on a new index writes nothing
                stats = {"index": str(engine.index_dir), "documents": 0, "chunks": 0}
                stats["size_bytes"] = 0
    except RagError as exc:
        raise _fail(exc) from exc
    data = result.to_json() | {"index": stats}
    if report is not None:
        # paths are text already (ragstrata.paths); backslashreplace is the last guard
        report.write_text(
            json.dumps(data, indent=2, ensure_ascii=False),
            encoding="utf-8",
            errors="backslashreplace",
        )
    if json_out:
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        out.print(
            f"[bold]{result.status}[/]{' (dry run)' if dry_run else ''}: {result.added} added, "
            f"{result.updated} updated, {result.unchanged} unchanged, {result.pruned} pruned"
            + (f", {result.reindexed} re-indexed (new configuration)" if result.reindexed else "")
            + f"; {result.chunks} chunks written ({result.embedded} embedded) "
            f"in {result.seconds:.1f}s; "
            f"index has {stats['documents']} documents, {stats['chunks']} chunks "
            f"({stats['size_bytes'] / 1e6:.1f} MB) at {escape(_term(str(stats['index'])))}"
        )
        if not (result.added or result.updated or result.unchanged or result.failures):
            err.print("[yellow]warning[/] no supported files (.md, .html, .pdf, .txt, ...) found")
        for failure in result.failures:
            err.print(
                f"[yellow]skipped[/] {escape(_term(failure.path))}: "
                f"{escape(f'[{failure.code}]')} {escape(_term(failure.reason))}",
                highlight=False,
            )
    if result.status != "ok":
        raise typer.Exit(EXIT_PARTIAL if result.status == "partial" else 1)


@app.command(cls=_Command)
def watch(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Folders (or files) to keep indexed.", readable=False),
    ],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per sync (JSON Lines).")
    ] = False,
    debounce_ms: Annotated[
        int,
        typer.Option(
            "--debounce-ms",
            min=0,
            help="Quiet time after the last change before a batch is synced (milliseconds).",
        ),
    ] = 300,
    once: Annotated[
        bool, typer.Option("--once", help="Sync once (ingest with prune) and exit.")
    ] = False,
) -> None:
    """Keep the index in step with folders: added, changed, renamed and deleted files are
    synced in batches (ingest --prune, journaled commits), one line per batch, until Ctrl-C."""
    import threading

    from ragstrata.watch import FolderWatcher, SyncOutcome, stop_on_signals

    reported: set[tuple[str, str]] = set()

    def show(outcome: SyncOutcome) -> None:
        report = outcome.report
        failures = report.failures if report is not None else []
        if json_out:
            data: dict[str, Any] = {
                "event": "sync",
                "sync": outcome.number,
                "changes": outcome.changes,
                "state": outcome.state,
                "seconds": round(outcome.seconds, 3),
                "index": {"documents": outcome.documents, "chunks": outcome.chunks},
            }
            if report is not None:
                data["report"] = report.to_json()
            if outcome.error is not None:
                data["error"] = {"code": outcome.error.code, "message": str(outcome.error)}
            print(json.dumps(data, ensure_ascii=False), flush=True)
        else:
            what = "initial sync" if outcome.number == 1 else f"{outcome.changes} changes"
            stamp = time.strftime("%H:%M:%S")
            if report is not None:
                counts = (
                    f"{report.added} added, {report.updated} changed, {report.pruned} removed, "
                    f"{len(failures)} failed"
                    + (f", {report.reindexed} re-indexed" if report.reindexed else "")
                )
            else:
                counts = outcome.state
            out.print(
                f"{stamp} sync {outcome.number} ({what}): {counts} in {outcome.seconds:.2f}s; "
                f"index has {outcome.documents} documents, {outcome.chunks} chunks",
                highlight=False,
            )
            if outcome.error is not None:
                err.print(
                    f"[yellow]sync failed[/] {escape(_term(str(outcome.error)))}"
                    + ("; retrying" if outcome.error.code == "RS503" else ""),
                    highlight=False,
                )
        # each rejected file once while it stays rejected, not on every sync
        now = {(f.path, f.code) for f in failures}
        if not json_out:
            for failure in failures:
                if (failure.path, failure.code) not in reported:
                    err.print(
                        f"[yellow]skipped[/] {escape(_term(failure.path))}: "
                        f"{escape(f'[{failure.code}]')} {escape(_term(failure.reason))}",
                        highlight=False,
                    )
        if report is not None:
            reported.clear()
            reported.update(now)

    try:
        cfg = RagConfig.load(config_file=config).with_index(index)
        watcher = FolderWatcher(paths, config=cfg, debounce_ms=debounce_ms)
        if once:
            outcome = watcher.sync()
            show(outcome)
            if outcome.error is not None:
                raise _fail(outcome.error)
            if outcome.report is not None and outcome.report.status != "ok":
                raise typer.Exit(EXIT_PARTIAL if outcome.report.status == "partial" else 1)
            return
        if not json_out:
            err.print(
                f"watching {len(paths)} path(s) for index {escape(_term(str(cfg.index_path)))}; "
                "Ctrl-C to stop",
                highlight=False,
            )
        with stop_on_signals(threading.Event()) as stop:
            for outcome in watcher.run(stop):
                show(outcome)
    except RagError as exc:
        raise _fail(exc) from exc
    if json_out:
        print(json.dumps({"event": "stopped"}), flush=True)
    else:
        err.print("stopped; the index lock is released", highlight=False)


def _pages(start: int, end: int | None) -> str:
    return str(start) if end in (None, start) else f"{start}-{end}"


def _hit_json(hit: Hit) -> dict[str, Any]:
    from ragstrata.render import hit_json  # the same JSON as the HTTP API

    return hit_json(hit)


@app.command(cls=_Command)
def search(
    query: Annotated[str, typer.Argument(help="Search query.")],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="Hits to return.")] = None,
    mode: Annotated[str, typer.Option("--mode", help="hybrid, dense or bm25.")] = "hybrid",
    explain: Annotated[
        bool, typer.Option("--explain", help="Show each retriever's rank and score.")
    ] = False,
    rerank: Annotated[
        bool | None,
        typer.Option("--rerank/--no-rerank", help="Cross-encoder reranking (default: config)."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Hybrid search (dense + BM25 fused by RRF, then the cross-encoder when reranking is on);
    prints ranked chunks."""
    try:
        if mode not in ("hybrid", "dense", "bm25"):
            raise ConfigError(f"--mode {mode!r} is unknown; choose hybrid, dense or bm25")
        with _engine(index, config) as engine:
            result = engine.search(query, top_k=top_k, mode=mode, rerank=rerank)  # type: ignore[arg-type]
            if not result.hits and not engine.manifest().documents:
                _warn_empty(engine.index_dir)
    except RagError as exc:
        raise _fail(exc) from exc
    if json_out:
        data = {
            "query": query,
            "hits": [_hit_json(h) for h in result.hits],
            "language_relation": result.language_relation,
            "timings_ms": result.timings_ms,
        }
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    table = Table(show_lines=False, title=escape(f"{len(result.hits)} hits for {query!r}"))
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    if explain:
        table.add_column("dense rank/score", no_wrap=True)
        table.add_column("bm25 rank/score", no_wrap=True)
        if any(h.retriever_score("rerank") is not None for h in result.hits):
            table.add_column("rerank rank/score", no_wrap=True)
    wheres = [_hit_where(hit, max(40, out.width // 2)) for hit in result.hits]
    # file names stay whole: the source column gets what its longest entry needs (folders
    # shortened to …/ past half the terminal); the text snippet wraps in what is left
    widest = max((len(w) for w in wheres), default=10)
    table.add_column("source > heading", min_width=widest, overflow="fold")
    table.add_column("text")
    for hit, where in zip(result.hits, wheres, strict=True):
        row = [str(hit.rank), f"{hit.score:.4f}"]
        if explain:
            has_rerank = any(h.retriever_score("rerank") is not None for h in result.hits)
            for name in ("dense", "bm25", *(("rerank",) if has_rerank else ())):
                e = next((x for x in hit.explain if x.retriever == name), None)
                row.append(f"{e.rank} / {e.score:.3f}" if e else "-")
        row.append(escape(where))
        snippet = " ".join(hit.chunk.text.split())
        row.append(escape(snippet[:160] + ("…" if len(snippet) > 160 else "")))
        table.add_row(*row)
    out.print(table)
    out.print(f"[dim]{result.timings_ms['total']:.1f} ms[/]")


def _hit_where(hit: Hit, max_chars: int) -> str:
    """``source p. pages > heading`` of a hit, terminal-safe (not yet markup-escaped). Over
    ``max_chars``, the source's folders become ``…/``: the file name itself is never cut."""
    source = display_path(hit.chunk.source)
    pages = ""
    if hit.chunk.page_start is not None:
        pages = f" p. {_pages(hit.chunk.page_start, hit.chunk.page_end)}"
    heading = f" > {hit.chunk.heading}" if hit.chunk.heading else ""
    folder, _, name = source.rpartition("/")
    if folder and len(source + pages + heading) > max_chars:
        source = "…/" + name
    return _term(source + pages + heading)


def _answer_json(answer: Answer) -> dict[str, Any]:
    from ragstrata.render import answer_json  # the same JSON as the HTTP API

    return answer_json(answer)


def _llm_answer_json(answer: Answer) -> dict[str, Any]:
    """The wire JSON plus the LLM fields (``verified``/``support`` per citation, usage,
    generator, conflict, metadata: :func:`~ragstrata.render.diagnostics_json`)."""
    from ragstrata.render import diagnostics_json

    data = _answer_json(answer)
    for cited, c in zip(data["citations"], answer.citations, strict=True):
        cited.setdefault("verified", c.verified)
        cited.setdefault("support", c.support)
    data.setdefault("usage", dict(answer.usage))
    data.setdefault("generator", answer.generator)
    data.setdefault("conflict", answer.conflict)
    data.setdefault("metadata", diagnostics_json(answer))
    return data


def _raw_answer(answer: Answer) -> str:
    """The text as the LLM wrote it (what was streamed), else the answer's own text."""
    generation = answer.generation
    if generation is None or generation.raw_answer is None:
        return answer.text
    return generation.raw_answer


@app.command(cls=_Command)
def ask(
    question: Annotated[str, typer.Argument(help="Question in any language of your documents.")],
    index: IndexOpt = None,
    config: ConfigOpt = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="Answerer: none (extractive), local (packaged GGUF model), openai "
            "(OpenAI-compatible server, see the llm section of the config). Default: llm.provider.",
        ),
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream/--no-stream", help="Print the answer as it is written.")
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """Answer a question with numbered citations, or refuse when the documents do not say."""
    from ragstrata.generate.answerer import AnswerEvent, TokenEvent

    answer: Answer | None = None
    streamed = False
    try:
        if llm is not None and llm not in ("none", "local", "openai"):
            raise ConfigError(f"--llm {llm!r} is unknown; choose none, local or openai")
        overrides = {"llm.provider": llm} if llm is not None else {}
        cfg = RagConfig.load(config_file=config, overrides=overrides).with_index(index)
        with Ragstrata(cfg) as engine:
            live = stream and not json_out and engine.generator is not None
            for event in engine.ask_stream(question):
                if isinstance(event, TokenEvent) and live:
                    out.print(event.text, end="", highlight=False, markup=False)
                    streamed = True
                elif isinstance(event, AnswerEvent):
                    answer = event.answer
    except RagError as exc:
        raise _fail(exc) from exc
    assert answer is not None
    if answer.refused_by == "empty_index":
        _warn_empty(cfg.index_path)
    if json_out:
        print(json.dumps(_llm_answer_json(answer), ensure_ascii=False, indent=2))
        return
    if streamed:
        out.print("\n")
        if answer.refusal or answer.text != _raw_answer(answer):
            out.print("[dim]checked answer:[/]")
            streamed = False
    if not streamed:
        style = "yellow" if answer.refusal else "bold"
        out.print(f"[{style}]{escape(answer.text)}[/]", highlight=False)
    if answer.citations:
        out.print()
        for c in answer.citations:
            heading = " > ".join(c.heading_path)
            where = display_path(c.source)
            if c.page_start is not None:
                where += f" p. {_pages(c.page_start, c.page_end)}"
            check = ""
            if c.support is not None:
                check = " [green]verified[/]" if c.verified else " [red]NOT verified[/]"
            out.print(
                escape(_term(f"[{c.label}] {where}{' > ' + heading if heading else ''}"))
                + f"{check} "
                f"[dim](chars {c.start}-{c.end}, chunk {c.chunk_id[:12]})[/]",
                highlight=False,
            )
    if answer.conflict:
        kept = ", ".join(c.kept for c in answer.conflicts)
        out.print(
            f"[yellow]note[/] sources disagree across versions; used the newest ({escape(kept)})"
        )
    if answer.usage:
        u = answer.usage
        out.print(
            f"[dim]{answer.generator}: {u.get('prompt_tokens', 0)} prompt + "
            f"{u.get('completion_tokens', 0)} answer tokens, "
            f"{answer.timings_ms.get('total', 0.0) / 1000:.1f} s[/]",
            highlight=False,
        )


@app.command(cls=_Command)
def stats(index: IndexOpt = None, config: ConfigOpt = None, json_out: JsonOpt = False) -> None:
    """Show what the index holds."""
    try:
        engine = _engine(index, config)
        data = engine.stats()
    except RagError as exc:
        raise _fail(exc) from exc
    if json_out:
        print(json.dumps(data, indent=2))
        return
    bm25 = data["bm25"]
    lines = [
        f"index:     {_term(data['index'])}",
        f"documents: {data['documents']}",
        f"chunks:    {data['chunks']}",
        f"embedder:  {data['embedder']} (dim {data['dim']})",
        f"analyzer:  {data['analyzer']}",
        f"chunker:   {data['chunker']}",
        f"bm25:      k1={bm25['k1']} b={bm25['b']} avgdl={bm25['avgdl']}",
        f"size:      {data['size_bytes'] / 1e6:.1f} MB",
    ]
    out.print("\n".join(lines), highlight=False)


@app.command("eval", cls=_Command)
def eval_cmd(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="BEIR folder, SQuAD JSON file/folder, or parallel Markdown docs (es/, en/)."
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
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Fail (exit 4) below this baseline JSON.")
    ] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Allowed absolute drop below the baseline.")
    ] = 0.01,
    max_queries: Annotated[
        int | None, typer.Option("--max-queries", min=1, help="Score only the first N queries.")
    ] = None,
    index: IndexOpt = None,
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
        if dataset.suffix in (".yaml", ".yml", ".jsonl"):
            report, unmatched = _golden(dataset, wanted, index, config)
            for item in unmatched:
                err.print(f"[yellow]warning[/] expected source not in the index: {item}")
        else:
            report = _ablation(dataset, split, wanted, max_queries, index, config)
    except RagError as exc:
        raise _fail(exc) from exc
    _print_eval(report, json_file, compare_file, baseline, tolerance)


@app.command("eval-refusal", cls=_Command)
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
    index: IndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Calibrate the refusal threshold (llm.min_evidence) on SQuAD v2: prints refusal
    precision, recall and F1 on held-out articles (docs/evaluation.md)."""
    from ragstrata.eval.datasets import load_squad
    from ragstrata.eval.refusal import calibrate, collect, collect_out_of_corpus

    try:
        cfg = RagConfig.load(config_file=config)
        name = load_squad(dataset).corpus_name
        if index is None:
            index = cfg.home / "eval" / f"{name}-{resolve_embedder_name(cfg.embedder.name, None)}"
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
        json_file.write_text(json.dumps(data, indent=2), encoding="utf-8")


@app.command("eval-answers", cls=_Command)
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
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm", help="Answerer: none (extractive), local, openai. Default: llm.provider."
        ),
    ] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the full report (with per-question).")
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Fail (exit 4) below this baseline JSON.")
    ] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Allowed absolute change past the baseline.")
    ] = 0.01,
    index: IndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer-level evaluation through `ask`: share answered, answer contains a gold answer,
    token F1, cites the gold document, unverified citations, latency; refusals on questions
    whose gold documents were removed (docs/evaluation.md)."""
    from ragstrata.eval.answers import answer_markdown, gate, run_answer_eval

    try:
        if llm is not None and llm not in ("none", "local", "openai"):
            raise ConfigError(f"--llm {llm!r} is unknown; choose none, local or openai")
        overrides = {"llm.provider": llm} if llm is not None else {}
        cfg = RagConfig.load(config_file=config, overrides=overrides)
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
        json_file.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    if baseline is not None:
        _exit_on_regressions(
            gate(result, json.loads(baseline.read_text(encoding="utf-8")), tolerance=tolerance),
            tolerance,
        )


def _answer_cases(
    dataset: Path, split: str, max_queries: int | None, index: Path | None, cfg: RagConfig
) -> tuple[list[AnswerCase], Iterable[Document] | None, str, RagConfig]:
    """Cases, documents to index (``None``: the index is the user's), report name and the
    configuration pointing at the index, for ``eval-answers``."""
    from ragstrata.eval.answers import cases_from_dataset, cases_from_golden
    from ragstrata.eval.datasets import load_golden
    from ragstrata.eval.runner import dataset_documents, golden_qrels, load_dataset

    if dataset.suffix in (".yaml", ".yml", ".jsonl"):
        golden = load_golden(dataset)
        cfg = cfg.with_index(index)
        with Ragstrata(cfg) as engine:
            _, qrels, unmatched = golden_qrels(engine, golden)
        for item in unmatched:
            err.print(f"[yellow]warning[/] expected source not in the index: {item}")
        cases = cases_from_golden(golden, qrels)[:max_queries]
        if not cases:
            raise ConfigError(f"{dataset}: no entry gives 'answers'; add expected answer strings")
        return cases, None, dataset.name, cfg
    data = load_dataset(dataset, split=split)
    cases = cases_from_dataset(data, max_queries=max_queries)
    if not cases:
        raise ConfigError(f"{dataset}: no question with gold answer strings (BEIR has none)")
    if index is None:
        slug = data.corpus_name.replace("/", "-")
        index = cfg.home / "eval" / f"{slug}-{resolve_embedder_name(cfg.embedder.name, None)}"
    return cases, dataset_documents(data), data.name, cfg.with_index(index)


@app.command("eval-citations", cls=_Command)
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
        json_file.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _golden(
    path: Path, modes: list[str], index: Path | None, config: Path | None
) -> tuple[Any, list[str]]:
    from ragstrata.eval.datasets import load_golden
    from ragstrata.eval.runner import run_golden

    golden = load_golden(path)
    engine = _engine(index, config)
    try:
        return run_golden(engine, golden, name=path.name, modes=modes)
    finally:
        engine.close()


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
        index = cfg.home / "eval" / f"{slug}-{resolve_embedder_name(cfg.embedder.name, None)}"
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
        raise typer.Exit(4)
    err.print(f"[green]gate passed[/] (tolerance {tolerance})")


def _print_eval(
    report: Any,
    json_file: Path | None,
    compare_file: Path | None,
    baseline: Path | None,
    tolerance: float,
) -> None:
    from ragstrata.eval.runner import compare, gate, markdown_table

    result = report.to_json()
    out.print(
        f"{report.dataset}: {report.n_queries} queries ({report.skipped_queries} without "
        f"relevant docs skipped), {report.n_docs} docs, {report.n_chunks} chunks, "
        f"embedder {report.embedder}",
        highlight=False,
    )
    print(markdown_table(result))
    if json_file is not None:
        json_file.write_text(json.dumps(result, indent=1), encoding="utf-8")
    if compare_file is not None:
        print()
        print(compare(result, json.loads(compare_file.read_text(encoding="utf-8"))))
    if baseline is not None:
        _exit_on_regressions(
            gate(result, json.loads(baseline.read_text(encoding="utf-8")), tolerance=tolerance),
            tolerance,
        )


reranker_app = typer.Typer(
    cls=_Group,
    name="reranker",
    help="Train and export the cross-encoder reranker.",
    no_args_is_help=True,
)
app.add_typer(reranker_app)


@reranker_app.command("train", cls=_Command)
def reranker_train(
    scifact: Annotated[
        Path, typer.Option("--scifact", help="BEIR SciFact folder (only qrels/train.tsv is used).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the int8 ONNX model + tokenizer + metadata.")
    ],
    docs: Annotated[
        list[Path] | None,
        typer.Option("--docs", help="Markdown/HTML folders for heading -> section pseudo-queries."),
    ] = None,
    work_dir: Annotated[
        Path | None,
        typer.Option("--work-dir", help="Groups + torch checkpoint (default: <out>.work)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 13,
    negatives: Annotated[int, typer.Option("--negatives", min=1)] = 3,
    max_length: Annotated[int, typer.Option("--max-length", min=32, max=512)] = 256,
    epochs: Annotated[float, typer.Option("--epochs")] = 1.0,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1)] = None,
    doc_groups: Annotated[int, typer.Option("--doc-groups", min=0)] = 300,
    dev_queries: Annotated[int, typer.Option("--dev-queries", min=0)] = 60,
    time_budget: Annotated[
        float | None, typer.Option("--time-budget-min", help="Stop training after N minutes.")
    ] = None,
    threads: Annotated[int, typer.Option("--threads", min=1)] = 1,
    index: IndexOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Fine-tune all-MiniLM-L6-v2 (from its wheel) into a cross-encoder on SciFact train +
    heading pseudo-queries, export it to int8 ONNX and pick its fusion weight on held-out
    train claims. The SciFact index defaults to the one `ragstrata eval` builds."""
    from ragstrata.training.reranker import TrainSettings, run_training

    try:
        settings = TrainSettings(
            seed=seed,
            negatives=negatives,
            max_length=max_length,
            epochs=epochs,
            max_steps=max_steps,
            doc_groups=doc_groups,
            dev_queries=dev_queries,
            time_budget_s=None if time_budget is None else time_budget * 60,
            threads=threads,
        )
        cfg = RagConfig.load(config_file=config)
        if index is None:
            # every split shares the corpus: reuse the index `ragstrata eval --split test` built
            index = (
                cfg.home
                / "eval"
                / f"{scifact.name}-test-{resolve_embedder_name(cfg.embedder.name, None)}"
            )
        with Ragstrata(cfg.with_index(index)) as engine:
            report = run_training(
                engine,
                scifact,
                docs or [],
                out_dir,
                work_dir or out_dir.with_name(out_dir.name + ".work"),
                settings,
                log=lambda line: err.print(line, highlight=False, markup=False),
            )
    except RagError as exc:
        raise _fail(exc) from exc
    print(json.dumps(report.to_json(), indent=2))


@app.command(cls=_Command)
def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Interface (default: service.host, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default: service.port, 8000).")
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Keys and collections (default: $RAGSTRATA_HOME/service)."),
    ] = None,
    config: ConfigOpt = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
) -> None:
    """Run the HTTP API and web page (FastAPI on uvicorn, one process; see docs/service.md)."""
    try:
        cfg = RagConfig.load(config_file=config)
        overrides: dict[str, Any] = {
            k: v for k, v in (("host", host), ("port", port)) if v is not None
        }
        if data_dir is not None:
            overrides["data_dir"] = data_dir
        if overrides:
            from dataclasses import replace

            cfg = replace(cfg, service=replace(cfg.service, **overrides))
        try:
            import uvicorn

            from ragstrata.service.app import create_app
        except ImportError as exc:
            from ragstrata.errors import MissingDependencyError

            raise MissingDependencyError(exc.name or "fastapi", "service") from exc
        service_app = create_app(cfg)
        state = service_app.state.service
        warm_up = getattr(state.registry.embedder, "warm_up", None)
        if callable(warm_up):
            warm_up()  # load (or export) the model now, not on the first request
        err.print(
            f"ragstrata serving {state.data_dir} on http://{cfg.service.host}:{cfg.service.port}"
            f" ({len(state.keys.records())} API keys)",
            highlight=False,
        )
    except RagError as exc:
        raise _fail(exc) from exc
    uvicorn.run(
        service_app,
        host=cfg.service.host,
        port=cfg.service.port,
        log_level=log_level,
        workers=1,
        timeout_keep_alive=cfg.service.keep_alive_s,
        timeout_graceful_shutdown=30,
    )


@app.command(cls=_Command)
def mcp(
    index: IndexOpt = None,
    config: ConfigOpt = None,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (default) or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="Interface for streamable-http.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port for streamable-http.")] = 8000,
    log_level: Annotated[
        str, typer.Option("--log-level", help="Server log level (stderr).")
    ] = "WARNING",
) -> None:
    """Serve the index to MCP clients (tools search and ask, documents as resources; see
    docs/mcp.md). stdio by default; streamable-http serves http://HOST:PORT/mcp."""
    try:
        from ragstrata.service.mcp import serve as serve_mcp

        cfg = RagConfig.load(config_file=config).with_index(index)
        if transport == "streamable-http":
            err.print(
                f"ragstrata MCP server for {cfg.index_path} on http://{host}:{port}/mcp",
                highlight=False,
            )
        serve_mcp(cfg, transport=transport, host=host, port=port, log_level=log_level)
    except RagError as exc:
        raise _fail(exc) from exc


keys_app = typer.Typer(
    cls=_Group,
    name="keys",
    help="Create, list and revoke the service's API keys.",
    no_args_is_help=True,
)
app.add_typer(keys_app)
DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Service data directory (default: $RAGSTRATA_HOME/service)."),
]


def _key_store(data_dir: Path | None, config: Path | None) -> Any:
    from ragstrata.service.keys import KEYS_FILE, KeyStore

    cfg = RagConfig.load(config_file=config)
    return KeyStore((data_dir or cfg.service.data_path(cfg.home)) / KEYS_FILE)


@keys_app.command("create", cls=_Command)
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id the key acts for.")],
    name: Annotated[str, typer.Option("--name", help="A label for the key.")] = "",
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Search/ask only; no upload or delete.")
    ] = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an API key; the key is printed once and only its salted hash is stored."""
    try:
        key, record = _key_store(data_dir, config).create(
            tenant, name=name, scopes=("read",) if read_only else ("read", "write")
        )
    except RagError as exc:
        raise _fail(exc) from exc
    if json_out:
        print(json.dumps(record.public() | {"key": key}, indent=2))
    else:
        print(key)
        err.print(
            f"key {record.key_id} for tenant {record.tenant} ({', '.join(record.scopes)}); "
            "store it now: it cannot be shown again",
            highlight=False,
        )


@keys_app.command("list", cls=_Command)
def keys_list(
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_out: JsonOpt = False
) -> None:
    """List API keys (ids, tenants, scopes; never the keys)."""
    try:
        records = [r.public() for r in _key_store(data_dir, config).records()]
    except RagError as exc:
        raise _fail(exc) from exc
    if json_out:
        print(json.dumps(records, indent=2))
        return
    table = Table(title=f"{len(records)} API keys")
    for column in ("key_id", "tenant", "name", "scopes", "created", "revoked"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r["key_id"],
            r["tenant"],
            r["name"],
            ",".join(r["scopes"]),
            r["created"],
            "yes" if r["revoked"] else "",
        )
    out.print(table)


@keys_app.command("revoke", cls=_Command)
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (see `ragstrata keys list`).")],
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke an API key; a running server refuses it from its next request."""
    try:
        record = _key_store(data_dir, config).revoke(key_id)
    except RagError as exc:
        raise _fail(exc) from exc
    err.print(f"revoked key {record.key_id} of tenant {record.tenant}", highlight=False)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
