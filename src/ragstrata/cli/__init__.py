"""Command-line interface (typer + rich): a thin layer over :class:`ragstrata.pipeline.Ragstrata`.

Exit codes: 0 ok; 1 error (message on stderr with its ``RSxxx`` code); 2 usage error;
3 ingest finished with some files rejected ("partial"); 4 evaluation below its baseline.

The commands live by family (:mod:`~ragstrata.cli.ingest`, :mod:`~ragstrata.cli.query`,
:mod:`~ragstrata.cli.evaluate`, :mod:`~ragstrata.cli.serve`); this module builds the ``app``
from them, in the order ``ragstrata --help`` lists them.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, TextIO

import typer

from ragstrata.cli.common import EXIT_PARTIAL, EXIT_REGRESSION, _Command, _Group
from ragstrata.cli.evaluate import (
    eval_answers,
    eval_citations,
    eval_cmd,
    eval_refusal,
    reranker_app,
)
from ragstrata.cli.ingest import forget, ingest, stats, watch
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
    ("forget", forget),
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


class _ClosedPipeGuard:
    """Standard output that outlives its reader: once the reader has gone
    (``ragstrata search ... | head``), writes are dropped instead of raising
    ``BrokenPipeError``, so the command finishes and exits with its own code (an ingest with
    rejected files still exits 3, not click's 1 for a broken pipe). Everything else is the
    wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self._gone = True
        try:  # the interpreter flushes the real stream at exit: let it write to /dev/null
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # no file descriptor (a captured stream)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main() -> None:
    """Console-script entry point."""
    sys.stdout = _ClosedPipeGuard(sys.stdout)
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        sys.exit(130)
