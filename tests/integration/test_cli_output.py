"""CLI output: document text and paths print literally; dry runs write nothing; PDF pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pdf_builder import Page, build_pdf
from ragstrata.cli import EXIT_PARTIAL, app

pytestmark = pytest.mark.slow


def test_brackets_in_text_and_paths_are_not_rich_markup(tmp_path: Path) -> None:
    corpus = tmp_path / "brk"
    corpus.mkdir()
    (corpus / "[draft] notes.md").write_text(
        "# Tags\n\nThe closing tag [/bold] ends a style; the option [balance] invokes flushend.\n",
        encoding="utf-8",
    )
    (corpus / "a[").mkdir()
    (corpus / "a[/x].md").write_bytes(b"")  # an empty file whose path holds "[/x]"
    index = str(tmp_path / "idx")
    runner = CliRunner()
    ingest = runner.invoke(app, ["ingest", str(corpus), "--index", index])
    assert ingest.exit_code == EXIT_PARTIAL, ingest.output
    assert "a[/x].md" in ingest.output
    search = runner.invoke(app, ["search", "closing tag option balance", "--index", index])
    assert search.exit_code == 0, search.output
    assert "[/bold]" in search.output and "[balance]" in search.output
    as_json = runner.invoke(app, ["search", "closing tag", "--index", index, "--json"])
    assert json.loads(as_json.output)["hits"][0]["source"].endswith("[draft] notes.md")
    question = "What does the option [balance] invoke at the end of a style?"
    ask = runner.invoke(app, ["ask", question, "--index", index])
    assert ask.exit_code == 0, ask.output
    assert "[draft] notes.md" in ask.output and "the option [balance] invokes" in ask.output


def test_dry_run_on_a_new_index_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nSome text about dry runs.\n", encoding="utf-8")
    index = tmp_path / "idx"
    result = CliRunner().invoke(app, ["ingest", str(corpus), "--index", str(index), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "1 added" in result.output
    assert not index.exists()


def test_pdf_pages_reach_search_json_and_citations(tmp_path: Path) -> None:
    corpus = tmp_path / "pdf"
    corpus.mkdir()
    pages = [
        Page().lines(72, 700, ["The first page talks about installing the product."]),
        Page().lines(72, 700, ["Backups are kept for thirty days on the second page."]),
    ]
    (corpus / "manual.pdf").write_bytes(build_pdf(pages))
    index = str(tmp_path / "idx")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(corpus), "--index", index]).exit_code == 0
    found = runner.invoke(app, ["search", "backups thirty days", "--index", index, "--json"])
    hits = json.loads(found.output)["hits"]
    assert hits and hits[0]["page_end"] == 2 and hits[0]["language"] == "en"
    asked = runner.invoke(app, ["ask", "How long are backups kept?", "--index", index, "--json"])
    citations = json.loads(asked.output)["citations"]
    assert citations and citations[0]["page_end"] == 2
    # '-': one question per line of standard input, one engine, one JSON object per line
    stdin = "How long are backups kept?\n\nWhat does the first page talk about?\n"
    session = runner.invoke(app, ["ask", "-", "--index", index, "--json"], input=stdin)
    assert session.exit_code == 0, session.output
    answers = [json.loads(line) for line in session.output.splitlines()]
    assert [a["question"] for a in answers] == [
        "How long are backups kept?",
        "What does the first page talk about?",
    ]
    assert answers[0]["citations"] == json.loads(asked.output)["citations"]
    # nothing (or blank lines only) on standard input is no question: RS600, not silence
    empty = runner.invoke(app, ["ask", "-", "--index", index], input="\n  \n")
    assert empty.exit_code == 1 and "RS600" in empty.output, empty.output
    # the HTTP API's 2,000-character cap holds on the command line too (an 8 MB question took
    # 25 s and 1.4 GB, and was echoed back whole); standard input: the lines before it answered
    long = ("backups " * 300).strip()
    for command in (["ask", long], ["search", long]):
        refused = runner.invoke(app, [*command, "--index", index])
        assert refused.exit_code == 1 and "RS600" in refused.output, refused.output
        assert "2,399 characters long; at most 2,000" in refused.output
        assert long not in refused.output
    stdin = f"How long are backups kept?\n{long}\nWhat does the first page talk about?\n"
    cut = runner.invoke(app, ["ask", "-", "--index", index, "--json"], input=stdin)
    assert cut.exit_code == 1 and "on line 2 is 2,399 characters" in cut.output, cut.output
    lines = [json.loads(x) for x in cut.stdout.splitlines() if x.startswith("{")]
    # review 31: the lines after a refused one are still asked (the batch stopped there)
    assert [x.get("question") or x["error"]["code"] for x in lines] == [
        "How long are backups kept?",
        "RS600",
        "What does the first page talk about?",
    ]
    marks = runner.invoke(app, ["ask", "-", "--index", index], input="hola\n?\nbackups\n")
    assert marks.exit_code == 1 and "RS600" in marks.output, marks.output
    assert marks.output.count("? ") >= 3  # each line shown, the third one asked too
    # --json: a failure is a JSON object on standard output too (the HTTP API's error body)
    for command in (["ask", "", "--index", index], ["search", long, "--index", index]):
        failed = runner.invoke(app, [*command, "--json"])
        assert failed.exit_code == 1
        [line] = [x for x in failed.stdout.splitlines() if x.startswith("{")]
        error = json.loads(line)["error"]
        assert error["code"] == "RS600" and not error["message"].startswith("[RS600]")
    missing = runner.invoke(app, ["stats", "--index", str(tmp_path / "none"), "--json"])
    assert json.loads(missing.stdout)["error"]["code"] == "RS501", missing.output


def test_search_explain_keeps_long_file_names_whole(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    (corpus / "a-rather-deep" / "folder-structure").mkdir(parents=True)
    name = "configuracion-avanzada-del-servidor-de-produccion-y-despliegue.md"
    (corpus / "a-rather-deep" / "folder-structure" / name).write_text(
        "# Despliegue\n\n## Variables de entorno\n\nEl servidor lee PORT y WORKERS al arrancar; "
        "sin ellas usa el puerto 8000 y dos procesos de trabajo.\n",
        encoding="utf-8",
    )
    index = str(tmp_path / "idx")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(corpus), "--index", index]).exit_code == 0
    result = runner.invoke(
        app,
        ["search", "¿Qué puerto usa el servidor?", "--index", index, "--explain"],
        env={"COLUMNS": "110"},
    )
    assert result.exit_code == 0, result.output
    assert name in result.output, result.output  # whole, on one line (folders become …/)
    assert "dense 1 / " in result.output and "bm25 1 / " in result.output
    # at 80 columns the text stays readable next to the ranks (it was squeezed to 12)
    narrow = runner.invoke(
        app,
        ["search", "¿Qué puerto usa el servidor?", "--index", index, "--explain"],
        env={"COLUMNS": "80"},
    )
    assert narrow.exit_code == 0, narrow.output
    assert "│ El servidor lee PORT y WORKERS al arrancar; sin ellas" in narrow.output, narrow.output


def test_files_gone_without_prune_are_named(tmp_path: Path) -> None:
    """A new user deleted a file, ran ``ingest`` again, read "0 pruned" and kept getting
    answers from it (2026-12-03): the run now says how many indexed documents lost their file
    and that ``--prune`` removes them."""
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nAlpha page about quotas.\n", encoding="utf-8")
    (corpus / "b.md").write_text("# B\n\nBeta page about invoices.\n", encoding="utf-8")
    index = tmp_path / "idx"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(corpus), "--index", str(index)]).exit_code == 0
    (corpus / "b.md").unlink()
    again = runner.invoke(app, ["ingest", str(corpus), "--index", str(index)])
    assert again.exit_code == 0, again.output
    assert "1 indexed document from files that no longer exist" in again.stderr
    assert "add --prune to remove it" in again.stderr
    gone = (corpus / "b.md").resolve().as_posix()
    assert f"gone: {gone}" in again.stderr  # which file, not only how many
    data = json.loads(
        runner.invoke(app, ["ingest", str(corpus), "--index", str(index), "--json"]).stdout
    )
    assert data["stale"] == 1 and data["pruned"] == 0
    assert data["stale_sources"] == [gone] and data["pruned_sources"] == []
    dry = runner.invoke(app, ["ingest", str(corpus), "--index", str(index), "--prune", "--dry-run"])
    assert dry.exit_code == 0 and f"would prune: {gone}" in dry.stderr, dry.stderr
    pruned = runner.invoke(app, ["ingest", str(corpus), "--index", str(index), "--prune"])
    assert pruned.exit_code == 0 and "no longer exist" not in pruned.stderr
    assert f"pruned: {gone}" in pruned.stderr


def test_search_and_ask_take_filters(tmp_path: Path) -> None:
    """``--filter KEY=VALUE`` reaches the retriever (the Python API, HTTP and MCP had filters,
    the CLI had none): a Spanish-only search over a mixed folder returns Spanish chunks only;
    a key that cannot be filtered on is an error, not an empty result."""
    corpus = tmp_path / "mixed"
    corpus.mkdir()
    (corpus / "cache.md").write_text(
        "# Cache\n\nThe cache keeps each response for ten minutes before it expires.\n",
        encoding="utf-8",
    )
    (corpus / "caché.md").write_text(
        "# Caché\n\nLa caché guarda cada respuesta durante diez minutos antes de caducar.\n",
        encoding="utf-8",
    )
    index = str(tmp_path / "idx")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(corpus), "--index", index]).exit_code == 0
    query = ["search", "cache response minutes", "--index", index, "--json"]
    both = json.loads(runner.invoke(app, query).stdout)["hits"]
    assert {h["language"] for h in both} == {"en", "es"}
    spanish = runner.invoke(app, [*query, "--filter", "language=es"])
    assert spanish.exit_code == 0, spanish.output
    hits = json.loads(spanish.stdout)["hits"]
    assert hits and {h["language"] for h in hits} == {"es"}
    either = runner.invoke(app, [*query, "--filter", "language=es", "--filter", "language=en"])
    assert {h["language"] for h in json.loads(either.stdout)["hits"]} == {"en", "es"}
    question = "How long does the cache keep a response?"
    ask = runner.invoke(
        app, ["ask", question, "--index", index, "--filter", "language=es", "--json"]
    )
    assert ask.exit_code == 0, ask.output
    citations = json.loads(ask.stdout)["citations"]
    assert citations and all(c["source"].endswith("caché.md") for c in citations)
    bad = runner.invoke(app, [*query, "--filter", "lang=es"])
    assert bad.exit_code != 0 and "not allowed" in bad.output
    assert runner.invoke(app, [*query, "--filter", "language"]).exit_code != 0


def test_a_reader_that_goes_away_keeps_the_exit_code(tmp_path: Path) -> None:
    """``ragstrata ingest DIR | head`` exited 1 (click's broken pipe), not the 3 of an ingest
    with rejected files; ``--version | true`` exited 1 too. The command now finishes, its
    output after the reader left dropped, and exits with its own code."""
    import os
    import subprocess
    import sys

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nThe server starts with uvicorn.\n", "utf-8")
    (folder / "broken.md").write_bytes(b"\x00\x01\xff" * 10)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "RAGSTRATA_HOME": str(tmp_path / "home")}
    for args, code in (
        (["--version"], 0),
        (["ingest", str(folder), "--index", str(tmp_path / "index")], EXIT_PARTIAL),
    ):
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragstrata", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the first line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == code, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err
