"""CLI surface of reranking: the `reranker train` sub-command and the eval/search options."""

from __future__ import annotations

from typer.testing import CliRunner

from ragstrata.cli import app

runner = CliRunner()


def test_reranker_train_is_a_subcommand() -> None:
    result = runner.invoke(app, ["reranker", "train", "--help"])
    assert result.exit_code == 0
    for option in ("--squad", "--docs", "--parallel-docs", "--out", "--seed", "--time-budget-min"):
        assert option in result.output
    assert "--scifact" not in result.output  # SciFact is evaluation-only data


def test_reranker_train_has_no_scifact_source() -> None:
    args = ["reranker", "train", "--squad", "x", "--out", "y", "--scifact", "z"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "No such option" in result.output + (result.stderr if result.stderr_bytes else "")


def test_reranker_train_rejects_bad_settings() -> None:
    result = runner.invoke(
        app,
        ["reranker", "train", "--squad", "x", "--out", "y", "--epochs", "0"],
    )
    assert result.exit_code == 2  # ConfigError: epochs must be > 0


def test_eval_rejects_unknown_modes_and_lists_hybrid_rerank() -> None:
    result = runner.invoke(app, ["eval", "some-dir", "--modes", "hybrid,rerank-only"])
    assert result.exit_code == 2
    assert "hybrid+rerank" in result.output + (result.stderr if result.stderr_bytes else "")


def test_search_has_a_rerank_switch() -> None:
    result = runner.invoke(app, ["search", "--help"])
    assert "--rerank" in result.output and "--no-rerank" in result.output
