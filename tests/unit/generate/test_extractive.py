"""The extractive answerer with the real embedder and analyzer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragstrata.assemble.context import assemble
from ragstrata.generate.extractive import ExtractiveAnswerer, Quote, clean_sentence, render
from ragstrata.text.analyzer import Analyzer
from ragstrata.types import Chunk, Hit, RetrieverHit


def source(doc: str, text: str, rank: int) -> Hit:
    chunk = Chunk(
        chunk_id=doc,
        doc_id=doc,
        source=f"/c/{doc}.md",
        title=doc,
        section_path=(doc,),
        text=text,
        start=0,
        end=len(text),
        index=0,
        total=1,
        token_count=1,
        parent_id="p",
        content_hash="h",
    )
    return Hit(chunk, rank, 1.0, (RetrieverHit("bm25", rank, 1.0),))


def test_clean_sentence_strips_markup_but_keeps_placeholders() -> None:
    assert (
        clean_sentence("- Use <Sandpack>the hook</Sandpack> {/*x*/} here.") == "Use the hook here."
    )
    assert clean_sentence("Set RAGSTRATA_<SECTION>_<FIELD>.") == "Set RAGSTRATA_<SECTION>_<FIELD>."


def test_render_renumbers_the_markers_and_not_the_quoted_text() -> None:
    quotes = [
        Quote(2, 0, 24, "Write `[1] [2]` to cite.", 0.9),
        Quote(1, 0, 14, "It is done now.", 0.8),
    ]
    assert render(quotes) == "Write `[1] [2]` to cite. [2] It is done now. [1]"
    assert render(quotes, {2: 1, 1: 2}) == "Write `[1] [2]` to cite. [1] It is done now. [2]"


@pytest.mark.slow
def test_picks_the_answering_sentence_and_cites_its_source(minilm: Any, tmp_path: Path) -> None:
    hits = [
        source("billing", "Invoices are emailed monthly. Refunds take ten business days.", 1),
        source(
            "errors",
            "# Errors\n\n```python\n# The error code E42 is raised here\nraise E42()\n```\n\n"
            "The error E42 means the disk is full. Free space and retry the job.",
            2,
        ),
    ]
    from ragstrata.embed.local import MiniLMEmbedder

    assert isinstance(minilm, MiniLMEmbedder)
    ctx = assemble(hits, counter=minilm.counter, budget_tokens=1000)
    answerer = ExtractiveAnswerer(minilm, Analyzer(), max_sentences=1)
    out = answerer.pick_quotes("What does error E42 mean?", ctx)
    assert out.text == "The error E42 means the disk is full. [2]"
    quote = out.quotes[0]
    assert hits[1].chunk.text[quote.start : quote.end] == "The error E42 means the disk is full."
    # code inside fences and headings are never quoted
    every = ExtractiveAnswerer(minilm, Analyzer(), max_sentences=10, relative_floor=0.0)
    texts = [q.text for q in every.pick_quotes("E42", ctx).quotes]
    assert not any("raise" in t or "is raised here" in t or t.startswith("#") for t in texts)


@pytest.mark.slow
def test_nothing_to_quote_gives_an_empty_answer(minilm: Any) -> None:
    ctx = assemble(
        [source("code", "```\nx = 1\n```", 1)], counter=minilm.counter, budget_tokens=100
    )
    out = ExtractiveAnswerer(minilm, Analyzer()).pick_quotes("what is x?", ctx)
    assert out.text == "" and out.quotes == ()
