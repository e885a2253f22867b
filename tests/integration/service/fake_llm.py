"""A small OpenAI-compatible chat server on loopback, the LLM stand-in of the service tests.

:class:`FakeChatServer` serves ``POST /v1/chat/completions`` (streamed or not) from a
``ThreadingHTTPServer`` on 127.0.0.1 (port 0). It writes its answer from the request it gets:
it reads the ``<source id="n">`` blocks of the prompt ragstrata built, quotes the source
sentence sharing the most words with the question and cites that source's number, so whether
the citation checks out is decided by ragstrata's own code. Optional behaviour, set by the test:

- ``extra_claim``: a second sentence, citing another source, that no source supports;
- ``gate``: after ``gate_after`` streamed pieces the server waits for the event (a test sets it
  once it has *received* those pieces: proof that they were relayed, not buffered);
- ``fail_status``: answer every request with this HTTP status;
- ``break_after``: stream this many pieces, then an error event (the stream breaks off).

Everything it did is recorded in :attr:`FakeChatServer.calls` (the request body, the answer it
streamed, its pieces and the usage it reported).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SOURCE = re.compile(r'<source id="(\d+)"[^\n]*>\n(.*?)\n</source>', re.S)
_WORD = re.compile(r"\w+")


@dataclass
class Call:
    """One chat request and what the server answered."""

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased
    answer: str = ""
    pieces: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    gate_opened: bool | None = None


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


class FakeChatServer:
    """See the module docstring. ``url`` is the ``base_url`` to configure (``.../v1``)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.extra_claim: str | None = None
        self.gate: threading.Event | None = None
        self.gate_after = 2
        self.gate_timeout_s = 30.0
        self.fail_status: int | None = None
        self.break_after: int | None = None
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gone
                    fake._serve(self, body, headers)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        host, port = self.httpd.server_address[:2]
        self.url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # ------------------------------------------------------------------ the answer
    @staticmethod
    def prompt_sources(body: dict[str, Any]) -> dict[int, str]:
        """The numbered sources of the request's user message."""
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return {int(n): text for n, text in _SOURCE.findall(user)}

    @staticmethod
    def question(body: dict[str, Any]) -> str:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return user.rsplit("Question:", 1)[-1].strip()

    def answer_for(self, body: dict[str, Any]) -> str:
        """The best-matching source sentence with its label, then ``extra_claim`` citing
        another source (when there is one)."""
        sources = self.prompt_sources(body)
        asked = _words(self.question(body))
        best = max(
            (
                (len(asked & _words(sentence)), -label, sentence)
                for label, text in sources.items()
                for line in text.splitlines()
                if not line.lstrip().startswith("#")
                for sentence in _sentences(line)
            ),
            default=None,
        )
        if best is None:
            return "The sources do not contain enough information."
        label = -best[1]
        text = f"{best[2].rstrip('.')} [{label}]."
        others = sorted(set(sources) - {label})
        if self.extra_claim and others:
            text += f" {self.extra_claim.rstrip('.')} [{others[0]}]."
        return text

    @staticmethod
    def pieces(text: str) -> list[str]:
        """The answer cut like a tokenizer would: words with their following space."""
        return re.findall(r"\S+\s*", text)

    @staticmethod
    def prompt_tokens(body: dict[str, Any]) -> int:
        """The server's prompt count: words of all messages."""
        return sum(len(m["content"].split()) for m in body["messages"])

    # ------------------------------------------------------------------ HTTP
    def _serve(
        self, handler: BaseHTTPRequestHandler, body: dict[str, Any], headers: dict[str, str]
    ) -> None:
        call = Call(body, headers)
        with self._lock:
            self.calls.append(call)
        if handler.path != "/v1/chat/completions":
            self._json(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        if self.fail_status is not None:
            self._json(handler, self.fail_status, {"error": {"message": "the model crashed"}})
            return
        call.answer = self.answer_for(body)
        call.pieces = self.pieces(call.answer)
        prompt = self.prompt_tokens(body)
        call.usage = {
            "prompt_tokens": prompt,
            "completion_tokens": len(call.pieces),
            "total_tokens": prompt + len(call.pieces),
        }
        if not body.get("stream"):
            message = {"role": "assistant", "content": call.answer}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._json(handler, 200, {**_head("chat.completion"), "choices": [choice]})
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()  # HTTP/1.0: the body ends when the connection closes

        def send(data: dict[str, Any] | str) -> None:
            text = data if isinstance(data, str) else json.dumps(data)
            handler.wfile.write(f"data: {text}\n\n".encode())
            handler.wfile.flush()

        for i, piece in enumerate(call.pieces):
            if self.break_after is not None and i == self.break_after:
                send({"error": {"message": "the model server broke off", "type": "server_error"}})
                return
            if self.gate is not None and i == self.gate_after:
                call.gate_opened = self.gate.wait(self.gate_timeout_s)
            send(_chunk({"content": piece}, None))
        send(_chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            send({**_head("chat.completion.chunk"), "choices": [], "usage": call.usage})
        send("[DONE]")

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    # ------------------------------------------------------------------ life
    def start(self) -> FakeChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def reset(self) -> None:
        """Forget the calls and every scripted behaviour."""
        with self._lock:
            self.calls.clear()
        self.extra_claim = None
        self.gate = None
        self.fail_status = None
        self.break_after = None


def _head(kind: str) -> dict[str, Any]:
    return {"id": "fake-1", "object": kind, "created": 0, "model": "fake"}


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**_head("chat.completion.chunk"), "choices": [choice]}


@contextmanager
def fake_chat_server() -> Iterator[FakeChatServer]:
    """A started :class:`FakeChatServer`, stopped on exit."""
    server = FakeChatServer().start()
    try:
        yield server
    finally:
        server.stop()
