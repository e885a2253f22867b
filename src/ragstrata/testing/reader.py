"""Conformance suite of the :class:`~ragstrata.generate.reader.Reader` protocol.

Subclass :class:`ReaderContract` and implement ``make_reader()``: the reader under test (load
its model once, a session fixture, and hand it on). Promises checked: ``score`` returns float32
``(n,)`` finite logits aligned with the input order (shuffling the passages shuffles the
logits alike), deterministic, a pair's logit independent of the other passages of the call
within ``score_tolerance``; no passage gives ``(0,)``; and it reads: for each question of
:data:`CASES` (English, Spanish, and across the two), the passage that answers it scores above
every passage that does not. ragstrata's reader is subclassed in
``tests/contract/test_reader_contract.py``.
"""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np

from ragstrata.generate.reader import Reader

PASSAGES: tuple[str, ...] = (
    "Scurvy is caused by a lack of vitamin C; sailors on long voyages without fresh fruit "
    "suffered from it until lemon juice became part of the daily ration.",
    "Set the environment variable RAGSTRATA_HOME to move the index folder; the default is "
    "the .ragstrata folder in the current directory.",
    "El Amazonas es el río más caudaloso del mundo y atraviesa Perú, Colombia y Brasil.",
    "La fotosíntesis convierte la luz del sol en energía química dentro de los cloroplastos.",
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "x",
)

CASES: tuple[tuple[str, int], ...] = (
    ("What caused scurvy among sailors?", 0),
    ("¿Qué río es el más caudaloso del mundo?", 2),
    ("¿Dónde ocurre la fotosíntesis en la célula?", 3),
    ("¿Cómo cambio la carpeta del índice?", 1),
    ("Which countries does the Amazon river cross?", 2),
)
"""(question, index of the passage of :data:`PASSAGES` that answers it)."""


class ReaderContract:
    """Tests every :class:`Reader` must pass (see the module docstring)."""

    score_tolerance: ClassVar[float] = 1e-4
    """Absolute tolerance between a pair's logit alone and inside a call with others."""

    def make_reader(self) -> Reader:
        raise NotImplementedError("subclasses build the reader under test")

    def test_conforms_to_the_protocol(self) -> None:
        reader = self.make_reader()
        assert isinstance(reader, Reader)
        assert reader.name

    def test_logits_align_with_shuffled_inputs(self) -> None:
        reader = self.make_reader()
        question = CASES[0][0]
        base = reader.score(question, PASSAGES)
        assert base.shape == (len(PASSAGES),) and base.dtype == np.float32
        assert np.isfinite(base).all()
        rng = random.Random(5)
        order = list(range(len(PASSAGES)))
        rng.shuffle(order)
        shuffled = reader.score(question, [PASSAGES[i] for i in order])
        np.testing.assert_allclose(shuffled, base[order], atol=self.score_tolerance)

    def test_deterministic_and_independent_of_the_other_passages(self) -> None:
        reader = self.make_reader()
        question = CASES[1][0]
        batch = reader.score(question, PASSAGES)
        np.testing.assert_array_equal(batch, reader.score(question, PASSAGES))
        alone = [float(reader.score(question, [p])[0]) for p in PASSAGES]
        np.testing.assert_allclose(alone, batch, atol=self.score_tolerance)

    def test_no_passage(self) -> None:
        out = self.make_reader().score(CASES[0][0], [])
        assert out.shape == (0,) and out.dtype == np.float32

    def test_the_answering_passage_scores_first(self) -> None:
        reader = self.make_reader()
        for question, gold in CASES:
            logits = reader.score(question, PASSAGES)
            assert int(np.argmax(logits)) == gold, (question, logits.tolist())
