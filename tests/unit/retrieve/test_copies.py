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


def test_a_hit_that_already_names_a_copy_names_it_once_and_never_itself() -> None:
    """A review's finding (2026-12-06): HyDE fuses hybrid hits (copies folded already) with a
    dense ranking that returns the copy again: the hit named its copy twice, or, the copy
    ranked first, named itself."""
    from dataclasses import replace

    from ragstrata.retrieve.hyde import fuse_hyde

    text = "Los empleados tienen 25 días de vacaciones al año."
    first, copy = make_hit("a", text, 1), make_hit("b", text, 2)
    hits = [replace(first, copies=(copy.chunk,))]  # the hybrid search folded b into a
    ranking = [(copy.chunk.chunk_id, 0.9), (first.chunk.chunk_id, 0.8)]
    for weights in (None, {"hybrid": 0.1, "hyde": 5.0}):  # a first, then b first
        (hit,) = fuse_hyde(hits, ranking, lambda ids: [copy.chunk], top_k=5, weights=weights)
        named = [c.chunk_id for c in hit.copies]
        assert len(named) == 1 and hit.chunk.chunk_id not in named, (weights, hit)
    other = make_hit("c", "Las vacaciones se piden con 15 días de antelación.", 3)
    ranking = [(copy.chunk.chunk_id, 0.9), (other.chunk.chunk_id, 0.8)]
    out = fuse_hyde(hits, ranking, lambda ids: [copy.chunk, other.chunk], top_k=2)
    assert len(out) == 2  # the copy folds and the next passage takes its slot
