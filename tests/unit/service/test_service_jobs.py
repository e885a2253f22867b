"""The ingestion scheduler alone (:class:`ragstrata.service.jobs.JobManager`): slices taken
round-robin across tenants, a tenant's jobs in order, the per-tenant bound, and job records
that survive a restart. The collection is a stand-in that records what it was asked to ingest
(the real service runs are in tests/integration/service/test_service_hardening.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragstrata.index.report import IngestReport
from ragstrata.service.errors import RateLimitedError
from ragstrata.service.jobs import JobLog, JobManager
from ragstrata.service.keys import Principal
from ragstrata.service.tenancy import FileOutcome


class _Collection:
    """What JobManager needs of a collection: its names and ``ingest_staged``."""

    def __init__(self, tenant: str, name: str, calls: list[tuple[str, list[str]]]) -> None:
        self.tenant, self.name = tenant, name
        self.uploads = Path("/uploads") / tenant / name
        self._calls = calls
        self.gate = threading.Event()
        self.gate.set()

    def outcomes_of(self, names: Sequence[str]) -> list[FileOutcome]:
        return []

    def turn_changes(self, files: Any) -> dict[str, str]:
        return {}  # nothing indexed whole by a stopped slice here

    def settle_stopped(self, files: Any) -> None:
        self.settled = sorted(files)

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        self.gate.wait(10)
        self._calls.append((self.tenant, [p.name for p in staged]))
        report = IngestReport(added=len(staged))
        return report, [FileOutcome(p.name, "indexed") for p in staged]


def _stage(tmp_path: Path, job: str, n: int) -> list[Path]:
    folder = tmp_path / job
    folder.mkdir()
    paths = []
    for i in range(n):
        path = folder / f"{job}-{i}.md"
        path.write_text(f"# {job} {i}\n", encoding="utf-8")
        paths.append(path)
    return paths


def _wait_idle(manager: JobManager) -> None:
    for _ in range(1000):
        if manager.active() == 0:
            return
        threading.Event().wait(0.01)
    raise AssertionError("jobs still active")


def test_slices_go_round_robin_across_tenants(tmp_path: Path) -> None:
    calls: list[tuple[str, list[str]]] = []
    a = _Collection("acme", "kb", calls)
    b = _Collection("globex", "kb2", calls)
    c = _Collection("initech", "kb3", calls)
    manager = JobManager(workers=1, batch_files=2)
    try:
        a.gate.clear()  # hold acme's first slice until the others are queued
        manager.submit("a" * 16, a, _stage(tmp_path, "a", 6))  # type: ignore[arg-type]
        manager.submit("b" * 16, b, _stage(tmp_path, "b", 2))  # type: ignore[arg-type]
        manager.submit("c" * 16, c, _stage(tmp_path, "c", 1))  # type: ignore[arg-type]
        a.gate.set()
        _wait_idle(manager)
    finally:
        manager.shutdown()
    assert calls == [
        ("acme", ["a-0.md", "a-1.md"]),
        ("globex", ["b-0.md", "b-1.md"]),  # not after all of acme's files
        ("initech", ["c-0.md"]),
        ("acme", ["a-2.md", "a-3.md"]),
        ("acme", ["a-4.md", "a-5.md"]),
    ]
    job = manager.get(Principal("k", "acme", ("read",)), "a" * 16)
    assert job["state"] == "succeeded" and job["report"]["added"] == 6
    assert [f["name"] for f in job["files"]] == [f"a-{i}.md" for i in range(6)]


def test_a_tenants_jobs_run_in_order_and_are_bounded(tmp_path: Path) -> None:
    calls: list[tuple[str, list[str]]] = []
    a = _Collection("acme", "kb", calls)
    manager = JobManager(workers=2, batch_files=1, max_per_tenant=2)
    try:
        a.gate.clear()
        manager.submit("1" * 16, a, _stage(tmp_path, "first", 2))  # type: ignore[arg-type]
        manager.submit("2" * 16, a, _stage(tmp_path, "second", 1))  # type: ignore[arg-type]
        with pytest.raises(RateLimitedError, match="max_jobs_per_tenant=2"):
            manager.check_capacity("acme")
        manager.check_capacity("globex")  # another tenant has room
        a.gate.set()
        _wait_idle(manager)
    finally:
        manager.shutdown()
    # two workers, yet one collection's slices never run at once and jobs keep their order
    assert [names for _, names in calls] == [["first-0.md"], ["first-1.md"], ["second-0.md"]]


def test_records_survive_and_unfinished_jobs_fail_after_restart(tmp_path: Path) -> None:
    calls: list[tuple[str, list[str]]] = []
    a = _Collection("acme", "kb", calls)
    log_path = tmp_path / "jobs.sqlite"
    manager = JobManager(workers=1, batch_files=1, log=JobLog(log_path))
    a.gate.clear()
    manager.submit("1" * 16, a, _stage(tmp_path, "one", 3))  # type: ignore[arg-type]
    # the server "dies" while the first slice runs: read the records as a new process would
    # (the manager is never shut down, as with SIGKILL)
    restarted = JobManager(workers=1, log=JobLog(log_path))
    try:
        job = restarted.get(Principal("k", "acme", ("read",)), "1" * 16)
        assert job["state"] == "failed" and job["error"]["code"] == "RS710"
        assert "0 of 3 files were indexed" in job["error"]["message"]
        assert [f["status"] for f in job["files"]] == ["not_indexed"] * 3
    finally:
        a.gate.set()
        _wait_idle(manager)
        manager.shutdown()
        restarted.shutdown()


def test_one_tenants_uploads_do_not_push_out_anothers_job_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from ragstrata.service import jobs

    monkeypatch.setattr(jobs, "MAX_JOBS_KEPT", 3)
    log_path = tmp_path / "jobs.sqlite"
    # a jobs.sqlite of an earlier version (no tenant column) holds globex's one job
    old = sqlite3.connect(log_path)
    old.execute(
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "job_id TEXT UNIQUE NOT NULL, body TEXT NOT NULL)"
    )
    old.commit()
    old.close()
    calls: list[tuple[str, list[str]]] = []
    a = _Collection("acme", "kb", calls)
    b = _Collection("globex", "kb", calls)
    manager = JobManager(workers=1, batch_files=1, log=JobLog(log_path))
    try:
        manager.submit("g" * 16, b, _stage(tmp_path, "g", 1))  # type: ignore[arg-type]
        _wait_idle(manager)
        for i in range(6):  # acme uploads twice as many jobs as are kept
            manager.submit(f"{i}" * 16, a, _stage(tmp_path, f"a{i}", 1))  # type: ignore[arg-type]
            _wait_idle(manager)
        time.sleep(0.2)  # the final records are written after the job leaves the queue
        acme = [j["job_id"] for j in manager.for_tenant(Principal("k", "acme", ("read",)))]
        globex = [j["job_id"] for j in manager.for_tenant(Principal("k", "globex", ("read",)))]
    finally:
        manager.shutdown()
    assert acme == ["5" * 16, "4" * 16, "3" * 16]  # the newest three, newest first
    assert globex == ["g" * 16]
    kept = {j.job_id: j.tenant for j in JobLog(log_path).load()}
    assert kept == {"g" * 16: "globex", "3" * 16: "acme", "4" * 16: "acme", "5" * 16: "acme"}
    restarted = JobManager(workers=0, log=JobLog(log_path))
    try:
        assert restarted.get(Principal("k", "globex", ("read",)), "g" * 16)["state"] == "succeeded"
    finally:
        restarted.shutdown()


def test_an_earlier_job_log_gets_its_tenants(tmp_path: Path) -> None:
    import sqlite3

    written = tmp_path / "written.sqlite"
    manager = JobManager(workers=0, log=JobLog(written))
    try:
        manager.submit("o" * 16, _Collection("acme", "kb", []), _stage(tmp_path, "o", 1))  # type: ignore[arg-type]
    finally:
        manager.shutdown()
    (body,) = sqlite3.connect(written).execute("SELECT body FROM jobs").fetchone()
    log_path = tmp_path / "jobs.sqlite"  # as an earlier version wrote it: no tenant column
    old = sqlite3.connect(log_path)
    old.execute(
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "job_id TEXT UNIQUE NOT NULL, body TEXT NOT NULL)"
    )
    old.execute("INSERT INTO jobs (job_id, body) VALUES (?, ?)", ("o" * 16, body))
    old.execute("INSERT INTO jobs (job_id, body) VALUES (?, ?)", ("x" * 16, "not json"))
    old.commit()
    old.close()
    assert [j.job_id for j in JobLog(log_path).load()] == ["o" * 16]  # unreadable: skipped
    check = sqlite3.connect(log_path)
    assert check.execute("SELECT tenant FROM jobs ORDER BY seq").fetchall() == [("acme",), (None,)]
    check.close()


def test_shutdown_finishes_the_running_slice_and_cancels_the_rest(tmp_path: Path) -> None:
    """A new user's run (2026-12-03): SIGTERM with two upload jobs queued ran both to the end
    (the server exited two minutes later): a worker that finished its slice picked the next
    one before it looked at the stop."""
    calls: list[tuple[str, list[str]]] = []
    a = _Collection("acme", "kb", calls)
    b = _Collection("acme", "kb2", calls)
    manager = JobManager(workers=1, batch_files=2)
    a.gate.clear()  # the first slice runs until the stop is under way
    manager.submit("1" * 16, a, _stage(tmp_path, "first", 6))  # type: ignore[arg-type]
    manager.submit("2" * 16, b, _stage(tmp_path, "second", 2))  # type: ignore[arg-type]
    for _ in range(500):  # until the worker holds the first slice
        if manager.get(Principal("k", "acme", ("read",)), "1" * 16)["state"] == "running":
            break
        threading.Event().wait(0.01)
    stopper = threading.Thread(target=manager.shutdown)
    stopper.start()
    threading.Event().wait(0.2)  # shutdown() is waiting for the running slice
    a.gate.set()
    stopper.join(10)
    assert not stopper.is_alive()
    assert calls == [("acme", ["first-0.md", "first-1.md"])]  # nothing started after the stop
    viewer = Principal("k", "acme", ("read",))
    first, second = manager.get(viewer, "1" * 16), manager.get(viewer, "2" * 16)
    assert first["state"] == second["state"] == "cancelled"
    assert (
        first["error"]["code"] == "RS710"
        and "2 of 6 files were indexed" in (first["error"]["message"])
    )
    # the files not indexed are named (a new user's job listed only the indexed ones)
    assert "4 not (listed under 'files' as not_indexed)" in first["error"]["message"]
    missed = [f["name"] for f in first["files"] if f["status"] == "not_indexed"]
    assert missed == [f"first-{i}.md" for i in range(2, 6)]
    assert {f["code"] for f in first["files"] if f["status"] == "not_indexed"} == {"RS710"}
    assert [f["status"] for f in second["files"]] == ["not_indexed", "not_indexed"]
    # its progress says how far it got (it said 1.0)
    assert first["progress"]["fraction"] == round(2 / 6, 4)
    assert second["progress"]["fraction"] == 0.0


class _LongSlice(_Collection):
    """A slice that embeds for a minute (an ``embed`` event every 10 ms: a 5 MB upload's 4,619
    chunks) unless stopped; the index then holds its first file whole (``outcomes_of``)."""

    def __init__(self, tenant: str, name: str, calls: list[tuple[str, list[str]]]) -> None:
        super().__init__(tenant, name, calls)
        self.embedding = threading.Event()
        self.ran_s: float | None = None

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        self.embedding.set()
        started = time.monotonic()
        try:
            while time.monotonic() - started < 60:
                progress("embed", 1, 4619)
                time.sleep(0.01)
        finally:
            self.ran_s = time.monotonic() - started
        return IngestReport(added=len(staged)), [FileOutcome(p.name, "indexed") for p in staged]

    def outcomes_of(self, names: Sequence[str]) -> list[FileOutcome]:
        return [FileOutcome(n, "indexed") for n in names if n.endswith("-0.md")]


def test_a_stop_or_a_delete_stops_a_long_running_slice(tmp_path: Path) -> None:
    """A new user's run (2026-12-06): DELETE of a collection whose 5 MB upload was embedding
    did not answer for minutes (the slice ran to its end first), and SIGTERM did not stop the
    server in 120 s."""
    viewer = Principal("k", "acme", ("read",))
    stopped = _LongSlice("acme", "kb", [])
    manager = JobManager(workers=1, batch_files=3)
    manager.submit("1" * 16, stopped, _stage(tmp_path, "big", 3))  # type: ignore[arg-type]
    assert stopped.embedding.wait(5)
    manager.shutdown()  # returns once the slice has stopped
    assert stopped.ran_s is not None and stopped.ran_s < 5
    job = manager.get(viewer, "1" * 16)
    assert job["state"] == "cancelled" and job["error"]["code"] == "RS710"
    assert "1 of 3 files were indexed" in job["error"]["message"]  # what the index holds
    assert [f["status"] for f in job["files"]] == ["indexed", "not_indexed", "not_indexed"]
    # uploads/ is put back as the index holds the slice's files (a review's finding)
    assert stopped.settled == ["big-0.md", "big-1.md", "big-2.md"]

    deleted = _LongSlice("acme", "kb2", [])
    manager = JobManager(workers=1, batch_files=3)
    try:
        manager.submit("2" * 16, deleted, _stage(tmp_path, "doomed", 3))  # type: ignore[arg-type]
        assert deleted.embedding.wait(5)
        assert manager.cancel_collection("acme", "kb2", reason="collection 'kb2' was deleted") == 1
        for _ in range(500):
            if deleted.ran_s is not None:
                break
            time.sleep(0.01)
        assert deleted.ran_s is not None and deleted.ran_s < 5
        time.sleep(0.1)  # the stopped slice's own handling is done
        job = manager.get(viewer, "2" * 16)
        assert job["state"] == "cancelled"
        # each file once (a review's finding, 2026-12-06: the stopped slice added "indexed"
        # for a file it had finished, after the DELETE had listed it not_indexed)
        assert [(f["name"], f["code"]) for f in job["files"]] == [
            (f"doomed-{i}.md", "RS706") for i in range(3)
        ]
    finally:
        manager.shutdown()


class _CommittingSlice(_Collection):
    """A slice of one large file: a commit every 10 ms for ``seconds``, then done."""

    def __init__(
        self, tenant: str, name: str, calls: list[tuple[str, list[str]]], seconds: float
    ) -> None:
        super().__init__(tenant, name, calls)
        self.seconds = seconds
        self.running = threading.Event()
        self.ended_at = 0.0

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        self.running.set()
        started = time.monotonic()
        while time.monotonic() - started < self.seconds:
            progress("embed", 1, 100)
            progress("commit", 1, 1)
            time.sleep(0.01)
        self._calls.append((self.tenant, [p.name for p in staged]))
        self.ended_at = time.monotonic()
        return IngestReport(added=len(staged)), [FileOutcome(p.name, "indexed") for p in staged]


def test_a_long_slice_lets_a_waiting_upload_run_at_its_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's run (2026-12-06): with one ingest worker, another tenant's 6-byte upload
    stayed queued for the whole of a 5 MB upload's slice (tens of minutes)."""
    import ragstrata.service.jobs as jobs

    monkeypatch.setattr(jobs, "TURN_S", 0.1)
    calls: list[tuple[str, list[str]]] = []
    big = _CommittingSlice("acme", "kb", calls, seconds=3.0)
    small = _Collection("globex", "kb2", calls)
    manager = JobManager(workers=1, batch_files=4)
    viewer = Principal("k", "globex", ("read",))
    try:
        manager.submit("1" * 16, big, _stage(tmp_path, "big", 1))  # type: ignore[arg-type]
        assert big.running.wait(5)
        manager.submit("2" * 16, small, _stage(tmp_path, "small", 1))  # type: ignore[arg-type]
        for _ in range(300):
            if manager.get(viewer, "2" * 16)["state"] == "succeeded":
                break
            time.sleep(0.01)
        assert manager.get(viewer, "2" * 16)["state"] == "succeeded"
        assert big.ended_at == 0.0  # the large slice is still running
        _wait_idle(manager)
    finally:
        manager.shutdown()
    assert calls == [("globex", ["small-0.md"]), ("acme", ["big-0.md"])]
    first = manager.get(Principal("k", "acme", ("read",)), "1" * 16)
    assert first["state"] == "succeeded"


class _CommitsAfterTheDelete(_Collection):
    """A slice past its last group of chunks embedded (committing) when a DELETE comes."""

    def __init__(self, tenant: str, name: str, calls: list[tuple[str, list[str]]]) -> None:
        super().__init__(tenant, name, calls)
        self.committing = threading.Event()
        self.go = threading.Event()

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        progress("embed", 1, 1)
        self.committing.set()
        self.go.wait(5)
        progress("commit", 1, 1)
        report = IngestReport(added=len(staged), chunks=1)
        return report, [FileOutcome(p.name, "indexed") for p in staged]


def test_a_slice_that_ends_after_a_delete_leaves_the_cancelled_job_alone(tmp_path: Path) -> None:
    """The same review: such a slice appended every file again as ``indexed`` and changed the
    report of a job already recorded as cancelled."""
    collection = _CommitsAfterTheDelete("acme", "kb", [])
    manager = JobManager(workers=1, batch_files=3)
    try:
        manager.submit("3" * 16, collection, _stage(tmp_path, "x", 2))  # type: ignore[arg-type]
        assert collection.committing.wait(5)
        manager.cancel_collection("acme", "kb", reason="collection 'kb' was deleted")
        collection.go.set()
        time.sleep(0.3)
    finally:
        collection.go.set()
        manager.shutdown()
    job = manager.get(Principal("k", "acme", ("read",)), "3" * 16)
    assert job["state"] == "cancelled" and job["report"] is None
    assert [(f["name"], f["status"]) for f in job["files"]] == [
        ("x-0.md", "not_indexed"),
        ("x-1.md", "not_indexed"),
    ]


class _HoldsAfterItsFirstSlice(_Collection):
    """Indexes its first slice, then holds the next until ``gate`` is set."""

    def __init__(self, tenant: str, name: str, calls: list[tuple[str, list[str]]]) -> None:
        super().__init__(tenant, name, calls)
        self.first_done = threading.Event()

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        if self.first_done.is_set():
            self.gate.wait(10)
        report = IngestReport(added=len(staged))
        self._calls.append((self.tenant, [p.name for p in staged]))
        self.gate.clear()
        self.first_done.set()
        return report, [FileOutcome(p.name, "indexed") for p in staged]


def test_a_delete_lists_no_file_as_indexed(tmp_path: Path) -> None:
    """Trial 24 (2026-12-06): a job cancelled by its collection's delete listed the files its
    first slices had indexed as ``indexed``, in a collection that no longer exists."""
    calls: list[tuple[str, list[str]]] = []
    collection = _HoldsAfterItsFirstSlice("acme", "kb", calls)
    manager = JobManager(workers=1, batch_files=1)
    try:
        manager.submit("4" * 16, collection, _stage(tmp_path, "y", 3))  # type: ignore[arg-type]
        assert collection.first_done.wait(5)
        who = Principal("k", "acme", ("read",))
        for _ in range(500):  # until the first slice's outcome is recorded
            if manager.get(who, "4" * 16)["files"]:
                break
            time.sleep(0.01)
        manager.cancel_collection("acme", "kb", reason="collection 'kb' was deleted")
    finally:
        collection.gate.set()
        manager.shutdown()
    job = manager.get(Principal("k", "acme", ("read",)), "4" * 16)
    assert job["state"] == "cancelled" and calls, (job, calls)
    assert {f["status"] for f in job["files"]} == {"not_indexed"}, job["files"]
    assert len(job["files"]) == 3


class _Resumable(_Collection):
    """A large file resumed across turns: ``commits`` commits of 10 ms in all, after
    ``setup_s`` seconds of parsing and chunking at each turn."""

    def __init__(
        self,
        tenant: str,
        name: str,
        calls: list[tuple[str, list[str]]],
        commits: int,
        setup_s: float = 0.0,
    ) -> None:
        super().__init__(tenant, name, calls)
        self.left, self.setup_s = commits, setup_s
        self.turns: list[float] = []  # seconds each turn ran
        self.running = threading.Event()
        self.ended = False

    def turn_changes(self, files: Any) -> dict[str, str]:
        return {}

    def ingest_staged(
        self, staged: Sequence[Path], *, progress: Any = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        started = time.monotonic()
        self.running.set()
        try:
            time.sleep(self.setup_s)
            while self.left:
                progress("embed", 1, 1)
                self.left -= 1
                progress("commit", 1, 1)
                time.sleep(0.01)
        finally:
            self.turns.append(time.monotonic() - started)
        self.ended = True
        return IngestReport(added=1), [FileOutcome(p.name, "indexed") for p in staged]


def test_a_slice_does_not_yield_to_its_own_tenants_next_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review's finding (2026-12-06): a job of the same tenant, queued after the running
    one, made it yield at every commit past its turn, yet the pick took the running job again
    (a tenant's jobs run in order): 28 turns, each parsing the large file again."""
    import ragstrata.service.jobs as jobs

    monkeypatch.setattr(jobs, "TURN_S", 0.1)
    big = _Resumable("acme", "kb", [], commits=100)
    manager = JobManager(workers=1, batch_files=4)
    try:
        manager.submit("1" * 16, big, _stage(tmp_path, "big", 1))  # type: ignore[arg-type]
        assert big.running.wait(5)
        small = _Collection("acme", "kb2", [])
        manager.submit("2" * 16, small, _stage(tmp_path, "small", 1))  # type: ignore[arg-type]
        _wait_idle(manager)
    finally:
        manager.shutdown()
    assert big.ended and len(big.turns) == 1


def test_a_turn_lasts_three_times_its_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same review: each turn of a large file parses and chunks it again (8 s of an 8,000
    chunk file's 10 s turn); a turn now lasts at least TURN_SETUP_RATIO times that."""
    import ragstrata.service.jobs as jobs

    monkeypatch.setattr(jobs, "TURN_S", 0.1)
    big = _Resumable("acme", "kb", [], commits=150, setup_s=0.3)
    manager = JobManager(workers=1, batch_files=4)
    viewer = Principal("k", "globex", ("read",))
    try:
        manager.submit("1" * 16, big, _stage(tmp_path, "big", 1))  # type: ignore[arg-type]
        assert big.running.wait(5)
        small = _Collection("globex", "kb2", [])
        manager.submit("2" * 16, small, _stage(tmp_path, "small", 1))  # type: ignore[arg-type]
        for _ in range(500):
            if manager.get(viewer, "2" * 16)["state"] == "succeeded":
                break
            time.sleep(0.01)
        assert manager.get(viewer, "2" * 16)["state"] == "succeeded"
        _wait_idle(manager)
    finally:
        manager.shutdown()
    assert len(big.turns) >= 2 and big.turns[0] >= jobs.TURN_SETUP_RATIO * 0.3, big.turns


def test_progress_never_runs_backwards_and_a_stopped_job_counts_what_it_indexed() -> None:
    """Trial 40: ``fraction`` went 0.47 then 0.01 for two minutes while a large file's chunks
    were embedded, and a cancelled job with no file indexed said 1.0."""
    from ragstrata.service.jobs import Job

    job = Job("j" * 16, "acme", "kb", files_total=2, rejected=[], state="running")
    job.files_done, job.chunks_queued, job.chunks_committed = 1, 10, 10
    assert job.to_json()["progress"]["fraction"] == 0.5
    job.files_done, job.chunks_queued = 2, 100  # a large file parsed, 10 of 100 committed
    assert job.to_json()["progress"]["fraction"] == 0.5
    job.chunks_committed = 80
    assert job.to_json()["progress"]["fraction"] == 0.8
    job.state = "cancelled"
    job.outcomes = [FileOutcome("a.md", "indexed"), FileOutcome("b.md", "not_indexed")]
    assert job.to_json()["progress"]["fraction"] == 0.5
    job.outcomes = [FileOutcome("a.md", "not_indexed"), FileOutcome("b.md", "not_indexed")]
    assert job.to_json()["progress"]["fraction"] == 0.0


def test_files_reindexed_for_a_new_parser_are_counted(tmp_path: Path) -> None:
    """Trial 40: a re-upload of 20 unchanged files after a parser upgrade reported "updated: 1,
    unchanged: 0" beside 538 chunks: the re-indexed files were counted nowhere."""

    class _Reindexing(_Collection):
        def ingest_staged(
            self, staged: Sequence[Path], *, progress: Any = None
        ) -> tuple[IngestReport, list[FileOutcome]]:
            report = IngestReport(reindexed=len(staged), chunks=3 * len(staged))
            return report, [FileOutcome(p.name, "indexed") for p in staged]

    manager = JobManager(workers=1, batch_files=2)
    try:
        manager.submit("r" * 16, _Reindexing("acme", "kb", []), _stage(tmp_path, "r", 5))  # type: ignore[arg-type]
        _wait_idle(manager)
        time.sleep(0.2)
        report = manager.get(Principal("k", "acme", ("read",)), "r" * 16)["report"]
    finally:
        manager.shutdown()
    assert (report["reindexed"], report["updated"], report["chunks"]) == (5, 0, 15)


def test_chunks_reweighted_never_steps_back_while_a_slice_runs(tmp_path: Path) -> None:
    """Review 41: the re-analysis pass and the re-weighting pass each report ``reweight`` from
    0, so a running job's ``chunks_reweighted`` climbed to 20, fell back to 5, climbed again."""
    seen: list[int] = []
    manager: JobManager

    class _TwoPasses(_Collection):
        def ingest_staged(
            self, staged: Sequence[Path], *, progress: Any = None
        ) -> tuple[IngestReport, list[FileOutcome]]:
            for done in (10, 20, 5, 20):  # reanalyse 10, 20 of 20; then reweight 5, 20 of 20
                progress("reweight", done, 20)
                seen.append(manager._jobs["w" * 16].chunks_reweighted)
            return IngestReport(added=len(staged), reweighted=20), [
                FileOutcome(p.name, "indexed") for p in staged
            ]

    manager = JobManager(workers=1, batch_files=2)
    try:
        manager.submit("w" * 16, _TwoPasses("acme", "kb", []), _stage(tmp_path, "w", 1))  # type: ignore[arg-type]
        _wait_idle(manager)
        time.sleep(0.2)
        job = manager.get(Principal("k", "acme", ("read",)), "w" * 16)
    finally:
        manager.shutdown()
    assert seen == [10, 20, 20, 20]
    assert job["progress"]["chunks_reweighted"] == job["report"]["reweighted"] == 20
