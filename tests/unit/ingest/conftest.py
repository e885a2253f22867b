"""Fixtures of the loader unit tests: fixture files and the block invariant checker."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ragstrata.types import Block

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_FRONT_MATTER_RE = re.compile(r"---[ \t]*\n(?:.*?\n)?---[ \t]*(?:\n|$)", re.DOTALL)

BlockChecker = Callable[[str, Sequence[Block]], None]


def assert_blocks_valid(text: str, blocks: Sequence[Block], *, full_coverage: bool = True) -> None:
    """Blocks are in range, sorted, non-overlapping and trimmed; with ``full_coverage``, every
    non-whitespace character outside a leading front matter lies inside a block."""
    previous_end = 0
    gaps: list[str] = []
    for block in blocks:
        assert 0 <= block.start < block.end <= len(text), block
        assert block.start >= previous_end, f"overlap or unsorted at {block}"
        piece = text[block.start : block.end]
        assert piece == piece.strip(), f"untrimmed block {block}: {piece!r}"
        assert (block.kind == "heading") == (block.level > 0), block
        gaps.append(text[previous_end : block.start])
        previous_end = block.end
    gaps.append(text[previous_end:])
    if full_coverage:
        match = _FRONT_MATTER_RE.match(text)
        if match is not None and gaps:
            gaps[0] = gaps[0][match.end() :] if len(gaps[0]) >= match.end() else ""
        for gap in gaps:
            assert not gap.strip(), f"text outside every block: {gap.strip()[:80]!r}"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def check_blocks() -> Callable[..., None]:
    return assert_blocks_valid
