"""The refusal check on each side of its switch at ``LEARNED_MIN_CHUNKS`` chunks.

``ask`` refuses on an index under :data:`~ragstrata.generate.evidence.LEARNED_MIN_CHUNKS`
(500) chunks with the small-index answerability model at its thresholds, and on a larger one
with the large-index model blended with the reader (``llm.reader``, on by default) at the blend's
threshold. A new user who added 8 chunks to the demo's 495 saw 7 of 24 answers flip. This bench
asks which of the two decisions is right more often at a given index size, so that the switch
sits where they cross:

* indexes: the FastAPI pages of one language (``../shared/data/fastapi-docs-md``), shuffled
  (seeded) and cut into groups of at least ``--sizes`` chunks each (pages of very different
  lengths: a group's own size is recorded and the tables bucket rows by it);
* questions: the written questions of ``eval/questions/fastapi-written-{train,test}.<q>-<d>
  .jsonl`` (all four directions: ES->EN, EN->EN, EN->ES, ES->ES) whose gold page is in the
  group; each gives an answerable row when its page is retrieved, and the row of the same
  question with its page removed from the search (the "paragraph absent" negative of
  ``ragstrata eval-answers``);
* per row, both decisions as :mod:`ragstrata.generate.evidence` takes them (the strong-evidence
  guard included) on the same hits and features: the small-index model at its threshold (its
  cross threshold for a cross-lingual question), and the large-index model blended with the
  reader's best logit over the first hits at the blend's threshold; and the large model alone.

    PYTHONPATH=src python bench/refusal_index_size.py --work DIR [--sizes 150,550]

Prints one table row per (index size band, split, direction, decision) and writes
bench/results/refusal_index_size.json, and its rows to ``refusal_index_size.rows.json.gz``
beside it (``--rows FILE`` re-scores them without searching).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

PARALLEL = Path("../shared/data/fastapi-docs-md")
QUESTIONS = Path("eval/questions")
DIRECTIONS = ("es-en", "en-en", "en-es", "es-es")
BUCKETS = ((0, 250), (250, 500), (500, 1000), (1000, 10**9))
"""Index sizes (chunks, lower bound included) the tables report apart."""


def questions(split: str, direction: str) -> list[tuple[str, str, frozenset[str]]]:
    """(id, text, gold doc ids) of the written questions of ``split`` in ``direction``; the gold
    ids are relative to the language folder, as the parallel-docs corpus names its pages."""
    out = []
    path = QUESTIONS / f"fastapi-written-{split}.{direction}.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        gold = frozenset(e.split("/", 1)[1] for e in q["expected"])
        out.append((f"{q['id']}:{direction}", q["query"], gold))
    return out


def groups(language: str, target: int, seed: int, count: Any) -> list[list[Any]]:
    """The pages of ``language`` shuffled with ``seed`` and cut, in that order, into groups of
    at least ``target`` chunks each (``count(page)``: the page's chunks under the default
    chunker); the last, short group is dropped."""
    from ragstrata.eval.parallel_docs import load_parallel_docs
    from ragstrata.eval.runner import dataset_documents

    other = "es" if language == "en" else "en"
    docs = sorted(
        dataset_documents(load_parallel_docs(PARALLEL, direction=f"{other}-{language}")),
        key=lambda d: d.doc_id,
    )
    random.Random(f"{seed}-{language}").shuffle(docs)
    out: list[list[Any]] = [[]]
    size = 0
    for doc in docs:
        out[-1].append(doc)
        size += count(doc)
        if size >= target:
            out.append([])
            size = 0
    return out[:-1]


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ragstrata.config import RagConfig
    from ragstrata.generate.answerability import (
        READER_HITS,
        answerability_features,
        answerability_model,
        reader_blend,
        sentence_cosines,
    )
    from ragstrata.generate.evidence import STRONG_EVIDENCE, hand_score
    from ragstrata.generate.reader import packaged_reader
    from ragstrata.pipeline import Ragstrata
    from ragstrata.training.answerability import search_without_docs

    small, large, blend = (
        answerability_model("e5", "small"),
        answerability_model("e5", "large"),
        reader_blend("e5"),
    )
    reader = packaged_reader(0)
    cross_i = small.features.index("cross_language")
    cover_i = small.features.index("coverage_best")
    asked = {(split, d): questions(split, d) for split in ("train", "test") for d in DIRECTIONS}
    with Ragstrata(RagConfig.load(env={}).with_index(args.work / "_embedder")) as loader:
        embedder, chunker = loader.embedder, loader.chunker
    rows: list[dict[str, Any]] = []
    started = time.time()
    for target in args.sizes:
        for language in ("en", "es"):
            cut = groups(language, target, args.seed, lambda d: len(chunker.chunk(d)))
            for n, members in enumerate(cut):
                if n >= args.max_groups:
                    break
                ids = {d.doc_id for d in members}
                index = args.work / f"{language}-{target}-{args.seed}-{n}"
                cfg = RagConfig.load(env={}).with_index(index)
                with Ragstrata(cfg, embedder=embedder) as engine:
                    if not (index / "done").is_file():
                        engine.add_documents(members)
                        (index / "done").write_text("ok\n")
                    engine.search("x")
                    store, manifest = engine._read_store(), engine.manifest()
                    n_chunks = sum(len(e.chunk_ids) for e in manifest.documents.values())
                    for (split, direction), qs in asked.items():
                        if not direction.endswith(language):
                            continue
                        for qid, text, gold in qs:
                            if not gold <= ids:
                                continue
                            found = engine.search(text).hits
                            retrieved = any(h.chunk.doc_id in gold for h in found)
                            cases = [(found, 1)] if retrieved else []
                            absent = search_without_docs(
                                store,
                                manifest,
                                gold,
                                engine.read_embedder,
                                engine.analyzer,
                                engine.config.retrieval,
                                text,
                            )
                            cases.append((absent, 0))
                            for hits, label in cases:
                                cos = sentence_cosines(text, hits, engine.read_embedder)
                                f = answerability_features(text, hits, engine.analyzer, cosines=cos)
                                passages = [h.chunk.rendered for h in hits[:READER_HITS]]
                                logit = (
                                    float(reader.score(text, passages).max()) if passages else -1e9
                                )
                                p_large = large.probability(f)
                                rows.append(
                                    {
                                        "size": target,
                                        "chunks": n_chunks,
                                        "group": index.name,
                                        "split": split,
                                        "direction": direction,
                                        "id": qid,
                                        "label": label,
                                        "cross": f[cross_i] == 1.0,
                                        "strong": bool(hits)
                                        and hand_score(f[0], f[cover_i]) >= STRONG_EVIDENCE,
                                        "p_small": small.probability(f),
                                        "p_large": p_large,
                                        "reader": logit,
                                        "blend": blend.probability(logit, p_large)
                                        if passages
                                        else 0.0,
                                    }
                                )
                print(
                    f"{index.name}: {n_chunks} chunks, {len(rows)} rows, "
                    f"{time.time() - started:.0f} s",
                    flush=True,
                )
    return rows


def judge(refused: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Refusal recall and F1 on the absent rows (label 0), as ``ragstrata eval-answers`` counts
    them (:func:`~ragstrata.eval.answers.refusal_scores`), the answerable share refused, and the
    right decisions."""
    from ragstrata.eval.answers import refusal_scores

    absent, present = refused[y == 0], refused[y == 1]
    scores = refusal_scores(present.tolist(), absent.tolist())
    return {
        "absent_refused": scores["refusal_recall"],
        "answerable_refused": round(float(present.mean()) if len(present) else 0.0, 4),
        "refusal_f1": scores["refusal_f1"],
        "right": int((refused == (y == 0)).sum()),
    }


def decisions(part: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Refused or not per row, for each decision ``ask`` could take on these rows."""
    from ragstrata.generate.answerability import answerability_model, reader_blend

    small, large, blend = (
        answerability_model("e5", "small"),
        answerability_model("e5", "large"),
        reader_blend("e5"),
    )
    strong = np.array([r["strong"] for r in part])

    def own(model: Any, key: str) -> np.ndarray:
        t = [model.cross_threshold if r["cross"] else model.threshold for r in part]
        return (np.array([r[key] for r in part]) < np.array(t)) & ~strong

    return {
        "small model (under 500 chunks)": own(small, "p_small"),
        "large model + reader (500 and more)": (
            np.array([r["blend"] for r in part]) < blend.threshold
        )
        & ~strong,
        "large model alone": own(large, "p_large"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path(".refusal-size"))
    ap.add_argument("--rows", type=Path, default=None, help="re-score the rows of a run")
    ap.add_argument("--sizes", default="150,550", help="target chunks per index, comma-separated")
    ap.add_argument("--max-groups", type=int, default=100, help="indexes per language and size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("bench/results/refusal_index_size.json"))
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.rows is not None:
        with (
            gzip.open(args.rows, "rt", encoding="utf-8")
            if args.rows.suffix == ".gz"
            else (args.rows.open(encoding="utf-8")) as f
        ):
            rows = json.load(f)["rows"]
    else:
        rows = collect(args)
    report: dict[str, Any] = {}
    print(
        "| index chunks (mean) | split | direction | rows (answerable) | decision | absent refused "
        "| answerable refused | refusal F1 | right |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for size in BUCKETS:
        low, high = size
        for split in ("train", "test"):
            for direction in (*DIRECTIONS, "all"):
                part = [
                    r
                    for r in rows
                    if low <= r["chunks"] < high
                    and r["split"] == split
                    and direction in ("all", r["direction"])
                ]
                if not part:
                    continue
                y = np.array([r["label"] for r in part])
                mean_chunks = round(float(np.mean([r["chunks"] for r in part])))
                for name, refused in decisions(part).items():
                    res = {"rows": len(y), "answerable": int(y.sum()), "chunks": mean_chunks}
                    res |= judge(refused, y)
                    report.setdefault(f"{low}-{high}/{split}/{direction}", {})[name] = res
                    print(
                        f"| {low}-{high} ({mean_chunks}) | {split} | {direction} | {len(y)} "
                        f"({int(y.sum())}) | {name} | {res['absent_refused']} | "
                        f"{res['answerable_refused']} | {res['refusal_f1']} | {res['right']} |"
                    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": report}, indent=1) + "\n", encoding="utf-8")
    with gzip.open(args.out.with_suffix(".rows.json.gz"), "wt", encoding="utf-8") as f:
        json.dump({"rows": rows}, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
