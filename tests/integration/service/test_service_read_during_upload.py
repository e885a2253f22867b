"""While an upload job writes a collection's embedded index, searches over HTTP keep answering
from the last committed state the job published, instead of waiting for the job to end."""

from __future__ import annotations

import time

import pytest
from service_helpers import GUIDE, ServiceFactory

pytestmark = pytest.mark.slow


def test_searches_answer_while_an_upload_job_writes(service_factory: ServiceFactory) -> None:
    service = service_factory()
    headers = service.key("acme")
    assert service.upload_texts(headers, "docs", {"guide.md": GUIDE})["state"] == "succeeded"
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
    during: list[float] = []  # latencies (ms) of searches begun and ended while the job ran
    while True:
        job = service.client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] not in ("queued", "running"):
            break
        started = time.perf_counter()
        search = service.client.post(
            "/v1/collections/docs/search", headers=headers, json={"query": "invoice sent"}
        )
        ms = (time.perf_counter() - started) * 1000
        statuses.append(search.status_code)
        after = service.client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] == after["state"] == "running":
            during.append(ms)
        time.sleep(0.05)
    assert job["state"] == "succeeded", job
    assert set(statuses) == {200}, statuses
    assert len(during) >= 3, (during, statuses)  # reads no longer wait for the job to end
    print(f"searches={len(statuses)} during_job={len(during)} max_ms={max(during):.0f}")
