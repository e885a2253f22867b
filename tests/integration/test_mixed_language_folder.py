"""A folder that mixes Spanish and English files (``bench/data/mixed-folder``: two Spanish HR
pages, two English engineering pages), with the real default embedder and store: a Spanish
question about an English page finds that page first, because the dense arm scores the English
passages with the question moved into English (``HybridRetriever._language_neutral``), while
questions about pages in their own language keep finding them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.pipeline import Ragstrata

pytestmark = pytest.mark.slow

FOLDER = Path(__file__).parents[2] / "bench" / "data" / "mixed-folder"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ragstrata]:
    root = tmp_path_factory.mktemp("mixed")
    with Ragstrata(RagConfig(home=root, index_dir=root / "index")) as rag:
        assert not rag.ingest([FOLDER]).failures
        yield rag


@pytest.mark.parametrize(
    "question",
    ["¿Cuándo están congelados los despliegues?", "¿Cómo revierto un despliegue que falla?"],
)
def test_a_spanish_question_about_an_english_page_finds_it_first(
    engine: Ragstrata, question: str
) -> None:
    result = engine.search(question)
    assert Path(result.hits[0].chunk.source).name == "deploy-runbook.md"
    assert result.hits[0].chunk.language == "en"
    assert result.language_relation == "cross"
    # the reported dense score is the cosine of the question as asked
    query = engine.embedder.embed_query(question)
    store = engine.retriever.store  # type: ignore[attr-defined]
    top = result.hits[0]
    vector = store.dense_vectors([top.chunk.chunk_id])[top.chunk.chunk_id]
    dense = [e.score for e in top.explain if e.retriever == "dense"]
    assert dense and dense[0] == pytest.approx(float(query @ vector), abs=1e-5)


@pytest.mark.parametrize(
    ("question", "page"),
    [
        ("¿Cuántos días de vacaciones tengo al año?", "vacaciones.md"),
        ("¿Cuál es la red wifi para visitantes?", "oficina.md"),
        ("How do I roll back a bad deploy?", "deploy-runbook.md"),
    ],
)
def test_questions_in_their_pages_language_still_find_them(
    engine: Ragstrata, question: str, page: str
) -> None:
    result = engine.search(question)
    assert Path(result.hits[0].chunk.source).name == page
    assert result.language_relation == "same"


def test_a_language_filter_is_kept(engine: Ragstrata) -> None:
    hits = engine.search("¿Cómo revierto un despliegue que falla?", filters={"language": "es"}).hits
    assert hits and all(h.chunk.language == "es" for h in hits)
