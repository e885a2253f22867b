"""Helpers of the HTTP service tests (imported by the tests and their conftest)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from ragstrata.service.state import ServiceState

FINAL = ("succeeded", "partial", "failed", "cancelled")


@dataclass
class Service:
    """An app, a client of it (a ``TestClient``, or ``httpx.Client`` on a real server) and its
    shared state, plus helpers."""

    app: FastAPI
    client: httpx.Client
    state: ServiceState

    def key(
        self, tenant: str, *, read_only: bool = False, scopes: tuple[str, ...] | None = None
    ) -> dict[str, str]:
        """Headers carrying a new API key of ``tenant`` (``scopes`` replaces the default)."""
        chosen = scopes or (("read",) if read_only else ("read", "write"))
        key, _ = self.state.keys.create(tenant, scopes=chosen)
        return {"Authorization": f"Bearer {key}"}

    def metrics(self) -> str:
        """``GET /metrics`` with a new key of the ``metrics`` scope; the text."""
        response = self.client.get("/metrics", headers=self.key("ops", scopes=("metrics",)))
        assert response.status_code == 200, response.text
        return response.text

    def upload_texts(
        self, headers: dict[str, str], collection: str, docs: dict[str, str]
    ) -> dict[str, Any]:
        """Upload ``{name: text}`` as JSON and wait for the job; returns the final job."""
        body = {"documents": [{"name": n, "text": t} for n, t in docs.items()]}
        response = self.client.post(
            f"/v1/collections/{collection}/documents", headers=headers, json=body
        )
        assert response.status_code == 202, response.text
        return self.wait(headers, response.json()["job_id"])

    def wait(self, headers: dict[str, str], job_id: str, timeout_s: float = 120) -> dict[str, Any]:
        """Poll the job until it is final."""
        deadline = time.monotonic() + timeout_s
        while True:
            job: dict[str, Any] = self.client.get(f"/v1/jobs/{job_id}", headers=headers).json()
            if job["state"] in FINAL:
                return job
            assert time.monotonic() < deadline, f"job {job_id} still {job['state']}"
            time.sleep(0.05)


ServiceFactory = Callable[..., Service]
"""``factory(**service_config_overrides)`` -> a started service."""

GUIDE = (
    "# Operations guide\n\n## Error codes\n\n"
    "The error ERR_CONN_RESET means the upstream server closed the connection. "
    "Retry the request after a short delay.\n\n"
    "## Rate limits\n\nEach API key may send 100 requests per minute to the users endpoint.\n"
)
BILLING = (
    "<html><head><title>Billing</title></head><body><h1>Billing</h1><h2>Invoices</h2>"
    "<p>Invoices are sent on the first day of each month by email.</p></body></html>"
)
