"""Precision and recall of the citation checker on a labeled, deterministic sample.

The sample is built from real corpora (by default ``fastapi-docs-md/en`` and
``react-docs-es-mdx``): documents are loaded and chunked with the real pipeline, chunks are
drawn with a fixed seed, and from each drawn chunk four (claim, passage, supported?) pairs are
made against that chunk's text:

* ``copy`` (supported): a prose sentence of the chunk, cleaned of markup;
* ``fragment`` (supported): the first ~60 % of that sentence's words, as an answer shortens a
  source;
* ``other`` (unsupported): a prose sentence of another document of the same corpus;
* ``perturbed`` (unsupported): the sentence with one fact changed: a number replaced
  (``n → n + 1``, or ``× 2``), else a name or code identifier swapped for one from another
  document, else a negation inserted (``not``/``no``).

Chunks alternate between a development half (settings are chosen there) and a test half
(precision/recall are reported there). Positive class: "supported"; precision = supported
among the pairs the checker verified, recall = verified among the supported pairs. Known
limits: no real paraphrases and no cross-language claims (a Spanish answer citing an English
source), which the checker handles only through the embedder (see docs/evaluation.md).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragstrata.errors import RagError
from ragstrata.generate.citations import CheckerSettings, CitationChecker, claim_names
from ragstrata.generate.extractive import clean_sentence
from ragstrata.text.spans import find_fences, sentence_spans
from ragstrata.types import Chunk

SEED = 13
WEIGHT_GRID = (0.4, 0.5, 0.6, 0.7, 0.8)
THRESHOLD_GRID = tuple(round(0.30 + 0.025 * i, 3) for i in range(21))


@dataclass(frozen=True, slots=True)
class Pair:
    """One labeled (claim, passage) pair; ``kind`` is copy, fragment, other or perturbed."""

    corpus: str
    chunk_id: str
    claim: str
    passage: str
    supported: bool
    kind: str
    dev: bool


def prose_sentences(text: str, *, min_words: int = 8, max_words: int = 45) -> list[str]:
    """Cleaned prose sentences of a chunk (no code, headings, tables or HTML/MDX lines)."""
    fenced = [(f.open_start, f.close_end) for f in find_fences(text)]
    out: list[str] = []
    pos = 0
    for line in text.split("\n"):
        start = pos
        pos += len(line) + 1
        stripped = line.strip()
        if (
            not stripped
            or any(a <= start <= b for a, b in fenced)
            or stripped.startswith(("#", "|", "<", "{", "```", "import ", "export "))
        ):
            continue
        for a, b in sentence_spans(line, 0, len(line)):
            sentence = clean_sentence(line[a:b])
            words = sentence.split()
            if min_words <= len(words) <= max_words and sentence[-1:] in ".!?:":
                out.append(sentence)
    return out


_NUM = re.compile(r"(?<![\w.])\d+(?![\w.])")


def perturb(sentence: str, names_pool: Sequence[str], rng: random.Random) -> tuple[str, str]:
    """The sentence with one fact changed, and how (``number``, ``name`` or ``negation``)."""
    numbers = list(_NUM.finditer(sentence))
    if numbers:
        m = numbers[rng.randrange(len(numbers))]
        value = int(m.group())
        new = value + 1 if value < 10 else value * 2
        return sentence[: m.start()] + str(new) + sentence[m.end() :], "number"
    names = sorted(claim_names(sentence))
    candidates = [n for n in names_pool if n not in sentence]
    if names and candidates:
        old = names[rng.randrange(len(names))]
        new_name = candidates[rng.randrange(len(candidates))]
        return sentence.replace(old, new_name, 1), "name"
    for pattern, repl in (
        (r"\b(is|are|can|will|does|do|should|must)\b", r"\1 not"),
        (r"\b(es|son|puede|pueden|debe|deben)\b", r"no \1"),
    ):
        changed, n = re.subn(pattern, repl, sentence, count=1)
        if n:
            return changed, "negation"
    return "It is not true that " + sentence[0].lower() + sentence[1:], "negation"


def build_pairs(corpora: Mapping[str, Sequence[Chunk]], *, per_corpus: int = 40) -> list[Pair]:
    """Four pairs per drawn chunk (see the module docstring), ``per_corpus`` chunks per corpus,
    deterministic for the same chunks."""
    pairs: list[Pair] = []
    for name in sorted(corpora):
        rng = random.Random(f"{SEED}:{name}")
        chunks = sorted(corpora[name], key=lambda c: c.chunk_id)
        with_prose = [(c, s) for c in chunks if (s := prose_sentences(c.text))]
        if len(with_prose) < 2:
            continue
        names_pool = sorted(
            {n for c, sents in with_prose for s in sents for n in claim_names(s) if len(n) > 3}
        )
        drawn = rng.sample(range(len(with_prose)), min(per_corpus, len(with_prose)))
        for i, index in enumerate(drawn):
            chunk, sentences = with_prose[index]
            sentence = sentences[rng.randrange(len(sentences))]
            dev = i % 2 == 0
            words = sentence.split()
            fragment = " ".join(words[: max(5, int(len(words) * 0.6))]).rstrip(",;:") + "."
            others = [(c, s) for c, s in with_prose if c.doc_id != chunk.doc_id]
            _, other_sentences = others[rng.randrange(len(others))]
            other = other_sentences[rng.randrange(len(other_sentences))]
            doc_names = [n for n in names_pool if n not in chunk.text]
            changed, how = perturb(sentence, doc_names, rng)
            passage = chunk.rendered
            pairs += [
                Pair(name, chunk.chunk_id, sentence, passage, True, "copy", dev),
                Pair(name, chunk.chunk_id, fragment, passage, True, "fragment", dev),
                Pair(name, chunk.chunk_id, other, passage, False, "other", dev),
                Pair(name, chunk.chunk_id, changed, passage, False, f"perturbed-{how}", dev),
            ]
    return pairs


@dataclass(frozen=True, slots=True)
class PR:
    """Precision/recall/F1 of ``verified`` against the labels, with counts."""

    precision: float
    recall: float
    f1: float
    n: int
    positives: int

    def to_json(self) -> dict[str, float]:
        return {k: round(float(getattr(self, k)), 4) for k in self.__slots__}


def score(predicted: Sequence[bool], labels: Sequence[bool]) -> PR:
    tp = sum(p and y for p, y in zip(predicted, labels, strict=True))
    fp = sum(p and not y for p, y in zip(predicted, labels, strict=True))
    fn = sum((not p) and y for p, y in zip(predicted, labels, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PR(precision, recall, f1, len(labels), sum(labels))


@dataclass(slots=True)
class CheckerReport:
    """Chosen settings (on dev) and test precision/recall, overall and per kind/corpus."""

    embedder: str
    settings: CheckerSettings
    dev: PR
    test: PR
    by_kind: dict[str, float] = field(default_factory=dict)
    by_corpus: dict[str, dict[str, float]] = field(default_factory=dict)
    n_pairs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder,
            "semantic_weight": self.settings.semantic_weight,
            "threshold": self.settings.threshold,
            "n_pairs": self.n_pairs,
            "dev": self.dev.to_json(),
            "test": self.test.to_json(),
            "test_verified_rate_by_kind": self.by_kind,
            "test_by_corpus": self.by_corpus,
        }


def evaluate_checker(checker: CitationChecker, pairs: Sequence[Pair]) -> CheckerReport:
    """Choose ``semantic_weight``/``threshold`` on the dev pairs (best F1; among ties, the
    weight with the most tied thresholds and the median of them), then score the test pairs.
    Embeds every pair once."""
    supports = checker.features([p.claim for p in pairs], [p.passage for p in pairs])
    dev = [i for i, p in enumerate(pairs) if p.dev]
    test = [i for i, p in enumerate(pairs) if not p.dev]

    def predict(indices: Sequence[int], w: float, t: float) -> list[bool]:
        out = []
        for i in indices:
            s = supports[i]
            blended = w * max(s.cosine, 0.0) + (1 - w) * s.coverage
            out.append(not s.missing and blended >= t)
        return out

    labels_dev = [pairs[i].supported for i in dev]
    grid = {
        (w, t): score(predict(dev, w, t), labels_dev) for w in WEIGHT_GRID for t in THRESHOLD_GRID
    }
    top = max(r.f1 for r in grid.values())
    # the weight with the widest range of best-F1 thresholds, and the middle of that range:
    # the choice least sensitive to where the sample's easy cases happen to fall
    tied = {w: [t for t in THRESHOLD_GRID if grid[w, t].f1 >= top - 1e-12] for w in WEIGHT_GRID}
    w = max(WEIGHT_GRID, key=lambda x: (len(tied[x]), -abs(x - 0.6)))
    t = tied[w][len(tied[w]) // 2]
    dev_result = grid[w, t]
    predicted = predict(test, w, t)
    test_result = score(predicted, [pairs[i].supported for i in test])
    kinds: dict[str, list[bool]] = {}
    corpora: dict[str, tuple[list[bool], list[bool]]] = {}
    for i, p_ok in zip(test, predicted, strict=True):
        kinds.setdefault(pairs[i].kind, []).append(p_ok)
        pred, lab = corpora.setdefault(pairs[i].corpus, ([], []))
        pred.append(p_ok)
        lab.append(pairs[i].supported)
    return CheckerReport(
        embedder=getattr(checker.embedder, "name", "?"),
        settings=CheckerSettings(semantic_weight=w, threshold=t),
        dev=dev_result,
        test=test_result,
        by_kind={k: round(sum(v) / len(v), 4) for k, v in sorted(kinds.items())},
        by_corpus={c: score(pr, lb).to_json() for c, (pr, lb) in sorted(corpora.items())},
        n_pairs=len(pairs),
    )


def corpus_chunks(engine: Any, folder: Path) -> list[Chunk]:
    """Every chunk of the Markdown/MDX files under ``folder``, chunked by ``engine``'s chunker
    (nothing is indexed)."""
    from ragstrata.ingest.loader import discover, load_document

    files, _ = discover([folder])
    chunks: list[Chunk] = []
    for path in sorted(files):
        try:
            document = load_document(path)
        except RagError:  # a corpus file that fails to parse is skipped
            continue
        chunks.extend(engine.chunker.chunk(document))
    return chunks
