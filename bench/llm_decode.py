"""How fast does the local LLM read a prompt and write an answer, per llama.cpp setting?

Usage: python bench/llm_decode.py [--model 1.5b] [--prompt-tokens 1100] [--gen-tokens 48]
                                  [--rounds 2] [--setting threads=2,nb=512,fa=0 ...]
                                  [--data ../shared/data] [--out bench/results/llm_decode.json]

One grounded-answer prompt of about ``--prompt-tokens`` tokens (the system rules of
``ragstrata.generate.prompt`` and one ``<source>`` block cut from the FastAPI CORS page of the
shared corpora, then a question) is answered by each setting with at most ``--gen-tokens``
tokens, ``--rounds`` times, the settings interleaved (round-robin, the order rotated every round)
so that a change of machine load touches all of them alike. Each setting has its own loaded
model (:class:`~ragstrata.generate.llama_local.LlamaGenerator`). Every call starts with a
different first word ("Run 3."), so nothing of the prompt is reused from the KV cache and the
whole prompt is evaluated: this measures a cold prompt, the worst case of a question.

Recorded per call, from llama.cpp's counters (:class:`~ragstrata.types.DecodeStats`): prompt
tokens evaluated and their milliseconds, tokens generated and their milliseconds; and the load
average. Prints per setting the median prompt tokens/s and generation tokens/s and writes
``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from ragstrata.generate.base import ChatMessage
from ragstrata.generate.llama_local import LlamaGenerator
from ragstrata.generate.prompt import REFUSALS, SYSTEM_RULES

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
SOURCE = "fastapi-docs-md/en/docs/tutorial/cors.md"
QUESTION = "Which CORSMiddleware argument indicates that cookies should be supported?"
DEFAULT_SETTINGS = (
    "threads=2,nb=512,fa=0",
    "threads=2,nb=256,fa=0",
    "threads=2,nb=512,fa=1",
    "threads=2,nb=256,fa=1",
    "threads=1,nb=512,fa=0",
)


def parse(setting: str) -> dict[str, int]:
    """``threads=2,nb=512,fa=0`` -> ``{"threads": 2, "nb": 512, "fa": 0}``."""
    out = {"threads": 2, "nb": 512, "fa": 0}
    for item in filter(None, setting.split(",")):
        key, _, value = item.partition("=")
        if key not in out:
            raise SystemExit(f"--setting {setting!r}: unknown key {key!r} (threads, nb, fa)")
        out[key] = int(value)
    return out


def prompt(text: str, tokens: int, generator: LlamaGenerator, run: int) -> list[ChatMessage]:
    """System rules (prefixed by ``Run n.``), one source cut to ``tokens`` tokens, the
    question."""
    counter = generator.counter
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix of the page within the budget
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    system = f"Run {run}. " + SYSTEM_RULES.format(
        refusal=REFUSALS["en"], language="English", max_sentences=4
    )
    user = (
        f'Sources:\n\n<source id="1" document="{SOURCE}" section="CORS">\n{text[:lo]}\n'
        f"</source>\n\nQuestion: {QUESTION}"
    )
    return [ChatMessage("system", system), ChatMessage("user", user)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="1.5b")
    parser.add_argument("--prompt-tokens", type=int, default=1100)
    parser.add_argument("--gen-tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--setting", action="append", metavar="threads=2,nb=512,fa=0")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "llm_decode.json")
    args = parser.parse_args()

    text = (args.data / SOURCE).read_text(encoding="utf-8")
    settings = list(dict.fromkeys(args.setting or DEFAULT_SETTINGS))
    generators: dict[str, LlamaGenerator] = {}
    loads: dict[str, float] = {}
    for name in settings:
        knobs = parse(name)
        gen = LlamaGenerator(
            local_model=args.model,
            threads=knobs["threads"],
            n_batch=knobs["nb"],
            flash_attn=bool(knobs["fa"]),
            max_tokens=args.gen_tokens,
        )
        t = time.perf_counter()
        gen.warm_up()
        loads[name] = round(time.perf_counter() - t, 2)
        generators[name] = gen
    rows: list[dict[str, Any]] = []
    run = 0
    for r in range(args.rounds):
        order = settings[r % len(settings) :] + settings[: r % len(settings)]
        for name in order:
            run += 1
            gen = generators[name]
            messages = prompt(text, args.prompt_tokens, gen, run)
            t = time.perf_counter()
            done = None
            first: float | None = None
            for delta in gen.stream(messages):
                if delta.text and first is None:
                    first = time.perf_counter()
                if delta.done:
                    done = delta
            wall = time.perf_counter() - t
            assert done is not None and done.decode is not None
            d = done.decode
            row = {
                "setting": name,
                "round": r,
                "wall_s": round(wall, 2),
                "ttft_s": round(first - t, 2) if first is not None else None,
                **d.to_json(),
                "loadavg_1m": round(os.getloadavg()[0], 2),
            }
            rows.append(row)
            print(
                f"{name}: prompt {d.prompt_eval_tokens} tok {d.prompt_tokens_per_s or 0:.1f}/s, "
                f"gen {d.eval_tokens} tok {d.eval_tokens_per_s or 0:.1f}/s, wall {wall:.1f} s, "
                f"load {row['loadavg_1m']}",
                flush=True,
            )
    summary = {}
    print(
        "\n| setting | prompt tokens | p50 prompt tok/s | p50 gen tok/s | p50 wall s "
        "| load avg 1m |\n|---|---|---|---|---|---|"
    )
    for name in settings:
        mine = [x for x in rows if x["setting"] == name]
        pp = statistics.median(x["prompt_tokens_per_s"] for x in mine)
        tg = statistics.median(x["eval_tokens_per_s"] for x in mine)
        wall = statistics.median(x["wall_s"] for x in mine)
        load = [min(x["loadavg_1m"] for x in mine), max(x["loadavg_1m"] for x in mine)]
        summary[name] = {
            "p50_prompt_tokens_per_s": round(pp, 1),
            "p50_eval_tokens_per_s": round(tg, 1),
            "p50_wall_s": round(wall, 2),
            "model_load_s": loads[name],
            "loadavg_1m_range": load,
        }
        print(
            f"| {name} | {mine[0]['prompt_eval_tokens']} | {pp:.1f} | {tg:.1f} | {wall:.1f} "
            f"| {load[0]}-{load[1]} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "model": args.model,
                "prompt_tokens": args.prompt_tokens,
                "gen_tokens": args.gen_tokens,
                "rounds": args.rounds,
                "cpu_count": os.cpu_count(),
                "summary": summary,
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
