"""Files over LARGE_FILE_BYTES are parsed (and so embedded and committed) after the others: a
huge file found first must not keep the rest of its folder out of the index until it is done."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstrata import indexing
from ragstrata.config import IngestConfig
from ragstrata.indexing import large_files_last, parse_paths
from ragstrata.types import Document


def test_a_huge_file_found_first_is_parsed_after_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "LARGE_FILE_BYTES", 100_000)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-huge.txt").write_text("palabra " * 50_000, encoding="utf-8")  # found first
    (folder / "b-mid.md").write_text("# Mid\n\n" + "Texto de prueba. " * 200, encoding="utf-8")
    (folder / "c-nota.md").write_text("# Nota\n\nEl código secreto es 42.\n", encoding="utf-8")
    with parse_paths(
        [folder],
        config=IngestConfig(workers=0),
        index_dir=tmp_path / "index",
        signature=lambda: "test",
    ) as parsed:
        order = [Path(d.source).name for d in parsed.documents if isinstance(d, Document)]
    # the others keep their discovery order (mid before the smaller note)
    assert order == ["b-mid.md", "c-nota.md", "a-huge.txt"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2_000), max_size=8))
def test_large_files_last_is_a_stable_partition(tmp_path_factory, sizes: list[int]) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("files")
    files = []
    for n, size in enumerate(sizes):
        path = folder / f"{n:02d}.txt"
        path.write_bytes(b"x" * size)
        files.append(path)
    limit = 1_000
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(indexing, "LARGE_FILE_BYTES", limit)
        ordered, got = large_files_last(files)
    small = [p for p in files if p.stat().st_size <= limit]
    large = [p for p in files if p.stat().st_size > limit]
    assert ordered == small + large  # nothing lost; each group in discovery order
    assert got == [p.stat().st_size for p in ordered]
