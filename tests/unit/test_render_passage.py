"""The passage the web page shows beside a citation: heading anchors removed, the quote's
highlight moved with them (``render.without_anchors``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragstrata.render import _ANCHOR, _HEADING_LINE, without_anchors


def test_mdx_and_mkdocs_anchors_leave_the_passage_and_the_highlight_follows() -> None:
    """Trial 37: the passage box showed "### ¿Por qué React necesita _keys_?
    {/*why-does-react-need-keys*/}"."""
    text = (
        "### ¿Por qué React necesita keys? {/*why-does-react-need-keys*/}\n\n"
        "Imagina que los archivos de tu escritorio no tuvieran nombres.\n\n"
        "## First Steps { #first-steps }\n\nRun the app."
    )
    quote = "Imagina que los archivos de tu escritorio no tuvieran nombres."
    at = text.index(quote)
    shown, span = without_anchors(text, (at, at + len(quote)))
    assert "{/*" not in shown and "#first-steps" not in shown
    assert shown.startswith("### ¿Por qué React necesita keys?\n\n")
    assert "## First Steps\n\nRun the app." in shown
    assert span is not None and shown[span[0] : span[1]] == quote
    assert without_anchors("a {b} and {#c d} stay", (0, 1)) == ("a {b} and {#c d} stay", (0, 1))
    # a JSX comment in a code example is code, not an anchor (review 41)
    code = "```jsx\n<div>{/* the list */}\n</div>\n```"
    assert without_anchors(code, (0, 3)) == (code, (0, 3))


_piece = st.one_of(
    st.text(alphabet="abc ñé\n{}#*/", max_size=12),
    st.sampled_from(
        ["{/*an-anchor*/}", " {/*x*/}", " { #id }\n", "{ #id .cls }", "\n## T", "\n# "]
    ),
)


@given(st.lists(_piece, min_size=1, max_size=12), st.data())
def test_the_highlight_keeps_its_characters(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    removed = [
        (m.start(), m.end())
        for m in _ANCHOR.finditer(text)
        if _HEADING_LINE.match(text, text.rfind("\n", 0, m.start()) + 1)
    ]
    shown, span = without_anchors(text, (a, b))
    assert span is not None and 0 <= span[0] <= span[1] <= len(shown)
    assert len(shown) == len(text) - sum(end - start for start, end in removed)
    # the highlighted characters are the span's, less the anchors removed (whole) in it
    expected = "".join(
        ch
        for i, ch in enumerate(text[a:b], start=a)
        if not any(start <= i < end for start, end in removed)
    )
    assert shown[span[0] : span[1]] == expected
