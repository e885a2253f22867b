"""Training data for the cross-encoder reranker: groups of one query, one positive and some
hard negatives (step 2 of the recipe in :mod:`ragstrata.training.reranker`).

* SQuAD-es **training articles** (:func:`squad_groups`): the question is the query, the chunk
  of its gold paragraph the positive, retrieved chunks of other paragraphs (same-article
  neighbours among them) the negatives. :func:`squad_dev_split` holds some paragraphs' questions
  out to choose the fusion weight.
* **Pseudo-queries** from Markdown/HTML folders (:func:`chunk_folders`, then
  :func:`heading_groups`): a section heading is the query, that section's first chunk (its
  own heading line removed) the positive, other sections of the same document the negatives.
  From a parallel docs set only its training pages are read (:func:`parallel_training_files`),
  and a language folder of such a set is refused as a plain folder
  (:func:`check_plain_folder`), so the cross-lingual evaluation's held-out pages stay unseen.

SciFact is evaluation-only data (CC BY-NC): no function here reads it.

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
    """One training example: ``passages[0]`` is relevant to ``query``, the rest are not.

    ``source`` names the data (``"squad-es-train"``, ``"headings:<folder>"``);
    ``neighbour_negatives``: how many negatives come from the positive's own SQuAD article
    (0 for heading groups, whose negatives are all from the positive's own page).
    """

    query: str
    passages: tuple[str, ...]
    source: str
    neighbour_negatives: int = 0


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


def squad_dev_split(dataset: EvalDataset, n_dev: int, seed: int) -> tuple[list[str], list[str]]:
    """``(train, dev)`` question ids of a SQuAD ``dataset`` (one gold paragraph a question),
    held out by paragraph: ``n_dev`` gold paragraphs are drawn with ``seed`` (via
    :func:`split_dev` over the sorted paragraph ids) and one question of each, drawn with the
    same seed, is a dev question; no question of a drawn paragraph is in ``train``, so the
    dev paragraphs are never a positive in training. Both lists sorted."""
    by_doc: dict[str, list[str]] = {}
    for qid in sorted(dataset.queries):
        for doc_id in _gold(dataset, qid):
            by_doc.setdefault(doc_id, []).append(qid)
    _, dev_docs = split_dev(list(by_doc), n_dev, seed)
    rng = random.Random(seed)
    dev = sorted(rng.choice(by_doc[d]) for d in dev_docs)
    held = set(dev_docs)
    train = [q for q in sorted(dataset.queries) if not held & set(_gold(dataset, q))]
    return train, dev


def _gold(dataset: EvalDataset, qid: str) -> list[str]:
    return sorted(d for d, g in dataset.qrels[qid].items() if g > 0)


def _article(doc_id: str) -> str:
    """The article of a SQuAD paragraph id ``"{article}-{paragraph}"``
    (:func:`ragstrata.eval.datasets.load_squad`)."""
    return doc_id.rsplit("-", 1)[0]


def squad_groups(
    engine: Ragstrata,
    dataset: EvalDataset,
    qids: Sequence[str],
    *,
    negatives: int,
    rng: random.Random,
    neighbours: int = 1,
    depth: int = 30,
) -> list[TrainGroup]:
    """One group per SQuAD question of ``qids``: the question, the chunk of its gold paragraph,
    ``negatives`` retrieved chunks of other paragraphs.

    ``engine`` holds an index of ``dataset``'s corpus (:func:`ragstrata.eval.runner.
    dataset_documents`, doc id = paragraph id ``"{article}-{paragraph}"``). The positive is the
    gold paragraph's first chunk that holds a gold answer string (``dataset.answers``), else
    its best-retrieved chunk, else its first chunk. Negatives come from the interleaved BM25 and
    dense top ``depth`` (one chunk per paragraph, never the gold one, only paragraphs of the
    articles ``dataset`` has questions on, so a held-out article's paragraphs are never seen):
    up to ``neighbours`` of them are paragraphs of the same article when such were retrieved
    (the hard case: same topic, same names), the others are drawn from the whole pool. A
    question whose pool holds fewer than ``negatives`` paragraphs is skipped.
    """
    documents = engine.manifest().documents
    articles = {_article(d) for q in dataset.qrels for d in _gold(dataset, q)}
    groups: list[TrainGroup] = []
    for qid in qids:
        query = dataset.queries[qid]
        gold = _gold(dataset, qid)
        if len(gold) != 1 or gold[0] not in documents:
            continue
        doc_id = gold[0]
        results = [
            engine.search(query, mode=m, top_k=depth, candidates=depth).hits
            for m in ("bm25", "dense")
        ]
        ranked = _interleave(*results)
        pool: list[Hit] = []
        seen: set[str] = {doc_id}
        for hit in ranked:
            if hit.chunk.doc_id not in seen and _article(hit.chunk.doc_id) in articles:
                seen.add(hit.chunk.doc_id)
                pool.append(hit)
        if len(pool) < negatives:
            continue
        own = engine.chunks(list(documents[doc_id].chunk_ids))
        if not own:
            continue
        positive = _answer_chunk(own, dataset.answers.get(qid, ()), ranked)
        same = [h for h in pool if _article(h.chunk.doc_id) == _article(doc_id)]
        picked = rng.sample(same, min(neighbours, len(same), negatives))
        taken = {h.chunk.chunk_id for h in picked}
        rest = [h for h in pool if h.chunk.chunk_id not in taken]
        picked += rng.sample(rest, negatives - len(picked))
        groups.append(
            TrainGroup(
                query,
                (passage_text(positive), *(passage_text(h.chunk) for h in picked)),
                "squad-es-train",
                sum(1 for h in picked if _article(h.chunk.doc_id) == _article(doc_id)),
            )
        )
    return groups


def _answer_chunk(own: Sequence[Chunk], answers: Sequence[str], ranked: Sequence[Hit]) -> Chunk:
    for chunk in own:
        if any(a and a in chunk.text for a in answers):
            return chunk
    ids = {c.chunk_id for c in own}
    for hit in ranked:
        if hit.chunk.chunk_id in ids:
            return hit.chunk
    return own[0]


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


def parallel_training_pages(path: Path) -> list[str]:
    """The training pages of the parallel docs set at ``path`` (relative paths, sorted).

    A page is a training page when it is in the ``"train"`` half of
    :func:`ragstrata.eval.parallel_docs.page_split` for some direction (``es-en:train``,
    ``en-es:train``...) and in the ``"test"`` half of none: the split is read through
    :func:`~ragstrata.eval.parallel_docs.load_parallel_docs`, exactly as ``ragstrata eval``
    draws it. Pages that give no query in any direction are left out too.

    Raises:
        ConfigError: ``path`` holds fewer than two language folders.
    """
    from ragstrata.errors import ConfigError
    from ragstrata.eval.parallel_docs import language_folders, load_parallel_docs

    languages = language_folders(path)
    if len(languages) < 2:
        raise ConfigError(
            f"{path}: not a parallel docs folder (needs two language folders such as es/ and en/)"
        )
    halves: dict[str, set[str]] = {"train": set(), "test": set()}
    for a in languages:
        for b in languages:
            if a == b:
                continue
            for half, pages in halves.items():
                data = load_parallel_docs(path, direction=f"{a}-{b}:{half}")
                pages.update(d for judged in data.qrels.values() for d in judged)
    return sorted(halves["train"] - halves["test"])


def parallel_training_files(path: Path) -> list[Path]:
    """Every language's file of each :func:`parallel_training_pages` page of ``path``
    (``path/<language>/<page>`` where it exists), in language then page order."""
    from ragstrata.eval.parallel_docs import language_folders

    pages = parallel_training_pages(path)
    return [
        path / language / page
        for language in language_folders(path)
        for page in pages
        if (path / language / page).is_file()
    ]


def check_plain_folder(folder: Path) -> None:
    """Refuse ``folder`` as a plain pseudo-query source when it is a parallel docs set or one
    of its language folders (``fastapi-docs-md`` or ``fastapi-docs-md/es``): all its pages would
    be read, the cross-lingual evaluation's held-out pages among them.

    Raises:
        ConfigError: naming the folder and the option to use instead.
    """
    from ragstrata.errors import ConfigError
    from ragstrata.eval.parallel_docs import language_folders

    folder = Path(folder)
    parent = folder.resolve().parent
    if len(language_folders(folder)) >= 2 or (
        folder.resolve().name in language_folders(parent) and len(language_folders(parent)) >= 2
    ):
        root = folder if len(language_folders(folder)) >= 2 else parent
        raise ConfigError(
            f"{folder}: part of the parallel docs set {root}, whose held-out pages are "
            f"evaluation data; pass --parallel-docs {root} (training pages only) instead of --docs"
        )
