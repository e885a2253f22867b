"""Copies of one passage fold into one hit (``ragstrata.retrieve.copies``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragstrata.retrieve.copies import collapse_copies, passage_key
from ragstrata.testing.fakes import make_hit


def test_later_copies_fold_into_the_first_and_ranks_close_up() -> None:
    text = "Los empleados tienen 25 días de vacaciones al año."
    hits = [
        make_hit("a", text, 1),
        make_hit("b", "Las vacaciones se piden con 15 días de antelación.", 2),
        make_hit("backup", "  Los empleados tienen 25 días\nde vacaciones al año. ", 3),
        make_hit("c", text, 4),
    ]
    out = collapse_copies(hits)
    assert [(h.chunk.doc_id, h.rank) for h in out] == [("a", 1), ("b", 2)]
    assert [c.doc_id for c in out[0].copies] == ["backup", "c"]
    assert out[0].score == hits[0].score and out[0].explain == hits[0].explain
    assert out[1].copies == ()
    assert collapse_copies(out) == out  # idempotent: nothing left to fold


texts = st.sampled_from(["alpha beta", "alpha  beta\n", "gamma", "delta epsilon", " gamma "])


@given(st.lists(texts, max_size=12))
def test_one_hit_per_passage_and_no_chunk_lost(items: list[str]) -> None:
    hits = [make_hit(f"d{i}", t, i + 1) for i, t in enumerate(items)]
    out = collapse_copies(hits)
    keys = [passage_key(h.chunk.text) for h in out]
    assert len(keys) == len(set(keys)) == len({passage_key(t) for t in items})
    assert [h.rank for h in out] == list(range(1, len(out) + 1))
    every = [c.chunk_id for h in out for c in (h.chunk, *h.copies)]
    assert sorted(every) == sorted(h.chunk.chunk_id for h in hits)
    # each kept hit is the best-ranked of its copies, which follow in rank order
    order = {h.chunk.chunk_id: h.rank for h in hits}
    for h in out:
        ranks = [order[c.chunk_id] for c in (h.chunk, *h.copies)]
        assert ranks == sorted(ranks)
