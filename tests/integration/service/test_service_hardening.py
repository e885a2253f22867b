"""Service hardening (issue 17 items 3 and 8, issue 18's failed-upload edge): fair ingestion
across tenants with a bounded queue per tenant, wrong-secret budgets per key id and per address
(every 429 counted), ``DELETE`` of a collection, no empty collection after a failed first
upload, ``/metrics`` behind a key and an API reference page that loads nothing from a CDN."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from service_helpers import GUIDE, Service, ServiceFactory

pytestmark = pytest.mark.slow


def _docs(prefix: str, n: int) -> dict[str, str]:
    return {
        f"{prefix}-{i:03d}.md": f"# {prefix} note {i}\n\nThe {prefix} ledger entry {i} records "
        f"a shipment of {i * 7} crates to warehouse {i % 5}.\n"
        for i in range(n)
    }


def _post_texts(
    service: Service, headers: dict[str, str], collection: str, docs: dict[str, str]
) -> Any:
    body = {"documents": [{"name": n, "text": t} for n, t in docs.items()]}
    return service.client.post(
        f"/v1/collections/{collection}/documents", headers=headers, json=body
    )


def _samples(metrics_text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(metrics_text)
        for s in f.samples
    }


# ---------------------------------------------------------------------------- fair queues
def test_small_upload_of_one_tenant_finishes_before_another_tenants_large_job(
    service_factory: ServiceFactory,
) -> None:
    service = service_factory(ingest_batch_files=1)
    acme, globex = service.key("acme"), service.key("globex")
    large = _post_texts(service, acme, "acme-ledger", _docs("acme", 10))
    assert large.status_code == 202, large.text
    small = _post_texts(service, globex, "globex-kb", {"guide.md": GUIDE})
    assert small.status_code == 202, small.text
    small_job = service.wait(globex, small.json()["job_id"])
    large_now = service.client.get(f"/v1/jobs/{large.json()['job_id']}", headers=acme).json()
    # on one worker, FIFO would run all 10 of acme's files first
    assert small_job["state"] == "succeeded", small_job
    assert large_now["state"] == "running", large_now
    assert large_now["progress"]["files_done"] < 10
    large_job = service.wait(acme, large.json()["job_id"])
    assert large_job["state"] == "succeeded", large_job
    assert small_job["finished"] < large_job["finished"]
    # the slices add up to one job: every file reported once, the report summed
    assert sorted(f["name"] for f in large_job["files"]) == sorted(_docs("acme", 10))
    assert large_job["report"]["added"] == 10
    assert large_job["progress"]["files_done"] == 10
    listed = service.client.get("/v1/collections/acme-ledger/documents", headers=acme).json()
    assert len(listed["documents"]) == 10


def test_a_tenants_job_queue_is_bounded_with_429_and_others_go_on(
    service_factory: ServiceFactory,
) -> None:
    service = service_factory(ingest_batch_files=1, max_jobs_per_tenant=1)
    acme, globex = service.key("acme"), service.key("globex")
    first = _post_texts(service, acme, "acme-ledger", _docs("acme", 6))
    assert first.status_code == 202
    refused = _post_texts(service, acme, "acme-ledger", {"late.md": GUIDE})
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "RS703"
    assert "service.max_jobs_per_tenant=1" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1
    other = _post_texts(service, globex, "globex-kb", {"guide.md": GUIDE})
    assert other.status_code == 202  # another tenant's queue is its own
    assert service.wait(globex, other.json()["job_id"])["state"] == "succeeded"
    assert service.wait(acme, first.json()["job_id"])["state"] == "succeeded"
    again = _post_texts(service, acme, "acme-ledger", {"late.md": GUIDE})
    assert again.status_code == 202  # room again once the job ended
    service.wait(acme, again.json()["job_id"])
    samples = _samples(service.metrics())
    assert samples[("ragstrata_rate_limited_total", ())] == 1


# ---------------------------------------------------------------------------- key budgets
def test_flood_of_wrong_secrets_does_not_starve_other_keys(service_factory: ServiceFactory) -> None:
    service = service_factory(auth_failure_burst=10, auth_failure_rate_per_s=0.01)
    acme = service.key("acme")
    attacker = TestClient(service.app, client=("10.0.0.66", 40000))
    legit = TestClient(service.app, client=("10.0.0.7", 40001))
    assert legit.get("/v1/collections", headers=acme).status_code == 200  # verified, cached
    wrong = {"Authorization": acme["Authorization"][:-4] + "AAAA"}
    if wrong == acme:
        wrong = {"Authorization": acme["Authorization"][:-4] + "BBBB"}
    flood: list[int] = []
    others: list[int] = []
    for i in range(60):
        flood.append(attacker.get("/v1/collections", headers=wrong).status_code)
        if i % 6 == 0:  # a new tenant's new key (never verified before) and the known one
            fresh = service.key(f"tenant-{i}")
            others.append(legit.get("/v1/collections", headers=fresh).status_code)
            others.append(legit.get("/v1/collections", headers=acme).status_code)
    assert flood.count(401) == 10 and flood.count(429) == 50, flood
    assert others == [200] * 20, others
    # the attacker's address is out of budget for any key id, the others are not
    globex = service.key("globex")
    assert attacker.get("/v1/collections", headers=globex).status_code == 429
    assert legit.get("/v1/collections", headers=globex).status_code == 200
    # as after a restart (nothing cached), acme's owner still gets in from a clean address
    service.state.keys._verified.clear()
    owner = TestClient(service.app, client=("10.0.0.9", 40002))
    assert owner.get("/v1/collections", headers=acme).status_code == 200
    samples = _samples(service.metrics())
    refused = sum(
        v
        for (name, labels), v in samples.items()
        if name == "ragstrata_http_requests_total" and ("status", "429") in labels
    )
    assert refused == 51
    assert samples[("ragstrata_rate_limited_total", ())] == refused  # every 429 counted


# ---------------------------------------------------------------------------- delete
def test_another_tenants_small_upload_runs_during_a_large_files_slice(
    service_factory: ServiceFactory,
) -> None:
    """A new user's run (2026-12-06): one ingest worker, a 5 MB file's slice (tens of
    minutes) and another tenant's 6-byte upload queued the whole time."""
    service = service_factory()
    acme, globex = service.key("acme"), service.key("globex")
    sections = "".join(
        f"## Lot {i}\n\nLot {i} holds {i * 5} boxes of part {i % 13} for line {i % 4}.\n\n"
        for i in range(4000)
    )
    upload = _post_texts(
        service, acme, "large", {"a-notes.md": GUIDE, "big.md": "# Lots\n\n" + sections}
    )
    big_id = upload.json()["job_id"]
    for _ in range(1200):  # until the large slice is committing
        big = service.client.get(f"/v1/jobs/{big_id}", headers=acme).json()
        if big["progress"]["chunks_committed"] > 0:
            break
        time.sleep(0.05)
    small = service.upload_texts(globex, "small", {"guide.md": GUIDE})
    assert small["state"] == "succeeded", small
    big = service.client.get(f"/v1/jobs/{big_id}", headers=acme).json()
    assert big["state"] == "running", big  # the small one did not wait for its end
    # the large file went on after its turn, from its last commit, to a whole document
    big = service.wait(acme, big_id, timeout_s=600)
    assert big["state"] == "succeeded", big
    assert sorted((f["name"], f["status"]) for f in big["files"]) == [
        ("a-notes.md", "indexed"),
        ("big.md", "indexed"),
    ]
    listed = service.client.get("/v1/collections/large/documents", headers=acme).json()
    docs = {d["name"]: d for d in listed["documents"]}
    assert sorted(docs) == ["a-notes.md", "big.md"] and all(d["complete"] for d in docs.values())
    chunks = sum(d["chunks"] for d in docs.values())
    assert chunks == big["progress"]["chunks_committed"]
    # the report sums the turns: the notes the first turn indexed whole are not "unchanged"
    report = big["report"]
    assert (report["added"], report["updated"], report["unchanged"]) == (2, 0, 0), report
    assert report["chunks"] == chunks, report
    hits = service.client.post(
        "/v1/collections/large/search", headers=acme, json={"query": "Lot 3999 holds", "top_k": 3}
    ).json()["hits"]
    assert any("Lot 3999 holds" in h["text"] for h in hits)


def test_delete_collection_removes_documents_and_frees_the_name(service: Service) -> None:
    acme, globex = service.key("acme"), service.key("globex")
    reader = service.key("acme", read_only=True)
    job = service.upload_texts(acme, "shared-name", {"guide.md": GUIDE})
    assert job["state"] == "succeeded"
    path = service.state.registry.root / "acme" / "shared-name"
    assert (path / "index").is_dir()
    c = service.client
    assert c.delete("/v1/collections/shared-name", headers=reader).status_code == 403
    assert c.delete("/v1/collections/shared-name", headers=globex).status_code == 403
    response = c.delete("/v1/collections/shared-name", headers=acme)
    assert response.status_code == 200, response.text
    deleted = response.json()
    assert deleted["deleted"]["name"] == "shared-name"
    assert deleted["deleted"]["documents"] == 1 and deleted["deleted"]["chunks"] >= 1
    assert deleted["jobs_cancelled"] == 0
    assert not path.exists()
    assert c.get("/v1/collections/shared-name", headers=acme).status_code == 404
    assert c.get("/v1/collections", headers=acme).json()["collections"] == []
    assert c.delete("/v1/collections/shared-name", headers=acme).status_code == 404
    # the name is free for another tenant, whose collection starts empty
    job = service.upload_texts(globex, "shared-name", {"other.md": "# Other\n\nNothing shared."})
    assert job["state"] == "succeeded"
    hits = c.post(
        "/v1/collections/shared-name/search", headers=globex, json={"query": "ERR_CONN_RESET"}
    ).json()["hits"]
    assert all(h["source"] == "other.md" for h in hits)


def test_delete_collection_cancels_its_queued_job(service_factory: ServiceFactory) -> None:
    service = service_factory(ingest_batch_files=1)
    acme = service.key("acme")
    upload = _post_texts(service, acme, "big", _docs("big", 20))
    assert upload.status_code == 202
    response = service.client.delete("/v1/collections/big", headers=acme)
    assert response.status_code == 200, response.text
    assert response.json()["jobs_cancelled"] == 1
    job = service.wait(acme, upload.json()["job_id"])
    assert job["state"] == "cancelled" and job["error"]["code"] == "RS706"
    # no file is listed as indexed in a collection that is gone (trial 24)
    assert {f["status"] for f in job["files"]} == {"not_indexed"}, job["files"]
    assert not (service.state.registry.root / "acme" / "big").exists()
    assert service.client.get("/v1/collections", headers=acme).json()["collections"] == []


def test_delete_stops_a_running_upload_and_the_list_leaves_it_out(
    service_factory: ServiceFactory,
) -> None:
    """A new user's run (2026-12-06): DELETE of a collection whose one large file was being
    embedded answered after the whole file was indexed (115 s for 623 chunks; minutes for a
    5 MB file), and meanwhile GET /v1/collections answered 404 for the whole tenant."""
    service = service_factory()
    acme = service.key("acme")
    assert service.upload_texts(acme, "kept", {"guide.md": GUIDE})["state"] == "succeeded"
    sections = "".join(
        f"## Section {i}\n\nThe ledger entry {i} records a shipment of {i * 7} crates to "
        f"warehouse {i % 5}, signed by clerk {i % 11} on dock {i % 3}.\n\n"
        for i in range(3000)
    )
    upload = _post_texts(service, acme, "doomed", {"big.md": "# Ledger\n\n" + sections})
    assert upload.status_code == 202, upload.text
    job_id = upload.json()["job_id"]
    for _ in range(600):  # until its chunks are being embedded
        progress = service.client.get(f"/v1/jobs/{job_id}", headers=acme).json()["progress"]
        if progress["chunks_embedded"] > 0:
            break
        time.sleep(0.05)
    queued = progress["chunks_queued"]
    # the one file is parsed, not indexed: the job is not done (it read 1.0, trial 21)
    assert progress["fraction"] < 1.0, progress
    registry = service.state.registry
    from ragstrata.service.keys import Principal

    listed: list[list[str]] = []
    real_destroy = registry.delete

    def delete_and_look(principal: Principal, name: str, *, cancel_jobs: Any) -> Any:
        def cancel() -> int:  # the list while the delete is under way
            listed.append([c.name for c in registry.collections(principal)])
            return int(cancel_jobs())

        return real_destroy(principal, name, cancel_jobs=cancel)

    registry.delete = delete_and_look  # type: ignore[method-assign]
    response = service.client.delete("/v1/collections/doomed", headers=acme)
    assert response.status_code == 200, response.text
    assert listed == [["kept"]]
    deleted = response.json()["deleted"]
    # the running slice stopped before the end of the file
    assert queued > 1000 and deleted["chunks"] < queued, (deleted, queued)
    job = service.wait(acme, job_id)
    assert job["state"] == "cancelled" and job["error"]["code"] == "RS706"
    assert not (registry.root / "acme" / "doomed").exists()
    listing = service.client.get("/v1/collections", headers=acme).json()["collections"]
    assert [c["name"] for c in listing] == ["kept"]


def test_a_stopped_server_names_a_partly_indexed_upload(service_factory: ServiceFactory) -> None:
    """A server stop in the middle of a large file: the job names the file not_indexed as
    partly indexed, and the document list marks it incomplete (it was listed as any other)."""
    service = service_factory()
    acme = service.key("acme")
    sections = "".join(
        f"## Part {i}\n\nInvoice {i} lists {i * 3} pallets shipped from depot {i % 7}.\n\n"
        for i in range(3000)
    )
    upload = _post_texts(service, acme, "stopped", {"big.md": "# Invoices\n\n" + sections})
    job_id = upload.json()["job_id"]
    for _ in range(1200):  # until a first commit landed
        job = service.client.get(f"/v1/jobs/{job_id}", headers=acme).json()
        if job["progress"]["chunks_committed"] > 0:
            break
        time.sleep(0.05)
    service.state.jobs.shutdown()  # what SIGTERM does
    job = service.client.get(f"/v1/jobs/{job_id}", headers=acme).json()
    assert job["state"] == "cancelled" and job["error"]["code"] == "RS710", job
    (big,) = job["files"]
    assert big["status"] == "not_indexed" and "partly indexed" in big["reason"], big
    listed = service.client.get("/v1/collections/stopped/documents", headers=acme).json()
    (doc,) = listed["documents"]
    assert doc["name"] == "big.md" and doc["complete"] is False and doc["chunks"] > 0
    # the report counts what the stopped slice committed (trial 24: 74 chunks reported, 98
    # in the collection)
    assert job["report"]["chunks"] == doc["chunks"], job["report"]


def test_a_delete_the_server_stopped_during_is_finished(service: Service) -> None:
    """A server killed while a DELETE waited brought the collection back after its restart,
    holding what the cancelled ingest had committed."""
    acme = service.key("acme")
    assert service.upload_texts(acme, "revenant", {"guide.md": GUIDE})["state"] == "succeeded"
    path = service.state.registry.root / "acme" / "revenant"
    service.state.registry.close()  # as a stopped server: nothing open
    (path / ".deleting").touch()  # what DELETE writes first
    c = service.client
    assert c.get("/v1/collections", headers=acme).json()["collections"] == []
    assert c.get("/v1/collections/revenant", headers=acme).status_code == 404
    assert not path.exists()
    # an upload to an unfinished delete's name finishes it, then creates the name afresh
    assert service.upload_texts(acme, "first", {"guide.md": GUIDE})["state"] == "succeeded"
    first = service.state.registry.root / "acme" / "first"
    service.state.registry.close()
    (first / ".deleting").touch()
    other = {"other.md": "# Other\n\nA different page about tide tables.\n"}
    assert service.upload_texts(acme, "first", other)["state"] == "succeeded"
    listed = c.get("/v1/collections/first/documents", headers=acme).json()["documents"]
    assert [d["name"] for d in listed] == ["other.md"], listed


def test_failed_first_upload_leaves_no_collection(service: Service) -> None:
    acme, globex = service.key("acme"), service.key("globex")
    binary = b"\x00\x01\x02\xff" * 64
    response = service.client.post(
        "/v1/collections/reserved/documents",
        headers=acme,
        files=[("files", ("broken.md", binary, "text/markdown"))],
    )
    assert response.status_code == 202, response.text
    job = service.wait(acme, response.json()["job_id"])
    assert job["state"] == "failed", job
    # the job says why at its own level too (it was null: the reason was only per file)
    assert job["error"]["code"] == job["files"][0]["code"], job
    assert "none of the 1 files was indexed" in job["error"]["message"]
    assert service.client.get("/v1/collections", headers=acme).json()["collections"] == []
    assert service.client.get("/v1/collections/reserved", headers=acme).status_code == 404
    assert not (service.state.registry.root / "acme" / "reserved").exists()
    # the name was not reserved: another tenant takes it
    assert service.upload_texts(globex, "reserved", {"guide.md": GUIDE})["state"] == "succeeded"
    # a failed upload into a collection that holds documents leaves it as it was
    response = service.client.post(
        "/v1/collections/reserved/documents",
        headers=globex,
        files=[("files", ("broken.md", binary, "text/markdown"))],
    )
    assert service.wait(globex, response.json()["job_id"])["state"] == "failed"
    listed = service.client.get("/v1/collections", headers=globex).json()["collections"]
    assert [(c["name"], c["documents"]) for c in listed] == [("reserved", 1)]


def test_a_file_over_max_file_bytes_is_refused_at_upload(service: Service) -> None:
    """A 33 MB upload was accepted (202) and failed later in its job, although its size was
    known when it arrived."""
    acme = service.key("acme")
    limit = service.state.config.ingest.max_file_bytes
    big = b"palabra " * (limit // 8 + 1)
    files = [
        ("files", ("big.txt", big, "text/plain")),
        ("files", ("guide.md", GUIDE.encode(), "text/markdown")),
    ]
    response = service.client.post("/v1/collections/sized/documents", headers=acme, files=files)
    assert response.status_code == 202, response.text
    job = service.wait(acme, response.json()["job_id"])
    status = {f["name"]: (f["status"], f.get("code")) for f in job["files"]}
    assert status["big.txt"] == ("failed", "RS204") and status["guide.md"][0] == "indexed"
    alone = service.client.post("/v1/collections/sized/documents", headers=acme, files=[files[0]])
    assert alone.status_code == 422 and "max_file_bytes" in alone.text, alone.text
    assert alone.json()["error"]["code"] == "RS204"  # the file's own code, as in a job


def test_an_upload_queueing_its_job_keeps_the_new_collection(service: Service) -> None:
    """The window between creating a collection and queueing its job: another job's failure
    must not discard the collection then (the upload pins it)."""
    from ragstrata.service.keys import Principal

    registry = service.state.registry
    principal = Principal("k", "acme", ("read", "write"))
    with registry.pinned(principal, "fresh", create=True) as coll:
        assert not registry.discard_if_empty(coll, busy=lambda: False)
        assert coll.root.is_dir()
    assert registry.discard_if_empty(coll, busy=lambda: False)  # empty and unpinned
    assert not coll.root.exists()


# ---------------------------------------------------------------------------- exposure
def test_metrics_need_a_metrics_key_unless_public(service_factory: ServiceFactory) -> None:
    private = service_factory()
    acme = private.key("acme")
    assert private.client.get("/metrics").status_code == 401
    denied = private.client.get("/metrics", headers=acme)
    assert denied.status_code == 403 and "--scopes metrics" in denied.json()["error"]["message"]
    assert "ragstrata_http_requests_total" in private.metrics()
    public = service_factory(metrics_public=True)
    assert public.client.get("/metrics").status_code == 200


def test_api_reference_loads_nothing_from_outside(service: Service) -> None:
    c = service.client
    for path in ("/docs", "/redoc"):  # Swagger UI and ReDoc from packaged assets
        page = c.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assets = re.findall(r'(?:src=|href=|url: )["\']([^"\']+)["\']', page.text)
        assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets
        for asset in assets:
            assert c.get(asset).status_code == 200, (path, asset)
        assert "http://" not in page.text and "https://" not in page.text, path
    spec = c.get("/openapi.json").json()
    assert "delete" in spec["paths"]["/v1/collections/{name}"]


# ---------------------------------------------------------------------------- durability
def test_job_records_survive_a_restart(service_factory: ServiceFactory) -> None:
    from ragstrata.service.jobs import JobLog, JobManager

    service = service_factory()
    acme = service.key("acme")
    done = service.upload_texts(acme, "kb", {"guide.md": GUIDE})
    log_path = service.state.data_dir / "jobs.sqlite"
    # a job the server was running when it died: its record says queued/running
    log = JobLog(log_path)
    interrupted = JobLog.load(log)[-1]
    interrupted.job_id, interrupted.state, interrupted.finished = "f" * 16, "running", None
    interrupted.outcomes = interrupted.outcomes[:1]
    interrupted.files_total = 3
    log.save(interrupted)
    # one killed before its slice ended: it had indexed guide.md whole, no outcome recorded
    # (trial 20: "0 of 2 files were indexed" while the file was listed and searchable)
    killed = JobLog.load(log)[-1]
    killed.job_id, killed.state, killed.finished = "e" * 16, "running", None
    killed.outcomes, killed.names, killed.files_total = [], ["guide.md", "lost.md"], 2
    log.save(killed)
    log.close()
    held = service.state.registry.held_outcomes
    restarted = JobManager(workers=1, log=JobLog(log_path), held=held)
    try:
        principal = service.state.keys.verify(acme["Authorization"].removeprefix("Bearer "))
        assert restarted.get(principal, done["job_id"])["state"] == "succeeded"
        again = restarted.get(principal, "f" * 16)
        assert again["state"] == "failed" and again["error"]["code"] == "RS710"
        assert "1 of 3 files were indexed" in again["error"]["message"]
        assert [f["status"] for f in again["files"]] == ["indexed"]
        killed_json = restarted.get(principal, "e" * 16)
        assert "1 of 2 files were indexed" in killed_json["error"]["message"]
        statuses = {f["name"]: f["status"] for f in killed_json["files"]}
        assert statuses == {"guide.md": "indexed", "lost.md": "not_indexed"}
    finally:
        restarted.shutdown()
    # the record of the restart's verdict is itself durable
    reloaded = {j.job_id: j for j in JobLog(log_path).load()}
    assert reloaded["f" * 16].state == "failed"


def test_a_new_version_that_never_ran_is_not_reported_indexed(
    service_factory: ServiceFactory,
) -> None:
    """A review's finding (2026-12-06): a job queued with a new version of an indexed file,
    stopped before its turn, listed the file as ``indexed`` (the index held the earlier
    upload's bytes, and so did ``uploads/``), at a stop and after a restart; the new version
    was lost with the staging folder while the client was told it was indexed."""
    from ragstrata.service.jobs import JobLog, JobManager

    service = service_factory()
    acme = service.key("acme")
    assert service.upload_texts(acme, "kb", {"guide.md": GUIDE})["state"] == "succeeded"
    principal = service.state.keys.verify(acme["Authorization"].removeprefix("Bearer "))
    collection = service.state.registry.collection(principal, "kb")
    staged = service.state.data_dir / "staging-test" / "job"
    staged.mkdir(parents=True)
    (staged / "guide.md").write_text(GUIDE + "\n\nA new paragraph of version two.\n")
    log_path = service.state.data_dir / "jobs-test.sqlite"
    stopped = JobManager(workers=0, log=JobLog(log_path))  # no worker: it stays queued
    job = stopped.submit("a" * 16, collection, [staged / "guide.md"])
    record = JobLog(log_path).load()[-1]  # as a server killed now leaves it
    stopped.shutdown()
    assert [(o.name, o.status) for o in job.outcomes] == [("guide.md", "not_indexed")]
    assert "0 of 1 files were indexed" in (job.error or {})["message"]
    # after a restart, the same: the record's hashes name the bytes the job uploaded
    log = JobLog(log_path)
    record.job_id = "b" * 16
    log.save(record)
    log.close()
    held = service.state.registry.held_outcomes
    restarted = JobManager(workers=0, log=JobLog(log_path), held=held)
    try:
        files = restarted.get(principal, "b" * 16)["files"]
        assert [(f["name"], f["status"]) for f in files] == [("guide.md", "not_indexed")]
    finally:
        restarted.shutdown()


def _moved_not_indexed(service_factory: ServiceFactory) -> tuple[Service, Any, bytes]:
    """A collection ``kb`` (``guide.md``, ``notes.md`` indexed) as a slice cut short before
    its commit leaves it: a new ``guide.md`` moved into ``uploads/``, the indexed one kept in
    ``.previous/``, and a ``new.md`` never indexed. Returns the service, the collection and
    the indexed ``guide.md``'s bytes."""
    service = service_factory()
    acme = service.key("acme")
    job = service.upload_texts(acme, "kb", {"guide.md": GUIDE, "notes.md": "# Notes\n\nOne."})
    assert job["state"] == "succeeded"
    principal = service.state.keys.verify(acme["Authorization"].removeprefix("Bearer "))
    kb = service.state.registry.collection(principal, "kb")
    v1 = (kb.uploads / "guide.md").read_bytes()
    backups = kb.root / ".previous"
    backups.mkdir()
    (kb.uploads / "guide.md").replace(backups / "guide.md")
    (kb.uploads / "guide.md").write_text(GUIDE + "\n\nVersion two.\n")
    (kb.uploads / "new.md").write_text("# New\n\nNever indexed.\n")
    return service, kb, v1


def test_a_stopped_slice_leaves_uploads_as_the_index_holds_them(
    service_factory: ServiceFactory,
) -> None:
    """A review's finding (2026-12-06): a slice stopped by a server stop left the new version
    of a file it never indexed in ``uploads/`` (the index holding the earlier one) and the
    earlier one in ``.previous/``, which the next ingest of any file deleted."""
    from ragstrata.index.writer import file_sha256

    _, kb, v1 = _moved_not_indexed(service_factory)
    kb.settle_stopped(
        {
            "guide.md": file_sha256(kb.uploads / "guide.md"),
            "new.md": file_sha256(kb.uploads / "new.md"),
            "notes.md": "",  # indexed whole: stays
        }
    )
    assert (kb.uploads / "guide.md").read_bytes() == v1
    assert not (kb.uploads / "new.md").exists()
    assert (kb.uploads / "notes.md").is_file() and not (kb.root / ".previous").exists()


def test_after_a_killed_server_uploads_match_the_index(service_factory: ServiceFactory) -> None:
    """Trial 24 (2026-12-06): after SIGKILL, files of the interrupted job that the index did
    not hold stayed in ``uploads/`` for good, out of the document list. At restart each file
    holding the job's bytes that the index does not hold goes, its earlier version back."""
    from ragstrata.index.writer import file_sha256

    service, kb, v1 = _moved_not_indexed(service_factory)
    service.state.registry.settle_interrupted(
        "acme",
        "kb",
        {
            "guide.md": file_sha256(kb.uploads / "guide.md"),
            "new.md": file_sha256(kb.uploads / "new.md"),
            "notes.md": "0" * 64,  # not the job's bytes (an earlier upload's): left alone
        },
    )
    assert (kb.uploads / "guide.md").read_bytes() == v1
    assert not (kb.uploads / "new.md").exists() and not (kb.root / ".previous").exists()
    assert (kb.uploads / "notes.md").is_file()


def _ragstrata() -> list[str]:
    script = Path(sys.executable).with_name("ragstrata")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ragstrata.cli"]


def _start_server(
    data: Path, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*_ragstrata(), "serve", "--port", str(port), "--data-dir", str(data)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        assert proc.poll() is None, log.read_text(encoding="utf-8")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, log.read_text(encoding="utf-8")
        time.sleep(0.3)


def test_killed_server_reports_its_interrupted_job_after_restart(tmp_path: Path) -> None:
    """``ragstrata serve`` killed (SIGKILL) in the middle of a job: after a restart the job is
    reported failed (RS710) with the files it had indexed, instead of being forgotten."""
    data = tmp_path / "data"
    env = os.environ | {
        "RAGSTRATA_HOME": str(tmp_path / "home"),
        "RAGSTRATA_EMBEDDER_NAME": "minilm",
        "RAGSTRATA_INGEST_WORKERS": "0",
        "RAGSTRATA_SERVICE_INGEST_BATCH_FILES": "1",
    }
    created = subprocess.run(
        [*_ragstrata(), "keys", "create", "--tenant", "acme", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    headers = {"Authorization": f"Bearer {created.stdout.strip()}"}
    log = tmp_path / "server.log"
    proc, base = _start_server(data, env, log)
    try:
        docs = _docs("acme", 12)
        body = {"documents": [{"name": n, "text": t} for n, t in docs.items()]}
        accepted = httpx.post(
            f"{base}/v1/collections/kb/documents", headers=headers, json=body, timeout=30
        )
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        deadline = time.monotonic() + 300
        while True:  # kill once at least one slice is committed and the job still runs
            job = httpx.get(f"{base}/v1/jobs/{job_id}", headers=headers, timeout=30).json()
            if sum(f["status"] == "indexed" for f in job["files"]) >= 1:
                break
            assert job["state"] in ("queued", "running"), job
            assert time.monotonic() < deadline, job
            time.sleep(0.1)
        assert job["state"] == "running", job
    finally:
        proc.kill()
        proc.wait()
    proc, base = _start_server(data, env, log)
    try:
        job = httpx.get(f"{base}/v1/jobs/{job_id}", headers=headers, timeout=30).json()
        assert job["state"] == "failed", job
        assert job["error"]["code"] == "RS710"
        indexed = [f["name"] for f in job["files"] if f["status"] == "indexed"]
        assert 1 <= len(indexed) < 12
        assert f"{len(indexed)} of 12 files were indexed" in job["error"]["message"]
        listed = httpx.get(
            f"{base}/v1/collections/kb/documents", headers=headers, timeout=30
        ).json()["documents"]
        # every file the record calls indexed is in the index (a slice committed after the
        # last record may add one more)
        assert set(indexed) <= {d["name"] for d in listed}
        again = httpx.post(
            f"{base}/v1/collections/kb/documents", headers=headers, json=body, timeout=30
        )
        assert again.status_code == 202  # the service takes new work after the restart
        # a second server on the same data directory stops at once, naming the first (a new
        # user's second server started, and every ask then answered 503 with a server path)
        second = subprocess.run(
            [*_ragstrata(), "serve", "--port", "1", "--data-dir", str(data)],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
        assert second.returncode == 2, second.stderr  # RS101, as any configuration error
        said = " ".join(second.stderr.split())
        assert f"another ragstrata serve (process {proc.pid}) already serves" in said, said
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_serve_on_a_port_in_use_fails_before_announcing_it(tmp_path: Path) -> None:
    """A new user's second ``serve`` on a busy port printed "ragstrata serving ... on
    http://..." and then exited 3 (uvicorn's startup failure; 3 means "partial ingest" in
    this CLI). It now stops before loading anything, as a configuration error (exit 2)."""
    env = os.environ | {"RAGSTRATA_HOME": str(tmp_path / "home")}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = int(busy.getsockname()[1])
        result = subprocess.run(
            [*_ragstrata(), "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
    said = " ".join(result.stderr.split())
    assert result.returncode == 2, said
    assert f"cannot listen on 127.0.0.1:{port}" in said and "RS101" in said, said
    assert "serving" not in said


def test_an_error_names_no_server_path(service: Service) -> None:
    """A review's finding (2026-12-06): only an index lock's message was stripped of the
    server's paths; a damaged index's error named the collection's directory on the server."""
    acme = service.key("acme")
    assert service.upload_texts(acme, "damaged", {"guide.md": GUIDE})["state"] == "succeeded"
    service.state.registry.close()  # as a restarted server: the collection opens again
    index = service.state.registry.root / "acme" / "damaged" / "index"
    (index / "manifest.json").write_text("{", encoding="utf-8")
    response = service.client.post(
        "/v1/collections/damaged/search", headers=acme, json={"query": "deploy"}
    )
    assert response.status_code >= 500, response.text  # logged whole on the server
    message = response.json()["error"]["message"]
    root = str(service.state.registry.root.parent)
    assert message and root not in message and "/acme/" not in message, message
    assert message.startswith("index/manifest.json is corrupt"), message
