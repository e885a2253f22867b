"""Ingestion throughput per shared corpus and embedder: a cold build, then a re-run unchanged.

Usage: python bench/ingest_corpora.py [--data ../shared/data] [--corpus NAME ...]
                                      [--embedder NAME ...] [--max-files N] [--workers N]
                                      [--work DIR]

Each corpus folder under --data is ingested, once per ``--embedder`` (a config name such as
``minilm-onnx`` or ``e5-onnx``, set as ``embedder.name``; default: the configured one), into its
own fresh index (embedded store) with the real CLI code path (``Ragstrata.ingest``), then
ingested again unchanged. ``--max-files N`` ingests only the first N files of each corpus (the
files ingestion would find, in sorted path order), the same files for every embedder, so a big
corpus can be sampled. Prints a Markdown table (corpus, embedder, files, documents, failures,
chunks, MB, seconds, documents/s, chunks/s, MB/s, re-run seconds, chunks embedded on the
re-run) and writes bench/results/ingest_corpora.json (``rows``, one per corpus and embedder).
The machine is shared: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ragstrata.config import IngestConfig, RagConfig
from ragstrata.ingest.loader import discover
from ragstrata.pipeline import Ragstrata

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def corpus_files(folder: Path, max_files: int | None) -> list[Path]:
    """The files ingestion finds under ``folder``, sorted by path; the first ``max_files``."""
    files, _ = discover([folder])
    files = sorted(files, key=lambda p: p.relative_to(folder).as_posix())
    return files if max_files is None else files[:max_files]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--corpus", action="append", help="corpus folder name (repeatable)")
    parser.add_argument(
        "--embedder", action="append", help="embedder.name for a run (repeatable; one row each)"
    )
    parser.add_argument("--max-files", type=int, help="only the first N files of each corpus")
    parser.add_argument("--workers", type=int, default=-1, help="ingest.workers (-1 = auto)")
    parser.add_argument("--work", type=Path, help="where to build the indexes (default: tmp)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ingest_corpora.json")
    args = parser.parse_args()
    if args.max_files is not None and args.max_files < 1:
        parser.error(f"--max-files={args.max_files} must be >= 1")

    load_before = os.getloadavg()
    names = args.corpus or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    work = args.work or Path(tempfile.mkdtemp(prefix="ragstrata-bench-"))
    base = RagConfig.load()
    base = dataclasses.replace(base, ingest=IngestConfig(workers=args.workers))
    embedders = args.embedder or [base.embedder.name]
    rows = []
    for name in names:
        sources = (
            [args.data / name]
            if args.max_files is None
            else corpus_files(args.data / name, args.max_files)
        )
        for emb_name in embedders:
            config = dataclasses.replace(
                base, embedder=dataclasses.replace(base.embedder, name=emb_name)
            )
            index = work / f"{name}--{emb_name}"
            shutil.rmtree(index, ignore_errors=True)
            with Ragstrata(config.with_index(index)) as engine:
                engine.embedder.embed_query("warm-up")  # model load is not ingestion time
                cold = engine.ingest(sources)
                t = time.perf_counter()
                warm = engine.ingest(sources)
                rerun_s = time.perf_counter() - t
                stats = engine.stats()
                model = engine.embedder.name
            docs = cold.added + cold.updated + cold.unchanged
            secs = cold.seconds or float("nan")
            rows.append(
                {
                    "corpus": name,
                    "embedder": emb_name,
                    "model": model,
                    "files": len(sources) if args.max_files is not None else None,
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
    load_after = os.getloadavg()
    header = (
        "| corpus | embedder | docs | failures | chunks | MB | s | docs/s | chunks/s | MB/s "
        "| re-run s | re-run embedded |"
    )
    print(
        f"\nload average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
        + (f"; first {args.max_files} files of each corpus" if args.max_files else "")
    )
    print("\n" + header + "\n|" + "---|" * 12)
    for r in rows:
        print(
            f"| {r['corpus']} | {r['embedder']} | {r['documents']} | {r['failures']} "
            f"| {r['chunks']} | {r['mb']} | {r['seconds']} | {r['docs_per_s']} "
            f"| {r['chunks_per_s']} | {r['mb_per_s']} | {r['rerun_s']} | {r['rerun_embedded']} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "embedders": embedders,
        "workers": args.workers,
        "max_files": args.max_files,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }
    args.out.write_text(json.dumps({"config": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
