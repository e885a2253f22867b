"""SIGKILL an ingest in the middle of one large document (a Markdown table of thousands of
rows): the slices committed before the kill stay, the re-run embeds only the missing chunks, and
the resumed index equals a clean build (same chunk ids, same vectors, same manifest entry)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragstrata.config import EmbedderConfig, RagConfig
from ragstrata.index import catalog
from ragstrata.index.writer import COMMIT_CHUNKS
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow
EMBEDDER = "minilm-onnx"


def write_table(path: Path, rows: int) -> None:
    lines = [
        "# Customer table",
        "",
        "| id | customer | city | balance | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {i} | Customer {i * 37 % 1000} | City {i % 97} | {i * 13 % 9973}.00 | "
        f"order {i} shipped on day {i % 28 + 1} by carrier {i % 7} |"
        for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def ingest(corpus: Path, index: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ragstrata.cli", "ingest", str(corpus), "--index", str(index)]
    return subprocess.Popen(
        [*cmd, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def committed(index: Path) -> int:
    """Chunks of the table the manifest lists (0 before the first commit or mid-replace)."""
    try:
        manifest = catalog.read_manifest(index)
    except Exception:
        return 0
    return sum(len(e.chunk_ids) for e in manifest.documents.values())


def contents(index: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, np.ndarray]]:
    config = RagConfig(home=index.parent, index_dir=index, embedder=EmbedderConfig(name=EMBEDDER))
    with Ragstrata(config) as engine:
        engine.search("customer balance")  # the read-open rolls back an interrupted commit
        manifest = engine.manifest()
        store = engine.retriever.store
        ids = store.chunk_ids()
        listed = {c for e in manifest.documents.values() for c in e.chunk_ids}
        assert set(ids) == listed and store.count() == len(ids)
        entries = {d: e.chunk_ids + e.embed_hashes for d, e in manifest.documents.items()}
        assert all(e.complete for e in manifest.documents.values())
        return entries, store.dense_vectors(ids)


def test_sigkill_inside_a_large_document_resumes_to_a_clean_build(tmp_path: Path) -> None:
    env = {**os.environ, "RAGSTRATA_EMBEDDER_NAME": EMBEDDER, "RAGSTRATA_HOME": str(tmp_path)}
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    corpus.mkdir()
    write_table(corpus / "table.md", rows=2400)

    proc = ingest(corpus, index, env)
    deadline = time.monotonic() + 300
    while committed(index) < COMMIT_CHUNKS and proc.poll() is None:
        assert time.monotonic() < deadline, "no slice was committed"
        time.sleep(0.05)
    assert proc.poll() is None, "the ingest ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = committed(index)
    assert kept >= COMMIT_CHUNKS  # what was embedded before the kill survived it
    assert catalog.index_stats(index)["partial_documents"] == 1  # `stats` says so

    resumed = ingest(corpus, index, env)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    report = json.loads(out)
    total = committed(index)
    assert total > kept  # the kill came in the middle of the document
    assert catalog.index_stats(index)["partial_documents"] == 0
    assert report["embedded"] == report["chunks"] == total - kept

    clean = ingest(corpus, tmp_path / "clean", env)
    _, err = clean.communicate(timeout=600)
    assert clean.returncode == 0, err
    got, want = contents(index), contents(tmp_path / "clean")
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys()
    assert all(np.array_equal(got[1][k], want[1][k]) for k in want[1])
