"""The commands that read an index: ``search`` (ranked chunks) and ``ask`` (an answer with
citations, or a refusal)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragstrata.cli.common import (
    _engine,
    _fail,
    _llm_overrides,
    _term,
    _warn_empty,
    _warn_memory,
    out,
)
from ragstrata.cli.options import ConfigOpt, FilterOpt, IndexOpt, JsonOpt
from ragstrata.config import RagConfig
from ragstrata.errors import ConfigError, RagError, RetrievalError
from ragstrata.index.base import Filters, check_filters
from ragstrata.index.report import sources_under
from ragstrata.paths import display_path
from ragstrata.pipeline import Ragstrata
from ragstrata.text import spans
from ragstrata.types import MAX_QUERY_CHARS, Answer, Hit


def _pages(start: int, end: int | None) -> str:
    return str(start) if end in (None, start) else f"{start}-{end}"


def _hit_json(hit: Hit) -> dict[str, Any]:
    from ragstrata.render import hit_json  # the same JSON as the HTTP API

    return hit_json(hit)


def parse_filters(items: list[str] | None) -> Filters | None:
    """``--filter KEY=VALUE`` options as :data:`~ragstrata.index.base.Filters`: values are
    text, a key given more than once matches any of its values; checked by
    :func:`~ragstrata.index.base.check_filters`. Raises RetrievalError (RS600) for an item
    without ``=`` or a key that cannot be filtered on."""
    grouped: dict[str, list[str]] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RetrievalError(f"--filter {item!r}: write KEY=VALUE, for example language=es")
        grouped.setdefault(key.strip(), []).append(value)
    return check_filters({k: v[0] if len(v) == 1 else v for k, v in grouped.items()})


def _resolve_sources(engine: Ragstrata, filters: Filters | None) -> Filters | None:
    """``filters`` with each ``source`` value that is no indexed source read as a path from
    the working directory, else as the end of indexed paths (a file name, ``docs/guide.md``),
    else as a folder (every indexed document under it):
    the index stores absolute paths, and ``source=guide.md`` found nothing, silently (trial
    25). Raises RetrievalError (RS600) naming a value that matches no indexed document."""
    if not filters or "source" not in filters:
        return filters
    raw = filters["source"]
    values = [str(v) for v in raw] if isinstance(raw, list | tuple) else [str(raw)]
    known = {entry.source for entry in engine.manifest().documents.values()}
    resolved: list[str] = []
    for value in values:
        # the index stores resolved paths (symbolic links followed, as ingest reads them):
        # review 27, `source=alias/guide.md` through a linked folder matched nothing
        candidates = [value, os.path.abspath(value), os.path.realpath(value)] if value else [value]
        found = next((c for c in candidates if c in known), None)
        if found is not None:
            resolved.append(found)
            continue
        tail = "/" + os.path.normpath(value).replace(os.sep, "/").lstrip("/")
        matched = sorted(s for s in known if s.replace(os.sep, "/").endswith(tail))
        if not matched and value:  # a folder: its documents (review 30; `forget` takes one)
            matched = sorted(filter(sources_under([value]), known))
        if not matched:
            example = min(known, default="")
            raise RetrievalError(
                f"--filter source={value!r}: no indexed document's path is or ends with it"
                + (f" (sources are paths such as {display_path(example)!r})" if example else "")
            )
        resolved.extend(matched)
    return {**filters, "source": resolved[0] if len(resolved) == 1 else resolved}


def _check_length(text: str, what: str) -> str:
    """``text`` when it holds at most :data:`~ragstrata.types.MAX_QUERY_CHARS` characters, the
    HTTP API's and MCP tools' limit; raises RetrievalError (RS600) naming ``what`` otherwise."""
    if len(text) > MAX_QUERY_CHARS:
        raise RetrievalError(
            f"{what} is {len(text):,} characters long; at most {MAX_QUERY_CHARS:,} are "
            "accepted (as by the HTTP API): ask about one thing at a time"
        )
    return text


_HEADING_LINE = re.compile(r"\s{0,3}#{1,6}(?:\s|$)")


def _body_lines(text: str, fmt: object = None) -> list[str]:
    """The lines of a chunk's ``text`` but its Markdown headings (already on the hit's source
    line); a line inside a code fence (:func:`~ragstrata.text.spans.find_fences`) is code,
    kept whatever it starts with (trial 37: a preview showed an empty fence for
    ``# dmesg -n3``). A chunk of a format without Markdown (``fmt``, its ``format`` metadata:
    plain text, see :func:`~ragstrata.text.spans.fenced`) has neither: every line is kept."""
    if not spans.fenced(fmt):
        return text.removesuffix("\n").split("\n")
    fenced = [(f.open_start, f.close_end) for f in spans.find_fences(text)]
    kept: list[str] = []
    pos = 0
    for line in text.removesuffix("\n").split("\n"):
        start, pos = pos, pos + len(line) + 1
        code = any(a <= start < b for a, b in fenced)
        if code or not _HEADING_LINE.match(line):
            kept.append(line)
    return kept


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
    filters: FilterOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Hybrid search (dense + BM25 fused by RRF, then the cross-encoder when reranking is on);
    prints ranked chunks."""
    try:
        if mode not in ("hybrid", "dense", "bm25"):
            raise ConfigError(f"--mode {mode!r} is unknown; choose hybrid, dense or bm25")
        _check_length(query, "the query")
        checked = parse_filters(filters)
        with _engine(index, config) as engine:
            result = engine.search(
                query,
                top_k=top_k,
                mode=mode,  # type: ignore[arg-type]
                rerank=rerank,
                filters=_resolve_sources(engine, checked),
            )
            if not result.hits and not engine.manifest().documents:
                _warn_empty(engine.index_dir)
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    if json_out:
        data = {
            "query": query,
            "hits": [_hit_json(h) for h in result.hits],
            "language_relation": result.language_relation,
            "timings_ms": result.timings_ms,
        }
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    table = Table(show_lines=True, title=escape(f"{len(result.hits)} hits for {query!r}"))
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    # one wide column: the source line (file name never cut; folders shorten to …/ when it
    # is longer than the column) over the text snippet, so --explain's ranks (stacked under
    # the score) never squeeze the text the user reads
    table.add_column("source > heading / text", overflow="fold")
    width = max(30, out.width - (34 if explain else 20))
    names = ("dense", "bm25", "rerank")
    for hit in result.hits:
        score = f"{hit.score:.4f}"
        if explain:
            for name in names:
                e = next((x for x in hit.explain if x.retriever == name), None)
                if e is not None or name != "rerank":
                    shown = f"{e.rank} / {e.score:.3f}" if e else "-"
                    score += f"\n[dim]{name} {shown}[/]"
        snippet = " ".join(
            " ".join(_body_lines(hit.chunk.text, hit.chunk.metadata.get("format"))).split()
        )
        snippet = snippet or " ".join(hit.chunk.text.split())
        snippet = snippet[:160] + ("…" if len(snippet) > 160 else "")
        where = _hit_where(hit, width)
        also = _copies_line(hit)
        also = f"\n[dim]{escape(also)}[/]" if also else ""
        table.add_row(str(hit.rank), score, f"[bold]{escape(where)}[/]\n{escape(snippet)}{also}")
    out.print(table)
    out.print(f"[dim]{result.timings_ms['total']:.1f} ms[/]")


def _copies_line(hit: Hit, shown: int = 3) -> str:
    """``also in: a.md, b.md and 2 more``: the other files that hold the hit's passage (its
    copies, :attr:`Hit.copies`; ``same file`` for a copy in the hit's own file), or ``""``."""
    if not hit.copies:
        return ""
    names = list(
        dict.fromkeys(
            "same file" if c.source == hit.chunk.source else display_path(c.source)
            for c in hit.copies
        )
    )
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return _term("also in: " + ", ".join(names[:shown]) + more)


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


def ask(
    question: Annotated[
        str,
        typer.Argument(
            help="Question in any language of your documents; '-' reads one question per "
            "line from standard input and answers each with one loaded model."
        ),
    ],
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
        bool,
        typer.Option(
            "--stream/--no-stream",
            help="Print the answer as it is written; --no-stream asks the LLM server for the "
            "whole answer in one response (llm.stream = false).",
        ),
    ] = True,
    filters: FilterOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a question with numbered citations, or refuse when the documents do not say.

    With ``-`` as the question, every non-empty line of standard input is a question, answered
    in turn by one engine: a local model loads once, and the prompt prefix it shares with the
    previous question (chat template, rules) is not evaluated again. ``--json`` then prints one
    JSON object per line.
    """
    from ragstrata.generate.answerer import AnswerEvent, TokenEvent

    try:
        if question != "-":
            _check_length(question, "the question")
        checked = parse_filters(filters)
        overrides = _llm_overrides(llm)
        if not stream:  # one request to the server, not a stream (a proxy that does not stream)
            overrides["llm.stream"] = False
        cfg = _warn_memory(
            RagConfig.load(config_file=config, overrides=overrides).with_index(index)
        )
        with Ragstrata(cfg) as engine:
            live = stream and not json_out and engine.generator is not None
            checked = _resolve_sources(engine, checked)  # a bad value: before the model loads
            warm_up = getattr(engine.generator, "warm_up", None)
            if callable(warm_up):  # a local model loads before the index is opened (trial
                warm_up()  # 25: a first load of 30 s held the index, other searches waited)
            questions = _stdin_questions() if question == "-" else iter([question])
            failed: RetrievalError | None = None
            for n, asked in enumerate(questions):
                if isinstance(asked, RetrievalError):  # a line over the length cap
                    failed = asked
                    _fail(asked, json_out=json_out)
                    continue
                if question == "-" and not json_out:
                    out.print(f"{'' if n == 0 else chr(10)}[bold]? {escape(asked)}[/]")
                answer: Answer | None = None
                streamed = False
                try:
                    # the index is released while the LLM writes (other searches go on)
                    for event in engine.ask_stream(asked, filters=checked, release_index=True):
                        if isinstance(event, TokenEvent) and live:
                            out.print(event.text, end="", highlight=False, markup=False)
                            streamed = True
                        elif isinstance(event, AnswerEvent):
                            answer = event.answer
                except RetrievalError as exc:
                    if question != "-":
                        raise
                    # one bad line ("?") is reported and the next questions are still asked
                    # (review 31: the batch stopped there); the exit status says it
                    failed = exc
                    _fail(exc, json_out=json_out)
                    continue
                assert answer is not None
                _show_answer(
                    answer, cfg, streamed=streamed, json_out=json_out, lines=question == "-"
                )
            if failed is not None:
                raise typer.Exit(1)
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc


def _stdin_questions() -> Iterator[str | RetrievalError]:
    """The non-empty lines of standard input, stripped, as they arrive; a line over
    :data:`~ragstrata.types.MAX_QUERY_CHARS` characters as the RetrievalError that refuses it
    (reported, and the next lines still asked). Raises RetrievalError (as an empty question
    does) when standard input ends without one."""
    asked = False
    for n, line in enumerate(sys.stdin, 1):
        if line.strip():
            asked = True
            try:
                yield _check_length(line.strip(), f"the question on line {n}")
            except RetrievalError as exc:
                yield exc
    if not asked:
        raise RetrievalError("no question on standard input (`ask -` reads one question per line)")


def _show_answer(
    answer: Answer, cfg: RagConfig, *, streamed: bool, json_out: bool, lines: bool
) -> None:
    """Print one answer of ``ask``: its JSON (one line when ``lines``), or the checked text,
    citations, notes and the LLM's token counts and times."""
    if answer.refused_by == "empty_index":
        _warn_empty(cfg.index_path)
    if json_out:
        data = _llm_answer_json(answer)
        print(json.dumps(data, ensure_ascii=False, indent=None if lines else 2), flush=True)
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
    grounding = answer.generation.grounding if answer.generation is not None else None
    if grounding is not None and not answer.refusal:
        # which sentence failed its check: sentences sharing a label read "NOT verified"
        # alike (trial 25)
        for claim in grounding.unsupported:
            lacks = f" (the source lacks {', '.join(claim.missing)})" if claim.missing else ""
            out.print(
                f"[red]not supported[/] {escape(_term(claim.sentence))}{escape(lacks)}",
                highlight=False,
            )
        checked = {c.sentence for c in grounding.unsupported}
        for sentence in grounding.uncited:  # no marker, and no source the checker found
            if sentence not in checked:
                out.print(f"[yellow]no source[/] {escape(_term(sentence))}", highlight=False)
    if answer.conflict:
        kept = ", ".join(c.kept for c in answer.conflicts)
        out.print(
            f"[yellow]note[/] sources disagree across versions; used the newest ({escape(kept)})"
        )
    for d in answer.disagreements:
        claims = ", ".join(f"[{label}] {value} {d.unit}" for label, value in d.claims)
        out.print(f"[yellow]note[/] the sources disagree: {escape(_term(claims))}")
    if answer.usage:
        u = answer.usage
        ttft = answer.timings_ms.get("first_token")
        first = f" (first token {ttft / 1000:.1f} s)" if ttft is not None else ""
        out.print(
            f"[dim]{answer.generator}: {u.get('prompt_tokens', 0)} prompt + "
            f"{u.get('completion_tokens', 0)} answer tokens, "
            f"{answer.timings_ms.get('total', 0.0) / 1000:.1f} s{first}[/]",
            highlight=False,
        )
