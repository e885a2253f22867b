"""A command-line ``ask`` with an LLM releases the index while the model writes (trial 25,
2026-12-06: an ``eval-answers`` beside a local ``ask`` failed with RS503 and searches waited
out the generation). The LLM is the loopback OpenAI-compatible stand-in of the service tests,
held mid-answer by its gate; the index is the real embedded one."""

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
