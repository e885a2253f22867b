"""Conformance suite of the :class:`~ragstrata.text.tokens.TokenCounter` protocol.

Subclass :class:`TokenCounterContract` and provide a ``counter`` pytest fixture. Promises
checked: ``count("") == 0`` and positive for text; ``count_many`` equals ``count`` on each text,
in order; ``cut(text, budget)`` is at least 1 and at most ``len(text)``, is ``len(text)`` when the
whole text fits, and otherwise leaves a prefix within budget (a single code point may exceed
it); a budget under 1 raises ChunkingError. ragstrata's counters are subclassed in
``tests/contract/test_token_counter_contract.py``.
"""

from __future__ import annotations

import pytest

from ragstrata.errors import ChunkingError
from ragstrata.text.tokens import TokenCounter

SAMPLES: tuple[str, ...] = (
    "Dependencies with yield run their exit code after the response is sent.",
    "El estado de un componente se conserva mientras se renderice en la misma posición.",
    "def f(x: int) -> int:\n    return x + ERR_CONN_RESET",
    "東京タワー😀 and naïve café",
    "x" * 3000,
    "a",
)
"""Texts every counter is checked on: prose, Spanish, code, CJK and emoji, a long run."""


class TokenCounterContract:
    """Tests every :class:`TokenCounter` must pass (see the module docstring)."""

    @pytest.fixture
    def counter(self) -> TokenCounter:
        raise NotImplementedError("subclasses provide the counter under test")

    def test_count(self, counter: TokenCounter) -> None:
        assert counter.count("") == 0
        for text in SAMPLES:
            assert counter.count(text) > 0, text

    def test_count_many_matches_count(self, counter: TokenCounter) -> None:
        assert counter.count_many(list(SAMPLES)) == [counter.count(t) for t in SAMPLES]
        assert counter.count_many([]) == []

    @pytest.mark.parametrize("budget", [1, 3, 8, 64])
    def test_cut_leaves_a_prefix_within_budget(self, counter: TokenCounter, budget: int) -> None:
        for text in SAMPLES:
            cut = counter.cut(text, budget)
            assert 1 <= cut <= len(text)
            if counter.count(text) <= budget:
                assert cut == len(text)
            elif cut > 1:
                assert counter.count(text[:cut]) <= budget, (text[:40], budget, cut)

    def test_budget_under_one_raises(self, counter: TokenCounter) -> None:
        with pytest.raises(ChunkingError):
            counter.cut("some text", 0)
