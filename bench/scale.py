#!/usr/bin/env python
"""Performance suite at 10k, 100k and 1M chunks (issue 8): build, size, memory, latency, recall.

Stages (each resumable; outputs live in --work, default /tmp/ragstrata-scale):

``ingest``   Every shared corpus (Markdown, MDX, HTML, PDF under ../shared/data, SciFact's
             corpus and the SQuAD-es contexts) goes through the real pipeline
             (``Ragstrata.add_documents``: chunker, the default embedder, BM25 analyzer, Qdrant
             Edge) into one index, with ``chunking.max_tokens`` small enough (96) that the
             ~16.7 M characters give about 100k chunks. Records ingestion chunks/s.
``export``   Reads the chunks and their stored vectors back into ``base.npz`` + ``chunks.jsonl``.
``build``    Builds store-level indexes of N = 10k, 100k, 1M chunks with ``EdgeStore.upsert``:
             the first 100k are the real chunks; above that, real chunks repeated with
             perturbation (10 % of words dropped, Gaussian noise on the vector, re-normalized).
             Variants: ``float`` (float32 vectors in RAM) and ``int8`` (scalar quantization in
             RAM, float32 originals on disk, rescoring). Records build seconds, peak RSS, disk.
``query``    Each index is opened in a fresh process, which runs dense, BM25, hybrid (the real
             ``HybridRetriever``: query embedding + both searches + RRF + fetch) and filtered
             queries; records p50/p95 and that process's RSS after the queries (query-time
             memory); dense recall@10 against numpy brute force over the same vectors.
``baselines`` rank_bm25 and bm25s queries/s against our BM25 (sparse vector) on the same 100k
             chunks and analyzer terms; cross-encoder rerank latency for 50 candidates.
``report``   Table + matplotlib plots (bench/results/scale_*.png), bench/results/scale.json.

Usage::

    python bench/scale.py ingest
    python bench/scale.py export
    python bench/scale.py build --n 10000 100000 1000000 --variant float int8
    python bench/scale.py query --n 10000 100000 1000000 --variant float int8
    python bench/scale.py baselines
    python bench/scale.py report

The machine is shared: compare rows of one run (ratios), not absolute times across runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DATA = Path(os.environ.get("RAGSTRATA_DATA", ROOT.parent / "shared" / "data"))
DOC_CORPORA = (
    "fastapi-docs-md",
    "react-docs-es-mdx",
    "html-debian-reference-es",
    "pdf-es",
    "pdf-two-column-en",
)
MAX_TOKENS = 96
QUERIES = 200
SEED = 13


# --------------------------------------------------------------------------- helpers


def rss_mb() -> float:
    """Current resident set size of this process in MiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_mb(path: Path) -> float:
    """Allocated size of a directory tree in MiB (blocks, so sparse files count as written)."""
    total = 0
    for p in path.rglob("*"):
        if p.is_file():
            total += p.stat().st_blocks * 512
    return total / 2**20


def percentiles(values: list[float]) -> tuple[float, float]:
    """(p50, p95) of ``values`` (nearest rank)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def load_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def save_result(work: Path, key: str, value: Any) -> None:
    """Merge ``value`` under ``key`` into ``work/results.json`` (atomic replace)."""
    path = work / "results.json"
    data = load_json(path)
    data[key] = value
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


# --------------------------------------------------------------------------- ingest


def shared_documents() -> Iterator[Any]:
    """Documents of every shared corpus: files through the real loader, then SciFact's corpus
    and the SQuAD-es v2 contexts as the evaluation runner builds them."""
    from ragstrata.eval.datasets import load_beir, load_squad
    from ragstrata.eval.runner import dataset_documents
    from ragstrata.ingest.loader import discover, load_document
    from ragstrata.types import IngestFailure

    paths, errors = discover([DATA / name for name in DOC_CORPORA])
    for err in errors:
        print("discover:", err, file=sys.stderr)
    for path in paths:
        if path.name == "SOURCE.md":
            continue
        try:
            yield load_document(path)
        except Exception as exc:  # reported by the pipeline like the CLI does
            yield IngestFailure(str(path), getattr(exc, "code", "RS200"), str(exc))
    yield from dataset_documents(load_beir(DATA / "beir-scifact"))
    yield from dataset_documents(
        load_squad(DATA / "squad-es-dev-small" / "dev-v2.0-es_small.json.gz")
    )


def stage_ingest(work: Path, limit: int | None = None) -> None:
    from ragstrata.config import ChunkerConfig, RagConfig
    from ragstrata.pipeline import Ragstrata

    index = work / "index-real"
    shutil.rmtree(index, ignore_errors=True)
    base = RagConfig.load()
    config = dataclasses.replace(base, chunking=ChunkerConfig(max_tokens=MAX_TOKENS)).with_index(
        index
    )
    last = [time.perf_counter(), 0]

    def progress(event: str, done: int, total: int) -> None:
        if event == "embed" and time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            print(f"  embedded {done:,} chunks ({time.strftime('%H:%M:%S')})", flush=True)

    with Ragstrata(config) as engine:
        engine.embedder.embed_query("warm-up")
        t = time.perf_counter()
        report = engine.add_documents(
            itertools.islice(shared_documents(), limit), progress=progress
        )
        seconds = time.perf_counter() - t
        stats = engine.stats()
    chunks = int(stats.get("chunks", 0))
    row = {
        "documents": report.added,
        "failures": [f.path for f in report.failures],
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_s": round(chunks / seconds, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "index_mb": round(dir_mb(index), 1),
        "embedder": config.embedder.name,
        "max_tokens": MAX_TOKENS,
        "load_avg_1m_end": os.getloadavg()[0],
    }
    print(json.dumps(row, indent=1))
    save_result(work, "ingest", row)


# --------------------------------------------------------------------------- export


def stage_export(work: Path) -> None:
    """Chunks (payload + BM25 term frequencies) and stored vectors of the real index, and the
    benchmark queries (SciFact test queries + SQuAD-es v2 questions) with their embeddings."""
    from ragstrata.config import RagConfig
    from ragstrata.eval.datasets import load_beir, load_squad
    from ragstrata.index.edge import EdgeStore, chunk_to_payload
    from ragstrata.pipeline import Ragstrata

    index = work / "index-real"
    config = RagConfig.load().with_index(index)
    with Ragstrata(config) as engine:
        store = EdgeStore(index / "shard", dim=engine.embedder.dim)
        ids = sorted(store.chunk_ids())
        chunker, analyzer = engine.chunker, engine.analyzer
        vectors = np.zeros((len(ids), store.dim), dtype=np.float32)
        with (work / "chunks.jsonl").open("w", encoding="utf-8") as out:
            for lo in range(0, len(ids), 2048):
                batch = ids[lo : lo + 2048]
                chunks = store.get(batch)
                vecs = store.dense_vectors(batch)
                for i, chunk in enumerate(chunks, start=lo):
                    vectors[i] = vecs[chunk.chunk_id]
                    tf = analyzer.term_frequencies(chunker.embedding_text(chunk))
                    row = {"payload": chunk_to_payload(chunk), "tf": dict(tf)}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        store.close()
        np.save(work / "base_vectors.npy", vectors)
        rng = random.Random(SEED)
        scifact = load_beir(DATA / "beir-scifact")
        squad = load_squad(DATA / "squad-es-dev-small" / "dev-v2.0-es_small.json.gz")
        queries = rng.sample(sorted(scifact.queries.values()), QUERIES // 2) + rng.sample(
            sorted(squad.queries.values()), QUERIES // 2
        )
        qvec = np.stack([engine.embedder.embed_query(q) for q in queries]).astype(np.float32)
    (work / "queries.json").write_text(json.dumps(queries, ensure_ascii=False))
    np.save(work / "query_vectors.npy", qvec)
    print(f"exported {len(ids):,} chunks, {len(queries)} queries")


# --------------------------------------------------------------------------- build


def _perturb(payload: dict[str, Any], tf: dict[str, int], copy: int, rng: random.Random):
    """A perturbed copy of one real chunk: 10 % of words (and term occurrences) dropped, a new
    chunk id, doc id and source so that copies are distinct documents."""
    words = payload["text"].split(" ")
    kept = [w for w in words if rng.random() > 0.1] or words[:1]
    new = dict(payload)
    new["text"] = " ".join(kept)
    new["chunk_id"] = f"{copy:04x}{payload['chunk_id'][4:]}"
    new["doc_id"] = f"{copy:04x}{payload['doc_id'][4:]}"
    new["source"] = f"copy{copy}/{payload['source']}"
    new["end"] = payload["start"] + len(new["text"])
    new_tf = {}
    for term, count in tf.items():
        c = sum(1 for _ in range(count) if rng.random() > 0.1)
        if c:
            new_tf[term] = c
    return new, new_tf


def corpus_batches(work: Path, n: int, batch: int = 10_000):
    """Yield (payloads, tfs, vectors float32 (b, dim)) for the first ``n`` benchmark chunks:
    the real chunks, then perturbed copies (vector + N(0, 0.3^2 / dim) noise per dimension,
    L2-normalized: cosine to the original about 0.96)."""
    rows = [json.loads(line) for line in (work / "chunks.jsonl").open(encoding="utf-8")]
    base = np.load(work / "base_vectors.npy")
    dim = base.shape[1]
    rng = random.Random(SEED)
    nrng = np.random.default_rng(SEED)
    made = 0
    copy = 0
    while made < n:
        for lo in range(0, len(rows), batch):
            take = min(batch, len(rows) - lo, n - made)
            if take <= 0:
                return
            part = rows[lo : lo + take]
            vecs = base[lo : lo + take].copy()
            if copy == 0:
                payloads = [r["payload"] for r in part]
                tfs = [r["tf"] for r in part]
            else:
                pairs = [_perturb(r["payload"], r["tf"], copy, rng) for r in part]
                payloads = [p for p, _ in pairs]
                tfs = [t for _, t in pairs]
                vecs += nrng.standard_normal(vecs.shape).astype(np.float32) * (0.3 / np.sqrt(dim))
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            made += take
            yield payloads, tfs, vecs
        copy += 1


def index_path(work: Path, n: int, variant: str) -> Path:
    return work / f"edge-{n}-{variant}"


def stage_build(work: Path, n: int, variant: str) -> None:
    """Bulk-build one store of ``n`` chunks with ``EdgeStore.upsert`` + ``optimize`` and record
    build time, peak RSS, disk; also the exact dense top-10 of every query (numpy brute force
    over the same vectors) for the recall measurement."""
    from ragstrata.index.bm25 import bm25_document_weights
    from ragstrata.index.edge import EdgeStore, payload_to_chunk

    path = index_path(work, n, variant)
    shutil.rmtree(path, ignore_errors=True)
    qvec = np.load(work / "query_vectors.npy")
    # BM25 length normalization with the corpus average, as the pipeline does
    lengths_total, count = 0, 0
    for _, tfs, _ in corpus_batches(work, min(n, 100_000)):
        lengths_total += sum(sum(tf.values()) for tf in tfs)
        count += len(tfs)
    avgdl = lengths_total / count
    quantization = {"float": "none", "int8": "int8", "binary": "binary"}[variant]
    store = EdgeStore(
        path, dim=qvec.shape[1], quantization=quantization, on_disk=quantization != "none"
    )
    top_scores = np.full((len(qvec), 10), -2.0, dtype=np.float32)
    top_ids = np.empty((len(qvec), 10), dtype=object)
    insert_s = 0.0
    prep_s = 0.0
    done = 0
    for payloads, tfs, vecs in corpus_batches(work, n):
        t = time.perf_counter()
        chunks = [payload_to_chunk(p) for p in payloads]
        sparse = [
            bm25_document_weights(
                __import__("collections").Counter(tf),
                doc_len=sum(tf.values()),
                avgdl=avgdl,
                k1=1.2,
                b=0.75,
            )
            for tf in tfs
        ]
        prep_s += time.perf_counter() - t
        t = time.perf_counter()
        store.upsert(chunks, vecs, sparse)
        insert_s += time.perf_counter() - t
        # running exact top-10 (ground truth for recall@10)
        scores = qvec @ vecs.T
        ids = np.array([c.chunk_id for c in chunks], dtype=object)
        merged_s = np.concatenate([top_scores, scores], axis=1)
        merged_i = np.concatenate([top_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        order = np.argsort(-merged_s, axis=1)[:, :10]
        top_scores = np.take_along_axis(merged_s, order, axis=1)
        top_ids = np.take_along_axis(merged_i, order, axis=1)
        before = done
        done += len(chunks)
        if done // 100_000 > before // 100_000 or done == n:
            print(f"  {done:,} upserted ({time.strftime('%H:%M:%S')})", flush=True)
    t = time.perf_counter()
    store.flush()
    store.optimize()
    store.flush()
    optimize_s = time.perf_counter() - t
    store.close()
    (path.parent / f"{path.name}.truth.json").write_text(json.dumps(top_ids.tolist()))
    row = {
        "n": n,
        "variant": variant,
        "insert_s": round(insert_s, 1),
        "optimize_s": round(optimize_s, 1),
        "build_s": round(insert_s + optimize_s, 1),
        "prep_s": round(prep_s, 1),
        "build_peak_rss_mb": round(peak_rss_mb()),
        "disk_mb": round(dir_mb(path), 1),
        "load_avg_1m_end": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(row))
    save_result(work, f"build/{n}/{variant}", row)


# --------------------------------------------------------------------------- query


def stage_query_child(work: Path, n: int, variant: str) -> None:
    """Runs in a fresh process: open the store, time the queries, report this process's RSS."""
    from ragstrata.config import RetrievalConfig
    from ragstrata.index.edge import EdgeStore
    from ragstrata.retrieve.hybrid import HybridRetriever, query_sparse_vector
    from ragstrata.stages import load_embedder
    from ragstrata.text.analyzer import Analyzer

    path = index_path(work, n, variant)
    queries = json.loads((work / "queries.json").read_text())
    qvec = np.load(work / "query_vectors.npy")
    truth = json.loads((path.parent / f"{path.name}.truth.json").read_text())
    rss_start = rss_mb()
    quantization = {"float": "none", "int8": "int8", "binary": "binary"}[variant]
    t = time.perf_counter()
    store = EdgeStore(path, dim=qvec.shape[1], quantization=quantization)
    open_s = time.perf_counter() - t
    rss_open = rss_mb()
    analyzer = Analyzer()
    sparse_q = [query_sparse_vector(analyzer, q) for q in queries]
    es = {"language": "es"}
    selectivity = store.count(es) / store.count()
    for v in qvec[:10]:  # warm-up
        store.dense_search_ids(v, limit=50)
    timings: dict[str, list[float]] = {k: [] for k in ("dense", "bm25", "dense_filtered")}
    hits10: list[float] = []
    for v, sq, gold in zip(qvec, sparse_q, truth, strict=True):
        t = time.perf_counter()
        top = store.dense_search_ids(v, limit=50)
        timings["dense"].append((time.perf_counter() - t) * 1000)
        hits10.append(len({c for c, _ in top[:10]} & set(gold)) / 10)
        t = time.perf_counter()
        store.sparse_search_ids(sq, limit=50)
        timings["bm25"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        store.dense_search_ids(v, limit=50, filters=es)
        timings["dense_filtered"].append((time.perf_counter() - t) * 1000)
    rss_store = rss_mb()
    quant_modes: dict[str, dict[str, float]] = {}
    if quantization != "none":
        # the recall cost of quantization, measured on this index: quantized scores only,
        # quantized + rescoring (the default), and the float32 vectors alone (quantization off)
        import qdrant_edge as qe

        default_params = store._search_params
        for mode, qparams in (
            ("quantized_no_rescore", qe.QuantizationSearchParams(rescore=False)),
            ("float_only", qe.QuantizationSearchParams(ignore=True)),
        ):
            store._search_params = qe.SearchParams(quantization=qparams)
            walls, recalls = [], []
            for v, gold in zip(qvec, truth, strict=True):
                t = time.perf_counter()
                top = store.dense_search_ids(v, limit=50)
                walls.append((time.perf_counter() - t) * 1000)
                recalls.append(len({c for c, _ in top[:10]} & set(gold)) / 10)
            p50, p95 = percentiles(walls)
            quant_modes[mode] = {
                "recall_at_10": round(statistics.fmean(recalls), 4),
                "dense_p50_ms": round(p50, 2),
                "dense_p95_ms": round(p95, 2),
            }
        store._search_params = default_params
    rss_quant_modes = rss_mb()
    embedder = load_embedder("minilm-onnx")
    embedder.embed_query("warm-up")
    retriever = HybridRetriever(store, embedder, analyzer, RetrievalConfig())
    for name, flt in (("hybrid", None), ("hybrid_filtered", es)):
        timings[name] = []
        timings[name + "_store"] = []
        for q in queries:
            result = retriever.search(q, top_k=5, filters=flt)
            timings[name].append(result.timings_ms["total"])
            timings[name + "_store"].append(
                result.timings_ms["total"] - result.timings_ms["embed_query"]
            )
    retriever.close()
    row: dict[str, Any] = {
        "n": n,
        "variant": variant,
        "open_s": round(open_s, 2),
        "rss_start_mb": round(rss_start),
        "rss_after_open_mb": round(rss_open),
        "rss_store_queries_mb": round(rss_store),
        "rss_final_mb": round(rss_mb()),
        "peak_rss_mb": round(peak_rss_mb()),
        "rss_after_quantization_modes_mb": round(rss_quant_modes),
        "recall_at_10": round(statistics.fmean(hits10), 4),
        "quantization_modes": quant_modes,
        "filter_selectivity": round(selectivity, 3),
        "queries": len(queries),
    }
    for name, values in timings.items():
        p50, p95 = percentiles(values)
        row[f"{name}_p50_ms"] = round(p50, 2)
        row[f"{name}_p95_ms"] = round(p95, 2)
    store.close()
    print(json.dumps(row))
    save_result(work, f"query/{n}/{variant}", row)


def stage_query(work: Path, n: int, variant: str) -> None:
    cmd = [sys.executable, __file__, "query-child", "--work", str(work), "--n", str(n)]
    subprocess.run([*cmd, "--variant", variant], check=True)


# --------------------------------------------------------------------------- baselines


def stage_baselines(work: Path, n: int = 100_000) -> None:
    """BM25 queries/s of rank_bm25 and bm25s on the same chunks and analyzer terms as our
    sparse-vector BM25 (float store of ``n`` chunks); cross-encoder latency for 50 candidates."""
    import bm25s
    from rank_bm25 import BM25Okapi

    from ragstrata.index.edge import EdgeStore
    from ragstrata.retrieve.hybrid import query_sparse_vector
    from ragstrata.text.analyzer import Analyzer

    queries = json.loads((work / "queries.json").read_text())
    analyzer = Analyzer()
    q_terms = [analyzer.terms(q) for q in queries]
    docs: list[list[str]] = []
    for _, tfs, _ in corpus_batches(work, n):
        docs.extend([t for t, c in tf.items() for _ in range(c)] for tf in tfs)
    row: dict[str, Any] = {"n": len(docs), "queries": len(queries)}

    t = time.perf_counter()
    okapi = BM25Okapi(docs, k1=1.2, b=0.75)
    row["rank_bm25_build_s"] = round(time.perf_counter() - t, 1)
    sample = q_terms[:40]  # rank_bm25 scores every document in Python: 40 queries suffice
    t = time.perf_counter()
    for q in sample:
        scores = okapi.get_scores(q)
        np.argpartition(-scores, 10)[:10]
    row["rank_bm25_qps"] = round(len(sample) / (time.perf_counter() - t), 2)
    del okapi

    t = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(bm25s.tokenization.Tokenized(*_bm25s_vocab(docs)), show_progress=False)
    row["bm25s_build_s"] = round(time.perf_counter() - t, 1)
    vocab = retriever.vocab_dict
    t = time.perf_counter()
    for q in q_terms:
        ids = [vocab[w] for w in q if w in vocab]
        if ids:
            np.argpartition(-retriever.get_scores(ids), 10)[:10]
    row["bm25s_qps"] = round(len(q_terms) / (time.perf_counter() - t), 1)
    del retriever

    store = EdgeStore(index_path(work, n, "float"), dim=384)
    sparse_q = [query_sparse_vector(analyzer, q) for q in queries]
    for sq in sparse_q[:10]:
        store.sparse_search_ids(sq, limit=10)
    t = time.perf_counter()
    for sq in sparse_q:
        store.sparse_search_ids(sq, limit=10)
    row["ragstrata_bm25_qps"] = round(len(sparse_q) / (time.perf_counter() - t), 1)
    row["rerank"] = _rerank_latency(store, queries[:30])
    store.close()
    row["load_avg_1m_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(row, indent=1))
    save_result(work, "baselines", row)


def _bm25s_vocab(docs: list[list[str]]) -> tuple[list[list[int]], dict[str, int]]:
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in d] for d in docs]
    return ids, vocab


def _rerank_latency(store: Any, queries: list[str]) -> dict[str, Any]:
    """Cross-encoder (the shipped model) over the top 50 hybrid candidates of each query."""
    from ragstrata.config import RagConfig, RetrievalConfig
    from ragstrata.rerank.base import passage_text
    from ragstrata.retrieve.hybrid import HybridRetriever
    from ragstrata.stages import load_embedder, load_reranker
    from ragstrata.text.analyzer import Analyzer

    reranker = load_reranker(RagConfig.load().rerank.model_path)
    retriever = HybridRetriever(store, load_embedder("minilm-onnx"), Analyzer(), RetrievalConfig())
    cands = [
        [passage_text(h.chunk) for h in retriever.search(q, top_k=50, candidates=50).hits]
        for q in queries
    ]
    retriever.close()
    reranker.score(queries[0], cands[0])
    wall = []
    for q, c in zip(queries, cands, strict=True):
        t = time.perf_counter()
        reranker.score(q, c)
        wall.append((time.perf_counter() - t) * 1000)
    p50, p95 = percentiles(wall)
    return {"candidates": 50, "queries": len(wall), "p50_ms": round(p50), "p95_ms": round(p95)}


# --------------------------------------------------------------------------- report


def stage_report(work: Path) -> None:
    """Markdown tables on stdout, bench/results/scale.json, and two PNG plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = load_json(work / "results.json")
    (RESULTS / "scale.json").write_text(json.dumps(data, indent=1))
    builds = {k: v for k, v in data.items() if k.startswith("build/")}
    queries = {k: v for k, v in data.items() if k.startswith("query/")}
    print(
        "| chunks | vectors | build s | disk MB | query-time RSS MB | recall@10 | dense p50/p95 ms "
        "| BM25 p50/p95 | filtered dense p50/p95 | hybrid p50/p95 | hybrid store-only p50/p95 "
        "| filtered hybrid p50/p95 |"
    )
    print("|" + "---|" * 12)
    for key in sorted(queries, key=lambda k: (queries[k]["n"], queries[k]["variant"])):
        q = queries[key]
        b = builds.get(key.replace("query/", "build/"), {})

        def pair(name: str, q: dict[str, Any] = q) -> str:
            return f"{q[name + '_p50_ms']:.2f} / {q[name + '_p95_ms']:.2f}"

        print(
            f"| {q['n']:,} | {q['variant']} | {b.get('build_s', '–')} | {b.get('disk_mb', '–')} "
            f"| {q['rss_final_mb']:,} | {q['recall_at_10']:.3f} | {pair('dense')} | {pair('bm25')} "
            f"| {pair('dense_filtered')} | {pair('hybrid')} | {pair('hybrid_store')} "
            f"| {pair('hybrid_filtered')} |"
        )
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for variant, style in (("float", "-"), ("int8", "--"), ("binary", ":")):
        rows = sorted(
            (q for q in queries.values() if q["variant"] == variant), key=lambda q: q["n"]
        )
        if not rows:
            continue
        ns = [q["n"] for q in rows]
        for name, color in (
            ("dense", "C0"),
            ("bm25", "C1"),
            ("hybrid_store", "C2"),
            ("dense_filtered", "C3"),
        ):
            axes[0].plot(
                ns,
                [q[name + "_p95_ms"] for q in rows],
                style,
                color=color,
                marker="o",
                label=f"{name} p95 ({variant})",
            )
        axes[1].plot(
            ns,
            [q["rss_final_mb"] for q in rows],
            style,
            marker="o",
            label=f"query-time RSS ({variant})",
        )
        b_rows = [builds.get(f"build/{n}/{variant}") for n in ns]
        axes[1].plot(
            [n for n, b in zip(ns, b_rows, strict=True) if b],
            [b["disk_mb"] for b in b_rows if b],
            style,
            marker="s",
            color="grey",
            label=f"disk ({variant})",
        )
    axes[1].axhline(4096, color="red", linewidth=0.8, label="4 GiB target (1M x 384-d)")
    for ax, ylabel in ((axes[0], "latency p95 (ms)"), (axes[1], "MiB")):
        ax.set_xscale("log")
        ax.set_xlabel("chunks")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_title("Store latency (Qdrant Edge, 384-d)")
    axes[1].set_title("Memory at query time and index size")
    fig.tight_layout()
    fig.savefig(RESULTS / "scale.png", dpi=110)
    print(f"wrote {RESULTS / 'scale.png'} and {RESULTS / 'scale.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "stage",
        choices=["ingest", "export", "build", "query", "query-child", "baselines", "report"],
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragstrata-scale"))
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--docs", type=int, help="ingest: only the first DOCS documents (a smoke test)"
    )
    parser.add_argument("--variant", nargs="+", default=["float", "int8"])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.stage == "ingest":
        stage_ingest(args.work, args.docs)
    elif args.stage == "export":
        stage_export(args.work)
    elif args.stage in ("build", "query", "query-child"):
        run = {"build": stage_build, "query": stage_query, "query-child": stage_query_child}
        for n in args.n:
            for variant in args.variant:
                run[args.stage](args.work, n, variant)
    elif args.stage == "baselines":
        stage_baselines(args.work)
    elif args.stage == "report":
        stage_report(args.work)


if __name__ == "__main__":
    random.seed(SEED)
    main()
