"""The MCP server's pure parts: document text from chunks, filter checks, the CLI's early errors
(the server itself is tested end to end in tests/integration/test_mcp_server.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragstrata.cli import app
from ragstrata.service.errors import InvalidRequestError
from ragstrata.service.mcp import check_filters, document_text
from ragstrata.types import Chunk

TEXT = "# Title\n\n## A\n\nFirst paragraph here.\n\n## B\n\nSecond one, longer than the first.\n"


def _chunk(start: int, end: int) -> Chunk:
    return Chunk(
        chunk_id=f"c{start}",
        doc_id="d",
        source="/x.md",
        title="Title",
        section_path=("Title",),
        text=TEXT[start:end],
        start=start,
        end=end,
        index=0,
        total=1,
        token_count=1,
        parent_id="p",
        content_hash="h",
    )


def test_document_text_joins_overlaps_once_and_gaps_with_a_blank_line() -> None:
    a_end = TEXT.index("\n\n## B")
    b_start = TEXT.index("## B")
    whole = TEXT.rstrip("\n")
    assert document_text([_chunk(b_start, len(whole)), _chunk(0, a_end)]) == whole
    # overlapping chunks (12 % overlap in the chunker) are written once
    overlap = [_chunk(0, 30), _chunk(20, 50), _chunk(25, 40), _chunk(45, len(whole))]
    assert document_text(overlap) == whole
    assert document_text([]) == ""


def test_check_filters() -> None:
    assert check_filters(None) is None and check_filters({}) is None
    ok = {"doc_id": ["a", "b"], "source": "/x.md", "language": "es", "meta.year": 2024}
    # metadata is matched as text, a number in either written form
    assert check_filters(ok) == {**ok, "meta.year": ["2024", "2024.0"]}
    for bad in ({"path": "x"}, {"meta.": "x"}, {"doc_id": []}, {"title": 1.5}, {"doc_id": [{}]}):
        with pytest.raises(InvalidRequestError):
            check_filters(bad)
    # trial 24: a number as the language crashed search and ask (a TypeError, 200 lines of
    # traceback, "Error executing tool"); "english" matched nothing, silently
    for bad in ({"language": 5}, {"language": [5, "es"]}, {"language": True}, {"doc_id": 3}):
        with pytest.raises(InvalidRequestError, match="give text"):
            check_filters(bad)
    with pytest.raises(InvalidRequestError, match="'english' is not a language code"):
        check_filters({"language": "english"})
    assert check_filters({"language": "EN"}) == {"language": "en"}
    assert check_filters({"language": ["es", " EN "]}) == {"language": ["es", "en"]}


def test_cli_rejects_a_bad_transport_and_a_missing_index(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["mcp", "--index", str(tmp_path), "--transport", "sse"])
    assert bad.exit_code == 2 and "RS101" in bad.output and "streamable-http" in bad.output
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the mcp extra is not installed")
    missing = runner.invoke(app, ["mcp", "--index", str(tmp_path / "none")])
    assert missing.exit_code == 1 and "ragstrata ingest" in missing.output


def test_cli_rejects_a_port_that_is_no_tcp_port_before_loading_anything(tmp_path: Path) -> None:
    """Trial 28: --port 99999 printed an OverflowError traceback after the models loaded."""
    for port in ("99999", "0", "-1"):
        bad = CliRunner().invoke(
            app,
            [
                "mcp",
                "--index",
                str(tmp_path / "none"),
                "--transport",
                "streamable-http",
                "--port",
                port,
            ],
        )
        assert bad.exit_code == 2 and "RS101" in bad.output and "1-65535" in bad.output, bad.output


def test_schema_errors_quote_a_long_argument_by_its_start() -> None:
    """Trial 28: a 1 MB query came back as a 1,000,096-character error."""
    from pydantic import BaseModel, Field, ValidationError

    from ragstrata.service.mcp import _schema_errors

    class Args(BaseModel):
        query: str = Field(max_length=10)

    with pytest.raises(ValidationError) as caught:
        Args(query="x" * 1_000_000)
    message = _schema_errors("search", caught.value)
    assert len(message) < 300 and "1,000,002 characters" in message, message


def test_allowed_hosts_turn_on_the_host_and_origin_checks() -> None:
    """Trial 28: on --host 0.0.0.0 the SDK checks neither Host nor Origin; --allowed-host
    turns the checks on for the names given."""
    pytest.importorskip("mcp")
    from ragstrata.errors import ConfigError
    from ragstrata.service.mcp import transport_security

    assert transport_security("0.0.0.0", ()) is None
    settings = transport_security("0.0.0.0", ["mcp.example.org:8000"])
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == ["mcp.example.org:8000"]
    assert "https://mcp.example.org:8000" in settings.allowed_origins
    assert "localhost:*" in transport_security("127.0.0.1", ["box:8000"]).allowed_hosts
    with pytest.raises(ConfigError, match="not a Host value"):
        transport_security("0.0.0.0", ["http://x/"])


def test_a_manifest_of_another_shape_is_a_corrupt_index(tmp_path: Path) -> None:
    """Trial 28: `manifest.json` = `[]` reached MCP clients as "list indices must be
    integers or slices, not str" (an untyped error)."""
    from ragstrata.errors import StoreError
    from ragstrata.index.catalog import read_manifest

    for body in ("[]", '{"documents": 5}', "7"):
        (tmp_path / "manifest.json").write_text(body, encoding="utf-8")
        with pytest.raises(StoreError, match="is corrupt"):
            read_manifest(tmp_path)
