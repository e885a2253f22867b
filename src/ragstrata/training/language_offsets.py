"""Estimate the per-language mean query embeddings of :mod:`ragstrata.retrieve.language_shift`.

Recipe (``python -m ragstrata.training.language_offsets ../shared/data/fastapi-docs-md --out
FILE``): the questions of the FastAPI parallel set's **training pages only**
(:mod:`ragstrata.eval.parallel_docs`, ``es-en:train`` = Spanish headings, ``en-es:train`` =
English headings of the same pages) are embedded as queries with the chosen embedder
(``--embedder``, default ``e5-onnx``); each language's mean vector is written to ``FILE``. The
held-out pages (``es-en:test``, ``en-es:test``) are never read, and no other parameter is
fitted. SciFact is not read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ragstrata.config.embedder import embedder_family
from ragstrata.eval.runner import load_dataset
from ragstrata.retrieve.language_shift import LanguageOffsets
from ragstrata.stages import load_embedder


def estimate(dataset: Path, *, embedder_name: str) -> LanguageOffsets:
    """Mean unit query embedding of the Spanish and the English training questions of the
    parallel set at ``dataset``. Raises ConfigError for an embedder with no offset family."""
    embedder = load_embedder(embedder_name)
    means = {}
    counts = {}
    for language, split in (("es", "es-en:train"), ("en", "en-es:train")):
        data = load_dataset(dataset, split=split)
        questions = [data.queries[q] for q in sorted(data.queries)]
        vectors = np.stack([embedder.embed_query(q) for q in questions])
        means[language] = vectors.mean(axis=0).astype(np.float32)
        counts[language] = len(questions)
    family = embedder_family(embedder_name) or embedder_name
    source = (
        f"{dataset.name} training pages: {counts['es']} Spanish headings (es-en:train), "
        f"{counts['en']} English headings (en-es:train); embedder {embedder.name}"
    )
    return LanguageOffsets(family=family, means=means, source=source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="the fastapi-docs-md folder")
    parser.add_argument("--embedder", default="e5-onnx")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    offsets = estimate(args.dataset, embedder_name=args.embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(offsets.to_json()) + "\n", encoding="utf-8")
    es, en = offsets.means["es"], offsets.means["en"]
    print(f"{offsets.source}; |mean(en) - mean(es)| = {float(np.linalg.norm(en - es)):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
