"""A folder of a few files with the default embedder: the reader blend decides (and, with the
reader off, the small-index answerability model), in both languages (real packaged e5 model and
reader, real store, real extractive answerer)."""

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


BLEND = "answerability-e5-v2+reader-e5-small-v0"
SMALL = "answerability-e5-small-v2"


def _reader_off(engine: Ragstrata, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    llm = replace(engine.config.llm, reader=False)
    monkeypatch.setattr(engine, "config", replace(engine.config, llm=llm))


@pytest.mark.parametrize("reader", [True, False], ids=["reader", "no-reader"])
@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("How long are backups kept?", "backups.md"),
        ("¿En qué puerto escucha el servidor por defecto?", "servidor.md"),
    ],
)
def test_small_index_answers(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch, question: str, source: str, reader: bool
) -> None:
    """By default (``llm.reader`` on) the reader blend decides on a small index as on a large
    one; with the reader off, the small-index model at its own threshold."""
    from ragstrata.generate.answerability import reader_blend

    if not reader:
        _reader_off(engine, monkeypatch)
    answer = engine.ask(question)
    meta = diagnostics_json(answer)
    assert not answer.refusal, meta
    assert answer.citations[0].source.endswith(source)
    if reader:
        assert meta["evidence"]["model"] == BLEND, meta
        assert isinstance(meta["evidence"]["reader"], float)
        assert meta["min_evidence"] == reader_blend("e5").threshold
    else:
        assert meta["evidence"]["model"] == SMALL, meta
        assert meta["evidence"]["reader"] is None
        small = answerability_model("e5", "small")
        assert meta["min_evidence"] == small.threshold  # same language: the model's own


@pytest.mark.parametrize("reader", [True, False], ids=["reader", "no-reader"])
@pytest.mark.parametrize(
    "question", ["What is the capital of Australia?", "¿Quién ganó el mundial de fútbol de 1986?"]
)
def test_small_index_refuses_off_topic_questions(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch, question: str, reader: bool
) -> None:
    if not reader:
        _reader_off(engine, monkeypatch)
    answer = engine.ask(question)
    meta = diagnostics_json(answer)
    assert answer.refusal and meta["refused_by"] == "evidence"
    assert meta["evidence"]["model"] == (BLEND if reader else SMALL)
    assert meta["evidence"]["score"] < meta["min_evidence"]


def test_the_rule_chosen_before_any_search_already_knows_the_index_is_small(
    tmp_path: Path,
) -> None:
    """With the reader off the index's size picks the model, before any search too."""
    from dataclasses import replace

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "backups.md").write_text(DOCS["backups.md"], encoding="utf-8")
    config = RagConfig(home=tmp_path / "home")
    config = replace(config, llm=replace(config.llm, reader=False))
    with Ragstrata(config) as writer:
        writer.ingest([tmp_path / "docs"])
    with Ragstrata(config) as fresh:  # nothing searched yet
        rule = fresh._evidence_rule()
        assert isinstance(rule, LearnedRule) and rule.model.scope == "small"


def test_the_size_picks_the_model_only_with_the_reader_off(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader blend applies at every index size (no switch at ``LEARNED_MIN_CHUNKS``: a
    new user's 8 added chunks flipped 7 of 24 answers, 2026-12-05); with the reader off, an
    index counted as large gets the large-index model alone."""
    from ragstrata.generate import evidence

    monkeypatch.setattr(evidence, "LEARNED_MIN_CHUNKS", 1)
    assert diagnostics_json(engine.ask("How long are backups kept?"))["evidence"]["model"] == BLEND
    _reader_off(engine, monkeypatch)
    meta_off = diagnostics_json(engine.ask("How long are backups kept?"))
    assert meta_off["evidence"]["model"] == "answerability-e5-v2"
    assert meta_off["evidence"]["reader"] is None


def test_the_evidence_checks_reader_also_picks_the_sentences(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extractive answerer reads its best sentences with the evidence check's reader (one
    model loaded, one decision: ``llm.reader``); with the reader off or the hand-made rule, it
    has none."""
    from dataclasses import replace

    from ragstrata.generate.extractive import ExtractiveAnswerer

    answerer = engine._answerer(str)
    assert isinstance(answerer, ExtractiveAnswerer)
    assert answerer.reader is not None and answerer.reader is engine._reader()
    _reader_off(engine, monkeypatch)
    assert getattr(engine._answerer(str), "reader", "missing") is None
    hand = replace(engine.config, llm=replace(engine.config.llm, reader=True, min_evidence=1.1))
    monkeypatch.setattr(engine, "config", hand)
    assert getattr(engine._answerer(str), "reader", "missing") is None


def test_warm_up_loads_the_reader_only_when_ask_may_use_it(
    engine: Ragstrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader is loaded whatever the index's size when it is on, and not at all when it is
    off or the hand-made rule decides (``llm.min_evidence``)."""
    from dataclasses import replace

    warmed: list[str] = []

    class Probe:
        name = "probe"

        def warm_up(self) -> None:
            warmed.append("reader")

    monkeypatch.setattr(engine, "_reader", Probe)
    engine.warm_up_reader(n_chunks=65)
    assert warmed == ["reader"]
    hand = replace(engine.config, llm=replace(engine.config.llm, min_evidence=1.1))
    monkeypatch.setattr(engine, "config", hand)
    engine.warm_up_reader(n_chunks=10_000)  # the hand-made rule reads no passage
    assert warmed == ["reader"]
    off = replace(engine.config, llm=replace(engine.config.llm, min_evidence=None, reader=False))
    monkeypatch.setattr(engine, "config", off)
    engine.warm_up_reader(n_chunks=10_000)
    assert warmed == ["reader"]


def test_copies_of_a_file_do_not_turn_its_answer_into_a_refusal(
    tmp_path: Path, shared_corpus: Callable[[str], Path]
) -> None:
    """Four copies of FastAPI's Spanish CORS page and an unrelated note: the copies' equal
    scores made every gap feature 0 and "¿Cómo configuro CORS?" was refused (0.21 against 0.28)
    although one copy answers it (0.70); the evidence check now reads each passage once."""
    from dataclasses import replace

    page = shared_corpus("fastapi-docs-md") / "es" / "docs" / "tutorial" / "cors.md"
    (tmp_path / "docs").mkdir()
    for i in range(4):
        (tmp_path / "docs" / f"cors-{i}.md").write_bytes(page.read_bytes())
    (tmp_path / "docs" / "notas.md").write_text(
        "# Notas\n\nEl almuerzo es a las dos de la tarde en la cafetería del tercer piso.\n",
        encoding="utf-8",
    )
    question = "¿Cómo configuro CORS?"
    config = RagConfig(home=tmp_path / "home")
    config = replace(config, llm=replace(config.llm, reader=False))  # the small model's features
    with Ragstrata(config) as eng:
        assert eng.ingest([tmp_path / "docs"]).added == 5
        answer = eng.ask(question)
        hits = eng.search(question, top_k=5).hits
    assert len({h.chunk.text for h in hits}) == len(hits)  # one hit per passage
    assert any(len(h.copies) == 3 for h in hits)  # the copies were retrieved, folded into it
    meta = diagnostics_json(answer)
    assert not answer.refusal, meta
    assert meta["evidence"]["model"] == "answerability-e5-small-v2"
