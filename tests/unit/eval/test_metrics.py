"""Tests of ragstrata.eval.metrics: edge cases, properties, and agreement with ranx."""

from __future__ import annotations

import dataclasses
import math
import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.errors import ConfigError
from ragstrata.eval.metrics import (
    EvalResult,
    average_precision_at_k,
    evaluate,
    hit_rate_at_k,
    ndcg_at_k,
    paired_randomization_test,
    parse_metric,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
)

MetricFn = Callable[[Sequence[str], Mapping[str, int], int], float]

ALL: dict[str, MetricFn] = {
    "hit": hit_rate_at_k,
    "mrr": reciprocal_rank_at_k,
    "precision": precision_at_k,
    "recall": recall_at_k,
    "ndcg": ndcg_at_k,
    "map": average_precision_at_k,
}
ALL_FNS = list(ALL.values())

# --------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("fn", ALL_FNS)
def test_empty_ranked_list_scores_zero(fn: MetricFn) -> None:
    assert fn([], {"d1": 1}, 10) == 0.0


@pytest.mark.parametrize("fn", ALL_FNS)
def test_no_relevant_documents_scores_zero(fn: MetricFn) -> None:
    assert fn(["d1", "d2"], {}, 10) == 0.0
    assert fn(["d1", "d2"], {"d1": 0, "d2": -1}, 10) == 0.0


@pytest.mark.parametrize("fn", ALL_FNS)
@pytest.mark.parametrize("k", [0, -1, -100])
def test_k_below_one_raises_value_error(fn: MetricFn, k: int) -> None:
    with pytest.raises(ValueError, match="k >= 1"):
        fn(["d1"], {"d1": 1}, k)
    with pytest.raises(ConfigError):
        fn([], {}, k)


@pytest.mark.parametrize("fn", ALL_FNS)
def test_non_integer_k_raises(fn: MetricFn) -> None:
    with pytest.raises(ConfigError):
        fn(["d1"], {"d1": 1}, True)
    with pytest.raises(ConfigError):
        fn(["d1"], {"d1": 1}, 2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("fn", ALL_FNS)
def test_string_or_mapping_as_ranked_list_is_rejected(fn: MetricFn) -> None:
    with pytest.raises(ConfigError, match="sequence of doc ids"):
        fn("d1", {"d1": 1}, 5)
    with pytest.raises(ConfigError, match="sequence of doc ids"):
        fn({"d1": 1.0}, {"d1": 1}, 5)  # type: ignore[arg-type]


@pytest.mark.parametrize("fn", [f for f in ALL_FNS if f is not precision_at_k])
def test_k_larger_than_list_scores_the_whole_list(fn: MetricFn) -> None:
    ranked, relevant = ["x", "d1"], {"d1": 2, "d2": 1}
    assert fn(ranked, relevant, 1000) == fn(ranked, relevant, 2)


def test_k_larger_than_list_precision_still_divides_by_k() -> None:
    assert precision_at_k(["x", "d1"], {"d1": 1}, 1000) == pytest.approx(1 / 1000)


def test_duplicates_count_once_first_occurrence_kept() -> None:
    relevant = {"a": 1, "b": 1}
    # Deduplicated: [x, a, b]; without dedup the top-3 would be [x, a, a].
    ranked = ["x", "a", "a", "b"]
    assert precision_at_k(ranked, relevant, 3) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, relevant, 3) == 1.0
    assert reciprocal_rank_at_k(ranked, relevant, 3) == 0.5
    assert average_precision_at_k(ranked, relevant, 3) == pytest.approx((1 / 2 + 2 / 3) / 2)
    # A duplicate cannot earn gain twice: recall never exceeds 1.
    assert recall_at_k(["a", "a", "a"], {"a": 1}, 3) == 1.0
    assert precision_at_k(["a", "a", "a"], {"a": 1}, 3) == pytest.approx(1 / 3)


def test_precision_divides_by_k_not_by_list_length() -> None:
    assert precision_at_k(["a"], {"a": 1}, 10) == pytest.approx(0.1)


def test_recall_divides_by_number_of_relevant_not_k() -> None:
    relevant = {"a": 1, "b": 2, "c": 1, "z": 0}
    assert recall_at_k(["a", "x"], relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "b", "c"], relevant, 1) == pytest.approx(1 / 3)


def test_hit_rate_and_reciprocal_rank_respect_cutoff() -> None:
    ranked = ["x", "y", "a"]
    assert hit_rate_at_k(ranked, {"a": 1}, 2) == 0.0
    assert hit_rate_at_k(ranked, {"a": 1}, 3) == 1.0
    assert reciprocal_rank_at_k(ranked, {"a": 1}, 2) == 0.0
    assert reciprocal_rank_at_k(ranked, {"a": 1}, 3) == pytest.approx(1 / 3)


def test_ndcg_graded_hand_computed() -> None:
    relevant = {"a": 3, "b": 2, "c": 1}
    ranked = ["c", "x", "a"]
    dcg = 1 / math.log2(2) + 0 + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranked, relevant, 3) == pytest.approx(dcg / idcg)
    # Ideal DCG is cut at k as well.
    assert ndcg_at_k(["a"], relevant, 1) == 1.0


def test_ndcg_uses_linear_gain_and_ignores_non_positive_grades() -> None:
    # Linear gain: a grade-2 doc at rank 1 and a grade-1 doc at rank 2, reversed.
    reversed_dcg = 1 + 2 / math.log2(3)
    ideal = 2 + 1 / math.log2(3)
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 2) == pytest.approx(reversed_dcg / ideal)
    # Negative and zero grades add no gain and are not part of the ideal ranking.
    assert ndcg_at_k(["n", "a"], {"a": 1, "n": -2}, 2) == pytest.approx(1 / math.log2(3))


def test_ndcg_binary_case() -> None:
    assert ndcg_at_k(["x", "a"], {"a": 1}, 10) == pytest.approx(1 / math.log2(3))


def test_average_precision_normalizes_by_all_relevant_like_ranx() -> None:
    relevant = {"a": 1, "b": 1, "c": 1, "d": 1}
    # Perfect ranking cut at k=2: (1 + 1) / R with R = 4 (not min(R, k) = 2).
    assert average_precision_at_k(["a", "b", "c", "d"], relevant, 2) == pytest.approx(0.5)
    assert average_precision_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(
        (1 / 2 + 2 / 4) / 2
    )


# --------------------------------------------------------------------------- parse / evaluate


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ndcg@10", ("ndcg", 10)),
        ("mrr@10", ("mrr", 10)),
        ("hit@5", ("hit", 5)),
        ("hit_rate@5", ("hit", 5)),
        ("precision@5", ("precision", 5)),
        ("P@5", ("precision", 5)),
        ("recall@100", ("recall", 100)),
        ("map@100", ("map", 100)),
    ],
)
def test_parse_metric(name: str, expected: tuple[str, int]) -> None:
    assert parse_metric(name) == expected


@pytest.mark.parametrize("name", ["ndcg", "ndcg@", "ndcg@0", "bleu@5", "ndcg@-1", "@10", ""])
def test_parse_metric_rejects_bad_names(name: str) -> None:
    with pytest.raises(ConfigError):
        parse_metric(name)


def test_evaluate_skips_queries_without_relevant_docs_and_zeroes_missing_ones() -> None:
    qrels = {
        "q1": {"a": 1},
        "q2": {"b": 0},  # judged, but nothing relevant -> skipped
        "q3": {},  # no judgements -> skipped
        "q4": {"c": 2},  # missing from the run -> 0
    }
    run = {"q1": ["a"], "q2": ["b"], "q3": ["z"], "extra": ["a"]}
    metrics = ["ndcg@10", "mrr@10", "hit@5", "precision@1", "recall@100", "map@100"]
    result = evaluate(run, qrels, metrics)
    assert isinstance(result, EvalResult)
    assert result.n_queries == 2
    assert result.skipped_queries == ("q2", "q3")
    assert set(result.per_query) == {"q1", "q4"}
    assert all(v == 0.0 for v in result.per_query["q4"].values())
    assert all(v == 1.0 for v in result.per_query["q1"].values())
    assert result.means == {m: 0.5 for m in metrics}
    assert not any(math.isnan(v) for v in result.means.values())


def test_evaluate_keys_means_by_the_callers_names() -> None:
    result = evaluate({"q": ["a"]}, {"q": {"a": 1}}, ["NDCG@3", "hit_rate@1"])
    assert result.means == {"NDCG@3": 1.0, "hit_rate@1": 1.0}


def test_evaluate_result_is_frozen() -> None:
    result = evaluate({"q": ["a"]}, {"q": {"a": 1}}, ["ndcg@3"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n_queries = 3  # type: ignore[misc]


@pytest.mark.parametrize("metrics", [[], "ndcg@10", ["ndcg@10", "bogus@3"]])
def test_evaluate_rejects_bad_metric_lists(metrics: Any) -> None:
    with pytest.raises(ConfigError):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, metrics)


def test_evaluate_with_nothing_scorable_raises() -> None:
    with pytest.raises(ConfigError, match="no query with a relevant document"):
        evaluate({"q": ["a"]}, {"q": {"a": 0}}, ["ndcg@10"])
    with pytest.raises(ConfigError):
        evaluate({}, {}, ["ndcg@10"])


def test_evaluate_rejects_a_string_as_ranked_list() -> None:
    with pytest.raises(ConfigError, match="sequence of doc ids"):
        evaluate({"q": "a"}, {"q": {"a": 1}}, ["ndcg@10"])


# --------------------------------------------------------------------------- randomization test


def test_randomization_identical_systems_give_p_one() -> None:
    scores = [0.1, 0.5, 0.9, 0.3]
    assert paired_randomization_test(scores, scores) == 1.0


def test_randomization_clear_difference_is_significant() -> None:
    rng = random.Random(1)
    a = [rng.uniform(0.5, 1.0) for _ in range(50)]
    b = [x - 0.2 - rng.uniform(0, 0.05) for x in a]
    p = paired_randomization_test(a, b, n_resamples=2000)
    assert 0 < p < 0.001
    assert p == pytest.approx(1 / 2001)


def test_randomization_noise_is_not_significant_symmetric_and_deterministic() -> None:
    rng = random.Random(2)
    a = [rng.random() for _ in range(40)]
    b = [rng.random() for _ in range(40)]
    p = paired_randomization_test(a, b, seed=7)
    assert 0.05 < p <= 1.0
    assert p == paired_randomization_test(b, a, seed=7)
    assert p == paired_randomization_test(a, b, seed=7)


def test_randomization_matches_exact_enumeration_for_small_n() -> None:
    a = [0.9, 0.7, 0.8, 0.4, 0.6]
    b = [0.5, 0.6, 0.3, 0.5, 0.2]
    d = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(d) / len(d))
    flips = [[1 if (m >> i) & 1 else -1 for i in range(len(d))] for m in range(2 ** len(d))]
    extreme = sum(
        1
        for s in flips
        if abs(sum(si * di for si, di in zip(s, d, strict=True)) / len(d)) >= observed - 1e-12
    )
    exact = extreme / len(flips)
    assert paired_randomization_test(a, b, n_resamples=40_000) == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize(
    ("a", "b", "kwargs"),
    [
        ([1.0], [1.0, 2.0], {}),
        ([], [], {}),
        ([1.0], [float("nan")], {}),
        ([1.0], [0.0], {"n_resamples": 0}),
    ],
)
def test_randomization_rejects_bad_input(
    a: list[float], b: list[float], kwargs: dict[str, int]
) -> None:
    with pytest.raises(ConfigError):
        paired_randomization_test(a, b, **kwargs)


# --------------------------------------------------------------------------- properties

DOC_IDS = [f"d{i}" for i in range(12)]
doc_ids = st.sampled_from(DOC_IDS)
ranked_lists = st.lists(doc_ids, max_size=16)
judgements = st.dictionaries(doc_ids, st.integers(min_value=-1, max_value=3), max_size=10)
binary_judgements = st.dictionaries(doc_ids, st.just(1), min_size=1, max_size=10)
cutoffs = st.integers(min_value=1, max_value=20)


def dedup(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


@settings(max_examples=300)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs)
def test_every_metric_is_in_unit_interval(
    ranked: list[str], relevant: dict[str, int], k: int
) -> None:
    for fn in ALL_FNS:
        score = fn(ranked, relevant, k)
        assert 0.0 <= score <= 1.0 + 1e-12, fn.__name__


@settings(max_examples=300)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs, data=st.data())
def test_duplicates_do_not_change_scores(
    ranked: list[str], relevant: dict[str, int], k: int, data: st.DataObject
) -> None:
    unique = dedup(ranked)
    # Insert copies of already-seen ids after their first occurrence.
    noisy = list(unique)
    for _ in range(data.draw(st.integers(0, 6))):
        if not noisy:
            break
        src = data.draw(st.integers(0, len(noisy) - 1))
        dst = data.draw(st.integers(src + 1, len(noisy)))
        noisy.insert(dst, noisy[src])
    for fn in ALL_FNS:
        assert fn(ranked, relevant, k) == fn(unique, relevant, k), fn.__name__
        assert fn(noisy, relevant, k) == fn(unique, relevant, k), fn.__name__


@settings(max_examples=300)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs, data=st.data())
def test_set_based_metrics_ignore_order_within_top_k(
    ranked: list[str], relevant: dict[str, int], k: int, data: st.DataObject
) -> None:
    unique = dedup(ranked)
    head = data.draw(st.permutations(unique[:k]))
    shuffled = list(head) + unique[k:]
    for fn in (hit_rate_at_k, precision_at_k, recall_at_k):
        assert fn(shuffled, relevant, k) == fn(unique, relevant, k), fn.__name__


@settings(max_examples=200)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs, data=st.data())
def test_scores_do_not_depend_on_qrels_order(
    ranked: list[str], relevant: dict[str, int], k: int, data: st.DataObject
) -> None:
    items = data.draw(st.permutations(list(relevant.items())))
    reordered = dict(items)
    for fn in ALL_FNS:
        assert fn(ranked, reordered, k) == pytest.approx(fn(ranked, relevant, k), abs=1e-12)


@settings(max_examples=300)
@given(relevant=judgements, extra=st.lists(doc_ids, max_size=6), k=cutoffs)
def test_perfect_ranking_scores_one(relevant: dict[str, int], extra: list[str], k: int) -> None:
    rel = {d: g for d, g in relevant.items() if g > 0}
    ideal = sorted(rel, key=lambda d: (-rel[d], d))
    ranked = ideal + [d for d in extra if d not in rel]
    if not rel or k < len(rel):
        return
    for fn in (ndcg_at_k, reciprocal_rank_at_k, hit_rate_at_k, recall_at_k, average_precision_at_k):
        assert fn(ranked, relevant, k) == pytest.approx(1.0), fn.__name__
    assert precision_at_k(ranked, relevant, k) == pytest.approx(len(rel) / k)


@settings(max_examples=300)
@given(ranked=ranked_lists, relevant=binary_judgements, k=cutoffs, data=st.data())
def test_promoting_a_relevant_doc_to_the_top_never_hurts_binary(
    ranked: list[str], relevant: dict[str, int], k: int, data: st.DataObject
) -> None:
    doc = data.draw(st.sampled_from(sorted(relevant)))
    promoted = [doc] + [d for d in ranked if d != doc]
    for fn in ALL_FNS:
        assert fn(promoted, relevant, k) >= fn(ranked, relevant, k) - 1e-12, fn.__name__


@settings(max_examples=300)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs)
def test_adding_a_top_grade_doc_at_the_top_never_decreases_ndcg(
    ranked: list[str], relevant: dict[str, int], k: int
) -> None:
    positive = {d: g for d, g in relevant.items() if g > 0}
    if not positive:
        return
    best = max(positive.values())
    for doc in (d for d, g in positive.items() if g == best):
        promoted = [doc] + [d for d in ranked if d != doc]
        assert ndcg_at_k(promoted, relevant, k) >= ndcg_at_k(ranked, relevant, k) - 1e-12


@settings(max_examples=200)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs)
def test_all_grades_one_is_binary_ndcg(ranked: list[str], relevant: dict[str, int], k: int) -> None:
    binary = {d: 1 for d, g in relevant.items() if g > 0}
    graded_as_one = {d: (1 if g > 0 else g) for d, g in relevant.items()}
    assert ndcg_at_k(ranked, graded_as_one, k) == pytest.approx(ndcg_at_k(ranked, binary, k))


@settings(max_examples=200)
@given(ranked=ranked_lists, relevant=judgements, k=cutoffs)
def test_metrics_are_monotone_in_k_where_expected(
    ranked: list[str], relevant: dict[str, int], k: int
) -> None:
    for fn in (hit_rate_at_k, recall_at_k, reciprocal_rank_at_k, average_precision_at_k):
        assert fn(ranked, relevant, k + 1) >= fn(ranked, relevant, k), fn.__name__


# --------------------------------------------------------------------------- ranx agreement

RANX_NAMES = {
    "ndcg": "ndcg",
    "mrr": "mrr",
    "precision": "precision",
    "recall": "recall",
    "map": "map",
    "hit": "hit_rate",
}
KS = (1, 3, 5, 10, 20, 50)


def _random_collection(
    seed: int, n_queries: int
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """Graded qrels (with 0 and -1 grades) and runs: some empty, some missing, some long."""
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(80)]
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(n_queries):
        qid = f"q{i}"
        judged = rng.sample(pool, rng.randint(1, 15))
        qrels[qid] = {d: rng.choice([-1, 0, 1, 1, 2, 3]) for d in judged}
        roll = rng.random()
        if roll < 0.05:
            continue  # missing from the run
        length = 0 if roll < 0.1 else rng.randint(1, 60)
        # Bias the run towards judged docs so that metrics are not all zero.
        candidates = judged + rng.sample(pool, 30)
        rng.shuffle(candidates)
        run[qid] = dedup(candidates + rng.sample(pool, 40))[:length]
    return run, qrels


@pytest.fixture(scope="module")
def ranx_module() -> Any:
    return pytest.importorskip("ranx")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_ranx(ranx_module: Any, seed: int) -> None:
    """Per-query and mean scores equal ranx's to 1e-6.

    Fair comparison: ranx scores a query without relevant docs as 0 and keeps it in the mean,
    while :func:`evaluate` skips it, so those queries are removed from ranx's input. A query
    missing from the run is given an empty ranking in ranx (ranx requires equal query sets);
    both score it 0. ranx rankings are dicts doc -> score, so each run gets strictly
    decreasing scores (no ties) and no duplicates.
    """
    run, qrels = _random_collection(seed, n_queries=400)
    metrics = [f"{name}@{k}" for name in RANX_NAMES for k in KS]
    ours = evaluate(run, qrels, metrics)
    assert ours.n_queries > 300
    assert ours.skipped_queries  # the generator produces some all-non-relevant queries

    scored = [qid for qid in qrels if qid not in ours.skipped_queries]
    ranx_qrels = ranx_module.Qrels.from_dict({qid: dict(qrels[qid]) for qid in scored})
    ranx_run = ranx_module.Run.from_dict(
        {
            qid: {doc: float(len(run.get(qid, [])) - i) for i, doc in enumerate(run.get(qid, []))}
            for qid in scored
        }
    )
    ranx_metrics = [f"{RANX_NAMES[name]}@{k}" for name in RANX_NAMES for k in KS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        theirs = ranx_module.evaluate(ranx_qrels, ranx_run, ranx_metrics, return_mean=False)
    order = list(ranx_run.get_query_ids())
    assert sorted(order) == sorted(scored)

    worst = 0.0
    for ours_name, ranx_name in zip(metrics, ranx_metrics, strict=True):
        per_query = dict(zip(order, (float(x) for x in theirs[ranx_name]), strict=True))
        for qid in scored:
            worst = max(worst, abs(ours.per_query[qid][ours_name] - per_query[qid]))
        mean = math.fsum(per_query.values()) / len(per_query)
        assert ours.means[ours_name] == pytest.approx(mean, abs=1e-6), ours_name
    assert worst <= 1e-6
