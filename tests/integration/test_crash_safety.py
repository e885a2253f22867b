"""SIGKILL an ingest at random moments: the index must always open consistent (manifest ==
stored chunks) and a final re-run must complete it with no duplicated or lost chunk."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragstrata.config import EmbedderConfig, RagConfig
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow
EMBEDDER = "minilm-onnx"


def write_corpus(root: Path, version: int) -> None:
    root.mkdir(exist_ok=True)
    for i in range(24):
        sections = "\n\n".join(
            f"## Section {s}\n\n"
            + " ".join(
                f"Document {i} version {version if i % 3 == 0 else 0} section {s} sentence {k} "
                f"explains topic {i * 7 + s} in detail."
                for k in range(12)
            )
            for s in range(4)
        )
        (root / f"doc{i:02d}.md").write_text(f"# Doc {i}\n\n{sections}\n", encoding="utf-8")


def ingest_cmd(corpus: Path, index: Path) -> list[str]:
    return [sys.executable, "-m", "ragstrata.cli", "ingest", str(corpus), "--index", str(index)]


def check_consistent(index: Path) -> tuple[int, set[str]]:
    engine = Ragstrata(
        RagConfig(home=index.parent, index_dir=index, embedder=EmbedderConfig(name=EMBEDDER))
    )
    try:
        manifest_path = index / "manifest.json"
        if not manifest_path.exists():
            return 0, set()
        engine.search("topic")  # opening for reading rolls back an interrupted commit
        manifest = engine.manifest()
        store = engine.retriever.store
        stored = set(store.chunk_ids())
        listed = {c for entry in manifest.documents.values() for c in entry.chunk_ids}
        assert stored == listed, (len(stored), len(listed))
        assert store.count() == len(stored)
        return len(manifest.documents), stored
    finally:
        engine.close()


def _children(pid: int) -> set[int]:
    """Child pids of ``pid`` (Linux /proc), empty where unavailable."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found.update(int(c) for c in task.read_text().split())
    return found


def test_sigkill_at_random_points(tmp_path: Path) -> None:
    env = {**os.environ, "RAGSTRATA_EMBEDDER_NAME": EMBEDDER, "RAGSTRATA_HOME": str(tmp_path)}
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    rng = random.Random(20261129)
    kills = 0
    orphans: set[int] = set()
    for attempt in range(40):  # until 10 runs were killed mid-ingest
        if kills >= 10:
            break
        write_corpus(corpus, version=attempt)
        proc = subprocess.Popen(
            ingest_cmd(corpus, index), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.2, 4.0))
        if proc.poll() is None:
            workers = _children(proc.pid)  # the parser processes
            proc.send_signal(signal.SIGKILL)
            kills += 1
            orphans.update(workers)
        proc.wait()
        check_consistent(index)
    assert kills >= 10
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in orphans):
        time.sleep(0.5)
    assert not [p for p in orphans if Path(f"/proc/{p}").exists()], "orphan parser processes"
    done = subprocess.run(ingest_cmd(corpus, index), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    n_docs, chunk_ids = check_consistent(index)
    # a clean ingest of the same files into a fresh index gives exactly the same chunks
    fresh = tmp_path / "fresh"
    clean = subprocess.run(ingest_cmd(corpus, fresh), env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr
    _, fresh_ids = check_consistent(fresh)
    assert n_docs == 24
    assert chunk_ids == fresh_ids
