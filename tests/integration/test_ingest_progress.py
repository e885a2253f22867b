"""Ingest progress counts what is really done, and is printed as plain lines off a terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragstrata.cli import app
from ragstrata.cli.progress import IngestProgress

pytestmark = pytest.mark.slow

_LINE = re.compile(
    r"^ingest: (\d+)/(\d+|\?) files parsed, (\d+)/(\d+)(\+)? chunks embedded, "
    r"(\d+) committed, (?:[\d.]+|-) chunks/s, elapsed \d+:\d\d:\d\d"
)


def _corpus(root: Path, n: int = 6) -> Path:
    root.mkdir()
    for i in range(n):
        body = "\n\n".join(
            f"## Part {j}\n\n" + " ".join([f"Section {j} of manual {i} explains step {j}."] * 30)
            for j in range(6)
        )
        (root / f"manual{i}.md").write_text(f"# Manual {i}\n\n{body}\n", encoding="utf-8")
    return root


@pytest.fixture
def minilm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGSTRATA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAGSTRATA_EMBEDDER_NAME", "minilm-onnx")


def test_plain_progress_lines_when_stderr_is_not_a_terminal(
    tmp_path: Path, minilm_env: None
) -> None:
    corpus = _corpus(tmp_path / "docs")
    index = tmp_path / "idx"
    result = CliRunner().invoke(
        app, ["ingest", str(corpus), "--index", str(index), "--progress-every", "0.05", "--json"]
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("ingest:")]
    assert len(lines) >= 2, result.stderr  # at least one heartbeat and the closing line
    for line in lines:
        assert _LINE.match(line), line
    # the closing line: every file parsed, every chunk embedded and committed
    last = _LINE.match(lines[-1])
    assert last is not None
    chunks = int(result.stdout[result.stdout.index('"chunks":') :].split(":")[1].split(",")[0])
    assert last.group(1) == last.group(2) == "6"
    assert int(last.group(3)) == int(last.group(4)) == int(last.group(6)) == chunks > 0
    assert last.group(5) is None


def test_no_progress_lines_with_progress_every_zero(tmp_path: Path, minilm_env: None) -> None:
    corpus = _corpus(tmp_path / "docs", n=2)
    result = CliRunner().invoke(
        app, ["ingest", str(corpus), "--index", str(tmp_path / "idx"), "--progress-every", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "ingest:" not in result.stderr


def test_progress_is_not_complete_while_the_last_commit_embeds(
    tmp_path: Path, minilm_env: None
) -> None:
    """The event stream of a real ingest: when the writer has taken the last file, chunks are
    still waiting to be embedded and committed, so the counts must not read as done."""
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata

    corpus = _corpus(tmp_path / "docs", n=3)
    state = IngestProgress()
    seen: list[tuple[str, bool]] = []

    def record(event: str, done: int, total: int) -> None:
        state(event, done, total)
        seen.append((event, state.finished))

    with Ragstrata(RagConfig.load().with_index(tmp_path / "idx")) as engine:
        report = engine.ingest([corpus], progress=record)
    last_parse = max(i for i, (event, _) in enumerate(seen) if event == "parse")
    assert not seen[last_parse][1]  # all files parsed, not all chunks committed
    assert any(event == "commit" for event, _ in seen[last_parse:])
    written = [(event, done) for event, done in seen if event != "reweight"]
    assert state.finished and written[-1] == ("commit", True)  # then only BM25 re-weighting
    assert state.chunks_committed == state.chunks_queued == report.chunks > 0
    assert state.chunks_embedded == report.chunks
    assert "ETA" not in state.line()  # nothing left


def test_eta_comes_from_the_measured_rate() -> None:
    now = [100.0]
    state = IngestProgress(clock=lambda: now[0])
    state("discover", 4, 4)
    state("bytes", 500, 1000)
    state("chunk", 50, 50)
    state("parse", 2, 4)
    now[0] = 110.0
    state("embed", 50, 50)
    # half the bytes gave 50 chunks: about 100 expected; 5 chunks/s -> 50 left in 10 s
    assert state.chunks_expected == 100
    assert state.rate == pytest.approx(5.0)
    assert state.eta() == pytest.approx(10.0)
    assert "ETA 0:00:10 (est.)" in state.line()
    assert "2/4 files parsed, 50/50+ chunks embedded, 0 committed" in state.line()


def test_an_unchanged_rerun_says_its_files_were_skipped(tmp_path: Path, minilm_env: None) -> None:
    """A re-run over unchanged files printed "0/0 files parsed" alone, which read as "found
    nothing" (a new user's run, 2026-12-05)."""
    corpus = _corpus(tmp_path / "docs", n=3)
    index = tmp_path / "idx"
    args = ["ingest", str(corpus), "--index", str(index), "--progress-every", "0.01"]
    assert CliRunner().invoke(app, args).exit_code == 0
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("ingest:")]
    assert lines and all(_LINE.match(line) for line in lines), result.stderr
    assert lines[-1].startswith("ingest: 0/0 files parsed"), lines[-1]
    assert lines[-1].endswith(", 3 files unchanged (not parsed again)"), lines[-1]


def test_reweighting_after_the_last_commit_shows_in_the_line() -> None:
    state = IngestProgress(clock=lambda: 0.0)
    state("discover", 1, 1)
    state("chunk", 40, 40)
    state("parse", 1, 1)
    state("embed", 40, 40)
    state("commit", 40, 40)
    assert "re-weighted" not in state.line()
    state("reweight", 10, 40)
    assert state.line().endswith(", BM25 re-weighted 10/40 chunks")
    state("reweight", 40, 40)
    assert state.finished and state.line().endswith(", BM25 re-weighted 40/40 chunks")


def test_embed_progress_moves_inside_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit of 256 chunks reports its embedding in groups, not once at its end."""
    monkeypatch.setenv("RAGSTRATA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAGSTRATA_EMBEDDER_NAME", "minilm-onnx")
    from ragstrata.config import RagConfig
    from ragstrata.index.writer import EMBED_PROGRESS_TEXTS
    from ragstrata.pipeline import Ragstrata

    corpus = tmp_path / "docs"
    corpus.mkdir()
    for n in range(3):
        body = "\n\n".join(
            f"## Parte {n}-{i}\n\nTexto número {i} del archivo {n}." for i in range(40)
        )
        (corpus / f"f{n}.md").write_text(f"# Archivo {n}\n\n{body}\n", encoding="utf-8")
    events: list[tuple[str, int, int]] = []
    with Ragstrata(RagConfig.load().with_index(tmp_path / "idx")) as engine:
        report = engine.ingest([corpus], progress=lambda e, d, t: events.append((e, d, t)))
    embeds = [d for e, d, _ in events if e == "embed"]
    assert sum(embeds) == report.chunks
    assert (
        len(embeds) >= report.chunks // EMBED_PROGRESS_TEXTS and max(embeds) <= EMBED_PROGRESS_TEXTS
    )


def test_a_file_refused_on_its_size_is_not_in_the_estimated_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 48: a 50 MB file refused by max_file_bytes was counted in the bytes the ETA scales
    by, which read 2:34:43 for a run of 52 s."""
    monkeypatch.setenv("RAGSTRATA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAGSTRATA_EMBEDDER_NAME", "minilm-onnx")
    monkeypatch.setenv("RAGSTRATA_INGEST_MAX_FILE_BYTES", "20000")
    from ragstrata.config import RagConfig
    from ragstrata.pipeline import Ragstrata

    corpus = _corpus(tmp_path / "docs", n=1)
    small = (corpus / "manual0.md").stat().st_size
    assert small <= 20_000
    (corpus / "huge.txt").write_text("palabra " * 10_000, encoding="utf-8")  # 80 kB
    events: list[tuple[str, int, int]] = []
    with Ragstrata(RagConfig.load().with_index(tmp_path / "idx")) as engine:
        report = engine.ingest([corpus], progress=lambda e, d, t: events.append((e, d, t)))
    assert [f.code for f in report.failures] == ["RS204"]
    assert {t for e, _, t in events if e == "bytes"} == {small}
