"""The hybrid retriever's BM25 query over the real embedded store: lower-case identifiers
("que devuelve usestate" for ``useState``) and accented Spanish question words."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import BM25Config, RetrievalConfig
from ragstrata.index.edge import EdgeStore
from ragstrata.retrieve.hybrid import HybridRetriever
from ragstrata.testing.fakes import HashEmbedder, make_chunk
from ragstrata.testing.retriever import bm25_vectors
from ragstrata.text.analyzer import Analyzer


def test_candidates_are_lower_case_words_whose_form_is_not_their_stem() -> None:
    forms = Analyzer().joined_forms("¿Qué devuelve usestate? Patients useState fastapi la DNA")
    # "Patients" (capital), "useState" (an identifier already), "fastapi" (its own stem), "la"
    # (stop word, short) and "DNA" are no candidates
    assert forms == [("devuelve", ("devuelv",)), ("usestate", ("usest", "usestat"))]


@pytest.fixture
def retriever(tmp_path: Path) -> HybridRetriever:
    texts = {
        "usestate": "`useState` devuelve un array con exactamente dos valores: el estado actual "
        "y la función set. Llama a useState en el nivel superior de tu componente.",
        "reducer": "Cuando el estado se complica, extrae la lógica a un reducer. Un reducer "
        "devuelve el siguiente estado; devuelve siempre un objeto nuevo, devuelve una copia.",
        # all-caps section labels are indexed whole ("patients") and by stem ("patient")
        "trial": "PATIENTS: 40 adults. RESULTS: the drug reduced pain in patients.",
        "cohort": "A cohort of patient records; each patient was followed for a year.",
        "faq": "¿Cuál es la diferencia entre props y estado? ¿Cómo se actualiza?",
    }
    chunks = [make_chunk(doc, 0, text) for doc, text in texts.items()]
    # the React docs' heading anchors hold the lower-case form as a word (stem "usest")
    chunks.append(make_chunk("usestate", 1, "### `useState(initialState)` {/*usestate*/}"))
    embedder, analyzer, bm25 = HashEmbedder(), Analyzer(), BM25Config()
    sparse = bm25_vectors(chunks, analyzer, bm25)
    store = EdgeStore(tmp_path / "shard", dim=embedder.dim)
    store.upsert(chunks, embedder.embed_documents([c.text for c in chunks]), sparse)
    found = HybridRetriever(store, embedder, analyzer, RetrievalConfig(candidates=5))
    yield found
    found.close()
    store.close()


def test_a_lower_case_identifier_finds_the_identifier(retriever: HybridRetriever) -> None:
    hits = retriever.search("que devuelve usestate", top_k=2, mode="bm25").hits
    # without the expansion "usestate" matches only the heading anchor (its stem "usest") and
    # the reducer chunk, which says "devuelve" three times, comes first
    assert [h.chunk.doc_id for h in hits] == ["usestate", "usestate"]
    typed = retriever.search("que devuelve useState", top_k=1, mode="bm25").hits
    assert typed[0].chunk.doc_id == "usestate"


def test_a_word_the_corpus_uses_as_a_word_is_not_expanded(retriever: HybridRetriever) -> None:
    # "patients" is indexed whole from the PATIENTS label, but its stem "patient" is in more
    # chunks: the query keeps its plain analysis, whatever the order of the hits
    vector = {1: 1.0}
    assert retriever._with_joined_forms("patients with pain", dict(vector)) == vector


def test_accented_question_words_are_no_query_terms(retriever: HybridRetriever) -> None:
    """ "cuál" is the stop word "cual" once folded, but the stop list is checked before folding:
    "¿Cuál es la capital de Francia?" matched a React FAQ by ``cual`` alone and was answered
    (a new user's run)."""
    analyzer = Analyzer()
    assert analyzer.accented_stop_terms("¿Cuál es? ¿Cómo y dónde? example.com") == {
        "cual",
        "como",
        "donde",
        "dond",
    }  # "com" stays: example.com gives it too
    assert not retriever.search("¿Cuál es la capital de Francia?", mode="bm25").hits
    assert retriever.search("¿Cuál es la diferencia entre props?", mode="bm25").hits
    # nothing but question words: the query keeps them rather than ask for nothing
    assert retriever.search("¿Cómo?", mode="bm25").hits[0].chunk.doc_id == "faq"
