"""What one ingest run reports, and the progress events it emits on the way.

:class:`IngestReport` is the outcome the writer (:mod:`ragstrata.index.writer`) fills and the
CLI, the service and the watcher print; :data:`ProgressCallback` the events they show as it
runs; :func:`count_changes` the dry-run report, read from the manifest alone. The rules both
the writer and the dry run apply are here once: :func:`change_kind` (what becomes of a
document), :func:`keep_note` (the failure of a file with an indexed version) and
:func:`matching_documents` (the documents ``prune`` / ``count_gone`` select).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ragstrata.index import catalog
from ragstrata.paths import path_text
from ragstrata.types import Document, IngestFailure, IngestWarning

if TYPE_CHECKING:
    from pathlib import Path

    from ragstrata.index.catalog import DocEntry, Manifest

ChangeKind = Literal["added", "updated", "reindexed", "unchanged"]
"""What an ingest does with a parsed document, and the :class:`IngestReport` count it adds to."""

KEPT_NOTE = "the version indexed before stays searchable"
"""Added to the reason of a failure whose file has an indexed version (its chunks stay: a bad
new version loses nothing, as a service upload's does; delete the file, or fix it, to change
what is searched)."""

ProgressCallback = Callable[[str, int, int], None]
"""``(event, done, total)``, in the order work happens: ``unchanged`` (files skipped without
parsing, their bytes and the index signature unchanged; only when there are any),
``discover`` (files to parse),
``bytes`` (bytes parsed of total), ``parse`` (documents taken by the writer of total),
``chunk`` (chunks a document just added to the work, as done and total), ``embed`` (chunks of
a commit whose vectors just became ready, embedded or reused, as done and the commit's
total), ``commit`` (chunks just committed, journal closed, as done and total) and, after the
last commit, ``reweight`` (chunks whose BM25 weights were brought up to date, done of total).
Consumers ignore events they do not know."""


@dataclass(slots=True)
class IngestReport:
    """Outcome of one ``ingest`` run; ``status`` is ``ok``, ``partial`` or ``failed``.

    ``updated`` counts documents whose content changed, ``reindexed`` unchanged documents
    re-chunked because the chunking/BM25 configuration changed; ``chunks`` is the number of
    chunks written, ``embedded`` how many of them had to be embedded (the others reused the
    stored vector of an identical embedded text); ``bytes_read`` the size of the files parsed.
    ``warnings`` are the caveats of the documents parsed (they do not change ``status``).
    ``stale``: indexed documents whose file lies under the paths but no longer exists, kept
    because ``prune`` was not asked (still searched and cited until ``--prune`` removes them).
    ``pruned_sources``/``stale_sources``: the sources of those documents, sorted (a dry run
    with ``prune`` names what it would remove).
    ``reweighted``: chunks whose BM25 weights were recomputed for the index's new average chunk
    length (:meth:`~ragstrata.index.writer.IndexWriter.reweight`).
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    pruned: int = 0
    stale: int = 0
    reindexed: int = 0
    chunks: int = 0
    embedded: int = 0
    reweighted: int = 0
    bytes_read: int = 0
    failures: list[IngestFailure] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[IngestWarning] = field(default_factory=list)
    pruned_sources: list[str] = field(default_factory=list)
    stale_sources: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        """Documents the run found in the index or indexed: added, updated, unchanged and
        re-indexed (0: the paths held no supported file, or every one failed)."""
        return self.added + self.updated + self.unchanged + self.reindexed

    @property
    def status(self) -> str:
        """``ok`` without failures; with some, ``partial`` when other documents were found or
        indexed (:attr:`documents`, re-indexed ones included), else ``failed``."""
        if not self.failures:
            return "ok"
        return "partial" if self.documents else "failed"

    def count(self, kind: ChangeKind) -> None:
        """Add one document to the count ``kind`` names (see :func:`change_kind`)."""
        setattr(self, kind, getattr(self, kind) + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "pruned": self.pruned,
            "stale": self.stale,
            "pruned_sources": self.pruned_sources,
            "stale_sources": self.stale_sources,
            "reindexed": self.reindexed,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reused_vectors": self.chunks - self.embedded,
            "reweighted": self.reweighted,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "chunks_per_second": round(self.chunks / self.seconds, 2) if self.seconds else None,
            "failures": [_failure_json(f) for f in self.failures],
            "warnings": [
                {"path": w.path, "kind": w.kind, "message": w.message, "share": round(w.share, 6)}
                for w in self.warnings
            ],
        }


def _failure_json(failure: IngestFailure) -> dict[str, Any]:
    return {
        "path": failure.path,
        "code": failure.code,
        "reason": failure.reason,
        "unchanged": failure.unchanged,
    }


def change_kind(
    entry: DocEntry | None, content_hash: str, signature: str, file_hash: str = ""
) -> ChangeKind:
    """What an ingest does with a parsed document whose manifest entry is ``entry`` (``None``:
    not indexed), ``content_hash`` its text's hash, ``file_hash`` its file's (``""``: no
    file) and ``signature`` the index's (:func:`~ragstrata.index.writer.index_signature`):
    ``added`` when absent or only partly committed, ``updated`` when its text changed or its
    file did (an HTML ``<title>`` or a Confluence byline is outside the text: review 27 saw a
    new title reported ``unchanged`` and never indexed, and the file parsed again on every
    run), ``reindexed`` when only the chunking configuration (parser or chunker version) did,
    else ``unchanged`` (skipped; a new BM25 analyzer or ``k1``/``b`` is applied to its stored
    text by the writer)."""
    if entry is None or not entry.complete:
        return "added"
    if entry.content_hash != content_hash:
        return "updated"
    if file_hash and entry.file_hash and entry.file_hash != file_hash:
        return "updated"
    # a new analyzer or k1/b only: the writer re-weights it from the stored text, unparsed
    return "unchanged" if catalog.same_chunking(entry.signature, signature) else "reindexed"


def keep_note(failure: IngestFailure, manifest: Manifest | None) -> IngestFailure:
    """``failure`` with :data:`KEPT_NOTE` added to its reason when its file has an indexed
    version that this run did not already report (a bad new version, emptied or corrupt, loses
    nothing; a new user thought an emptied file was gone); else ``failure`` itself."""
    if manifest is None or failure.unchanged or failure.doc_id not in manifest.documents:
        return failure
    return replace(failure, reason=f"{failure.reason}; {KEPT_NOTE}")


def sources_under(paths: Sequence[str | Path]) -> Callable[[str], bool]:
    """A test of an indexed source: it is one of ``paths`` or lies under one, each taken from
    the working directory as written and with its links resolved (sources are resolved POSIX
    paths); the paths need not exist (a folder moved or deleted since it was ingested)."""
    roots = {  # sources hold a name's non-UTF-8 bytes as \xNN escapes (path_text)
        path_text(r).replace(os.sep, "/").rstrip("/")
        for p in paths
        for r in (os.path.abspath(p), os.path.realpath(p))
    }

    def select(source: str) -> bool:
        return any(source == r or source.startswith(r + "/") for r in roots)

    return select


def matching_documents(manifest: Manifest, select: Callable[[str], bool]) -> dict[str, str]:
    """The indexed documents whose source ``select`` accepts, as ``{doc_id: source}`` (what
    ``prune`` removes and ``count_gone`` counts)."""
    return {d: e.source for d, e in manifest.documents.items() if select(e.source)}


def count_changes(
    documents: Iterable[Document | IngestFailure],
    manifest: Manifest | None,
    signature: str,
    *,
    total: int | None = None,
    progress: ProgressCallback | None = None,
    prune: Callable[[str], bool] | None = None,
    count_gone: Callable[[str], bool] | None = None,
) -> IngestReport:
    """The dry-run report of ``documents`` against ``manifest`` (``None``: no index yet):
    what :meth:`~ragstrata.index.writer.IndexWriter.add` would add, update, re-index (a
    document whose entry carries another ``signature``), leave unchanged and, with ``prune``,
    remove, by the writer's rules; ``count_gone`` counts the indexed documents whose file is
    gone (``stale``). Reads only ``manifest``, so a dry run needs no index lock and waits for
    no ingest; a document is not chunked, so ``chunks`` stays 0. Emits ``parse`` progress."""
    report = IngestReport()
    indexed = manifest.documents if manifest is not None else {}
    for done, item in enumerate(documents, start=1):
        if isinstance(item, IngestFailure):
            report.failures.append(keep_note(item, manifest))
        else:
            report.warnings.extend(item.warnings)
            report.count(
                change_kind(indexed.get(item.doc_id), item.content_hash, signature, item.file_hash)
            )
        if progress:
            progress("parse", done, total or done)
    if manifest is not None and prune is not None:
        report.pruned_sources = sorted(matching_documents(manifest, prune).values())
        report.pruned = len(report.pruned_sources)
    if manifest is not None and count_gone is not None:
        report.stale_sources = sorted(matching_documents(manifest, count_gone).values())
        report.stale = len(report.stale_sources)
    return report
