"""FolderWatcher without a model: its argument checks, its event filter, an interrupted sync,
and the signal handling of ``stop_on_signals``."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.errors import ConfigError, SourceNotFoundError
from ragstrata.watch import FolderWatcher, stop_on_signals

ADDED = 1  # watchfiles.Change.added; the filter does not look at the kind of change


def _watcher(tmp_path: Path, *roots: Path, index: Path | None = None) -> FolderWatcher:
    config = RagConfig(home=tmp_path / "home").with_index(index or tmp_path / "idx")
    return FolderWatcher(list(roots), config=config, embedder=object())  # type: ignore[arg-type]


def test_bad_arguments(tmp_path: Path) -> None:
    config = RagConfig(home=tmp_path)
    with pytest.raises(ConfigError, match="at least one"):
        FolderWatcher([], config=config)
    with pytest.raises(ConfigError, match="debounce_ms=-1"):
        FolderWatcher([tmp_path], config=config, debounce_ms=-1)
    # review 45: a huge value overflowed inside watchfiles with a traceback
    with pytest.raises(ConfigError, match="debounce_ms=10000000000000000000"):
        FolderWatcher([tmp_path], config=config, debounce_ms=10**19)
    with pytest.raises(SourceNotFoundError, match="nope"):
        FolderWatcher([tmp_path / "nope"], config=config)


def test_filter_keeps_what_ingest_reads(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "logo.png").write_bytes(b"png")
    (docs / "notes.txt").write_text("x")
    w = _watcher(tmp_path, docs, index=docs / "index")
    relevant = lambda p: w.relevant(ADDED, str(p))  # type: ignore[arg-type] # noqa: E731
    assert relevant(docs / "a.md") and relevant(docs / "sub" / "b.PDF")
    assert relevant(docs / "notes.txt")
    assert relevant(docs / "sub")  # a folder: its files may come as one event
    assert relevant(docs / "gone-folder")  # no longer there: a folder moved away, maybe
    assert not relevant(docs / "logo.png")  # an existing file of a type ingest skips
    assert not relevant(docs / ".draft.md") and not relevant(docs / ".git" / "HEAD")
    assert not relevant(docs / "index" / "manifest.json")  # the watcher's own writes
    assert not relevant(tmp_path / "elsewhere.md")


def test_a_file_root_is_watched_through_its_folder(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n")
    w = _watcher(tmp_path, note)
    assert w.relevant(ADDED, str(note))  # type: ignore[arg-type]
    assert not w.relevant(ADDED, str(tmp_path / "other.md"))  # type: ignore[arg-type]


def test_a_stopped_sync_is_interrupted_and_releases_the_lock(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\ntext\n")
    w = _watcher(tmp_path, docs)
    stop = threading.Event()
    stop.set()
    outcome = w.sync(stop=stop)
    assert (outcome.number, outcome.state, outcome.report, outcome.error) == (
        1,
        "interrupted",
        None,
        None,
    )
    assert outcome.documents == 0  # nothing committed: no index yet


def test_signals_set_the_event_then_interrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(threading.Event()) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
        # the first signal is acknowledged (a trial's Ctrl-C was silent for 40 s)
        assert "press Ctrl-C again to stop at once" in capsys.readouterr().err
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(5)  # the handler runs here, in the main thread
    assert signal.getsignal(signal.SIGINT) is before
