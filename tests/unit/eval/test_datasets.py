"""Tests of ragstrata.eval.datasets on small hand-made files."""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragstrata.errors import ConfigError
from ragstrata.eval.datasets import (
    CorpusDoc,
    EvalDataset,
    GoldenQuery,
    article_split,
    load_beir,
    load_golden,
    load_squad,
)

# --------------------------------------------------------------------------- BEIR

CORPUS: list[dict[str, Any]] = [
    {"_id": "d1", "title": "One", "text": "first doc", "metadata": {}},
    {"_id": "d2", "title": "", "text": "second doc"},
    {"_id": "d3", "text": "no title"},
]
QUERIES = [
    {"_id": "q1", "text": "query one"},
    {"_id": "q2", "text": "query two"},
    {"_id": "q3", "text": "query three (train only)"},
]
TEST_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t0\n"
TRAIN_QRELS = "query-id\tcorpus-id\tscore\nq3\td1\t1\n"


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def make_beir(root: Path, *, gz: bool = False) -> Path:
    folder = root / "mini"
    (folder / "qrels").mkdir(parents=True)
    if gz:
        with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write(_jsonl(CORPUS))
    else:
        (folder / "corpus.jsonl").write_text(_jsonl(CORPUS), encoding="utf-8")
    (folder / "queries.jsonl").write_text(_jsonl(QUERIES), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(TEST_QRELS, encoding="utf-8")
    (folder / "qrels" / "train.tsv").write_text(TRAIN_QRELS, encoding="utf-8")
    return folder


@pytest.mark.parametrize("gz", [False, True])
def test_load_beir_test_split(tmp_path: Path, gz: bool) -> None:
    ds = load_beir(make_beir(tmp_path, gz=gz))
    assert isinstance(ds, EvalDataset)
    assert ds.name == "mini/test"
    assert ds.corpus == {
        "d1": CorpusDoc("d1", "One", "first doc"),
        "d2": CorpusDoc("d2", "", "second doc"),
        "d3": CorpusDoc("d3", "", "no title"),
    }
    assert ds.queries == {"q1": "query one", "q2": "query two"}
    assert ds.qrels == {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 0}}
    assert ds.unanswerable == {}


def test_load_beir_keeps_only_the_split_queries(tmp_path: Path) -> None:
    ds = load_beir(make_beir(tmp_path), split="train")
    assert ds.queries == {"q3": "query three (train only)"}
    assert ds.qrels == {"q3": {"d1": 1}}


def test_load_beir_unknown_split_lists_available(tmp_path: Path) -> None:
    folder = make_beir(tmp_path)
    with pytest.raises(ConfigError, match=r"split 'dev'.*available splits: test, train") as info:
        load_beir(folder, split="dev")
    assert str(folder / "qrels" / "dev.tsv") in str(info.value)


def test_load_beir_missing_folder_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_beir(tmp_path / "absent")
    folder = make_beir(tmp_path)
    (folder / "corpus.jsonl").unlink()
    with pytest.raises(ConfigError, match=r"corpus\.jsonl, corpus\.jsonl\.gz") as info:
        load_beir(folder)
    assert str(folder) in str(info.value)


def test_load_beir_errors_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        load_beir(tmp_path / "absent")


@pytest.mark.parametrize(
    ("qrels_text", "pattern"),
    [
        ("", "empty qrels file"),
        ("q1\td1\t1\n", r"test\.tsv:1: expected the header"),
        ("query-id\tcorpus-id\tscore\nq1\td1\n", r"test\.tsv:2: expected 3 tab-separated"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\n", r"test\.tsv:3: score 'high'"),
    ],
)
def test_load_beir_bad_qrels_name_the_line(tmp_path: Path, qrels_text: str, pattern: str) -> None:
    folder = make_beir(tmp_path)
    (folder / "qrels" / "test.tsv").write_text(qrels_text, encoding="utf-8")
    with pytest.raises(ConfigError, match=pattern):
        load_beir(folder)


def test_load_beir_bad_corpus_lines_name_the_line(tmp_path: Path) -> None:
    folder = make_beir(tmp_path)
    corpus = folder / "corpus.jsonl"
    corpus.write_text(_jsonl(CORPUS) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:5: invalid JSON"):
        load_beir(folder)
    corpus.write_text(_jsonl([*CORPUS, {"_id": "d9"}]), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:4: field 'text'.*missing"):
        load_beir(folder)
    corpus.write_text(_jsonl([*CORPUS, CORPUS[0]]), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:4: doc id 'd1' appears twice"):
        load_beir(folder)
    corpus.write_text(_jsonl(CORPUS) + "[1, 2]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:4: expected a JSON object"):
        load_beir(folder)


def test_load_beir_query_without_text_is_an_error(tmp_path: Path) -> None:
    folder = make_beir(tmp_path)
    (folder / "queries.jsonl").write_text(_jsonl(QUERIES[:1]), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"1 query ids have no text.*first: q2"):
        load_beir(folder)


def test_load_beir_keeps_dangling_qrels(tmp_path: Path) -> None:
    folder = make_beir(tmp_path)
    (folder / "qrels" / "test.tsv").write_text(TEST_QRELS + "q1\tgone\t1\n", encoding="utf-8")
    assert load_beir(folder).qrels["q1"]["gone"] == 1


def test_corpus_doc_is_frozen_and_slotted() -> None:
    doc = CorpusDoc("d", "t", "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.text = "y"  # type: ignore[misc]
    assert not hasattr(doc, "__dict__")


# --------------------------------------------------------------------------- SQuAD


def squad(version: str) -> dict[str, Any]:
    v2 = version == "v2.0"

    def qa(qid: str, impossible: bool = False) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": qid, "question": f"question {qid}?", "answers": []}
        if v2:
            entry["is_impossible"] = impossible
        return entry

    return {
        "version": version,
        "data": [
            {
                "title": "Art A",
                "paragraphs": [
                    {"context": "A zero", "qas": [qa("a0"), qa("a0x", impossible=True)]},
                    {"context": "A one", "qas": [qa("a1")]},
                ],
            },
            {"title": "Art B", "paragraphs": [{"context": "B zero", "qas": [qa("b0")]}]},
        ],
    }


def test_load_squad_v11(tmp_path: Path) -> None:
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(squad("1.1")), encoding="utf-8")
    ds = load_squad(path)
    assert ds.name == "dev-v1.1"
    assert ds.corpus == {
        "0-0": CorpusDoc("0-0", "Art A", "A zero"),
        "0-1": CorpusDoc("0-1", "Art A", "A one"),
        "1-0": CorpusDoc("1-0", "Art B", "B zero"),
    }
    # v1.1 has no is_impossible flag: every question is answerable.
    assert ds.queries == {
        "a0": "question a0?",
        "a0x": "question a0x?",
        "a1": "question a1?",
        "b0": "question b0?",
    }
    assert ds.qrels == {"a0": {"0-0": 1}, "a0x": {"0-0": 1}, "a1": {"0-1": 1}, "b0": {"1-0": 1}}
    assert ds.unanswerable == {}


def test_load_squad_v20_gz_separates_unanswerable(tmp_path: Path) -> None:
    path = tmp_path / "dev-v2.0.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(squad("v2.0"), fh)
    ds = load_squad(path)
    assert ds.name == "dev-v2.0"
    assert len(ds.corpus) == 3
    assert set(ds.queries) == {"a0", "a1", "b0"}
    assert "a0x" not in ds.qrels
    assert ds.unanswerable == {"a0x": "question a0x?"}


def test_load_squad_structure_errors_name_the_json_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    data = squad("v2.0")
    del data["data"][1]["paragraphs"][0]["qas"][0]["question"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"data\[1\]\.paragraphs\[0\]\.qas\[0\]: field 'question'"
    ):
        load_squad(path)
    path.write_text(json.dumps({"version": "1.1"}), encoding="utf-8")
    with pytest.raises(ConfigError, match="field 'data': expected a list"):
        load_squad(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_squad(path)
    with pytest.raises(ConfigError, match="file not found"):
        load_squad(tmp_path / "absent.json")


def test_load_squad_duplicate_question_id(tmp_path: Path) -> None:
    data = squad("1.1")
    data["data"][1]["paragraphs"][0]["qas"][0]["id"] = "a0"
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="question id 'a0' appears twice"):
        load_squad(path)


# --------------------------------------------------------------------------- golden queries


def test_load_golden_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(
        '{"query": "how to install?", "expected": ["docs/install.md"]}\n'
        "\n"
        '{"id": "custom", "query": " spaced ", "expected": ["a.md", "doc-42"]}\n'
        '{"query": "third", "expected": ["x"]}\n',
        encoding="utf-8",
    )
    assert load_golden(path) == [
        GoldenQuery("q1", "how to install?", ("docs/install.md",)),
        GoldenQuery("custom", "spaced", ("a.md", "doc-42")),
        GoldenQuery("q3", "third", ("x",)),
    ]


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_load_golden_yaml(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"golden{suffix}"
    path.write_text(
        "- query: how to install?\n"
        "  expected: [docs/install.md]\n"
        "- id: 7\n"
        "  query: second\n"
        "  expected:\n"
        "    - a.md\n"
        "    - b.md\n",
        encoding="utf-8",
    )
    assert load_golden(path) == [
        GoldenQuery("q1", "how to install?", ("docs/install.md",)),
        GoldenQuery("7", "second", ("a.md", "b.md")),
    ]


def test_load_golden_empty_yaml_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    assert load_golden(path) == []


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ('{"expected": ["a"]}', "'query' must be a non-empty string"),
        ('{"query": "", "expected": ["a"]}', "'query' must be a non-empty string"),
        ('{"query": "q", "expected": "a.md"}', "'expected' must be a non-empty list"),
        ('{"query": "q", "expected": []}', "'expected' must be a non-empty list"),
        ('{"query": "q", "expected": [1]}', "'expected' must be a non-empty list"),
        ('{"query": "q", "expected": ["a"], "expect": ["b"]}', "unknown key.*expect"),
        ('{"query": "q", "expected": ["a"], "id": ""}', "'id' must be a non-empty string"),
        ('["q", ["a"]]', "expected a mapping"),
        ("{oops", "invalid JSON"),
    ],
)
def test_load_golden_jsonl_errors_name_the_line(tmp_path: Path, line: str, pattern: str) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text('{"query": "ok", "expected": ["a"]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=pattern) as info:
        load_golden(path)
    assert f"{path}:2" in str(info.value)


def test_load_golden_yaml_errors_name_entry_and_line(tmp_path: Path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text("- query: ok\n  expected: [a]\n- query: missing expected\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"entry 2 \(line 3\): 'expected'"):
        load_golden(path)
    path.write_text("query: not a list\nexpected: [a]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a YAML list"):
        load_golden(path)
    path.write_text("- query: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_golden(path)


def test_load_golden_duplicate_ids(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(
        '{"query": "a", "expected": ["x"]}\n{"id": "q1", "query": "b", "expected": ["y"]}\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"golden\.jsonl:2: id 'q1' already used"):
        load_golden(path)


def test_load_golden_rejects_other_extensions(tmp_path: Path) -> None:
    path = tmp_path / "golden.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unsupported golden-query file extension '\.json'"):
        load_golden(path)


# --------------------------------------------------------------------------- SQuAD article split


def test_article_split_is_file_order_halves() -> None:
    assert article_split(range(5)) == {0: "train", 1: "train", 2: "test", 3: "test", 4: "test"}
    assert article_split(["b", "a"]) == {"b": "train", "a": "test"}
    assert article_split(["only"]) == {"only": "test"}
    assert article_split([]) == {}
    with pytest.raises(ValueError, match="listed once"):
        article_split([1, 2, 1])


def squad_articles(n_articles: int) -> dict[str, Any]:
    """``n_articles`` articles of 2 paragraphs; each paragraph one answerable and one
    unanswerable question (ids ``a{article}p{paragraph}`` and ``...x``)."""

    def paragraph(ai: int, pi: int) -> dict[str, Any]:
        qid = f"a{ai}p{pi}"
        return {
            "context": f"context {ai}-{pi}",
            "qas": [
                {"id": qid, "question": f"{qid}?", "answers": [], "is_impossible": False},
                {"id": qid + "x", "question": f"{qid}x?", "answers": [], "is_impossible": True},
            ],
        }

    return {
        "version": "v2.0",
        "data": [
            {"title": f"Art {ai}", "paragraphs": [paragraph(ai, pi) for pi in range(2)]}
            for ai in range(n_articles)
        ],
    }


@pytest.mark.parametrize("n_articles", [2, 5, 8])
def test_load_squad_split_by_article(tmp_path: Path, n_articles: int) -> None:
    path = tmp_path / "dev-v2.0.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(squad_articles(n_articles), fh)
    whole = load_squad(path)
    train = load_squad(path, split="train")
    test = load_squad(path, split="test")
    assert (whole.name, train.name, test.name) == ("dev-v2.0", "dev-v2.0/train", "dev-v2.0/test")
    assert whole.corpus_name == train.corpus_name == test.corpus_name == "dev-v2.0"
    # the corpus is every paragraph in every split: one index serves both halves
    assert train.corpus == test.corpus == whole.corpus
    assert len(whole.corpus) == 2 * n_articles

    def articles(ds: EvalDataset) -> set[str]:
        return {ds.corpus[d].title for judged in ds.qrels.values() for d in judged}

    # disjoint halves that cover every article, the first n // 2 of the file in train
    assert articles(train) == {f"Art {ai}" for ai in range(n_articles // 2)}
    assert articles(test) == {f"Art {ai}" for ai in range(n_articles // 2, n_articles)}
    assert train.queries.keys() | test.queries.keys() == whole.queries.keys()
    assert not train.queries.keys() & test.queries.keys()
    assert {**train.qrels, **test.qrels} == whole.qrels
    # unanswerable questions follow their article
    assert set(train.unanswerable) == {q + "x" for q in train.queries}
    assert set(test.unanswerable) == {q + "x" for q in test.queries}
    # deterministic
    again = load_squad(path, split="test")
    assert again.queries == test.queries and again.qrels == test.qrels


def test_load_squad_unknown_split(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(squad_articles(2)), encoding="utf-8")
    with pytest.raises(ConfigError, match="'dev' is not one of all, train, test"):
        load_squad(path, split="dev")


def test_duplicate_ids_are_caught_across_the_halves(tmp_path: Path) -> None:
    data = squad_articles(2)
    data["data"][1]["paragraphs"][0]["qas"][0]["id"] = "a0p0"  # article 0 is train, 1 test
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for split in ("train", "test"):
        with pytest.raises(ConfigError, match="question id 'a0p0' appears twice"):
            load_squad(path, split=split)


def test_dataset_corpus_name_defaults_to_name() -> None:
    ds = EvalDataset(name="beir-x/test", corpus={}, queries={}, qrels={})
    assert ds.corpus_name == "beir-x/test"


SQUAD_V11 = "dev-v1.1-es_small.json.gz"
SQUAD_V20 = "dev-v2.0-es_small.json.gz"


@pytest.mark.shared
def test_squad_es_halves(shared_corpus: Callable[[str], Path]) -> None:
    path = shared_corpus("squad-es-dev-small") / SQUAD_V11
    whole, train, test = (load_squad(path, split=s) for s in ("all", "train", "test"))
    assert len(train.corpus) == len(test.corpus) == 1_996
    titles = {doc.title for doc in whole.corpus.values()}
    assert len(titles) == 48  # titles are distinct, so they name the articles

    def articles(ds: EvalDataset) -> set[str]:
        return {ds.corpus[d].title for judged in ds.qrels.values() for d in judged}

    assert len(articles(train)) == len(articles(test)) == 24
    assert articles(train) | articles(test) == titles
    assert not articles(train) & articles(test)
    assert len(train.queries) + len(test.queries) == len(whole.queries) == 6_583
    assert 0.4 < len(train.queries) / len(whole.queries) < 0.6
    assert "Super Bowl _ 50" in articles(train)  # the first article of the file


@pytest.mark.shared
def test_refusal_calibration_uses_the_same_halves(shared_corpus: Callable[[str], Path]) -> None:
    from ragstrata.eval.refusal import QuestionEvidence, calibrate, squad_questions

    path = shared_corpus("squad-es-dev-small") / SQUAD_V20
    features = [
        QuestionEvidence(qid, article, impossible, 0.5, 0.5)
        for qid, article, _, impossible in squad_questions(path)
    ]
    report = calibrate(features)
    train = load_squad(path, split="train")
    test = load_squad(path, split="test")
    assert report.n_calibration == len(train.queries) + len(train.unanswerable)
    assert report.n_test == len(test.queries) + len(test.unanswerable)


# --------------------------------------------------------------------------- gold answers


def test_load_squad_keeps_gold_answers(tmp_path: Path) -> None:
    data = squad("1.1")
    qas = data["data"][0]["paragraphs"][0]["qas"]
    qas[0]["answers"] = [
        {"text": "cero", "answer_start": 2},
        {"text": " cero ", "answer_start": 2},
        {"text": "el cero", "answer_start": 0},
        {"text": "", "answer_start": 0},
    ]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    ds = load_squad(path)
    assert ds.answers == {"a0": ("cero", "el cero")}
    assert load_squad(path, split="test").answers == {}  # a0 is in the train half
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"answer_start": 0}]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"qas\[0\]\.answers\[0\]: field 'text'"):
        load_squad(path)


def test_load_golden_answers(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "- query: default overlap?\n"
        "  expected: [docs/configuration.md]\n"
        "  answers: ['15 %', 0.15, ' 15 % ']\n"
        "- query: no answers\n"
        "  expected: [a.md]\n",
        encoding="utf-8",
    )
    assert load_golden(path) == [
        GoldenQuery("q1", "default overlap?", ("docs/configuration.md",), ("15 %", "0.15")),
        GoldenQuery("q2", "no answers", ("a.md",)),
    ]


@pytest.mark.parametrize(
    ("answers", "pattern"),
    [
        ('"15 %"', "'answers' must be a list"),
        ("[true]", "'answers' must be a list"),
        ('[""]', "only empty strings"),
    ],
)
def test_load_golden_answers_errors(tmp_path: Path, answers: str, pattern: str) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(f'{{"query": "q", "expected": ["a"], "answers": {answers}}}\n', "utf-8")
    with pytest.raises(ConfigError, match=pattern):
        load_golden(path)
