"""Output and report paths are checked before the work starts: a bad ``--json``, ``--report``,
``--compare`` or ``--baseline`` is an ``error [RS101]`` line and exit status 2, never a
traceback after a whole ingest or evaluation (a new user's run, 2026-12-03)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragstrata.cli import app

REPO = Path(__file__).resolve().parents[2]
GOLDEN = str(REPO / "eval" / "golden" / "docs.yaml")
ANSWERS_BASELINE = REPO / "eval" / "baselines" / "squad-es-answers-test.json"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "folder").mkdir()
    (tmp_path / "answers.json").write_text(ANSWERS_BASELINE.read_text(encoding="utf-8"))
    (tmp_path / "list.json").write_text(json.dumps([1, 2]))
    (tmp_path / "notes.yaml").write_text("- query: x\n")
    return {
        "missing_dir": str(tmp_path / "nope" / "out.json"),
        "folder": str(tmp_path / "folder"),
        "missing": str(tmp_path / "missing.json"),
        "answers": str(tmp_path / "answers.json"),
        "list": str(tmp_path / "list.json"),
        "yaml": str(tmp_path / "notes.yaml"),
        "index": str(tmp_path / "index"),
        "doc": str(REPO / "README.md"),
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest", "{doc}", "--report", "{missing_dir}"], "does not exist"),
        (["ingest", "{doc}", "--report", "{folder}"], "is a folder"),
        (["eval", GOLDEN, "--json", "{missing_dir}"], "does not exist"),
        (["eval", GOLDEN, "--compare", "{missing}"], "no such file"),
        (["eval", GOLDEN, "--compare", "{yaml}"], "not a JSON report"),
        (["eval", GOLDEN, "--baseline", "{answers}"], "not a report of eval (no 'modes' key)"),
        (["eval", GOLDEN, "--baseline", "{list}"], "not a report of eval"),
        (["eval-answers", GOLDEN, "--json", "{folder}"], "is a folder"),
        (["eval-answers", GOLDEN, "--baseline", "{missing}"], "no such file"),
    ],
)
def test_bad_output_and_report_paths_fail_before_the_work(
    files: dict[str, str], args: list[str], message: str
) -> None:
    argv = [a.format(**files) for a in args] + ["--index", files["index"]]
    result = CliRunner().invoke(app, argv, terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "error [RS101]" in result.output and message in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not Path(files["index"]).exists()  # nothing was indexed
