"""Command-line interface (typer + rich): a thin layer over :class:`ragstrata.pipeline.Ragstrata`.

Exit codes: 0 ok; 1 error (message on stderr with its ``RSxxx`` code); 2 usage error;
3 ingest finished with some files rejected ("partial"); 4 evaluation below its baseline.

The commands live by family (:mod:`~ragstrata.cli.ingest`, :mod:`~ragstrata.cli.query`,
:mod:`~ragstrata.cli.evaluate`, :mod:`~ragstrata.cli.serve`); this module builds the ``app``
from them, in the order ``ragstrata --help`` lists them.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ragstrata.cli.common import EXIT_PARTIAL, EXIT_REGRESSION, _Command, _Group
from ragstrata.cli.evaluate import (
    eval_answers,
    eval_citations,
    eval_cmd,
    eval_refusal,
    reranker_app,
)
from ragstrata.cli.ingest import ingest, stats, watch
from ragstrata.cli.query import ask, search
from ragstrata.cli.serve import keys_app, mcp, serve

__all__ = ["EXIT_PARTIAL", "EXIT_REGRESSION", "app", "main"]

app = typer.Typer(
    cls=_Group,
    name="ragstrata",
    help="Retrieval-augmented answers with citations over your documents (offline).",
    no_args_is_help=True,
    add_completion=False,
)


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


def _summary(command: object) -> str:
    """The first paragraph of ``command``'s docstring on one line: ``ragstrata --help`` lists
    it, and the docstring's own line breaks cut its sentences mid-way there."""
    paragraph = (getattr(command, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())


for _name, _command in (
    ("ingest", ingest),
    ("watch", watch),
    ("search", search),
    ("ask", ask),
    ("stats", stats),
    ("eval", eval_cmd),
    ("eval-refusal", eval_refusal),
    ("eval-answers", eval_answers),
    ("eval-citations", eval_citations),
    ("serve", serve),
    ("mcp", mcp),
):
    app.command(_name, cls=_Command, short_help=_summary(_command))(_command)
app.add_typer(reranker_app)
app.add_typer(keys_app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        sys.exit(130)
