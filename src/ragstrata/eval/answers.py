"""Answer-level evaluation: ask every question through :meth:`Ragstrata.ask` (whatever answerer
the configuration selects: the extractive default, or an LLM) and score the answers.

Per answerable question (its gold paragraph indexed):

* ``answered``: not a refusal;
* ``contains_gold``: the answer text, citation markers removed, contains a gold answer
  (:func:`~ragstrata.eval.answer_metrics.contains_answer`); ``f1``: the best SQuAD token F1
  (:func:`~ragstrata.eval.answer_metrics.max_token_f1`);
* ``cites_gold``: one of the answer's citations is a gold document (its ``doc_id``);
* ``unverified_citations``: citations the project's checker
  (:class:`~ragstrata.generate.citations.CitationChecker`) does not back. An answerer that
  checked its own citations (the LLM path: ``support`` is set) is taken at its word; for the
  others (the extractive answerer, whose citations carry no check) every (claim, cited chunk)
  pair of the answer is checked here with the same rule as
  :func:`~ragstrata.generate.citations.ground`: a citation is unverified when a claim citing it
  is not supported by the cited chunk's text. A claim is the text before a marker, back to the
  previous marker (:func:`marker_claims`): an extractive quote ending in ``:`` is not merged
  with the next quote, as a sentence splitter would merge it, and the block it announces
  (shown verbatim after its marker) is not part of the next claim;
* ``latency_ms``: wall-clock time of ``ask``; ``words``: the answer's length in words;
* ``answer_in_hits``: a gold answer occurs in one of the retrieved passages (``Answer.hits``).

Means are over the answered questions (``contains_gold``, ``f1``, ``cites_gold``,
``answer_words``) or over all of them (``answered``, ``contains_gold_all``); the unverified share
is over all citations.

"Paragraph absent" negatives (the "the documents do not say" case): a seeded random subset of
the questions is drawn (:func:`absent_subset`), the gold documents of every drawn question are
removed from a copy of the index (:func:`absent_index`: the index directory is copied, so no
paragraph is embedded twice, then the removed documents are pruned, BM25 statistics
included), and the drawn questions are asked there. A refusal is the right outcome. Refusal
precision, recall and F1 take those questions as positives and the *same* questions asked on
the full index as negatives (one case of each kind per question, as ``eval-refusal --negatives
absent`` counts them), and the false-refusal rate is the share of all answerable questions
refused on the full index.

Removing the gold paragraph does not always remove the answer: SQuAD articles repeat their facts
(how often, per run: ``n_absent`` against ``strict_n_absent``), and an answerer that answers from
another paragraph that says it is right, yet counted as a missed refusal. The ``strict_``
refusal scores therefore count only the absent questions whose retrieved passages contain no
gold answer (``answer_in_hits`` false on the pruned index), with the same questions on the full
index as negatives.

The refusal scores are those of one threshold. How well the evidence check *separates* the
absent questions from the answerable ones, whatever the threshold, comes with them
(:func:`evidence_curve`, over each question's ``evidence_margin``: the evidence score minus the
threshold it was compared with): ``evidence_auc``, the absent questions refused at a cap on the
answerable ones refused (``evidence_recall_at_frr_0.05``/``0.10``/``0.15``) and the answerable
share refused to refuse 85 % of the absent ones (``evidence_frr_at_recall_0.85``). These
describe the curve of this run's questions, thresholds read off the same questions: a
measure of separability to set beside the targets, not a tuned operating point. A refusal the
evidence check did not make (an LLM declining, the citation checker) is not on this curve.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import re
import shutil
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragstrata.errors import ConfigError
from ragstrata.eval.answer_metrics import contains_answer, max_token_f1
from ragstrata.eval.datasets import EvalDataset, GoldenQuery

if TYPE_CHECKING:
    from ragstrata.config import RagConfig
    from ragstrata.generate.citations import CitationChecker
    from ragstrata.pipeline import Ragstrata
    from ragstrata.types import Answer, Document

logger = logging.getLogger(__name__)

__all__ = [
    "GATED_METRICS",
    "LOWER_IS_BETTER",
    "AbsentScope",
    "AnswerCase",
    "AnswerOutcome",
    "AnswerReport",
    "absent_index",
    "absent_subset",
    "answer_markdown",
    "cases_from_dataset",
    "cases_from_golden",
    "evidence_curve",
    "gate",
    "marker_claims",
    "refusal_scores",
    "run_answer_eval",
    "score_answer",
    "summarize",
    "unverified_citations",
]

GATED_METRICS = (
    "answered",
    "contains_gold",
    "contains_gold_all",
    "f1",
    "cites_gold",
    "unverified_citations",
    "unverified_claims",
    "refusal_precision",
    "refusal_recall",
    "refusal_f1",
    "false_refusal_rate",
    "evidence_auc",
)
"""Metrics a baseline may hold (latency and length are reported, never gated;
``evidence_auc`` gates the evidence check's separability whatever its threshold)."""

LOWER_IS_BETTER = frozenset({"unverified_citations", "unverified_claims", "false_refusal_rate"})
"""Gated metrics where a rise, not a drop, is the regression."""

ProgressFn = Callable[[str, int, int], None]

AbsentScope = Literal["drawn", "question"]
"""What a "paragraph absent" question is asked without. ``"drawn"``: a pruned copy of the index
without the gold documents of every drawn question at once (they are really gone, BM25
statistics included); when the questions cluster in a few articles (SQuAD's first questions
come from 5 articles) this removes much of each article, the neighbouring paragraphs that make
an absent question hard among them. ``"question"``: the full index, each question searched
among every document but its own gold ones (a ``doc_id`` filter: the paragraph still counts
in BM25's document frequencies), so only its own paragraph is missing: the realistic case, and
the default since 2026-12-03 (on the 300 first SQuAD-es test questions the pruned copy lost 91
paragraphs of their 5 articles, and refusal recall read 0.63 where the realistic case gives
0.44, docs/evaluation.md)."""


@dataclass(frozen=True, slots=True)
class AnswerCase:
    """One question with its gold answer strings and gold documents (doc ids)."""

    qid: str
    question: str
    answers: tuple[str, ...]
    gold_docs: frozenset[str]


@dataclass(frozen=True, slots=True)
class AnswerOutcome:
    """How one answer scored. ``contains``/``f1``/``cites_gold`` are ``False``/``0.0`` for a
    refusal; ``refused_by`` is the answer's :data:`~ragstrata.types.RefusalReason`;
    ``question`` and ``text`` as asked and answered; ``raw_answer``: what an LLM wrote before
    its citations were checked (``None`` without an LLM call), kept so that a refusal by the
    checker can be told from one by the model, and a changed checker re-run on the same
    generations."""

    qid: str
    refused: bool
    refused_by: str | None
    contains: bool
    f1: float
    cites_gold: bool
    citations: int
    unverified: int
    words: int
    latency_ms: float
    question: str = ""
    text: str = ""
    raw_answer: str | None = None
    answer_in_hits: bool = False
    evidence_margin: float | None = None
    claims: int = 0
    unverified_claims: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "qid": self.qid,
            "refused": self.refused,
            "refused_by": self.refused_by,
            "contains": self.contains,
            "f1": round(self.f1, 4),
            "cites_gold": self.cites_gold,
            "citations": self.citations,
            "unverified": self.unverified,
            "claims": self.claims,
            "unverified_claims": self.unverified_claims,
            "words": self.words,
            "latency_ms": round(self.latency_ms, 1),
            "question": self.question,
            "text": self.text,
            "raw_answer": self.raw_answer,
            "answer_in_hits": self.answer_in_hits,
            "evidence_margin": (
                None if self.evidence_margin is None else round(self.evidence_margin, 4)
            ),
        }


# --------------------------------------------------------------------------- cases


def cases_from_dataset(dataset: EvalDataset, *, max_queries: int | None = None) -> list[AnswerCase]:
    """The dataset's questions that have gold answers, sorted by id (the order and the
    ``max_queries`` cut of :func:`~ragstrata.eval.runner.run_ablation`, so ``eval`` and
    ``eval-answers`` with the same ``--max-queries`` score the same questions when every
    question has an answer, as in SQuAD v1.1)."""
    qids = sorted(q for q in dataset.queries if q in dataset.qrels and dataset.answers.get(q))
    if max_queries is not None:
        qids = qids[:max_queries]
    return [
        AnswerCase(
            qid,
            dataset.queries[qid],
            dataset.answers[qid],
            frozenset(d for d, grade in dataset.qrels[qid].items() if grade > 0),
        )
        for qid in qids
    ]


def cases_from_golden(
    golden: Sequence[GoldenQuery], qrels: Mapping[str, Mapping[str, int]]
) -> list[AnswerCase]:
    """Golden entries that give ``answers``, their gold documents from ``qrels`` (the doc ids
    their ``expected`` items matched, see :func:`~ragstrata.eval.runner.golden_qrels`); file
    order."""
    return [
        AnswerCase(g.query_id, g.query, g.answers, frozenset(qrels.get(g.query_id, {})))
        for g in golden
        if g.answers
    ]


def absent_subset(cases: Sequence[AnswerCase], *, fraction: float, seed: int) -> list[AnswerCase]:
    """``round(fraction × len(cases))`` cases drawn without replacement by
    ``random.Random(seed)``, in their original order; only cases with gold documents are
    drawn. Raises ValueError when ``fraction`` is outside [0, 1]."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"absent fraction {fraction} is outside [0, 1]")
    pool = [c for c in cases if c.gold_docs]
    k = min(len(pool), round(fraction * len(cases)))
    drawn = {c.qid for c in random.Random(seed).sample(pool, k)}
    return [c for c in pool if c.qid in drawn]


# --------------------------------------------------------------------------- scoring


_BLOCK_START = re.compile(r"```|~~~|- |\d{1,3}[.)] |…$")
"""How a block shown after a quote's marker starts: a code fence, a bullet, a numbered item,
or it is the elision line between two numbered quotes that do not follow each other."""


def marker_claims(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """``(claim, labels)`` pairs of an answer: each claim is the text between the previous
    citation marker (or the start) and the next one, stripped; markers that follow each other
    (``[1][2]``) all go to the claim before them. Text after the last marker cites nothing and
    is left out. ``marker_claims("A. [1] B: [2][3]") == [("A.", (1,)), ("B:", (2, 3))]``.
    A code block or list shown after a marker (an extractive quote's announced block, on lines
    of its own, then a blank line) is no claim: it is the verbatim block of the quote before
    that marker, not part of the next claim."""
    from ragstrata.generate.citations import MARKER, marker_labels

    out: list[tuple[str, tuple[int, ...]]] = []
    start = 0
    for m in MARKER.finditer(text):
        claim = text[start : m.start()].strip()
        block, blank, rest = claim.rpartition("\n\n")
        if blank and out and _BLOCK_START.match(block.lstrip()):
            claim = rest.strip()
        labels = tuple(marker_labels(m.group()))
        if claim:
            out.append((claim, labels))
        elif out:
            out[-1] = (out[-1][0], tuple(dict.fromkeys(out[-1][1] + labels)))
        start = m.end()
    return out


def unverified_citations(
    answer: Answer,
    checker: CitationChecker,
    chunk_texts: Callable[[Sequence[str]], Mapping[str, str]],
) -> int:
    """How many of ``answer``'s citations the checker does not back (see the module
    docstring). ``chunk_texts(chunk_ids)`` maps each cited chunk id to its text."""
    citations = answer.citations
    if not citations:
        return 0
    if all(c.support is not None for c in citations):
        return sum(not c.verified for c in citations)
    by_label = {c.label: c for c in citations}
    pairs = [
        (claim, lab)
        for claim, labels in marker_claims(answer.text)
        for lab in labels
        if lab in by_label
    ]
    if not pairs:
        return 0
    texts = chunk_texts(list(dict.fromkeys(by_label[lab].chunk_id for _, lab in pairs)))
    supports = checker.features(
        [claim for claim, _ in pairs],
        [texts.get(by_label[lab].chunk_id, by_label[lab].quote) for _, lab in pairs],
        headings=[" > ".join(by_label[lab].heading_path) for _, lab in pairs],
    )
    failed = {lab for (_, lab), s in zip(pairs, supports, strict=True) if not s.verified}
    return len(failed)


def _plain_text(answer: Answer) -> str:
    """The answer without its citation markers (``[1]``, ``[Source 2]``)."""
    from ragstrata.generate.citations import MARKER

    return MARKER.sub(" ", answer.text)


def score_answer(
    answer: Answer, case: AnswerCase, *, unverified: int, latency_ms: float
) -> AnswerOutcome:
    """Score one answer against its case (pure; ``unverified`` comes from
    :func:`unverified_citations`)."""
    raw = answer.generation.raw_answer if answer.generation is not None else None
    in_hits = any(contains_answer(h.chunk.text, case.answers) for h in answer.hits)
    check = answer.evidence
    margin = None if check is None else check.evidence.score - check.min_evidence
    if answer.refusal:
        return AnswerOutcome(
            case.qid,
            True,
            answer.refused_by,
            False,
            0.0,
            False,
            0,
            0,
            0,
            latency_ms,
            question=case.question,
            text=answer.text,
            raw_answer=raw,
            answer_in_hits=in_hits,
            evidence_margin=margin,
        )
    text = _plain_text(answer)
    # an LLM answer's claim check (none for extractive quotes, nor when the model declined)
    grounding = answer.generation.grounding if answer.generation is not None else None
    return AnswerOutcome(
        qid=case.qid,
        refused=False,
        refused_by=None,
        contains=contains_answer(text, case.answers),
        f1=max_token_f1(text, case.answers),
        cites_gold=any(c.doc_id in case.gold_docs for c in answer.citations),
        citations=len(answer.citations),
        unverified=unverified,
        words=len(text.split()),
        latency_ms=latency_ms,
        question=case.question,
        text=answer.text,
        raw_answer=raw,
        answer_in_hits=in_hits,
        evidence_margin=margin,
        claims=0 if grounding is None else grounding.claims,
        unverified_claims=0 if grounding is None else grounding.claims - grounding.verified_claims,
    )


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


def summarize(outcomes: Sequence[AnswerOutcome]) -> dict[str, Any]:
    """Means of the outcomes (see the module docstring for which denominators), rounded to 4
    places, plus ``latency_ms`` ``{"p50", "p95"}``."""
    n = len(outcomes)
    answered = [o for o in outcomes if not o.refused]
    n_cit = sum(o.citations for o in answered)
    n_claims = sum(o.claims for o in answered)

    def mean(values: Iterable[float], count: int) -> float:
        return round(sum(values) / count, 4) if count else 0.0

    return {
        "n": n,
        "answered": mean((1.0 for _ in answered), n),
        "contains_gold": mean((float(o.contains) for o in answered), len(answered)),
        "contains_gold_all": mean((float(o.contains) for o in answered), n),
        "f1": mean((o.f1 for o in answered), len(answered)),
        "cites_gold": mean((float(o.cites_gold) for o in answered), len(answered)),
        "unverified_citations": mean((float(o.unverified) for o in answered), n_cit),
        # review 47: sentences an LLM wrote without a marker, which no source backs, are
        # no citation; they count here (0 for extractive quotes, which carry no check)
        "unverified_claims": mean((float(o.unverified_claims) for o in answered), n_claims),
        "answer_words": round(mean((float(o.words) for o in answered), len(answered)), 1),
        "latency_ms": _percentiles([o.latency_ms for o in outcomes]),
    }


def refusal_scores(
    present_refused: Sequence[bool], absent_refused: Sequence[bool]
) -> dict[str, Any]:
    """Refusal precision, recall and F1 with the absent cases as positives and the present
    ones as negatives (rounded to 4 places), and the counts. A value with no cases to count
    is ``None`` (shown "—"), not 0: precision when nothing was refused, recall and F1 when
    there are no absent cases; F1 is 0 when absent cases exist and none was refused."""
    tp = sum(absent_refused)
    fp = sum(present_refused)
    fn = len(absent_refused) - tp
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = None if r is None else 2 * p * r / (p + r) if p is not None and p + r else 0.0
    return {
        "n_absent": len(absent_refused),
        "absent_refused": tp,
        "present_refused": fp,
        "refusal_precision": None if p is None else round(p, 4),
        "refusal_recall": None if r is None else round(r, 4),
        "refusal_f1": None if f1 is None else round(f1, 4),
    }


FRR_CAPS = (0.05, 0.10, 0.15)
"""Caps on the answerable share refused at which :func:`evidence_curve` reads the recall."""

RECALL_TARGET = 0.85
"""Absent-question recall at which :func:`evidence_curve` reads the answerable share refused
(issue 13's target: 85 % of absent questions refused)."""


def evidence_curve(
    present: Sequence[float | None], absent: Sequence[float | None]
) -> dict[str, float]:
    """Separability of the evidence check: ``present`` and ``absent`` are the evidence margins
    (score minus threshold; ``None``: no evidence measured, nothing retrieved, counted as
    refused at every threshold) of the answerable questions and of the absent-paragraph ones.
    Returns ``evidence_auc`` (the probability that an absent question's margin is below an
    answerable one's, ties counted half: :func:`~ragstrata.eval.refusal.roc_auc`),
    ``evidence_recall_at_frr_C`` for each cap of :data:`FRR_CAPS` (the highest share of
    ``absent`` under a threshold that puts at most that share of ``present`` under it) and
    ``evidence_frr_at_recall_0.85`` (the lowest share of ``present`` under a threshold that
    puts at least :data:`RECALL_TARGET` of ``absent`` under it); empty when either side is
    empty. Rounded to 4 places."""
    if not present or not absent:
        return {}
    from ragstrata.eval.refusal import roc_auc

    low = float("-inf")
    p = [low if v is None else v for v in present]
    a = [low if v is None else v for v in absent]
    out = {"evidence_auc": round(roc_auc([*p, *a], [False] * len(p) + [True] * len(a)), 4)}
    # thresholds just above each margin, and one below all: refuse when margin < t
    cuts = [low, *(math.nextafter(v, math.inf) for v in sorted({*p, *a}))]

    def shares(t: float) -> tuple[float, float]:
        return (
            sum(v < t for v in p) / len(p),
            sum(v < t for v in a) / len(a),
        )

    points = [shares(t) for t in cuts]
    for cap in FRR_CAPS:
        recall = max((r for f, r in points if f <= cap + 1e-12), default=0.0)
        out[f"evidence_recall_at_frr_{cap:.2f}"] = round(recall, 4)
    frr = min((f for f, r in points if r >= RECALL_TARGET - 1e-12), default=1.0)
    out[f"evidence_frr_at_recall_{RECALL_TARGET:.2f}"] = round(frr, 4)
    return out


# --------------------------------------------------------------------------- runner


@dataclass(slots=True)
class AnswerReport:
    """One answerer on one question set: summary, refusal scores and per-question outcomes."""

    dataset: str
    embedder: str
    answerer: str
    n_docs: int
    outcomes: list[AnswerOutcome]
    absent: list[AnswerOutcome] = field(default_factory=list)
    absent_removed_docs: int = 0
    seed: int = 0
    seconds: float = 0.0
    absent_scope: AbsentScope | None = None

    def metrics(self) -> dict[str, Any]:
        """:func:`summarize` of the answerable questions, plus the refusal scores."""
        out = summarize(self.outcomes)
        out["false_refusal_rate"] = round(1.0 - out["answered"], 4) if self.outcomes else 0.0
        if self.absent:
            present = {o.qid: o.refused for o in self.outcomes}
            out.update(
                refusal_scores(
                    [present[o.qid] for o in self.absent], [o.refused for o in self.absent]
                )
            )
            strict = [o for o in self.absent if not o.answer_in_hits]
            scores = refusal_scores([present[o.qid] for o in strict], [o.refused for o in strict])
            out.update({f"strict_{k}": v for k, v in scores.items()})
            out.update(
                evidence_curve(
                    [o.evidence_margin for o in self.outcomes],
                    [o.evidence_margin for o in self.absent],
                )
            )
        return out

    def to_json(self, *, per_query: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "dataset": self.dataset,
            "embedder": self.embedder,
            "answerer": self.answerer,
            "n_docs": self.n_docs,
            "n_questions": len(self.outcomes),
            "n_absent": len(self.absent),
            "absent_removed_docs": self.absent_removed_docs,
            "absent_scope": self.absent_scope,
            "seed": self.seed,
            "seconds": round(self.seconds, 1),
            "metrics": self.metrics(),
        }
        if per_query:
            data["per_query"] = [o.to_json() for o in self.outcomes]
            data["per_query_absent"] = [o.to_json() for o in self.absent]
        return data


def _ask_all(
    engine: Ragstrata,
    cases: Sequence[AnswerCase],
    *,
    stage: str,
    progress: ProgressFn | None,
    without_gold: bool = False,
) -> list[AnswerOutcome]:
    """Ask and score each case; with ``without_gold`` each question is searched among every
    indexed document but its own gold ones (a ``doc_id`` filter)."""
    from ragstrata.generate.citations import CitationChecker

    checker = CitationChecker(engine.embedder, engine.analyzer)

    def chunk_texts(ids: Sequence[str]) -> dict[str, str]:
        return {c.chunk_id: c.text for c in engine.chunks(list(ids))}

    indexed = sorted(engine.manifest().documents) if without_gold else []
    outcomes: list[AnswerOutcome] = []
    for n, case in enumerate(cases, start=1):
        filters = (
            {"doc_id": [d for d in indexed if d not in case.gold_docs]} if without_gold else None
        )
        started = time.perf_counter()
        answer = engine.ask(case.question, filters=filters)
        latency = (time.perf_counter() - started) * 1000
        unverified = unverified_citations(answer, checker, chunk_texts)
        outcomes.append(score_answer(answer, case, unverified=unverified, latency_ms=latency))
        if progress:
            progress(stage, n, len(cases))
    return outcomes


def absent_index(source: Path, target_parent: Path, removed_sources: Iterable[str]) -> Path:
    """A copy of the index at ``source`` without the documents whose source is in
    ``removed_sources``; returns its directory.

    The copy lives in ``target_parent / f"{source.name}.absent-{digest}"``, where ``digest``
    hashes the removed sources and ``source``'s manifest, so a later run with the same index
    and the same removals reuses it and a changed index gets a new copy. The caller prunes
    (:meth:`Ragstrata.add_documents` with ``prune``) with an engine opened on the returned
    directory; no engine may hold ``source`` open while it is copied.
    """
    removed = sorted(set(removed_sources))
    digest = hashlib.sha256()
    digest.update((source / "manifest.json").read_bytes())
    digest.update("\n".join(removed).encode("utf-8"))
    target = target_parent / f"{source.name}.absent-{digest.hexdigest()[:12]}"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        shutil.copytree(source, partial, ignore=shutil.ignore_patterns(".lock"))
        partial.rename(target)
    return target


def run_answer_eval(
    config: RagConfig,
    cases: Sequence[AnswerCase],
    *,
    name: str,
    documents: Iterable[Document] | None = None,
    absent_fraction: float = 0.5,
    seed: int = 0,
    absent_scope: AbsentScope = "question",
    progress: ProgressFn | None = None,
) -> AnswerReport:
    """Ask ``cases`` on the index of ``config`` (``documents`` are added first when given;
    unchanged ones are skipped), then the absent subset (``absent_fraction`` 0 skips it):
    ``absent_scope`` ``"drawn"`` asks it on a pruned copy of the index without the gold
    documents of every drawn question; ``"question"`` asks each drawn question on the full index
    searched among every document but its own gold ones, so that the rest of its article,
    other drawn questions' paragraphs included, stays findable (see :data:`AbsentScope`). The
    answerer is the configuration's (``llm.provider``).

    Raises:
        RuntimeError: some of ``documents`` failed to index.
        ConfigError: ``absent_scope`` ``"drawn"`` with ``store.url`` set: the copy of the index
            directory would share the Qdrant collection, and its prune would delete the gold
            documents' vectors from the real index (review 47).
    """
    from ragstrata.pipeline import Ragstrata

    if absent_scope == "drawn" and absent_fraction and config.store.url:
        raise ConfigError(
            f"--absent-scope drawn prunes a copy of the index directory, but with store.url "
            f"({config.store.url}) its vectors live in Qdrant, shared with the copy: the prune "
            "would delete them from this index; use --absent-scope question (the default)"
        )
    started = time.perf_counter()
    with Ragstrata(config) as engine:
        if documents is not None:
            report = engine.add_documents(documents)
            if report.failures:
                first = report.failures[0]
                raise RuntimeError(f"{len(report.failures)} documents failed: {first.reason}")
        generator = engine.generator
        answerer = "extractive" if generator is None else generator.name
        outcomes = _ask_all(engine, cases, stage="present", progress=progress)
        manifest = engine.manifest()
        embedder = engine.embedder
        drawn = absent_subset(cases, fraction=absent_fraction, seed=seed) if absent_fraction else []
        removed = sorted({d for c in drawn for d in c.gold_docs if d in manifest.documents})
        absent: list[AnswerOutcome] = []
        if drawn and absent_scope == "question":
            absent = _ask_all(engine, drawn, stage="absent", progress=progress, without_gold=True)
    if drawn and absent_scope == "drawn":
        sources = {manifest.documents[d].source for d in removed}
        reduced = absent_index(config.index_path, config.index_path.parent, sources)
        with Ragstrata(config.with_index(reduced), embedder=embedder) as engine:
            engine.add_documents([], prune=lambda s: s in sources)
            left = set(engine.manifest().documents)
            if left & set(removed):  # pragma: no cover - prune is the contract
                raise RuntimeError(f"{reduced}: removed documents are still indexed")
            absent = _ask_all(engine, drawn, stage="absent", progress=progress)
    return AnswerReport(
        dataset=name,
        embedder=manifest.embedder,
        answerer=answerer,
        n_docs=len(manifest.documents),
        outcomes=outcomes,
        absent=absent,
        absent_removed_docs=len(removed),
        seed=seed,
        seconds=time.perf_counter() - started,
        absent_scope=absent_scope if drawn else None,
    )


# --------------------------------------------------------------------------- report, gate

_TABLE = (
    ("answered", "answered"),
    ("contains_gold", "contains gold"),
    ("f1", "token F1"),
    ("cites_gold", "cites gold"),
    ("unverified_citations", "unverified cit."),
    ("unverified_claims", "unverified claims"),
    ("answer_words", "words"),
    ("refusal_precision", "refusal P"),
    ("refusal_recall", "refusal R"),
    ("refusal_f1", "refusal F1"),
    ("strict_refusal_f1", "refusal F1, answer not retrieved"),
    ("false_refusal_rate", "answerable refused"),
    ("evidence_auc", "evidence AUC"),
    ("evidence_recall_at_frr_0.10", "absent refused at ≤10 % answerable refused"),
)


def answer_markdown(report: Mapping[str, Any]) -> str:
    """One Markdown table row per report (a report is :meth:`AnswerReport.to_json`)."""
    m = report["metrics"]
    head = ["answerer", "questions", *(label for _, label in _TABLE), "p50 ms", "p95 ms"]
    cells = [report["answerer"], str(report["n_questions"])]
    for key, _ in _TABLE:
        value = m.get(key)
        if value is None:
            cells.append("—")
        else:
            cells.append(f"{value:.1f}" if key == "answer_words" else f"{value:.4f}")
    cells += [f"{m['latency_ms']['p50']:.0f}", f"{m['latency_ms']['p95']:.0f}"]
    return "\n".join(
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), "| " + " | ".join(cells) + " |"]
    )


def gate(report: Mapping[str, Any], baseline: Mapping[str, Any], *, tolerance: float) -> list[str]:
    """Regressions of ``report`` against ``baseline`` (both shaped like
    :meth:`AnswerReport.to_json`; the baseline needs only ``answerer`` and ``metrics``): a
    metric of :data:`GATED_METRICS` more than ``tolerance`` (absolute) below its baseline
    value, above it for :data:`LOWER_IS_BETTER`, or missing; a different answerer; and, when
    the baseline has ``"n_questions": n``, another number of questions scored (a golden entry
    whose documents are not in the index is not scored: review 47). Empty list = pass."""
    failures: list[str] = []
    expected_n = baseline.get("n_questions")
    if isinstance(expected_n, int) and report.get("n_questions") != expected_n:
        failures.append(
            f"{report.get('n_questions')} questions scored, the baseline's {expected_n} (is a "
            "document missing from the index, or is this another dataset or split?)"
        )
    if baseline.get("answerer") not in (None, report.get("answerer")):
        failures.append(
            f"answerer {report.get('answerer')!r} is not the baseline's {baseline['answerer']!r}"
        )
    actual = report.get("metrics", {})
    for metric, value in baseline.get("metrics", {}).items():
        if metric not in GATED_METRICS or not isinstance(value, int | float):
            continue
        got = actual.get(metric)
        if got is None and metric in actual:  # undefined this run: nothing refused, no absent
            failures.append(
                f"{metric}: undefined in this run (nothing refused, or no absent questions; "
                f"baseline {value:.4f})"
            )
        elif got is None:
            failures.append(f"{metric}: missing (baseline {value:.4f})")
        elif metric in LOWER_IS_BETTER and got > value + tolerance:
            failures.append(f"{metric}: {got:.4f} > baseline {value:.4f} + tolerance {tolerance}")
        elif metric not in LOWER_IS_BETTER and got < value - tolerance:
            failures.append(f"{metric}: {got:.4f} < baseline {value:.4f} - tolerance {tolerance}")
    return failures
