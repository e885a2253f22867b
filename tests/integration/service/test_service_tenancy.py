"""Tenant isolation: 1,000 randomized queries by 3 tenants over documents that share their
vocabulary return no result of another tenant; the defense-in-depth check drops (and counts) a
foreign result even if a store ever held one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from service_helpers import Service

pytestmark = pytest.mark.slow

TENANTS = ("alpha", "beta", "gamma")
TOPICS = (
    ("Deployment", "The deployment pipeline promotes builds from staging to production."),
    ("Backups", "Backups of the database run every night and are kept for thirty days."),
    ("On-call", "The on-call engineer answers pages within fifteen minutes."),
    ("Billing", "Invoices are sent on the first day of each month by email."),
    ("Security", "API keys are rotated every ninety days and stored in the vault."),
    ("Onboarding", "New engineers get a laptop, an account and a mentor on the first day."),
)


def _marker(tenant: str, i: int) -> str:
    return f"{tenant}secret{i}"


def _documents(tenant: str) -> dict[str, str]:
    """Six documents on the topics every tenant shares, each with a tenant-unique marker."""
    docs = {}
    for i, (title, sentence) in enumerate(TOPICS):
        docs[f"{tenant}-{i}.md"] = (
            f"# {title} at {tenant.title()} Corp\n\n{sentence} "
            f"The internal code word for this runbook is {_marker(tenant, i)}.\n\n"
            f"## Details\n\nAsk the {title.lower()} team of {tenant.title()} Corp for help. "
            f"{sentence}\n"
        )
    return docs


def test_thousand_random_queries_never_cross_tenants(module_service: Service) -> None:
    service = module_service
    keys = {t: service.key(t) for t in TENANTS}
    for tenant in TENANTS:
        job = service.upload_texts(keys[tenant], f"{tenant}-kb", _documents(tenant))
        assert job["state"] == "succeeded", job
    own_files = {t: set(_documents(t)) for t in TENANTS}
    markers = {t: {_marker(t, i) for i in range(len(TOPICS))} for t in TENANTS}
    vocabulary = [w for _, s in TOPICS for w in s.rstrip(".").split()] + [
        m for ms in markers.values() for m in ms
    ]
    rng = random.Random(20261130)
    searched = refused_foreign = hits_seen = 0
    for _ in range(1000):
        tenant = rng.choice(TENANTS)
        if rng.random() < 0.1:  # try another tenant's collection: always 403
            other = rng.choice([t for t in TENANTS if t != tenant])
            response = service.client.post(
                f"/v1/collections/{other}-kb/search", headers=keys[tenant], json={"query": "x"}
            )
            assert response.status_code == 403, response.text
            refused_foreign += 1
            continue
        query = " ".join(rng.sample(vocabulary, rng.randint(1, 6)))
        body = {
            "query": query,
            "top_k": rng.randint(1, 20),
            "mode": rng.choice(["hybrid", "dense", "bm25"]),
        }
        response = service.client.post(
            f"/v1/collections/{tenant}-kb/search", headers=keys[tenant], json=body
        )
        assert response.status_code == 200, response.text
        searched += 1
        foreign = set().union(*(markers[t] for t in TENANTS if t != tenant))
        for hit in response.json()["hits"]:
            hits_seen += 1
            assert hit["source"] in own_files[tenant], (tenant, hit["source"])
            assert not any(m in hit["text"] for m in foreign), (tenant, hit["text"])
    assert searched + refused_foreign == 1000 and searched > 800 and hits_seen > 2000
    # answers too: citations come from the asking tenant only
    for tenant in TENANTS:
        other = next(t for t in TENANTS if t != tenant)
        answer = service.client.post(
            f"/v1/collections/{tenant}-kb/ask",
            headers=keys[tenant],
            json={"question": f"What is the code word {_marker(other, 1)} for backups?"},
        ).json()
        for citation in answer["citations"]:
            assert citation["source"] in own_files[tenant]
            assert _marker(other, 1) not in citation["passage"]
    metrics = service.metrics()
    assert "ragstrata_tenancy_violations_total 0.0" in metrics


def test_foreign_result_is_dropped_counted_and_fails_an_answer(
    service: Service, tmp_path: Path
) -> None:
    """Simulate a store that holds another tenant's chunk (the one thing layers 1-2 of
    ragstrata.service.tenancy prevent) and check layer 3 catches it."""
    headers = service.key("delta")
    job = service.upload_texts(
        headers, "delta-kb", {"own.md": "# Own\n\nThe office plant needs water on Mondays."}
    )
    assert job["state"] == "succeeded"
    foreign = tmp_path / "elsewhere" / "foreign.md"
    foreign.parent.mkdir()
    foreign.write_text("# Foreign\n\nThe zebra file belongs to someone else.", encoding="utf-8")
    principal = service.state.keys.verify(headers["Authorization"].removeprefix("Bearer "))
    collection = service.state.registry.collection(principal, "delta-kb")
    report = collection._engine.ingest([foreign])  # bypasses the API on purpose
    assert report.added == 1
    response = service.client.post(
        "/v1/collections/delta-kb/search", headers=headers, json={"query": "zebra file"}
    )
    assert response.status_code == 200
    assert [h["source"] for h in response.json()["hits"]] == ["own.md"]
    response = service.client.post(
        "/v1/collections/delta-kb/ask",
        headers=headers,
        json={"question": "Whom does the zebra file belong to?"},
    )
    assert response.status_code == 500 and response.json()["error"]["code"] == "RS709"
    assert "someone else" not in response.text and str(tmp_path) not in response.text
    metrics = service.metrics()
    value = next(
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("ragstrata_tenancy_violations_total ")
    )
    assert value >= 1
