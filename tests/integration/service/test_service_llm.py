"""``ask`` over HTTP with an LLM: the service runs under uvicorn on loopback (a real socket,
so streaming is observable), the LLM is :class:`~fake_llm.FakeChatServer`, an OpenAI-compatible
server on loopback whose answer quotes the sources of the prompt ragstrata built.

Checked: the SSE stream relays the LLM's tokens while it writes them (the fake holds its third
piece until the test has received the first two), the final event and the JSON answer carry
each citation's ``verified`` (decided by ragstrata's checker), the LLM's ``usage``, the
``generator``, the version ``conflict`` and stage timings; refusals before the LLM call have
``usage: null`` and make no call; LLM failures are 502 before the stream and an ``error`` event
inside it, and the collection's read lock is released either way.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra is not installed")
pytest.importorskip("bpe_openai", reason="the llm extra is not installed")
pytest.importorskip("uvicorn", reason="the service extra is not installed")

import httpx
import uvicorn
from fake_llm import FakeChatServer, fake_chat_server
from service_helpers import BILLING, GUIDE, Service

from ragstrata.config import IngestConfig, LLMConfig, RagConfig, ServiceConfig
from ragstrata.service.app import create_app
from ragstrata.service.schemas import AskResponse

pytestmark = pytest.mark.slow

MODEL = "fake-model"
COLLECTION = "llmdocs"
VERSIONED = "versioned"
# the version is quoted: YAML reads an unquoted 1.10 as the float 1.1 (older than 1.9)
RETENTION = (
    '---\nversion: "{version}"\n---\n# Backup retention\n\n'
    "Nightly backups are kept for {days} days before they are deleted.\n"
)
UNSUPPORTED = "The billing office also prints 7 purple scrolls in Zanzibar."
"""A claim no source supports (a number and a name absent from every document)."""


@dataclass
class LLMService:
    service: Service
    fake: FakeChatServer
    headers: dict[str, str]

    def ask(self, question: str, collection: str = COLLECTION, **body: Any) -> httpx.Response:
        return self.service.client.post(
            f"/v1/collections/{collection}/ask",
            headers=self.headers,
            json={"question": question, **body},
        )


@dataclass
class Events:
    names: list[str]
    data: list[dict[str, Any]]

    @property
    def tokens(self) -> list[str]:
        return [d["text"] for n, d in zip(self.names, self.data, strict=True) if n == "token"]

    def last(self, name: str) -> dict[str, Any]:
        return next(d for n, d in zip(self.names[::-1], self.data[::-1], strict=True) if n == name)


def _uvicorn(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Iterator[LLMService]:
    root: Path = tmp_path_factory.mktemp("llm-service")
    with fake_chat_server() as fake:
        config = RagConfig(
            home=root / "home",
            ingest=IngestConfig(workers=0),
            service=ServiceConfig(rate_limit_per_s=10_000.0, rate_limit_burst=10_000),
            llm=LLMConfig(
                provider="openai",
                base_url=fake.url,
                model=MODEL,
                api_key_env="",
                max_retries=0,
                timeout_s=60,
            ),
        )
        app = create_app(config, embedder=minilm, data_dir=root)
        server, thread, url = _uvicorn(app)
        client = httpx.Client(base_url=url, timeout=120)
        try:
            service = Service(app, client, app.state.service)
            headers = service.key("acme")
            docs = {"guide.md": GUIDE, "billing.html": BILLING}
            versions = {
                "retention-old.md": RETENTION.format(version="1.9", days=14),
                "retention-new.md": RETENTION.format(version="1.10", days=30),
                "billing.html": BILLING,
            }
            for collection, texts in ((COLLECTION, docs), (VERSIONED, versions)):
                job = service.upload_texts(headers, collection, texts)
                assert job["state"] == "succeeded", job
            yield LLMService(service, fake, headers)
        finally:
            client.close()
            server.should_exit = True
            thread.join(30)
            app.state.service.close()


@pytest.fixture()
def fake(llm: LLMService) -> Iterator[FakeChatServer]:
    llm.fake.reset()
    yield llm.fake
    llm.fake.reset()


def _stream(
    llm: LLMService,
    question: str,
    *,
    collection: str = COLLECTION,
    gate: threading.Event | None = None,
) -> Events:
    """POST ask with stream=true and read the events as they arrive; opens ``gate`` once two
    token events have been received."""
    names: list[str] = []
    data: list[dict[str, Any]] = []
    with llm.service.client.stream(
        "POST",
        f"/v1/collections/{collection}/ask",
        headers=llm.headers,
        json={"question": question, "stream": True, "explain": True},
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                names.append(event)
                data.append(json.loads(line[len("data: ") :]))
                if gate is not None and names.count("token") == 2:
                    gate.set()
    return Events(names, data)


def _cited(answer: dict[str, Any], phrase: str) -> dict[str, Any]:
    """The citation whose label follows the answer's sentence containing ``phrase``."""
    sentence = next(s for s in re.split(r"(?<=[.!?])\s+", answer["answer"]) if phrase in s)
    found = re.search(r"\[(\d+)\]", sentence)
    assert found, sentence
    return next(c for c in answer["citations"] if c["label"] == int(found.group(1)))


def _check_citations(answer: dict[str, Any]) -> None:
    """ragstrata's checker: the quoted sentence is supported, the invented one is not."""
    supported, invented = _cited(answer, "ERR_CONN_RESET"), _cited(answer, "Zanzibar")
    assert len(answer["citations"]) == 2 and supported["label"] != invented["label"]
    assert supported["verified"] is True and supported["source"] == "guide.md"
    assert "upstream server closed the connection" in supported["quote"]
    assert invented["verified"] is False
    for c in (supported, invented):
        assert isinstance(c["support"], float) and 0 <= c["support"] <= 1
    assert supported["support"] > invented["support"]


def test_sse_relays_llm_tokens_as_written_then_the_checked_answer(
    llm: LLMService, fake: FakeChatServer
) -> None:
    fake.extra_claim = UNSUPPORTED
    fake.gate = threading.Event()
    fake.gate_after = 2
    events = _stream(llm, "What does the error ERR_CONN_RESET mean?", gate=fake.gate)
    (call,) = fake.calls
    # the third piece was written only after the client had received the first two
    assert call.gate_opened is True
    tokens = events.tokens
    assert len(tokens) > 1 and tokens == call.pieces
    assert events.names == ["token"] * len(tokens) + ["citations", "explain", "done"]
    done = events.last("done")
    AskResponse.model_validate(done)
    assert done["refusal"] is False and done["generator"] == f"openai:{MODEL}"
    assert done["citations"] == events.last("citations")["citations"]
    _check_citations(done)
    assert done["usage"] == call.usage and done["usage"]["completion_tokens"] == len(tokens)
    assert done["conflict"] is False and done["conflicts"] == []
    assert {"generate", "first_token", "verify", "total"} <= set(done["timings_ms"])
    assert done["timings_ms"]["first_token"] <= done["timings_ms"]["total"]
    assert "retrieval" not in done and events.last("explain")["hits"]


def test_json_ask_has_the_same_answer_as_the_stream(llm: LLMService, fake: FakeChatServer) -> None:
    fake.extra_claim = UNSUPPORTED
    question = "What does the error ERR_CONN_RESET mean?"
    response = llm.ask(question, explain=True)
    assert response.status_code == 200, response.text
    data = response.json()
    AskResponse.model_validate(data)
    call = fake.calls[-1]
    assert data["usage"] == call.usage and data["generator"] == f"openai:{MODEL}"
    _check_citations(data)
    assert data["conflict"] is False and data["retrieval"]
    assert {"generate", "verify", "total"} <= set(data["timings_ms"])
    streamed = _stream(llm, question).last("done")
    for key in ("answer", "refusal", "citations", "legend", "usage", "conflict", "generator"):
        assert streamed[key] == data[key], key
    # no server path, neither in the answer nor in the prompt sent to the LLM
    assert str(llm.service.state.data_dir) not in response.text
    assert str(llm.service.state.data_dir) not in json.dumps(call.body)
    assert 'document="guide.md"' in call.body["messages"][-1]["content"]


def test_version_conflict_keeps_the_newest_and_says_so(
    llm: LLMService, fake: FakeChatServer
) -> None:
    question = "How many days are nightly backups kept?"
    data = llm.ask(question, VERSIONED).json()
    AskResponse.model_validate(data)
    assert data["refusal"] is False, data
    assert data["conflict"] is True
    assert data["conflicts"] == [{"title": "Backup retention", "kept": "1.10", "dropped": ["1.9"]}]
    assert {c["source"] for c in data["citations"]} == {"retention-new.md"}
    assert all(c["verified"] for c in data["citations"]) and "30 days" in data["answer"]
    sources = FakeChatServer.prompt_sources(fake.calls[-1].body)
    assert not any("14 days" in text for text in sources.values())  # the old version is out
    done = _stream(llm, question, collection=VERSIONED).last("done")
    assert done["conflict"] is True and done["conflicts"] == data["conflicts"]


def test_refusal_before_generation_has_no_usage_and_calls_no_llm(
    llm: LLMService, fake: FakeChatServer
) -> None:
    question = "Who painted the Mona Lisa in the Renaissance?"
    data = llm.ask(question).json()
    AskResponse.model_validate(data)
    assert data["refusal"] is True and data["citations"] == [] and data["usage"] is None
    events = _stream(llm, question)
    assert events.tokens == [] and events.names == ["citations", "explain", "done"]
    done = events.last("done")
    assert done["refusal"] is True and done["usage"] is None and done["answer"] == data["answer"]
    assert fake.calls == []


def test_llm_failures_before_and_during_the_stream(llm: LLMService, fake: FakeChatServer) -> None:
    question = "What does the error ERR_CONN_RESET mean?"
    fake.fail_status = 500
    for body in ({}, {"stream": True}):
        response = llm.ask(question, **body)
        assert response.status_code == 502, response.text
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["error"]["code"] == "RS800"
    fake.fail_status = None
    fake.break_after = 2
    events = _stream(llm, question)
    assert events.names == ["token", "token", "error"]
    assert events.last("error")["error"]["code"] == "RS800"
    # the generator was closed: nothing holds the collection's read lock any more
    coll = next(c for c in llm.service.state.registry.opened() if c.name == COLLECTION)
    with coll._lock.write(timeout=10):
        pass
