"""Uploads: size limit (413), content types (415), safe file names, background jobs with
progress, and a bad file that costs only itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from service_helpers import BILLING, GUIDE, Service, ServiceFactory

pytestmark = pytest.mark.slow


def _search(service: Service, headers: dict[str, str], collection: str, query: str) -> list[str]:
    response = service.client.post(
        f"/v1/collections/{collection}/search", headers=headers, json={"query": query}
    )
    assert response.status_code == 200, response.text
    return [h["source"] for h in response.json()["hits"]]


def test_body_over_the_limit_is_413_and_stores_nothing(service_factory: ServiceFactory) -> None:
    service = service_factory(max_upload_bytes=2_000)
    acme = service.key("acme")
    files = [("files", ("big.md", b"# Big\n\n" + b"word " * 1000, "text/markdown"))]
    response = service.client.post("/v1/collections/docs/documents", headers=acme, files=files)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "RS704"
    assert "service.max_upload_bytes" in response.json()["error"]["message"]

    # a body without Content-Length (chunked) is cut at the limit too
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b'{"documents": [' + b" " * 500

    response = service.client.post(
        "/v1/collections/docs/documents",
        headers=acme | {"Content-Type": "application/json"},
        content=chunks(),
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "RS704"
    assert not any(service.state.data_dir.rglob("*.md"))
    # search/ask bodies have their own 1 MB cap
    response = service.client.post(
        "/v1/collections/docs/search", headers=acme, json={"query": "x" * 1_100_000}
    )
    assert response.status_code == 413
    message = response.json()["error"]["message"]
    assert "search and ask" in message and "upload" not in message
    # and so do they sent chunked (review 33: 400 RS707 "There was an error parsing the body")
    big = b'{"query": "' + b"x" * 1_100_000 + b'"}'
    for route in ("search", "ask"):
        response = service.client.post(
            f"/v1/collections/docs/{route}",
            headers=acme | {"Content-Type": "application/json"},
            content=(big[i : i + 65_536] for i in range(0, len(big), 65_536)),
        )
        assert response.status_code == 413, (route, response.text)
        assert response.json()["error"]["code"] == "RS704"
        assert "search and ask" in response.json()["error"]["message"]


def test_unsupported_content_types_are_415(service: Service) -> None:
    acme = service.key("acme")
    c = service.client
    response = c.post(
        "/v1/collections/docs/documents",
        headers=acme | {"Content-Type": "text/plain"},
        content=b"hello",
    )
    assert response.status_code == 415 and response.json()["error"]["code"] == "RS705"
    only_bad = [
        ("files", ("photo.png", b"\x89PNG\r\n", "image/png")),
        ("files", ("notes.md", b"# Notes\n\nText.", "image/png")),  # type contradicts .md
    ]
    response = c.post("/v1/collections/docs/documents", headers=acme, files=only_bad)
    assert response.status_code == 415, response.text
    message = response.json()["error"]["message"]
    assert "photo.png" in message and "photo.png: photo.png" not in message, message
    # nothing was created for a refused upload
    assert c.get("/v1/collections", headers=acme).json()["collections"] == []


def test_bad_file_in_a_batch_costs_only_itself(service: Service) -> None:
    acme = service.key("acme")
    files = [
        ("files", ("guide.md", GUIDE.encode(), "text/markdown")),
        ("files", ("billing.html", BILLING.encode(), "text/html")),
        ("files", ("binary.md", b"\x00\x01\x02\xff" * 100, "application/octet-stream")),
        ("files", ("empty.txt", b"   \n", "text/plain")),
        ("files", ("image.png", b"\x89PNG\r\n", "image/png")),
    ]
    response = service.client.post("/v1/collections/docs/documents", headers=acme, files=files)
    assert response.status_code == 202, response.text
    assert response.headers["location"] == f"/v1/jobs/{response.json()['job_id']}"
    job = service.wait(acme, response.json()["job_id"])
    assert job["state"] == "partial", job
    status = {f["name"]: (f["status"], f["code"]) for f in job["files"]}
    assert status == {
        "guide.md": ("indexed", None),
        "billing.html": ("indexed", None),
        "binary.md": ("failed", "RS202"),
        "empty.txt": ("failed", "RS203"),
        "image.png": ("failed", "RS705"),
    }
    for f in job["files"]:
        if f["status"] == "failed":
            assert f["reason"], f
    progress = job["progress"]
    assert progress["files_done"] == progress["files_total"] == 5
    assert progress["fraction"] == 1.0 and progress["chunks_embedded"] >= 2
    # the same stages as the CLI's progress: chunks found, embedded, committed, with a rate
    chunks = job["report"]["chunks"]
    assert progress["chunks_queued"] == progress["chunks_committed"] == chunks > 0
    # one commit held both documents, so their BM25 weights used the final average already
    assert progress["chunks_reweighted"] == job["report"]["reweighted"] == 0
    assert progress["chunks_per_s"] > 0 and progress["running_s"] > 0
    assert progress["bytes_total"] > 0
    assert job["report"]["added"] == 2
    # the good files are searchable, the bad ones left no trace
    assert _search(service, acme, "docs", "ERR_CONN_RESET")[0] == "guide.md"
    assert "billing.html" in _search(service, acme, "docs", "When are invoices sent?")
    docs = service.client.get("/v1/collections/docs/documents", headers=acme).json()["documents"]
    assert sorted(d["name"] for d in docs) == ["billing.html", "guide.md"]
    uploads = service.state.registry.root / "acme" / "docs" / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == ["billing.html", "guide.md"]


def test_a_job_reports_the_bm25_reweighting_of_earlier_documents(service: Service) -> None:
    """A second upload of much longer text moves the collection's average chunk length, so the
    end of its ingest re-weights the first upload's chunks; the job says how many."""
    acme = service.key("acme")
    short = [("files", ("guide.md", GUIDE.encode(), "text/markdown"))]
    first = service.client.post("/v1/collections/docs/documents", headers=acme, files=short)
    job = service.wait(acme, first.json()["job_id"])
    assert job["state"] == "succeeded" and job["progress"]["chunks_reweighted"] == 0, job
    long_text = "# Manual\n\n" + " ".join(f"palabra{i} del manual largo." for i in range(900))
    longer = [("files", ("manual.md", long_text.encode(), "text/markdown"))]
    second = service.client.post("/v1/collections/docs/documents", headers=acme, files=longer)
    job = service.wait(acme, second.json()["job_id"])
    assert job["state"] == "succeeded", job
    guide_chunks = service.wait(acme, first.json()["job_id"])["report"]["chunks"]
    assert job["progress"]["chunks_reweighted"] == job["report"]["reweighted"] == guide_chunks > 0
    assert _search(service, acme, "docs", "ERR_CONN_RESET")[0] == "guide.md"


def test_file_names_are_sanitized_no_path_traversal(service: Service) -> None:
    acme = service.key("acme")
    files = [
        ("files", ("../../../outside.md", b"# Outside\n\nTraversal attempt one.", "text/markdown")),
        ("files", ("..\\..\\win.md", b"# Win\n\nTraversal attempt two.", "text/markdown")),
        ("files", ("/etc/abs.md", b"# Abs\n\nTraversal attempt three.", "text/markdown")),
        ("files", (".hidden.md", b"# Hidden\n\nA hidden file name.", "text/markdown")),
    ]
    response = service.client.post("/v1/collections/docs/documents", headers=acme, files=files)
    assert response.status_code == 202, response.text
    job = service.wait(acme, response.json()["job_id"])
    assert job["state"] == "succeeded", job
    assert sorted(f["name"] for f in job["files"]) == [
        "abs.md",
        "hidden.md",
        "outside.md",
        "win.md",
    ]
    data = service.state.data_dir
    uploads = service.state.registry.root / "acme" / "docs" / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == [
        "abs.md",
        "hidden.md",
        "outside.md",
        "win.md",
    ]
    everything = [p for p in data.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(data) for p in everything)
    assert not any(p.name in ("outside.md", "win.md") for p in data.parent.iterdir())


def test_a_duplicate_name_in_one_upload_says_which_file_was_kept(service: Service) -> None:
    """A new user's upload of two files named dup.md gave two rows, one failed "duplicate name
    in upload", with no way to tell which content was indexed: the first one is."""
    acme = service.key("acme")
    files = [
        ("files", ("dup.md", b"# One\n\nThe first dup file names the quokka.", "text/markdown")),
        ("files", ("dup.md", b"# Two\n\nThe second dup file names the wombat.", "text/markdown")),
    ]
    response = service.client.post("/v1/collections/dups/documents", headers=acme, files=files)
    job = service.wait(acme, response.json()["job_id"])
    skipped = [f for f in job["files"] if f["status"] == "failed"]
    assert len(skipped) == 1 and skipped[0]["code"] == "RS707"
    assert "file 2 of the upload was skipped" in skipped[0]["reason"]
    assert "first file of this name is the one indexed" in skipped[0]["reason"]
    text = service.client.post(
        "/v1/collections/dups/search", headers=acme, json={"query": "quokka wombat"}
    ).json()["hits"][0]["text"]
    assert "quokka" in text and "wombat" not in text


def test_json_text_upload_update_and_delete(service: Service) -> None:
    acme = service.key("acme")
    job = service.upload_texts(acme, "notes", {"faq.md": "# FAQ\n\nThe office opens at nine."})
    assert job["state"] == "succeeded"
    # same name again: the document is replaced, not duplicated
    job = service.upload_texts(acme, "notes", {"faq.md": "# FAQ\n\nThe office opens at ten."})
    assert job["state"] == "succeeded" and job["report"]["updated"] == 1
    docs = service.client.get("/v1/collections/notes/documents", headers=acme).json()["documents"]
    assert [d["name"] for d in docs] == ["faq.md"]
    # a bad new version of a good file keeps the old version, in the index and on disk
    job = service.upload_texts(acme, "notes", {"faq.md": "\x00\x01\x02" * 40})
    assert job["state"] == "failed" and job["files"][0]["code"] == "RS202"
    answer = service.client.post(
        "/v1/collections/notes/ask", headers=acme, json={"question": "When does the office open?"}
    ).json()
    assert "ten" in answer["answer"], answer
    uploads = service.state.registry.root / "acme" / "notes" / "uploads"
    assert "ten" in (uploads / "faq.md").read_text(encoding="utf-8")
    # one bad entry of a JSON upload costs only itself, as a bad file of a multipart one does
    # (an empty text made the whole request 422)
    job = service.upload_texts(
        acme,
        "notes",
        {"empty.md": "", "photo.png": "x", "hours.md": "# Hours\n\nClosed on Sunday."},
    )
    status = {f["name"]: (f["status"], f["code"]) for f in job["files"]}
    assert job["state"] == "partial" and status == {
        "empty.md": ("failed", "RS203"),
        "photo.png": ("failed", "RS705"),
        "hours.md": ("indexed", None),
    }, job
    listed = service.client.get("/v1/collections/notes/documents", headers=acme).json()
    hours = next(d["doc_id"] for d in listed["documents"] if d["name"] == "hours.md")
    assert service.client.delete(
        f"/v1/collections/notes/documents/{hours}", headers=acme
    ).is_success
    # delete
    doc_id = docs[0]["doc_id"]
    response = service.client.delete(f"/v1/collections/notes/documents/{doc_id}", headers=acme)
    assert response.status_code == 200 and response.json()["deleted"]["name"] == "faq.md"
    assert service.client.get("/v1/collections/notes", headers=acme).json()["documents"] == 0
    assert not (uploads / "faq.md").exists()
    again = service.client.delete(f"/v1/collections/notes/documents/{doc_id}", headers=acme)
    assert again.status_code == 404


def test_invalid_bodies_are_422(service: Service) -> None:
    acme = service.key("acme")
    c = service.client
    for body in ({}, {"documents": []}, {"documents": [{"name": "a.md"}]}, {"other": 1}):
        response = c.post("/v1/collections/docs/documents", headers=acme, json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["code"] == "RS707"
    response = c.post(
        "/v1/collections/docs/documents",
        headers=acme,
        files=[("other", ("a.md", b"# A", "text/markdown"))],
    )
    assert response.status_code == 422


def test_a_job_whose_ingest_fails_lists_its_files_and_puts_uploads_back(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 24 (2026-12-06): a job whose ingest failed as a whole (RS503 there) listed no
    file (``"files": []``), left the new bytes in ``uploads/`` while the index kept the earlier
    version, and its message, readable by any of the tenant's keys, named the server's path."""
    from ragstrata.errors import IndexLockedError
    from ragstrata.service.keys import Principal

    headers = service.key("acme")
    assert service.upload_texts(headers, "kb", {"guide.md": GUIDE})["state"] == "succeeded"
    kb = service.state.registry.collection(Principal("k", "acme", ("write",)), "kb")

    def locked(*args: object, **kwargs: object) -> None:
        raise IndexLockedError(
            f"cannot write the index at {kb.index_dir}: another process has it open"
        )

    monkeypatch.setattr(kb._engine, "ingest", locked)
    job = service.upload_texts(headers, "kb", {"guide.md": BILLING, "new.md": "# New\n\nText."})
    assert job["state"] == "failed"
    assert {f["name"]: (f["status"], f["code"]) for f in job["files"]} == {
        "guide.md": ("failed", "RS503"),
        "new.md": ("failed", "RS503"),
    }
    shown = str(job)
    assert str(kb.root) not in shown and str(service.state.registry.root) not in shown, shown
    # uploads/ holds what the index holds: the earlier guide, no new file
    assert sorted(p.name for p in kb.uploads.iterdir()) == ["guide.md"]
    assert (kb.uploads / "guide.md").read_text(encoding="utf-8") == GUIDE
    assert not (kb.root / ".previous").exists()


def test_a_job_failing_in_a_middle_slice_lists_the_files_no_slice_reached(
    service_factory: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 33: a job of four one-file slices failing at the second listed two files and
    counted all four done; the two it never reached were gone from its record."""
    from ragstrata.errors import IndexLockedError
    from ragstrata.service.keys import Principal

    service = service_factory(ingest_batch_files=1)
    headers = service.key("acme")
    assert service.upload_texts(headers, "kb", {"guide.md": GUIDE})["state"] == "succeeded"
    kb = service.state.registry.collection(Principal("k", "acme", ("write",)), "kb")
    real = kb._engine.ingest
    calls: list[int] = []

    def second_fails(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise IndexLockedError("cannot write the index: another process has it open")
        return real(*args, **kwargs)

    monkeypatch.setattr(kb._engine, "ingest", second_fails)
    texts = {f"a{i}.md": f"# A{i}\n\nText number {i}." for i in range(4)}
    job = service.upload_texts(headers, "kb", texts)
    assert job["state"] == "failed"
    listed = {f["name"]: (f["status"], f["code"]) for f in job["files"]}
    assert set(listed) == set(texts), listed
    assert list(listed.values()).count(("indexed", None)) == 1, listed
    assert all(v == ("failed", "RS503") for v in listed.values() if v[0] != "indexed"), listed
    assert job["progress"]["files_done"] == job["progress"]["files_total"] == 4
