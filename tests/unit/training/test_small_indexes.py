"""The small-index groups the small-index answerability model is trained and checked on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragstrata.eval.datasets import load_squad
from ragstrata.eval.parallel_docs import load_parallel_docs
from ragstrata.generate.answerability import FEATURES
from ragstrata.training.answerability import Row
from ragstrata.training.small_indexes import (
    GROUP_PAGES,
    SMALL_INDEX_EXCLUDED,
    parallel_groups,
    squad_groups,
    train_rows,
    zeroed,
)

SQUAD = "squad-es-dev-small"


def test_article_groups_hold_their_article_and_keep_the_article_halves(
    shared_corpus: Callable[[str], Path],
) -> None:
    path = shared_corpus(SQUAD) / "dev-v1.1-es_small.json.gz"
    groups = squad_groups(path, per_article=5, seed=0)
    train = set(load_squad(path, split="train").queries)
    assert len(groups) == 48
    for g in groups:
        article = g.name.removeprefix("squad-")
        assert {d.doc_id.split("-")[0] for d in g.documents} == {article}
        assert 0 < len(g.questions) <= 5
        ids = {d.doc_id for d in g.documents}
        for half, (qid, _, gold, _) in g.questions:
            assert gold <= ids  # every gold paragraph is in the group's index
            assert half == ("train" if qid in train else "test")
    # an article's questions are all of one half: the split is by article
    assert all(len({h for h, _ in g.questions}) == 1 for g in groups)
    assert squad_groups(path, per_article=5, seed=0) == groups  # deterministic


def test_paragraph_runs_hold_consecutive_paragraphs_and_their_questions(
    shared_corpus: Callable[[str], Path],
) -> None:
    path = shared_corpus(SQUAD) / "dev-v1.1-es_small.json.gz"
    runs = squad_groups(path, per_article=3, seed=0, paragraphs=4)
    assert len(runs) > 400
    for g in runs[:60]:
        assert 1 <= len(g.documents) <= 4
        ids = {d.doc_id for d in g.documents}
        assert all(gold <= ids for _, (_, _, gold, _) in g.questions)


def test_page_groups_hold_their_questions_gold_pages(
    shared_corpus: Callable[[str], Path],
) -> None:
    path = shared_corpus("fastapi-docs-md")
    groups = parallel_groups(path, "es-en", groups=3, per_group=4, seed=0)
    test = set(load_parallel_docs(path, direction="es-en:test").queries)
    assert len(groups) == 3
    seen: set[str] = set()
    for g in groups:
        pages = {d.doc_id for d in g.documents}
        assert len(pages) == GROUP_PAGES and not pages & seen  # disjoint groups
        seen |= pages
        for half, (qid, _, gold, _) in g.questions:
            assert gold <= pages and half == ("test" if qid in test else "train")


def test_training_rows_are_the_train_half_with_the_scaled_feature_zeroed() -> None:
    features = tuple(float(i + 1) for i in range(len(FEATURES)))
    rows = [
        Row("squad-es-small/train", "a", 1, features),
        Row("squad-es-small/test", "b", 0, features),
    ]
    kept = train_rows(rows)
    assert [(r.source, r.qid) for r in kept] == [("squad-es-small", "a")]
    for name in SMALL_INDEX_EXCLUDED:
        assert kept[0].features[FEATURES.index(name)] == 0.0
    assert sum(v != 0.0 for v in kept[0].features) == len(FEATURES) - len(SMALL_INDEX_EXCLUDED)
    assert zeroed(rows)[1].source == "squad-es-small/test"
