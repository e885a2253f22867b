"""Ingest reads only regular files inside the paths it is given, names odd files safely in every
output, refuses a missing root, and says when an index is empty (issues 17 and 18)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from ragstrata.cli import EXIT_PARTIAL, app
from ragstrata.paths import path_text

pytestmark = pytest.mark.slow

ENV = {"RAGSTRATA_INGEST_WORKERS": "0"}  # parse in-process: no worker pool per example


def _invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=ENV | (env or {}))


def _hit_sources(index: Path, query: str) -> set[str]:
    result = _invoke("search", query, "--index", str(index), "--json", "--top-k", "20")
    assert result.exit_code == 0, result.output
    return {hit["source"] for hit in json.loads(result.stdout)["hits"]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_links_and_special_files_stay_outside_the_index(tmp_path: Path) -> None:
    root, sibling = tmp_path / "root", tmp_path / "sibling"
    root.mkdir()
    sibling.mkdir()
    (root / "good.md").write_text("# Good\n\nThe good page talks about lighthouses.\n")
    secret = sibling / "secret.md"
    secret.write_text("# Secret\n\nThe sibling folder hides the word quasarfox.\n")
    (root / "secret.md").symlink_to(secret)
    (root / "passwd.md").symlink_to("/etc/passwd")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling.md").symlink_to(root / "gone.md")
    os.mkfifo(root / "fifo.md")  # opened, it would block ingest forever
    index, report = tmp_path / "idx", tmp_path / "report.json"

    result = _invoke("ingest", str(root), "--index", str(index), "--report", str(report))
    assert result.exit_code == EXIT_PARTIAL, result.output
    failures = {Path(f["path"]).name: f for f in json.loads(report.read_text())["failures"]}
    codes = {name: f["code"] for name, f in failures.items()}
    assert codes == {
        "secret.md": "RS210",
        "passwd.md": "RS210",
        "loop": "RS209",
        "dangling.md": "RS209",
        "fifo.md": "RS209",
    }
    assert all(f["reason"] for f in failures.values())
    assert "skipped" in result.output and "fifo.md" in result.output
    assert _hit_sources(index, "quasarfox") <= {(root / "good.md").resolve().as_posix()}
    assert "/etc/passwd" not in _hit_sources(index, "root bin bash nologin")
    stats = json.loads(_invoke("stats", "--index", str(index), "--json").stdout)
    assert stats["documents"] == 1

    # "all" follows the links out of the root; broken links and the FIFO stay reported
    result = _invoke(
        "ingest", str(root), "--index", str(index), "--json",
        env={"RAGSTRATA_INGEST_FOLLOW_SYMLINKS": "all"},
    )  # fmt: skip
    assert result.exit_code == EXIT_PARTIAL, result.output
    data = json.loads(result.stdout)
    assert {Path(f["path"]).name for f in data["failures"]} == {"loop", "dangling.md", "fifo.md"}
    assert secret.resolve().as_posix() in _hit_sources(index, "quasarfox")
    if Path("/etc/passwd").is_file():
        assert data["added"] == 2
        assert "/etc/passwd" in _hit_sources(index, "root bin bash nologin")


def test_odd_file_names_are_ingested_and_printed_safely(tmp_path: Path) -> None:
    corpus = tmp_path / "odd"
    corpus.mkdir()
    raw_dir = os.fsencode(corpus)
    with open(raw_dir + b"/latin1_name_\xe9\xff.md", "wb") as fh:
        fh.write(b"# Zebras\n\nZebras and giraffes share the savanna.\n")
    with open(raw_dir + b"/red_\x1b[31m_alert\x07.md", "wb") as fh:
        fh.write(b"# Elephants\n\nElephants remember the waterholes.\n")
    (corpus / "..md").write_text("# Dots\n\nTwo dots.\n")
    index, report = tmp_path / "idx", tmp_path / "report.json"

    result = _invoke("ingest", str(corpus), "--index", str(index), "--report", str(report))
    assert result.exit_code == EXIT_PARTIAL, result.output  # ..md is reported, not lost
    assert "\x1b" not in result.output and "\x07" not in result.output
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["added"] == 2
    assert [(Path(f["path"]).name, f["code"]) for f in data["failures"]] == [("..md", "RS211")]

    as_json = _invoke("ingest", str(corpus), "--index", str(index), "--json")
    assert json.loads(as_json.stdout)["unchanged"] == 2  # the doc ids are stable

    sources = _hit_sources(index, "zebras savanna elephants waterholes")
    assert any(s.endswith("/latin1_name_\\xe9\\xff.md") for s in sources)
    table = _invoke("search", "zebras elephants", "--index", str(index), env={"COLUMNS": "300"})
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.output and "\x07" not in table.output
    assert "\\x1b" in table.output and "\\xe9\\xff" in table.output
    ask = _invoke("ask", "What do elephants remember?", "--index", str(index))
    assert ask.exit_code == 0, ask.output
    assert "\x1b" not in ask.output and "red_\\x1b" in ask.output
    for args in (("--json",), ()):
        stats = _invoke("stats", "--index", str(index), *args)
        assert stats.exit_code == 0, stats.output


_NAME_BYTES = st.binary(min_size=1, max_size=40).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=_NAME_BYTES)
def test_any_byte_name_reaches_report_and_json(name: bytes) -> None:
    """Property: whatever the bytes of a file name, ``ingest --json --report`` exits 0 (added)
    and writes valid UTF-8 JSON in which the file is counted as added or reported by path; or,
    when the only file is skipped (a name starting with ``.`` is a hidden file, RS211), exits 1
    with RS201 (no supported file for a new index) naming the skipped file, writing nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c"
        corpus.mkdir()
        raw = os.fsencode(corpus) + b"/" + name + b".md"
        with open(raw, "wb") as fh:
            fh.write(b"# Title\n\nSome words to index.\n")
        report = Path(tmp) / "report.json"
        result = _invoke(
            "ingest", str(corpus), "--index", str(Path(tmp) / "idx"),
            "--dry-run", "--json", "--report", str(report),
        )  # fmt: skip
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.exit_code in (0, 1), result.output
        if result.exit_code == 1 and "[RS201]" in result.stderr:
            assert "[RS211]" in result.stderr and not report.exists()
            from ragstrata.cli.common import _term

            assert _term(path_text(os.fsdecode(raw))) in result.stderr
            return
        for data in (json.loads(result.stdout), json.loads(report.read_bytes().decode("utf-8"))):
            failures = data["failures"]
            assert data["added"] + len(failures) == 1
            assert result.exit_code == (1 if failures else 0)
            for failure in failures:
                failure["path"].encode("utf-8")
                assert failure["path"] == path_text(os.fsdecode(raw))


def test_missing_root_is_an_error_and_creates_no_index(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    missing = tmp_path / "nonexistent"
    result = _invoke("ingest", str(missing), "--index", str(index))
    assert result.exit_code == 1
    assert "RS205" in result.output and str(missing) in result.output
    assert not index.exists()


def test_the_index_itself_is_no_root(tmp_path: Path) -> None:
    """Trial 24 (2026-12-06): `watch idx --index idx` synced nothing, silently."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe canary runs for ten minutes.\n", encoding="utf-8")
    assert _invoke("ingest", str(docs), "--index", str(index)).exit_code == 0
    before = (index / "manifest.json").read_bytes()
    for command in (["ingest", str(index)], ["watch", str(index / "."), "--once"]):
        result = _invoke(*command, "--index", str(index))
        assert result.exit_code != 0, result.output
        assert "RS101" in result.output and "is the index" in result.output, result.output
    assert (index / "manifest.json").read_bytes() == before


def test_empty_index_refuses_with_a_typed_reason_and_warns(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "empty.md").write_bytes(b"")  # an index is created, with no document in it
    index = tmp_path / "idx"
    assert _invoke("ingest", str(corpus), "--index", str(index)).exit_code == 1
    assert json.loads(_invoke("stats", "--index", str(index), "--json").stdout)["documents"] == 0

    ask = _invoke("ask", "What is in the index?", "--index", str(index), "--json")
    assert ask.exit_code == 0, ask.output
    answer = json.loads(ask.stdout)
    assert answer["refusal"] is True and answer["refused_by"] == "empty_index"
    warnings = [line for line in ask.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(index) in warnings[0] and "no documents" in warnings[0]

    search = _invoke("search", "anything", "--index", str(index))
    assert search.exit_code == 0, search.output
    assert "no documents" in search.stderr and str(index) in search.stderr


def test_a_source_filter_takes_a_file_name_or_the_end_of_a_path(tmp_path: Path) -> None:
    """Trial 25 (2026-12-06): `--filter source=frontmatter.md` printed "0 hits" with no hint;
    only the absolute path as indexed matched."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nThe canary runs for ten minutes.\n", encoding="utf-8")
    (docs / "sub" / "b.md").write_text("# B\n\nThe canary runs for an hour.\n", encoding="utf-8")
    assert _invoke("ingest", str(docs), "--index", str(index)).exit_code == 0
    (tmp_path / "alias").symlink_to(docs)  # review 27: a path through a linked folder
    for value in ("b.md", "sub/b.md", str(docs / "sub" / "b.md"), str(tmp_path / "alias/sub/b.md")):
        result = _invoke(
            "search", "canary", "--index", str(index), "--json", "--filter", f"source={value}"
        )
        assert result.exit_code == 0, result.output
        hits = json.loads(result.stdout)["hits"]
        assert [h["source"] for h in hits] == [str(docs / "sub" / "b.md")], (value, hits)
    # a folder: its documents (review 30: RS600 "no indexed document's path is or ends with it")
    for value in (str(docs / "sub"), str(docs / "sub") + "/", str(tmp_path / "alias")):
        result = _invoke(
            "search", "canary", "--index", str(index), "--json", "--filter", f"source={value}"
        )
        assert result.exit_code == 0, result.output
        sources = {h["source"] for h in json.loads(result.stdout)["hits"]}
        expected = {str(docs / "sub" / "b.md")}
        assert sources == (expected if "sub" in value else expected | {str(docs / "a.md")})
    missing = _invoke("search", "canary", "--index", str(index), "--filter", "source=c.md")
    assert missing.exit_code != 0 and "RS600" in missing.output and "c.md" in missing.output
    asked = _invoke(
        "ask",
        "How long does the canary run?",
        "--index",
        str(index),
        "--json",
        "--filter",
        "source=a.md",
    )
    assert asked.exit_code == 0, asked.output
    assert all(c["source"].endswith("a.md") for c in json.loads(asked.stdout)["citations"])


def test_forget_removes_the_documents_of_a_moved_folder(tmp_path: Path) -> None:
    """Review 27: the documents of a folder that was moved or deleted could not be removed
    from the command line (`ingest OLD --prune` fails with RS205, `ingest NEW --prune` prunes
    only under NEW): stale and conflicting hits for good."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    (docs / "a").mkdir(parents=True)
    (docs / "a" / "old.md").write_text("# Old\n\nThe canary runs for ten minutes.\n", "utf-8")
    (docs / "a" / "other.md").write_text("# Other\n\nThe canary is green.\n", "utf-8")
    (docs / "b.md").write_text("# B\n\nThe canary runs for an hour.\n", encoding="utf-8")
    assert _invoke("ingest", str(docs), "--index", str(index)).exit_code == 0
    (docs / "a").rename(tmp_path / "moved")
    again = _invoke("ingest", str(docs / "a"), "--index", str(index), "--prune")
    assert again.exit_code == 1 and "RS205" in again.output
    assert (
        "2 indexed documents came from there" in again.output and "ragstrata forget" in again.output
    )
    dry = _invoke("forget", str(docs / "a"), "--index", str(index), "--dry-run", "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["removed"] == 0
    assert len(json.loads(dry.stdout)["sources"]) == 2
    done = _invoke("forget", str(docs / "a"), "--index", str(index), "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["removed"] == 2, done.output
    hits = json.loads(_invoke("search", "canary", "--index", str(index), "--json").stdout)["hits"]
    assert [h["source"] for h in hits] == [str(docs / "b.md")]
    nothing = _invoke("forget", str(docs / "zzz"), "--index", str(index))
    assert (
        nothing.exit_code == 1
        and "RS205" in nothing.output
        and "nothing was removed" in nothing.output
    )


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_a_folder_with_a_non_utf8_name_can_be_pruned_and_forgotten(tmp_path: Path) -> None:
    """Review 36: sources keep a name's non-UTF-8 bytes as \\xNN escapes, but forget and
    --prune compared them with the raw path: RS205 for the folder, a deleted file kept."""
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe canary runs for ten minutes.\n", "utf-8")
    (folder / "b.md").write_text("# B\n\nThe canary runs for an hour.\n", "utf-8")
    index = tmp_path / "idx"
    assert _invoke("ingest", str(folder), "--index", str(index)).exit_code == 0
    (folder / "b.md").unlink()
    pruned = _invoke("ingest", str(folder), "--index", str(index), "--prune", "--json")
    assert pruned.exit_code == 0 and json.loads(pruned.stdout)["pruned"] == 1, pruned.output
    assert _hit_sources(index, "canary") == {path_text(folder / "a.md")}
    done = _invoke("forget", str(folder), "--index", str(index), "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["removed"] == 1, done.output


def test_forget_leaves_no_read_snapshot_behind(tmp_path: Path) -> None:
    """Review 36: a forget that re-weighted BM25 published a read snapshot (a whole copy of
    the shard) and left it, with readers/current pointing at it, until the next ingest."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "short.md").write_text("# Short\n\nThe canary is green.\n", "utf-8")
    long = " ".join(["The canary runs for ten minutes on every release branch."] * 30)
    (docs / "long.md").write_text(f"# Long\n\n{long}\n", "utf-8")
    assert _invoke("ingest", str(docs), "--index", str(index)).exit_code == 0
    done = _invoke("forget", str(docs / "short.md"), "--index", str(index), "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["removed"] == 1, done.output
    assert not (index / "readers").exists(), sorted(p.name for p in (index / "readers").iterdir())
    assert _hit_sources(index, "canary") == {str(docs / "long.md")}


def test_stats_lists_the_documents_and_the_remembered_failures(tmp_path: Path) -> None:
    """Trial 37: `stats` gave totals only; which documents an index holds and which files
    failed could not be listed from the command line (the HTTP service could)."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "guia.md").write_text("# Guía\n\nEl canario dura diez minutos.\n", "utf-8")
    (docs / "vacio.md").write_text("", "utf-8")
    assert _invoke("ingest", str(docs), "--index", str(index)).exit_code == EXIT_PARTIAL
    listed = _invoke("stats", "--index", str(index), "--documents", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.stdout)
    [doc] = data["document_list"]
    assert doc["source"] == str(docs / "guia.md") and doc["title"] == "Guía"
    assert doc["chunks"] == data["chunks"] == 1 and doc["complete"]
    [failure] = data["failures"]
    assert failure["path"] == str(docs / "vacio.md") and failure["code"] == "RS203"
    text = _invoke("stats", "--index", str(index), "--documents")
    assert text.exit_code == 0
    assert "guia.md (1 chunk) Guía" in text.stdout
    assert "1 failed file:" in text.stdout and "vacio.md: [RS203]" in text.stdout
    assert "document_list" not in _invoke("stats", "--index", str(index), "--json").stdout
