"""``--help`` of every command: flags are listed without a ``<bool>`` type (they take no value),
options that take a value keep theirs."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from ragstrata.cli import app


def _command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]
    root = typer.main.get_command(app)
    for name, command in getattr(root, "commands", {}).items():
        paths.append([name])
        paths.extend([name, sub] for sub in getattr(command, "commands", {}))
    return paths


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "ragstrata")
def test_help_has_no_bool_metavars(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help" in result.output


def test_options_with_values_keep_their_type() -> None:
    result = CliRunner().invoke(app, ["ask", "--help"], terminal_width=120)
    assert "<path>" in result.output and "--json" in result.output


def test_python_dash_m_runs_the_cli() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "ragstrata", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "ingest" in done.stdout, done.stderr


def test_the_command_list_keeps_each_summary_whole() -> None:
    # the docstrings' hard line breaks cut the summaries mid-sentence ("... deleted files are" /
    # "synced in batches"): a new user's run, 2026-12-03
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "250"})
    lines = [" ".join(line.strip("│ ").split()) for line in result.output.splitlines()]
    watch = next(line for line in lines if line.startswith("watch "))
    assert "deleted files are synced in batches" in watch, result.output


def test_a_commands_help_is_reflowed_to_the_terminal() -> None:
    # the docstring's line breaks cut sentences mid-way on a narrow terminal (a new user's
    # run, 2026-12-03): each help paragraph is one line for the terminal to wrap
    root = typer.main.get_command(app)
    for name, command in getattr(root, "commands", {}).items():
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph, (name, paragraph)
