"""Answer plumbing of the service without a server: :class:`ThreadedEvents` (a blocking event
generator relayed to async code as it produces) and the wire JSON of answers (the LLM fields:
``verified``/``support``, ``usage``, ``generator``, ``conflict``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator

import pytest

from ragstrata.render import answer_json, citation_json
from ragstrata.service.streaming import ThreadedEvents
from ragstrata.types import Answer, Citation, Generation, VersionConflict

WAIT_S = 10.0


class Gated:
    """A generator of ``0, 1, 2...`` that waits for ``go`` before each item after the first
    and records when it ended and whether it was closed."""

    def __init__(self, items: int, *, fail_at: int | None = None) -> None:
        self.items = items
        self.fail_at = fail_at
        self.go = threading.Event()
        self.finished = threading.Event()
        self.closed_early = False

    def __call__(self) -> Generator[int, None, None]:
        try:
            for i in range(self.items):
                if i:
                    assert self.go.wait(WAIT_S), "the test never let the generator go on"
                if i == self.fail_at:
                    raise ValueError(f"boom at {i}")
                yield i
        except GeneratorExit:
            self.closed_early = True
            raise
        finally:
            self.finished.set()


def test_items_arrive_while_the_generator_still_runs() -> None:
    gen = Gated(3)

    async def consume() -> list[int]:
        events = ThreadedEvents(gen())
        first = await asyncio.wait_for(anext(events), WAIT_S)  # before "go": relayed at once
        assert not gen.finished.is_set()
        gen.go.set()
        return [first] + [item async for item in events]

    assert asyncio.run(consume()) == [0, 1, 2]
    assert gen.finished.is_set() and not gen.closed_early


def test_an_error_is_raised_where_it_happened() -> None:
    gen = Gated(3, fail_at=1)
    gen.go.set()

    async def consume() -> list[int]:
        seen: list[int] = []
        with pytest.raises(ValueError, match="boom at 1"):
            async for item in ThreadedEvents(gen()):
                seen.append(item)
        return seen

    assert asyncio.run(consume()) == [0]
    assert gen.finished.wait(WAIT_S)


def test_close_stops_and_closes_the_generator() -> None:
    gen = Gated(5)

    async def consume() -> ThreadedEvents[int]:
        events = ThreadedEvents(gen())
        assert await asyncio.wait_for(anext(events), WAIT_S) == 0
        events.close()  # the client went away
        with pytest.raises(StopAsyncIteration):
            await anext(events)
        return events

    events = asyncio.run(consume())
    gen.go.set()  # the generator produces its next item, sees the stop and is closed
    assert events.join(WAIT_S)
    assert gen.finished.is_set() and gen.closed_early


def _citation(label: int, *, verified: bool = True, support: float | None = None) -> Citation:
    return Citation(
        label=label,
        chunk_id=f"c{label}",
        doc_id="d1",
        source="/srv/data/tenants/acme/docs/uploads/guide.md",
        heading_path=("Guide", "Errors"),
        start=0,
        end=40,
        score=0.5,
        quote="The error means the server closed the connection.",
        verified=verified,
        support=support,
    )


def test_extractive_answer_has_the_llm_fields_empty() -> None:
    answer = Answer(
        question="q?",
        text="A [1].",
        refusal=False,
        citations=(_citation(1),),
        legend=("[1] = guide.md",),
        timings_ms={"total": 1.0},
    )
    data = answer_json(answer)
    assert data["usage"] is None and data["generator"] == "extractive"
    assert data["conflict"] is False and data["conflicts"] == []
    assert data["citations"][0]["verified"] is True and data["citations"][0]["support"] is None


def test_llm_answer_maps_usage_conflicts_and_the_citation_check() -> None:
    conflict = {"title": "Limits", "kept": "1.10", "dropped": ["1.9", "1.2"]}
    answer = Answer(
        question="q?",
        text="A [1]. B [2].",
        refusal=False,
        citations=(_citation(1, support=0.91), _citation(2, verified=False, support=0.12)),
        legend=("[1] = x", "[2] = y"),
        timings_ms={"generate": 5.0, "total": 9.0},
        usage={"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127},
        generator="openai:m",
        conflicts=(VersionConflict("Limits", "1.10", ("1.9", "1.2")),),
        generation=Generation(context_tokens=50, finish_reason="stop", raw_answer="A [1]. B [2]."),
    )
    data = answer_json(answer, source=lambda path: path.rsplit("/", 1)[-1])
    assert data["usage"] == {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}
    assert data["generator"] == "openai:m" and data["conflict"] is True
    assert data["conflicts"] == [conflict]
    assert [(c["verified"], c["support"]) for c in data["citations"]] == [
        (True, 0.91),
        (False, 0.12),
    ]
    assert data["legend"] == ["[1] = guide.md > Guide > Errors", "[2] = guide.md > Guide > Errors"]
    assert "raw_answer" not in data and "metadata" not in data  # diagnostics stay server-side
    # usage without a total gets one
    partial = Answer(
        question="q?",
        text="",
        refusal=True,
        citations=(),
        legend=(),
        timings_ms={},
        usage={"prompt_tokens": 3, "completion_tokens": 2},
    )
    assert answer_json(partial)["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "total_tokens": 5,
    }


def test_citation_json_names_the_source_through_the_view() -> None:
    data = citation_json(_citation(3, verified=False, support=0.2), source=lambda s: "guide.md")
    assert data["source"] == "guide.md" and data["label"] == 3
    assert data["verified"] is False and data["support"] == 0.2
