"""While an upload job writes a collection's embedded index, searches over HTTP keep answering
(from the last committed state the job published) instead of waiting for the job and failing
with 503 after ``service.read_wait_s``."""

from __future__ import annotations

import time

import pytest
from service_helpers import GUIDE, ServiceFactory

from ragstrata.service.keys import Principal

pytestmark = pytest.mark.slow


def test_searches_answer_while_an_upload_job_writes(service_factory: ServiceFactory) -> None:
    service = service_factory(read_wait_s=0.2)  # the old behaviour: 503 after 0.2 s
    headers = service.key("acme")
    assert service.upload_texts(headers, "docs", {"guide.md": GUIDE})["state"] == "succeeded"
    collection = service.state.registry.collection(Principal("t", "acme", ("read",)), "docs")
    docs = {
        f"page-{i}.md": f"# Page {i}\n\n"
        + "\n\n".join(f"## Part {s}\n\nInvoice {i}-{s} is sent monthly." for s in range(10))
        for i in range(60)
    }  # about 600 chunks: several commits
    body = {"documents": [{"name": n, "text": t} for n, t in docs.items()]}
    response = service.client.post("/v1/collections/docs/documents", headers=headers, json=body)
    assert response.status_code == 202
    job_id = response.json()["job_id"]
    statuses: list[int] = []
    during = 0
    while True:
        job = service.client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] not in ("queued", "running"):
            break
        writing = collection._writing
        search = service.client.post(
            "/v1/collections/docs/search", headers=headers, json={"query": "invoice sent"}
        )
        statuses.append(search.status_code)
        during += writing and collection._writing
        time.sleep(0.05)
    assert job["state"] == "succeeded", job
    assert during >= 3, (during, statuses)
    assert set(statuses) == {200}, statuses
