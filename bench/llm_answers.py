"""Which packaged local model should `ask --llm local` use? Labeled ES/EN questions, per model.

Usage: python bench/llm_answers.py [--models 0.5b 1.5b] [--threads 2] [--only ID ...]
                                   [--variant NAME[:ctx=1200,nb=256,fa=1,max=384] ...]
                                   [--resume] [--report] [--data ../shared/data]
                                   [--work /tmp/ragstrata-llm-answers]

A fixed subset of the shared corpora (bench/data/llm_answers.yaml: English and Spanish FastAPI
pages, Spanish React reference pages, two Spanish Debian Reference chapters) is indexed once with
the default configuration and cached under --work (rebuilt when the file list or a file size
changes). Each labeled question is asked with ``Ragstrata.ask`` and ``llm.provider = "local"``
(the configuration of ``ragstrata ask --llm local``, with ``llm.local_model`` and
``llm.threads`` set), once per model. Recorded per question: refused (and by what), the checked
answer, whether every expected keyword occurs in it (case- and accent-insensitive), citations
(count, verified, expected source cited and verified) and seconds.

Per model and language: answered correctly (keywords found and at least one verified citation
of the expected source), unsupported claims (answers that carry an unverified citation),
off-topic refusals, wrong refusals (on-topic questions refused) and p50 seconds. Prints Markdown
tables and writes bench/results/llm_answers.json, merging with the models already there. The
machine is shared: the load average is recorded at each question.

Where the time goes, per question that reaches the LLM: seconds per stage (retrieval, evidence
check, assembly, prompt evaluation, generation, citation check; :data:`STAGES`), time to first
token from the question, prompt tokens and how many of them were evaluated (the rest is the
prefix shared with the previous question, kept in llama.cpp's KV cache), prompt and generation
tokens/s from llama.cpp's counters. The model loads once per process (``model_load_s``) and
every question reuses it, as ``ragstrata ask -``, the service and the MCP server do.

``--variant`` runs several settings (context budget, llama.cpp batch, flash attention, ...)
in one process, each with its own loaded model, interleaved question by question (the order
rotated), so that the machine's changing load falls on all of them alike. Each variant is
recorded as its own run, ``<model>/<name>`` (``default``: ``<model>``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import time
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from ragstrata.config import LOCAL_LLMS, LLMConfig, RagConfig
from ragstrata.generate.llama_local import DEFAULT_FLASH_ATTN, DEFAULT_N_BATCH, LlamaGenerator
from ragstrata.pipeline import Ragstrata
from ragstrata.render import diagnostics_json
from ragstrata.testing.fakes import RecordedChatModel
from ragstrata.types import Answer

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
QUESTIONS = HERE / "data" / "llm_answers.yaml"
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
LANGS = ("es", "en")


def fold(text: str) -> str:
    """Casefolded, accents removed (``"Según"`` -> ``"segun"``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def keywords_found(text: str, keywords: list[str]) -> bool:
    """Every keyword (``"a|b"``: either) occurs in ``text``, case- and accent-insensitive."""
    folded = fold(text)
    return all(any(fold(alt) in folded for alt in kw.split("|")) for kw in keywords)


def cites(source: str, expected: list[str]) -> bool:
    posix = Path(source).as_posix()
    return any(posix == e or posix.endswith("/" + e) for e in expected)


def load_questions(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    questions = spec["questions"]
    ids = [q["id"] for q in questions]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate question ids")
    for q in questions:
        if q["lang"] not in LANGS:
            raise SystemExit(f"{path}: {q['id']}: lang must be one of {LANGS}")
        must_refuse = q.get("off_topic") or q.get("unanswerable")
        if not must_refuse and not (q.get("keywords") and q.get("source")):
            raise SystemExit(f"{path}: {q['id']}: on-topic questions need keywords and source")
        src = q.get("source", [])
        q["source"] = [src] if isinstance(src, str) else list(src)
    return list(spec["corpus"]), questions


def build_index(config: RagConfig, data: Path, corpus: list[str], work: Path) -> dict[str, Any]:
    """Ingest ``corpus`` into ``config.index_path`` unless the cached index was built from the
    same files (names and sizes). Returns the stamp describing the index."""
    files = [data / rel for rel in corpus]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"corpus files not found: {missing}")
    stamp_file = work / "index-stamp.json"
    want = {"files": {rel: (data / rel).stat().st_size for rel in corpus}}
    if stamp_file.is_file() and config.index_path.is_dir():
        stamp = json.loads(stamp_file.read_text())
        if stamp.get("files") == want["files"]:
            print(f"index: cached at {config.index_path}", flush=True)
            return dict(stamp)
    shutil.rmtree(config.index_path, ignore_errors=True)
    t = time.perf_counter()
    with Ragstrata(config) as engine:
        report = engine.ingest(files)
        stats = engine.stats()
    if report.failures:
        raise SystemExit(f"ingest failures: {report.failures}")
    stamp = {
        **want,
        "chunks": report.chunks,
        "documents": report.added + report.updated + report.unchanged,
        "embedder": config.embedder.name,
        "ingest_s": round(time.perf_counter() - t, 1),
        "index_stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
    }
    stamp_file.write_text(json.dumps(stamp, indent=2) + "\n")
    print(f"index: built {stamp['documents']} documents, {stamp['chunks']} chunks", flush=True)
    return stamp


STAGES = (
    "embed_query",
    "dense",
    "bm25",
    "fusion",
    "evidence",
    "assemble",
    "prompt_eval",
    "generation",
    "generate",
    "verify",
    "total",
)
"""Per-stage columns of a row's ``stages_s`` (seconds): retrieval (``embed_query``, ``dense``,
``bm25``, ``fusion``), the evidence check, context assembly, the LLM's prompt evaluation and
token generation (llama.cpp's counters) and its whole call as the answerer saw it (``generate``:
both, plus sampling, detokenizing and streaming), the citation check and the whole question."""


def stages(answer: Answer) -> dict[str, float]:
    """Seconds per stage of one answer (stages that did not run are absent)."""
    ms = dict(answer.timings_ms)
    out = {k: ms[k] / 1000 for k in STAGES if k in ms}
    decode = answer.generation.decode if answer.generation is not None else None
    if decode is not None:
        out["prompt_eval"] = decode.prompt_eval_ms / 1000
        out["generation"] = decode.eval_ms / 1000
    return {k: round(v, 3) for k, v in out.items()}


def record(q: dict[str, Any], answer: Answer, seconds: float) -> dict[str, Any]:
    expected = q["source"]
    cits = answer.citations
    verified = [c for c in cits if c.verified]
    raw = str(diagnostics_json(answer).get("raw_answer", answer.text))
    found = not answer.refusal and keywords_found(answer.text, q.get("keywords", []))
    expected_verified = any(cites(c.source, expected) for c in verified)
    return {
        "id": q["id"],
        "lang": q["lang"],
        "off_topic": bool(q.get("off_topic")),
        "unanswerable": bool(q.get("unanswerable")),
        "question": q["question"],
        "refused": answer.refusal,
        "refused_by": diagnostics_json(answer).get("refused_by"),
        "answer": answer.text,
        "raw_answer": raw if raw != answer.text else None,
        "keyword_found": found,
        # diagnostic: the model wrote the fact, but the checked answer does not carry it
        "keyword_in_raw": keywords_found(raw, q.get("keywords", [])) if q.get("keywords") else None,
        "citations": len(cits),
        "verified": len(verified),
        "sources": [Path(c.source).as_posix() for c in cits],
        "expected_source_cited": any(cites(c.source, expected) for c in cits),
        "expected_source_verified": expected_verified,
        "correct": bool(q.get("keywords")) and found and expected_verified,
        "unsupported": (not answer.refusal) and any(not c.verified for c in cits),
        "evidence": diagnostics_json(answer).get("evidence"),
        "min_evidence": diagnostics_json(answer).get("min_evidence"),
        "usage": dict(answer.usage),
        "seconds": round(seconds, 1),
        # time to first token, from the question (retrieval and assembly included)
        "ttft_s": (
            round(answer.timings_ms["first_token"] / 1000, 2)
            if "first_token" in answer.timings_ms
            else None
        ),
        "stages_s": stages(answer),
        "decode": (
            answer.generation.decode.to_json()
            if answer.generation is not None and answer.generation.decode is not None
            else None
        ),
        "context_tokens": (
            answer.generation.context_tokens if answer.generation is not None else None
        ),
        "finish_reason": (
            answer.generation.finish_reason if answer.generation is not None else None
        ),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    on = [r for r in rows if not r["off_topic"] and not r.get("unanswerable")]
    off = [r for r in rows if r["off_topic"]]
    unanswerable = [r for r in rows if r.get("unanswerable")]
    answered = [r for r in rows if not r["refused"]]
    secs = [r["seconds"] for r in rows]
    secs_llm = [r["seconds"] for r in rows if r["refused_by"] != "evidence"]

    def rate(n: int, d: int) -> float | None:
        return round(n / d, 3) if d else None

    correct = sum(r["correct"] for r in on)
    unsupported = sum(r["unsupported"] for r in answered)
    off_refused = sum(r["refused"] for r in off)
    wrong_refusals = sum(r["refused"] for r in on)
    wrong_answers = sum(not r["refused"] and not r["correct"] for r in on)
    reached = [r for r in on if r["refused_by"] != "evidence"]
    return {
        "questions": len(rows),
        "on_topic": len(on),
        "correct": correct,
        "correct_rate": rate(correct, len(on)),
        "on_topic_llm_called": len(reached),
        "correct_llm_called": sum(r["correct"] for r in reached),
        # the model wrote the fact (checked or not): the model apart from the citation check
        "fact_written_llm_called": sum(bool(r["keyword_in_raw"]) for r in reached),
        "answered": len(answered),
        "wrong_answers": wrong_answers,
        "unsupported": unsupported,
        "unsupported_rate": rate(unsupported, len(answered)),
        "off_topic": len(off),
        "off_topic_refused": off_refused,
        "off_topic_refusal_rate": rate(off_refused, len(off)),
        "unanswerable": len(unanswerable),
        "unanswerable_refused": sum(r["refused"] for r in unanswerable),
        "unanswerable_refused_by_evidence": sum(
            r["refused_by"] == "evidence" for r in unanswerable
        ),
        "wrong_refusals": wrong_refusals,
        "wrong_refusals_by_evidence": len(on) - len(reached),
        "p50_s": round(statistics.median(secs), 1) if secs else None,
        "p50_s_llm": round(statistics.median(secs_llm), 1) if secs_llm else None,
        **speed(rows),
    }


def p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def speed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rows that reached the LLM: time to first token, prompt tokens (in the
    prompt, and evaluated after the KV-cache prefix reuse), prompt and generation tokens/s,
    and each stage's seconds."""
    llm = [r for r in rows if r.get("decode")]
    decode = [r["decode"] for r in llm]
    return {
        "llm_rows": len(llm),
        "p50_ttft_s": p50([r["ttft_s"] for r in llm if r.get("ttft_s") is not None]),
        "p50_prompt_tokens": p50([d["prompt_tokens"] for d in decode]),
        "p50_prompt_eval_tokens": p50([d["prompt_eval_tokens"] for d in decode]),
        "p50_prompt_tokens_per_s": p50(
            [d["prompt_tokens_per_s"] for d in decode if d["prompt_tokens_per_s"]]
        ),
        "p50_eval_tokens": p50([d["eval_tokens"] for d in decode]),
        "p50_eval_tokens_per_s": p50(
            [d["eval_tokens_per_s"] for d in decode if d["eval_tokens_per_s"]]
        ),
        "p50_stage_s": {
            k: p50([r["stages_s"][k] for r in llm if k in r.get("stages_s", {})]) for k in STAGES
        },
        "loadavg_1m_range": (
            [min(r["loadavg_1m"] for r in rows), max(r["loadavg_1m"] for r in rows)]
            if rows
            else None
        ),
    }


def frac(n: int, d: int) -> str:
    return f"{n}/{d}" if d else "-"


def print_tables(runs: dict[str, Any], question_ids: list[str]) -> None:
    print(
        "\n| model | lang | answered correctly | correct when the LLM was called "
        "| fact written, before the check | wrong answers shown | unsupported claims "
        "| off-topic refused | unanswerable refused | wrong refusals (by evidence) "
        "| p50 s (LLM called) |\n" + "|---" * 11 + "|"
    )
    for model, run in runs.items():
        for lang, s in run["summary"].items():
            print(
                f"| {model} | {lang} | {frac(s['correct'], s['on_topic'])} "
                f"| {frac(s['correct_llm_called'], s['on_topic_llm_called'])} "
                f"| {frac(s['fact_written_llm_called'], s['on_topic_llm_called'])} "
                f"| {frac(s['wrong_answers'], s['on_topic'])} "
                f"| {frac(s['unsupported'], s['answered'])} "
                f"| {frac(s['off_topic_refused'], s['off_topic'])} "
                f"| {frac(s['unanswerable_refused'], s['unanswerable'])} "
                f"| {frac(s['wrong_refusals'], s['on_topic'])} "
                f"({s['wrong_refusals_by_evidence']}) | {s['p50_s_llm']} |"
            )
    print(
        "\n| run | LLM calls | p50 s | p50 TTFT s | p50 prompt tokens (evaluated) "
        "| p50 prompt tok/s | p50 generated tokens | p50 gen tok/s | load avg 1m |\n"
        + "|---" * 9
        + "|"
    )
    for model, run in runs.items():
        s = run["summary"]["all"]
        if "llm_rows" not in s:
            continue
        load = s.get("loadavg_1m_range") or ["-", "-"]
        print(
            f"| {model} | {s['llm_rows']} | {s['p50_s_llm']} | {s['p50_ttft_s']} "
            f"| {s['p50_prompt_tokens']} ({s['p50_prompt_eval_tokens']}) "
            f"| {s['p50_prompt_tokens_per_s']} | {s['p50_eval_tokens']} "
            f"| {s['p50_eval_tokens_per_s']} | {load[0]}-{load[1]} |"
        )
    print("\n| run | " + " | ".join(STAGES) + " |\n|---|" + "---|" * len(STAGES))
    for model, run in runs.items():
        stage = run["summary"]["all"].get("p50_stage_s")
        if stage:
            print(f"| {model} | " + " | ".join(str(stage.get(k)) for k in STAGES) + " |")
    models = list(runs)
    print("\n| question | " + " | ".join(models) + " |\n|---|" + "---|" * len(models))
    for qid in question_ids:
        cells = []
        for model in models:
            row = next((r for r in runs[model]["rows"] if r["id"] == qid), None)
            cells.append(outcome(row))
        print(f"| {qid} | " + " | ".join(cells) + " |")
    print(
        "\nok = keyword + verified citation of the expected source; "
        "refused (by); wrong = answered without the fact or its source; "
        "! = carries an unverified citation"
    )


def outcome(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not run"
    if row["refused"]:
        mark = f"refused ({row['refused_by']})"
    elif row["off_topic"] or row.get("unanswerable"):
        mark = "answered (should refuse)"
    elif row["correct"]:
        mark = "ok"
    else:
        mark = "wrong"
    if row["unsupported"]:
        mark += " !"
    return f"{mark}, {row['seconds']:.0f} s"


VARIANT_KEYS = {
    "ctx": "context_tokens",
    "max": "max_tokens",
    "threads": "threads",
    "nb": "n_batch",
    "fa": "flash_attn",
}
"""Short keys of ``--variant NAME:key=value,...``: ``ctx`` (``llm.context_tokens``), ``max``
(``llm.max_tokens``), ``threads`` (``llm.threads``), ``nb`` (llama.cpp ``n_batch`` =
``n_ubatch``), ``fa`` (flash attention, 0/1)."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """One setting of the local LLM: ``llm`` (the configuration) and llama.cpp's ``n_batch``
    and ``flash_attn`` (options of the generator, not of the configuration)."""

    name: str
    llm: LLMConfig
    n_batch: int
    flash_attn: bool

    def run_key(self, model: str) -> str:
        return model if self.name == "default" else f"{model}/{self.name}"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "llm": dataclasses.asdict(self.llm),
            "n_batch": self.n_batch,
            "flash_attn": self.flash_attn,
        }


def parse_variant(spec: str, model: str, threads: int) -> Variant:
    """``NAME`` or ``NAME:ctx=1200,nb=256,fa=1`` (see :data:`VARIANT_KEYS`) for ``model``."""
    name, _, rest = spec.partition(":")
    llm_kw: dict[str, Any] = {"threads": threads}
    n_batch, flash_attn = DEFAULT_N_BATCH, DEFAULT_FLASH_ATTN
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in VARIANT_KEYS:
            raise SystemExit(f"--variant {spec!r}: unknown key {key!r}; use {list(VARIANT_KEYS)}")
        if key == "nb":
            n_batch = int(value)
        elif key == "fa":
            flash_attn = value not in ("0", "false", "no")
        else:
            llm_kw[VARIANT_KEYS[key]] = int(value)
    llm = LLMConfig(provider="local", local_model=model, **llm_kw)
    return Variant(name or "default", llm, n_batch, flash_attn)


def make_generator(variant: Variant) -> LlamaGenerator:
    return LlamaGenerator.from_config(
        variant.llm, n_batch=variant.n_batch, flash_attn=variant.flash_attn
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(LOCAL_LLMS), choices=LOCAL_LLMS)
    parser.add_argument(
        "--threads", type=int, default=2, help="llm.threads (0: one per physical core)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME[:k=v,...]",
        help="a setting to run (repeatable; several are interleaved question by question, "
        "each with its own loaded model); keys: " + ", ".join(VARIANT_KEYS),
    )
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these question ids")
    parser.add_argument("--resume", action="store_true", help="skip questions already recorded")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragstrata-llm-answers"))
    parser.add_argument("--out", type=Path, default=RESULTS / "llm_answers.json")
    parser.add_argument(
        "--report", action="store_true", help="run nothing: re-summarize --out and print it"
    )
    parser.add_argument(
        "--regrade",
        metavar="RUN",
        help="run no model: re-check run RUN's recorded answers with the current code and "
        "record them as run RUN+regraded (speed fields copied from RUN)",
    )
    args = parser.parse_args()

    corpus, questions = load_questions(args.questions)
    if args.report:
        saved = json.loads(args.out.read_text())
        write(args.out, saved, saved["index"], saved["runs"])
        print_tables(saved["runs"], [q["id"] for q in questions])
        return
    if args.only:
        unknown = set(args.only) - {q["id"] for q in questions}
        if unknown:
            raise SystemExit(f"unknown question ids: {sorted(unknown)}")
    selected = [q for q in questions if not args.only or q["id"] in args.only]
    args.work.mkdir(parents=True, exist_ok=True)
    # The default configuration, independent of RAGSTRATA_* variables and config files.
    config = RagConfig(home=args.work / "home", index_dir=args.work / "index")
    stamp = build_index(config, args.data, corpus, args.work)

    results: dict[str, Any] = {"runs": {}}
    if args.out.is_file():
        results = json.loads(args.out.read_text())
    runs: dict[str, Any] = results.setdefault("runs", {})
    if args.regrade:
        regrade(config, runs, args.regrade, questions)
        write(args.out, results, stamp, runs)
        print_tables(runs, [q["id"] for q in questions])
        print(f"\nwrote {args.out}")
        return
    with Ragstrata(config) as base:
        embedder = base.embedder
        embedder.embed_query("warm-up")
    for model in args.models:
        variants = [parse_variant(v, model, args.threads) for v in args.variant or ["default"]]
        with contextlib.ExitStack() as stack:
            lanes = []
            for variant in variants:
                key = variant.run_key(model)
                generator = make_generator(variant)
                cfg = dataclasses.replace(config, llm=variant.llm)
                if len(variants) > 1:  # an engine holds its index's lock: one copy per variant
                    copy = args.work / f"index-{variant.name}"
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(config.index_path, copy)
                    cfg = dataclasses.replace(cfg, index_dir=copy)
                engine = stack.enter_context(Ragstrata(cfg, embedder=embedder, generator=generator))
                t = time.perf_counter()
                generator.warm_up()  # once per process: every question reuses the loaded model
                load_s = time.perf_counter() - t
                previous = runs.get(key, {}).get("rows", [])
                done = {r["id"]: r for r in previous} if args.resume or args.only else {}
                # one session per invocation; rows of earlier sessions are kept when merged
                sessions = list(runs.get(key, {}).get("sessions", [])) if done else []
                session: dict[str, Any] = {
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "model_load_s": round(load_s, 1),
                    "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                    "interleaved_with": [v.run_key(model) for v in variants if v is not variant],
                    "questions": [
                        q["id"] for q in selected if q["id"] not in done or not args.resume
                    ],
                }
                sessions.append(session)
                run = {
                    "generator": generator.name,
                    "llm": dataclasses.asdict(variant.llm),
                    "variant": variant.describe(),
                    "sessions": sessions,
                }
                lanes.append((key, engine, done, session, run))
            for i, q in enumerate(selected):
                # rotate the order, so no setting always runs right after another
                for key, engine, done, _session, run in (
                    lanes[i % len(lanes) :] + lanes[: i % len(lanes)]
                ):
                    if args.resume and q["id"] in done:
                        continue
                    t = time.perf_counter()
                    answer = engine.ask(q["question"])
                    row = record(q, answer, time.perf_counter() - t)
                    done[q["id"]] = row
                    ttft = f", ttft {row['ttft_s']:.1f} s" if row["ttft_s"] is not None else ""
                    print(
                        f"[{key}] {outcome(row)}{ttft} | {q['id']}: {answer.text[:120]!r}",
                        flush=True,
                    )
                    # save after every answer: a run of an hour survives an interruption
                    run["rows"] = [done[x["id"]] for x in questions if x["id"] in done]
                    runs[key] = run
                    write(args.out, results, stamp, runs)
            for key, _engine, done, session, run in lanes:
                session["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
                run["rows"] = [done[x["id"]] for x in questions if x["id"] in done]
                runs[key] = run
        write(args.out, results, stamp, runs)
    print_tables(runs, [q["id"] for q in questions])
    print(f"\nwrote {args.out}")


SPEED_FIELDS = (
    "usage",
    "seconds",
    "ttft_s",
    "stages_s",
    "decode",
    "context_tokens",
    "finish_reason",
    "loadavg_1m",
)
"""Fields of a row that a regrade copies from the recorded run (no model runs)."""


def regrade(
    config: RagConfig, runs: dict[str, Any], key: str, questions: list[dict[str, Any]]
) -> None:
    """Run ``key``'s recorded model outputs through the current retrieval, evidence rule,
    assembly and citation check (:class:`~ragstrata.testing.fakes.RecordedChatModel`), as run
    ``key+regraded``. A question the model declined, or the evidence rule refused, keeps its
    row; one that reaches the model now but did not then is skipped and listed."""
    if key not in runs:
        raise SystemExit(f"no run {key!r} in the results: {sorted(runs)}")
    source = runs[key]
    llm = LLMConfig(**source["llm"])
    model = RecordedChatModel(LlamaGenerator.from_config(llm))
    by_id = {q["id"]: q for q in questions}
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    with Ragstrata(dataclasses.replace(config, llm=llm), generator=model) as engine:
        for old in source["rows"]:
            q = by_id[old["id"]]
            written = old["raw_answer"] or (None if old["refused"] else old["answer"])
            if written is None:  # declined by the model or refused by the evidence rule
                rows.append(dict(old))
                continue
            model.text = written
            answer = engine.ask(q["question"])
            if answer.generation is None or answer.generation.raw_answer is None:
                skipped.append(q["id"])
                continue
            row = record(q, answer, old["seconds"])
            row.update({k: old[k] for k in SPEED_FIELDS if k in old})
            rows.append(row)
            print(f"[{key}+regraded] {outcome(row)} | {q['id']}", flush=True)
    runs[f"{key}+regraded"] = {
        **{k: v for k, v in source.items() if k not in ("rows", "summary")},
        "regraded_from": key,
        "regraded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "regrade_skipped": skipped,
        "rows": rows,
    }


def write(out: Path, results: dict[str, Any], stamp: dict[str, Any], runs: dict[str, Any]) -> None:
    for run in runs.values():
        rows = run.get("rows", [])
        summary = {lang: summarize([r for r in rows if r["lang"] == lang]) for lang in LANGS}
        summary["all"] = summarize(rows)
        run["summary"] = summary
        run["complete"] = len(rows)
    results["index"] = {k: v for k, v in stamp.items() if k != "index_stats"}
    results["cpu_count"] = os.cpu_count()
    results["runs"] = runs
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
