"""Training data for the cross-encoder reranker: groups of one query, one positive and some
hard negatives (step 2 of the recipe in :mod:`ragstrata.training.reranker`).

* SciFact **train** claims (:func:`scifact_groups`): the positive is the best-retrieved chunk
  of each cited abstract; negatives are sampled from the top BM25 and dense hits of our own
  retrievers (interleaved) that belong to no cited abstract. :func:`split_dev` holds some
  claims out to choose the fusion weight.
* **Pseudo-queries** from Markdown/HTML folders (:func:`chunk_folders`, then
  :func:`heading_groups`): a section heading is the query, that section's first chunk (its
  own heading line removed) the positive, other sections of the same document the negatives.

Pure data work over an engine's search and chunker: no torch here.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragstrata.rerank.base import passage_text
from ragstrata.types import Chunk, Hit

if TYPE_CHECKING:
    from ragstrata.eval.datasets import EvalDataset
    from ragstrata.pipeline import Ragstrata

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TrainGroup:
    """One training example: ``passages[0]`` is relevant to ``query``, the rest are not."""

    query: str
    passages: tuple[str, ...]
    source: str


def split_dev(qids: Sequence[str], n_dev: int, seed: int) -> tuple[list[str], list[str]]:
    """``(train, dev)`` query ids: ``n_dev`` ids drawn with ``seed``; both sorted."""
    ordered = sorted(qids)
    dev = set(random.Random(seed).sample(ordered, min(n_dev, len(ordered))))
    return [q for q in ordered if q not in dev], sorted(dev)


def _interleave(*rankings: Sequence[Hit]) -> list[Hit]:
    out: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank].chunk.chunk_id not in seen:
                seen.add(ranking[rank].chunk.chunk_id)
                out.append(ranking[rank])
    return out


def scifact_groups(
    engine: Ragstrata,
    dataset: EvalDataset,
    qids: Sequence[str],
    *,
    negatives: int,
    rng: random.Random,
    depth: int = 20,
) -> list[TrainGroup]:
    """One group per (claim, cited abstract) of ``qids``.

    ``engine`` holds an index of the SciFact corpus. The positive is the best-ranked chunk of
    the cited abstract among the hybrid, BM25 and dense top ``depth`` (its first chunk when
    none retrieved it); negatives are drawn from the interleaved BM25/dense top ``depth``
    chunks of abstracts the claim does not cite (one chunk per abstract).
    """
    groups: list[TrainGroup] = []
    for qid in qids:
        query = dataset.queries[qid]
        relevant = {d for d, g in dataset.qrels[qid].items() if g > 0}
        results = {
            m: engine.search(query, mode=m, top_k=depth, candidates=depth).hits
            for m in ("hybrid", "bm25", "dense")
        }
        pool: list[Hit] = []
        docs_seen: set[str] = set()
        for hit in _interleave(results["bm25"], results["dense"]):
            if hit.chunk.doc_id not in relevant and hit.chunk.doc_id not in docs_seen:
                docs_seen.add(hit.chunk.doc_id)
                pool.append(hit)
        if len(pool) < negatives:
            continue
        for doc_id in sorted(relevant):
            positive = _best_chunk(engine, doc_id, _interleave(*results.values()))
            if positive is None:
                continue
            negs = rng.sample(pool, negatives)
            groups.append(
                TrainGroup(
                    query,
                    (passage_text(positive), *(passage_text(h.chunk) for h in negs)),
                    "scifact-train",
                )
            )
    return groups


def _best_chunk(engine: Ragstrata, doc_id: str, hits: Sequence[Hit]) -> Chunk | None:
    for hit in hits:
        if hit.chunk.doc_id == doc_id:
            return hit.chunk
    entry = engine.manifest().documents.get(doc_id)
    if entry is None or not entry.chunk_ids:
        return None
    found = engine.chunks([entry.chunk_ids[0]])
    return found[0] if found else None


_ANCHOR = re.compile(r"\{/\*.*?\*/\}")
_NUMBERING = re.compile(r"^((?i:cap[ií]tulo)\s+)?(\d+(\.\d+)*\.?|[A-Z](\.\d+)*\.)\s+")
_GENERIC = re.compile(
    r"^(recap|next steps|próximos pasos|resumen|summary|introducción|introduction|"
    r"ejemplo|example|ejemplos|examples|notas?|notes?|requisitos|parámetros|parameters|"
    r"returns|devuelve|uso|usage|reference|referencia|challenges?|desafíos?|"
    r"solución|solution|paso \d+.*|step \d+.*|.{0,3})$",
    re.IGNORECASE,
)


def _without_own_heading(chunk: Chunk) -> str:
    """The chunk as :func:`passage_text` renders it, minus its own (last) heading: the parent
    headings on the first line, the heading line itself dropped from the text."""
    text = chunk.rendered.lstrip()
    first, _, rest = text.partition("\n")
    if first.lstrip().startswith("#"):
        text = rest.lstrip("\n")
    parents = " > ".join(chunk.section_path[:-1])
    return f"{parents}\n{text}" if parents else text


def heading_groups(
    chunks_by_doc: Mapping[str, Sequence[Chunk]],
    *,
    negatives: int,
    rng: random.Random,
    limit: int,
) -> list[TrainGroup]:
    """Pseudo-query groups: heading → the first chunk of its section.

    A section qualifies when its heading has 2–16 words, is not generic ("Recap", "Ejemplo",
    ...) and is unique in the whole collection (a repeated heading has no single answer), its
    text is at least 30 words, and its document has ``negatives`` other such sections (the
    negatives). At most ``limit`` groups are kept (a seeded sample).
    """
    firsts: dict[str, list[Chunk]] = {}
    counts: dict[str, int] = {}
    for doc_id, chunks in chunks_by_doc.items():
        seen: set[str] = set()
        for chunk in chunks:
            if not chunk.section_path or chunk.parent_id in seen:
                continue
            seen.add(chunk.parent_id)
            firsts.setdefault(doc_id, []).append(chunk)
            key = _heading_query(chunk).lower()
            counts[key] = counts.get(key, 0) + 1
    groups: list[TrainGroup] = []
    for doc_id in sorted(firsts):
        sections = firsts[doc_id]
        for chunk in sections:
            query = _heading_query(chunk)
            words = query.split()
            body = _without_own_heading(chunk)
            if (
                not 2 <= len(words) <= 16
                or _GENERIC.match(query)
                or counts[query.lower()] > 1
                or len(body.split()) < 30
            ):
                continue
            others = [c for c in sections if c.parent_id != chunk.parent_id]
            if len(others) < negatives:
                continue
            negs = rng.sample(others, negatives)
            groups.append(
                TrainGroup(
                    query,
                    (body, *(_without_own_heading(c) for c in negs)),
                    f"headings:{chunk.source.split('/')[-1]}",
                )
            )
    if len(groups) > limit:
        groups = rng.sample(groups, limit)
    return groups


def _heading_query(chunk: Chunk) -> str:
    title = _ANCHOR.sub("", chunk.section_path[-1])
    title = re.sub(r"[`*_#]", "", title)
    title = _NUMBERING.sub("", title.strip())
    return " ".join(title.split())


def chunk_folders(engine: Ragstrata, paths: Iterable[Path]) -> dict[str, list[Chunk]]:
    """Chunks of every supported file under ``paths`` (doc id → chunks), chunked exactly as
    ingest would; unreadable files are skipped."""
    from ragstrata.errors import IngestError
    from ragstrata.ingest.loader import discover, load_document

    files, _ = discover(list(paths))
    out: dict[str, list[Chunk]] = {}
    for path in files:
        try:
            document = load_document(path)
            out[document.doc_id] = engine.chunker.chunk(document)
        except IngestError as exc:
            logger.info("skipped %s: %s", path, exc)
    return out
