"""Concurrent reads on one collection (one Qdrant Edge shard, many threads) give exactly the
sequential results, and reads running beside an ingest job wait for it instead of failing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from service_helpers import BILLING, GUIDE, Service, ServiceFactory

from ragstrata.service.keys import Principal

pytestmark = pytest.mark.slow

QUERIES = (
    "ERR_CONN_RESET",
    "When are invoices sent?",
    "rate limit per minute",
    "upstream server closed the connection",
    "email",
    "What does the error mean?",
)


def test_threaded_reads_match_sequential_reads(service: Service) -> None:
    headers = service.key("acme")
    more = {
        f"note-{i}.md": f"# Note {i}\n\nNote {i} says the retry delay is {i} seconds.\n"
        for i in range(8)
    }
    job = service.upload_texts(headers, "docs", {"guide.md": GUIDE, "billing.html": BILLING} | more)
    assert job["state"] == "succeeded", job
    principal = service.state.keys.verify(headers["Authorization"].removeprefix("Bearer "))
    collection = service.state.registry.collection(principal, "docs")

    def run(query: str) -> tuple[str, list[str], list[float], str]:
        result = collection.search(query, top_k=8)
        answer = collection.ask(query).answer
        return (
            query,
            [h.chunk.chunk_id for h in result.hits],
            [h.score for h in result.hits],
            answer.text,
        )

    expected = {q: run(q) for q in QUERIES}
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, QUERIES * 6))
    for got in results:
        assert got == expected[got[0]], got[0]


def test_reads_wait_for_a_running_ingest(service: Service) -> None:
    headers = service.key("acme")
    assert service.upload_texts(headers, "docs", {"guide.md": GUIDE})["state"] == "succeeded"
    principal = Principal("test", "acme", ("read",))
    collection = service.state.registry.collection(principal, "docs")
    docs = {
        f"page-{i}.md": f"# Page {i}\n\n" + f"Paragraph {i} about invoices. " * 60
        for i in range(12)
    }
    body = {"documents": [{"name": n, "text": t} for n, t in docs.items()]}
    response = service.client.post("/v1/collections/docs/documents", headers=headers, json=body)
    assert response.status_code == 202
    errors: list[BaseException] = []
    counts: list[int] = []

    def reader() -> None:
        try:
            for _ in range(5):
                counts.append(len(collection.search("invoices", top_k=20).hits))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    job = service.wait(headers, response.json()["job_id"])
    assert job["state"] == "succeeded" and not errors, errors
    assert len(counts) == 20
    after = collection.search("Paragraph about invoices", top_k=40)  # every chunk
    assert {h.chunk.source.rsplit("/", 1)[-1] for h in after.hits} >= {"page-0.md", "page-11.md"}


def test_read_gives_503_when_a_write_outlasts_read_wait(service_factory: ServiceFactory) -> None:
    service = service_factory(read_wait_s=0.2)
    headers = service.key("acme")
    assert service.upload_texts(headers, "docs", {"guide.md": GUIDE})["state"] == "succeeded"
    collection = service.state.registry.collection(Principal("t", "acme", ("read",)), "docs")
    with collection._lock.write():  # what an ingest job holds while it runs
        response = service.client.post(
            "/v1/collections/docs/search", headers=headers, json={"query": "ERR_CONN_RESET"}
        )
    assert response.status_code == 503 and response.json()["error"]["code"] == "RS503"
    assert response.headers["retry-after"] == "2"
    again = service.client.post(
        "/v1/collections/docs/search", headers=headers, json={"query": "ERR_CONN_RESET"}
    )
    assert again.status_code == 200


def test_an_index_held_by_another_process_is_503_without_server_paths() -> None:
    """A new user's second server held the collections: every ask answered 503 with the
    server's data path and a wrong cause; the upload job's own lock keeps its message."""
    import json

    from ragstrata.errors import IndexLockedError
    from ragstrata.service.errors import CollectionBusyError
    from ragstrata.service.handlers import _rag_error

    held = _rag_error(IndexLockedError("cannot open the index at /srv/data/tenants/acme/kb/index"))
    body = json.loads(held.body)
    assert held.status_code == 503 and held.headers["retry-after"] == "2"
    assert body["error"]["code"] == "RS503" and "/srv" not in body["error"]["message"]
    assert "another process" in body["error"]["message"]
    busy = _rag_error(CollectionBusyError("collection 'kb' is being written"))
    assert json.loads(busy.body)["error"]["message"] == "collection 'kb' is being written"
