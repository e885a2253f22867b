"""Cross-lingual citation check: does the checker verify a claim written in one language
against a source in the other, and where should its threshold sit?

An LLM asked in English over Spanish documents answers in English (the prompt says so), and
the checker's lexical coverage of the claim's terms in the passage is then near zero: every
such claim failed (trial 25, 2026-12-06). For a claim and a passage in different languages the
checker blends nothing lexical: it takes the cosine of the claim and the passage's best
window alone, against its own threshold (``CheckerSettings.cross_threshold``), and keeps the
number, name, negation and code tests. This script measures that cosine on labeled pairs and
chooses the threshold on the training pages only.

Pairs come from ``fastapi-docs-md`` (``es/`` and ``en/`` hold the same pages): a page's
sections are aligned by position when both languages have as many headings, a section's prose
paragraphs likewise. Positive: a prose sentence of a paragraph (8-45 words) against the
aligned paragraph of the other language. Negative: the same sentence against an aligned
paragraph of another section of the same page (same topic, other facts: the hard case).
Both directions (EN claim / ES passage, ES claim / EN passage). Pages are split by
:func:`ragstrata.eval.parallel_docs.page_split`: the threshold is the one of the best F1 on
``train`` (ties: the higher), reported on ``test``.

    python bench/citation_crosslingual.py [--data ../shared/data/fastapi-docs-md]

Prints a table and writes ``bench/results/citation_crosslingual.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragstrata import stages  # noqa: E402
from ragstrata.eval.citation_check import prose_sentences  # noqa: E402
from ragstrata.eval.parallel_docs import page_split, read_pages, strip_heading_anchors  # noqa: E402
from ragstrata.generate.citations import CitationChecker  # noqa: E402
from ragstrata.text.analyzer import Analyzer  # noqa: E402
from ragstrata.text.spans import find_fences  # noqa: E402

_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)


def _sections(text: str) -> list[list[str]]:
    """The prose paragraphs of each section (split at headings outside code fences)."""
    fenced = [(f.open_start, f.close_end) for f in find_fences(text)]
    heads = [m.start() for m in _HEADING.finditer(text)]
    cuts = [0] + [h for h in heads if not any(a <= h <= b for a, b in fenced)]
    cuts.append(len(text))
    out = []
    for a, b in itertools.pairwise(cuts):
        body = text[a:b]
        paragraphs = [p for p in re.split(r"\n\s*\n", body) if prose_sentences(p)]
        out.append(paragraphs)
    return out


def pairs_of(es_text: str, en_text: str, rng: random.Random) -> list[tuple[str, str, str, bool]]:
    """``(claim, passage, claim_language, supported)`` of one page (see the module docstring)."""
    es, en = _sections(strip_heading_anchors(es_text)), _sections(strip_heading_anchors(en_text))
    if len(es) != len(en):
        return []
    aligned = [
        (i, j) for i in range(len(es)) if len(es[i]) == len(en[i]) for j in range(len(es[i]))
    ]
    out = []
    for i, j in aligned:
        others = [(k, m) for k, m in aligned if k != i]
        for claim_side, passage_side, lang in ((en, es, "en"), (es, en, "es")):
            sentences = prose_sentences(claim_side[i][j])
            if not sentences:
                continue
            claim = sentences[0]
            out.append((claim, passage_side[i][j], lang, True))
            if others:
                k, m = rng.choice(others)
                out.append((claim, passage_side[k][m], lang, False))
    return out


def _f1(predicted: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    tp = float(np.sum(predicted & labels))
    p = tp / max(1.0, float(np.sum(predicted)))
    r = tp / max(1.0, float(np.sum(labels)))
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/fastapi-docs-md")
    ap.add_argument("--embedder", default="e5-onnx")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/citation_crosslingual.json")
    args = ap.parse_args()
    started = time.perf_counter()
    es_pages = read_pages(args.data / "es")
    en_pages = read_pages(args.data / "en")
    common = sorted(set(es_pages) & set(en_pages))
    halves = page_split(common)
    rng = random.Random(0)
    rows: dict[str, list[tuple[str, str, str, bool]]] = {"train": [], "test": []}
    for rel in common:
        rows[halves[rel]].extend(pairs_of(es_pages[rel].text, en_pages[rel].text, rng))
    embedder = stages.load_embedder(args.embedder)
    checker = CitationChecker(embedder, Analyzer())
    scores: dict[str, dict[str, np.ndarray]] = {}
    for half, items in rows.items():
        found = checker.features([c for c, _, _, _ in items], [p for _, p, _, _ in items])
        scores[half] = {
            "cosine": np.array([s.cosine for s in found]),
            "blend": np.array([s.score for s in found]),
            "missing": np.array([bool(s.missing) for s in found]),
            "label": np.array([y for _, _, _, y in items]),
            "lang": np.array([lang for _, _, lang, _ in items]),
        }
    train = scores["train"]
    grid = np.round(np.arange(0.70, 0.96, 0.005), 3)
    best = max(
        grid,
        key=lambda t: (_f1((train["cosine"] >= t) & ~train["missing"], train["label"])[2], t),
    )
    report: dict[str, object] = {
        "embedder": embedder.name,
        "threshold": float(best),
        "pairs": {h: len(s["label"]) for h, s in scores.items()},
        "positives": {h: int(s["label"].sum()) for h, s in scores.items()},
    }
    lines = [
        f"cross-lingual citation check, {embedder.name}; threshold chosen on train: {best:.3f}",
        "| half | claim lang | pairs | rule | precision | recall | F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    results = []
    for half, s in scores.items():
        for lang in ("en", "es", "all"):
            mask = np.ones_like(s["label"]) if lang == "all" else s["lang"] == lang
            labels = s["label"][mask]
            rules = {
                "blend (same-language rule)": (s["blend"][mask] >= checker.settings.threshold)
                & ~s["missing"][mask],
                f"cosine >= {best:.3f}": (s["cosine"][mask] >= best) & ~s["missing"][mask],
            }
            for rule, predicted in rules.items():
                p, r, f = _f1(predicted, labels)
                results.append(
                    {
                        "half": half,
                        "lang": lang,
                        "pairs": int(mask.sum()),
                        "rule": rule,
                        "precision": round(p, 4),
                        "recall": round(r, 4),
                        "f1": round(f, 4),
                    }
                )
                n = int(mask.sum())
                lines.append(f"| {half} | {lang} | {n} | {rule} | {p:.4f} | {r:.4f} | {f:.4f} |")
    report["results"] = results
    report["seconds"] = round(time.perf_counter() - started, 1)
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {report['seconds']} s")


if __name__ == "__main__":
    main()
