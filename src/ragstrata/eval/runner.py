"""Ablation runner: index an evaluation corpus with the real pipeline, run every retrieval mode
on the same queries, score document rankings with :mod:`ragstrata.eval.metrics`.

Retrieval is over chunks; a document's rank is that of its best chunk (max-passage
aggregation, Dai & Callan 2019). Each retriever contributes ``depth`` candidates so that
recall@100 is measurable; the production default (``retrieval.candidates``) is 50.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ragstrata.eval.datasets import EvalDataset, GoldenQuery
from ragstrata.eval.metrics import evaluate, paired_randomization_test
from ragstrata.types import Block, Document

if TYPE_CHECKING:
    from ragstrata.pipeline import Ragstrata
    from ragstrata.retrieve.hybrid import Mode

DEFAULT_METRICS = (
    "ndcg@10",
    "mrr@10",
    "hit@1",
    "hit@5",
    "precision@5",
    "recall@10",
    "recall@100",
    "map@100",
)
LATENCY_STAGES = ("embed_query", "dense", "bm25", "fusion", "fetch", "rerank", "total")
EVAL_MODES = ("bm25", "dense", "hybrid", "hybrid+rerank")
"""Modes an ablation can run: the three retrieval modes, and hybrid followed by the
cross-encoder (``rerank.candidates`` fused hits reranked, the rest kept in fused order)."""


@dataclass(frozen=True, slots=True)
class ModeResult:
    """Metrics (means), per-query metrics, and per-stage latency percentiles (ms)."""

    mode: str
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    latency_ms: dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class AblationReport:
    """One dataset × several retrieval modes, scored on the same queries."""

    dataset: str
    embedder: str
    n_docs: int
    n_chunks: int
    n_queries: int
    skipped_queries: int
    index_seconds: float
    modes: dict[str, ModeResult] = field(default_factory=dict)

    def to_json(self, *, per_query: bool = True) -> dict[str, Any]:
        """JSON shape: ``{"dataset", ..., "modes": {mode: {"ndcg@10": ..., "latency_ms":
        {stage: {"p50", "p95"}}, "per_query": {...}}}}``."""
        modes: dict[str, Any] = {}
        for name, result in self.modes.items():
            entry: dict[str, Any] = dict(result.metrics)
            entry["latency_ms"] = result.latency_ms
            if per_query:
                entry["per_query"] = result.per_query
            modes[name] = entry
        return {
            "dataset": self.dataset,
            "embedder": self.embedder,
            "n_docs": self.n_docs,
            "n_chunks": self.n_chunks,
            "n_queries": self.n_queries,
            "skipped_queries": self.skipped_queries,
            "index_seconds": round(self.index_seconds, 2),
            "modes": modes,
        }


def dataset_documents(dataset: EvalDataset) -> Iterator[Document]:
    """Evaluation corpus as documents. ``doc_id`` is the dataset's own id, so qrels apply
    directly; ``source`` is ``f"{dataset.corpus_name}/{doc_id}"``.

    * ``format="text"`` documents: a ``# title`` heading (when there is a title) + the text,
      split into paragraphs on blank lines, the language detected as a real ingest does;
      documents without text are left out.
    * ``format="markdown"`` documents: the text parsed by the Markdown parser of a real ingest
      (:func:`ragstrata.ingest.loader.document_from_text`), so the chunker sees the headings,
      code fences, lists and tables a user's ``ragstrata ingest`` would; the fallback title is
      the doc id's file stem.

    Raises:
        EmptyDocumentError: a Markdown document holds no text blocks.
    """
    from ragstrata.ingest.loader import document_from_text
    from ragstrata.ingest.text import split_paragraphs
    from ragstrata.text.language import detect_language

    for doc in dataset.corpus.values():
        source = f"{dataset.corpus_name}/{doc.doc_id}"
        if doc.format == "markdown":
            yield document_from_text(
                doc.text,
                fmt="markdown",
                doc_id=doc.doc_id,
                source=source,
                stem=PurePosixPath(doc.doc_id).stem,
            )
            continue
        title = doc.title.strip()
        head = f"# {title}\n\n" if title else ""
        text = head + doc.text.strip()
        blocks: list[Block] = []
        if title:
            blocks.append(Block("heading", 0, len(head.rstrip()), 1, title))
        blocks.extend(split_paragraphs(text, len(head)))
        if not blocks:
            continue
        yield Document(
            doc_id=doc.doc_id,
            source=source,
            title=title,
            text=text,
            blocks=tuple(blocks),
            content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            format="text",
            language=detect_language(text),
        )


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3)}


def run_ablation(
    engine: Ragstrata,
    dataset: EvalDataset,
    *,
    modes: Sequence[str] = ("bm25", "dense", "hybrid"),
    metrics: Sequence[str] = DEFAULT_METRICS,
    depth: int = 100,
    max_queries: int | None = None,
) -> AblationReport:
    """Index ``dataset`` into ``engine`` (unchanged documents are skipped, so a re-run reuses
    the index) and score each mode. ``max_queries`` keeps the first N query ids (sorted)."""
    started = time.perf_counter()
    report = engine.add_documents(dataset_documents(dataset))
    index_seconds = time.perf_counter() - started
    if report.failures:
        first = report.failures[0]
        raise RuntimeError(
            f"{len(report.failures)} documents failed, e.g. {first.path}: {first.reason}"
        )
    qids = sorted(q for q in dataset.queries if q in dataset.qrels)
    if max_queries is not None:
        qids = qids[:max_queries]
    qrels = {q: dataset.qrels[q] for q in qids}
    return _score(
        engine,
        name=dataset.name,
        queries={q: dataset.queries[q] for q in qids},
        qrels=qrels,
        modes=modes,
        metrics=metrics,
        depth=depth,
        index_seconds=index_seconds,
    )


def golden_qrels(
    engine: Ragstrata, golden: Sequence[GoldenQuery], *, ambiguous: list[str] | None = None
) -> tuple[dict[str, str], dict[str, dict[str, int]], list[str]]:
    """Queries, qrels and unmatched expectations of a golden file against an existing index.

    An expected item matches an indexed document whose doc id equals it, or whose source path
    equals it or ends with ``/`` + it (so ``docs/install.md`` matches ``/repo/docs/install.md``).
    An item that matches several documents by its end (``guide.md`` for ``en/guide.md`` and
    ``es/guide.md``) makes each relevant; ``ambiguous``, when given, receives one line per such
    item naming them (review 47: a parallel corpus's other-language page became relevant
    without a word)."""
    documents = engine.manifest().documents
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    unmatched: list[str] = []
    for item in golden:
        queries[item.query_id] = item.query
        relevant: dict[str, int] = {}
        for expected in item.expected:
            relative = expected.replace("\\", "/")
            while relative.startswith("./"):
                relative = relative[2:]
            suffix = "/" + relative.lstrip("/")
            found = [
                doc_id
                for doc_id, entry in documents.items()
                if doc_id == expected or entry.source == expected or entry.source.endswith(suffix)
            ]
            if not found:
                unmatched.append(f"{item.query_id}: {expected}")
            elif len(found) > 1 and ambiguous is not None:
                names = ", ".join(sorted(documents[d].source for d in found)[:3])
                more = f" and {len(found) - 3} more" if len(found) > 3 else ""
                ambiguous.append(f"{item.query_id}: {expected} matches {names}{more}")
            relevant.update(dict.fromkeys(found, 1))
        qrels[item.query_id] = relevant
    return queries, qrels, unmatched


def run_golden(
    engine: Ragstrata,
    golden: Sequence[GoldenQuery],
    *,
    name: str,
    modes: Sequence[str] = ("bm25", "dense", "hybrid"),
    metrics: Sequence[str] = DEFAULT_METRICS,
    depth: int = 100,
    ambiguous: list[str] | None = None,
) -> tuple[AblationReport, list[str]]:
    """Score a user's golden queries against the index ``engine`` already holds (nothing is
    ingested). Returns the report and the expected items that matched no indexed document
    (``ambiguous``: see :func:`golden_qrels`).

    Raises:
        ConfigError: no expected item of any query matches an indexed document (the message
            names the first five).
    """
    queries, qrels, unmatched = golden_qrels(engine, golden, ambiguous=ambiguous)
    if not any(qrels.values()):
        from ragstrata.errors import ConfigError

        shown = "; ".join(unmatched[:5]) + (
            f"; ... ({len(unmatched)} in all)" if len(unmatched) > 5 else ""
        )
        raise ConfigError(
            f"{name}: no expected source matches a document of the index ({shown}); give each "
            "document's path as ingested, or its end (docs/install.md), or its doc id"
        )
    report = _score(
        engine,
        name=name,
        queries=queries,
        qrels=qrels,
        modes=modes,
        metrics=metrics,
        depth=depth,
        index_seconds=0.0,
    )
    return report, unmatched


def _score(
    engine: Ragstrata,
    *,
    name: str,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    modes: Sequence[str],
    metrics: Sequence[str],
    depth: int,
    index_seconds: float,
) -> AblationReport:
    results: dict[str, ModeResult] = {}
    scored = None
    for mode in modes:
        run: dict[str, list[str]] = {}
        stage_ms: dict[str, list[float]] = {s: [] for s in LATENCY_STAGES}
        for qid, text in queries.items():
            reranked = mode == "hybrid+rerank"
            retrieval: Mode = "hybrid" if reranked else mode  # type: ignore[assignment]
            result = engine.search(
                text, top_k=depth * 2, mode=retrieval, candidates=depth * 2, rerank=reranked
            )
            # a hit stands for its copies too (retrieve.copies): their documents follow its own,
            # where a list with the copies as hits of their own would have had them
            docs = (c.doc_id for h in result.hits for c in (h.chunk, *h.copies))
            run[qid] = list(dict.fromkeys(docs))[:depth]
            for stage in LATENCY_STAGES:
                if stage in result.timings_ms:
                    stage_ms[stage].append(result.timings_ms[stage])
        scored = evaluate(run, qrels, metrics)
        results[mode] = ModeResult(
            mode=mode,
            metrics={k: round(v, 4) for k, v in scored.means.items()},
            per_query=scored.per_query,
            latency_ms={s: _percentiles(v) for s, v in stage_ms.items() if v},
        )
    manifest = engine.manifest()
    return AblationReport(
        dataset=name,
        embedder=manifest.embedder,
        n_docs=len(manifest.documents),
        n_chunks=manifest.n_chunks,
        n_queries=scored.n_queries if scored else 0,
        skipped_queries=len(scored.skipped_queries) if scored else 0,
        index_seconds=index_seconds,
        modes=results,
    )


def markdown_table(report: Mapping[str, Any], metrics: Sequence[str] = DEFAULT_METRICS) -> str:
    """The ablation as one Markdown table (metrics, then p50/p95 of the total latency)."""
    head = ["mode", *metrics, "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode, entry in report["modes"].items():
        total = entry.get("latency_ms", {}).get("total", {})
        cells = [mode, *(f"{entry.get(m, float('nan')):.4f}" for m in metrics)]
        cells += [f"{total.get('p50', 0):.1f}", f"{total.get('p95', 0):.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare(
    new: Mapping[str, Any], old: Mapping[str, Any], metrics: Sequence[str] = DEFAULT_METRICS
) -> str:
    """Markdown table of ``new - old`` per mode and metric with a paired randomization test
    p-value (Smucker, Allan & Carterette 2007) over the queries both runs scored."""
    lines = ["| mode | metric | old | new | delta | p-value |", "|---|---|---|---|---|---|"]
    for mode, entry in new["modes"].items():
        before = old.get("modes", {}).get(mode)
        if before is None:
            continue
        for metric in metrics:
            if metric not in entry or metric not in before:
                continue
            pq_new, pq_old = entry.get("per_query", {}), before.get("per_query", {})
            common = sorted(set(pq_new) & set(pq_old))
            p = (
                paired_randomization_test(
                    [pq_new[q][metric] for q in common], [pq_old[q][metric] for q in common]
                )
                if common
                else float("nan")
            )
            lines.append(
                f"| {mode} | {metric} | {before[metric]:.4f} | {entry[metric]:.4f} | "
                f"{entry[metric] - before[metric]:+.4f} | {p:.4f} |"
            )
    return "\n".join(lines)


def gate(report: Mapping[str, Any], baseline: Mapping[str, Any], *, tolerance: float) -> list[str]:
    """Regressions: every ``mode``/``metric`` of ``baseline['modes']`` whose value in ``report``
    is more than ``tolerance`` (absolute) below the baseline, or missing. Empty list = pass.

    When the baseline has ``"fusion_margin": m``, fusion must also not lose to its arms: the
    report's ``hybrid`` nDCG@10 must be at least ``max(bm25, dense) - m`` (all three modes
    must be in the report). When it has ``"n_queries": n``, the report must have scored
    exactly ``n`` queries: a golden query whose expected documents are not in the index is
    left out of the means, so an index that lost a document passed with fewer questions
    (review 47)."""
    failures: list[str] = fusion_failures(report, baseline.get("fusion_margin"))
    expected_n = baseline.get("n_queries")
    if isinstance(expected_n, int) and report.get("n_queries") != expected_n:
        failures.append(
            f"{report.get('n_queries')} queries scored, the baseline's {expected_n} (queries "
            f"left out: {report.get('skipped_queries', 0)} without a relevant document in the "
            "index; is a document missing, or is this another dataset or split?)"
        )
    for mode, expected in baseline["modes"].items():
        actual = report.get("modes", {}).get(mode, {})
        for metric, value in expected.items():
            if not isinstance(value, int | float):
                continue
            got = actual.get(metric)
            if got is None:
                failures.append(f"{mode} {metric}: missing (baseline {value:.4f})")
            elif got < value - tolerance:
                failures.append(
                    f"{mode} {metric}: {got:.4f} < baseline {value:.4f} - tolerance {tolerance}"
                )
    return failures


def fusion_failures(
    report: Mapping[str, Any], margin: float | None, *, metric: str = "ndcg@10"
) -> list[str]:
    """``[]`` when ``margin`` is ``None`` or hybrid's ``metric`` is at least the best of bm25
    and dense minus ``margin``; else one message naming the three values."""
    if margin is None:
        return []
    modes = report.get("modes", {})
    values = {m: modes.get(m, {}).get(metric) for m in ("bm25", "dense", "hybrid")}
    if any(v is None for v in values.values()):
        missing = ", ".join(m for m, v in values.items() if v is None)
        return [f"fusion check needs bm25, dense and hybrid; missing: {missing}"]
    best = max(values["bm25"], values["dense"])
    if values["hybrid"] < best - margin:
        return [
            f"hybrid {metric} {values['hybrid']:.4f} < best arm {best:.4f} - margin {margin} "
            f"(bm25 {values['bm25']:.4f}, dense {values['dense']:.4f})"
        ]
    return []


def load_dataset(path: Path, *, split: str = "test") -> EvalDataset:
    """Read an evaluation dataset, its format detected from ``path``:

    * a BEIR folder (has ``corpus.jsonl[.gz]``): ``split`` names the qrels file
      (``test``, ``train``, ``dev``...);
    * a SQuAD JSON file, or a folder holding exactly one ``*v1.1*.json[.gz]``: ``split`` is
      ``all``, ``train`` or ``test`` (halves of the articles, see
      :func:`~ragstrata.eval.datasets.article_split`);
    * a folder of parallel Markdown docs (language subfolders such as ``es/`` and ``en/``):
      ``split`` is the direction, ``es-en`` or ``en-es``, optionally with a half of the pages,
      ``es-en:train`` / ``es-en:test`` (see
      :mod:`ragstrata.eval.parallel_docs`).

    Raises:
        ConfigError: no format matches, or ``split`` does not fit the format (the message
            lists the splits that do).
    """
    from ragstrata.errors import ConfigError
    from ragstrata.eval.datasets import load_beir, load_squad
    from ragstrata.eval.parallel_docs import language_folders, load_parallel_docs

    if path.is_dir() and any((path / n).exists() for n in ("corpus.jsonl", "corpus.jsonl.gz")):
        return load_beir(path, split=split)
    if path.is_file() and ".json" in path.name:
        return load_squad(path, split=split)
    if path.is_dir():
        squad = sorted(path.glob("*v1.1*.json*"))
        if len(squad) == 1:
            return load_squad(squad[0], split=split)
        if len(language_folders(path)) >= 2:
            return load_parallel_docs(path, direction=split)
    raise ConfigError(
        f"{path} is neither a BEIR folder (corpus.jsonl, queries.jsonl, qrels/), a SQuAD "
        "JSON file, nor a folder of parallel Markdown docs (es/, en/...)"
    )
