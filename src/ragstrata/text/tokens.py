"""Token counting with a model's own tokenizer.

Nothing guesses token counts from characters or words: the chunker asks a :class:`TokenCounter`
built from the embedder's tokenizer, so a chunk that fits the budget also fits the model, and
the answer stage one built from the LLM's tokenizer (prompt budgeting).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ragstrata.errors import ChunkingError
from ragstrata.optional import require

if TYPE_CHECKING:
    from tokenizers import Tokenizer


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens as the embedding model sees them (special tokens excluded)."""

    def count(self, text: str) -> int:
        """Number of tokens of ``text``; 0 for the empty string."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, in input order."""
        ...

    def cut(self, text: str, budget: int) -> int:
        """Largest char index ``i`` (``0 < i <= len(text)``) with ``count(text[:i]) <= budget``.

        Always returns at least 1 (a single code point is never split), so the caller makes
        progress even when one character costs more than ``budget`` tokens.
        Raises :class:`ChunkingError` if ``budget < 1``.
        """
        ...


class HFTokenCounter:
    """Counter over a Hugging Face ``tokenizers.Tokenizer`` (the model's ``tokenizer.json``).

    Truncation and padding stored in the file are disabled: counting must see every token.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tok = tokenizer

    @classmethod
    def from_file(cls, path: Path) -> HFTokenCounter:
        """Load ``tokenizer.json``; raises MissingDependencyError without ``tokenizers``."""
        tokenizers = require("tokenizers", extra="local")
        return cls(tokenizers.Tokenizer.from_file(str(path)))

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def cut(self, text: str, budget: int) -> int:
        if budget < 1:
            raise ChunkingError(f"token budget {budget} must be >= 1")
        enc = self._tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= budget:
            return len(text)
        # offsets are code-point offsets into ``text``: cutting at a token end never splits
        # a character. Re-tokenizing the prefix can differ by a token at the cut (word pieces),
        # so verify and step back.
        index = budget
        while index > 0:
            end = enc.offsets[index - 1][1]
            if end > 0 and self.count(text[:end]) <= budget:
                return end
            index -= 1
        return 1


def cut_by_search(count: Callable[[str], int], text: str, budget: int) -> int:
    """Largest ``i`` (``1 <= i <= len(text)``) with ``count(text[:i]) <= budget``, by binary
    search over character positions (``O(log n)`` calls of ``count``); the
    :meth:`TokenCounter.cut` contract for tokenizers without character offsets."""
    if budget < 1:
        raise ChunkingError(f"token budget {budget} must be >= 1")
    if count(text) <= budget:
        return len(text)
    low, high = 1, len(text)  # invariant: answer in [low, high)
    while high - low > 1:
        mid = (low + high) // 2
        if count(text[:mid]) <= budget:
            low = mid
        else:
            high = mid
    return low


class CallableTokenCounter:
    """Counter over any ``count(text) -> int`` function (e.g. a model without ``tokenizer.json``).

    ``cut`` is :func:`cut_by_search`: O(log n) calls to ``count``.
    """

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count

    def count(self, text: str) -> int:
        return self._count(text) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def cut(self, text: str, budget: int) -> int:
        return cut_by_search(self.count, text, budget)


class FunctionCounter(CallableTokenCounter):
    """A :class:`TokenCounter` from a ``text -> token ids`` function: counts
    ``len(encode(text))``, cuts like :class:`CallableTokenCounter`."""

    def __init__(self, encode: Callable[[str], Sequence[int]]) -> None:
        super().__init__(lambda text: len(encode(text)))
