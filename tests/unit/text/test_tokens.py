"""Token counters (``ragstrata.text.tokens``): the ``cut`` contract, one binary search."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.errors import ChunkingError
from ragstrata.text.tokens import (
    CallableTokenCounter,
    FunctionCounter,
    TokenCounter,
    cut_by_search,
)

WORDS = CallableTokenCounter(lambda text: len(text.split()))
ENCODED = FunctionCounter(str.split)


def test_both_counters_are_token_counters() -> None:
    assert isinstance(WORDS, TokenCounter)
    assert isinstance(ENCODED, TokenCounter)


def test_counts() -> None:
    assert WORDS.count("") == ENCODED.count("") == 0
    assert WORDS.count("one two  three") == ENCODED.count("one two  three") == 3
    assert ENCODED.count_many(["a b", "", "c"]) == [2, 0, 1]


def test_budget_below_one_is_an_error() -> None:
    with pytest.raises(ChunkingError, match="budget 0"):
        WORDS.cut("a b", 0)
    with pytest.raises(ChunkingError):
        ENCODED.cut("a b", -1)


def test_cut_of_text_within_budget_is_its_length() -> None:
    assert WORDS.cut("a b c", 3) == 5


def test_cut_always_makes_progress() -> None:
    chars = CallableTokenCounter(len)
    assert chars.cut("abc", 1) == 1
    assert cut_by_search(lambda text: 5 * len(text), "abc", 1) == 1


@given(st.text(alphabet="ab ", max_size=40), st.integers(min_value=1, max_value=8))
def test_cut_is_the_largest_prefix_within_budget(text: str, budget: int) -> None:
    cut = ENCODED.cut(text, budget)
    assert cut == WORDS.cut(text, budget)
    assert cut == len(text) or 1 <= cut < len(text)
    if ENCODED.count(text) > budget:
        assert ENCODED.count(text[:cut]) <= budget or cut == 1
        assert ENCODED.count(text[: cut + 1]) > budget
