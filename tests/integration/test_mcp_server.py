"""`ragstrata mcp` as a real subprocess, driven by the MCP SDK's own stdio client: tools are
listed and called, documents are read as resources, and the index stays writable between calls.

The index is built with the default (packaged) embedder from two tiny Markdown files, one
Spanish and one English.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from ragstrata.cli import app

pytest.importorskip("mcp.client.stdio", reason="the mcp extra is not installed")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

GUIA = (
    "# Guía de copias de seguridad\n\n## Retención\n\n"
    "Las copias de seguridad se conservan durante treinta días en el almacenamiento frío.\n\n"
    "## Restauración\n\n"
    "Para restaurar una copia, ejecute `backupctl restore` con el identificador de la copia.\n"
)
GUIDE = (
    "# Deployment guide\n\n## Rollbacks\n\n"
    "A failed deployment is rolled back automatically after three health check failures.\n\n"
    "## Regions\n\nThe service runs in two regions: eu-west and us-east.\n"
)
FAQ = "# Billing FAQ\n\n## Invoices\n\nInvoices are sent by email on the first day of each month.\n"


def _ingest(paths: list[Path], index: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", *map(str, paths), "--index", str(index)])
    assert result.exit_code == 0, result.output


@pytest.fixture()
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGSTRATA_HOME", str(tmp_path / "home"))  # no config.toml from elsewhere
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "guia.md").write_text(GUIA, encoding="utf-8")
    (corpus / "guide.md").write_text(GUIDE, encoding="utf-8")
    _ingest([corpus], tmp_path / "idx")
    return tmp_path / "idx"


def _server(index: Path) -> StdioServerParameters:
    """The server as an MCP client would start it, with this test's ragstrata settings (the SDK
    passes only a minimal environment to the child)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("RAGSTRATA_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragstrata.cli", "mcp", "--index", str(index)],
        env=env,
        cwd=str(index.parent),
    )


def _session(index: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(180):
            async with (
                stdio_client(_server(index)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await body(session)

    anyio.run(main)


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]
    return data


async def _read(session: ClientSession, uri: str) -> str:
    result = await session.read_resource(uri)
    text = result.contents[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


def test_tools_and_resources_over_stdio(index: Path) -> None:
    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"search", "ask"}
        assert set(tools["search"].input_schema["properties"]) == {
            "query",
            "top_k",
            "mode",
            "filters",
        }

        # search: the hit comes from the right file, with its section and scores
        found = await _call(
            session, "search", {"query": "¿cuánto tiempo se conservan las copias?", "top_k": 3}
        )
        top = found["hits"][0]
        assert top["source"].endswith("guia.md")
        assert top["heading_path"] == ["Guía de copias de seguridad", "Retención"]
        assert top["text"] == GUIA[top["start"] : top["end"]]
        assert set(top["explain"]) == {"dense", "bm25"} and top["score"] > 0
        assert top["page_start"] is None and top["chunk_id"]
        english = await _call(session, "search", {"query": "health check failures", "mode": "bm25"})
        assert english["mode"] == "bm25"
        assert english["hits"][0]["source"].endswith("guide.md")
        assert set(english["hits"][0]["explain"]) == {"bm25"}
        guide_id = english["hits"][0]["doc_id"]
        only_guide = await _call(
            session, "search", {"query": "copias de seguridad", "filters": {"doc_id": guide_id}}
        )
        assert {h["source"] for h in only_guide["hits"]} == {str(index.parent / "corpus/guide.md")}

        # ask: a cited answer from the Spanish file, and a refusal with its reason
        answer = await _call(
            session, "ask", {"question": "¿Cuántos días se conservan las copias de seguridad?"}
        )
        assert answer["refusal"] is False and answer["refused_by"] is None
        assert "treinta días" in answer["answer"] and "[1]" in answer["answer"]
        cited = answer["citations"][0]
        assert cited["label"] == 1 and cited["source"].endswith("guia.md")
        assert cited["heading_path"] == ["Guía de copias de seguridad", "Retención"]
        assert cited["verified"] is True and cited["chunk_id"]
        refused = await _call(session, "ask", {"question": "What is the capital of Mongolia?"})
        assert refused["refusal"] is True and refused["citations"] == []
        assert refused["refused_by"] == "evidence"

        # bad arguments come back as tool errors naming the problem
        bad = await session.call_tool("search", {"query": "x", "filters": {"path": "/etc"}})
        text = bad.content[0].text  # type: ignore[union-attr]
        # the library's coded message as the command line prints it, no SDK prefix
        assert bad.is_error and text.startswith("[RS707]"), text
        # ... arguments the input schema refuses too, without pydantic's text and link, as
        # strict as the HTTP API (a new user's "5", unknown argument and 5,000-character
        # question were accepted)
        for args, named in (
            ({"query": "x", "top_k": 0}, "top_k: Input should be greater than or equal to 1"),
            ({"query": "x", "mode": "semantic"}, "mode: Input should be"),
            ({"top_k": 3}, "query: Field required"),
            ({"query": "x", "top_k": "5"}, "top_k: Input should be a valid integer"),
            ({"query": "x", "extra": 1}, "unknown argument(s) extra"),
            ({"query": "x" * 2001}, "query: String should have at most 2000 characters"),
        ):
            bad = await session.call_tool("search", args)
            text = bad.content[0].text  # type: ignore[union-attr]
            assert bad.is_error and "[RS707] invalid arguments for search" in text, text
            assert named in text and "pydantic" not in text, text

        # resources: the catalog, one document's text, one cited chunk
        listed = {str(r.uri) for r in (await session.list_resources()).resources}
        catalog = json.loads(await _read(session, "ragstrata://documents"))
        assert [Path(d["source"]).name for d in catalog] == ["guia.md", "guide.md"]
        assert {d["uri"] for d in catalog} | {"ragstrata://documents"} == listed
        guia_id = catalog[0]["doc_id"]
        assert cited["doc_id"] == guia_id
        assert await _read(session, f"ragstrata://documents/{guia_id}") == GUIA.rstrip("\n")
        chunk = json.loads(await _read(session, f"ragstrata://chunks/{cited['chunk_id']}"))
        assert chunk["text"].endswith(cited["quote"]) and chunk["source"].endswith("guia.md")
        with pytest.raises(MCPError, match="RS706"):
            await session.read_resource("ragstrata://documents/0000000000000000")
        # a malformed chunk id is an unknown one (a new user got a generic error and a
        # 150-line traceback on the server's stderr)
        for bad in ("nope", cited["chunk_id"][:12]):
            with pytest.raises(MCPError, match="RS706"):
                await session.read_resource(f"ragstrata://chunks/{bad}")

        # the index is not held between calls: an ingest runs while the server is up
        faq = index.parent / "faq.md"
        faq.write_text(FAQ, encoding="utf-8")
        _ingest([faq], index)
        catalog = json.loads(await _read(session, "ragstrata://documents"))
        assert len(catalog) == 3
        billing = await _call(session, "search", {"query": "invoices email", "top_k": 1})
        assert billing["hits"][0]["source"].endswith("faq.md")

    _session(index, body)
