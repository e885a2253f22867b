"""The parser pool: order, failures, crashed and stuck workers (real processes)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ragstrata.ingest.pool import load_many, load_one
from ragstrata.types import Document, IngestFailure


def _flaky_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): dies on ``crash*`` files, hangs on ``hang*`` files."""
    if path.name.startswith("crash"):
        os._exit(13)  # what a segfault in a native parser looks like to the pool
    if path.name.startswith("hang"):
        time.sleep(120)
    return load_one(path, max_file_bytes)


def _hungry_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): ``hog*`` files allocate (and touch) memory until stopped."""
    if path.name.startswith("hog"):
        hoard = []
        for _ in range(400):  # up to 4 GB, 10 MB at a time
            hoard.append(b"x" * 10_000_000)
            time.sleep(0.005)
    return load_one(path, max_file_bytes)


def _late_crash_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): ``late*`` files kill their worker after 1.5 s."""
    if path.name.startswith("late"):
        time.sleep(1.5)
        os._exit(13)
    return load_one(path, max_file_bytes)


def _memory_error_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): ``hog*`` files fail as an allocation past RLIMIT_AS does."""
    if path.name.startswith("hog"):
        raise MemoryError
    return load_one(path, max_file_bytes)


def _slow_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): ``slow*`` files take 2 s to parse."""
    if path.name.startswith("slow"):
        time.sleep(2.0)
    return load_one(path, max_file_bytes)


def _pid_loader(path: Path, max_file_bytes: int) -> Document | IngestFailure:
    """Top-level (picklable): reports the id of the process that parsed ``path``."""
    return IngestFailure(str(path), "RS200", str(os.getpid()))


def _files(tmp_path: Path, names: list[str]) -> list[Path]:
    out = []
    for i, name in enumerate(names):
        path = tmp_path / name
        path.write_text(f"# Title {i}\n\nParagraph number {i} of the test.\n", encoding="utf-8")
        out.append(path)
    return out


def _names(results: list[Document | IngestFailure]) -> list[str]:
    return [Path(r.source if isinstance(r, Document) else r.path).name for r in results]


@pytest.mark.parametrize("workers", [0, 2])
def test_results_come_back_in_input_order(tmp_path: Path, workers: int) -> None:
    files = _files(tmp_path, [f"f{i:02d}.md" for i in range(13)])
    (tmp_path / "bad.md").write_bytes(b"\x00\x01" * 50)
    files.insert(5, tmp_path / "bad.md")
    results = list(load_many(files, max_file_bytes=10_000, workers=workers, window=3))
    assert _names(results) == [p.name for p in files]
    failure = results[5]
    assert isinstance(failure, IngestFailure) and failure.code == "RS202"
    assert all(isinstance(r, Document) for i, r in enumerate(results) if i != 5)


def test_a_crashing_file_costs_only_itself(tmp_path: Path) -> None:
    names = ["a.md", "b.md", "crash.md", "c.md", "d.md", "e.md"]
    files = _files(tmp_path, names)
    results = list(
        load_many(files, max_file_bytes=10_000, workers=2, window=4, loader=_flaky_loader)
    )
    assert _names(results) == names
    crashed = [r for r in results if isinstance(r, IngestFailure)]
    assert len(crashed) == 1 and crashed[0].path.endswith("crash.md")
    assert "crashed" in crashed[0].reason


def test_a_stuck_file_is_skipped_after_the_timeout(tmp_path: Path) -> None:
    names = ["a.md", "hang.md", "b.md", "c.md"]
    files = _files(tmp_path, names)
    started = time.monotonic()
    results = list(
        load_many(
            files, max_file_bytes=10_000, workers=2, window=2, timeout_s=15, loader=_flaky_loader
        )
    )
    assert time.monotonic() - started < 100  # the hang lasts 120 s
    assert _names(results) == names
    stuck = [r for r in results if isinstance(r, IngestFailure)]
    assert [Path(r.path).name for r in stuck] == ["hang.md"]
    assert "longer than 15 s" in stuck[0].reason and stuck[0].code == "RS212"


@pytest.mark.parametrize("names", [["slow.md"], ["a.md", "slow.md", "b.md"]])
def test_the_timeout_counts_the_parse_even_when_nobody_waits_for_it(
    tmp_path: Path, names: list[str]
) -> None:
    """A new user's 1.47 s PDF went through `parse_timeout_s = 0.2`: it was parsed while the
    caller embedded, and the parent's wait, which started later, found it done."""
    files = _files(tmp_path, names)
    results = load_many(
        files, max_file_bytes=10_000, workers=2, window=4, timeout_s=0.5, loader=_slow_loader
    )
    time.sleep(3.0)  # the caller embeds: every parse, the slow one too, has had its time
    got = list(results)
    assert _names(got) == names
    failed = [r for r in got if isinstance(r, IngestFailure)]
    assert [Path(r.path).name for r in failed] == ["slow.md"]
    assert failed[0].code == "RS212" and "longer than 0.5 s" in failed[0].reason
    assert all(isinstance(r, Document) for r, n in zip(got, names, strict=True) if n != "slow.md")


def test_a_single_file_is_parsed_in_a_worker(tmp_path: Path) -> None:
    # one-file ingests and service uploads get the same crash isolation and limits
    files = _files(tmp_path, ["only.md"])
    [result] = list(load_many(files, max_file_bytes=10_000, workers=2, loader=_pid_loader))
    assert isinstance(result, IngestFailure) and result.reason != str(os.getpid())


def test_a_file_over_the_memory_limit_costs_only_itself(tmp_path: Path) -> None:
    names = ["a.md", "hog.md", "b.md", "c.md"]
    files = _files(tmp_path, names)
    results = list(
        load_many(
            files,
            max_file_bytes=10_000,
            workers=2,
            window=3,
            max_memory_mb=300,
            loader=_hungry_loader,
        )
    )
    assert _names(results) == names
    failed = [r for r in results if isinstance(r, IngestFailure)]
    assert [Path(r.path).name for r in failed] == ["hog.md"]
    assert failed[0].code == "RS212"
    assert "exceeded 300 MB" in failed[0].reason


def test_a_lone_file_over_the_memory_limit_is_reported(tmp_path: Path) -> None:
    files = _files(tmp_path, ["hog.md"])
    [result] = list(
        load_many(files, max_file_bytes=10_000, workers=1, max_memory_mb=300, loader=_hungry_loader)
    )
    assert isinstance(result, IngestFailure) and result.code == "RS212"
    assert "exceeded 300 MB" in result.reason


def test_crash_reason_names_the_signal_or_the_script_guard() -> None:
    import signal

    from ragstrata.ingest.pool import _crash_reason

    assert "SIGSEGV" in _crash_reason([-signal.SIGSEGV])
    assert "SIGSEGV" in _crash_reason([-signal.SIGTERM, -signal.SIGSEGV])  # SIGTERM: a sibling
    guard = _crash_reason([1])  # died in Python, e.g. re-importing a script without the guard
    assert "crashed" in guard and "exit status 1" in guard
    assert 'if __name__ == "__main__":' in guard
    assert _crash_reason([None]) == "the parser process crashed on this file"


def test_a_memory_error_in_the_worker_is_the_memory_limit(tmp_path: Path) -> None:
    # the address-space backstop can fire before the resident-set watch (a many-core machine)
    names = ["a.md", "hog.md", "b.md"]
    results = list(
        load_many(
            _files(tmp_path, names),
            max_file_bytes=10_000,
            workers=2,
            max_memory_mb=300,
            loader=_memory_error_loader,
        )
    )
    assert _names(results) == names
    [failed] = [r for r in results if isinstance(r, IngestFailure)]
    assert Path(failed.path).name == "hog.md" and failed.code == "RS212"
    assert "exceeded 300 MB" in failed.reason


def test_a_worker_that_dies_between_two_results_costs_only_its_file(tmp_path: Path) -> None:
    # a.md comes back; while the caller is busy with it, late.md's worker dies and breaks the
    # pool; the next submit must not raise BrokenProcessPool out of the iterator (CI caught it)
    names = ["a.md", "late.md", "b.md", "c.md"]
    files = _files(tmp_path, names)
    results = load_many(
        files, max_file_bytes=10_000, workers=2, window=2, loader=_late_crash_loader
    )
    first = next(results)
    time.sleep(4)  # the caller works on the first document; late.md's worker exits meanwhile
    rest = list(results)
    assert _names([first, *rest]) == names
    failed = [r for r in [first, *rest] if isinstance(r, IngestFailure)]
    assert [Path(r.path).name for r in failed] == ["late.md"] and failed[0].code == "RS200"
