"""``ragstrata keys create/list/revoke`` against a data directory."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragstrata.cli import app
from ragstrata.service.keys import KEYS_FILE, KeyStore


def test_keys_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    data = str(tmp_path / "data")
    created = runner.invoke(
        app, ["keys", "create", "--tenant", "acme", "--name", "bot", "--data-dir", data, "--json"]
    )
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert record["tenant"] == "acme" and record["scopes"] == ["read", "write"]
    store = KeyStore(tmp_path / "data" / KEYS_FILE)
    assert store.verify(record["key"]).tenant == "acme"

    listed = runner.invoke(app, ["keys", "list", "--data-dir", data, "--json"])
    assert listed.exit_code == 0
    assert [r["key_id"] for r in json.loads(listed.stdout)] == [record["key_id"]]
    assert record["key"] not in listed.stdout

    revoked = runner.invoke(app, ["keys", "revoke", record["key_id"], "--data-dir", data])
    assert revoked.exit_code == 0
    assert json.loads(runner.invoke(app, ["keys", "list", "--data-dir", data, "--json"]).stdout)[0][
        "revoked"
    ]

    bad = runner.invoke(app, ["keys", "create", "--tenant", "Not Valid", "--data-dir", data])
    assert bad.exit_code == 2 and "RS101" in bad.output
    missing = runner.invoke(app, ["keys", "revoke", "ffffffffffff", "--data-dir", data])
    assert missing.exit_code == 1 and "RS706" in missing.output


def test_keys_create_with_scopes(tmp_path: Path) -> None:
    runner = CliRunner()
    data = str(tmp_path / "data")
    args = ["keys", "create", "--tenant", "ops", "--data-dir", data, "--json"]
    created = runner.invoke(app, [*args, "--scopes", "metrics"])
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["scopes"] == ["metrics"]
    every = runner.invoke(app, [*args, "--scopes", "read, write,metrics"])
    assert json.loads(every.stdout)["scopes"] == ["read", "write", "metrics"]
    bad = runner.invoke(app, [*args, "--scopes", "admin"])
    assert bad.exit_code == 2 and "RS101" in bad.output
