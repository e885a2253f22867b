"""Sentence and code-fence spans (``ragstrata.text.spans``)."""

from __future__ import annotations

import itertools

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
