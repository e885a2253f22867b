"""Property-based API tests generated from the app's own OpenAPI spec (schemathesis): no
request, valid or not, may produce a server error, and every response must match the spec.

Bounded: ``MAX_EXAMPLES`` generated cases per operation and phase, against the ASGI app in
process (no network), with a real key of a tenant that owns an ingested collection ``docs``.
"""

from __future__ import annotations

from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from service_helpers import GUIDE, Service  # noqa: E402

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 40
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_headers(module_service: Service) -> dict[str, str]:
    headers = module_service.key("acme")
    job = module_service.upload_texts(headers, "docs", {"guide.md": GUIDE})
    assert job["state"] == "succeeded", job
    return headers


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_api_conforms_and_never_fails(
    module_service: Service, api_headers: dict[str, str], mode: str
) -> None:
    """Every operation of the spec, ``MAX_EXAMPLES`` generated cases each: valid data
    (``positive``) and data that breaks the schema (``negative``)."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", module_service.app)
    generation = GenerationMode.POSITIVE if mode == "positive" else GenerationMode.NEGATIVE
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    exercised = 0
    for operation in operations:
        # every case carries the tenant's valid key (bad keys are tests/.../test_service_auth);
        # valid cases target the ingested collection so that they reach the search/ask code
        fixed = {"name": "docs"} if "{name}" in operation.path and mode == "positive" else None
        strategy = operation.as_strategy(generation, headers=api_headers, path_parameters=fixed)

        @given(case=strategy)
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def run(case: Any) -> None:
            case.call_and_validate(checks=CHECKS)

        try:
            run()
        except Unsatisfiable:  # nothing to break: an operation without parameters or body
            assert mode == "negative", operation.label
            continue
        exercised += 1
    assert exercised >= (len(operations) if mode == "positive" else 6)
