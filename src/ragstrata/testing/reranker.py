"""Conformance suite of the :class:`~ragstrata.rerank.base.Reranker` protocol.

Subclass :class:`RerankerContract` and implement ``make_reranker(**options)``: a reranker
under test, built with the given ``batch_size`` and ``max_length`` when passed (the suite
varies them to check that batching changes nothing and that truncation is counted). Load the
model files once (a session fixture) and build cheap instances over them.

Promises checked: ``score`` returns float32 ``(n,)`` scores aligned with the input order
(shuffling the passages shuffles the scores alike), independent of the batch size within
``score_tolerance``, deterministic, finite; an empty ``passages`` gives ``(0,)`` and
``truncated == 0``; ``truncated`` counts the pairs longer than ``max_length``; an empty query
raises :class:`~ragstrata.errors.RetrievalError`; ``warm_up`` may be called any number of
times. ragstrata's own rerankers are subclassed in ``tests/contract/test_reranker_contract.py``.
"""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np
import pytest

from ragstrata.errors import RetrievalError
from ragstrata.rerank.base import Reranker

QUERY = "what causes scurvy in sailors"
PASSAGES: tuple[str, ...] = (
    "Scurvy is caused by a lack of vitamin C.",
    "Rickets follows vitamin D deficiency in children who see little sun.",
    "Paris is the capital of France.",
    "Long voyages without fresh fruit left sailors with bleeding gums, loose teeth and "
    "wounds that would not heal, until lemon juice became part of the daily ration.",
    "x",
    "El escorbuto se debe a la falta de vitamina C.",
    "Cats sleep most of the day.",
)


class RerankerContract:
    """Tests every :class:`Reranker` must pass (see the module docstring)."""

    score_tolerance: ClassVar[float] = 1e-6
    """Absolute and relative tolerance between scores of one pair in different batches (0: the
    reranker promises bit-identical scores, as the int8 ONNX models do by running one pair per
    pass)."""

    def make_reranker(self, **options: int) -> Reranker:
        """A reranker under test; ``options``: ``batch_size``, ``max_length``."""
        raise NotImplementedError("subclasses build the reranker under test")

    def test_conforms_to_the_protocol(self) -> None:
        reranker = self.make_reranker()
        assert isinstance(reranker, Reranker)
        assert reranker.max_length >= 8 and reranker.name
        reranker.warm_up()
        reranker.warm_up()
        assert reranker.name == self.make_reranker().name

    def test_scores_align_with_shuffled_inputs(self) -> None:
        reranker = self.make_reranker(batch_size=2)  # several length-sorted batches
        base = reranker.score(QUERY, PASSAGES).scores
        assert base.shape == (len(PASSAGES),) and base.dtype == np.float32
        assert np.isfinite(base).all()
        rng = random.Random(3)
        for _ in range(3):
            order = list(range(len(PASSAGES)))
            rng.shuffle(order)
            shuffled = reranker.score(QUERY, [PASSAGES[i] for i in order]).scores
            np.testing.assert_allclose(
                shuffled, base[order], rtol=self.score_tolerance, atol=self.score_tolerance
            )

    def test_deterministic(self) -> None:
        reranker = self.make_reranker()
        first = reranker.score(QUERY, PASSAGES)
        second = reranker.score(QUERY, PASSAGES)
        np.testing.assert_array_equal(first.scores, second.scores)
        assert first.truncated == second.truncated

    def test_batch_size_does_not_change_scores(self) -> None:
        one = self.make_reranker(batch_size=1).score(QUERY, PASSAGES).scores
        many = self.make_reranker(batch_size=64).score(QUERY, PASSAGES).scores
        np.testing.assert_allclose(one, many, rtol=self.score_tolerance, atol=self.score_tolerance)

    def test_one_pair_scores_as_in_a_batch(self) -> None:
        reranker = self.make_reranker()
        batch = reranker.score(QUERY, PASSAGES).scores
        alone = [float(reranker.score(QUERY, [p]).scores[0]) for p in PASSAGES]
        np.testing.assert_allclose(
            alone, batch, rtol=self.score_tolerance, atol=self.score_tolerance
        )

    def test_truncation_is_counted(self) -> None:
        reranker = self.make_reranker(max_length=24)
        assert reranker.max_length == 24
        long = " ".join(["vitamin"] * 60)
        result = reranker.score(QUERY, [long, "short", long])
        assert result.truncated == 2
        assert np.isfinite(result.scores).all()
        assert self.make_reranker().score(QUERY, ["short"]).truncated == 0

    def test_empty_inputs(self) -> None:
        reranker = self.make_reranker()
        result = reranker.score(QUERY, [])
        assert result.scores.shape == (0,) and result.truncated == 0
        assert result.scores.dtype == np.float32
        with pytest.raises(RetrievalError):
            reranker.score("  ", PASSAGES)
