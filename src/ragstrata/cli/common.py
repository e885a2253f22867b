"""What every command module of the CLI shares: the two consoles, terminal-safe text, the
error exit, the exit codes and the help classes that keep ``<bool>`` off flags."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ragstrata.config import STORE_MEMORY, RagConfig, resolve_embedder_name
from ragstrata.errors import ConfigError, RagError
from ragstrata.paths import path_text
from ragstrata.pipeline import Ragstrata

EXIT_PARTIAL = 3
"""Exit code of an ingest (or ``watch --once`` sync) that finished with some files rejected."""

EXIT_REGRESSION = 4
"""Exit code of an evaluation below its ``--baseline``."""

out = Console(soft_wrap=True)  # no hard wraps in piped output (paths stay greppable)
err = Console(stderr=True, soft_wrap=True)


def _without_flag_types(params: list[Any]) -> list[Any]:
    """Give flags (``--json``, ``--stream/--no-stream``, ``--help``) an empty metavar: typer's
    help otherwise prints ``<bool>`` beside every one, although a flag takes no value. (typer's
    parameters are classes of the click it bundles, so flags are told by ``is_flag``.)"""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(typer.core.TyperCommand):
    """A typer command whose help shows no type for flags (see :func:`_without_flag_types`)
    and whose help paragraphs are re-flowed to the terminal (the docstring's own line breaks
    cut sentences mid-way on a narrower one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = "\n\n".join(" ".join(p.split()) for p in self.help.split("\n\n"))

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


class _Group(typer.core.TyperGroup):
    """A typer group whose help shows no type for flags (see :func:`_without_flag_types`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


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
    return Ragstrata(_warn_memory(RagConfig.load(config_file=config).with_index(index)))


def _warn_memory(cfg: RagConfig) -> RagConfig:
    """``cfg``, after a warning when its store is ``:memory:`` (review 45: an ingest said ok
    and kept nothing)."""
    if cfg.store.url == STORE_MEMORY:
        err.print(
            "[yellow]warning[/] store.url ':memory:' keeps the vectors in memory only: they "
            "are gone when the store closes; use local:PATH or a Qdrant server",
            highlight=False,
        )
    return cfg


def _eval_index(cfg: RagConfig, corpus: str) -> Path:
    """The index the evaluation commands build for ``corpus`` when no ``--index`` is given:
    ``$RAGSTRATA_HOME/eval/<corpus>-<embedder>``, reused by later runs."""
    return cfg.home / "eval" / f"{corpus}-{resolve_embedder_name(cfg.embedder.name, None)}"


def _llm_overrides(llm: str | None) -> dict[str, Any]:
    """The configuration overrides of an ``--llm`` option (none when it is not given).

    Raises:
        ConfigError: ``llm`` is not none, local or openai.
    """
    if llm is None:
        return {}
    if llm not in ("none", "local", "openai"):
        raise ConfigError(f"--llm {llm!r} is unknown; choose none, local or openai")
    return {"llm.provider": llm}


def _fail(exc: RagError, *, json_out: bool = False) -> typer.Exit:
    """The exit of a command that failed with ``exc``: an ``error [RSxxx] ...`` line on standard
    error, and with ``--json`` also ``{"error": {"code", "message"}}`` on standard output (the
    HTTP API's error body), so that a script reading the JSON gets an object either way.
    Exit status 2 for a configuration error, else 1."""
    if json_out:
        message = str(exc).removeprefix(f"[{exc.code}] ")
        print(json.dumps({"error": {"code": exc.code, "message": message}}, ensure_ascii=False))
    err.print(
        f"[bold red]error[/] {escape(_term(str(exc), keep_newlines=True))}",
        highlight=False,
        markup=True,
    )
    return typer.Exit(2 if isinstance(exc, ConfigError) else 1)


def output_file(path: Path | None, option: str) -> None:
    """Check an output file (``--json``, ``--report``) before the work starts: not a folder,
    in a folder that exists and can be written. ``None`` passes.

    Raises:
        ConfigError: the path is a folder, or its folder is missing or read-only.
    """
    if path is None:
        return
    folder, where = path.parent, f"{option} {path_text(path)}"
    if path.is_dir():
        raise ConfigError(f"{where}: is a folder; give a file name")
    if not folder.is_dir():
        raise ConfigError(f"{where}: the folder {path_text(folder)} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{where}: the folder {path_text(folder)} is not writable")


def write_output(path: Path, text: str, option: str) -> None:
    """Write an output file checked by :func:`output_file`; a failure now (disk full, the
    folder removed meanwhile) is an ``error`` line and exit status 1, not a traceback."""
    try:
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise _fail(
            RagError(f"{option} {path_text(path)}: cannot write ({exc.strerror or exc})")
        ) from exc


def read_report(path: Path | None, option: str, *, key: str, writer: str) -> dict[str, Any] | None:
    """An earlier JSON report (``--compare``, ``--baseline``) read before the work starts;
    ``key``: a top-level key every report of the command has; ``writer``: the command whose
    ``--json`` writes such a report. ``None`` passes.

    Raises:
        ConfigError: missing or unreadable file, not JSON, or not a report of that command.
    """
    if path is None:
        return None
    where = f"{option} {path_text(path)}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{where}: no such file") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not a JSON report ({exc})") from exc
    if not isinstance(data, dict) or key not in data:
        raise ConfigError(
            f"{where}: not a report of {writer} (no {key!r} key); give a file its --json wrote"
        )
    return data
