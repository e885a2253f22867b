"""Ingestion throughput per shared corpus: a cold build, then a re-run on unchanged files.

Usage: python bench/ingest_corpora.py [--data ../shared/data] [--corpus NAME ...] [--workers N]
                                      [--work DIR]

Each corpus folder under --data is ingested into its own fresh index (embedded store, the
configured embedder; default minilm-onnx) with the real CLI code path (``Ragstrata.ingest``),
then ingested again unchanged. Prints a Markdown table (documents, failures, chunks, MB,
seconds, documents/s, chunks/s, MB/s, re-run seconds, chunks embedded on the re-run) and writes
bench/results/ingest_corpora.json. The machine is shared: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path

from ragstrata.config import IngestConfig, RagConfig
from ragstrata.pipeline import Ragstrata

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--corpus", action="append", help="corpus folder name (repeatable)")
    parser.add_argument("--workers", type=int, default=-1, help="ingest.workers (-1 = auto)")
    parser.add_argument("--work", type=Path, help="where to build the indexes (default: tmp)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ingest_corpora.json")
    args = parser.parse_args()

    names = args.corpus or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    work = args.work or Path(tempfile.mkdtemp(prefix="ragstrata-bench-"))
    base = RagConfig.load()
    config = dataclasses.replace(base, ingest=IngestConfig(workers=args.workers))
    rows = []
    for name in names:
        index = work / name
        shutil.rmtree(index, ignore_errors=True)
        with Ragstrata(config.with_index(index)) as engine:
            engine.embedder.embed_query("warm-up")  # model load is not ingestion time
            cold = engine.ingest([args.data / name])
            t = time.perf_counter()
            warm = engine.ingest([args.data / name])
            rerun_s = time.perf_counter() - t
            stats = engine.stats()
        docs = cold.added + cold.updated + cold.unchanged
        secs = cold.seconds or float("nan")
        rows.append(
            {
                "corpus": name,
                "documents": docs,
                "failures": len(cold.failures),
                "failure_codes": sorted({f.code for f in cold.failures}),
                "chunks": cold.chunks,
                "mb": round(cold.bytes_read / 1e6, 2),
                "seconds": round(cold.seconds, 1),
                "docs_per_s": round(docs / secs, 2),
                "chunks_per_s": round(cold.chunks / secs, 1),
                "mb_per_s": round(cold.bytes_read / 1e6 / secs, 3),
                "rerun_s": round(rerun_s, 2),
                "rerun_embedded": warm.embedded,
                "rerun_unchanged": warm.unchanged,
                "index_mb": round(stats["size_bytes"] / 1e6, 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    header = (
        "| corpus | docs | failures | chunks | MB | s | docs/s | chunks/s | MB/s "
        "| re-run s | re-run embedded |"
    )
    print("\n" + header + "\n|" + "---|" * 11)
    for r in rows:
        print(
            f"| {r['corpus']} | {r['documents']} | {r['failures']} | {r['chunks']} | {r['mb']} "
            f"| {r['seconds']} | {r['docs_per_s']} | {r['chunks_per_s']} | {r['mb_per_s']} "
            f"| {r['rerun_s']} | {r['rerun_embedded']} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"embedder": config.embedder.name, "workers": args.workers}
    args.out.write_text(json.dumps({"config": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
