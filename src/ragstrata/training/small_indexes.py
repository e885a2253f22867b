"""Answerability rows from small indexes: the folder of a few files most users start with.

The shipped answerability model (:mod:`ragstrata.generate.answerability`) was trained on
indexes of about 2,000 passages; on an index of a few dozen chunks its BM25 features sit far
outside their training range (the IDF of a small corpus is small), so under
:data:`~ragstrata.generate.evidence.LEARNED_MIN_CHUNKS` chunks the evidence check used the
hand-made rule, which refuses a cross-lingual prose question over a one-page index (cosine
0.80-0.84 under its 0.94 threshold). This module builds the rows of a model for those indexes:

* **SQuAD-es**: one index per article (20-97 paragraphs), its questions searched on it; the
  article split (:func:`~ragstrata.eval.datasets.article_split`) decides which articles give
  training rows and which held-out rows.
* **FastAPI parallel docs**: the pages of the document language shuffled (seeded) into groups
  of :data:`GROUP_PAGES` pages, one index per group (about 100-250 chunks), the questions whose
  gold page is in the group; the page split (``es-en:train`` / ``es-en:test``) decides the half
  of each question, so one group index serves both halves (an index is not a label).

Each question gives, as in :func:`~ragstrata.training.answerability.collect`, a positive when
its gold paragraph is retrieved and the negative of the same question with its gold documents
removed from the search. Indexes are built with the default ingest into ``work`` (reused when a
group's index exists).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragstrata.training.answerability import Question, Row, collect

logger = logging.getLogger(__name__)

GROUP_PAGES = 8
"""FastAPI pages per small index (about 100-250 chunks)."""

TINY_PARAGRAPHS = 4
"""Paragraphs of a SQuAD run index (the one-file folder of :func:`squad_groups`)."""

SMALL_INDEX_EXCLUDED: tuple[str, ...] = ("bm25_per_term",)
"""Features the small-index model does not use (their column is zeroed before the fit, so the
weight is 0): the best BM25 score per question term scales with the corpus's IDF, which on a
small index ranges from a one-file folder's to a few hundred chunks'."""


SMALL_SOURCE_WEIGHTS: dict[str, float] = {
    "squad-es-small": 1.0,
    "squad-es-tiny": 1.0,
    "fastapi-es-en-small": 0.5,
    "fastapi-en-es-small": 0.5,
}
"""Loss weights of the small-index rows, as the large model's (heading queries count half); the
large-index rows fitted beside them keep theirs
(:data:`~ragstrata.training.answerability.SOURCE_WEIGHTS`)."""

SMALL_THRESHOLD_SOURCES = ("squad-es-small", "squad-es-tiny")
"""Rows whose out-of-fold probabilities choose the small-index model's threshold (its cross
threshold comes from the cross-lingual rows, as for the large model)."""


@dataclass(frozen=True, slots=True)
class Group:
    """One small index: ``name`` (its folder under ``work``), the documents to index, and the
    questions searched on it, each with its half (``"train"`` / ``"test"``)."""

    name: str
    documents: tuple[Any, ...]
    questions: tuple[tuple[str, Question], ...]


def squad_groups(
    path: Path, *, per_article: int, seed: int, paragraphs: int | None = None
) -> list[Group]:
    """One :class:`Group` per SQuAD article (v1.1 file), at most ``per_article`` questions
    (seeded sample) each, tagged with the article's half; with ``paragraphs``, one group per run
    of that many consecutive paragraphs of an article instead (a one-file folder: the absent
    negative then searches only the run's other paragraphs)."""
    from ragstrata.eval.datasets import load_squad
    from ragstrata.eval.runner import dataset_documents

    data = load_squad(path, split="all")
    halves = {half: set(load_squad(path, split=half).queries) for half in ("train", "test")}
    by_article: dict[str, list[Any]] = {}
    for doc in dataset_documents(data):
        by_article.setdefault(doc.doc_id.split("-")[0], []).append(doc)
    questions: dict[str, list[tuple[str, Question]]] = {}
    for qid in sorted(data.queries):
        gold = frozenset(d for d, g in data.qrels[qid].items() if g > 0)
        if not gold:
            continue
        half = "train" if qid in halves["train"] else "test"
        q: Question = (qid, data.queries[qid], gold, data.answers.get(qid, ()))
        questions.setdefault(next(iter(gold)).split("-")[0], []).append((half, q))
    groups = []
    for article in sorted(by_article, key=int):
        qs = questions.get(article, [])
        docs = by_article[article]
        size = paragraphs or len(docs)
        for start in range(0, len(docs), size):
            run = docs[start : start + size]
            ids = {d.doc_id for d in run}
            in_run = [p for p in qs if p[1][2] <= ids]
            rng = random.Random(f"{seed}-{article}-{start}")
            picked = sorted(
                rng.sample(in_run, min(per_article, len(in_run))), key=lambda p: p[1][0]
            )
            name = f"squad-{article}" if paragraphs is None else f"squad-{article}-p{start}"
            groups.append(Group(name, tuple(run), tuple(picked)))
    return groups


def parallel_groups(
    path: Path, direction: str, *, groups: int, per_group: int, seed: int
) -> list[Group]:
    """``groups`` small indexes of :data:`GROUP_PAGES` pages of the document language of
    ``direction`` (``"es-en"``: English pages, Spanish headings), pages shuffled with ``seed``;
    each with at most ``per_group`` of its questions per half (seeded)."""
    from ragstrata.eval.parallel_docs import load_parallel_docs
    from ragstrata.eval.runner import dataset_documents

    docs = {d.doc_id: d for d in dataset_documents(load_parallel_docs(path, direction=direction))}
    half_of: dict[str, tuple[str, Question]] = {}
    for half in ("train", "test"):
        data = load_parallel_docs(path, direction=f"{direction}:{half}")
        for qid in sorted(data.queries):
            gold = frozenset(d for d, g in data.qrels[qid].items() if g > 0)
            half_of[qid] = (half, (qid, data.queries[qid], gold, ()))
    pages = sorted(docs)
    random.Random(seed).shuffle(pages)
    out = []
    for n in range(min(groups, len(pages) // GROUP_PAGES)):
        members = set(pages[n * GROUP_PAGES : (n + 1) * GROUP_PAGES])
        picked: list[tuple[str, Question]] = []
        for half in ("train", "test"):
            qs = [p for p in half_of.values() if p[0] == half and p[1][2] <= members]
            rng = random.Random(f"{seed}-{direction}-{n}-{half}")
            picked += sorted(rng.sample(qs, min(per_group, len(qs))), key=lambda p: p[1][0])
        out.append(
            Group(
                f"fastapi-{direction}-{n}",
                tuple(docs[p] for p in sorted(members)),
                tuple(picked),
            )
        )
    return out


def build_index(group: Group, work: Path, embedder: Any = None) -> Path:
    """The index of ``group`` under ``work`` (built with the default ingest unless it exists);
    ``embedder``: the default embedder, already loaded (``None``: loaded here)."""
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata

    index = work / group.name
    if not (index / "done").is_file():
        cfg = RagConfig.load(env={}).with_index(index)
        with Ragstrata(cfg, embedder=embedder) as engine:
            engine.add_documents(group.documents)
        (index / "done").write_text("ok\n")
    return index


def collect_small(groups: Iterable[Group], work: Path, *, source: str, embedder: Any) -> list[Row]:
    """Rows of every group's questions on its own small index; a row's source is
    ``f"{source}/{half}"``. ``embedder`` (the default one, loaded once) serves every group: an
    engine per group loading its own grew this process to 5.8 GB within minutes."""
    rows: list[Row] = []
    for group in groups:
        if not group.questions:
            continue
        index = build_index(group, work, embedder)
        for half in ("train", "test"):
            questions = [q for h, q in group.questions if h == half]
            if questions:
                rows += collect(
                    index, questions, source=f"{source}/{half}", absent=True, embedder=embedder
                )
        logger.info("%s: %d rows so far", group.name, len(rows))
    return rows


def small_index_rows(
    squad: Path,
    parallel: Path,
    work: Path,
    *,
    per_article: int = 25,
    fastapi_groups: int = 10,
    per_group: int = 15,
    per_tiny: int = 3,
    seed: int = 0,
) -> list[Row]:
    """Training (``…/train``) and held-out (``…/test``) rows of the small-index model from
    SQuAD-es per-article indexes, their 4-paragraph runs and FastAPI page groups in both
    directions, all embedded with one loaded default embedder."""
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata

    with Ragstrata(RagConfig.load(env={}).with_index(work / "_embedder")) as loader:
        embedder = loader.embedder
    rows = collect_small(
        squad_groups(squad, per_article=per_article, seed=seed),
        work,
        source="squad-es-small",
        embedder=embedder,
    )
    rows += collect_small(
        squad_groups(squad, per_article=per_tiny, seed=seed, paragraphs=TINY_PARAGRAPHS),
        work,
        source="squad-es-tiny",
        embedder=embedder,
    )
    for direction in ("es-en", "en-es"):
        rows += collect_small(
            parallel_groups(
                parallel, direction, groups=fastapi_groups, per_group=per_group, seed=seed
            ),
            work,
            source=f"fastapi-{direction}-small",
            embedder=embedder,
        )
    return rows


def zeroed(rows: Sequence[Row]) -> list[Row]:
    """``rows`` with the :data:`SMALL_INDEX_EXCLUDED` feature columns set to 0."""
    from ragstrata.generate.answerability import FEATURES

    drop = {FEATURES.index(f) for f in SMALL_INDEX_EXCLUDED}
    return [
        Row(
            r.source,
            r.qid,
            r.label,
            tuple(0.0 if i in drop else v for i, v in enumerate(r.features)),
            r.answer_in_hits,
        )
        for r in rows
    ]


def train_rows(rows: Sequence[Row]) -> list[Row]:
    """The training half of ``rows`` (source ``…/train``, the suffix dropped), :func:`zeroed`."""
    return zeroed(
        [
            Row(r.source.rpartition("/")[0], r.qid, r.label, r.features, r.answer_in_hits)
            for r in rows
            if r.source.endswith("/train")
        ]
    )
