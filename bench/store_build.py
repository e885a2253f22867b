#!/usr/bin/env python
"""Bulk-build benchmark for ragstrata's embedded store candidates.

Builds N chunks (real text from /work/shared/data, split into ~150-word pieces and
repeated with small perturbations) into either Qdrant Edge (``qdrant_edge``) or
LanceDB, then measures build time, peak RSS, disk size, query latency and dense
recall@10 against numpy brute force.

Dense vectors are synthetic but clustered: ``--centroids`` random unit centroids,
each point = centroid + N(0, sigma^2) noise per dimension, L2-normalised. Queries
are drawn the same way (fresh noise), so they have real near neighbours.

Examples::

    python bench/store_build.py --n 100000 --engine edge --variant deferred
    python bench/store_build.py --n 100000 --engine lance
    python bench/store_build.py --engine edge --checks      # small-scale checks only
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("RAGSTRATA_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent / "results"
DIM = 384
K1, B = 1.2, 0.75
TOKEN_RE = re.compile(r"\w+")
UUID_NS = uuid.UUID("6f1c1d2e-6a0b-4f43-9a53-2f0f6d3b7a10")


# --------------------------------------------------------------------------- data


def _split_words(text: str, size: int = 150) -> list[str]:
    words = text.split()
    out = []
    for i in range(0, len(words), size):
        piece = words[i : i + size]
        if len(piece) >= 20:
            out.append(" ".join(piece))
    return out


def load_base_pieces() -> list[tuple[str, str, list[str], str]]:
    """(source, base_doc, section_path, text) pieces of ~150 words of real text."""
    pieces = []
    with gzip.open(DATA / "beir-scifact" / "corpus.jsonl.gz", "rt") as fh:
        for line in fh:
            d = json.loads(line)
            for p in _split_words(d["title"] + ". " + d["text"]):
                pieces.append(("scifact", "scifact/" + d["_id"], [d["title"][:60]], p))
    for sub in ("fastapi-docs-md", "react-docs-es-mdx"):
        for f in sorted((DATA / sub).rglob("*")):
            if f.suffix not in (".md", ".mdx") or not f.is_file():
                continue
            rel = str(f.relative_to(DATA / sub))
            heading = "root"
            buf: list[str] = []
            for line in f.read_text(errors="ignore").splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()[:60] or heading
                buf.append(line)
            for p in _split_words("\n".join(buf)):
                pieces.append((sub, f"{sub}/{rel}", [rel.split("/")[0], heading], p))
    return pieces


def make_chunks(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    base = load_base_pieces()
    chunks = []
    rep = 0
    while len(chunks) < n:
        for idx, (source, doc, section, text) in enumerate(base):
            if len(chunks) >= n:
                break
            words = text.split()
            if rep:  # small perturbation: drop ~5% words and swap a few neighbours
                words = [w for w in words if rng.random() > 0.05]
                for _ in range(3):
                    j = rng.randrange(len(words) - 1)
                    words[j], words[j + 1] = words[j + 1], words[j]
            text2 = " ".join(words)
            cid = f"{doc}#r{rep}#{idx}"
            chunks.append(
                {
                    "chunk_id": cid,
                    "doc_id": f"{doc}#r{rep}",
                    "source": source,
                    "text": text2,
                    "section_path": section,
                    "start": idx * 1000,
                    "end": idx * 1000 + len(text2),
                    "lang": "es" if "-es" in source or "/es/" in doc else "en",
                    "ordinal": idx,
                    "version": 1,
                }
            )
        rep += 1
    return chunks


def clustered_vectors(
    n: int, n_centroids: int, sigma: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cent = rng.standard_normal((n_centroids, DIM)).astype(np.float32)
    cent /= np.linalg.norm(cent, axis=1, keepdims=True)
    assign = rng.integers(0, n_centroids, n)
    vec = cent[assign] + sigma * rng.standard_normal((n, DIM)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    return vec, cent


def token_hash(tok: str) -> int:
    return zlib.crc32(tok.encode("utf-8"))  # stable unsigned 32-bit


def bm25_tf_vectors(texts: list[str]) -> list[tuple[list[int], list[float]]]:
    toks = [TOKEN_RE.findall(t.lower()) for t in texts]
    avgdl = sum(len(t) for t in toks) / max(1, len(toks))
    out = []
    for tt in toks:
        dl = len(tt)
        norm = K1 * (1 - B + B * dl / avgdl)
        merged: dict[int, float] = {}
        for tok, tf in Counter(tt).items():
            h = token_hash(tok)
            merged[h] = merged.get(h, 0.0) + tf  # hash collisions: sum tf
        idx = sorted(merged)
        out.append((idx, [merged[i] * (K1 + 1) / (merged[i] + norm) for i in idx]))
    return out


def query_sparse(text: str) -> tuple[list[int], list[float]]:
    idx = sorted({token_hash(t) for t in TOKEN_RE.findall(text.lower())})
    return idx, [1.0] * len(idx)


def load_queries(n: int) -> list[str]:
    qs = [json.loads(l)["text"] for l in open(DATA / "beir-scifact" / "queries.jsonl")]
    return qs[:n]


# --------------------------------------------------------------------------- utils


class RssSampler:
    """Samples VmRSS of this process (incl. native threads) every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def rss_mb() -> float:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss_mb())
            time.sleep(0.05)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def dir_mb(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, f))
    return total / 2**20


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def timed(fn, reps):
    lat = []
    res = []
    for r in reps:
        t = time.perf_counter()
        res.append(fn(r))
        lat.append((time.perf_counter() - t) * 1000)
    return lat, res


def brute_topk(vecs: np.ndarray, q: np.ndarray, k: int = 10) -> np.ndarray:
    sims = q @ vecs.T
    top = np.argpartition(-sims, k, axis=1)[:, :k]
    return top


def recall_at_k(truth: np.ndarray, got: list[list[int]], k: int = 10) -> float:
    hits = sum(len(set(t[:k]) & set(g[:k])) for t, g in zip(truth, got, strict=False))
    return hits / (k * len(truth))


def point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(UUID_NS, chunk_id))


# --------------------------------------------------------------------------- edge

EDGE_VARIANTS = {
    # earlier untuned attempt (minus the full-text index): defaults, batch 1000
    "default": dict(batch=1000, m=16, ef=100, threads=0, segments=None, wal=True, deferred=False),
    # defer HNSW during load, then build it once with all cores
    "deferred": dict(batch=2000, m=16, ef=100, threads=0, segments=2, wal=False, deferred=True),
    "deferred_wal": dict(batch=2000, m=16, ef=100, threads=0, segments=2, wal=True, deferred=True),
    "deferred_seg1": dict(
        batch=5000, m=16, ef=100, threads=0, segments=1, wal=False, deferred=True
    ),
    "deferred_ef64": dict(batch=2000, m=16, ef=64, threads=0, segments=2, wal=False, deferred=True),
    "inline_seg2": dict(batch=2000, m=16, ef=100, threads=0, segments=2, wal=False, deferred=False),
    "default_t1": dict(
        batch=1000, m=16, ef=100, threads=1, segments=None, wal=True, deferred=False
    ),
    "default_b5k": dict(
        batch=5000, m=16, ef=100, threads=0, segments=None, wal=True, deferred=False
    ),
    # reproduces the earlier slow attempt: BM25-scored full-text payload index present during inserts
    "default_fts": dict(
        batch=1000, m=16, ef=100, threads=0, segments=None, wal=True, deferred=False, fts=True
    ),
}
BIG_THRESHOLD_KB = 1_000_000_000  # never index during load
NORMAL_THRESHOLD_KB = 10_000  # Qdrant default (10 MB)


def edge_config(v: dict, load_phase: bool, fts_on_disk: bool = False):
    import qdrant_edge as qe

    hnsw = qe.HnswIndexConfig(
        m=v["m"],
        ef_construct=v["ef"],
        full_scan_threshold=10_000,
        max_indexing_threads=v["threads"],
    )
    opt = qe.EdgeOptimizersConfig(
        default_segment_number=v["segments"],
        indexing_threshold=BIG_THRESHOLD_KB
        if (load_phase and v["deferred"])
        else NORMAL_THRESHOLD_KB,
    )
    return qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)},
        sparse_vectors={
            "bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, on_disk=fts_on_disk or None)
        },
        hnsw_config=hnsw,
        optimizers=opt,
        wal_enabled=v["wal"],
    )


def edge_points(chunks, vecs, sparse, lo, hi):
    import qdrant_edge as qe

    pts = []
    for i in range(lo, hi):
        c = chunks[i]
        idx, val = sparse[i]
        pts.append(
            qe.Point(
                id=point_id(c["chunk_id"]),
                vector={
                    "dense": vecs[i].tolist(),
                    "bm25": qe.SparseVector(indices=idx, values=val),
                },
                payload=c,
            )
        )
    return pts


def edge_build(path: Path, v: dict, chunks, vecs, sparse, log) -> dict:
    import qdrant_edge as qe

    n = len(chunks)
    t0 = time.perf_counter()
    shard = qe.EdgeShard.create(str(path), edge_config(v, load_phase=True))
    for field in ("doc_id", "source"):
        shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
    if v.get("fts"):
        params = qe.TextIndexParams(tokenizer=qe.TokenizerType.Word, lowercase=True, scoring=True)
        shard.update(qe.UpdateOperation.create_field_index("text", params))
    for lo in range(0, n, v["batch"]):
        shard.update(
            qe.UpdateOperation.upsert_points(
                edge_points(chunks, vecs, sparse, lo, min(n, lo + v["batch"]))
            )
        )
    t_insert = time.perf_counter() - t0
    log(f"  inserted {n} in {t_insert:.1f}s; info={_info(shard)}")
    if v["deferred"]:
        # indexing_threshold is persisted config; switch it back on by reopening.
        shard.flush()
        shard.close()
        shard = qe.EdgeShard.load(str(path), edge_config(v, load_phase=False))
    t1 = time.perf_counter()
    shard.optimize()
    t_opt = time.perf_counter() - t1
    shard.flush()
    t_total = time.perf_counter() - t0
    info = _info(shard)
    log(f"  optimize {t_opt:.1f}s, total {t_total:.1f}s; info={info}")
    return dict(shard=shard, insert_s=t_insert, optimize_s=t_opt, build_s=t_total, info=info)


def _info(shard) -> dict:
    i = shard.info()
    return dict(
        segments=i.segments_count, points=i.points_count, indexed_vectors=i.indexed_vectors_count
    )


def edge_queries(shard, qvecs, qtexts):
    import qdrant_edge as qe

    def dense(q):
        return shard.query(
            qe.QueryRequest(limit=10, query=qe.Query.Nearest(q.tolist(), using="dense"))
        )

    def sparse(t):
        idx, val = query_sparse(t)
        return shard.query(
            qe.QueryRequest(
                limit=10,
                query=qe.Query.Nearest(qe.SparseVector(indices=idx, values=val), using="bm25"),
            )
        )

    def hybrid(args):
        q, t = args
        idx, val = query_sparse(t)
        return shard.query(
            qe.QueryRequest(
                limit=10,
                prefetches=[
                    qe.Prefetch(limit=50, query=qe.Query.Nearest(q.tolist(), using="dense")),
                    qe.Prefetch(
                        limit=50,
                        query=qe.Query.Nearest(
                            qe.SparseVector(indices=idx, values=val), using="bm25"
                        ),
                    ),
                ],
                query=qe.Fusion.Rrf(k=60),
                with_payload=["chunk_id"],
            )
        )

    out = {}
    for name, fn, args in (
        ("dense", dense, list(qvecs)),
        ("sparse", sparse, qtexts),
        ("hybrid", hybrid, list(zip(qvecs, qtexts, strict=False))),
    ):
        fn(args[0])  # warm-up
        lat, res = timed(fn, args)
        out[name] = dict(p50=pct(lat, 50), p95=pct(lat, 95), res=res)
    return out


def run_edge(args, chunks, vecs, sparse, qvecs, qtexts, log) -> dict:
    v = EDGE_VARIANTS[args.variant]
    path = Path(args.workdir) / f"edge_{args.variant}"
    shutil.rmtree(path, ignore_errors=True)
    with RssSampler() as rs:
        b = edge_build(path, v, chunks, vecs, sparse, log)
    shard = b.pop("shard")
    disk = dir_mb(path)
    q = edge_queries(shard, qvecs, qtexts)
    pid_to_idx = {point_id(c["chunk_id"]): i for i, c in enumerate(chunks)}
    truth = brute_topk(vecs, qvecs[:100])
    got = [[pid_to_idx[str(p.id)] for p in r] for r in q["dense"]["res"][:100]]
    rec = recall_at_k(truth, got)
    shard.close()
    return dict(
        engine="edge",
        variant=args.variant,
        config=v,
        **b,
        peak_rss_mb=rs.peak,
        disk_mb=disk,
        recall_at_10=rec,
        **{f"{k}_p{p}_ms": q[k][f"p{p}"] for k in q for p in (50, 95)},
    )


# ------------------------------------------------------------ edge small checks


def _small_edge(path: Path, n: int, wal: bool = True, all_term: bool = True):
    import qdrant_edge as qe

    chunks = make_chunks(n, seed=1)
    for c in chunks:
        c["text"] = "ubiquitous " + c["text"]  # term present in every doc
    vecs, _ = clustered_vectors(n, 20, 0.05, 1)
    sparse = bm25_tf_vectors([c["text"] for c in chunks])
    v = dict(EDGE_VARIANTS["default"], wal=wal)
    shard = qe.EdgeShard.create(str(path), edge_config(v, load_phase=False))
    for field in ("doc_id", "source"):
        shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
    shard.update(qe.UpdateOperation.upsert_points(edge_points(chunks, vecs, sparse, 0, n)))
    return shard, chunks, sparse


def _count(shard, flt=None) -> int:
    import qdrant_edge as qe

    return shard.count(qe.CountRequest(exact=True, filter=flt))


def crash_child(path: str, wal: bool, flush: bool) -> None:
    shard, _, _ = _small_edge(Path(path), 1000, wal=wal)
    if flush:
        shard.flush()
    print("READY", flush=True)
    time.sleep(60)


def run_checks(args, log) -> dict:
    import qdrant_edge as qe

    res: dict = {}
    tmp = Path(tempfile.mkdtemp(prefix="edgecheck_", dir=args.workdir))
    shard, chunks, sparse = _small_edge(tmp / "a", 1000)
    # 1) IDF for a term present in all docs
    h = token_hash("ubiquitous")
    N = _count(shard)
    r = shard.query(
        qe.QueryRequest(
            limit=3,
            query=qe.Query.Nearest(qe.SparseVector(indices=[h], values=[1.0]), using="bm25"),
        )
    )
    tf_part = sparse[0][1][sparse[0][0].index(h)]
    top = r[0]
    top_i = next(i for i, c in enumerate(chunks) if point_id(c["chunk_id"]) == str(top.id))
    top_tf = sparse[top_i][1][sparse[top_i][0].index(h)]
    idf_expected = math.log(1 + (N - N + 0.5) / (N + 0.5))
    res["idf_all_docs"] = dict(
        n_points=N,
        top_score=top.score,
        tf_part_of_top=top_tf,
        implied_idf=top.score / top_tf if top_tf else None,
        expected_idf=idf_expected,
        positive=top.score > 0,
        first_doc_tf=tf_part,
    )
    log(f"  IDF check: {res['idf_all_docs']}")
    # 2) delete by payload filter
    target = chunks[0]["doc_id"]
    flt = qe.Filter(must=[qe.FieldCondition(key="doc_id", match=qe.MatchValue(target))])
    before = _count(shard, flt)
    shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
    after = _count(shard, flt)
    res["delete_by_filter"] = dict(
        doc_id=target, before=before, after=after, total_after=_count(shard)
    )
    log(f"  delete check: {res['delete_by_filter']}")
    # 3) reopen after close, and config change on load
    total = _count(shard)
    shard.flush()
    shard.close()
    shard = qe.EdgeShard.load(str(tmp / "a"))
    res["reopen"] = dict(
        count_before=total,
        count_after=_count(shard),
        payload_schema=sorted(shard.info().payload_schema),
    )
    shard.close()
    try:
        v2 = dict(EDGE_VARIANTS["default"], m=32, ef=200)
        shard = qe.EdgeShard.load(str(tmp / "a"), edge_config(v2, load_phase=False))
        shard.optimize()
        res["reload_with_new_hnsw"] = dict(ok=True, count=_count(shard), info=_info(shard))
        shard.close()
    except Exception as e:
        res["reload_with_new_hnsw"] = dict(ok=False, error=f"{type(e).__name__}: {e}")
    try:
        shard = qe.EdgeShard.load(
            str(tmp / "a"), edge_config(dict(EDGE_VARIANTS["default"], wal=False), load_phase=False)
        )
        res["reload_with_wal_flip"] = dict(ok=True)
        shard.close()
    except Exception as e:
        res["reload_with_wal_flip"] = dict(ok=False, error=f"{type(e).__name__}: {e}")
    log(
        f"  reopen: {res['reopen']}; new hnsw: {res['reload_with_new_hnsw']}; wal flip: {res['reload_with_wal_flip']}"
    )
    # 4) SIGKILL with/without flush, WAL on/off
    crash = {}
    for wal in (True, False):
        for flush in (False, True):
            p = tmp / f"crash_wal{int(wal)}_flush{int(flush)}"
            proc = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--crash-child",
                    str(p),
                    "--crash-wal",
                    str(int(wal)),
                    "--crash-flush",
                    str(int(flush)),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            line = proc.stdout.readline().strip()
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            try:
                s = qe.EdgeShard.load(str(p))
                cnt = _count(s)
                s.close()
                crash[f"wal={wal},flush={flush}"] = dict(
                    ready=line == "READY", count_after_reopen=cnt
                )
            except Exception as e:
                crash[f"wal={wal},flush={flush}"] = dict(
                    ready=line == "READY", error=f"{type(e).__name__}: {e}"
                )
    res["sigkill"] = crash
    log(f"  sigkill: {crash}")
    shutil.rmtree(tmp, ignore_errors=True)
    return res


# --------------------------------------------------------------------------- lance


def run_lance(args, chunks, vecs, sparse, qvecs, qtexts, log) -> dict:
    import lancedb
    import pyarrow as pa
    from lancedb.index import HnswSq, IvfPq

    path = Path(args.workdir) / "lance"
    shutil.rmtree(path, ignore_errors=True)
    n = len(chunks)
    with RssSampler() as rs:
        t0 = time.perf_counter()
        db = lancedb.connect(str(path))
        fields = ["chunk_id", "doc_id", "source", "text"]
        tbl = None
        bs = 10_000
        for lo in range(0, n, bs):
            hi = min(n, lo + bs)
            cols = {f: [chunks[i][f] for i in range(lo, hi)] for f in fields}
            cols["section_path"] = [chunks[i]["section_path"] for i in range(lo, hi)]
            cols["start"] = [chunks[i]["start"] for i in range(lo, hi)]
            cols["end"] = [chunks[i]["end"] for i in range(lo, hi)]
            cols["vector"] = pa.FixedSizeListArray.from_arrays(
                pa.array(vecs[lo:hi].reshape(-1)), DIM
            )
            batch = pa.table(cols)
            if tbl is None:
                tbl = db.create_table("chunks", batch)
            else:
                tbl.add(batch)
        t_insert = time.perf_counter() - t0
        t1 = time.perf_counter()
        if args.lance_index == "hnsw":
            cfg = HnswSq(distance_type="cosine", num_partitions=1)
        else:
            cfg = IvfPq(
                distance_type="cosine", num_partitions=max(1, int(math.sqrt(n))), num_sub_vectors=48
            )
        tbl.create_index("vector", config=cfg)
        t_vec = time.perf_counter() - t1
        t2 = time.perf_counter()
        tbl.create_fts_index("text", use_tantivy=False)
        t_fts = time.perf_counter() - t2
        for f in ("doc_id", "source"):
            tbl.create_scalar_index(f, index_type="BTREE")
        t_total = time.perf_counter() - t0
    log(
        f"  lance insert {t_insert:.1f}s vec-index {t_vec:.1f}s fts {t_fts:.1f}s total {t_total:.1f}s"
    )
    disk = dir_mb(path)

    def dense(q):
        return (
            tbl.search(q, vector_column_name="vector")
            .distance_type("cosine")
            .nprobes(args.lance_nprobes)
            .refine_factor(args.lance_refine)
            .limit(10)
            .select(["chunk_id"])
            .to_list()
        )

    def fts(t):
        return (
            tbl.search(re.sub(r"[^\w\s]", " ", t), query_type="fts")
            .limit(10)
            .select(["chunk_id"])
            .to_list()
        )

    def hybrid(a):
        q, t = a
        d = dense(q)
        s = fts(t)
        score: dict = {}
        for lst in (d, s):
            for r, row in enumerate(lst):
                score[row["chunk_id"]] = score.get(row["chunk_id"], 0) + 1 / (60 + r + 1)
        return sorted(score, key=score.get, reverse=True)[:10]

    out = {}
    for name, fn, a in (
        ("dense", dense, list(qvecs)),
        ("sparse", fts, qtexts),
        ("hybrid", hybrid, list(zip(qvecs, qtexts, strict=False))),
    ):
        fn(a[0])
        lat, res = timed(fn, a)
        out[name] = dict(p50=pct(lat, 50), p95=pct(lat, 95), res=res)
    cid_to_idx = {c["chunk_id"]: i for i, c in enumerate(chunks)}
    truth = brute_topk(vecs, qvecs[:100])
    got = [[cid_to_idx[r["chunk_id"]] for r in res] for res in out["dense"]["res"][:100]]
    return dict(
        engine="lance",
        variant=args.lance_index,
        config=dict(
            index=args.lance_index,
            nprobes=args.lance_nprobes,
            refine=args.lance_refine,
            fts="native",
        ),
        insert_s=t_insert,
        optimize_s=t_vec + t_fts,
        vector_index_s=t_vec,
        fts_index_s=t_fts,
        build_s=t_total,
        peak_rss_mb=rs.peak,
        disk_mb=disk,
        recall_at_10=recall_at_k(truth, got),
        **{f"{k}_p{p}_ms": out[k][f"p{p}"] for k in out for p in (50, 95)},
    )


# --------------------------------------------------------------------------- main


def table(rows: list[dict]) -> str:
    cols = [
        "engine",
        "variant",
        "build_s",
        "insert_s",
        "optimize_s",
        "peak_rss_mb",
        "disk_mb",
        "dense_p50_ms",
        "dense_p95_ms",
        "sparse_p50_ms",
        "sparse_p95_ms",
        "hybrid_p50_ms",
        "hybrid_p95_ms",
        "recall_at_10",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                f"{r.get(c):.2f}" if isinstance(r.get(c), float) else str(r.get(c)) for c in cols
            )
            + " |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--engine", choices=["edge", "lance"], default="edge")
    ap.add_argument(
        "--variant",
        default="deferred",
        help=f"edge variant: {', '.join(EDGE_VARIANTS)} (comma list ok)",
    )
    ap.add_argument(
        "--checks", action="store_true", help="edge only: run the 1k-point correctness checks"
    )
    ap.add_argument(
        "--skip-build", action="store_true", help="with --checks: skip the N-point build"
    )
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--centroids", type=int, default=2000)
    ap.add_argument(
        "--sigma", type=float, default=0.04, help="per-dim gaussian noise around centroids"
    )
    ap.add_argument("--lance-index", choices=["ivf_pq", "hnsw"], default="ivf_pq")
    ap.add_argument("--lance-nprobes", type=int, default=20)
    ap.add_argument("--lance-refine", type=int, default=10)
    ap.add_argument("--workdir", default=tempfile.gettempdir())
    ap.add_argument("--out", default=None)
    ap.add_argument("--crash-child", help=argparse.SUPPRESS)
    ap.add_argument("--crash-wal", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--crash-flush", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.crash_child:
        crash_child(args.crash_child, bool(args.crash_wal), bool(args.crash_flush))
        return

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    out: dict = dict(
        n=args.n,
        cpus=os.cpu_count(),
        vectors=f"{args.centroids} random unit centroids + N(0,{args.sigma}^2)/dim noise, L2-normalised, dim {DIM}",
        runs=[],
    )
    if not args.skip_build:
        t = time.perf_counter()
        chunks = make_chunks(args.n)
        vecs, cent = clustered_vectors(args.n, args.centroids, args.sigma, 0)
        sparse = bm25_tf_vectors([c["text"] for c in chunks])
        rng = np.random.default_rng(123)
        qvecs = cent[
            rng.integers(0, args.centroids, args.queries)
        ] + args.sigma * rng.standard_normal((args.queries, DIM)).astype(np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        qtexts = load_queries(args.queries)
        out["prep_s"] = time.perf_counter() - t
        out["base_rss_mb"] = RssSampler.rss_mb()
        log(
            f"prepared {len(chunks)} chunks in {out['prep_s']:.1f}s (rss {out['base_rss_mb']:.0f} MB)"
        )
        variants = args.variant.split(",") if args.engine == "edge" else [args.lance_index]
        for var in variants:
            args.variant = var
            log(f"== {args.engine} {var}")
            r = (run_edge if args.engine == "edge" else run_lance)(
                args, chunks, vecs, sparse, qvecs, qtexts, log
            )
            # 1/5/15-min load average: other processes on the box inflate build times
            r["loadavg_after"] = os.getloadavg()
            out["runs"].append(r)
            log(table([r]))
    if args.checks and args.engine == "edge":
        out["checks"] = run_checks(args, log)
    out["max_rss_mb_process"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    RESULTS.mkdir(parents=True, exist_ok=True)
    dest = Path(args.out) if args.out else RESULTS / f"store_build_{args.engine}.json"
    dest.write_text(json.dumps(out, indent=2, default=str))
    print(table(out["runs"]))
    if "checks" in out:
        print("\n```json\n" + json.dumps(out["checks"], indent=2, default=str) + "\n```")


if __name__ == "__main__":
    main()
