"""The :class:`~ragstrata.testing.answerer.AnswererContract` for every answerer: the extractive
answerer (with the hashing embedder) and the LLM answerer over a scripted chat model."""

from __future__ import annotations

from collections.abc import Sequence

from ragstrata.config import LLMConfig
from ragstrata.generate.answer import LLMAnswerer
from ragstrata.generate.answerer import Answerer
from ragstrata.generate.citations import CitationChecker
from ragstrata.generate.evidence import HandRule
from ragstrata.generate.extractive import ExtractiveAnswerer
from ragstrata.testing.answerer import AnswererContract
from ragstrata.testing.fakes import HashEmbedder, ScriptedChatModel, make_hit
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.tokens import FunctionCounter
from ragstrata.types import Hit

QUESTION = "What does the installer need?"
INSTALL = "The installer needs Python 3.11 and four gigabytes of memory."
BILLING = "Invoices are emailed on the first day of each month."


def _hits() -> list[Hit]:
    return [make_hit("install", INSTALL, 1, dense=0.7), make_hit("billing", BILLING, 2, dense=0.2)]


class TestExtractiveAnswerer(AnswererContract):
    def make_answerer(self) -> Answerer:
        return ExtractiveAnswerer(
            HashEmbedder(),  # type: ignore[arg-type]
            Analyzer(),
            counter=FunctionCounter(str.split),
            evidence_rule=HandRule(0.5),
        )

    def answerable(self) -> tuple[str, Sequence[Hit]]:
        return QUESTION, _hits()


class TestLLMAnswerer(AnswererContract):
    def make_answerer(self) -> Answerer:
        analyzer = Analyzer()
        return LLMAnswerer(
            ScriptedChatModel("It needs Python 3.11 and four gigabytes of memory [1]."),
            analyzer,
            LLMConfig(provider="local"),
            evidence_rule=HandRule(0.5),
            checker=CitationChecker(HashEmbedder(), analyzer),  # type: ignore[arg-type]
        )

    def answerable(self) -> tuple[str, Sequence[Hit]]:
        return QUESTION, _hits()
