"""Checks the stage configs share: ranges, API-key variable names, reading a key.

``read_api_key`` is one of the config package's readers of ``os.environ`` (nothing outside
:mod:`ragstrata.config` reads it).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import fields

from ragstrata.errors import ConfigError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

MAX_INT = 2**31 - 1
"""Largest integer any setting takes (TOML and ``RAGSTRATA_*`` values): a larger one reached
native code unchecked (``retrieval.top_k = 99999999999999999999`` ended in an OverflowError)."""
MAX_THREADS = 256
"""Most threads (or worker processes) a setting may ask for: each costs memory whether or not
a core runs it (``embedder.threads = 100000`` made 21,000 threads and 17 GB of memory before
doing anything); more than the machine's cores only slows the models down."""
MAX_RESULTS = 10_000
"""Most hits a ``top_k`` or ``candidates`` setting may ask for."""


def check_finite(section: str, config: object) -> None:
    """ConfigError naming ``<section>.<field>`` for a float field of the dataclass ``config``
    that is nan or infinite: they passed every range check (review 45: ``parse_timeout_s = nan``
    skipped every file, ``store.timeout_s = inf`` ended in an OverflowError). The loader checks
    TOML and ``RAGSTRATA_*`` values too; this covers a config built in Python (review 46)."""
    for field in fields(config):  # type: ignore[arg-type]
        value = getattr(config, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{section}.{field.name}={value!r} must be a finite number")


def check_count(name: str, value: int, low: int, high: int, *, what: str = "") -> None:
    """``low <= value <= high`` for an integer setting, else ConfigError naming the setting,
    the bounds and ``what`` the upper bound protects."""
    if not low <= value <= high:
        why = f" ({what})" if what else ""
        raise ConfigError(f"{name}={value!r} must be in [{low}, {high}]{why}")


def check_threads(name: str, value: int, *, low: int = 0, zero: str = "") -> None:
    """A thread (or worker) count: ``low`` to :data:`MAX_THREADS`; ``zero`` says what 0 means."""
    meaning = f"0 = {zero}; " if zero else ""
    check_count(name, value, low, MAX_THREADS, what=f"{meaning}threads cost memory")


def check_api_key_env(section: str, name: str, *, example: str) -> None:
    """``<section>.api_key_env`` must be empty or an environment variable name. The value is
    never echoed: it may be the key itself, pasted into the wrong setting."""
    if name and not _ENV_NAME.fullmatch(name):
        raise ConfigError(
            f"{section}.api_key_env (a value of {len(name)} characters) is not an environment "
            f"variable name; name the variable that holds the key (e.g. {example!r}), or leave "
            "it empty for no key"
        )


def read_api_key(name: str, env: Mapping[str, str] | None) -> str | None:
    """The value of the variable ``name`` (``os.environ`` unless ``env`` is given), stripped;
    ``None`` when ``name`` is empty or the variable unset or empty."""
    if not name:
        return None
    value = (os.environ if env is None else env).get(name, "").strip()
    return value or None


def check_range(
    name: str, value: float, low: float, high: float, *, high_open: bool = False
) -> None:
    ok = low <= value < high if high_open else low <= value <= high
    if not ok:
        bracket = ")" if high_open else "]"
        raise ConfigError(f"{name}={value!r} is out of range [{low}, {high}{bracket}")
