"""Parent-section expansion, lost-in-the-middle order and version resolution."""

from __future__ import annotations

import dataclasses
import itertools

from ragstrata.assemble.context import (
    assemble,
    edge_order,
    merge_section,
    resolve_versions,
    version_key,
)
from ragstrata.text.tokens import FunctionCounter
from ragstrata.types import Chunk, Hit, RetrieverHit

WORDS = FunctionCounter(str.split)
DOC = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota. Kappa lambda mu."


def chunk(
    start: int,
    end: int,
    *,
    doc: str = "d",
    parent: str = "s1",
    meta: dict | None = None,
    title: str = "T",
) -> Chunk:  # type: ignore[type-arg]
    return Chunk(
        chunk_id=f"{doc}-{start}",
        doc_id=doc,
        source=f"/{doc}.md",
        title=title,
        section_path=("T", "S"),
        text=DOC[start:end],
        start=start,
        end=end,
        index=0,
        total=1,
        token_count=1,
        parent_id=parent,
        content_hash="h",
        metadata=meta or {},
    )


def hit(c: Chunk, rank: int) -> Hit:
    return Hit(c, rank, 1.0 / rank, (RetrieverHit("dense", rank, 0.5),))


def test_edge_order_puts_the_best_at_both_ends() -> None:
    assert edge_order(5) == [0, 2, 4, 3, 1]
    assert edge_order(2) == [0, 1] and edge_order(0) == []
    starts = {"a": 0, "b": 18, "c": 36, "d": 54}  # four distinct texts
    hits = [hit(chunk(s, s + 17, doc=d), i + 1) for i, (d, s) in enumerate(starts.items())]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000, order="edges")
    assert [s.hit.chunk.doc_id for s in ctx.sources] == ["a", "c", "d", "b"]
    assert [s.label for s in ctx.sources] == [1, 2, 3, 4]
    assert ctx.legend[3].startswith("[4] = /b.md")


def test_merge_section_removes_overlap() -> None:
    parts = [chunk(36, 71), chunk(0, 37), chunk(18, 52)]
    text, start, end = merge_section(parts)
    assert (text, start, end) == (DOC[0:71], 0, 71)


def test_parent_expansion_when_it_fits_and_duplicates_dropped() -> None:
    section = [chunk(0, 18), chunk(18, 37), chunk(37, 53), chunk(53, 71)]
    other = chunk(0, 18, doc="x", parent="s9")

    def parents(c: Chunk) -> list[Chunk]:
        return section if c.doc_id == "d" else [c]

    hits = [hit(section[1], 1), hit(other, 2), hit(section[3], 3)]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000, parents=parents, parent_tokens=50)
    first = ctx.sources[0]
    assert first.expanded and first.body == DOC and first.span == (0, 71)
    assert [s.hit.chunk.doc_id for s in ctx.sources] == ["d", "x"]  # section[3] was inside
    small = assemble(hits, counter=WORDS, budget_tokens=1000, parents=parents, parent_tokens=5)
    assert not small.sources[0].expanded and small.sources[0].body == DOC[18:37]


def test_a_section_over_the_budget_leaves_the_chunk_alone() -> None:
    """Review 39: the best hit was replaced by its section whenever the section cost at most
    ``parent_tokens``, whatever the budget: a 150-token budget gave a 228-token context where
    the best chunk alone (148 tokens) fit."""
    section = [chunk(0, 18), chunk(18, 37), chunk(37, 53), chunk(53, 71)]
    other = chunk(0, 18, doc="x", parent="s9")

    def parents(c: Chunk) -> list[Chunk]:
        return section if c.doc_id == "d" else [c]

    hits = [hit(section[1], 1), hit(other, 2)]
    wide = assemble(hits[:1], counter=WORDS, budget_tokens=1000, parents=parents, parent_tokens=50)
    chunk_alone = assemble(hits[:1], counter=WORDS, budget_tokens=1000)
    assert wide.sources[0].expanded and wide.tokens > chunk_alone.tokens
    for budget in (chunk_alone.tokens, wide.tokens - 1):
        ctx = assemble(hits, counter=WORDS, budget_tokens=budget, parents=parents, parent_tokens=50)
        assert not ctx.sources[0].expanded and ctx.tokens <= budget
    # a later hit's section that no longer fits is read as its chunk, not dropped
    both = assemble([hit(other, 1), hit(section[1], 2)], counter=WORDS, budget_tokens=1000)
    later = assemble(
        [hit(other, 1), hit(section[1], 2)],
        counter=WORDS,
        budget_tokens=both.tokens,
        parents=parents,
        parent_tokens=50,
    )
    assert [s.hit.chunk.doc_id for s in later.sources] == ["x", "d"]
    assert not later.sources[1].expanded and later.tokens <= both.tokens


def test_resolve_versions_keeps_the_newest() -> None:
    assert version_key("v1.10") > version_key("v1.9")
    assert version_key("2024-03-01") > version_key("2023-12-31")
    old = chunk(0, 18, doc="old", meta={"version": "1.9"}, title="Limits")
    new = chunk(0, 18, doc="new", meta={"version": "1.10"}, title="Limits")
    plain = chunk(0, 18, doc="other", title="Other")
    kept, conflicts = resolve_versions([hit(old, 1), hit(plain, 2), hit(new, 3)])
    assert [h.chunk.doc_id for h in kept] == ["other", "new"]
    assert conflicts[0].kept == "1.10" and conflicts[0].dropped == ("1.9",)
    same, none = resolve_versions(
        [hit(old, 1), hit(chunk(18, 37, doc="old", meta={"version": "1.9"}, title="Limits"), 2)]
    )
    assert len(same) == 2 and not none
    # a file's modification time is no version: two pages of one title are two pages
    readme_a = chunk(0, 18, doc="a", meta={"modified": "2024-01-01T00:00:00"}, title="README")
    readme_b = chunk(0, 18, doc="b", meta={"modified": "2025-01-01T00:00:00"}, title="README")
    both, no_conflict = resolve_versions([hit(readme_a, 1), hit(readme_b, 2)])
    assert len(both) == 2 and not no_conflict


def test_two_products_pages_of_one_title_are_not_versions_of_one_page() -> None:
    """Review 39: product A's and product B's "Installation" pages, each with its own
    ``version``, were taken for two versions of one page, and the question about product B
    (ranked first) was answered from product A's."""

    def page(doc: str, source: str, version: str) -> Chunk:
        c = chunk(0, 18, doc=doc, meta={"version": version}, title="Installation")
        return dataclasses.replace(c, source=source)

    b = page("b", "docs/productb/install.md", "1.4")
    a = page("a", "docs/producta/install.md", "3.2")
    kept, conflicts = resolve_versions([hit(b, 1), hit(a, 2)])
    assert [h.chunk.doc_id for h in kept] == ["b", "a"] and not conflicts
    # versions differ in their numbers or in an edition word, in the path or the title
    for old_path, new_path in (
        ("docs/v1/install.md", "docs/v2/install.md"),
        ("guia-2023.md", "guia-2024.md"),
        ("retention-old.md", "retention-new.md"),
        ("manual-antiguo.md", "manual-nuevo.md"),
    ):
        old, new = page("o", old_path, "1.0"), page("n", new_path, "2.0")
        kept, conflicts = resolve_versions([hit(old, 1), hit(new, 2)])
        assert [h.chunk.doc_id for h in kept] == ["n"], (old_path, new_path)
        assert conflicts[0].kept == "2.0"
    for old_path, new_path in (
        ("docs/install-v1.md", "docs/install-v1.1.md"),
        ("stable/a.md", "2.0/a.md"),
    ):
        old, new = page("o", old_path, "1.0"), page("n", new_path, "2.0")
        assert [h.chunk.doc_id for h in resolve_versions([hit(old, 1), hit(new, 2)])[0]] == ["n"]
    # numbered titles are different documents, whatever their paths (review 41)
    lesson_1 = dataclasses.replace(
        page("l1", "lessons/lesson-1.md", "2024-01-01"), title="Lesson 1"
    )
    lesson_2 = dataclasses.replace(
        page("l2", "lessons/lesson-2.md", "2024-02-01"), title="Lesson 2"
    )
    assert len(resolve_versions([hit(lesson_1, 1), hit(lesson_2, 2)])[0]) == 2
    # a number in a path that reads as neither a version nor the document's own version or
    # date is a different document (review 41: two manuals' chapters, each dated)
    chapters = [page(f"c{n}", f"book/chapter{n}/intro.md", f"2024-0{n}-01") for n in (1, 2)]
    assert len(resolve_versions([hit(chapters[0], 1), hit(chapters[1], 2)])[0]) == 2
    numbered = [page(f"d{n}", f"docs/{n}/install.md", f"{n}.4") for n in (1, 2)]
    assert [h.chunk.doc_id for h in resolve_versions([hit(c, 1) for c in numbered])[0]] == ["d2"]
    # "newsletter" holds "new" but is no edition word
    one, two = page("o", "newsletter.md", "1.0"), page("n", "oldsletter.md", "2.0")
    assert len(resolve_versions([hit(one, 1), hit(two, 2)])[0]) == 2


def _piece(text: str, start: int, end: int, *, parent: str = "s1") -> Chunk:
    return Chunk(
        chunk_id=f"c-{start}",
        doc_id="g",
        source="/g.md",
        title="G",
        section_path=("G", "S"),
        text=text[start:end].strip(),
        start=start + len(text[start:end]) - len(text[start:end].lstrip()),
        end=end - (len(text[start:end]) - len(text[start:end].rstrip())),
        index=0,
        total=1,
        token_count=1,
        parent_id=parent,
        content_hash="h",
    )


def test_a_long_hit_mostly_new_is_kept_beside_a_short_better_one() -> None:
    """A review (2026-12-06): the overlap share was taken over the shorter chunk, so a
    section's short last chunk ranked first (two thirds of it carried over from the chunk
    before) dropped that 1,500-character chunk, which it shared 11 % of."""
    text = " ".join(f"Paso {i} de la instalación, con detalle." for i in range(40))
    long, short = _piece(text, 0, 1500), _piece(text, 1000, len(text))
    assert len(text) - 1000 < 1000  # short: most of it inside long, a third of long in it
    ctx = assemble([hit(short, 1), hit(long, 2)], counter=WORDS, budget_tokens=10_000)
    assert [s.hit.chunk.chunk_id for s in ctx.sources] == [short.chunk_id, long.chunk_id]
    # the other way round, the short one is mostly inside the long one: dropped
    ctx = assemble([hit(long, 1), hit(short, 2)], counter=WORDS, budget_tokens=10_000)
    assert [s.hit.chunk.chunk_id for s in ctx.sources] == [long.chunk_id]


def test_a_section_expanded_over_code_and_a_table_keeps_them_whole() -> None:
    """A review (2026-12-06): the gap between two chunks of a code block (a line break) was
    written as a blank line, in the middle of the code; in a table it cut the rows from
    their header."""
    code = "".join(f"    resultado_{i} = calcular(parametro_{i})\n" for i in range(6))
    table = "| a | b |\n| --- | --- |\n" + "".join(f"| {i} | {i * 2} |\n" for i in range(4))
    text = "```python\n" + code + "```\n\nTexto entre los dos.\n\n" + table
    cut_code = text.index("    resultado_3")  # a chunk boundary at a code line
    cut_prose = text.index("Texto")
    cut_table = text.index("| 2 | 4 |")
    pieces = [
        _piece(text, 0, cut_code),
        _piece(text, cut_code, cut_prose),
        _piece(text, cut_prose, cut_table),
        _piece(text, cut_table, len(text)),
    ]
    merged, start, end = merge_section(pieces)
    assert merged == text[start:end], merged


def test_an_expanded_source_knows_which_chunk_holds_each_part_of_its_passage() -> None:
    """A review (2026-12-06): a citation of an expanded section named the hit's chunk, though
    its quote came from another chunk of the section (the service then showed that chunk's
    text, the quote unmarked)."""
    from ragstrata.generate.citations import Support, _citation

    text = " ".join(f"El paso {i} configura la opción {i} del servidor." for i in range(30))
    text += "\n\n```python\nuno = 1\ndos = 2\n```"
    cut = text.index("```python")
    pieces = [
        _piece(text, 0, 700),
        _piece(text, 600, cut),  # overlaps the first
        _piece(text, cut, text.index("dos = 2")),  # a gap (a line break) inside the code
        _piece(text, text.index("dos = 2"), len(text)),
    ]
    ctx = assemble(
        [hit(pieces[-1], 1)],
        counter=WORDS,
        budget_tokens=10_000,
        parents=lambda c: pieces,
        parent_tokens=10_000,
    )
    (source,) = ctx.sources
    assert source.expanded and [c.chunk_id for _, _, c in source.parts] == [
        p.chunk_id for p in pieces
    ]
    for a, b, chunk in source.parts:
        assert source.passage[a:b] == chunk.text
    quote = "El paso 2 configura la opción 2 del servidor."
    at = source.passage.index(quote)
    assert source.chunk_at(at, at + len(quote)) is pieces[0]
    cited = _citation(1, source, Support(True, 0.9, 0.9, 0.9, (), (at, at + len(quote))), True)
    assert cited.chunk_id == pieces[0].chunk_id and cited.quote == quote
    assert (cited.start, cited.end) == (pieces[0].start, pieces[0].end)
    at = source.passage.index("dos = 2")
    assert source.chunk_at(at, at + 7) is pieces[3]


def test_a_code_block_merged_keeps_blank_lines_and_indentation() -> None:
    """A review (2026-12-06): two blank lines before a top-level ``def`` were merged as one
    line break and two spaces (invalid Python)."""
    code = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(5))
    text = "```python\n" + code.rstrip("\n") + "\n```"
    cuts = [0, text.index("def f2"), text.index("    return y", text.index("def f3")), len(text)]
    pieces = [_piece(text, a, b) for a, b in itertools.pairwise(cuts)]
    merged, start, end = merge_section(pieces)
    assert merged == text[start:end], merged
