"""Sentence and code-fence spans (``ragstrata.text.spans``)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.text.spans import find_fences, sentence_spans, strip_span


def test_sentences_split_after_stops_followed_by_space() -> None:
    text = "  First one. Second?  Third! «no split»x.y 終わり。次"
    spans = sentence_spans(text, 0, len(text))
    assert [text[a:b] for a, b in spans] == [
        "First one.",
        "Second?",
        "Third!",
        "«no split»x.y 終わり。",
        "次",
    ]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "It memoizes the render based on props vs. state. Next one.",
            ["It memoizes the render based on props vs. state.", "Next one."],
        ),
        ("Use a tool, e.g. Docker. Then run it.", ["Use a tool, e.g. Docker.", "Then run it."]),
        ("Hay opciones, p. ej. Docker. Luego sí.", ["Hay opciones, p. ej. Docker.", "Luego sí."]),
        (
            "La Sra. García vive en EE. UU. desde 2010. Fin.",
            ["La Sra. García vive en EE. UU. desde 2010.", "Fin."],
        ),
        (  # review 31: Spanish plural abbreviations, a letter doubled
            "Se piden en el portal de RR. HH. con 15 días. Los sindicatos CC. OO. firmaron. "
            "AA. Fin.",
            [
                "Se piden en el portal de RR. HH. con 15 días.",
                "Los sindicatos CC. OO. firmaron.",
                "AA.",
                "Fin.",
            ],
        ),
        (
            "See No. 5 for details. The answer is no. But why?",
            ["See No. 5 for details.", "The answer is no.", "But why?"],
        ),
        ("Smith et al. reported it. Done.", ["Smith et al. reported it.", "Done."]),
        ("Está en la pág. 12. Otra.", ["Está en la pág. 12.", "Otra."]),
        ("It ends here... and goes on. Yes.", ["It ends here... and goes on.", "Yes."]),
        ("Fin. ¿Qué pasa? Nada.", ["Fin.", "¿Qué pasa?", "Nada."]),
        ("Plan B. The rest.", ["Plan B.", "The rest."]),
        # a review (2026-12-06): split after "Sres.", "Av." and "Nr."
        ("Los Sres. García llegaron. Luego no.", ["Los Sres. García llegaron.", "Luego no."]),
        ("Vive en la Av. Libertador 100. Lejos.", ["Vive en la Av. Libertador 100.", "Lejos."]),
        ("Casa Nr. 5 del barrio. Otra.", ["Casa Nr. 5 del barrio.", "Otra."]),
    ],
)
def test_sentences_go_on_past_abbreviations_and_lower_case_continuations(
    text: str, sentences: list[str]
) -> None:
    assert [text[a:b] for a, b in sentence_spans(text, 0, len(text))] == sentences


def test_sentence_offsets_are_absolute() -> None:
    text = "xx. A b. C d."
    assert sentence_spans(text, 4, len(text)) == [(4, 8), (9, 13)]


@given(st.text(alphabet="ab .!?\n", max_size=60))
def test_sentences_are_trimmed_non_empty_and_ordered(text: str) -> None:
    spans = sentence_spans(text, 0, len(text))
    assert all(a < b and text[a:b] == text[a:b].strip() for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    assert "".join("".join(text[a:b].split()) for a, b in spans) == "".join(text.split())


def test_strip_span() -> None:
    assert strip_span("  ab \n", 0, 6) == (2, 4)
    assert strip_span("   ", 0, 3) == (3, 3)


def test_fences_closed_unclosed_and_inline_backticks() -> None:
    text = "a\n```py title\nx = 1\n```\n~~~~\n```\nstill code\n~~~~\n``` `inline` ```\n```js\nopen"
    fences = find_fences(text)
    assert len(fences) == 3
    first, second, last = fences
    assert text[first.open_start : first.open_end] == "```py title"
    assert text[first.close_start : first.close_end] == "```"
    assert (first.opener, first.closer) == ("```py\n", "\n```")
    assert text[second.open_start : second.close_end] == "~~~~\n```\nstill code\n~~~~"
    assert (last.close_start, last.close_end) == (len(text), len(text))
    assert last.opener == "```js\n"


def test_fences_inside_a_blockquote() -> None:
    """Review 42: a code block in a quote (``> ```bash``) was no fence, so chunks split it
    with unbalanced fences and took their overlap inside the code."""
    text = (
        "> Nota:\n>\n> ```bash\n> ls\n>\n> ```\n\n"  # closed inside the quote
        "> > ~~~\n> > x\n> fin\n\n"  # a line with fewer markers ends the quote, and the code
        "```\n> ```\n```\n"  # a quoted fence line inside an unquoted block is code
    )
    first, second, third = find_fences(text)
    assert text[first.open_start : first.close_end] == "> ```bash\n> ls\n>\n> ```"
    assert (first.opener, first.closer) == ("> ```bash\n", "\n> ```")
    assert text[second.open_start : second.close_end] == "> > ~~~\n> > x"
    assert second.close_start == second.close_end == text.index("\n> fin")
    assert (second.opener, second.closer) == ("> > ~~~\n", "\n> > ~~~")
    assert text[third.open_start : third.close_end] == "```\n> ```\n```"
    assert (third.opener, third.closer) == ("```\n", "\n```")


def test_a_fence_opening_on_a_list_items_marker_line() -> None:
    """Review 44: ``- ```js`` was not seen as an opener, so the item's indented closing line
    opened a fence that ran to the end of the text (every later chunk rendered as code)."""
    for lead in ("", "> "):
        text = f"{lead}- ```js\n{lead}  f();\n{lead}  ```\n{lead}- fin\n\n{lead}Prosa final."
        fences = find_fences(text)
        assert len(fences) == 1, (lead, fences)
        f = fences[0]
        assert text[f.open_start : f.close_end] == f"{lead}- ```js\n{lead}  f();\n{lead}  ```"
        assert f.opener == f"{lead}```js\n"
    # a closer is never a marker line: "- ```" inside an open fence does not close it
    inner = "```\n- ```\nx\n```\nfin"
    assert [(inner[f.open_start : f.close_end]) for f in find_fences(inner)] == [
        "```\n- ```\nx\n```"
    ]
