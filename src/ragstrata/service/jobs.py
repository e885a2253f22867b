"""Ingestion jobs: uploads are indexed in the background, fairly across tenants, with progress
the client can poll and records that outlive a restart.

An upload request stages its files under ``staging/<tenant>/<job_id>/`` and returns at once
(202) with a job id. ``service.ingest_workers`` threads run the jobs in **slices** of at most
``service.ingest_batch_files`` files (one ingest and one journaled commit each) and pick the
next slice round-robin across tenants (the tenant served least recently goes first): a tenant's
100-file upload delays another tenant's small upload by one slice at most, not by the whole
batch. A tenant's own jobs run in the order they were accepted, and two slices of one
collection never run at once. Each tenant may have ``service.max_jobs_per_tenant`` jobs queued
or running; one more is refused with 429 (RS703) before anything is staged.

Job records are kept in ``jobs.sqlite`` next to the tenants' indexes (:class:`JobLog`; the
last :data:`MAX_JOBS_KEPT` of each tenant), written when a job is accepted, after every slice
and when it ends. A job that was queued or running when the server stopped is reported after
the restart as ``failed`` with code RS710 and the files it had indexed (its staged files are
gone: upload the rest again).
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ragstrata.errors import RagError
from ragstrata.index.writer import file_sha256
from ragstrata.service.errors import (
    InterruptedJobError,
    NotFoundError,
    RateLimitedError,
    public_message,
)
from ragstrata.service.keys import Principal
from ragstrata.service.tenancy import Collection, FileOutcome

logger = logging.getLogger(__name__)

MAX_JOBS_KEPT = 500
"""Finished job records kept per tenant, in memory and in ``jobs.sqlite`` (the oldest go first).
Counted per tenant: one tenant's uploads must not push another tenant's history out."""
JOBS_FILE = "jobs.sqlite"
JobState = Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"]
FINAL_STATES: frozenset[str] = frozenset({"succeeded", "partial", "failed", "cancelled"})
_QUEUE_RETRY_S = 5.0
"""``Retry-After`` of a refused upload when the tenant's job queue is full, seconds."""
TURN_S = 10.0
"""Seconds a slice runs before, at its next commit, it yields to a waiting slice when there is
one: it stops there (the commit is durable) and its files go back to the front of its job, to
go on from that commit at the job's next turn. A slice is one file when that file is large, and
a 5 MB upload's slice held every other tenant's upload for its whole length (tens of minutes)."""


TURN_SETUP_RATIO = 3.0
"""A turn lasts at least this many times its slice's setup (the seconds to its first chunks
embedded: parsing and chunking, done again at each turn of a large file, whose committed chunks
are skipped only after chunking): an 8,000-chunk file re-parsed in about 8 s each 10 s turn
spent half its time on it; at 3x, a quarter at most."""


class _SliceYielded(Exception):
    """Raised by a running slice's progress callback at a commit, its turn over and another
    slice waiting (see :data:`TURN_S`)."""


class _SliceStopped(Exception):
    """Raised by a running slice's progress callback, at its next group of chunks embedded,
    when its job was cancelled (its collection is being deleted) or the server is stopping:
    the ingest stops before that group's commit, so a 5 MB file's half-hour slice does not
    hold a delete or a shutdown for its whole length. What earlier commits wrote stays."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(slots=True)
class Job:
    """One upload's ingestion. Mutable; only :class:`JobManager` changes it, under its lock.

    ``files_done`` counts files parsed (accepted or failed) of ``files_total``; ``bytes_*`` the
    bytes parsed; ``chunks_queued`` the chunks the parsed files gave, ``chunks_embedded`` those
    embedded (or reused) and ``chunks_committed`` those searchable so far;
    ``chunks_reweighted`` the chunks whose BM25 weights the end of each slice's ingest updated
    (``IndexWriter.reweight``, after the commits); ``running_s`` the seconds spent running
    (slices only, not queued); ``report`` sums the slices' ingest reports.
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
    chunks_queued: int = 0
    chunks_committed: int = 0
    chunks_reweighted: int = 0
    running_s: float = 0.0
    outcomes: list[FileOutcome] = field(default_factory=list)
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    names: list[str] = field(default_factory=list)
    """Names of the files queued for ingestion (the upload's accepted files)."""
    hashes: dict[str, str] = field(default_factory=dict)
    """sha256 of each queued file's bytes, by name: what the job claims as ``indexed`` after a
    stop must be these bytes, not an earlier upload's version still in the index."""
    shown: float = 0.0
    """The highest ``fraction`` reported while running (not recorded): the estimate falls when
    a slice parses files whose chunks are not committed yet, and a progress bar must not run
    backwards (trial 40: 0.47 then 0.01 for two minutes)."""

    def expected(self, names: Sequence[str]) -> dict[str, str]:
        """``names`` with the sha256 of the job's bytes (``""`` when the record has none)."""
        return {n: self.hashes.get(n, "") for n in names}

    def unreported(self) -> list[str]:
        """The queued files that have no outcome yet, in upload order."""
        seen = {o.name for o in self.outcomes}
        return [n for n in self.names if n not in seen]

    def interrupt(self, how: str) -> dict[str, str]:
        """List each queued file without an outcome as ``not_indexed`` (RS710) and return the
        job's RS710 error, ``how`` saying what stopped it. Call under the manager's lock."""
        missed = self.unreported()
        self.outcomes += [
            FileOutcome(n, "not_indexed", InterruptedJobError.code, "upload it again")
            for n in missed
        ]
        indexed = sum(o.status == "indexed" for o in self.outcomes)
        self.files_done = max(self.files_done, indexed)  # a record saved before they were
        return {
            "code": InterruptedJobError.code,
            "message": f"{how}: {indexed} of {self.files_total} files were indexed; "
            + (
                f"{len(missed)} not (listed under 'files' as not_indexed): upload them again"
                if missed
                else "the files are listed under 'files'"
            ),
        }

    def to_json(self) -> dict[str, Any]:
        """The job as the API returns it (``GET /v1/jobs/{job_id}``)."""
        total = self.files_total
        # a job stopped before its end keeps its real share (4 of 7 files is not 1.0)
        stopped = self.state == "cancelled" or (
            self.error is not None and self.error.get("code") == InterruptedJobError.code
        )
        if total and stopped:  # the files it indexed, as ``files`` lists them (trial 40: a
            # cancelled job with no file indexed said 1.0, files parsed but not committed)
            fraction = sum(o.status == "indexed" for o in self.outcomes) / total
        elif total and self.state not in FINAL_STATES:
            fraction = self.files_done / total
            if self.chunks_queued:  # a large file parsed is not indexed yet
                fraction *= min(1.0, self.chunks_committed / self.chunks_queued)
            fraction = self.shown = max(self.shown, fraction)
        else:
            fraction = 1.0 if self.state in FINAL_STATES else 0.0
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
                "chunks_queued": self.chunks_queued,
                "chunks_committed": self.chunks_committed,
                "chunks_reweighted": self.chunks_reweighted,
                "chunks_per_s": (
                    round(self.chunks_embedded / self.running_s, 2) if self.running_s > 0 else None
                ),
                "running_s": round(self.running_s, 3),
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

    def record(self) -> dict[str, Any]:
        """Everything needed to rebuild the job (:meth:`from_record`), as JSON-able data."""
        return self.to_json() | {
            "tenant": self.tenant,
            "rejected": len(self.rejected),
            "names": self.names,
            "hashes": self.hashes,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Job:
        """The job :meth:`record` wrote. Raises KeyError/TypeError/ValueError when malformed."""
        files = [
            FileOutcome(f["name"], f["status"], f["code"] or "", f["reason"] or "")
            for f in data["files"]
        ]
        n_rejected = int(data["rejected"])
        progress = data["progress"]
        return cls(
            job_id=str(data["job_id"]),
            tenant=str(data["tenant"]),
            collection=str(data["collection"]),
            files_total=int(progress["files_total"]),
            rejected=files[:n_rejected],
            names=[str(n) for n in data.get("names", [])],
            hashes={str(k): str(v) for k, v in data.get("hashes", {}).items()},  # 2026-12-06
            state=data["state"],
            created=str(data["created"]),
            started=data["started"],
            finished=data["finished"],
            files_done=int(progress["files_done"]),
            bytes_done=int(progress["bytes_done"]),
            bytes_total=int(progress["bytes_total"]),
            chunks_embedded=int(progress["chunks_embedded"]),
            chunks_queued=int(progress.get("chunks_queued", 0)),  # records before 2026-12-02
            chunks_committed=int(progress.get("chunks_committed", 0)),
            chunks_reweighted=int(progress.get("chunks_reweighted", 0)),  # before 2026-12-05
            running_s=float(progress.get("running_s", 0.0)),
            outcomes=files[n_rejected:],
            report=data["report"],
            error=data["error"],
        )


class JobLog:
    """Job records in a SQLite file (``<data_dir>/jobs.sqlite``): one row per job, its
    :meth:`Job.record` as JSON, the newest :data:`MAX_JOBS_KEPT` of each tenant kept.
    Thread-safe (one connection behind a lock; WAL journal, so a write is durable when
    :meth:`save` returns)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "job_id TEXT UNIQUE NOT NULL, body TEXT NOT NULL, tenant TEXT)"
        )
        self._add_tenant_column()
        self._db.execute("CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs (tenant, seq)")

    def _add_tenant_column(self) -> None:
        """Give a file written before records were kept per tenant its ``tenant`` column, in
        one write transaction (two processes opening it at once: one adds it, the other finds
        it; review 41)."""
        if "tenant" in self._columns():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if "tenant" not in self._columns():
                self._db.execute("ALTER TABLE jobs ADD COLUMN tenant TEXT")
                for seq, body in self._db.execute("SELECT seq, body FROM jobs").fetchall():
                    try:
                        tenant = str(json.loads(body)["tenant"])
                    except (KeyError, TypeError, ValueError):
                        continue  # unreadable: load() logs and skips it
                    self._db.execute("UPDATE jobs SET tenant = ? WHERE seq = ?", (tenant, seq))
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _columns(self) -> set[str]:
        return {str(row[1]) for row in self._db.execute("PRAGMA table_info(jobs)")}

    def load(self) -> list[Job]:
        """Every readable record, oldest first (an unreadable row is logged and skipped)."""
        with self._lock:
            rows = self._db.execute("SELECT job_id, body FROM jobs ORDER BY seq").fetchall()
        jobs = []
        for job_id, body in rows:
            try:
                jobs.append(Job.from_record(json.loads(body)))
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning("job record %s in %s is unreadable (%s)", job_id, self.path, exc)
        return jobs

    def save(self, job: Job) -> None:
        """Insert or replace ``job``'s record; drops its tenant's oldest records beyond
        :data:`MAX_JOBS_KEPT`."""
        body = json.dumps(job.record())
        with self._lock:
            self._db.execute(
                "INSERT INTO jobs (job_id, body, tenant) VALUES (?, ?, ?) "
                "ON CONFLICT(job_id) DO UPDATE SET body = excluded.body",
                (job.job_id, body, job.tenant),
            )
            self._db.execute(
                "DELETE FROM jobs WHERE tenant = ? AND seq <= (SELECT seq FROM jobs "
                "WHERE tenant = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                (job.tenant, job.tenant, MAX_JOBS_KEPT),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(slots=True)
class _Pending:
    """A job with files still to ingest."""

    job: Job
    collection: Collection
    files: deque[Path]
    staging: Path
    started_at: float = 0.0
    dropped: bool = False
    """Set (under the lock) when the job was cancelled with its collection: a slice still
    running leaves the final job's outcomes and report alone."""
    carried: set[str] = field(default_factory=set)
    """Files a yielded turn indexed whole and counted in the job's report: the turn that ends
    them finds them ``unchanged`` and must not count them again."""


def _add_to_report(job: Job, pending: _Pending, **counts: int) -> None:
    """Add ``counts`` (``added``, ``updated``, ``reindexed``, ``unchanged``, ``chunks``,
    ``reweighted``) to ``job``'s report, the sum of its turns. Call under the manager's lock."""
    total: dict[str, Any] = {"added": 0, "updated": 0, "reindexed": 0, "unchanged": 0, "chunks": 0}
    total.update(job.report or {})
    for key, value in counts.items():
        total[key] = total.get(key, 0) + value
    total["seconds"] = round(time.perf_counter() - pending.started_at, 3)
    job.report = total


def _add_turn_changes(job: Job, pending: _Pending, changes: Mapping[str, str], chunks: int) -> None:
    """Add to ``job``'s report what a turn that did not finish changed: ``changes`` maps each
    file to ``added``/``updated`` (``Collection.turn_changes``), ``chunks`` it committed. Call
    under the manager's lock."""
    kinds = list(changes.values())
    _add_to_report(
        job, pending, added=kinds.count("added"), updated=kinds.count("updated"), chunks=chunks
    )


class JobManager:
    """Runs ingestion jobs on ``workers`` threads, ``batch_files`` files per slice, round-robin
    across tenants; ``max_per_tenant`` jobs queued or running per tenant.

    ``log`` persists the records (None: memory only); jobs it holds that never finished are
    marked failed (RS710) at once, with the files ``held(tenant, collection, names)`` says
    their collection's index holds whole listed as ``indexed`` (a server killed mid-slice had
    indexed some: they were reported ``not_indexed``), and ``settle(tenant, collection,
    files)`` puts their collection's ``uploads/`` back as its index holds them.
    ``on_failed(collection)`` is called when a job that ran fails, before its state is
    published; ``on_finish(job, collection)`` after each job ends (``collection`` is None for
    a job that never ran).
    """

    def __init__(
        self,
        *,
        workers: int,
        batch_files: int = 4,
        max_per_tenant: int = 20,
        log: JobLog | None = None,
        on_finish: Callable[[Job, Collection | None], None] | None = None,
        on_failed: Callable[[Collection], None] | None = None,
        held: Callable[[str, str, Mapping[str, str]], list[FileOutcome]] | None = None,
        settle: Callable[[str, str, Mapping[str, str]], None] | None = None,
    ) -> None:
        self._batch = batch_files
        self._held = held
        self._settle = settle
        self._max_per_tenant = max_per_tenant
        self._log = log
        self._on_finish = on_finish
        self._on_failed = on_failed
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._kept: dict[str, OrderedDict[str, None]] = {}  # tenant -> its job ids, oldest first
        self._queues: dict[str, deque[_Pending]] = {}
        self._served: dict[str, int] = {}  # tenant -> turn it was last served (round robin)
        self._turn = 0
        self._busy: set[str] = set()  # job ids with a slice running
        self._finishing: set[str] = set()  # job ids whose final record is being written
        self._busy_collections: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closing = False
        if log is not None:
            self._restore(log)
        self._threads = [
            threading.Thread(target=self._work, name=f"ragstrata-job-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def new_id() -> str:
        """A fresh, unguessable job id (16 hex digits)."""
        return secrets.token_hex(8)

    # ------------------------------------------------------------------ accepting
    def check_capacity(self, tenant: str) -> None:
        """RateLimitedError (429, RS703) when ``tenant`` already has ``max_per_tenant`` jobs
        queued or running."""
        with self._lock:
            self._check_capacity(tenant)

    def _check_capacity(self, tenant: str) -> None:
        pending = len(self._queues.get(tenant, ()))
        if pending >= self._max_per_tenant:
            raise RateLimitedError(
                f"tenant {tenant!r} already has {pending} ingestion jobs queued or running "
                f"(service.max_jobs_per_tenant={self._max_per_tenant}); wait for one to finish "
                "(GET /v1/jobs) and upload again",
                retry_after_s=_QUEUE_RETRY_S,
            )

    def submit(
        self,
        job_id: str,
        collection: Collection,
        staged: Sequence[Path],
        *,
        rejected: Sequence[FileOutcome] = (),
    ) -> Job:
        """Queue the ingestion of ``staged`` files (all in one staging dir) into
        ``collection``; ``rejected`` files failed the upload checks and are only reported.
        RateLimitedError (429) when the tenant's queue is full."""
        job = Job(
            job_id=job_id,
            tenant=collection.tenant,
            collection=collection.name,
            files_total=len(staged) + len(rejected),
            rejected=list(rejected),
            files_done=len(rejected),
            bytes_total=sum(p.stat().st_size for p in staged),
            names=[p.name for p in staged],
            hashes={p.name: file_sha256(p) for p in staged},
        )
        if not staged:
            self._remember(job)
            self._finish(job, None, "failed", None)
            return job
        with self._lock:
            self._check_capacity(job.tenant)
            self._remember_locked(job)
            self._queues.setdefault(job.tenant, deque()).append(
                _Pending(job, collection, deque(staged), staged[0].parent)
            )
            self._wake.notify()
        self._save(job)
        return job

    def _remember(self, job: Job) -> None:
        with self._lock:
            self._remember_locked(job)

    def _remember_locked(self, job: Job) -> None:
        """Keep ``job``; forget its tenant's oldest finished jobs beyond :data:`MAX_JOBS_KEPT`
        (a job still queued or running is never forgotten)."""
        self._jobs[job.job_id] = job
        kept = self._kept.setdefault(job.tenant, OrderedDict())
        kept[job.job_id] = None
        while len(kept) > MAX_JOBS_KEPT:
            oldest = next(iter(kept))
            if self._jobs[oldest].state not in FINAL_STATES:
                break
            kept.popitem(last=False)
            del self._jobs[oldest]

    # ------------------------------------------------------------------ reading
    def get(self, principal: Principal, job_id: str) -> dict[str, Any]:
        """The job as JSON; NotFoundError unless it exists *and* belongs to the caller's tenant
        (another tenant's job id answers exactly like an unknown one)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.tenant != principal.tenant:
                raise NotFoundError(f"no job {job_id[:40]!r}")
            return job.to_json()

    def for_tenant(self, principal: Principal) -> list[dict[str, Any]]:
        """The caller's jobs, newest first (read from its own list: other tenants' jobs are
        not scanned)."""
        with self._lock:
            kept = self._kept.get(principal.tenant, OrderedDict[str, None]())
            return [self._jobs[job_id].to_json() for job_id in reversed(kept)]

    def active(self) -> int:
        """Jobs queued or running."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def busy(self, tenant: str, collection: str) -> bool:
        """Whether ``tenant``'s ``collection`` has a job queued or running."""
        with self._lock:
            return any(p.job.collection == collection for p in self._queues.get(tenant, ()))

    def cancel_collection(self, tenant: str, collection: str, *, reason: str) -> int:
        """Cancel ``tenant``'s jobs on ``collection`` (a slice already running stops at its next
        group of chunks embedded; no further slice starts); returns how many were cancelled.
        Each of their files is ``not_indexed`` with ``reason``, those indexed already too (the
        collection goes with them); a failed file keeps its error."""
        with self._lock:
            queue = self._queues.get(tenant, deque())
            dropped = [p for p in queue if p.job.collection == collection]
            self._queues[tenant] = deque(p for p in queue if p.job.collection != collection)
            for pending in dropped:  # every file is gone with the collection: say so
                pending.dropped = True
                # those its slices indexed too (trial 24: listed as indexed in a collection
                # that no longer exists)
                pending.job.outcomes = [
                    FileOutcome(o.name, "not_indexed", NotFoundError.code, reason)
                    if o.status == "indexed"
                    else o
                    for o in pending.job.outcomes
                ]
                pending.job.outcomes += [
                    FileOutcome(n, "not_indexed", NotFoundError.code, reason)
                    for n in pending.job.unreported()
                ]
        for pending in dropped:
            self._end(pending, "cancelled", {"code": NotFoundError.code, "message": reason})
        return len(dropped)

    # ------------------------------------------------------------------ running
    def _runnable(self, pending: _Pending) -> bool:
        """Whether a slice of ``pending``'s job may start now (call with the lock held): none
        of the job runs (jobs of a tenant run in order) and none of its collection does."""
        key = (pending.job.tenant, pending.job.collection)
        return pending.job.job_id not in self._busy and key not in self._busy_collections

    def _next_slice(self) -> tuple[_Pending, list[Path]] | None:
        """The next slice to run (call with the lock held): the first runnable job of the
        tenant served least recently."""
        best: _Pending | None = None
        for tenant in sorted(self._queues, key=lambda t: self._served.get(t, -1)):
            for pending in self._queues[tenant]:
                if not self._runnable(pending):
                    continue
                best = pending
                break
            if best is not None:
                break
        if best is None:
            return None
        self._turn += 1
        self._served[best.job.tenant] = self._turn
        files = [best.files.popleft() for _ in range(min(self._batch, len(best.files)))]
        self._busy.add(best.job.job_id)
        self._busy_collections.add((best.job.tenant, best.job.collection))
        return best, files

    def _work(self) -> None:
        while True:
            with self._lock:
                picked = None
                while picked is None:
                    if self._closing:  # checked before every pick: a stop drains nothing
                        return
                    picked = self._next_slice()
                    if picked is None:
                        self._wake.wait()
            pending, files = picked
            try:
                self._run_slice(pending, files)
            finally:
                with self._lock:
                    self._busy.discard(pending.job.job_id)
                    self._busy_collections.discard((pending.job.tenant, pending.job.collection))
                    self._wake.notify_all()

    def _someone_waits(self, running: _Pending) -> bool:
        """Whether, were ``running``'s slice to end now, the next pick (:meth:`_next_slice`)
        would be another job's slice (call with the lock held): the condition for a slice whose
        turn is over to yield. A job of the same tenant queued after it would not be picked
        (a tenant's jobs run in order), so it does not make the slice yield in vain."""
        freed = (running.job.tenant, running.job.collection)
        for tenant in sorted(self._queues, key=lambda t: self._served.get(t, -1)):
            for pending in self._queues[tenant]:
                if pending is running:
                    return False
                key = (pending.job.tenant, pending.job.collection)
                if pending.job.job_id not in self._busy and (
                    key not in self._busy_collections or key == freed
                ):
                    return True
        return False

    def _run_slice(self, pending: _Pending, files: list[Path]) -> None:
        """Ingest ``files`` of ``pending``'s job; at a commit :data:`TURN_S` seconds or more
        into the slice, with another slice waiting, stop there and put the files back at the
        front of the job (their move into ``uploads/`` is done, the commits kept)."""
        job, collection = pending.job, pending.collection
        with self._lock:
            if job.state in FINAL_STATES:  # cancelled while this slice waited
                return
            if job.state == "queued":
                job.state = "running"
                job.started = _now()
                pending.started_at = time.perf_counter()
            files_before, bytes_before = job.files_done, job.bytes_done
        slice_bytes = sum(_size(p) for p in files)
        self._save(job)

        slice_started = time.perf_counter()
        running_before, reweighted_before = job.running_s, job.chunks_reweighted
        committed_before = job.chunks_committed
        setup_s: list[float] = []  # seconds to the first chunks embedded (parse and chunking)

        def progress(event: str, done: int, total: int) -> None:
            with self._lock:
                # "embed" comes before its commit's journal: stopping there writes nothing
                if event == "embed" and (pending.dropped or self._closing):
                    raise _SliceStopped
                job.running_s = running_before + time.perf_counter() - slice_started
                if event == "parse":
                    job.files_done = files_before + done
                elif event == "bytes":
                    job.bytes_done = bytes_before + done
                elif event == "chunk":
                    job.chunks_queued += done
                elif event == "embed":
                    job.chunks_embedded += done
                    if not setup_s:
                        setup_s.append(time.perf_counter() - slice_started)
                elif event == "commit":
                    job.chunks_committed += done
                    turn_s = max(TURN_S, TURN_SETUP_RATIO * (setup_s[0] if setup_s else 0.0))
                    if (  # counted first: the commit is durable
                        time.perf_counter() - slice_started >= turn_s
                        and not self._closing
                        and self._someone_waits(pending)
                    ):
                        raise _SliceYielded
                elif event == "reweight":  # cumulative within a pass, like parse
                    # the re-analysis pass and the re-weighting pass each count from 0 (review
                    # 41): shown as their maximum; the slice's end sets the distinct count
                    job.chunks_reweighted = max(job.chunks_reweighted, reweighted_before + done)

        try:
            report, outcomes = collection.ingest_staged(files, progress=progress)
        except _SliceYielded:
            # the files now lie in uploads/: the job's next turn takes them from there, and
            # what is indexed whole is skipped as unchanged, a large file goes on after its
            # committed chunks (the writer resumes a partly committed document)
            if pending.dropped:  # cancelled with its collection: the job is final
                return
            moved = [collection.uploads / p.name for p in files]
            try:  # the report counts what this turn did; the next finds it unchanged
                changes = collection.turn_changes(
                    job.expected([p.name for p in files if p.name not in pending.carried])
                )
            except Exception:  # the index could not be read: the report undercounts
                logger.exception("job %s: reading what its yielded slice indexed", job.job_id)
                changes = {}
            with self._lock:
                pending.carried.update(changes)
                _add_turn_changes(job, pending, changes, job.chunks_committed - committed_before)
                pending.files.extendleft(reversed(moved))
                job.files_done, job.bytes_done = files_before, bytes_before
                # the next turn counts what is left: nothing embedded waits uncommitted
                job.chunks_queued = job.chunks_embedded = job.chunks_committed
                job.running_s = running_before + time.perf_counter() - slice_started
                job.chunks_reweighted = reweighted_before
            logger.info("job %s on %s: yields its turn", job.job_id, collection.name)
            return
        except _SliceStopped:
            # a cancelled job is final already (its files went with the collection); a
            # stopping server interrupts it (shutdown), naming the files this slice indexed
            done_files: list[FileOutcome] = []
            stopped_changes: dict[str, str] = {}
            if not pending.dropped:
                expected = job.expected([p.name for p in files])
                try:
                    done_files = collection.outcomes_of(expected)
                    # what the slice changed, counted before the backups go (trial 24: the
                    # report said 8 added, 74 chunks; the collection held 11 and 98)
                    stopped_changes = dict(
                        collection.turn_changes(
                            {n: h for n, h in expected.items() if n not in pending.carried}
                        )
                    )
                except Exception:  # the index could not be read: the files count as not indexed
                    logger.exception("job %s: reading what its stopped slice indexed", job.job_id)
                try:
                    collection.settle_stopped(expected)  # uploads/ as the index holds them
                except Exception:
                    logger.exception("job %s: putting back its uploaded files", job.job_id)
            with self._lock:
                if not pending.dropped:
                    job.outcomes.extend(done_files)
                    _add_turn_changes(
                        job, pending, stopped_changes, job.chunks_committed - committed_before
                    )
                job.running_s = running_before + time.perf_counter() - slice_started
            logger.info("job %s on %s: slice stopped", job.job_id, collection.name)
            return
        except Exception as exc:
            if isinstance(exc, RagError):
                logger.warning("job %s on %s failed: %s", job.job_id, collection.name, exc)
                code = exc.code
                message = public_message(exc, hidden=[collection.root])
            else:
                logger.exception("job %s on %s crashed", job.job_id, collection.name)
                code, message = "RS700", f"internal error: {type(exc).__name__}"
            self._drop(pending)
            self._failed_slice(pending, files, code, message)
            self._end(pending, "failed", {"code": code, "message": message})
            return
        with self._lock:
            job.running_s = running_before + time.perf_counter() - slice_started
            if pending.dropped:  # cancelled with its collection while it committed: final
                return
            job.outcomes.extend(outcomes)
            job.files_done = files_before + len(files)
            job.bytes_done = bytes_before + slice_bytes
            job.chunks_reweighted = reweighted_before + report.reweighted
            counted = {o.name for o in outcomes if o.status == "indexed"} & pending.carried
            pending.carried -= counted
            _add_to_report(
                job,
                pending,
                added=report.added,
                updated=report.updated,
                # files re-indexed for a new parser or chunker (trial 40: a re-upload of 20
                # such files reported "updated: 1, unchanged: 0" beside 538 chunks)
                reindexed=report.reindexed,
                unchanged=max(0, report.unchanged - len(counted)),
                chunks=report.chunks,
                reweighted=report.reweighted,
            )
            done = not pending.files
            if done:
                queue = self._queues.get(job.tenant, deque())
                if pending in queue:
                    queue.remove(pending)
        if not done:
            self._save(job)
            return
        indexed = any(o.status == "indexed" for o in job.outcomes)
        failed = job.rejected or any(o.status == "failed" for o in job.outcomes)
        state: JobState = "partial" if failed and indexed else "failed" if failed else "succeeded"
        error = None
        if state == "failed":  # the job's own error says so too (it was null)
            first = next(o for o in [*job.rejected, *job.outcomes] if o.status == "failed")
            error = {
                "code": first.code,
                "message": f"none of the {job.files_total} files was indexed; each file's code "
                "and reason are under 'files'",
            }
        self._end(pending, state, error)

    def _failed_slice(
        self, pending: _Pending, files: Sequence[Path], code: str, message: str
    ) -> None:
        """After an ingest slice failed as a whole (an error, not a bad file): each of its
        files is listed, ``indexed`` when the index holds the job's bytes of it (committed
        before the failure), else ``failed`` with the slice's error, and so is each file of
        the job that no slice reached (``failed``, the same code: upload it again);
        ``uploads/`` is put back as the index holds it (an earlier version restored, a new
        file removed). Before, the job listed no file at all and ``uploads/`` kept bytes the
        index did not hold."""
        job, collection = pending.job, pending.collection
        if pending.dropped:  # cancelled with its collection: listed already, nothing to settle
            return
        expected = job.expected([p.name for p in files])
        held: list[FileOutcome] = []
        try:
            held = [o for o in collection.outcomes_of(expected) if o.status == "indexed"]
        except Exception:  # the index could not be read: the files count as failed
            logger.exception("job %s: reading what its failed slice indexed", job.job_id)
        # only the files the slice moved into uploads/ (a failure inside the move left the
        # rest staged, and uploads/ holds an earlier, indexed version of such a name)
        moved = [p.name for p in files if p.parent == collection.uploads or not p.exists()]
        try:
            collection.settle_stopped(job.expected(moved))
        except Exception:
            logger.exception("job %s: putting back its uploaded files", job.job_id)
        indexed = {o.name for o in held}
        # the files no slice reached are listed too (review 33: a job of 4 one-file slices
        # failing at the second listed 2 files and called all 4 done); their staged copies
        # go with the job
        untouched = [p.name for p in pending.files]
        with self._lock:
            job.outcomes.extend(held)
            job.outcomes.extend(
                FileOutcome(name, "failed", code, message)
                for name in expected
                if name not in indexed
            )
            job.outcomes.extend(
                FileOutcome(
                    name,
                    "failed",
                    code,
                    f"not ingested: the job stopped at an earlier failure ({message}); "
                    "upload it again",
                )
                for name in untouched
            )

    def _drop(self, pending: _Pending) -> None:
        with self._lock:
            queue = self._queues.get(pending.job.tenant, deque())
            if pending in queue:
                queue.remove(pending)

    def _end(self, pending: _Pending, state: JobState, error: dict[str, str] | None) -> None:
        shutil.rmtree(pending.staging, ignore_errors=True)
        if state == "failed" and self._on_failed is not None:
            try:  # before the state is published: a client that sees it sees the cleanup done
                self._on_failed(pending.collection)
            except Exception:
                logger.exception("after the failure of job %s", pending.job.job_id)
        self._finish(pending.job, pending.collection, state, error)

    def _finish(
        self,
        job: Job,
        collection: Collection | None,
        state: JobState,
        error: dict[str, str] | None,
    ) -> None:
        with self._lock:
            if job.state in FINAL_STATES or job.job_id in self._finishing:
                return
            self._finishing.add(job.job_id)
            final = Job.from_record(json.loads(json.dumps(job.record())))
        final.state, final.error, final.finished = state, error, _now()
        if state != "cancelled":
            final.files_done = final.files_total
        self._save(final)  # durable before any client can see the final state
        with self._lock:
            job.state, job.error, job.finished = final.state, final.error, final.finished
            job.files_done = final.files_done
            self._finishing.discard(job.job_id)
        if self._on_finish is not None:
            try:
                self._on_finish(job, collection)
            except Exception:
                logger.exception("after job %s", job.job_id)

    # ------------------------------------------------------------------ durability
    def _save(self, job: Job) -> None:
        if self._log is None:
            return
        with self._lock:
            snapshot = Job.from_record(json.loads(json.dumps(job.record())))
        try:
            self._log.save(snapshot)
        except sqlite3.Error as exc:  # the job runs on; only its record after a restart is lost
            logger.warning("could not record job %s in %s: %s", job.job_id, self._log.path, exc)

    def _restore(self, log: JobLog) -> None:
        for job in log.load():
            if job.state not in FINAL_STATES:
                unreported = job.expected(job.unreported())
                if self._held is not None:  # what its slice had indexed when the server died
                    job.outcomes += self._held(job.tenant, job.collection, unreported)
                if self._settle is not None:  # uploads/ as the index holds them
                    self._settle(job.tenant, job.collection, unreported)
                job.state = "failed"
                job.finished = _now()
                job.error = job.interrupt("the server stopped before this job finished")
                log.save(job)
            self._remember_locked(job)

    def shutdown(self) -> None:
        """Stop the running slices at their next group of chunks embedded (what they committed
        stays), then cancel what is left, each job naming the files it indexed (idempotent)."""
        with self._lock:
            self._closing = True
            self._wake.notify_all()
        for thread in self._threads:
            thread.join()
        with self._lock:
            left = [p for q in self._queues.values() for p in q]
            self._queues.clear()
        for pending in left:
            job = pending.job
            try:  # what earlier turns of the job indexed whole
                held = pending.collection.outcomes_of(job.expected(job.unreported()))
            except Exception:
                logger.exception("job %s: reading what it had indexed", job.job_id)
                held = []
            moved = [p.name for p in pending.files if p.parent == pending.collection.uploads]
            if moved:  # a turn that yielded had moved them: uploads/ as the index holds them
                try:
                    pending.collection.settle_stopped(job.expected(moved))
                except Exception:
                    logger.exception("job %s: putting back its uploaded files", job.job_id)
            with self._lock:
                job.outcomes += held
                error = pending.job.interrupt("the server stopped")
            self._end(pending, "cancelled", error)
        if self._log is not None:
            self._log.close()
            self._log = None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
