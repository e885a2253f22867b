"""Weighted Reciprocal Rank Fusion (``ragstrata.retrieve.fusion.rrf``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.errors import ConfigError
from ragstrata.retrieve.fusion import rrf
from ragstrata.types import RetrieverHit


def test_hand_computed_weighted_example() -> None:
    rankings = {
        "dense": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
        "bm25": [("c", 12.0), ("a", 7.5), ("d", 3.0)],
    }
    fused = rrf(rankings, k=60, weights={"dense": 0.6, "bm25": 0.4})
    expected = {
        "a": 0.6 / 61 + 0.4 / 62,
        "b": 0.6 / 62,
        "c": 0.6 / 63 + 0.4 / 61,
        "d": 0.4 / 63,
    }
    assert [h.item_id for h in fused] == ["a", "c", "b", "d"]
    for hit in fused:
        assert hit.score == pytest.approx(expected[hit.item_id], rel=1e-12)


def test_default_weights_are_one() -> None:
    fused = rrf({"x": [("a", 1.0)], "y": [("a", 1.0)]}, k=10)
    assert fused[0].score == pytest.approx(2 / 11)


def test_item_missing_from_a_list_gets_nothing_from_it() -> None:
    fused = rrf({"dense": [("a", 1.0), ("b", 0.5)], "bm25": [("b", 3.0)]}, k=60)
    by_id = {h.item_id: h for h in fused}
    assert by_id["a"].score == pytest.approx(1 / 61)
    assert [e.retriever for e in by_id["a"].explain] == ["dense"]
    assert by_id["b"].score == pytest.approx(1 / 62 + 1 / 61)


def test_duplicate_within_one_list_counts_once_at_first_rank() -> None:
    fused = rrf({"dense": [("a", 0.9), ("b", 0.8), ("a", 0.1), ("c", 0.05)]}, k=60)
    by_id = {h.item_id: h for h in fused}
    assert by_id["a"].score == pytest.approx(1 / 61)
    assert by_id["a"].explain == (RetrieverHit("dense", 1, 0.9),)
    # the duplicate does not consume a rank: c is the third distinct item
    assert by_id["c"].explain == (RetrieverHit("dense", 3, 0.05),)
    assert [h.item_id for h in fused] == ["a", "b", "c"]


def test_ties_broken_by_id_ascending() -> None:
    # b and a are symmetric: each is first in one list and second in the other
    fused = rrf({"x": [("b", 1.0), ("a", 0.5)], "y": [("a", 1.0), ("b", 0.5)]}, k=60)
    assert [h.item_id for h in fused] == ["a", "b"]
    assert fused[0].score == fused[1].score
    single = rrf({"x": [("z", 1.0)], "y": [("m", 1.0)]}, k=60)
    assert [h.item_id for h in single] == ["m", "z"]


def test_ties_broken_by_id_with_three_retrievers() -> None:
    # a has ranks (29, 19, 23), b has ranks (23, 29, 19): the same multiset of ranks, so the
    # same exact score with equal weights. Fillers occupy the other ranks.
    def ranking(name: str, ranks: dict[str, int]) -> list[tuple[str, float]]:
        slots = [f"{name}-fill-{i:02d}" for i in range(1, 31)]
        for item, rank in ranks.items():
            slots[rank - 1] = item
        return [(item, 1.0) for item in slots]

    rankings = {
        "r1": ranking("r1", {"a": 29, "b": 23}),
        "r2": ranking("r2", {"a": 19, "b": 29}),
        "r3": ranking("r3", {"a": 23, "b": 19}),
    }
    for order in (["r1", "r2", "r3"], ["r3", "r2", "r1"], ["r2", "r1", "r3"]):
        fused = rrf({name: rankings[name] for name in order}, k=60)
        ids = [h.item_id for h in fused if h.item_id in ("a", "b")]
        assert ids == ["a", "b"], order


def test_explain_records_rank_and_raw_score_per_retriever() -> None:
    fused = rrf({"dense": [("a", 0.91), ("b", 0.5)], "bm25": [("b", 7.25), ("a", 3.5)]}, k=60)
    by_id = {h.item_id: h for h in fused}
    assert by_id["a"].explain == (RetrieverHit("dense", 1, 0.91), RetrieverHit("bm25", 2, 3.5))
    assert by_id["b"].explain == (RetrieverHit("dense", 2, 0.5), RetrieverHit("bm25", 1, 7.25))


@pytest.mark.parametrize("k", [0, -1, -60])
def test_k_below_one_is_a_config_error(k: int) -> None:
    with pytest.raises(ConfigError, match="k"):
        rrf({"dense": [("a", 1.0)]}, k=k)


def test_negative_weight_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bm25"):
        rrf({"dense": [("a", 1.0)], "bm25": [("a", 1.0)]}, weights={"dense": 1.0, "bm25": -0.1})
    assert issubclass(ConfigError, ValueError)


def test_a_zero_weight_arm_adds_no_items() -> None:
    """Review 30: its items entered at score 0, ordered by id (dense ranks 41, 8, 12, 38)."""
    fused = rrf({"dense": [("a", 1.0)], "bm25": [("b", 1.0), ("a", 0.5)]}, weights={"bm25": 0.0})
    assert [(h.item_id, h.score) for h in fused] == [("a", pytest.approx(1 / 61))]
    assert [e.retriever for e in fused[0].explain] == ["dense", "bm25"]  # still explained
    assert rrf({"dense": [("z", 1.0), ("y", 0.5)]}, weights={"dense": 0.0}) == []


def test_empty_rankings() -> None:
    assert rrf({}) == []
    assert rrf({"dense": []}) == []


# ----------------------------------------------------------------------------- properties
ids = st.sampled_from([f"id{i:02d}" for i in range(30)])
ranking_lists = st.lists(st.tuples(ids, st.floats(-10, 10, allow_nan=False)), max_size=25)
rankings_st = st.dictionaries(st.sampled_from(["dense", "bm25", "hyde", "x"]), ranking_lists)
weights_st = st.dictionaries(
    st.sampled_from(["dense", "bm25", "hyde", "x"]), st.floats(0, 5, allow_nan=False)
)


@given(rankings_st, weights_st, st.integers(1, 200))
def test_output_sorted_by_score_then_id(rankings, weights, k) -> None:
    fused = rrf(rankings, k=k, weights=weights)
    keys = [(-h.score, h.item_id) for h in fused]
    assert keys == sorted(keys)


@given(rankings_st, weights_st, st.integers(1, 200))
def test_every_input_id_appears_exactly_once(rankings, weights, k) -> None:
    fused = rrf(rankings, k=k, weights=weights)
    out = [h.item_id for h in fused]
    assert len(out) == len(set(out))
    assert set(out) == {
        item
        for name, ranking in rankings.items()
        if weights.get(name, 1.0) != 0.0
        for item, _ in ranking
    }
    for hit in fused:
        assert len({e.retriever for e in hit.explain}) == len(hit.explain)


@given(ranking_lists, st.integers(1, 200), st.floats(0.01, 5))
def test_single_retriever_keeps_its_deduplicated_order(ranking, k, weight) -> None:
    fused = rrf({"only": ranking}, k=k, weights={"only": weight})
    assert [h.item_id for h in fused] == list(dict.fromkeys(item for item, _ in ranking))
    for rank, hit in enumerate(fused, start=1):
        assert hit.explain[0].rank == rank
        assert hit.score == pytest.approx(weight / (k + rank))


@given(rankings_st, weights_st, st.integers(1, 200), st.randoms(use_true_random=False))
def test_scores_invariant_to_mapping_order(rankings, weights, k, rnd) -> None:
    names = list(rankings)
    rnd.shuffle(names)
    a = {h.item_id: h.score for h in rrf(rankings, k=k, weights=weights)}
    b = {h.item_id: h.score for h in rrf({n: rankings[n] for n in names}, k=k, weights=weights)}
    assert a.keys() == b.keys()
    for item, score in a.items():
        assert math.isclose(score, b[item], rel_tol=1e-12, abs_tol=1e-15)


# ----------------------------------------------------------------------------- stand_in
def test_stand_in_hand_computed() -> None:
    # "e" is an English passage a Spanish question is about: dense ranks it first, BM25 (no
    # shared words) third; "f" is foreign too but BM25 missed it; "s" is a Spanish passage.
    rankings = {
        "dense": [("e", 0.9), ("s", 0.8), ("f", 0.7)],
        "bm25": [("s", 9.0), ("x", 8.0), ("e", 1.0)],
    }
    weights = {"dense": 0.4, "bm25": 0.6}
    fused = rrf(rankings, k=60, weights=weights, stand_in={"bm25": ("dense", {"e", "f", "x"})})
    scores = {h.item_id: h.score for h in fused}
    assert scores["e"] == pytest.approx(0.4 / 61 + 0.6 / 61)  # BM25 rank 3 -> dense rank 1
    assert scores["f"] == pytest.approx(0.4 / 63 + 0.6 / 63)  # missed by BM25 -> dense rank 3
    assert scores["s"] == pytest.approx(0.4 / 62 + 0.6 / 61)  # not foreign: unchanged
    assert scores["x"] == pytest.approx(0.6 / 62)  # foreign but no dense rank: unchanged
    assert [h.item_id for h in fused][:2] == ["e", "s"]
    # explain keeps the ranks the retrievers gave
    by_id = {h.item_id: h for h in fused}
    assert by_id["e"].explain == (RetrieverHit("dense", 1, 0.9), RetrieverHit("bm25", 3, 1.0))
    assert by_id["f"].explain == (RetrieverHit("dense", 3, 0.7),)


def test_stand_in_never_lowers_a_better_own_rank() -> None:
    rankings = {"dense": [("a", 1.0), ("b", 0.5)], "bm25": [("b", 3.0), ("a", 2.0)]}
    plain = {h.item_id: h.score for h in rrf(rankings)}
    stood = {h.item_id: h.score for h in rrf(rankings, stand_in={"bm25": ("dense", {"b"})})}
    assert stood == plain  # b: BM25 rank 1 beats its dense rank 2


def test_stand_in_of_unknown_ranking_is_an_error() -> None:
    with pytest.raises(ConfigError):
        rrf({"dense": [("a", 1.0)]}, stand_in={"bm25": ("dense", {"a"})})


@given(rankings_st, weights_st, st.integers(1, 200), st.sets(ids))
def test_stand_in_only_raises_the_foreign_items(rankings, weights, k, foreign) -> None:
    rankings = {"dense": [], "bm25": [], **rankings}
    plain = {h.item_id: h for h in rrf(rankings, k=k, weights=weights)}
    fused = rrf(rankings, k=k, weights=weights, stand_in={"bm25": ("dense", foreign)})
    assert {h.item_id for h in fused} >= set(plain)
    for hit in fused:
        if hit.item_id not in plain:  # only a zero-weight arm had it; its stand-in rank counts
            assert hit.item_id in foreign and weights.get("dense", 1.0) == 0.0
            continue
        before = plain[hit.item_id]
        assert hit.explain == before.explain
        if hit.item_id in foreign:
            assert hit.score >= before.score - 1e-15
        else:
            assert hit.score == before.score
