"""Question/query language and the language relation of a query to its passages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.text.language import (
    chunk_language,
    hint_language,
    language_relation,
    query_language,
    question_language,
)


@pytest.mark.parametrize(
    ("query", "lang"),
    [
        ("¿Qué necesita la instalación?", "es"),
        ("Parámetros de consulta y validaciones de strings", "es"),
        ("How do I declare a path parameter", "en"),
        ("Request Body", "en"),  # no cue: py3langid es/en decides
        ("Tutorial avanzado", "es"),  # no cue either
        ("Cuerpo - Múltiples Parámetros", "es"),
        ("Dependencias en decoradores de path operation", "es"),
        # one ñ is one cue, not a verdict; "de" and "en" are Spanish cues (review 39)
        ("How does the Muñoz team configure CORS middleware?", "en"),
        ("What is the capital of España?", "en"),
        ("Uso de middleware CORS en FastAPI", "es"),
        ("Webhooks de OpenAPI", "es"),
    ],
)
def test_query_language(query: str, lang: str) -> None:
    assert query_language(query) == lang


def test_one_language_model_serves_documents_chunks_and_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that ingests and searches (the service, MCP, ``eval``) holds one copy of
    py3langid's model (about 75 MB), not one per use."""
    from ragstrata.text import language

    built: list[object] = []
    real = language._new_identifier

    def counted() -> object:
        built.append(real())
        return built[-1]

    monkeypatch.setattr(language, "_new_identifier", counted)
    for cached in [f for f in vars(language).values() if hasattr(f, "cache_clear")]:
        cached.cache_clear()  # what loads now stays cached for the next tests
    assert language.detect_language("The cat sat on the mat and looked at the sea.") == "en"
    assert query_language("Tutorial avanzado") == "es"
    spanish = "Esta sección explica cómo se declara un parámetro de ruta en la aplicación."
    assert chunk_language(spanish, "en") == "es"
    assert len(built) == 1


def test_hint_language_is_none_without_cues() -> None:
    assert hint_language("useState") is None
    assert query_language("1234 !!") is None


@pytest.mark.parametrize(
    ("question", "lang"),
    [
        ("¿Qué necesita la instalación?", "es"),
        ("Cómo se declara un parámetro de ruta", "es"),
        ("cuales son los requisitos de la instalacion", "es"),
        ("What does ERR_CONN_RESET mean?", "en"),
        ("How do I declare a path parameter in FastAPI", "en"),
        ("useState", "en"),
        # greetings and accentless questions (a new user's "hola" got the English refusal)
        ("hola", "es"),
        ("donde esta el manual de instalacion", "es"),
        ("hello", "en"),
        # no cue: py3langid decides, as for a search (review 39: refused in English)
        ("Receta de paella valenciana", "es"),
        ("Uso de middleware CORS en FastAPI", "es"),
        ("How does the Muñoz team configure CORS middleware?", "en"),
    ],
)
def test_question_language(question: str, lang: str) -> None:
    assert question_language(question) == lang


@pytest.mark.parametrize(
    ("query", "hits", "relation"),
    [
        ("¿Cómo se declara un parámetro?", ["es"] * 10, "same"),
        ("¿Cómo se declara un parámetro?", ["en"] * 10, "cross"),
        ("How do I declare a parameter?", ["es"] * 6 + ["en"] * 4, "cross"),
        ("How do I declare a parameter?", ["en"] * 2 + ["es"] * 8, "same"),
        ("How do I declare a parameter?", ["es"] * 2 + ["en"] * 8, "cross"),
        ("How do I declare a parameter?", ["und"] * 10, "unknown"),
        ("How do I declare a parameter?", [], "unknown"),
        ("1234", ["en"] * 10, "unknown"),
        # only the first 3 hits of a known language count
        ("How do I declare a parameter?", ["und", "en", "es", "en"] + ["es"] * 10, "same"),
        ("How do I declare a parameter?", ["es"] * 3 + ["en"] * 20, "cross"),
    ],
)
def test_language_relation(query: str, hits: list[str], relation: str) -> None:
    assert language_relation(query, hits) == relation


@given(st.text(max_size=60), st.lists(st.sampled_from(["es", "en", "und", "fr"]), max_size=20))
def test_language_relation_is_total_and_deterministic(query: str, hits: list[str]) -> None:
    first = language_relation(query, hits)
    assert first in ("same", "cross", "unknown")
    assert language_relation(query, hits) == first


def test_a_document_repeating_one_spanish_sentence_is_spanish() -> None:
    """Trial 25 (2026-12-06): a Spanish file of one sentence repeated (39k characters) was
    "und" (py3langid spread it over many languages: 0.37 for Spanish), so a
    `language=es` filter dropped it. Other languages keep their own code."""
    from ragstrata.text.language import detect_language

    repeated = "La sección de logística registra envíos diarios. " * 800
    assert detect_language("# Registro de logística\n\n" + repeated) == "es"
    assert detect_language("The shipping desk logs every parcel. " * 800) == "en"
    german = "Das ist ein deutscher Text über die Logistik und die Lieferungen jeden Tag."
    assert detect_language(german) == "de"
    assert detect_language("zzz qqq") == "und"


def test_passage_language_reads_function_words_not_code_or_one_letter() -> None:
    """A review (2026-12-06): the question rule made an English passage naming "Español"
    Spanish, and a Spanish passage with a Python block English."""
    from ragstrata.text.language import passage_language

    english = "The page is available in several languages, including Español and the rest."
    assert passage_language(english) == "en"
    spanish = (
        "La función recorre la lista y devuelve el total de los pedidos.\n\n"
        "```python\nfor item in items:\n    if item is not None and the_total:\n        pass\n```"
    )
    assert passage_language(spanish) == "es"
    assert passage_language("x = 1") is None


@pytest.mark.parametrize(
    ("text", "document", "expected"),
    [
        # an English passage in a Spanish document, and the reverse
        (
            "By default, React will log all errors to the console. To implement your own "
            "error reporting, you can provide the optional root options.",
            "es",
            "en",
        ),
        (
            "Llama a la función en el nivel superior de tu componente para declarar una "
            "variable de estado con el patrón de la desestructuración.",
            "en",
            "es",
        ),
        # an undetermined document's chunk gets the language both tests agree on
        (
            "Cada empleado tiene derecho a veintitrés días laborables de vacaciones al año y "
            "las pide en el portal con quince días de antelación.",
            "und",
            "es",
        ),
        # too few words, code only, a third language: the document's
        ("See the React docs for this.", "es", "es"),
        ("```js\n// This is how you would do it when the root is not there\n```", "es", "es"),
        (
            "By default, React will log all errors to the console. To implement your own "
            "error reporting, you can provide the optional root options.",
            "fr",
            "fr",
        ),
    ],
)
def test_chunk_language(text: str, document: str, expected: str) -> None:
    assert chunk_language(text, document) == expected
