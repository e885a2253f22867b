"""A batch full of bad files: each is reported with path, code and reason, the good files are
ingested, the exit code says "partial", and the JSON report lists every failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pdf_builder import Page, build_pdf
from ragstrata.cli import EXIT_PARTIAL, app

pytestmark = pytest.mark.slow


def test_bad_files_are_reported_and_the_rest_is_ingested(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nThe good document mentions SEC-A002.\n")
    (corpus / "good.html").write_text("<h1>Página</h1><p>Texto en español con acentos.</p>")
    (corpus / "latin1.txt").write_bytes("Canción de la niña, señor.".encode("latin-1"))
    (corpus / "binary.md").write_bytes(bytes(range(256)) * 50)
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "blank.txt").write_text("   \n\n  \t\n")
    (corpus / "invalid-utf8.md").write_bytes(b"# T\n\n\xff\xfe\x00\x00\x81 broken \x00 bytes")
    (corpus / "huge.txt").write_bytes(b"x" * (50 * 1024 * 1024))  # one 50 MB line
    lines = ["A real PDF page about the retention policy of backups.", "Kept for 30 days."]
    (corpus / "good.pdf").write_bytes(build_pdf([Page().lines(72, 700, lines)]))
    (corpus / "truncated.pdf").write_bytes(build_pdf([Page().lines(72, 700, lines)])[:300])
    (corpus / "not-a.pdf").write_bytes(b"PK\x03\x04 this is a zip file named .pdf")
    (corpus / "locked.pdf").write_bytes(build_pdf([Page().lines(72, 700, lines)], encrypt=True))
    (corpus / "scan.pdf").write_bytes(build_pdf([Page(image=True)]))
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)
    unreadable = corpus / "secret.md"
    unreadable.write_text("# Secret\n\nhidden")
    unreadable.chmod(0)
    can_deny = os.geteuid() != 0  # root reads anything; the case is only testable as a user
    report_file = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            str(corpus),
            str(tmp_path / "missing"),
            "--index",
            str(tmp_path / "idx"),
            "--report",
            str(report_file),
        ],
    )
    assert result.exit_code == EXIT_PARTIAL, result.output
    report = json.loads(report_file.read_text())
    assert report["status"] == "partial"
    failed = {Path(f["path"]).name: f["code"] for f in report["failures"]}
    assert failed["binary.md"] == "RS202"
    assert failed["empty.md"] == "RS203" and failed["blank.txt"] == "RS203"
    assert failed["huge.txt"] == "RS204"
    assert failed["missing"] == "RS205"
    assert "invalid-utf8.md" in failed
    assert failed["truncated.pdf"] == "RS206" and failed["not-a.pdf"] == "RS206"
    assert failed["locked.pdf"] == "RS207" and failed["scan.pdf"] == "RS208"
    if can_deny:
        assert "secret.md" in failed
    for failure in report["failures"]:
        assert failure["reason"] and failure["path"]
    expected_ok = 4 + (0 if can_deny else 1)
    assert report["added"] == expected_ok
    assert report["index"]["documents"] == expected_ok
    assert "skipped" in result.output and "binary.md" in result.output


def test_an_index_is_not_written_into_a_folder_of_documents(tmp_path: Path) -> None:
    """A new user pointed --index at the documents: manifest.json, shard/ and .lock were
    written among them. Refused before anything is written; an empty folder is fine."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guía.md").write_text("# Guía\n\nTexto de la guía con bastantes palabras.\n")
    (docs / "notes.txt").write_text("Some notes about the project for the index.\n")
    before = sorted(p.name for p in docs.iterdir())
    for target in (docs, docs):  # `ingest docs --index docs`, and again: still refused
        result = CliRunner().invoke(app, ["ingest", str(docs), "--index", str(target)])
        assert result.exit_code != 0
        assert "RS500" in result.output and "holds documents (guía.md, notes.txt)" in result.output
        assert sorted(p.name for p in docs.iterdir()) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["ingest", str(docs), "--index", str(empty)])
    assert result.exit_code == 0, result.output
    assert (empty / "manifest.json").exists()
