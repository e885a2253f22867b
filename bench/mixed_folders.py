"""Folders that mix Spanish and English files: the evidence check and retrieval, measured.

A Spanish question about an English file in a mostly Spanish folder counts as same-language
(the relation is the majority language of the hits), so its English answer passage is judged
as a same-language hit and the question is refused. Two things are measured, each against the
shipped behaviour; neither alternative is shipped (docs/evaluation.md, "Small indexes: a
learned check of their own"):

1. **Judging each language's hits apart** (the English hits as a cross-lingual set): the
   shipped :class:`~ragstrata.generate.evidence.LearnedRule` measures all the hits together;
   ``best-group`` measures the hits in the question's language and the others separately (hits
   of unknown language in both) and keeps whichever clears its threshold by more;
   ``top-group`` only the group of the first hit's language. On ``bench/data/mixed-folder``
   (a new user's 2 Spanish + 2 English files, their 5 Spanish questions about the English
   files and the rest of their questions) and on 6 mixed indexes of 8 English + 8 other
   Spanish FastAPI pages, ``:test`` headings (a Spanish heading's gold is its English page in
   the index, and the reverse), each asked present and with its page removed.
2. **Fusion in mixed indexes**: on the same 6 indexes, ``:train`` and ``:test`` headings, hit@5
   and MRR@10 of the gold page with the default fusion, the same without the BM25 stand-in for
   passages in another language than the question's (``bm25_stand_in=False``), the
   cross-lingual weights (0.9 / 0.1) for every query, and 0.7 / 0.3.

3. **Extractive answers** (``--answers``, instead of 1 and 2): on the same 6 indexes, the
   written questions (``eval/questions/fastapi-written-{train,test}.*.jsonl``) whose gold page
   is in an index, in its language or the other, asked with the default ``ask``; per direction
   the answers refused, holding a gold answer, citing the gold page, and the gold page's rank
   in the hits. Writes bench/results/mixed_folders_answers.json.

    PYTHONPATH=src python bench/mixed_folders.py --work DIR [--answers]

Indexes are built under ``DIR`` (reused when present). Writes bench/results/mixed_folders.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragstrata.config import RagConfig
from ragstrata.eval.answer_metrics import contains_answer, max_token_f1
from ragstrata.eval.parallel_docs import load_parallel_docs
from ragstrata.eval.runner import dataset_documents
from ragstrata.generate.citations import MARKER
from ragstrata.generate.evidence import LearnedRule
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.hybrid import HybridRetriever
from ragstrata.retrieve.weights import FusionWeights
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.language import query_language
from ragstrata.training.answerability import ExcludingStore
from ragstrata.training.small_indexes import GROUP_PAGES, Group, build_index
from ragstrata.types import Evidence, Hit

ROOT = Path("../shared/data/fastapi-docs-md")
FOLDER = Path(__file__).parent / "data" / "mixed-folder"
FOLDER_QUESTIONS = {  # question -> the file that answers it (None: off-topic)
    "¿Cuántos días de vacaciones tengo al año?": "vacaciones.md",
    "¿Cuál es la red wifi para visitantes?": "oficina.md",
    "¿Cuándo están congelados los despliegues?": "deploy-runbook.md",
    "¿Cómo revierto un despliegue que falla?": "deploy-runbook.md",
    "¿Cada cuánto cambia la guardia?": "oncall.md",
    "¿En cuánto tiempo debe responder el ingeniero de guardia a un aviso?": "oncall.md",
    "¿Cuándo cambia la rotación de guardia?": "oncall.md",
    "¿Cuál es la capital de Australia?": None,
    "How do I roll back a bad deploy?": "deploy-runbook.md",
    "How many unused vacation days can I carry over?": "vacaciones.md",
    "What are the IT support hours?": "oficina.md",
    "What is the capital of Australia?": None,
}
MIXED_INDEXES = 6
WEIGHTS = {  # name -> (fusion weights, None for the default; BM25 stand-in)
    "default": (None, True),
    "default, no BM25 stand-in": (None, False),
    "cross 0.9/0.1": (FusionWeights(same=(0.9, 0.1), cross=(0.9, 0.1)), True),
    "0.7/0.3": (FusionWeights(same=(0.7, 0.3), cross=(0.9, 0.1)), True),
}


def groups_of(question: str, hits: Sequence[Hit]) -> list[list[Hit]]:
    """The hits in the question's language and the others (unknown-language hits in both), or
    all of them when they are of one known language."""
    language = query_language(question)
    known = [h.chunk.language for h in hits if h.chunk.language not in ("", "und")]
    if language is None or language not in known or all(lang == language for lang in known):
        return [list(hits)]
    same = [h for h in hits if h.chunk.language in (language, "", "und")]
    return [same, [h for h in hits if h.chunk.language != language]]


def decide(
    rule: LearnedRule, question: str, hits: Sequence[Hit], analyzer: Analyzer, how: str
) -> tuple[bool, Evidence]:
    """Refused? and the evidence judged, for ``how`` in shipped / best-group / top-group."""
    groups = [list(hits)] if how == "shipped" else groups_of(question, hits)
    if how == "top-group" and len(groups) > 1:
        top = hits[0].chunk.language
        groups = [g for g in groups if any(h.chunk.language == top for h in g)][:1] or groups
    measured = [rule.measure(question, g, analyzer) for g in groups]
    best = max(measured, key=lambda ev: ev.score - rule.threshold_for(ev))
    return rule.refuses(best), best


HOWS = ("shipped", "best-group", "top-group")


def folder_run(work: Path) -> list[dict[str, Any]]:
    """Each folder question under each way of judging."""
    index = work / "mixed-folder"
    config = RagConfig.load(env={}).with_index(index)
    with Ragstrata(config) as engine:
        if not (index / "manifest.json").is_file():
            engine.ingest([FOLDER])
        out = []
        for question, answer_file in FOLDER_QUESTIONS.items():
            hits = engine.search(question).hits
            rule = engine._evidence_rule()
            assert isinstance(rule, LearnedRule)
            line: dict[str, Any] = {"question": question, "answer_file": answer_file}
            for how in HOWS:
                refused, ev = decide(rule, question, hits, engine.analyzer, how)
                line[how] = {
                    "refused": refused,
                    "score": round(ev.score, 4),
                    "threshold": rule.threshold_for(ev),
                }
            line["top5"] = [Path(h.chunk.source).name for h in hits[:5]]
            out.append(line)
    return out


def mixed_indexes(work: Path) -> list[tuple[Path, set[str], set[str]]]:
    """The 6 mixed indexes: (index, English pages, Spanish pages), built when missing."""
    en = {d.doc_id: d for d in dataset_documents(load_parallel_docs(ROOT, direction="es-en"))}
    es = {d.doc_id: d for d in dataset_documents(load_parallel_docs(ROOT, direction="en-es"))}
    common = sorted(set(en) & set(es))
    random.Random(3).shuffle(common)
    with Ragstrata(RagConfig.load(env={}).with_index(work / "_embedder")) as loader:
        embedder = loader.embedder
    out = []
    for n in range(MIXED_INDEXES):
        a = set(common[n * GROUP_PAGES : (n + 1) * GROUP_PAGES])
        start = MIXED_INDEXES * GROUP_PAGES + n * GROUP_PAGES
        b = set(common[start : start + GROUP_PAGES])
        docs = [dataclasses.replace(en[p], doc_id="en/" + p) for p in sorted(a)]
        docs += [dataclasses.replace(es[p], doc_id="es/" + p) for p in sorted(b)]
        out.append((build_index(Group(f"mixed-{n}", tuple(docs), ()), work, embedder), a, b))
    return out


def headings(half: str) -> dict[str, list[tuple[str, str]]]:
    """``direction -> [(heading, gold page)]`` of one page half."""
    out = {}
    for direction in ("es-en", "en-es"):
        data = load_parallel_docs(ROOT, direction=f"{direction}:{half}")
        out[direction] = [
            (data.queries[q], next(d for d, g in data.qrels[q].items() if g > 0))
            for q in sorted(data.queries)
        ]
    return out


def refusal_run(indexes: list[tuple[Path, set[str], set[str]]]) -> dict[str, Any]:
    """Answerable answered and absent refused, per way of judging and direction (test)."""
    qs = headings("test")
    counts: dict[str, dict[str, list[int]]] = {}
    for index, a, b in indexes:
        config = RagConfig.load(env={}).with_index(index)
        with Ragstrata(config) as engine:
            engine.search("x")
            rule = engine._evidence_rule()
            assert isinstance(rule, LearnedRule)
            store, manifest = engine._read_store(), engine.manifest()
            answerer = engine._answerer(str)
            full = HybridRetriever(store, engine.read_embedder, engine.analyzer, config.retrieval)
            for direction, pages, prefix in (("es-en", a, "en/"), ("en-es", b, "es/")):
                for text, page in [q for q in qs[direction] if q[1] in pages][:12]:
                    gold = prefix + page
                    hits = full.search(text).hits
                    part = HybridRetriever(
                        ExcludingStore(store, frozenset(manifest.documents[gold].chunk_ids)),  # type: ignore[arg-type]
                        engine.read_embedder,
                        engine.analyzer,
                        config.retrieval,
                    )
                    absent = part.search(text).hits
                    part.close()
                    for how in HOWS:
                        c = counts.setdefault(how, {}).setdefault(direction, [0, 0, 0, 0, 0])
                        if any(h.chunk.doc_id == gold for h in hits):
                            c[0] += 1
                            c[1] += not decide(rule, text, hits, engine.analyzer, how)[0]
                        if how == "shipped":
                            answer = answerer.answer(text, hits)
                            c[4] += not answer.refusal and any(
                                cite.doc_id == gold for cite in answer.citations
                            )
                        c[2] += 1
                        c[3] += decide(rule, text, absent, engine.analyzer, how)[0]
            full.close()
    return {
        how: {
            d: {
                "answerable": c[0],
                "answered": c[1],
                "absent": c[2],
                "absent_refused": c[3],
                **({"answered_citing_gold": c[4]} if how == "shipped" else {}),
            }
            for d, c in by.items()
        }
        for how, by in counts.items()
    }


DIRECTIONS = (  # (direction, index pages, gold prefix, headings of direction)
    ("es-en", "a", "en/", "es-en"),  # Spanish headings of the English pages
    ("en-es", "b", "es/", "en-es"),  # English headings of the Spanish pages
    ("es-es", "b", "es/", "es-en"),  # Spanish headings of the Spanish pages
    ("en-en", "a", "en/", "en-es"),  # English headings of the English pages
)


def retrieval_run(indexes: list[tuple[Path, set[str], set[str]]]) -> dict[str, Any]:
    """hit@5 and MRR@10 of the gold page per fusion weights, page half and direction
    (the question's language against its page's: the first two cross-lingual)."""
    stats: dict[str, dict[str, list[float]]] = {}
    for half in ("train", "test"):
        qs = headings(half)
        for index, a, b in indexes:
            config = RagConfig.load(env={}).with_index(index)
            with Ragstrata(config) as engine:
                engine.search("x")
                store = engine._read_store()
                for name, (weights, stand_in) in WEIGHTS.items():
                    r = HybridRetriever(
                        store,
                        engine.read_embedder,
                        engine.analyzer,
                        config.retrieval,
                        bm25_stand_in=stand_in,
                    )
                    if weights is not None:
                        r.weights = weights
                    for direction, which, prefix, asked in DIRECTIONS:
                        pages = a if which == "a" else b
                        for text, page in qs[asked]:
                            if page not in pages:
                                continue
                            docs = [h.chunk.doc_id for h in r.search(text, top_k=10).hits]
                            gold = prefix + page
                            rank = docs.index(gold) + 1 if gold in docs else 0
                            key = f"{direction}:{half}"
                            s = stats.setdefault(name, {}).setdefault(key, [0, 0, 0.0])
                            s[0] += 1
                            s[1] += 0 < rank <= 5
                            s[2] += 1 / rank if rank else 0.0
                    r.close()
    return {
        name: {
            d: {"queries": s[0], "hit@5": round(s[1] / s[0], 4), "mrr@10": round(s[2] / s[0], 4)}
            for d, s in sorted(by.items())
        }
        for name, by in stats.items()
    }


def answers_run(indexes: list[tuple[Path, set[str], set[str]]], half: str) -> dict[str, Any]:
    """Per direction of the written questions of ``half`` whose gold page is in an index:
    questions, refused, answer holds a gold answer, cites the gold page, gold page in the
    first 5 hits, mean token F1."""
    stats: dict[str, list[float]] = {}
    for index, a, b in indexes:
        with Ragstrata(RagConfig.load(env={}).with_index(index)) as engine:
            for direction in ("es-en", "en-es", "es-es", "en-en"):
                path = Path(f"eval/questions/fastapi-written-{half}.{direction}.jsonl")
                for line in path.read_text(encoding="utf-8").splitlines():
                    q = json.loads(line)
                    lang, page = q["expected"][0].split("/", 1)
                    if page not in (a if lang == "en" else b):
                        continue
                    gold = f"{lang}/{page}"
                    answer = engine.ask(q["query"])
                    text = MARKER.sub(" ", answer.text)
                    s = stats.setdefault(direction, [0, 0, 0, 0, 0, 0.0])
                    s[0] += 1
                    s[1] += answer.refusal
                    if not answer.refusal:
                        s[2] += contains_answer(text, q["answers"])
                        s[3] += any(c.doc_id == gold for c in answer.citations)
                        s[5] += max_token_f1(text, q["answers"])
                    s[4] += any(h.chunk.doc_id == gold for h in answer.hits[:5])
    return {
        d: {
            "questions": int(s[0]),
            "refused": int(s[1]),
            "contains_gold": int(s[2]),
            "cites_gold_page": int(s[3]),
            "gold_page_in_top5": int(s[4]),
            "token_f1": round(s[5] / s[0], 4),
        }
        for d, s in sorted(stats.items())
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--answers", action="store_true", help="only the extractive answers (3.)")
    args = ap.parse_args()
    if args.answers:
        indexes = mixed_indexes(args.work)
        answers = {half: answers_run(indexes, half) for half in ("train", "test")}
        print(
            "| half | direction | questions | refused | holds a gold answer | cites the gold "
            "page | gold page in top 5 | token F1 |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for half, by in answers.items():
            for d, c in by.items():
                print(f"| {half} | {d} | " + " | ".join(str(v) for v in c.values()) + " |")
        out = args.out or Path("bench/results/mixed_folders_answers.json")
        out.write_text(json.dumps(answers, indent=1) + "\n", encoding="utf-8")
        return
    args.out = args.out or Path("bench/results/mixed_folders.json")
    folder = folder_run(args.work)
    print("| question | answer file | " + " | ".join(HOWS) + " |")
    print("|---|---|" + "---|" * len(HOWS))
    for line in folder:
        cells = [
            f"{'refused' if line[h]['refused'] else 'answered'} "
            f"{line[h]['score']}/{line[h]['threshold']}"
            for h in HOWS
        ]
        print(f"| {line['question']} | {line['answer_file']} | " + " | ".join(cells) + " |")
    indexes = mixed_indexes(args.work)
    refusal = refusal_run(indexes)
    print(
        "\n| judging | direction | answered / answerable | absent refused / absent |"
        " extractive answers citing the gold page / asked |"
    )
    print("|---|---|---|---|---|")
    for how, by in refusal.items():
        for d, c in by.items():
            cites = f"{c['answered_citing_gold']}/{c['absent']}" if how == "shipped" else ""
            print(
                f"| {how} | {d} | {c['answered']}/{c['answerable']} | "
                f"{c['absent_refused']}/{c['absent']} | {cites} |"
            )
    retrieval = retrieval_run(indexes)
    print("\n| weights | direction | queries | hit@5 | MRR@10 |")
    print("|---|---|---|---|---|")
    for name, by in retrieval.items():
        for d, s in by.items():
            print(f"| {name} | {d} | {s['queries']} | {s['hit@5']} | {s['mrr@10']} |")
    args.out.write_text(
        json.dumps({"folder": folder, "refusal": refusal, "retrieval": retrieval}, indent=1) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
