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
from ragstrata.errors import RetrievalError
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.hybrid import HybridRetriever

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
    either = engine.search("deploy", filters={"language": ("es", "en")}).hits  # a tuple: any of
    assert {h.chunk.language for h in either} == {"es", "en"}
    # the library takes long lists (eval-answers filters on every document but a few)
    many = engine.search("deploy", filters={"doc_id": [f"d{i}" for i in range(500)]}).hits
    assert not many


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"lang": "en"}, "filter key 'lang' is not allowed"),  # once: silently no hit at all
        ({"language": None}, "NoneType is not allowed"),  # once: a raw TypeError
        ({"language": []}, "a list must hold at least one"),
        ({"doc_id": [True]}, "a list must hold at least one"),
    ],
)
def test_a_bad_filter_is_a_clear_error(
    engine: Ragstrata, filters: dict[str, object], message: str
) -> None:
    with pytest.raises(RetrievalError, match=message) as caught:
        engine.search("deploy", filters=filters)  # type: ignore[arg-type]
    assert caught.value.code == "RS600"
    with pytest.raises(RetrievalError, match=message):
        engine.ask("How do I roll back a bad deploy?", filters=filters)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "question", ["¿En cuánto tiempo debe responder el ingeniero de guardia a un aviso?"]
)
def test_bm25_stands_in_for_english_passages_of_a_mostly_spanish_result(
    engine: Ragstrata, question: str
) -> None:
    """The question is judged same-language (most dense hits are Spanish), so the Spanish
    weights apply; BM25 cannot match the English on-call page, and without a stand-in the
    Spanish pages that share words with the question fuse above it."""
    store = engine._read_store()
    config = engine.config.retrieval
    shipped = HybridRetriever(store, engine.read_embedder, engine.analyzer, config)
    plain = HybridRetriever(
        store, engine.read_embedder, engine.analyzer, config, bm25_stand_in=False
    )
    try:
        result = shipped.search(question)
        assert result.language_relation == "same"
        assert Path(result.hits[0].chunk.source).name == "oncall.md"
        without = [Path(h.chunk.source).name for h in plain.search(question).hits]
        assert without[0] != "oncall.md"  # the stand-in is what lifts it
        # explain keeps the ranks the retrievers gave: BM25 ranked the page below dense or not
        ranks = {e.retriever: e.rank for e in result.hits[0].explain}
        assert ranks.get("bm25", ranks["dense"] + 1) > ranks["dense"]
    finally:
        shipped.close()
        plain.close()


@pytest.mark.parametrize("question", ["¿Qué es lo que?", "x" * 5000])
def test_without_any_bm25_match_the_fusion_follows_the_dense_arm(
    engine: Ragstrata, question: str
) -> None:
    """BM25 matches nothing (stop words only; an unknown token): it says nothing against any
    passage, so no passage may take a BM25 share from the stand-in, and the fused order is the
    dense order (found by a new user: every English passage led a stop-word question)."""
    config = engine.config.retrieval
    retriever = HybridRetriever(engine._read_store(), engine.read_embedder, engine.analyzer, config)
    try:
        assert not retriever.search(question, mode="bm25").hits
        hybrid = [h.chunk.chunk_id for h in retriever.search(question, top_k=5).hits]
        dense = [h.chunk.chunk_id for h in retriever.search(question, top_k=5, mode="dense").hits]
        assert hybrid == dense
    finally:
        retriever.close()


@pytest.mark.parametrize("query", ["", "   ", "\x00", " \x00\x00 "])
def test_an_empty_query_is_a_clear_error(engine: Ragstrata, query: str) -> None:
    with pytest.raises(RetrievalError, match="the query is empty"):
        engine.search(query)


@pytest.mark.parametrize("query", ["...", "???!!!", "¿¿??", "-- => --"])
def test_a_query_without_letters_or_digits_is_a_clear_error(engine: Ragstrata, query: str) -> None:
    """A new user's `ask "..."` was answered with a cited quote (the dense arm ranks any text):
    no search, no answer, the reason said (2026-12-05)."""
    with pytest.raises(RetrievalError, match="no letters or digits"):
        engine.search(query)
    with pytest.raises(RetrievalError, match="no letters or digits"):
        engine.ask(query)


def test_search_without_docs_ranks_as_if_the_page_were_gone(engine: Ragstrata) -> None:
    """The "paragraph absent" search of the answerability training and the reader benches: the
    removed page's chunks never come back and the other pages keep their order."""
    from ragstrata.training.answerability import search_without_docs

    question = "¿Cómo revierto un despliegue que falla?"
    full = engine.search(question, top_k=10).hits
    gone = full[0].chunk.doc_id
    store, manifest = engine._read_store(), engine.manifest()
    hits = search_without_docs(
        store,
        manifest,
        {gone, "not-a-document"},
        engine.read_embedder,
        engine.analyzer,
        engine.config.retrieval,
        question,
        top_k=10,
    )
    assert hits and all(h.chunk.doc_id != gone for h in hits)
    kept = [h.chunk.chunk_id for h in full if h.chunk.doc_id != gone]
    assert [h.chunk.chunk_id for h in hits][: len(kept)] == kept[: len(hits)]
