"""Files are parsed (and so embedded and committed) smallest first: a big file listed first
must not keep the rest of its folder out of the index until it is done."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata.config import IngestConfig
from ragstrata.indexing import parse_paths, smallest_first
from ragstrata.types import Document


def test_a_big_file_found_first_is_parsed_after_the_small_ones(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-huge.txt").write_text("palabra " * 50_000, encoding="utf-8")  # found first
    (folder / "b-nota.md").write_text("# Nota\n\nEl código secreto es 42.\n", encoding="utf-8")
    (folder / "c-mid.md").write_text("# Mid\n\n" + "Texto de prueba. " * 200, encoding="utf-8")
    with parse_paths(
        [folder],
        config=IngestConfig(workers=0),
        index_dir=tmp_path / "index",
        signature=lambda: "test",
    ) as parsed:
        order = [Path(d.source).name for d in parsed.documents if isinstance(d, Document)]
    assert order == ["b-nota.md", "c-mid.md", "a-huge.txt"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5_000), max_size=8))
def test_smallest_first_is_a_stable_sort_by_size(tmp_path_factory, sizes: list[int]) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("files")
    files = []
    for n, size in enumerate(sizes):
        path = folder / f"{n:02d}.txt"
        path.write_bytes(b"x" * size)
        files.append(path)
    ordered, got = smallest_first(files)
    assert sorted(ordered) == sorted(files)  # nothing lost or repeated
    assert got == sorted(sizes) == [p.stat().st_size for p in ordered]
    for a, b in itertools.pairwise(ordered):  # ties keep their discovery order
        if a.stat().st_size == b.stat().st_size:
            assert a.name < b.name


def test_a_parser_crash_is_not_remembered_but_a_bad_file_is(tmp_path: Path) -> None:
    """Review 36: a crashed parser (RS200: the out-of-memory killer, a script without its
    ``__main__`` guard) was remembered like an unreadable file, so the next runs reported the
    same crash without trying again, until ``--retry-failed``."""
    from ragstrata.indexing import _remembered
    from ragstrata.types import IngestFailure

    path = tmp_path / "nota.md"
    path.write_text("# Nota\n\nTexto.\n", encoding="utf-8")
    config = IngestConfig(workers=0)
    from ragstrata.ingest.pool import _crash_reason

    reason = _crash_reason([-9])
    crash = _remembered(path, IngestFailure(str(path), "RS200", reason), config)
    assert crash.doc_id and not crash.retry_key  # named, with a kept-version note, not recorded
    # a parser that raised on the file does so again: remembered (review 38), as a bad file is
    raised = IngestFailure(str(path), "RS200", "parser failed: ValueError: bad table")
    assert _remembered(path, raised, config).retry_key
    empty = _remembered(path, IngestFailure(str(path), "RS203", "empty"), config)
    assert empty.doc_id and empty.retry_key
