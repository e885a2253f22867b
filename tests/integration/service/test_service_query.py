"""Search and ask over HTTP: explain ranks, cited passages with highlights, refusals, the SSE
stream, and /metrics in the Prometheus text format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from service_helpers import BILLING, GUIDE, Service

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def acme(module_service: Service) -> dict[str, str]:
    headers = module_service.key("acme")
    job = module_service.upload_texts(headers, "docs", {"guide.md": GUIDE, "billing.html": BILLING})
    assert job["state"] == "succeeded", job
    return headers


def _events(text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        yield fields["event"], json.loads(fields["data"])


def test_search_returns_hits_with_each_retrievers_rank(
    module_service: Service, acme: dict[str, str]
) -> None:
    response = module_service.client.post(
        "/v1/collections/docs/search",
        headers=acme,
        json={"query": "ERR_CONN_RESET", "top_k": 3},
    )
    assert response.status_code == 200
    data = response.json()
    assert 1 <= len(data["hits"]) <= 3
    top = data["hits"][0]
    assert top["source"] == "guide.md" and "ERR_CONN_RESET" in top["text"]
    assert top["heading_path"] == ["Operations guide", "Error codes"]
    assert set(top["explain"]) == {"dense", "bm25"} and top["explain"]["bm25"]["rank"] == 1
    bm25 = module_service.client.post(
        "/v1/collections/docs/search", headers=acme, json={"query": "invoices", "mode": "bm25"}
    ).json()
    assert set(bm25["hits"][0]["explain"]) == {"bm25"}

    # source filters take the file names hits show (trial 24: the API refused source, which
    # the CLI and MCP take); a path is no file name of the collection
    def sources(filters: dict[str, Any]) -> set[str]:
        response = module_service.client.post(
            "/v1/collections/docs/search",
            headers=acme,
            json={"query": "invoices error codes", "top_k": 10, "filters": filters},
        )
        assert response.status_code == 200, response.text
        return {h["source"] for h in response.json()["hits"]}

    assert sources({"source": "billing.html"}) == {"billing.html"}
    assert sources({"source": ["guide.md", "billing.html"]}) == {"guide.md", "billing.html"}
    assert sources({"source": "missing.md"}) == set()
    for bad_source in ("/", "../keys.json", "uploads/guide.md"):
        bad = module_service.client.post(
            "/v1/collections/docs/search",
            headers=acme,
            json={"query": "x", "filters": {"source": bad_source}},
        )
        assert bad.status_code == 422 and "file name" in bad.text, bad.text


def test_ask_json_cites_the_passage_and_highlights_the_sentence(
    module_service: Service, acme: dict[str, str]
) -> None:
    response = module_service.client.post(
        "/v1/collections/docs/ask",
        headers=acme,
        json={"question": "What does the error ERR_CONN_RESET mean?", "explain": True},
    )
    assert response.status_code == 200
    data = response.json()
    assert data["refusal"] is False and "[1]" in data["answer"]
    first = data["citations"][0]
    assert first["label"] == 1 and first["source"] == "guide.md"
    start, end = first["highlight_start"], first["highlight_end"]
    assert first["passage"][start:end] == first["quote"]
    assert "upstream server closed the connection" in first["quote"]
    assert first["explain"]["dense"]["rank"] >= 1
    assert data["legend"][0].startswith("[1] = guide.md > Operations guide")
    assert data["retrieval"] and data["retrieval"][0]["explain"]
    # the extractive answerer: quotes are verbatim (verified, no checker score), no LLM call
    assert first["verified"] is True and first["support"] is None
    assert data["usage"] is None and data["generator"] == "extractive"
    assert data["conflict"] is False and data["conflicts"] == []
    # no server path leaks into the answer
    assert str(module_service.state.data_dir) not in response.text


def test_ask_refuses_when_the_documents_do_not_say(
    module_service: Service, acme: dict[str, str]
) -> None:
    data = module_service.client.post(
        "/v1/collections/docs/ask",
        headers=acme,
        json={"question": "Who painted the Mona Lisa in the Renaissance?"},
    ).json()
    assert data["refusal"] is True and data["citations"] == []
    assert data["answer"].startswith("I could not find enough information")
    # why, as `ask --json` and MCP say it (a new user's run found it missing here, 2026-12-03)
    assert data["refused_by"] == "evidence"
    assert data["evidence"]["score"] < data["min_evidence"] and "model" in data["evidence"]


def test_ask_streams_server_sent_events(module_service: Service, acme: dict[str, str]) -> None:
    with module_service.client.stream(
        "POST",
        "/v1/collections/docs/ask",
        headers=acme,
        json={"question": "When are invoices sent?", "stream": True, "explain": True},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    events = list(_events(body))
    names = [name for name, _ in events]
    tokens = [data["text"] for name, data in events if name == "token"]
    assert len(tokens) > 3 and names[: len(tokens)] == ["token"] * len(tokens)
    assert names[len(tokens) :] == ["citations", "explain", "done"]
    done = events[-1][1]
    assert "".join(tokens) == done["answer"] and done["refusal"] is False
    citations = events[len(tokens)][1]["citations"]
    assert citations[0]["source"] == "billing.html" and "first day" in citations[0]["quote"]
    # done carries the JSON answer (without the retrieval, sent as explain)
    assert done["citations"] == citations and "retrieval" not in done
    assert done["usage"] is None and done["generator"] == "extractive"
    assert done["conflict"] is False and "total" in done["timings_ms"]
    # a refusal streams too, with no citations
    refusal = module_service.client.post(
        "/v1/collections/docs/ask",
        headers=acme,
        json={"question": "What is the boiling point of tungsten?", "stream": True},
    )
    events = list(_events(refusal.text))
    assert events[-1][0] == "done" and events[-1][1]["refusal"] is True
    assert ("citations", {"citations": []}) in events


def test_metrics_parse_as_prometheus_text(module_service: Service, acme: dict[str, str]) -> None:
    c = module_service.client
    c.get("/v1/collections", headers=acme)
    c.get("/v1/collections")  # 401
    assert c.get("/metrics").status_code == 401  # not public by default
    assert c.get("/metrics", headers=acme).status_code == 403  # a tenant's key lacks the scope
    response = c.get("/metrics", headers=module_service.key("ops", scopes=("metrics",)))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    ok = (
        "ragstrata_http_requests_total",
        (("method", "GET"), ("route", "/v1/collections"), ("status", "200")),
    )
    denied = (
        "ragstrata_http_requests_total",
        (("method", "GET"), ("route", "/v1/collections"), ("status", "401")),
    )
    assert samples[ok] >= 1 and samples[denied] >= 1
    search_routes = {
        dict(s.labels)["route"] for s in families["ragstrata_http_request_duration_seconds"].samples
    }
    assert "/v1/collections/{name}/search" in search_routes  # templates, not raw paths
    assert (
        samples[("ragstrata_collection_documents", (("collection", "docs"), ("tenant", "acme")))]
        == 2
    )
    assert samples[("ragstrata_ingest_jobs_total", (("state", "succeeded"),))] >= 1
    assert samples[("ragstrata_tenancy_violations_total", ())] == 0
    assert samples[("ragstrata_auth_failures_total", (("reason", "missing"),))] >= 1


def test_page_and_openapi_are_served(module_service: Service) -> None:
    c = module_service.client
    page = c.get("/")
    assert page.status_code == 200 and 'id="question"' in page.text
    assert c.get("/static/app.js").status_code == 200
    spec = c.get("/openapi.json").json()
    assert "/v1/collections/{name}/ask" in spec["paths"]
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            refs.extend(v for k, v in node.items() if k == "$ref")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    assert "#/components/schemas/TextUpload" in refs
    for ref in refs:  # every reference resolves inside the document
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in spec["components"]["schemas"], ref
    assert c.get("/healthz").json() == {"status": "ok"}
    missing = c.get("/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RS706"


def test_a_body_that_is_not_json_is_400_and_a_schema_mismatch_422(
    module_service: Service, acme: dict[str, str]
) -> None:
    c = module_service.client
    url = "/v1/collections/docs/search"
    broken = c.post(url, headers=acme | {"Content-Type": "application/json"}, content=b'{"query":')
    assert broken.status_code == 400, broken.text
    assert broken.json()["error"]["code"] == "RS707"
    assert broken.json()["error"]["message"].startswith("the body is not JSON: ")
    # the upload route's JSON body too (a new user got 422 there), and the message says what
    # is wrong instead of "0: JSON decode error"
    for route in ("/v1/collections/docs/ask", "/v1/collections/docs/documents"):
        hello = c.post(route, headers=acme | {"Content-Type": "application/json"}, content=b"hi")
        assert hello.status_code == 400, (route, hello.text)
        error = hello.json()["error"]
        assert error["code"] == "RS707" and error["message"].startswith("the body is not JSON")
    # bytes that are not UTF-8 (a Latin-1 "café"): FastAPI's "There was an error parsing the
    # body" said nothing of why
    latin1 = c.post(
        "/v1/collections/docs/ask",
        headers=acme | {"Content-Type": "application/json"},
        content=b'{"question":"caf\xe9"}',
    )
    assert latin1.status_code == 400, latin1.text
    assert latin1.json()["error"] == {
        "code": "RS707",
        "message": "the body is not JSON: it is not UTF-8 text (byte 0xe9 at byte 16); "
        "send UTF-8 JSON",
    } | {k: v for k, v in latin1.json()["error"].items() if k not in ("code", "message")}
    # an empty body is not JSON either, on every route (it was 422 on ask and search)
    for route in (url, "/v1/collections/docs/ask", "/v1/collections/docs/documents"):
        empty = c.post(route, headers=acme | {"Content-Type": "application/json"}, content=b"")
        assert empty.status_code == 400, (route, empty.text)
        assert empty.json()["error"]["message"] == "the body is empty; send a JSON object"
    # JSON sent under another content type: FastAPI hands the route the raw text, which read
    # "Input should be a valid dictionary" (422); it is the type that is wrong (415), as on uploads
    for route in (url, "/v1/collections/docs/ask"):
        for kind in ("text/plain", "application/x-www-form-urlencoded"):
            typed = c.post(route, headers=acme | {"Content-Type": kind}, content=b'{"query": "x"}')
            assert typed.status_code == 415, (route, kind, typed.text)
            error = typed.json()["error"]
            assert error["code"] == "RS705" and "application/json" in error["message"], error
    # application/*+json is JSON (a schema mismatch stays 422, not 415)
    vendor = c.post(url, headers=acme | {"Content-Type": "application/vnd.api+json"}, content=b"{}")
    assert vendor.status_code == 422, vendor.text
    # a question or query of white space only is a schema mismatch (it was RS600, a code the
    # service's error table does not list)
    for route, field in (("/v1/collections/docs/ask", "question"), (url, "query")):
        blank = c.post(route, headers=acme, json={field: "  \n "})
        assert blank.status_code == 422, (route, blank.text)
        assert blank.json()["error"]["code"] == "RS707" and field in blank.text
    for top_k in (True, "3", 2.0):
        response = c.post(url, headers=acme, json={"query": "invoices", "top_k": top_k})
        assert response.status_code == 422, (top_k, response.text)
        assert "top_k" in response.json()["error"]["message"]
    ok = c.post(url, headers=acme, json={"query": "invoices", "top_k": 2})
    assert ok.status_code == 200 and len(ok.json()["hits"]) <= 2
    # the same for ask's flags: "yes" and 1 were taken as true (trial 24)
    for flag, value in (("stream", "yes"), ("stream", 1), ("explain", "true")):
        body = {"question": "invoices?", flag: value}
        response = c.post("/v1/collections/docs/ask", headers=acme, json=body)
        assert response.status_code == 422 and flag in response.text, (flag, response.text)
