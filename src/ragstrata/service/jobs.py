"""Ingestion jobs: uploads are indexed in the background, with progress the client can poll.

An upload request stages its files under ``<collection>/staging/<job_id>/`` and returns at once
(202) with a job id. A small thread pool (``service.ingest_workers``) runs the jobs; each takes
its collection's write lock, so reads of that collection wait (up to ``service.read_wait_s``)
while other collections are unaffected. Job records live in memory (the last
:data:`MAX_JOBS_KEPT`); a restart forgets them, never the indexed documents.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ragstrata.errors import RagError
from ragstrata.service.errors import NotFoundError
from ragstrata.service.keys import Principal
from ragstrata.service.tenancy import Collection, FileOutcome

logger = logging.getLogger(__name__)

MAX_JOBS_KEPT = 1000
JobState = Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"]
FINAL_STATES: frozenset[str] = frozenset({"succeeded", "partial", "failed", "cancelled"})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(slots=True)
class Job:
    """One upload's ingestion. Mutable; only :class:`JobManager` changes it, under its lock.

    ``files_done`` counts files parsed (accepted or failed) of ``files_total``; ``bytes_*`` the
    bytes parsed; ``chunks_embedded`` the chunks embedded so far.
    """

    job_id: str
    tenant: str
    collection: str
    files_total: int
    rejected: list[FileOutcome]
    state: JobState = "queued"
    created: str = field(default_factory=_now)
    started: str | None = None
    finished: str | None = None
    files_done: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    chunks_embedded: int = 0
    outcomes: list[FileOutcome] = field(default_factory=list)
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The job as the API returns it (``GET /v1/jobs/{job_id}``)."""
        total = self.files_total
        fraction = (
            1.0 if self.state in FINAL_STATES else (self.files_done / total if total else 0.0)
        )
        return {
            "job_id": self.job_id,
            "collection": self.collection,
            "state": self.state,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "progress": {
                "files_total": total,
                "files_done": self.files_done,
                "bytes_total": self.bytes_total,
                "bytes_done": self.bytes_done,
                "chunks_embedded": self.chunks_embedded,
                "fraction": round(fraction, 4),
            },
            "files": [
                {
                    "name": f.name,
                    "status": f.status,
                    "code": f.code or None,
                    "reason": f.reason or None,
                }
                for f in [*self.rejected, *self.outcomes]
            ],
            "report": self.report,
            "error": self.error,
        }


class JobManager:
    """Runs ingestion jobs on ``workers`` threads; ``on_finish(job)`` is called after each."""

    def __init__(self, *, workers: int, on_finish: Callable[[Job], None] | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragstrata-job")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._on_finish = on_finish

    @staticmethod
    def new_id() -> str:
        """A fresh, unguessable job id (16 hex digits)."""
        return secrets.token_hex(8)

    def submit(
        self,
        job_id: str,
        collection: Collection,
        staged: Sequence[Path],
        *,
        rejected: Sequence[FileOutcome] = (),
    ) -> Job:
        """Queue the ingestion of ``staged`` files (all in one staging dir) into
        ``collection``; ``rejected`` files failed the upload checks and are only reported."""
        job = Job(
            job_id=job_id,
            tenant=collection.tenant,
            collection=collection.name,
            files_total=len(staged) + len(rejected),
            rejected=list(rejected),
            files_done=len(rejected),
            bytes_total=sum(p.stat().st_size for p in staged),
        )
        with self._lock:
            self._jobs[job_id] = job
            while len(self._jobs) > MAX_JOBS_KEPT:
                self._jobs.popitem(last=False)
        if staged:
            self._pool.submit(self._run, job, collection, list(staged))
        else:
            self._finish(job, "failed", None)
        return job

    def get(self, principal: Principal, job_id: str) -> dict[str, Any]:
        """The job as JSON; NotFoundError unless it exists *and* belongs to the caller's tenant
        (another tenant's job id answers exactly like an unknown one)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.tenant != principal.tenant:
                raise NotFoundError(f"no job {job_id[:40]!r}")
            return job.to_json()

    def for_tenant(self, principal: Principal) -> list[dict[str, Any]]:
        """The caller's jobs, newest first."""
        with self._lock:
            return [
                j.to_json() for j in reversed(self._jobs.values()) if j.tenant == principal.tenant
            ]

    def active(self) -> int:
        """Jobs queued or running."""
        with self._lock:
            return sum(j.state in ("queued", "running") for j in self._jobs.values())

    def _run(self, job: Job, collection: Collection, staged: list[Path]) -> None:
        with self._lock:
            job.state = "running"
            job.started = _now()
        started = time.perf_counter()

        def progress(event: str, done: int, total: int) -> None:
            with self._lock:
                if event == "parse":
                    job.files_done = len(job.rejected) + done
                elif event == "bytes":
                    job.bytes_done = done
                elif event == "embed":
                    job.chunks_embedded += done

        try:
            report, outcomes = collection.ingest_staged(staged, progress=progress)
        except RagError as exc:
            logger.warning("job %s on %s failed: %s", job.job_id, collection.name, exc)
            self._finish(job, "failed", {"code": exc.code, "message": str(exc)})
        except Exception as exc:
            logger.exception("job %s on %s crashed", job.job_id, collection.name)
            self._finish(job, "failed", {"code": "RS700", "message": f"internal error: {exc}"})
        else:
            with self._lock:
                job.outcomes = outcomes
                job.report = {
                    "added": report.added,
                    "updated": report.updated,
                    "unchanged": report.unchanged,
                    "chunks": report.chunks,
                    "seconds": round(time.perf_counter() - started, 3),
                }
            indexed = any(o.status == "indexed" for o in outcomes)
            failed = job.rejected or any(o.status == "failed" for o in outcomes)
            state: JobState = (
                "partial" if failed and indexed else "failed" if failed else "succeeded"
            )
            self._finish(job, state, None)
        finally:
            if staged:
                shutil.rmtree(staged[0].parent, ignore_errors=True)

    def _finish(self, job: Job, state: JobState, error: dict[str, str] | None) -> None:
        with self._lock:
            job.state = state
            job.error = error
            job.finished = _now()
            job.files_done = job.files_total
        if self._on_finish is not None:
            self._on_finish(job)

    def shutdown(self) -> None:
        """Finish the running jobs, cancel the queued ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            cancelled = [j for j in self._jobs.values() if j.state == "queued"]
        for job in cancelled:
            self._finish(job, "cancelled", {"code": "RS700", "message": "the server stopped"})
