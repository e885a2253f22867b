"""``IngestReport.status`` and ``documents``: what the CLI's exit status (0 / 3 / 1) reads."""

from __future__ import annotations

import pytest

from ragstrata.index.report import IngestReport
from ragstrata.types import IngestFailure

BAD = IngestFailure("bad.pdf", "RS202", "not a PDF")


@pytest.mark.parametrize(
    ("counts", "status"),
    [
        ({}, "failed"),
        ({"added": 1}, "partial"),
        ({"updated": 1}, "partial"),
        ({"unchanged": 1}, "partial"),
        # a run that only re-indexed documents under a new configuration still did its work
        ({"reindexed": 2}, "partial"),
        ({"pruned": 3}, "failed"),
    ],
)
def test_status_with_a_failure(counts: dict[str, int], status: str) -> None:
    assert IngestReport(**counts, failures=[BAD]).status == status


def test_status_without_failures_is_ok() -> None:
    assert IngestReport().status == "ok"
    assert IngestReport(reindexed=1).status == "ok"


def test_documents_counts_every_document_found() -> None:
    report = IngestReport(added=1, updated=2, unchanged=3, reindexed=4, pruned=5, stale=6)
    assert report.documents == 10
    assert report.to_json()["status"] == "ok"
