"""Unit tests of ragstrata.ingest.loader: load_document and discover."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from ragstrata.errors import (
    CorruptFileError,
    DecodeError,
    EmptyDocumentError,
    FileTooLargeError,
    HiddenFileError,
    NotRegularFileError,
    OutsideRootsError,
    SourceNotFoundError,
    UnsupportedFormatError,
)
from ragstrata.ingest import FORMATS, discover, doc_id_for, load_document
from ragstrata.ingest.loader import document_from_text


def test_formats_mapping() -> None:
    assert FORMATS[".mdx"] == "markdown"
    assert FORMATS[".xhtml"] == "html"
    assert FORMATS[".log"] == "text"


def test_load_markdown(
    tmp_path: Path, fixtures_dir: Path, check_blocks: Callable[..., None]
) -> None:
    path = tmp_path / "useState.mdx"
    shutil.copy(fixtures_dir / "mdx_sample.md", path)
    doc = load_document(path)
    source = path.resolve().as_posix()
    assert doc.source == source
    assert doc.doc_id == hashlib.sha256(source.encode()).hexdigest()[:16] == doc_id_for(path)
    assert doc.content_hash == hashlib.sha256(doc.text.encode()).hexdigest()
    assert doc.format == "markdown"
    assert doc.title == "useState"
    assert doc.metadata["description"] == "Un Hook de React"
    assert doc.metadata["size_bytes"] == path.stat().st_size
    assert datetime.fromisoformat(doc.metadata["modified"]).utcoffset() is not None
    check_blocks(doc.text, doc.blocks)
    assert load_document(path) == doc  # deterministic


@pytest.mark.parametrize(("name", "fmt"), [("mdx_sample.md", "markdown"), ("notes.txt", "text")])
def test_document_from_text_parses_as_load_document(
    tmp_path: Path, fixtures_dir: Path, name: str, fmt: str
) -> None:
    path = tmp_path / name
    if name == "notes.txt":
        path.write_bytes(b"First paragraph.\r\n\r\nSecond one.\r\n")
    else:
        shutil.copy(fixtures_dir / name, path)
    loaded = load_document(path)
    raw = path.read_bytes().decode("utf-8")
    doc = document_from_text(
        raw, fmt=fmt, doc_id="my/id.md", source="corpus/my/id.md", stem=path.stem
    )
    assert (doc.doc_id, doc.source, doc.file_hash) == ("my/id.md", "corpus/my/id.md", "")
    for attr in ("title", "text", "blocks", "content_hash", "format", "language"):
        assert getattr(doc, attr) == getattr(loaded, attr), attr
    with pytest.raises(EmptyDocumentError):
        document_from_text(" \n", fmt=fmt, doc_id="e", source="e", stem="e")
    with pytest.raises(UnsupportedFormatError):
        document_from_text(raw, fmt="pdf", doc_id="e", source="e", stem="e")


def test_load_html(tmp_path: Path, fixtures_dir: Path) -> None:
    path = tmp_path / "page.HTM"
    shutil.copy(fixtures_dir / "page.html", path)
    doc = load_document(path)
    assert doc.format == "html"
    assert doc.title == "Capítulo 2. Paquetes"
    assert "table" in {b.kind for b in doc.blocks}
    assert doc.content_hash == hashlib.sha256(doc.text.encode()).hexdigest()


def test_load_text_latin1_crlf(tmp_path: Path) -> None:
    path = tmp_path / "notas.txt"
    path.write_bytes("Añadir estado\r\nsegunda línea\r\n\r\nOtro párrafo\r\n".encode("latin-1"))
    doc = load_document(path)
    assert doc.text == "Añadir estado\nsegunda línea\n\nOtro párrafo\n"
    assert doc.title == "notas"
    assert [doc.text[b.start : b.end] for b in doc.blocks] == [
        "Añadir estado\nsegunda línea",
        "Otro párrafo",
    ]


def test_crlf_and_lf_files_give_same_document_content(tmp_path: Path, fixtures_dir: Path) -> None:
    lf = (fixtures_dir / "mdx_sample.md").read_bytes()
    (tmp_path / "lf.md").write_bytes(lf)
    (tmp_path / "crlf.md").write_bytes(b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"))
    a, b = load_document(tmp_path / "lf.md"), load_document(tmp_path / "crlf.md")
    assert (a.text, a.blocks, a.content_hash) == (b.text, b.blocks, b.content_hash)


def test_binary_with_md_extension(tmp_path: Path) -> None:
    path = tmp_path / "image.md"
    path.write_bytes(b"\x00\x01\x02\x03binary\x00\x00\xff")
    with pytest.raises(DecodeError, match="looks like a binary file") as info:
        load_document(path)
    assert info.value.path == path.resolve().as_posix()


@pytest.mark.parametrize(
    ("name", "data", "what"),
    [
        # an uncompressed PDF is ASCII: it was indexed as PDF syntax under .md and .html
        ("ascii_pdf.md", b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "a PDF file"),
        ("really_pdf.html", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n\x00\x01", "a PDF file"),
        ("report.txt", b"PK\x03\x04\x14\x00\x06\x00word/document.xml", "a ZIP archive"),
        ("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "a PNG image"),
    ],
)
def test_a_binary_format_under_a_text_extension_says_what_it_is(
    tmp_path: Path, name: str, data: bytes, what: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match=f"is {what}"):
        load_document(path)


def test_utf16_without_a_byte_order_mark_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "nota.txt"
    path.write_bytes("Hola, ¿qué tal? Texto en UTF-16.\n".encode("utf-16-le"))
    with pytest.raises(DecodeError, match="UTF-16 text without a byte-order mark"):
        load_document(path)


def test_zero_byte_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_bytes(b"")
    with pytest.raises(EmptyDocumentError):
        load_document(path)


def test_front_matter_only_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "fm.md"
    path.write_text("---\ntitle: solo\n---\n", encoding="utf-8")
    with pytest.raises(EmptyDocumentError):
        load_document(path)


def test_html_without_text_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "nav.html"
    path.write_text("<html><body><nav>menu</nav></body></html>", encoding="utf-8")
    with pytest.raises(EmptyDocumentError):
        load_document(path)


def test_a_file_of_unbroken_runs_holds_no_words(tmp_path: Path) -> None:
    """A new user's 19 MB one-line file became 7,561 junk chunks; a 5 MB "word" costs e5 tens of
    minutes. Such a file is RS203 with its reason; a base64 image beside prose still loads."""
    blob = tmp_path / "line.md"
    blob.write_text("a" * 200_000, encoding="utf-8")
    with pytest.raises(EmptyDocumentError, match=r"holds no words: 100% of its 200,000 char"):
        load_document(blob)
    dump = tmp_path / "dump.txt"  # hashes one per line: each a run of 1,000+ characters
    dump.write_text(("f" * 1500 + "\n") * 30, encoding="utf-8")
    with pytest.raises(EmptyDocumentError, match="runs of 1,000 or more"):
        load_document(dump)
    mixed = tmp_path / "mixed.md"
    prose = "The quokka manual explains the restart procedure in plain words. " * 400
    mixed.write_text(f"# Manual\n\n{prose}\n\n![logo](data:image/png;base64,{'Q' * 30_000})\n")
    assert "quokka" in load_document(mixed).text
    small = tmp_path / "small.txt"  # under the checked size: loaded as it is
    small.write_text("z" * 5_000, encoding="utf-8")
    assert load_document(small).text.startswith("zzz")


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 100, encoding="utf-8")
    with pytest.raises(FileTooLargeError, match="max_file_bytes=10"):
        load_document(path, max_file_bytes=10)


def test_unsupported_and_missing(tmp_path: Path) -> None:
    (tmp_path / "a.docx").write_bytes(b"PK\x03\x04")
    with pytest.raises(UnsupportedFormatError):
        load_document(tmp_path / "a.docx")
    with pytest.raises(SourceNotFoundError):
        load_document(tmp_path / "missing.md")
    # trial 24: a Confluence export as a .zip or XML was refused without saying what to do
    (tmp_path / "space.zip").write_bytes(b"PK\x03\x04")
    (tmp_path / "entities.xml").write_text("<hibernate-generic/>", encoding="utf-8")
    with pytest.raises(UnsupportedFormatError, match="unpack the archive and ingest the folder"):
        load_document(tmp_path / "space.zip")
    with pytest.raises(UnsupportedFormatError, match="export it as HTML"):
        load_document(tmp_path / "entities.xml")
    _, errors = discover([tmp_path / "space.zip"], follow_symlinks="inside")
    assert "unpack the archive" in errors[0].reason


def _tree(root: Path) -> None:
    for rel in ["b.md", "a/z.html", "a/y.txt", "a/skip.docx", ".hidden/x.md", "a/.h.md"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("hola\n", encoding="utf-8")


def test_discover_directory(tmp_path: Path) -> None:
    _tree(tmp_path)
    files, errors = discover([tmp_path])
    # hidden folders are skipped silently; a hidden file of a supported type is reported
    assert [(type(e), Path(e.path).name) for e in errors] == [(HiddenFileError, ".h.md")]
    assert [p.relative_to(tmp_path).as_posix() for p in files] == ["a/y.txt", "a/z.html", "b.md"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks unsupported")
def test_an_emacs_lock_file_is_no_hidden_document(tmp_path: Path) -> None:
    """Review 45: ``.#notes.md``, the dangling link Emacs keeps while a buffer is modified, was
    reported as a hidden file (RS211), so ``watch``/``ingest`` exited 3 during an edit."""
    (tmp_path / "notes.md").write_text("hola\n", encoding="utf-8")
    os.symlink("user@host.1234:1700000000", tmp_path / ".#notes.md")
    (tmp_path / ".#real.md").write_text("hola\n", encoding="utf-8")  # a file: still reported
    files, errors = discover([tmp_path])
    assert [p.name for p in files] == ["notes.md"]
    assert [(type(e), Path(e.path).name) for e in errors] == [(HiddenFileError, ".#real.md")]


def test_discover_explicit_and_missing(tmp_path: Path) -> None:
    _tree(tmp_path)
    files, errors = discover(
        [tmp_path / "b.md", tmp_path / "a/skip.docx", tmp_path / "nope", tmp_path / "b.md"]
    )
    assert files == [tmp_path / "b.md"]
    assert [type(e) for e in errors] == [UnsupportedFormatError, SourceNotFoundError]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks unsupported")
def test_discover_symlink_loop_terminates(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "a" / ".h.md").unlink()
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path / "self")  # a self-loop, no supported extension
    (tmp_path / "self.md").symlink_to(tmp_path / "self.md")
    files, errors = discover([tmp_path, tmp_path / "a"])
    assert [p.name for p in files] == ["y.txt", "z.html", "b.md"]
    # each reported once, though tmp_path/a is walked twice
    assert sorted((type(e), Path(e.path).name) for e in errors) == [
        (NotRegularFileError, "loop"),
        (NotRegularFileError, "self.md"),
    ]
    assert all("loop" in e.reason for e in errors)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks unsupported")
def test_discover_reports_skipped_files_by_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder given as a relative path: its skipped files are reported by absolute path,
    the form of a loaded document's source (a new user saw ``bad/loopdir/self`` beside
    ``/tmp/.../bad/empty.md`` in one report)."""
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "ok.md").write_text("# Ok\n\nFine.\n", encoding="utf-8")
    (folder / "self.md").symlink_to(folder / "self.md")
    monkeypatch.chdir(tmp_path)
    files, errors = discover([Path("bad"), Path("missing.md")])
    assert files == [folder / "ok.md"]
    assert sorted(e.path for e in errors) == [
        str(folder / "self.md"),
        str(tmp_path / "missing.md"),
    ]


def _links_tree(tmp_path: Path) -> Path:
    """``root/`` with a good file and every kind of link and special file; ``sibling/`` beside
    it holds a secret the links point to."""
    root, sibling = tmp_path / "root", tmp_path / "sibling"
    (root / ".hidden").mkdir(parents=True)
    sibling.mkdir()
    (root / "good.md").write_text("# Good\n\ninside\n")
    (root / ".hidden" / "inner.md").write_text("# Inner\n\nreached through a link only\n")
    (sibling / "secret.md").write_text("# Secret\n\noutside\n")
    (root / "inner.md").symlink_to(root / ".hidden" / "inner.md")  # inside the root
    (root / "passwd.md").symlink_to("/etc/passwd")
    (root / "secret.md").symlink_to(sibling / "secret.md")
    (root / "outdir").symlink_to(sibling, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    os.mkfifo(root / "fifo.md")
    return root


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
@pytest.mark.parametrize(
    ("follow", "read", "refused"),
    [
        ("inside", {"good.md", "inner.md"}, {"passwd.md", "secret.md", "outdir"}),
        # secret.md and outdir/secret.md are one file: listed once
        ("all", {"good.md", "inner.md", "passwd.md", "outdir/secret.md"}, set()),
        ("never", {"good.md"}, {"inner.md", "passwd.md", "secret.md", "outdir"}),
    ],
)
def test_discover_stays_inside_the_roots(
    tmp_path: Path, follow: str, read: set[str], refused: set[str]
) -> None:
    root = _links_tree(tmp_path)
    files, errors = discover([root], follow_symlinks=follow)  # type: ignore[arg-type]
    assert {p.relative_to(root).as_posix() for p in files} == read
    reported = {Path(e.path).name: e for e in errors}
    assert {n for n, e in reported.items() if isinstance(e, OutsideRootsError)} == refused
    assert {n for n, e in reported.items() if isinstance(e, NotRegularFileError)} == {
        "loop",
        "dangling.md",
        "fifo.md",
    }
    assert "FIFO" in reported["fifo.md"].reason and "dangling" in reported["dangling.md"].reason
    for name in refused:
        assert reported[name].code == "RS210" and reported[name].reason


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_file_roots_count_as_their_own_root(tmp_path: Path) -> None:
    root = _links_tree(tmp_path)
    outside = tmp_path / "sibling" / "secret.md"
    files, errors = discover([root, outside])
    # given directly, the file is its own root, so root/secret.md may point at it (listed once)
    assert outside.resolve() in {p.resolve() for p in files}
    assert "secret.md" not in {Path(e.path).name for e in errors}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_fifo_given_directly_is_reported_and_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    files, errors = discover([fifo])
    assert files == [] and [e.code for e in errors] == ["RS209"]
    with pytest.raises(NotRegularFileError, match="FIFO"):
        load_document(fifo)


def test_undecodable_file_name_is_loaded_with_a_bytes_doc_id(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/latin1_name_\xe9\xff.md"
    with open(raw, "wb") as fh:
        fh.write(b"# Caf\xc3\xa9\n\nZebras and giraffes.\n")
    files, errors = discover([tmp_path])
    assert errors == [] and [os.fsencode(p) for p in files] == [raw]
    doc = load_document(files[0])
    real = os.path.realpath(raw)
    assert doc.doc_id == hashlib.sha256(real).hexdigest()[:16] == doc_id_for(files[0])
    assert doc.source.endswith("latin1_name_\\xe9\\xff.md")
    doc.source.encode("utf-8")  # text that JSON, terminals and the store accept
    assert doc.title == "Café"


def test_dot_dot_md_is_reported_in_a_folder_and_loaded_when_given(tmp_path: Path) -> None:
    (tmp_path / "..md").write_text("# Dots\n\ntwo dots\n")
    files, errors = discover([tmp_path])
    assert files == [] and [(e.code, Path(e.path).name) for e in errors] == [("RS211", "..md")]
    files, errors = discover([tmp_path / "..md"])
    assert errors == [] and load_document(files[0]).title == "Dots"


@pytest.mark.parametrize(
    "text", ["%PDF-1.7 is the PDF version our exporter writes.\n", "GIF89a is the animated GIF.\n"]
)
def test_text_that_starts_like_a_binary_format_is_still_text(tmp_path: Path, text: str) -> None:
    path = tmp_path / "note.md"
    path.write_text(text, encoding="utf-8")
    assert load_document(path).text.strip() == text.strip()
