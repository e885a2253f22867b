"""Answer-string metrics: SQuAD normalization with accents and Spanish articles, contains, F1."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.eval.answer_metrics import (
    answer_tokens,
    contains_answer,
    max_token_f1,
    normalize_answer,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Broncos", "broncos"),
        ("a Cat, an owl; THE dog!", "cat owl dog"),
        ("¿El Año 1.500?", "ano 1500"),
        ("Los Ángeles", "angeles"),
        ("unas   niñas\ty  unos niños", "ninas y ninos"),
        ("«Sebastián Ramírez»", "sebastian ramirez"),
        ("la, el; las: los", ""),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_articles_only_as_whole_words() -> None:
    # "la" inside "lava", "un" inside "uno", "an" inside "and" stay
    assert normalize_answer("Lava uno and") == "lava uno and"


def test_tokens() -> None:
    assert answer_tokens("El río Amazonas.") == ["rio", "amazonas"]
    assert answer_tokens("¡!") == []


def test_contains_answer_spanish() -> None:
    answer = "El Super Bowl 50 se jugó en el Estadio de Levi's, en Santa Clara, California. [1]"
    assert contains_answer(answer, ["estadio de levis"])
    assert contains_answer(answer, ["Santa Clara (California)", "Santa Clara"])
    assert contains_answer("Se fundó en 1.500 d. C.", ["1500"])
    assert not contains_answer("Se fundó en 15000", ["1500"])  # whole tokens only
    assert contains_answer("La Revolución Francesa", ["revolucion francesa"])


def test_a_gold_copied_from_markdown_matches_the_sentence_shown_as_text() -> None:
    """The extractive answerer shows a link's text and drops HTML tags; a gold answer copied
    from the Markdown source (the written FastAPI questions) must match that sentence."""
    gold = "check the [documentation in Starlette](https://starlette.dev/responses/#set-cookie)."
    assert contains_answer("To see all options, check the documentation in Starlette. [1]", [gold])
    assert contains_answer("Press Ctrl + Shift + E.", ["<kbd>Ctrl</kbd> + <kbd>Shift</kbd> + E"])
    assert normalize_answer("![diagram](img/a.png) and [the docs][ref]") == "diagram and docs"
    assert not contains_answer("check the documentation", [gold])


def test_contains_answer_ignores_empty_golds() -> None:
    assert not contains_answer("the answer", ["the", ""])
    assert not contains_answer("anything", [])


def test_token_f1_squad_definition() -> None:
    assert token_f1("the Denver Broncos", "Denver Broncos") == 1.0
    # pred 4 tokens, gold 2, 2 shared: p = 0.5, r = 1 -> 2/3
    assert token_f1("Denver Broncos won it", "Denver Broncos") == pytest.approx(2 / 3)
    assert token_f1("nada", "algo") == 0.0
    assert token_f1("", "algo") == 0.0
    # repeated tokens count as a multiset: pred "rojo rojo", gold "rojo" -> p = 0.5, r = 1
    assert token_f1("rojo rojo", "rojo") == pytest.approx(2 / 3)


def test_token_f1_spanish_articles_and_accents() -> None:
    assert token_f1("los Países Bajos", "Paises Bajos") == 1.0
    assert token_f1("una reacción química", "la reaccion") == pytest.approx(2 / 3)


def test_max_token_f1_takes_the_best_gold() -> None:
    assert max_token_f1("en Santa Clara", ["California", "Santa Clara"]) == pytest.approx(0.8)
    assert max_token_f1("x", []) == 0.0


def test_ascii_punctuation_is_squads() -> None:
    # Markdown backticks, "=", "$" and "|" are ASCII punctuation in SQuAD's script
    assert normalize_answer("`flock` on `.lock`") == "flock on lock"
    assert normalize_answer("| `rrf_k = 60` |") == "rrfk 60"
    assert contains_answer("takes a non-blocking `flock` on `.lock`.", ["flock"])


def test_a_jsx_tag_in_a_code_span_is_code_not_markup() -> None:
    """A new user's trial (2026-12-06): the answer "renderizar `<Fragment key={yourKey}>`" was
    normalized to "renderizar", its code dropped as an HTML tag, and did not contain the gold
    "Fragment key"."""
    answer = "Usa la sintaxis explícita y renderiza `<Fragment key={yourKey}>...</Fragment>`. [1]"
    assert (
        normalize_answer(answer)
        == "usa sintaxis explicita y renderiza fragment key yourkey fragment 1"
    )
    assert contains_answer(answer, ["Fragment key"])
    assert normalize_answer("pulsa <kbd>Ctrl</kbd>") == "pulsa ctrl"  # markup outside code


def test_a_gold_answer_with_no_words_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    from ragstrata.errors import ConfigError
    from ragstrata.eval.datasets import load_golden

    golden = tmp_path / "g.jsonl"
    golden.write_text(
        '{"id": "a", "query": "q?", "expected": ["x.md"], "answers": ["<Fragment key={k}>"]}\n'
    )
    with pytest.raises(ConfigError, match="no words once normalized"):
        load_golden(golden)
