"""Train the answerability model (:mod:`ragstrata.generate.answerability`) on training splits.

Recipe (``python -m ragstrata.training.answerability --out FILE``), all seeded:

1. **Data**, training halves only (SciFact is evaluation-only and never read here):

   * SQuAD-es v1.1 small, ``--split train`` articles
     (:func:`~ragstrata.eval.datasets.article_split`): each question is searched as ``ask``
     searches it; when a gold paragraph is among the hits it is a positive ("answerable"). The
     same question searched with its gold paragraphs' chunks removed from both arms (an
     :class:`ExcludingStore` over the same index: each arm retrieves deeper and drops them, the
     fusion and the language relation run as usual) is a negative ("paragraph absent"), as
     ``ragstrata eval-answers --absent`` builds them on a pruned copy of the index.
   * SQuAD-es v2.0 small, the same article split: its unanswerable questions are negatives.
   * FastAPI parallel docs, ``es-en:train`` and ``en-es:train`` pages: cross-lingual
     positives (the heading's page retrieved) and their absent-page negatives.

   A question whose gold paragraph is not retrieved gives no positive (nothing to answer from).
   An absent-paragraph negative whose hits still hold one of the question's gold answer strings
   (the article repeats the fact in another paragraph: 132 of the 600 SQuAD-es training
   negatives) has a doubtful label; it is kept as a negative, because leaving those rows out
   (``--drop-doubtful``) measured no better (out-of-fold AUC on the SQuAD-es rows 0.8228 kept,
   0.8176 left out; on the rows without them 0.8461 and 0.8414:
   ``bench/answerability_variants.py``).
2. **Fit**: standardized features, L2-regularized logistic regression by Newton's method
   (plain numpy), classes weighted to balance.
3. **Threshold**: 5-fold out-of-fold probabilities on the same training rows (folds by
   question); the threshold is the one of highest refusal recall whose refusal precision on the
   SQuAD-es present/absent rows is at least ``target_precision`` (default 0.83) and that
   refuses at most ``--max-false-refusal`` (default 0.08; 0.10, the most issue 14 allows, was
   measured on held-out questions: 2 more of 150 absent-paragraph questions refused, 5 more of
   300 answerable ones, 2 correct answers lost, so not taken) of their answerable rows; the
   cross-lingual threshold (``cross_threshold``) is the one of highest refusal recall on the rows
   whose question is in another language than its hits (FastAPI) under the same false-refusal
   cap.

Indexes are built beforehand with the default ingest (``ragstrata eval DATASET --index DIR``);
they are only read.

``--scope small`` trains the small-index model instead (indexes under
:data:`~ragstrata.generate.evidence.LEARNED_MIN_CHUNKS` chunks): rows collected on per-article,
4-paragraph and 8-page indexes it builds under ``--work`` (:mod:`ragstrata.training.
small_indexes`), fitted together with the large model's rows (``--large-rows``, the ``--rows``
cache of a large run), ``bm25_per_term`` zeroed in all of them; same threshold rule, on the
SQuAD small and tiny rows.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragstrata.generate.answerability import (
    FEATURES,
    AnswerabilityModel,
    answerability_features,
    sentence_cosines,
)

logger = logging.getLogger(__name__)


class ExcludingStore:
    """A read-only view of a store without some chunks: each search asks ``limit`` plus the
    number of excluded chunks and drops them, so the ranks are those of an index without them
    (BM25 statistics aside)."""

    def __init__(self, store: Any, excluded: frozenset[str]) -> None:
        self.store = store
        self.excluded = excluded

    def dense_search_ids(self, vector: Any, *, limit: int, filters: Any = None) -> Any:
        got = self.store.dense_search_ids(vector, limit=limit + len(self.excluded), filters=filters)
        return [p for p in got if p[0] not in self.excluded][:limit]

    def sparse_search_ids(self, vector: Any, *, limit: int, filters: Any = None) -> Any:
        got = self.store.sparse_search_ids(
            vector, limit=limit + len(self.excluded), filters=filters
        )
        return [p for p in got if p[0] not in self.excluded][:limit]

    def get(self, chunk_ids: Sequence[str]) -> Any:
        return self.store.get(chunk_ids)

    def dense_vectors(self, chunk_ids: Sequence[str]) -> Any:
        return self.store.dense_vectors(chunk_ids)


def search_without_docs(
    store: Any,
    manifest: Any,
    docs: Collection[str],
    embedder: Any,
    analyzer: Any,
    retrieval: Any,
    text: str,
    *,
    top_k: int | None = None,
) -> Any:
    """Hits of ``text`` as an index without the documents ``docs`` would rank them (the
    "paragraph absent" negative): a :class:`~ragstrata.retrieve.hybrid.HybridRetriever` over an
    :class:`ExcludingStore` of their chunks (``manifest.documents[d].chunk_ids``; unknown ids are
    skipped), with ``embedder``, ``analyzer`` and the ``retrieval`` config of the full index.
    Returns the hits, ``top_k`` of them (default: the config's)."""
    from ragstrata.retrieve.hybrid import HybridRetriever

    excluded = frozenset(
        c for d in docs if d in manifest.documents for c in manifest.documents[d].chunk_ids
    )
    view = ExcludingStore(store, excluded)
    part = HybridRetriever(view, embedder, analyzer, retrieval)  # type: ignore[arg-type]
    try:
        return part.search(text, top_k=top_k).hits
    finally:
        part.close()


class _MemoEmbedder:
    """The engine's embedder with the last query's vector and every passage (sentence) vector
    kept (each question is searched twice: present and absent)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self._last: tuple[str, Any] | None = None
        self._passages: dict[str, Any] = {}

    def embed_query(self, text: str) -> Any:
        if self._last is None or self._last[0] != text:
            self._last = (text, self.embedder.embed_query(text))
        return self._last[1]

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """Passage vectors, each sentence embedded once per run (a question's present and
        absent hits share most of theirs)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._passages]
        if todo:
            for t, v in zip(todo, self.embedder.embed_documents(todo), strict=True):
                self._passages[t] = v
        return np.stack([self._passages[t] for t in texts])


@dataclass(frozen=True, slots=True)
class Row:
    """One training example: its source, question id, label (1 answerable) and features;
    ``answer_in_hits``: a gold answer string occurs in one of the hits (known for SQuAD rows
    only: on a "paragraph absent" negative it means the article repeats the fact elsewhere, so
    the label is doubtful and :func:`train` leaves the row out)."""

    source: str
    qid: str
    label: int
    features: tuple[float, ...]
    answer_in_hits: bool = False


Question = tuple[str, str, frozenset[str], tuple[str, ...]]
"""A training question: id, text, gold doc ids (empty: unanswerable) and gold answer strings
(empty when the set has none)."""


def collect(
    index: Path,
    questions: Sequence[Question],
    *,
    source: str,
    absent: bool,
    embedder: Any = None,
) -> list[Row]:
    """Rows for ``questions`` searched on ``index``: a positive when a gold doc is retrieved,
    and with ``absent`` the negative of the same question without its gold docs; unanswerable
    questions give one negative. Each row records whether a gold answer string occurs in its
    hits (:func:`~ragstrata.eval.answer_metrics.contains_answer`, as ``eval-answers`` counts
    ``answer_in_hits``). ``embedder``: the index's embedder, already loaded (``None``: the
    engine loads it)."""
    from ragstrata.config import RagConfig
    from ragstrata.eval.answer_metrics import contains_answer
    from ragstrata.pipeline import Ragstrata
    from ragstrata.retrieve.hybrid import HybridRetriever

    rows: list[Row] = []
    cfg = RagConfig.load(env={}).with_index(index)
    with Ragstrata(cfg, embedder=embedder) as engine:
        manifest = engine.manifest()
        store = engine._read_store()
        memo = _MemoEmbedder(engine.embedder)
        analyzer = engine.analyzer
        full = HybridRetriever(store, memo, analyzer, cfg.retrieval)  # type: ignore[arg-type]
        try:
            for n, (qid, text, gold, answers) in enumerate(questions):

                def in_hits(found: Any, answers: tuple[str, ...] = answers) -> bool:
                    return any(contains_answer(h.chunk.text, answers) for h in found)

                hits = full.search(text).hits
                if not gold:
                    vec = _vec(text, hits, analyzer, memo)
                    rows.append(Row(source, qid, 0, vec, in_hits(hits)))
                    continue
                if any(h.chunk.doc_id in gold for h in hits):
                    vec = _vec(text, hits, analyzer, memo)
                    rows.append(Row(source, qid, 1, vec, in_hits(hits)))
                if absent:
                    neg = search_without_docs(
                        store, manifest, gold, memo, analyzer, cfg.retrieval, text
                    )
                    vec = _vec(text, neg, analyzer, memo)
                    rows.append(Row(source, qid, 0, vec, in_hits(neg)))
                if n % 200 == 0:
                    logger.info("%s: %d/%d questions", source, n, len(questions))
        finally:
            full.close()
    return rows


def _vec(text: str, hits: Any, analyzer: Any, encoder: Any) -> tuple[float, ...]:
    cosines = sentence_cosines(text, hits, encoder)
    return tuple(answerability_features(text, hits, analyzer, cosines=cosines))


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    l2: float = 1.0,
    iterations: int = 50,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Mean, scale, weights and bias of an L2-regularized logistic regression of ``y`` (0/1,
    shape (n,)) on ``x`` (n, d), standardized; ``sample_weight`` (n,) scales each row's loss
    (default 1), and the classes are then reweighted to equal total weight. Newton's method."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    n, d = z.shape
    a = np.hstack([z, np.ones((n, 1))])
    base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    pos_w = max(1e-9, float(base[y == 1].sum()))
    neg_w = max(1e-9, float(base[y == 0].sum()))
    total = pos_w + neg_w
    sw = base * np.where(y == 1, total / (2 * pos_w), total / (2 * neg_w))
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (sw * (p - y)) + reg * w
        hess = (a * (sw * p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def _predict(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, w: np.ndarray, b: float) -> Any:
    return 1.0 / (1.0 + np.exp(-(((x - mean) / scale) @ w + b)))


def choose_threshold(
    p: np.ndarray, y: np.ndarray, *, target_precision: float, max_false_refusal: float = 1.0
) -> float:
    """The threshold (refuse when ``p`` < it) of highest refusal recall whose refusal precision
    (refused unanswerable / refused) is at least ``target_precision`` and that refuses at most
    ``max_false_refusal`` of the answerable rows; the positive class of a refusal is
    ``y == 0``."""
    best = 0.0
    answerable = max(1, int((y == 1).sum()))
    for t in np.unique(p):
        refused = p < t
        if not refused.any():
            continue
        precision = float((y[refused] == 0).mean())
        false_refusal = int((refused & (y == 1)).sum()) / answerable
        if precision >= target_precision and false_refusal <= max_false_refusal:
            best = max(best, float(t))
    return best


def refusal_scores(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float]:
    """Refusal precision, recall, F1 and the share of answerable rows refused."""
    refused = p < threshold
    tp = int((refused & (y == 0)).sum())
    precision = tp / max(1, int(refused.sum()))
    recall = tp / max(1, int((y == 0).sum()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    frr = int((refused & (y == 1)).sum()) / max(1, int((y == 1).sum()))
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "false_refusal": round(frr, 4),
    }


SOURCE_WEIGHTS: dict[str, float] = {
    "squad-es": 1.0,
    "squad-es-v2-unanswerable": 0.25,
    "fastapi-es-en": 0.5,
    "fastapi-en-es": 0.5,
}
"""Loss weight of each source's rows: SQuAD v2 unanswerables were written to look answerable
(retrieval evidence hardly separates them) and heading queries are short, so both count less
than SQuAD's present/absent pairs."""

THRESHOLD_SOURCES = ("squad-es",)
"""Sources whose out-of-fold rows choose the threshold: SQuAD-es present/absent pairs of one
question, as the ``eval-answers --absent`` gate counts them."""


def train(
    rows: Sequence[Row],
    *,
    family: str,
    target_precision: float,
    seed: int,
    max_false_refusal: float = 1.0,
    l2: float = 1.0,
    folds: int = 5,
    source_weights: dict[str, float] | None = None,
    threshold_sources: Sequence[str] = THRESHOLD_SOURCES,
    drop_doubtful: bool = False,
    scope: str = "large",
) -> tuple[AnswerabilityModel, dict[str, Any]]:
    """Fit on every row (weighted by ``source_weights``, default :data:`SOURCE_WEIGHTS`),
    choose the threshold on the out-of-fold probabilities of the ``threshold_sources`` rows;
    also returns the out-of-fold refusal scores per source at that threshold. With
    ``drop_doubtful`` the negatives whose hits still hold a gold answer (``answer_in_hits``:
    the article states the fact in another paragraph too) are left out of the fit and of the
    threshold choice: whether they are answerable is not known."""
    weights_of = SOURCE_WEIGHTS if source_weights is None else source_weights
    doubtful = [r for r in rows if r.label == 0 and r.answer_in_hits]
    if drop_doubtful:
        rows = [r for r in rows if not (r.label == 0 and r.answer_in_hits)]
    x = np.array([r.features for r in rows], dtype=float)
    y = np.array([r.label for r in rows], dtype=float)
    sw = np.array([weights_of.get(r.source, 1.0) for r in rows])
    qids = sorted({(r.source, r.qid) for r in rows})
    rng = random.Random(seed)
    rng.shuffle(qids)
    fold_of = {q: i % folds for i, q in enumerate(qids)}
    fold = np.array([fold_of[(r.source, r.qid)] for r in rows])
    oof = np.zeros(len(rows))
    for k in range(folds):
        m, s, w, b = fit_logistic(x[fold != k], y[fold != k], sample_weight=sw[fold != k], l2=l2)
        oof[fold == k] = _predict(x[fold == k], m, s, w, b)
    chosen = np.array([r.source in threshold_sources for r in rows])
    threshold = choose_threshold(
        oof[chosen],
        y[chosen],
        target_precision=target_precision,
        max_false_refusal=max_false_refusal,
    )
    cross = x[:, FEATURES.index("cross_language")] == 1.0
    cross_threshold = (
        choose_threshold(
            oof[cross], y[cross], target_precision=0.0, max_false_refusal=max_false_refusal
        )
        if cross.any()
        else None
    )
    mean, scale, weights, bias = fit_logistic(x, y, sample_weight=sw, l2=l2)
    sources = sorted({r.source for r in rows})
    report: dict[str, Any] = {
        "threshold_rows": refusal_scores(oof[chosen], y[chosen], threshold),
        "doubtful_negatives": len(doubtful),
        "doubtful_left_out": drop_doubtful,
    }
    if cross_threshold is not None:
        report["cross_rows"] = refusal_scores(oof[cross], y[cross], cross_threshold)
    for src in sources:
        sel = np.array([r.source == src for r in rows])
        decided = np.where(
            cross[sel] & (cross_threshold is not None), cross_threshold or 0.0, threshold
        )
        report[src] = {
            "rows": int(sel.sum()),
            "answerable": int(y[sel].sum()),
            **refusal_scores(oof[sel] - decided, y[sel], 0.0),
        }
    model = AnswerabilityModel(
        family=family,
        features=FEATURES,
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in scale),
        weights=tuple(round(float(v), 6) for v in weights),
        bias=round(bias, 6),
        threshold=round(threshold, 4),
        cross_threshold=None if cross_threshold is None else round(cross_threshold, 4),
        target_precision=target_precision,
        scope=scope,
        trained={
            "seed": seed,
            "l2": l2,
            "max_false_refusal": max_false_refusal,
            "folds": folds,
            "source_weights": dict(weights_of),
            "threshold_sources": list(threshold_sources),
            "doubtful_negatives_left_out": len(doubtful) if drop_doubtful else 0,
            "out_of_fold": report,
        },
    )
    return model, report


def _squad_questions(path: Path, *, unanswerable: bool) -> list[Question]:
    from ragstrata.eval.datasets import load_squad

    data = load_squad(path, split="train")
    if unanswerable:
        return [(q, t, frozenset(), ()) for q, t in sorted(data.unanswerable.items())]
    return [
        (
            q,
            data.queries[q],
            frozenset(d for d, g in data.qrels[q].items() if g > 0),
            data.answers.get(q, ()),
        )
        for q in sorted(data.queries)
    ]


def _parallel_questions(path: Path, direction: str) -> list[Question]:
    from ragstrata.eval.parallel_docs import load_parallel_docs

    data = load_parallel_docs(path, direction=f"{direction}:train")
    return [
        (q, data.queries[q], frozenset(d for d, g in data.qrels[q].items() if g > 0), ())
        for q in sorted(data.queries)
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m ragstrata.training.answerability``: collect, fit, write the JSON and print
    the out-of-fold scores."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data = Path("../shared/data")
    ap.add_argument(
        "--squad", type=Path, default=data / "squad-es-dev-small/dev-v1.1-es_small.json.gz"
    )
    ap.add_argument(
        "--squad-v2", type=Path, default=data / "squad-es-dev-small/dev-v2.0-es_small.json.gz"
    )
    ap.add_argument("--parallel", type=Path, default=data / "fastapi-docs-md")
    ap.add_argument("--squad-index", type=Path)
    ap.add_argument("--squad-v2-index", type=Path)
    ap.add_argument("--es-en-index", type=Path)
    ap.add_argument("--en-es-index", type=Path)
    ap.add_argument(
        "--scope",
        choices=("large", "small"),
        default="large",
        help="large: the model of indexes of LEARNED_MIN_CHUNKS chunks and more (the four "
        "--*-index options); small: the model of smaller ones, from per-article and page-group "
        "indexes built under --work (ragstrata.training.small_indexes)",
    )
    ap.add_argument("--work", type=Path, help="--scope small: folder of the small indexes")
    ap.add_argument(
        "--large-rows",
        type=Path,
        help="--scope small: the large-index rows cache (--rows of a --scope large run), fitted "
        "too, with the corpus-scaled features zeroed",
    )
    ap.add_argument("--family", default="e5")
    ap.add_argument("--target-precision", type=float, default=0.83)
    ap.add_argument(
        "--max-false-refusal",
        type=float,
        default=0.08,
        help="largest share of answerable threshold rows refused (out of fold)",
    )
    ap.add_argument("--max-questions", type=int, default=600, help="per source, seeded sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", type=Path, help="cache of the collected rows (JSON)")
    ap.add_argument(
        "--drop-doubtful",
        action="store_true",
        help="leave out the absent-paragraph negatives whose hits still hold a gold answer",
    )
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    def sample(items: list[Question]) -> list[Any]:
        rng = random.Random(args.seed)
        return sorted(rng.sample(items, min(len(items), args.max_questions)))

    if args.scope == "small":
        _main_small(args)
        return
    if None in (args.squad_index, args.squad_v2_index, args.es_en_index, args.en_es_index):
        ap.error(
            "--scope large needs --squad-index, --squad-v2-index, --es-en-index, --en-es-index"
        )
    if args.rows is not None and args.rows.is_file():
        rows = read_rows(args.rows)
    else:
        rows = collect(
            args.squad_index,
            sample(_squad_questions(args.squad, unanswerable=False)),
            source="squad-es",
            absent=True,
        )
        rows += collect(
            args.squad_v2_index,
            sample(_squad_questions(args.squad_v2, unanswerable=True)),
            source="squad-es-v2-unanswerable",
            absent=False,
        )
        rows += collect(
            args.es_en_index,
            sample(_parallel_questions(args.parallel, "es-en")),
            source="fastapi-es-en",
            absent=True,
        )
        rows += collect(
            args.en_es_index,
            sample(_parallel_questions(args.parallel, "en-es")),
            source="fastapi-en-es",
            absent=True,
        )
        if args.rows is not None:
            write_rows(rows, args.rows)
    model, report = train(
        rows,
        family=args.family,
        target_precision=args.target_precision,
        max_false_refusal=args.max_false_refusal,
        seed=args.seed,
        drop_doubtful=args.drop_doubtful,
    )
    model.trained["data"] = {
        "squad-es": f"{args.squad.name} --split train",
        "squad-es-v2-unanswerable": f"{args.squad_v2.name} --split train",
        "fastapi-es-en": "es-en:train",
        "fastapi-en-es": "en-es:train",
        "max_questions_per_source": args.max_questions,
    }
    _write(model, report, args.out)


def _write(model: AnswerabilityModel, report: dict[str, Any], out: Path) -> None:
    out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    for name, w in sorted(zip(FEATURES, model.weights, strict=True), key=lambda p: -abs(p[1])):
        print(f"{name:22s} {w:+.3f}")
    print(f"threshold {model.threshold} cross {model.cross_threshold}")


def read_rows(path: Path) -> list[Row]:
    """The rows of a ``--rows`` cache (:func:`write_rows`)."""
    return [
        Row(r[0], r[1], r[2], tuple(r[3]), bool(r[4]) if len(r) > 4 else False)
        for r in json.loads(path.read_text())
    ]


def write_rows(rows: Sequence[Row], path: Path) -> None:
    """Write ``rows`` as a ``--rows`` cache: a JSON list of ``[source, qid, label, features,
    answer_in_hits]``."""
    path.write_text(
        json.dumps([[r.source, r.qid, r.label, r.features, r.answer_in_hits] for r in rows])
    )


def _main_small(args: argparse.Namespace) -> None:
    """``--scope small``: rows from small indexes (training halves fit, held-out halves kept in
    the rows cache for ``bench/answerability_small.py``), the small-index model written."""
    from ragstrata.training.small_indexes import (
        SMALL_INDEX_EXCLUDED,
        SMALL_SOURCE_WEIGHTS,
        SMALL_THRESHOLD_SOURCES,
        small_index_rows,
        train_rows,
        zeroed,
    )

    if args.large_rows is None or not args.large_rows.is_file():
        raise SystemExit("--scope small needs --large-rows FILE (a --scope large run's --rows)")

    if args.rows is not None and args.rows.is_file():
        rows = read_rows(args.rows)
    else:
        if args.work is None:
            raise SystemExit("--scope small needs --work DIR (or a filled --rows cache)")
        rows = small_index_rows(args.squad, args.parallel, args.work, seed=args.seed)
        if args.rows is not None:
            write_rows(rows, args.rows)
    model, report = train(
        zeroed(read_rows(args.large_rows)) + train_rows(rows),
        family=args.family,
        target_precision=args.target_precision,
        max_false_refusal=args.max_false_refusal,
        seed=args.seed,
        source_weights={**SOURCE_WEIGHTS, **SMALL_SOURCE_WEIGHTS},
        threshold_sources=SMALL_THRESHOLD_SOURCES,
        scope="small",
    )
    model.trained["data"] = {
        "large-index rows": "the large model's training rows (--split train / :train halves)",
        "squad-es-small": f"{args.squad.name}: one index per --split train article",
        "squad-es-tiny": f"{args.squad.name}: 4-paragraph runs of --split train articles",
        "fastapi-es-en-small": "es-en:train questions, 8-page group indexes",
        "fastapi-en-es-small": "en-es:train questions, 8-page group indexes",
        "features_not_used": list(SMALL_INDEX_EXCLUDED),
    }
    _write(model, report, args.out)


if __name__ == "__main__":
    main()
