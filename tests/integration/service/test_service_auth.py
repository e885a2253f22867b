"""API keys and access control: 401 without a valid key, 403 across tenants and for read-only
keys writing, 429 past the rate limit, keys stored only as salted hashes."""

from __future__ import annotations

import json

import pytest
from service_helpers import GUIDE, Service, ServiceFactory

from ragstrata.service.keys import KEYS_FILE

pytestmark = pytest.mark.slow


def _error(response: object) -> str:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    return str(body["error"]["code"])


def test_missing_malformed_unknown_and_revoked_keys_get_401(service: Service) -> None:
    c = service.client
    good = service.key("acme")
    assert c.get("/v1/collections", headers=good).status_code == 200
    for headers in (
        {},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer not-a-key"},
        {"X-API-Key": "rsk_000000000000_" + "A" * 43},  # well-formed, unknown id
        {"Authorization": good["Authorization"][:-2] + "xx"},  # known id, wrong secret
    ):
        response = c.get("/v1/collections", headers=headers)
        assert response.status_code == 401, headers
        assert _error(response) == "RS701"
        assert response.headers["www-authenticate"] == "Bearer"
    key_id = good["Authorization"].split("_")[1]
    service.state.keys.revoke(key_id)
    response = c.get("/v1/collections", headers=good)
    assert response.status_code == 401 and _error(response) == "RS701"


def test_x_api_key_header_works_too(service: Service) -> None:
    key = service.key("acme")["Authorization"].removeprefix("Bearer ")
    response = service.client.get("/v1/collections", headers={"X-API-Key": key})
    assert response.status_code == 200 and response.json()["tenant"] == "acme"


def test_other_tenants_collection_is_403_for_every_route(service: Service) -> None:
    acme, globex = service.key("acme"), service.key("globex")
    job = service.upload_texts(acme, "acme-docs", {"guide.md": GUIDE})
    assert job["state"] == "succeeded", job
    c = service.client
    requests = [
        ("get", "/v1/collections/acme-docs", None),
        ("get", "/v1/collections/acme-docs/documents", None),
        ("post", "/v1/collections/acme-docs/search", {"query": "ERR_CONN_RESET"}),
        ("post", "/v1/collections/acme-docs/ask", {"question": "What is ERR_CONN_RESET?"}),
        (
            "post",
            "/v1/collections/acme-docs/documents",
            {"documents": [{"name": "x.md", "text": "x"}]},
        ),
        ("delete", f"/v1/collections/acme-docs/documents/{'0' * 16}", None),
        ("delete", "/v1/collections/acme-docs", None),
    ]
    for method, url, body in requests:
        response = c.request(method, url, headers=globex, json=body)
        assert response.status_code == 403, (method, url, response.text)
        assert _error(response) == "RS702"
    # globex sees none of it, and its own listing is empty
    assert c.get("/v1/collections", headers=globex).json()["collections"] == []
    # another tenant's job id answers like an unknown one
    assert c.get(f"/v1/jobs/{job['job_id']}", headers=globex).status_code == 404
    # acme still has everything
    hits = c.post(
        "/v1/collections/acme-docs/search", headers=acme, json={"query": "ERR_CONN_RESET"}
    ).json()["hits"]
    assert hits and hits[0]["source"] == "guide.md"


def test_unknown_collection_is_404_and_bad_name_422(service: Service) -> None:
    acme = service.key("acme")
    response = service.client.post(
        "/v1/collections/nothing/search", headers=acme, json={"query": "x"}
    )
    assert response.status_code == 404 and _error(response) == "RS706"
    for bad in ("UPPER", "..", "a" * 64, "-dash"):
        response = service.client.get(f"/v1/collections/{bad}", headers=acme)
        assert response.status_code in (404, 422), bad
        assert _error(response) in ("RS706", "RS707")


def test_read_only_key_cannot_write(service: Service) -> None:
    writer = service.key("acme")
    reader = service.key("acme", read_only=True)
    service.upload_texts(writer, "docs", {"guide.md": GUIDE})
    body = {"documents": [{"name": "more.md", "text": "# More\n\nText."}]}
    response = service.client.post("/v1/collections/docs/documents", headers=reader, json=body)
    assert response.status_code == 403 and _error(response) == "RS702"
    search = service.client.post(
        "/v1/collections/docs/search", headers=reader, json={"query": "rate"}
    )
    assert search.status_code == 200


def test_each_route_checks_its_scope(service: Service) -> None:
    """Trial 40: the ``read`` scope was never checked, so a ``metrics`` key (a scraper's)
    listed, searched and asked its tenant's documents. A ``write``-only key (an uploader)
    follows its jobs but reads no document."""
    writer = service.key("acme")
    job = service.upload_texts(writer, "docs", {"guide.md": GUIDE})["job_id"]
    c = service.client
    for scopes, reads, follows_jobs in ((("metrics",), False, False), (("write",), False, True)):
        key = service.key("acme", scopes=scopes)
        for response in (
            c.get("/v1/collections", headers=key),
            c.get("/v1/collections/docs", headers=key),
            c.get("/v1/collections/docs/documents", headers=key),
            c.post("/v1/collections/docs/search", headers=key, json={"query": "rate"}),
            c.post("/v1/collections/docs/ask", headers=key, json={"question": "What is the rate?"}),
        ):
            assert (response.status_code == 200) is reads, (scopes, response.text)
            if not reads:
                assert _error(response) == "RS702" and "'read'" in response.text
        for response in (c.get("/v1/jobs", headers=key), c.get(f"/v1/jobs/{job}", headers=key)):
            assert (response.status_code == 200) is follows_jobs, (scopes, response.text)


def test_rate_limit_gives_429_with_retry_after(service_factory: ServiceFactory) -> None:
    service = service_factory(rate_limit_per_s=0.5, rate_limit_burst=3)
    acme, globex = service.key("acme"), service.key("globex")
    codes = [service.client.get("/v1/collections", headers=acme).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
    response = service.client.get("/v1/collections", headers=acme)
    assert _error(response) == "RS703"
    assert 1 <= int(response.headers["retry-after"]) <= 2
    # the bucket is per key
    assert service.client.get("/v1/collections", headers=globex).status_code == 200


def test_keys_file_holds_only_salted_hashes(service: Service) -> None:
    headers = service.key("acme")
    key = headers["Authorization"].removeprefix("Bearer ")
    raw = (service.state.data_dir / KEYS_FILE).read_text(encoding="utf-8")
    secret = key.split("_", 2)[2]
    assert secret not in raw and key not in raw
    record = json.loads(raw)["keys"][0]
    assert len(bytes.fromhex(record["salt"])) == 16 and len(bytes.fromhex(record["hash"])) == 32
    assert (service.state.data_dir / KEYS_FILE).stat().st_mode & 0o077 == 0
