"""BM25 analysis (``ragstrata.text.analyzer``): identifiers, accents, stemming, CJK."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.errors import ConfigError
from ragstrata.text.analyzer import Analyzer, fold_accents


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return Analyzer()


def matches(analyzer: Analyzer, query: str, document: str) -> bool:
    return bool(set(analyzer.terms(query)) & set(analyzer.terms(document)))


IDENTIFIERS = [
    ("ERR_CONN_RESET", ["CONN", "conn", "reset"]),
    ("E1234", ["1234"]),
    ("/v1/users", ["users", "v1"]),
    ("SEC-A002", ["A002", "SEC"]),
]


@pytest.mark.parametrize(("identifier", "fragments"), IDENTIFIERS)
def test_identifier_findable_whole_and_by_part(
    analyzer: Analyzer, identifier: str, fragments: list[str]
) -> None:
    document = f"The gateway logged {identifier} twice before the retry succeeded."
    assert matches(analyzer, identifier, document)
    for fragment in fragments:
        assert matches(analyzer, fragment, document), fragment


@pytest.mark.parametrize("identifier", [i for i, _ in IDENTIFIERS])
def test_identifier_whole_term_is_kept(analyzer: Analyzer, identifier: str) -> None:
    assert identifier.lower() in analyzer.terms(f"see {identifier}.")


def test_identifier_parts_do_not_match_unrelated_identifier(analyzer: Analyzer) -> None:
    # the exact form is distinctive: no shared whole term with a sibling code
    assert "sec-a002" not in analyzer.terms("SEC-A003")
    assert not matches(analyzer, "E1234", "error E5678 raised")


def test_accents_folded(analyzer: Analyzer) -> None:
    assert matches(analyzer, "cancion", "Una canción de cuna.")
    assert matches(analyzer, "CANCIÓN", "la cancion")
    assert fold_accents("canción ñandú Ärger") == "cancion nandu Arger"
    assert all(t == fold_accents(t) for t in analyzer.terms("Pingüino, acción, déjà vu"))


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("usuarios", "El usuario inicia sesión."),
        ("usuario", "Lista de usuarios activos."),
        ("configuración", "configurar el servidor"),
        ("running", "The service runs in the background."),
        ("connections", "Each connection is pooled."),
    ],
)
def test_stemming_spanish_and_english(analyzer: Analyzer, query: str, document: str) -> None:
    assert matches(analyzer, query, document)


def test_english_only_analyzer_does_not_stem_spanish(analyzer: Analyzer) -> None:
    english = Analyzer(languages=("english",))
    assert "usuari" in analyzer.terms("usuarios")
    assert "usuari" not in english.terms("usuarios")
    assert english.signature != analyzer.signature


def test_cjk_text_yields_bigrams(analyzer: Analyzer) -> None:
    assert analyzer.terms("数据库系统") == ["数据", "据库", "库系", "系统"]
    assert analyzer.terms("数") == ["数"]
    assert analyzer.terms("データベース")  # katakana does not vanish
    assert analyzer.terms("데이터베이스")  # hangul does not vanish


def test_two_char_cjk_query_matches_longer_document(analyzer: Analyzer) -> None:
    assert matches(analyzer, "数据", "分布式数据库系统的设计")
    assert matches(analyzer, "検索", "全文検索エンジンを使う")
    assert not matches(analyzer, "网络", "分布式数据库系统的设计")


def test_latin_word_glued_to_cjk_is_analysed_like_other_words(analyzer: Analyzer) -> None:
    assert matches(analyzer, "state", "useState hook")  # control: the plain-text case works
    assert matches(analyzer, "state", "useStateフックを使う")


def test_stop_words_dropped(analyzer: Analyzer) -> None:
    assert analyzer.terms("the of and to is") == []
    assert analyzer.terms("de la que el en") == []
    assert analyzer.terms("the database") == analyzer.terms("database")
    assert Analyzer(stopwords=False).terms("the")


def test_terms_are_deterministic_and_frequencies_count_repeats(analyzer: Analyzer) -> None:
    text = "Token tokens tokenizer TOKEN"
    assert analyzer.terms(text) == analyzer.terms(text)
    tf = analyzer.term_frequencies("index index index search")
    assert tf["index"] == 3
    assert tf["search"] == 1


def test_unknown_language_is_config_error() -> None:
    with pytest.raises(ConfigError, match="klingon"):
        Analyzer(languages=("english", "klingon"))
    with pytest.raises(ConfigError):
        Analyzer(languages=())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_terms_never_raise_and_are_non_empty_strings(text: str) -> None:
    terms = Analyzer().terms(text)
    assert all(isinstance(t, str) and t for t in terms)
    assert all(not t.isspace() for t in terms)


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.characters(
            categories=["Lu", "Ll", "Nd", "Pd", "Pc", "Zs"], max_codepoint=0x24F
        ),
        max_size=80,
    )
)
def test_latin_terms_are_lowercase_and_folded(text: str) -> None:
    for term in Analyzer().terms(text):
        assert term == fold_accents(term)
        assert term == term.lower()
