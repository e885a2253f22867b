"""Searches keep working while another process ingests: each search reads the last committed
state the writer published (a read snapshot of the embedded shard), never half a commit, and
what it sees changes only from one commit to the next."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragstrata import stages
from ragstrata.config import EmbedderConfig, RagConfig
from ragstrata.index import catalog
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow
EMBEDDER = "minilm-onnx"


def write_corpus(root: Path, start: int, files: int) -> None:
    root.mkdir(exist_ok=True)
    for i in range(start, start + files):
        sections = "\n\n".join(
            f"## Topic {i}-{s}\n\nService {i} restarts the worker {s} after a timeout."
            for s in range(10)
        )
        (root / f"doc{i:03d}.md").write_text(f"# Doc {i}\n\n{sections}\n", encoding="utf-8")


def test_searches_during_an_ingest_see_committed_states(tmp_path: Path) -> None:
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    config = RagConfig(home=tmp_path, index_dir=index, embedder=EmbedderConfig(name=EMBEDDER))
    embedder = stages.load_embedder(EMBEDDER)
    write_corpus(corpus, 0, 3)
    with Ragstrata(config, embedder=embedder) as engine:
        engine.ingest([corpus])  # a first committed state to search from the start
    write_corpus(corpus, 3, 90)  # about 900 chunks more: several commits
    env = {**os.environ, "RAGSTRATA_EMBEDDER_NAME": EMBEDDER, "RAGSTRATA_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "ragstrata.cli", "ingest", str(corpus), "--index", str(index)]
    writer = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    seen: list[tuple[int, tuple[str, ...], bool, float]] = []  # chunks, hits, snapshot?, ms
    failures: list[BaseException] = []

    def search_loop() -> None:
        while writer.poll() is None:
            started = time.perf_counter()
            try:
                with Ragstrata(config, embedder=embedder) as reader:
                    result = reader.search("worker restarts after a timeout", top_k=5)
                    snapshot = reader._index.snapshot
                    manifest = catalog.read_manifest(snapshot.path if snapshot else index)
                    store = reader.retriever.store
                    listed = {c for e in manifest.documents.values() for c in e.chunk_ids}
                    # the state read is one commit's: the store holds exactly what it lists
                    assert store.count() == len(listed) == manifest.n_chunks
                    assert {h.chunk.chunk_id for h in result.hits} <= listed
                    hits = tuple(h.chunk.chunk_id for h in result.hits)
                    ms = (time.perf_counter() - started) * 1000
                    seen.append((manifest.n_chunks, hits, snapshot is not None, ms))
            except BaseException as exc:
                failures.append(exc)

    # readers that find the index free take its lock (the shard has one owner): start once
    # the writer holds it, as a user's searches during a long ingest do
    deadline = time.monotonic() + 120
    while writer.poll() is None and not (index / "readers" / "current").exists():
        assert time.monotonic() < deadline, "the writer published no read snapshot"
        time.sleep(0.05)
    thread = threading.Thread(target=search_loop)
    thread.start()
    _, err = writer.communicate(timeout=1200)
    thread.join()
    assert writer.returncode == 0, err
    assert not failures, failures[:3]
    during = [s for s in seen if s[2]]
    assert len(during) >= 5, seen
    counts = [s[0] for s in seen]
    assert counts == sorted(counts)  # states only move forward
    assert len(set(counts)) >= 3  # the writer's commits became visible while it ran
    by_state: dict[int, set[tuple[str, ...]]] = {}
    for n, hits, _, _ in seen:
        by_state.setdefault(n, set()).add(hits)
    assert all(len(h) == 1 for h in by_state.values())  # results change only at commits
    latencies = sorted(s[3] for s in seen)
    print(
        f"searches={len(seen)} during_ingest={len(during)} failures=0 states={len(set(counts))} "
        f"p50_ms={latencies[len(latencies) // 2]:.0f} max_ms={latencies[-1]:.0f}"
    )
    # the writer withdrew its snapshots (one a reader held at that moment stays until the next
    # ingest, which removes it)
    assert not (index / "readers" / "current").exists()
    with Ragstrata(config, embedder=embedder) as engine:
        engine.ingest([corpus])
    assert not (index / "readers").exists()
