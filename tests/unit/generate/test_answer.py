"""The LLM answer flow with a scripted generator: refusal, streaming, citations, conflicts."""

from __future__ import annotations

from ragstrata.config import LLMConfig
from ragstrata.generate.answer import LLMAnswerer
from ragstrata.generate.answerer import AnswerEvent, TokenEvent, answer_from_events
from ragstrata.generate.citations import CitationChecker
from ragstrata.generate.evidence import HandRule
from ragstrata.generate.prompt import REFUSALS
from ragstrata.testing.fakes import HashEmbedder, ScriptedChatModel, make_hit
from ragstrata.text.analyzer import Analyzer

INSTALL = "The installer needs Python 3.11 and four gigabytes of memory."
BILLING = "Invoices are emailed on the first day of each month."


def answerer(gen: ScriptedChatModel, *, min_evidence: float = 0.5) -> LLMAnswerer:
    analyzer = Analyzer()
    return LLMAnswerer(
        gen,
        analyzer,
        LLMConfig(provider="local"),
        evidence_rule=HandRule(min_evidence),
        checker=CitationChecker(HashEmbedder(), analyzer),
    )


def run(a: LLMAnswerer, question: str, hits: list) -> list:  # type: ignore[type-arg]
    return list(a.stream(question, hits, timings={}, started=0.0))


def test_answers_streams_and_verifies() -> None:
    gen = ScriptedChatModel("It needs Python 3.11 and four gigabytes of memory [1].")
    hits = [make_hit("install", INSTALL, 1, dense=0.7), make_hit("billing", BILLING, 2, dense=0.2)]
    events = run(answerer(gen), "What does the installer need?", hits)
    tokens = [e.text for e in events if isinstance(e, TokenEvent)]
    assert "".join(tokens) == "It needs Python 3.11 and four gigabytes of memory [1]."
    assert isinstance(events[-1], AnswerEvent)
    answer = events[-1].answer
    assert not answer.refusal and answer.generator == "scripted:test"
    assert answer.citations[0].doc_id == "install" and answer.citations[0].verified
    assert answer.usage["completion_tokens"] > 0 and answer.usage["prompt_tokens"] > 0
    assert {"assemble", "generate", "verify", "total"} <= set(answer.timings_ms)
    assert answer.evidence is not None and answer.evidence.evidence.dense == 0.7


def test_refuses_before_calling_the_llm_in_the_question_language() -> None:
    gen = ScriptedChatModel("should not be used")
    hits = [make_hit("billing", BILLING, 1, dense=0.1)]
    answer = answer_from_events(iter(run(answerer(gen), "¿Quién ganó el mundial de fútbol?", hits)))
    assert answer.refusal and answer.text == REFUSALS["es"] and not answer.citations
    assert answer.refused_by == "evidence" and not gen.calls
    assert answer_from_events(iter(run(answerer(gen), "Who won?", []))).refusal


def test_saying_what_the_sources_lack_beside_a_verified_fact_is_an_answer() -> None:
    """Review 41: "the sources do not say X" followed by a verified fact was refused as the
    model's own refusal; alone, it still is one."""
    hits = [make_hit("install", INSTALL, 1, dense=0.7)]
    question = "What does the installer need?"
    both = ScriptedChatModel(
        "The sources do not mention the operating system. "
        "The installer needs Python 3.11 and four gigabytes of memory."
    )
    answer = answer_from_events(iter(run(answerer(both), question, hits)))
    assert not answer.refusal and "[1]" in answer.text
    assert answer.citations[0].doc_id == "install"
    alone = ScriptedChatModel("The sources do not mention the operating system.")
    answer = answer_from_events(iter(run(answerer(alone), question, hits)))
    assert answer.refusal and answer.refused_by == "llm"


def test_rerank_min_score_refuses_before_calling_the_llm() -> None:
    """Review 39: ``rerank.min_score`` refused the extractive answer and let the LLM answer
    (the threshold never reached the LLM answerer's evidence check)."""
    import dataclasses

    from ragstrata.types import RetrieverHit

    hit = make_hit("install", INSTALL, 1, dense=0.7)
    reranked = dataclasses.replace(hit, explain=(*hit.explain, RetrieverHit("rerank", 1, 0.11)))
    gen = ScriptedChatModel("It needs Python 3.11 [1].")
    gated = LLMAnswerer(
        gen,
        Analyzer(),
        LLMConfig(provider="local"),
        evidence_rule=HandRule(0.5),
        checker=None,
        min_rerank=50.0,
    )
    answer = answer_from_events(iter(run(gated, "What does the installer need?", [reranked])))
    assert answer.refusal and answer.refused_by == "rerank" and not gen.calls
    gated.min_rerank = 0.0
    answer = answer_from_events(iter(run(gated, "What does the installer need?", [reranked])))
    assert not answer.refusal and gen.calls


def test_llm_refusal_is_recognized() -> None:
    gen = ScriptedChatModel(REFUSALS["en"])
    hits = [make_hit("install", INSTALL, 1, dense=0.9)]
    answer = answer_from_events(iter(run(answerer(gen), "What does the installer need?", hits)))
    assert answer.refusal and answer.refused_by == "llm"
    assert answer.text == REFUSALS["en"] and answer.usage["completion_tokens"] > 0
    # what the model wrote stays readable (trial 25: null on such refusals)
    assert answer.generation is not None and answer.generation.raw_answer == REFUSALS["en"]


def test_newest_version_wins_and_conflict_is_marked() -> None:
    old = make_hit(
        "v1",
        "The limit is 100 requests per minute.",
        1,
        title="Limits",
        metadata={"version": "1.9"},
    )
    new = make_hit(
        "v2",
        "The limit is 250 requests per minute.",
        2,
        title="Limits",
        metadata={"version": "1.10"},
    )
    gen = ScriptedChatModel("The limit is 250 requests per minute [1].")
    answer = answer_from_events(iter(run(answerer(gen), "What is the rate limit?", [old, new])))
    assert answer.conflict
    assert [c.to_json() for c in answer.conflicts] == [
        {"title": "Limits", "kept": "1.10", "dropped": ["1.9"]}
    ]
    assert [c.doc_id for c in answer.citations] == ["v2"]
    prompt = gen.calls[0][1].content
    assert "250" in prompt and "100 requests" not in prompt


def test_an_answer_without_citations_is_not_shown() -> None:
    gen = ScriptedChatModel("PWNED")
    hits = [make_hit("install", INSTALL, 1, dense=0.9)]
    answer = answer_from_events(iter(run(answerer(gen), "What does the installer need?", hits)))
    assert answer.refusal and answer.refused_by == "no_citations"
    assert answer.generation is not None and answer.generation.raw_answer == "PWNED"
    assert "PWNED" not in answer.text


def test_an_answer_cut_at_max_tokens_keeps_its_complete_sentences() -> None:
    """A re-test of trial 25 (2026-12-06): "Cada empleado tiene derecho a 23 [1]", cut at the
    token limit, was shown as a complete, verified answer."""
    import pytest

    from ragstrata.errors import GenerationError

    hits = [make_hit("install", INSTALL, 1, dense=0.7), make_hit("billing", BILLING, 2, dense=0.2)]
    cut = ScriptedChatModel(
        "It needs Python 3.11 and four gigabytes of memory [1]. Invoices are emailed on",
        finish_reason="length",
    )
    answer = answer_from_events(iter(run(answerer(cut), "What does the installer need?", hits)))
    assert answer.text == "It needs Python 3.11 and four gigabytes of memory [1]."
    nothing = ScriptedChatModel("It needs Python 3.11 and four", finish_reason="length")
    with pytest.raises(GenerationError, match="max_tokens"):
        run(answerer(nothing), "What does the installer need?", hits)
    filtered = ScriptedChatModel("It needs Python [1].", finish_reason="content_filter")
    with pytest.raises(GenerationError, match="content filter"):
        run(answerer(filtered), "What does the installer need?", hits)


def test_a_cut_answer_drops_a_dangling_item_and_keeps_its_markers() -> None:
    """A review (2026-12-06): "... [1].\\n2. Configurar el" kept "2.", and "... año. [1, 2]
    Además" lost its marker."""
    from ragstrata.generate.answer import _finished

    assert _finished("Pasos:\n1. Instalar [1].\n2. Configurar el", "length", 9, "m") == (
        "Pasos:\n1. Instalar [1]."
    )
    assert _finished("Son 23 días al año. [1, 2] Además, cada", "length", 9, "m") == (
        "Son 23 días al año. [1, 2]"
    )
    assert _finished("Todo [1]. Y más", "stop", 9, "m") == "Todo [1]. Y más"


def test_a_quote_from_another_chunk_of_the_section_names_that_chunk() -> None:
    """A review (2026-12-06): a citation of an expanded section named the retrieved chunk,
    and the service then showed a passage without the quote."""
    first = make_hit("guide", INSTALL, 2, start=0, parent="sec")
    second = make_hit("guide", BILLING, 1, start=len(INSTALL) + 1, parent="sec")
    analyzer = Analyzer()
    llm = LLMAnswerer(
        ScriptedChatModel("It needs Python 3.11 and four gigabytes of memory [1]."),
        analyzer,
        LLMConfig(provider="local"),
        evidence_rule=HandRule(0.0),
        checker=CitationChecker(HashEmbedder(), analyzer),
        parents=lambda chunk: [first.chunk, second.chunk],
    )
    answer = answer_from_events(iter(run(llm, "What does the installer need?", [second])))
    assert not answer.refusal, answer
    (cited,) = answer.citations
    assert cited.chunk_id == first.chunk.chunk_id
    assert [c.chunk_id for c in answer.cited_chunks] == [first.chunk.chunk_id]
