"""What re-weighting BM25 at the end of an ingest costs (``IndexWriter.reweight``).

An ingest re-weights the chunks of every document whose BM25 weights were computed with an
average chunk length more than 2 % away from the finished index's (docs/architecture.md, "BM25
follows Robertson & Zaragoza"); an index written before ``bm25_avgdl`` existed is re-weighted
whole by its next ingest. This bench times that worst case on a copy of an existing index
(``--index``; the original is not touched): every manifest entry is marked unknown, then

1. ``IndexWriter.reweight`` runs end to end (what ``ragstrata ingest`` adds), and
2. its phases run again one at a time over the same groups of
   :data:`~ragstrata.index.writer.REWEIGHT_CHUNKS` chunks: read the chunks from the store,
   analyse their text into term frequencies, compute the BM25 weights, write the sparse vectors
   (and flush).

Baselines in the same run: copying the index folder (``shutil.copytree``: this disk's and page
cache's bandwidth for the bytes the store holds), so the re-weighting's MB/s of index reads as a
share of a plain copy; and the analysis phase alone, the floor of any re-weighting that
re-reads text (the weights could only be faster to redo if term frequencies were stored).

    PYTHONPATH=src python bench/reweight_cost.py --index PATH [--repeat 1]

Writes bench/results/reweight_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any


def folder_bytes(path: Path) -> int:
    """Bytes the files under ``path`` occupy on disk (allocated blocks: the store preallocates,
    so the apparent sizes overstate what is read)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def mark_unknown(index: Path) -> int:
    """Set every entry's ``bm25_avgdl`` to 0.0 (unknown, as an index from before it existed);
    returns the chunks the manifest lists."""
    path = index / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for entry in manifest["documents"].values():
        entry["bm25_avgdl"] = 0.0
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return sum(len(e["chunk_ids"]) for e in manifest["documents"].values())


def phases(writer: Any) -> dict[str, float]:
    """Seconds of each re-weighting phase over every document, in groups of REWEIGHT_CHUNKS
    chunks as ``reweight`` forms them."""
    from ragstrata.index.writer import REWEIGHT_CHUNKS

    manifest = writer.manifest
    avgdl = manifest.avgdl
    docs = list(manifest.documents)
    groups: list[list[str]] = [[]]
    for doc_id in docs:
        groups[-1] += manifest.documents[doc_id].chunk_ids
        if len(groups[-1]) >= REWEIGHT_CHUNKS:
            groups.append([])
    spent = {"read": 0.0, "analyse": 0.0, "weights": 0.0, "write": 0.0}
    for ids in (g for g in groups if g):
        t0 = time.perf_counter()
        chunks = writer.store.get(ids)
        t1 = time.perf_counter()
        tfs = [writer.analyzer.term_frequencies(writer.chunker.embedding_text(c)) for c in chunks]
        t2 = time.perf_counter()
        vectors = writer._bm25_weights(tfs, avgdl)
        t3 = time.perf_counter()
        writer.store.update_sparse([c.chunk_id for c in chunks], vectors)
        t4 = time.perf_counter()
        spent["read"] += t1 - t0
        spent["analyse"] += t2 - t1
        spent["weights"] += t3 - t2
        spent["write"] += t4 - t3
    t = time.perf_counter()
    writer.store.flush()
    spent["write"] += time.perf_counter() - t
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, required=True, help="an index folder (copied first)")
    ap.add_argument("--repeat", type=int, default=1, help="end-to-end runs (best kept)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/reweight_cost.json"))
    args = ap.parse_args()
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata

    size = folder_bytes(args.index)
    with tempfile.TemporaryDirectory(prefix="reweight-") as tmp:
        t = time.perf_counter()
        copy = Path(shutil.copytree(args.index, Path(tmp) / "index"))
        copy_s = time.perf_counter() - t
        runs = []
        for _ in range(args.repeat):
            n_chunks = mark_unknown(copy)
            with Ragstrata(RagConfig.load(env={}).with_index(copy)) as engine:
                writer = engine._writer(lock_wait_s=0, create=False)
                t = time.perf_counter()
                done = writer.reweight()
                runs.append(time.perf_counter() - t)
        assert done == n_chunks, (done, n_chunks)
        with Ragstrata(RagConfig.load(env={}).with_index(copy)) as engine:
            spent = phases(engine._writer(lock_wait_s=0, create=False))
    best = min(runs)
    result = {
        "index": str(args.index),
        "chunks": n_chunks,
        "index_mb": round(size / 1e6, 1),
        "reweight_s": round(best, 2),
        "chunks_per_s": round(n_chunks / best),
        "index_mb_per_s": round(size / 1e6 / best, 1),
        "copy_s": round(copy_s, 2),
        "copy_mb_per_s": round(size / 1e6 / copy_s, 1),
        "reweight_vs_copy": round(best / copy_s, 1),
        "phases_s": {k: round(v, 2) for k, v in spent.items()},
        "analyse_share": round(spent["analyse"] / sum(spent.values()), 3),
        "runs_s": [round(r, 2) for r in runs],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    print("| measure | value |")
    print("|---|---|")
    print(f"| chunks re-weighted | {n_chunks} ({result['index_mb']} MB index) |")
    rate = result["chunks_per_s"]
    print(f"| IndexWriter.reweight, end to end | {best:.2f} s ({rate} chunks/s) |")
    print(
        f"| baseline: copy of the index folder | {copy_s:.2f} s ({result['copy_mb_per_s']} MB/s); "
        f"re-weighting = {result['reweight_vs_copy']}x the copy |"
    )
    for name, seconds in spent.items():
        print(f"| phase: {name} | {seconds:.2f} s ({seconds / sum(spent.values()):.0%}) |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
