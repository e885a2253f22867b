"""Fixtures of the HTTP service tests: an app over a temporary data directory with the real
packaged embedder (the session's ``minilm``) and helpers to make keys, upload and wait for jobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed")

from fastapi.testclient import TestClient
from service_helpers import Service, ServiceFactory

from ragstrata.config import IngestConfig, RagConfig, ServiceConfig
from ragstrata.service.app import create_app


def _config(home: Path, **service: Any) -> RagConfig:
    svc = replace(ServiceConfig(rate_limit_per_s=10_000.0, rate_limit_burst=10_000), **service)
    # parse uploads in the calling process: the spawn pool's start-up is tested by the browser
    # test through `ragstrata serve`
    return RagConfig(home=home, ingest=IngestConfig(workers=0), service=svc)


@pytest.fixture()
def service_factory(tmp_path: Path, minilm: Any) -> Iterator[ServiceFactory]:
    """``service_factory(**service_config_overrides)`` -> a started :class:`Service`."""
    started: list[TestClient] = []

    def make(**service: Any) -> Service:
        root = tmp_path / f"svc{len(started)}"
        app = create_app(_config(root / "home", **service), embedder=minilm, data_dir=root)
        client = TestClient(app)
        client.__enter__()
        started.append(client)
        return Service(app, client, app.state.service)

    yield make
    for client in started:
        client.__exit__(None, None, None)


@pytest.fixture()
def service(service_factory: ServiceFactory) -> Service:
    """A service with default limits (generous rate limit)."""
    return service_factory()


@pytest.fixture(scope="module")
def module_service(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Iterator[Service]:
    """A service shared by the tests of one module (they must not depend on each other's
    writes)."""
    root = tmp_path_factory.mktemp("service")
    app = create_app(_config(root / "home"), embedder=minilm, data_dir=root)
    with TestClient(app) as client:
        yield Service(app, client, app.state.service)
