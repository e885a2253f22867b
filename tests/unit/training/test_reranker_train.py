"""Training data builders: held-out split and heading pseudo-queries (no model needed)."""

from __future__ import annotations

import random

import pytest

from ragstrata.errors import ConfigError
from ragstrata.training.pairs import heading_groups, split_dev
from ragstrata.training.reranker import TrainSettings
from ragstrata.types import Chunk


def _chunk(doc: str, section: str, text: str, parent: str) -> Chunk:
    body = f"## {section} {{/*anchor*/}}\n\n{text}"
    return Chunk(
        chunk_id=f"{doc}-{parent}",
        doc_id=doc,
        source=f"/docs/{doc}.md",
        title=doc,
        section_path=("Guide", section),
        text=body,
        start=0,
        end=len(body),
        index=0,
        total=1,
        token_count=10,
        parent_id=parent,
        content_hash="h",
    )


WORDS = " ".join(f"palabra{i}" for i in range(40))


def test_split_dev_is_seeded_disjoint_and_complete() -> None:
    qids = [str(i) for i in range(50)]
    train, dev = split_dev(qids, 10, seed=1)
    assert len(dev) == 10 and not set(train) & set(dev)
    assert sorted(train + dev) == sorted(qids)
    assert split_dev(qids, 10, seed=1) == (train, dev)
    assert split_dev(qids, 10, seed=2)[1] != dev


def test_heading_groups_positive_first_without_its_heading() -> None:
    sections = [
        "Instalar con pip",
        "Configurar el servidor",
        "Usar la caché",
        "Desplegar en Docker",
    ]
    chunks = {
        "a": [_chunk("a", s, f"{s} texto {WORDS}", f"p{i}") for i, s in enumerate(sections)],
        "b": [_chunk("b", "Recap", WORDS, "r"), _chunk("b", "Resumen", WORDS, "s")],
    }
    groups = heading_groups(chunks, negatives=2, rng=random.Random(0), limit=100)
    assert [g.query for g in groups] == sections  # generic headings and small docs left out
    for group in groups:
        assert len(group.passages) == 3
        positive = group.passages[0]
        assert positive.startswith("Guide\n")  # parent path kept, own heading line dropped
        assert "##" not in positive and group.query + " texto" in positive
        assert all(group.query + " texto" not in p for p in group.passages[1:])
    assert len(heading_groups(chunks, negatives=2, rng=random.Random(0), limit=2)) == 2


def test_repeated_headings_are_not_queries() -> None:
    chunks = {
        d: [
            _chunk(d, s, WORDS, f"{d}{i}")
            for i, s in enumerate(["Same heading here", "B c", "C d"])
        ]
        for d in ("a", "b")
    }
    queries = [g.query for g in heading_groups(chunks, negatives=1, rng=random.Random(0), limit=9)]
    assert "Same heading" not in queries


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigError):
        TrainSettings(negatives=0)
    with pytest.raises(ConfigError):
        TrainSettings(max_length=8)
