"""The whole configuration (:class:`RagConfig`) and how it is loaded: defaults, a TOML file,
``RAGSTRATA_*`` environment variables, then overrides, each value checked against its field's
type.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ragstrata.config.answer import AnswerConfig, LLMConfig
from ragstrata.config.checks import MAX_INT
from ragstrata.config.embedder import EmbedderConfig
from ragstrata.config.index import BM25Config, StoreConfig
from ragstrata.config.ingest import ChunkerConfig, IngestConfig
from ragstrata.config.retrieval import RerankConfig, RetrievalConfig
from ragstrata.config.service import ServiceConfig
from ragstrata.errors import ConfigError


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """``$RAGSTRATA_HOME`` of ``env`` (default: ``os.environ``) if set and not empty, else
    ``./.ragstrata`` (relative to the working directory)."""
    home = (os.environ if env is None else env).get("RAGSTRATA_HOME")
    return Path(home) if home else Path(".ragstrata")


@dataclass(frozen=True, slots=True)
class RagConfig:
    """The whole configuration. ``index_dir`` defaults to ``$RAGSTRATA_HOME/index``."""

    home: Path = field(default_factory=default_home)
    index_dir: Path | None = None
    chunking: ChunkerConfig = field(default_factory=ChunkerConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    bm25: BM25Config = field(default_factory=BM25Config)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)

    @property
    def index_path(self) -> Path:
        """Directory of the embedded index."""
        return self.index_dir if self.index_dir is not None else self.home / "index"

    @classmethod
    def load(
        cls,
        *,
        config_file: Path | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> RagConfig:
        """Build a config from defaults, a TOML file, ``RAGSTRATA_*`` variables and overrides.

        TOML sections are the stage names (``[chunking]``, ``[embedder]``, ``[bm25]``,
        ``[retrieval]``, ``[answer]``, ``[ingest]``, ``[store]``,
        ``[rerank]``, ``[service]``, ``[llm]``). Environment variables are
        ``RAGSTRATA_<SECTION>_<FIELD>`` (e.g. ``RAGSTRATA_EMBEDDER_NAME=e5``), plus
        ``RAGSTRATA_HOME`` and ``RAGSTRATA_INDEX``. ``overrides`` uses dotted keys
        (``{"retrieval.top_k": 8}``). Raises :class:`ConfigError` on unknown keys or bad values.
        """
        environ = dict(os.environ if env is None else env)
        home = default_home(environ)
        tree: dict[str, dict[str, Any]] = {}
        origins: dict[str, str] = {}
        path = config_file if config_file is not None else home / "config.toml"
        if config_file is not None and not path.is_file():
            what = "is a folder, not a TOML file" if path.is_dir() else "does not exist"
            raise ConfigError(f"config file {str(path)!r} {what}")
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from exc
            for section, values in data.items():
                if not isinstance(values, dict):
                    raise ConfigError(f"config file {str(path)!r}: [{section}] must be a table")
                tree.setdefault(section, {}).update(values)
                for name in values:
                    origins[f"{section}.{name}"] = f"set in config file {str(path)!r}"
        for key, raw in environ.items():
            if not key.startswith("RAGSTRATA_") or key in ("RAGSTRATA_HOME", "RAGSTRATA_INDEX"):
                continue
            rest = key.removeprefix("RAGSTRATA_").lower()
            section, _, name = rest.partition("_")
            if section in _SECTIONS and name:
                tree.setdefault(section, {})[name] = _FromEnv(raw, key)
                origins[f"{section}.{name}"] = f"set by {key}"
        for dotted, value in (overrides or {}).items():
            section, _, name = dotted.partition(".")
            tree.setdefault(section, {})[name] = value
            origins.pop(dotted, None)
        stages: dict[str, Any] = {}
        for section, values in tree.items():
            if section not in _SECTIONS:
                raise ConfigError(
                    f"unknown config section {section!r}; known: {', '.join(sorted(_SECTIONS))}"
                )
            try:
                stages[section] = _build(_SECTIONS[section], section, values)
            except ConfigError as exc:
                raise _with_origin(exc, section, values, origins) from exc
        index_dir = Path(environ["RAGSTRATA_INDEX"]) if environ.get("RAGSTRATA_INDEX") else None
        return cls(home=home, index_dir=index_dir, **stages)

    def with_index(self, index_dir: str | os.PathLike[str] | None) -> RagConfig:
        """A copy pointing at ``index_dir`` (a path or its text; unchanged when ``None``)."""
        return self if index_dir is None else replace(self, index_dir=Path(index_dir))


_SECTIONS: dict[str, type[Any]] = {
    "chunking": ChunkerConfig,
    "embedder": EmbedderConfig,
    "bm25": BM25Config,
    "retrieval": RetrievalConfig,
    "answer": AnswerConfig,
    "ingest": IngestConfig,
    "store": StoreConfig,
    "rerank": RerankConfig,
    "service": ServiceConfig,
    "llm": LLMConfig,
}


def _with_origin(
    exc: ConfigError, section: str, values: Mapping[str, Any], origins: Mapping[str, str]
) -> ConfigError:
    """``exc`` with where each setting it names was set: the config file or the
    ``RAGSTRATA_*`` variable (a range error such as ``retrieval.top_k=0 must be in [1, 10000]``
    did not say which of the two held the 0). Settings given as overrides (command-line
    options) add nothing."""
    message = str(exc.args[0]) if exc.args else ""
    where = [
        origins[f"{section}.{name}"]
        for name in values
        if f"{section}.{name}" in origins
        and re.search(rf"(?<![\w.]){re.escape(f'{section}.{name}')}(?!\w)", message)
        and origins[f"{section}.{name}"].removeprefix("set by ") not in message
    ]
    return ConfigError(f"{message} ({'; '.join(sorted(set(where)))})") if where else exc


def _build(kind: type[Any], section: str, values: Mapping[str, Any]) -> Any:
    known = {f.name: f for f in fields(kind)}
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            raise ConfigError(
                f"unknown setting {section}.{name}; known: {', '.join(sorted(known))}"
            )
        kwargs[name] = _coerce(f"{section}.{name}", str(known[name].type), value)
    return kind(**kwargs)


def _check_type(name: str, type_name: str, value: Any) -> Any:
    """Reject TOML values of the wrong type (``top_k = 3.7``, ``top_k = true``) at load time."""
    base = type_name.split("|")[0].strip()
    if value is None and "None" in type_name:
        return value
    if base == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{name}={value!r} must be an integer")
    if base == "int":
        _check_int(name, value)
    if base == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}={value!r} must be a number")
        return _finite(name, float(value))
    if base == "bool" and not isinstance(value, bool):
        raise ConfigError(f"{name}={value!r} must be true or false")
    if base == "str" and not isinstance(value, str):
        raise ConfigError(f"{name}={value!r} must be a string")
    if base == "Path" and not isinstance(value, str | Path):
        # review 45: service.data_dir = 5 passed and ended in a TypeError traceback
        raise ConfigError(f"{name}={value!r} must be a string (a path)")
    return value


def _finite(name: str, value: float) -> float:
    """``value`` when finite: TOML and ``float()`` read ``nan`` and ``inf``, which passed every
    range check (review 45: ``ingest.parse_timeout_s = nan`` skipped every file as "took longer
    than nan s", ``store.timeout_s = inf`` ended in an OverflowError traceback)."""
    if not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} must be a finite number")
    return value


def _check_int(name: str, value: int) -> None:
    """No setting takes an integer beyond :data:`~ragstrata.config.checks.MAX_INT` either way
    (a larger ``top_k`` reached native code and ended in an OverflowError)."""
    if abs(value) > MAX_INT:
        raise ConfigError(f"{name}={value!r} is too large: at most {MAX_INT:,} either way")


class _FromEnv(str):
    """A setting's text from a ``RAGSTRATA_*`` variable, which names it in errors; only such
    text is parsed as a number or a flag (a TOML ``top_k = "5"`` is a string, refused)."""

    variable: str

    def __new__(cls, value: str, variable: str) -> _FromEnv:
        text = super().__new__(cls, value)
        text.variable = variable
        return text


def _coerce(name: str, type_name: str, value: Any) -> Any:
    if not isinstance(value, _FromEnv):
        if isinstance(value, str) and type_name.split("|")[0].strip() in ("int", "float", "bool"):
            hint = "true or false" if type_name.startswith("bool") else "a number"
            raise ConfigError(f"{name}={value!r} is text; write {hint} without quotes")
        return _check_type(name, type_name, value)
    name = f"{value.variable} ({name})"
    value = str(value)
    try:
        if type_name.startswith("int"):
            if value.lower() in ("", "none") and "None" in type_name:
                return None
            number = int(value)
        if type_name.startswith("float"):
            if value.lower() in ("", "none") and "None" in type_name:
                return None
            return _finite(name, float(value))
        if type_name == "bool":
            if value.strip().lower() in ("1", "true", "yes", "on"):
                return True
            if value.strip().lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
    except ValueError as exc:
        if isinstance(exc, ConfigError):  # a number, not a finite one
            raise
        hint = {"bool": "true or false", "int": "a whole number", "float": "a number"}.get(
            type_name.split("|")[0].strip(), "another value"
        )
        raise ConfigError(f"{name}={value!r} is not a valid {type_name}; set {hint}") from exc
    if type_name.startswith("int"):
        _check_int(name, number)
        return number
    return value
