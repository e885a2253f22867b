"""A folder of a few files with the default embedder: the small-index answerability model
decides, in both languages (real packaged e5 model, real store, real extractive answerer)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.generate.answerability import answerability_model
from ragstrata.generate.evidence import LearnedRule
from ragstrata.pipeline import Ragstrata
from ragstrata.render import diagnostics_json

pytestmark = pytest.mark.slow

DOCS = {
    "backups.md": "# Backups\n\n## Retention\n\nEvery nightly backup is retained for "
    "thirty days, then deleted. Each archive holds the database dump and the uploaded "
    "files.\n\n## Restoring\n\nTo restore, stop the service and run the restore tool "
    "with the date of the backup.\n",
    "servidor.md": "# Servidor\n\nEl servidor lee PORT y WORKERS al arrancar; sin ellas escucha "
    "en el puerto 8000 con dos procesos de trabajo.\n\n## Registros\n\nLos registros rotan cada "
    "día y se conservan dos semanas.\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ragstrata]:
    root = tmp_path_factory.mktemp("small-refusal")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    eng = Ragstrata(RagConfig(home=root / "home"))
    assert eng.ingest([root / "docs"]).added == 2
    yield eng
    eng.close()


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("How long are backups kept?", "backups.md"),
        ("¿En qué puerto escucha el servidor por defecto?", "servidor.md"),
    ],
)
def test_small_index_answers_with_the_small_index_model(
    engine: Ragstrata, question: str, source: str
) -> None:
    answer = engine.ask(question)
    meta = diagnostics_json(answer)
    assert meta["evidence"]["model"] == "answerability-e5-small-v2"
    assert not answer.refusal, meta
    assert answer.citations[0].source.endswith(source)
    small = answerability_model("e5", "small")
    assert meta["min_evidence"] == small.threshold  # same language: the model's own threshold


@pytest.mark.parametrize(
    "question", ["What is the capital of Australia?", "¿Quién ganó el mundial de fútbol de 1986?"]
)
def test_small_index_refuses_off_topic_questions(engine: Ragstrata, question: str) -> None:
    answer = engine.ask(question)
    meta = diagnostics_json(answer)
    assert answer.refusal and meta["refused_by"] == "evidence"
    assert meta["evidence"]["model"] == "answerability-e5-small-v2"
    assert meta["evidence"]["score"] < meta["min_evidence"]


def test_the_rule_chosen_before_any_search_already_knows_the_index_is_small(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "backups.md").write_text(DOCS["backups.md"], encoding="utf-8")
    config = RagConfig(home=tmp_path / "home")
    with Ragstrata(config) as writer:
        writer.ingest([tmp_path / "docs"])
    with Ragstrata(config) as fresh:  # nothing searched yet
        rule = fresh._evidence_rule()
        assert isinstance(rule, LearnedRule) and rule.model.scope == "small"


def test_the_reader_reads_when_the_index_counts_as_large(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's wiring of the reader, on the real packaged reader: with the large-index
    rule (its size bar lowered to this index) ``ask`` reads the first hits, blends, and says
    so; ``llm.reader = false`` goes back to the model alone."""
    from dataclasses import replace

    from ragstrata.generate import evidence
    from ragstrata.generate.answerability import reader_blend

    monkeypatch.setattr(evidence, "LEARNED_MIN_CHUNKS", 1)
    answer = engine.ask("How long are backups kept?")
    meta = diagnostics_json(answer)
    assert meta["evidence"]["model"] == "answerability-e5-v2+reader-e5-small-v0", meta
    assert isinstance(meta["evidence"]["reader"], float)
    assert meta["min_evidence"] == reader_blend("e5").threshold
    assert not answer.refusal and answer.citations[0].source.endswith("backups.md")
    monkeypatch.setattr(
        engine, "config", replace(engine.config, llm=replace(engine.config.llm, reader=False))
    )
    meta_off = diagnostics_json(engine.ask("How long are backups kept?"))
    assert meta_off["evidence"]["model"] == "answerability-e5-v2"
    assert meta_off["evidence"]["reader"] is None


def test_warm_up_loads_the_reader_only_when_ask_may_use_it(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's MCP server on a 65-chunk index loaded the reader (0.6 GB, 2 s) that its
    small-index rule never reads (2026-12-04)."""
    from dataclasses import replace

    from ragstrata.generate.evidence import LEARNED_MIN_CHUNKS

    warmed: list[str] = []

    class Probe:
        name = "probe"

        def warm_up(self) -> None:
            warmed.append("reader")

    monkeypatch.setattr(engine, "_reader", Probe)
    engine.warm_up_reader(n_chunks=LEARNED_MIN_CHUNKS - 1)
    assert warmed == []
    engine.warm_up_reader(n_chunks=LEARNED_MIN_CHUNKS)
    assert warmed == ["reader"]
    hand = replace(engine.config, llm=replace(engine.config.llm, min_evidence=1.1))
    monkeypatch.setattr(engine, "config", hand)
    engine.warm_up_reader(n_chunks=10_000)  # the hand-made rule reads no passage
    assert warmed == ["reader"]


def test_copies_of_a_file_do_not_turn_its_answer_into_a_refusal(
    tmp_path: Path, shared_corpus: Callable[[str], Path]
) -> None:
    """Four copies of FastAPI's Spanish CORS page and an unrelated note: the copies' equal
    scores made every gap feature 0 and "¿Cómo configuro CORS?" was refused (0.21 against 0.28)
    although one copy answers it (0.70); the evidence check now reads each passage once."""
    page = shared_corpus("fastapi-docs-md") / "es" / "docs" / "tutorial" / "cors.md"
    (tmp_path / "docs").mkdir()
    for i in range(4):
        (tmp_path / "docs" / f"cors-{i}.md").write_bytes(page.read_bytes())
    (tmp_path / "docs" / "notas.md").write_text(
        "# Notas\n\nEl almuerzo es a las dos de la tarde en la cafetería del tercer piso.\n",
        encoding="utf-8",
    )
    question = "¿Cómo configuro CORS?"
    with Ragstrata(RagConfig(home=tmp_path / "home")) as eng:
        assert eng.ingest([tmp_path / "docs"]).added == 5
        answer = eng.ask(question)
        hits = eng.search(question, top_k=5).hits
    assert len({h.chunk.text for h in hits}) < len(hits)  # the copies were retrieved
    meta = diagnostics_json(answer)
    assert not answer.refusal, meta
    assert meta["evidence"]["model"] == "answerability-e5-small-v2"
