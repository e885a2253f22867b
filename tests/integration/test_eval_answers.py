"""Answer-level evaluation end to end: a tiny generated SQuAD file, the real default embedder,
the real index, the extractive answerer; the absent-paragraph copy and the CLI gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragstrata.cli import app
from ragstrata.config import RagConfig
from ragstrata.eval.answers import AnswerReport, cases_from_dataset, run_answer_eval
from ragstrata.eval.datasets import load_squad
from ragstrata.eval.runner import dataset_documents
from ragstrata.index import catalog

pytestmark = pytest.mark.slow

PARAGRAPHS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "El río Amazonas recorre unos 7.000 kilómetros desde los Andes peruanos hasta el océano "
        "Atlántico. Su cuenca es la mayor del mundo.",
        [("¿Cuántos kilómetros recorre el río Amazonas?", "7.000 kilómetros")],
    ),
    (
        "La Torre Eiffel fue construida por Gustave Eiffel para la Exposición Universal de 1889 "
        "en París. Mide unos 330 metros de altura.",
        [
            (
                "¿Para qué exposición se construyó la Torre Eiffel?",
                "la Exposición Universal de 1889",
            ),
            ("¿Cuánto mide la Torre Eiffel?", "330 metros"),
        ],
    ),
    (
        "El café llegó a Colombia a comienzos del siglo XVIII, traído por misioneros jesuitas. "
        "Hoy el país es uno de los mayores exportadores de café arábica.",
        [("¿Quiénes llevaron el café a Colombia?", "misioneros jesuitas")],
    ),
    (
        "Photosynthesis converts light energy into chemical energy stored in glucose. It takes "
        "place in the chloroplasts of plant cells.",
        [("Where does photosynthesis take place?", "in the chloroplasts")],
    ),
    (
        "The Great Wall of China was built over many centuries to protect Chinese states from "
        "nomadic invasions. Its best-known sections date from the Ming dynasty.",
        [("Which dynasty built the best-known sections of the Great Wall?", "the Ming dynasty")],
    ),
    (
        "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in "
        "1911. She was the first person to win two Nobel Prizes.",
        [("In which year did Marie Curie win the Nobel Prize in Chemistry?", "1911")],
    ),
]


def squad_file(tmp_path: Path) -> Path:
    data: list[dict[str, Any]] = []
    for ai in range(2):
        paragraphs = []
        for pi, (context, qas) in enumerate(PARAGRAPHS[ai * 3 : ai * 3 + 3]):
            paragraphs.append(
                {
                    "context": context,
                    "qas": [
                        {
                            "id": f"{ai}{pi}{qi}",
                            "question": q,
                            "answers": [{"text": a, "answer_start": context.find(a)}],
                        }
                        for qi, (q, a) in enumerate(qas)
                    ],
                }
            )
        data.append({"title": f"Artículo {ai}", "paragraphs": paragraphs})
    path = tmp_path / "tiny-v1.1.json"
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[AnswerReport, Path, Path]:
    tmp = tmp_path_factory.mktemp("answers")
    path = squad_file(tmp)
    dataset = load_squad(path)
    config = RagConfig(home=tmp).with_index(tmp / "idx")
    report = run_answer_eval(
        config,
        cases_from_dataset(dataset),
        name=dataset.name,
        documents=dataset_documents(dataset),
        absent_fraction=0.5,
        seed=1,
        absent_scope="drawn",
    )
    return report, tmp / "idx", path


def test_answers_are_scored_with_the_default_embedder(
    run: tuple[AnswerReport, Path, Path],
) -> None:
    report, _, _ = run
    assert report.embedder.startswith("e5-onnx")
    assert report.answerer == "extractive"
    m = report.metrics()
    assert m["n"] == 7 and report.n_docs == 6
    # every paragraph is short and on its own topic: the answers quote the gold paragraph
    assert m["answered"] >= 6 / 7
    assert m["cites_gold"] >= 0.8
    assert m["contains_gold"] >= 0.8
    assert 0.0 < m["f1"] < 1.0  # whole sentences: recall 1, precision well under 1
    assert m["unverified_citations"] == 0.0  # extractive quotes are verbatim
    assert m["latency_ms"]["p95"] >= m["latency_ms"]["p50"] > 0


def test_absent_questions_are_asked_on_a_pruned_copy(
    run: tuple[AnswerReport, Path, Path],
) -> None:
    report, index, _ = run
    assert len(report.absent) == 4  # round(0.5 * 7)
    assert report.absent_removed_docs == 3 or report.absent_removed_docs == 4
    copies = list(index.parent.glob("idx.absent-*"))
    assert len(copies) == 1
    kept = catalog.read_manifest(copies[0]).documents
    assert len(kept) == 6 - report.absent_removed_docs
    assert len(catalog.read_manifest(index).documents) == 6  # the full index is untouched
    m = report.metrics()
    assert m["n_absent"] == 4
    assert 0.0 <= m["refusal_recall"] <= 1.0
    # the other questions cannot be answered from a removed paragraph
    for outcome in report.absent:
        assert not outcome.cites_gold


def test_cli_json_table_and_gate(run: tuple[AnswerReport, Path, Path], tmp_path: Path) -> None:
    report, index, path = run
    out = tmp_path / "report.json"
    base = tmp_path / "base.json"
    base.write_text(
        json.dumps({"answerer": "extractive", "metrics": {"contains_gold": 1.5}}), "utf-8"
    )
    args = ["eval-answers", str(path), "--split", "all", "--index", str(index), "--seed", "1"]
    args += ["--absent-scope", "drawn"]
    result = CliRunner().invoke(app, [*args, "--json", str(out), "--baseline", str(base)])
    assert result.exit_code == 4, result.output
    assert "| extractive | 7 |" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["metrics"]["contains_gold"] == report.metrics()["contains_gold"]
    assert len(data["per_query"]) == 7 and len(data["per_query_absent"]) == 4
    assert len(list(index.parent.glob("idx.absent-*"))) == 1  # the copy is reused
    base.write_text(json.dumps({"answerer": "extractive", "metrics": data["metrics"]}), "utf-8")
    again = CliRunner().invoke(app, [*args, "--absent", "0.5", "--baseline", str(base)])
    assert again.exit_code == 0, again.output


def test_question_scope_asks_each_absent_question_without_only_its_own_paragraph(
    run: tuple[AnswerReport, Path, Path],
) -> None:
    report, index, path = run
    dataset = load_squad(path)
    scoped = run_answer_eval(
        RagConfig(home=index.parent).with_index(index),
        cases_from_dataset(dataset),
        name=dataset.name,
        absent_fraction=0.5,
        seed=1,
        absent_scope="question",
    )
    assert scoped.absent_scope == "question" and report.absent_scope == "drawn"
    assert [o.qid for o in scoped.absent] == [o.qid for o in report.absent]  # same draw
    assert len(list(index.parent.glob("idx.absent-*"))) == 1  # no new copy: a filter
    for outcome in scoped.absent:
        assert not outcome.cites_gold
        assert not outcome.answer_in_hits  # its own paragraph is the only one with the answer
    # the present questions are asked exactly as before
    assert [o.refused for o in scoped.outcomes] == [o.refused for o in report.outcomes]
    assert scoped.to_json()["absent_scope"] == "question"
    bad = CliRunner().invoke(
        app, ["eval-answers", str(path), "--index", str(index), "--absent-scope", "article"]
    )
    assert bad.exit_code != 0 and "--absent-scope" in bad.output


def test_a_golden_entry_whose_document_is_missing_is_not_scored(tmp_path: Path) -> None:
    """Trial 25 (2026-12-06): eval-answers warned that `edge/teletrabajo.md` was not in the
    index, then scored the entry as answerable (`eval` left it out)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vacaciones.md").write_text(
        "# Vacaciones\n\nCada empleado tiene derecho a 23 días laborables de vacaciones al año.\n",
        encoding="utf-8",
    )
    index = tmp_path / "idx"
    env = {"RAGSTRATA_INGEST_WORKERS": "0"}
    ingested = CliRunner().invoke(app, ["ingest", str(docs), "--index", str(index)], env=env)
    assert ingested.exit_code == 0, ingested.output
    golden = tmp_path / "g.yaml"
    golden.write_text(
        "- id: dias\n  query: ¿Cuántos días de vacaciones tiene cada empleado?\n"
        "  expected: [vacaciones.md]\n  answers: ['23 días']\n"
        "- id: teletrabajo\n  query: ¿Dónde está la política de teletrabajo?\n"
        "  expected: [teletrabajo.md]\n  answers: ['dos días']\n",
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    args = ["eval-answers", str(golden), "--index", str(index), "--absent", "0"]
    result = CliRunner().invoke(app, [*args, "--json", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert "1 entries are not scored" in result.output and "teletrabajo" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [q["qid"] for q in data["per_query"]] == ["dias"], data["per_query"]


def test_the_drawn_scope_is_refused_when_vectors_live_in_qdrant(tmp_path: Path) -> None:
    """Review 47: with store.url set, the drawn scope's copy of the index directory shared the
    Qdrant collection, and its prune deleted the gold documents' vectors from the real index."""
    from ragstrata.errors import ConfigError

    config = RagConfig.load(
        env={"RAGSTRATA_HOME": str(tmp_path)},
        overrides={"store.url": f"local:{tmp_path / 'qdrant'}"},
    )
    with pytest.raises(ConfigError, match="absent-scope question"):
        run_answer_eval(config, [], name="x", absent_fraction=0.5, absent_scope="drawn")
    assert not (tmp_path / "qdrant").exists()  # refused before anything was opened
