"""Language-aware fusion with the real default embedder and store: a question asked in another
language than the passages gets the cross-lingual RRF weights, one in their language the
same-language weights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragstrata.config import RagConfig, RetrievalConfig
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve import hybrid
from ragstrata.types import Hit

pytestmark = pytest.mark.slow

DOCS = {
    "billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent by email on the first day of "
    "each month. Each invoice lists the API calls of the previous month and their price.\n",
    "limits.md": "# Rate limits\n\n## Requests per minute\n\nEach API key may send one hundred "
    "requests per minute. Above that limit the server answers with status 429.\n",
    "install.md": "# Installation\n\n## Requirements\n\nThe installation needs Python 3.11 and "
    "four gigabytes of memory. Install the package with pip and run the setup command.\n",
}


def _corpus(root: Path) -> Path:
    """:data:`DOCS` written under ``root/corpus``."""
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ragstrata]:
    root = tmp_path_factory.mktemp("lang")
    corpus = _corpus(root)
    retrieval = RetrievalConfig(
        dense_weight=0.3, bm25_weight=0.7, cross_dense_weight=0.9, cross_bm25_weight=0.1
    )
    config = RagConfig(home=root, index_dir=root / "index", retrieval=retrieval)
    with Ragstrata(config) as rag:
        assert not rag.ingest([corpus]).failures
        yield rag


def _fused(hit: Hit, w_dense: float, w_bm25: float, k: int = 60) -> float:
    weights = {"dense": w_dense, "bm25": w_bm25}
    return sum(weights[e.retriever] / (k + e.rank) for e in hit.explain)


def test_spanish_question_over_english_passages_uses_the_cross_weights(engine: Ragstrata) -> None:
    result = engine.search("¿Cuántas peticiones por minuto puede enviar cada clave de la API?")
    assert result.language_relation == "cross"
    assert result.hits[0].chunk.source.endswith("limits.md")
    for hit in result.hits:
        assert hit.score == pytest.approx(_fused(hit, 0.9, 0.1), rel=1e-9)


def test_english_question_uses_the_same_language_weights(engine: Ragstrata) -> None:
    result = engine.search("How many requests per minute may each API key send?")
    assert result.language_relation == "same"
    assert result.hits[0].chunk.source.endswith("limits.md")
    for hit in result.hits:
        assert hit.score == pytest.approx(_fused(hit, 0.3, 0.7), rel=1e-9)


def test_bm25_reports_no_relation_and_dense_reports_it(engine: Ragstrata) -> None:
    assert engine.search("requests per minute", mode="bm25").language_relation == "unknown"
    assert engine.search("How many requests per minute?", mode="dense").language_relation == "same"


QUESTION_ES = "¿Qué versión de Python necesita la instalación?"


def test_a_cross_lingual_query_is_searched_with_its_shifted_vector(engine: Ragstrata) -> None:
    retriever = engine.retriever
    offsets = retriever.offsets  # type: ignore[attr-defined]
    assert offsets is not None and set(offsets.means) >= {"es", "en"}
    result = engine.search(QUESTION_ES, mode="dense", top_k=3)
    assert result.language_relation == "cross"
    assert "dense_shift" in result.timings_ms
    query = engine.embedder.embed_query(QUESTION_ES)
    moved = offsets.shift(query, source="es", target="en")
    store = retriever.store  # type: ignore[attr-defined]
    expected = [i for i, _ in store.dense_search_ids(moved, limit=3)]
    assert [h.chunk.chunk_id for h in result.hits] == expected
    vectors = store.dense_vectors(expected)
    for hit in result.hits:
        # the reported score is the cosine of the question as asked, not of the shifted vector
        assert hit.score == pytest.approx(float(query @ vectors[hit.chunk.chunk_id]), abs=1e-5)
        assert hit.explain[0].score == hit.score


def test_the_shift_can_be_turned_off(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("noshift")
    corpus = _corpus(root)
    config = RagConfig(
        home=root, index_dir=root / "index", retrieval=RetrievalConfig(language_shift=False)
    )
    with Ragstrata(config) as rag:
        assert not rag.ingest([corpus]).failures
        assert rag.retriever.offsets is None  # type: ignore[attr-defined]
        result = rag.search(QUESTION_ES, mode="dense", top_k=3)
        assert result.language_relation == "cross"
        assert "dense_shift" not in result.timings_ms
        store = rag.retriever.store  # type: ignore[attr-defined]
        raw = store.dense_search_ids(rag.embedder.embed_query(QUESTION_ES), limit=3)
        assert [(h.chunk.chunk_id, h.score) for h in result.hits] == [
            (i, pytest.approx(s, abs=1e-6)) for i, s in raw
        ]


MIXED = {  # a mostly Spanish folder with untranslated English pages, as the Spanish React docs
    "efectos.md": "# Efectos\n\n## Limpiar un efecto\n\nReact llama a la función de limpieza antes "
    "de volver a ejecutar el efecto y una última vez cuando el componente se desmonta.\n",
    "estado.md": "# El estado\n\n## Actualizar el estado\n\nLlamar a la función set no cambia el "
    "estado en el código que ya se está ejecutando; solo afecta a lo que devolverá `useState` "
    "en el siguiente renderizado.\n",
    "fragment.md": "# Fragment\n\n## Renderizar una lista de fragmentos\n\nCuando necesitas pasar "
    "una `key` a un Fragment dentro de un map, no puedes usar la sintaxis corta `<>...</>`. "
    "Importa `Fragment` desde `react` y escribe `<Fragment key={id}>` de forma explícita.\n",
    "memo.md": "# memo\n\n## Skipping re-rendering when props are unchanged\n\nReact normally "
    "re-renders a component whenever its parent re-renders. With memo, you can create a "
    "component that React will not re-render when its parent re-renders so long as its new "
    "props are the same as the old props.\n",
    "test-utils.md": "---\ntitle: react-dom/test-utils Deprecation Warnings\n---\n\nTODO: update "
    "for 19?\n\n## ReactDOMTestUtils.act() warning\n\n`act` from `react-dom/test-utils` has been "
    "deprecated in favor of `act` from `react`. Before, tests imported it from the test "
    "utilities package; now import it from the react package itself. The old export logs a "
    "warning and will be removed in a future major release, so update your test setup files "
    "and helpers.\n\n## Rest of ReactDOMTestUtils APIs\n\nAll APIs except `act` have been "
    "removed. The React Team recommends migrating your tests to React Testing Library for a "
    "modern and well supported testing experience.\n",
    "test-renderer.md": "---\ntitle: react-test-renderer Deprecation Warnings\n---\n\nTODO: "
    "Update this for 19?\n\n## ReactTestRenderer.create() warning\n\nreact-test-renderer is "
    "deprecated. A warning will fire whenever calling ReactTestRenderer.create() or "
    "ReactShallowRender.render(). The react-test-renderer package will remain available on NPM "
    "but will not be maintained and may break with new React features or changes to React's "
    "internals.\n",
}


def test_tiny_passages_in_another_language_keep_their_raw_cosine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the shift moves a Spanish question toward English text as a whole; "TODO: update for
    # 19?" sits nearest that centroid and topped unrelated questions on the Spanish React docs
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in MIXED.items():
        (corpus / name).write_text(text, encoding="utf-8")
    question = "¿Qué hace la función de limpieza de un efecto?"

    def dense_ranking(shift: bool, min_words: int | None = None) -> list[str]:
        if min_words is not None:
            monkeypatch.setattr(hybrid, "MIN_SHIFT_WORDS", min_words)
        retrieval = RetrievalConfig(language_shift=shift, top_k=10)
        config = RagConfig(home=tmp_path, index_dir=tmp_path / "index", retrieval=retrieval)
        with Ragstrata(config) as rag:
            if not (tmp_path / "index").exists():
                assert not rag.ingest([corpus]).failures
            hits = rag.search(question, mode="dense", top_k=10).hits
            return [h.chunk.text.split("\n")[0] for h in hits]

    def todo_behind_spanish(ranking: list[str]) -> bool:
        spanish = [ranking.index(t) for t in ("# Efectos", "# El estado", "# Fragment")]
        todo = [i for i, t in enumerate(ranking) if t.startswith("TODO")]
        return len(todo) == 2 and max(spanish) < min(todo)

    shifted, raw = dense_ranking(True), dense_ranking(False)
    assert todo_behind_spanish(raw) and todo_behind_spanish(shifted), (raw, shifted)
    # the shift still moves the English passages that say something: memo passes a TODO
    assert shifted.index("# memo") < raw.index("# memo"), (raw, shifted)
    # without the guard the TODO chunks pass a Spanish passage that shares the question's topic
    assert not todo_behind_spanish(dense_ranking(True, min_words=0))


DOCS_ES = {
    "copias.md": "# Copias de seguridad\n\n## Frecuencia\n\nLas copias de seguridad se hacen "
    "cada noche a las dos. Cada copia se guarda treinta días en otro centro de datos.\n",
    "cuentas.md": "# Cuentas\n\n## Contraseñas\n\nLa contraseña de cada cuenta debe tener doce "
    "caracteres como mínimo y se cambia cada noventa días.\n",
}


@pytest.mark.parametrize(
    ("docs", "question", "weights"),
    [
        # a Spanish question over English passages: BM25's shared names count for more
        (DOCS, "¿Cuántas peticiones por minuto puede enviar cada clave de la API?", (0.8, 0.2)),
        (DOCS_ES, "How often are the backups made and how long are they kept?", (0.9, 0.1)),
    ],
)
def test_default_cross_weights_follow_the_question_language(
    tmp_path: Path, docs: dict[str, str], question: str, weights: tuple[float, float]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in docs.items():
        (corpus / name).write_text(text, encoding="utf-8")
    config = RagConfig(home=tmp_path, index_dir=tmp_path / "index")
    with Ragstrata(config) as rag:
        assert not rag.ingest([corpus]).failures
        result = rag.search(question)
        assert result.language_relation == "cross"
        assert result.hits
        for hit in result.hits:
            assert hit.score == pytest.approx(_fused(hit, *weights), rel=1e-9)
