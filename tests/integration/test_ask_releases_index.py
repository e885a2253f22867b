"""``ask`` with an LLM, the LLM being the loopback OpenAI-compatible stand-in of the service
tests and the index the real embedded one: the index is released while the model writes (trial
25, 2026-12-06: an ``eval-answers`` beside a local ``ask`` failed with RS503 and searches waited
out the generation), and the command line names a sentence that failed its check."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ragstrata.config import IngestConfig, LLMConfig, RagConfig
from ragstrata.generate.answerer import AnswerEvent
from ragstrata.index.catalog import IndexLock
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow


def test_the_index_is_free_while_the_llm_writes(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("bpe_openai")
    from integration.service.fake_llm import fake_chat_server

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vacaciones.md").write_text(
        "# Vacaciones\n\nCada empleado tiene derecho a 23 días laborables de vacaciones al "
        "año. Las vacaciones se piden en el portal Kairos con 15 días de antelación.\n",
        encoding="utf-8",
    )
    index = tmp_path / "idx"
    plain = RagConfig(home=tmp_path / "home", ingest=IngestConfig(workers=0)).with_index(index)
    with Ragstrata(plain) as engine:
        engine.ingest([docs])
    with fake_chat_server() as server:
        server.gate, server.gate_after = threading.Event(), 1
        cfg = RagConfig(
            home=tmp_path / "home",
            ingest=IngestConfig(workers=0),
            llm=LLMConfig(
                provider="openai",
                base_url=server.url,
                model="fake",
                api_key_env="",
                max_retries=0,
                timeout_s=60,
            ),
        ).with_index(index)
        answers: list[Any] = []

        def ask() -> None:
            with Ragstrata(cfg) as engine:
                for event in engine.ask_stream(
                    "¿Cuántos días de vacaciones tiene cada empleado?", release_index=True
                ):
                    if isinstance(event, AnswerEvent):
                        answers.append(event.answer)

        thread = threading.Thread(target=ask)
        thread.start()
        for _ in range(600):  # until the LLM is writing (held at its gate)
            if server.calls and server.calls[-1].pieces:
                break
            threading.Event().wait(0.05)
        threading.Event().wait(0.3)
        lock = IndexLock.acquire(index, wait_s=0)  # IndexLockedError while ask held it
        lock.release()
        server.gate.set()
        thread.join(60)
    assert answers and not answers[0].refusal and "[1]" in answers[0].text, answers


def test_ask_names_the_sentence_that_failed_its_check(tmp_path: Path) -> None:
    """Trial 25 (2026-12-06): the human output marked a shared citation "NOT verified" and did
    not say which sentence failed."""
    pytest.importorskip("openai")
    pytest.importorskip("bpe_openai")
    from typer.testing import CliRunner

    from integration.service.fake_llm import fake_chat_server
    from ragstrata.cli import app

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vacaciones.md").write_text(
        "# Vacaciones\n\nCada empleado tiene derecho a 23 días laborables de vacaciones al año.\n",
        encoding="utf-8",
    )
    (docs / "kairos.md").write_text(
        "# Kairos\n\nLas solicitudes de vacaciones se hacen en el portal interno Kairos.\n",
        encoding="utf-8",
    )
    index = tmp_path / "idx"
    env = {"RAGSTRATA_HOME": str(tmp_path / "home"), "RAGSTRATA_INGEST_WORKERS": "0"}
    assert (
        CliRunner().invoke(app, ["ingest", str(docs), "--index", str(index)], env=env).exit_code
        == 0
    )
    with fake_chat_server() as server:
        server.extra_claim = "La luna está hecha de queso y cuesta 42 euros."
        llm = {
            "RAGSTRATA_LLM_PROVIDER": "openai",
            "RAGSTRATA_LLM_BASE_URL": server.url,
            "RAGSTRATA_LLM_MODEL": "fake",
            "RAGSTRATA_LLM_API_KEY_ENV": "",
            "RAGSTRATA_LLM_MAX_RETRIES": "0",
        }
        result = CliRunner().invoke(
            app,
            [
                "ask",
                "¿Cuántos días de vacaciones tiene cada empleado al año?",
                "--index",
                str(index),
                "--no-stream",
            ],
            env=env | llm,
        )
    assert result.exit_code == 0, result.output
    # --no-stream: one request for the whole answer (a proxy that does not stream), and no
    # key configured: no Authorization header (was "Bearer not-needed")
    assert [call.body.get("stream") for call in server.calls] == [None]
    assert "authorization" not in server.calls[0].headers
    assert "not supported La luna está hecha de queso y cuesta 42 euros." in result.output
    assert "42" in result.output.split("not supported", 1)[1]  # what the source lacks
