"""Copies of one passage in the results: the same text in several chunks (a page saved twice, a
backup folder, one section pasted into two pages, a code sample repeated in a page) is one
result, not several.

A folder often holds copies: of the FastAPI pages, ``index.md`` and ``first-steps.md`` share
four sections and a console sample (6 chunk copies in 2,240 chunks); a React page repeats one
code block 11 times (200 copies in 3,858 chunks, ``react-docs-es-mdx``). Listed once each, they
took the first result slots with one passage; collapsed, the slots go to other passages and the
first copy names the others (:attr:`~ragstrata.types.Hit.copies`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ragstrata.types import Hit

__all__ = ["COPY_LOOKAHEAD", "collapse_copies", "passage_key"]

COPY_LOOKAHEAD = 10
"""Fused hits read past ``top_k`` to name the copies of the hits kept (``--top-k 1`` named
none: its copy was the second fused hit); a copy further down is not named."""


def passage_key(text: str) -> str:
    """``text`` with its white space collapsed: chunks whose keys are equal are copies of one
    passage (indentation, line ends and padding aside)."""
    return " ".join(text.split())


def collapse_copies(hits: Iterable[Hit]) -> list[Hit]:
    """``hits`` (best first) with each later copy of a passage folded into its first hit:
    that hit keeps its rank order, score and explain and gains the copy's chunk (and the copy's
    own copies) in :attr:`~ragstrata.types.Hit.copies`, in rank order, each chunk once and never
    the hit's own; the remaining hits are ranked 1, 2, ... again. Pure; a list without copies
    comes back with the same hits."""
    first: dict[str, int] = {}
    out: list[Hit] = []
    for hit in hits:
        key = passage_key(hit.chunk.text)
        at = first.get(key)
        if at is None:
            first[key] = len(out)
            out.append(hit if hit.rank == len(out) + 1 else replace(hit, rank=len(out) + 1))
            continue
        kept = out[at]
        named = {kept.chunk.chunk_id, *(c.chunk_id for c in kept.copies)}
        new = []
        for chunk in (hit.chunk, *hit.copies):  # a chunk named once (a fusion of rankings
            if chunk.chunk_id not in named:  # that had folded copies already: HyDE)
                named.add(chunk.chunk_id)
                new.append(chunk)
        if new:
            out[at] = replace(kept, copies=(*kept.copies, *new))
    return out
