"""The typer options several commands take, each declared once (flag, help text); a command
gives the default. Options whose help differs between commands stay with their command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

IndexOpt = Annotated[
    Path | None,
    typer.Option("--index", help="Index directory (default: $RAGSTRATA_HOME/index)."),
]
EvalIndexOpt = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="Index directory (default: $RAGSTRATA_HOME/eval/<corpus>-<embedder>, built once and "
        "reused; a golden file is scored against $RAGSTRATA_HOME/index).",
    ),
]
SquadIndexOpt = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="Index of the SQuAD corpus (default: $RAGSTRATA_HOME/eval/<corpus>-<embedder>, the "
        "one `ragstrata eval` builds, built once and reused).",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML config file (default: $RAGSTRATA_HOME/config.toml)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
BaselineOpt = Annotated[
    Path | None, typer.Option("--baseline", help="Fail (exit 4) below this baseline JSON.")
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Service data directory (default: $RAGSTRATA_HOME/service)."),
]
FilterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--filter",
        help="KEY=VALUE: only chunks whose KEY (language, source, title, doc_id or meta.<key>) "
        "equals VALUE, as text; repeat it for more keys (the same key twice: either value).",
    ),
]
