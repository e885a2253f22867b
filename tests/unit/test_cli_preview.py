"""The ``search`` table's preview of a hit: headings go (they are on the source line), code
stays."""

from __future__ import annotations

from ragstrata.cli.query import _body_lines


def test_a_code_line_starting_with_hash_is_code_not_a_heading() -> None:
    """Trial 37: the preview of a chunk holding ``# dmesg -n3`` in a fence showed an empty
    fence, the command dropped as if it were a heading."""
    text = (
        "## 3.3. Los mensajes del núcleo\n\nCambie el umbral:\n\n```\n# dmesg -n3\n```\n\n"
        "~~~~\n#!/bin/sh\n```\n# still code\n~~~~\n#no-space is text\n### Otra sección\n"
    )
    assert _body_lines(text) == [
        "",
        "Cambie el umbral:",
        "",
        "```",
        "# dmesg -n3",
        "```",
        "",
        "~~~~",
        "#!/bin/sh",
        "```",
        "# still code",
        "~~~~",
        "#no-space is text",
    ]


def test_plain_text_has_no_headings_or_fences_to_drop() -> None:
    """A .txt chunk is not Markdown (:func:`ragstrata.text.spans.fenced`): its ``# dmesg -n3``
    line is a root prompt, not a heading; the preview dropped it (and a stray ``` line made
    the rest code)."""
    text = "Para ver los mensajes ejecuta:\n# dmesg -n3\n```\n# comentario\n"
    assert _body_lines(text, "text") == [
        "Para ver los mensajes ejecuta:",
        "# dmesg -n3",
        "```",
        "# comentario",
    ]
    assert "# dmesg -n3" not in _body_lines(text, "markdown")
