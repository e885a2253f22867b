"""The same question over the same index gives the same scores and ranking in every process
(whatever ``PYTHONHASHSEED``) and whatever batch size the index was embedded with.

Real CLI processes over a small index built with the packaged default embedder (``e5-onnx``,
int8): the JSON of ``search`` and ``ask`` is compared whole, timings aside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DOCS = {
    "backups.md": "# Backups\n\n## Schedule\n\nBackups run every night at two o'clock and are "
    "kept for thirty days. The backup job copies the database and the uploaded files to the "
    "object store, then checks every archive against its checksum.\n\n## Restore\n\nStop the "
    "server, run the restore command with the backup date, start the server again.\n",
    "server.md": "# Server\n\nThe server reads PORT and WORKERS at start; without them it "
    "listens on port 8000 with two worker processes.\n\n## Logging\n\nLogs rotate daily.\n",
    "users.md": "# Users\n\nAdministrators create users, reset passwords and delete accounts. A "
    "deleted account keeps its backups for thirty days, then they are removed for good.\n\n"
    "## Passwords\n\nAt least twelve characters; only a salted hash is stored.\n",
    "copias.md": "# Copias de seguridad\n\nLas copias se guardan treinta días y se hacen cada "
    "noche.\n",
}
QUESTION = "How long are backups kept?"


def cli(*args: str, home: Path, **env: str) -> str:
    """stdout of ``ragstrata ARGS`` in a fresh interpreter; fails the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "ragstrata.cli", *args],
        env={**os.environ, "RAGSTRATA_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def without_timings(text: str) -> Any:
    data = json.loads(text)
    data.pop("timings_ms", None)
    return data


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("det")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    return root


def ingest(corpus: Path, name: str, batch_size: int) -> Path:
    index = corpus / name
    cli(
        "ingest",
        str(corpus / "docs"),
        "--index",
        str(index),
        home=corpus,
        RAGSTRATA_EMBEDDER_BATCH_SIZE=str(batch_size),
    )
    return index


def test_search_and_ask_agree_across_hash_seeds(corpus: Path) -> None:
    index = str(ingest(corpus, "idx-seeds", 32))
    runs = []
    for seed in ("1", "2"):
        search = cli(
            "search", QUESTION, "--index", index, "--json", home=corpus, PYTHONHASHSEED=seed
        )
        ask = cli("ask", QUESTION, "--index", index, "--json", home=corpus, PYTHONHASHSEED=seed)
        runs.append((without_timings(search), without_timings(ask)))
    assert runs[0][0]["hits"], runs[0][0]
    assert runs[0][1]["citations"], runs[0][1]
    assert runs[0] == runs[1]


def test_scores_do_not_depend_on_the_embedding_batch_size(corpus: Path) -> None:
    """A passage's vector is the same embedded alone or among others: dense scores (and the
    answer's citations) agree bit for bit between indexes embedded at batch size 1 and 32."""
    runs = []
    for batch_size in (1, 32):
        index = str(ingest(corpus, f"idx-batch-{batch_size}", batch_size))
        dense = cli("search", QUESTION, "--index", index, "--json", "--mode", "dense", home=corpus)
        ask = cli("ask", QUESTION, "--index", index, "--json", home=corpus)
        answer = without_timings(ask)
        runs.append((without_timings(dense)["hits"], answer["citations"], answer["metadata"]))
    assert runs[0][0] and runs[0][1]
    assert runs[0] == runs[1]
