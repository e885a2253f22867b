"""Tenants and their collections: the only way from an API key to a store.

Layout under the service's data directory::

    keys.json                       API keys (see :mod:`ragstrata.service.keys`)
    tenants/<tenant>/<collection>/
        index/                      the collection's own index: manifest, journal, lock and
                                    Qdrant Edge shard (one shard per tenant collection)
        uploads/                    the uploaded files, under sanitized names
    staging/<tenant>/<job>/         files of an upload waiting for its job

Isolation is enforced in three layers:

1. **Separate stores.** Each tenant collection has its own index directory and therefore its
   own shard; a query can only ever run against the shard of the collection it was sent to.
2. **One way in.** :meth:`TenantRegistry.collection` takes the authenticated
   :class:`~ragstrata.service.keys.Principal` (never a tenant id from the request), validates the
   collection name against :data:`COLLECTION_RE` before it touches a path, and refuses another
   tenant's collection with 403. Routes never build paths themselves.
3. **Checked results.** Every hit, citation and passage a store returns must have its
   ``source`` under the collection's own ``uploads/`` directory; anything else is dropped from
   search results (and fails an answer with RS709), logged and counted in
   ``ragstrata_tenancy_violations_total``. That cannot happen with layers 1-2 intact; it is
   there so that a future shared backend (a Qdrant server) cannot leak silently.

One :class:`~ragstrata.pipeline.Ragstrata` engine per collection is opened on first use and kept
(it holds the index's ``flock``); a readers-writer lock lets many searches run at once on it
while an ingest or delete runs alone (concurrent reads on one Qdrant Edge shard from threads are
safe: tests/integration/service/test_concurrency.py).
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ragstrata.config import RagConfig
from ragstrata.embed.base import Embedder
from ragstrata.errors import IndexLockedError, RagError
from ragstrata.generate.answerer import AnswerEvent, TokenEvent, refusal, word_tokens
from ragstrata.generate.base import ChatModel
from ragstrata.index import catalog
from ragstrata.index.base import Filters
from ragstrata.index.report import IngestReport, ProgressCallback
from ragstrata.index.writer import file_sha256
from ragstrata.pipeline import Ragstrata
from ragstrata.retrieve.hybrid import Mode, SearchResult
from ragstrata.service.errors import (
    CollectionBusyError,
    InterruptedJobError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    TenancyViolationError,
)
from ragstrata.service.keys import TENANT_RE, Principal
from ragstrata.service.rwlock import LockTimeout, RWLock
from ragstrata.types import Answer, Hit

logger = logging.getLogger(__name__)

COLLECTION_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
"""Collection names: 1-63 lower-case letters, digits, ``_`` or ``-``, starting with a letter
or digit. Names are unique across tenants: another tenant's name answers 403."""

ViolationCallback = Callable[[str, str], None]
"""``(tenant, collection)``: called once per dropped out-of-tenant item."""


def check_collection_name(name: str) -> str:
    """``name`` unchanged when valid, else InvalidRequestError (422) stating the rule."""
    if not COLLECTION_RE.fullmatch(name):
        raise InvalidRequestError(
            f"collection name {name[:80]!r} is invalid: use 1-63 lower-case letters, digits, "
            "'_' or '-', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One indexed document of a collection; ``name`` is its file name in the upload dir;
    ``complete`` false when an ingest stopped (a cancelled job, a server stopped or killed)
    after committing only its first chunks: upload it again."""

    doc_id: str
    name: str
    title: str
    chunks: int
    complete: bool = True


@dataclass(frozen=True, slots=True)
class AskOutcome:
    """An answer and, when asked for, the retrieval behind it: the hits the answer was built
    from (``answer.hits``, each with its per-retriever ranks), the tenant's own only."""

    answer: Answer
    retrieval: tuple[Hit, ...] | None


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What became of one uploaded file: ``status`` ``indexed``, ``failed`` (with code), or
    ``not_indexed`` (RS710: the server stopped before it was parsed; upload it again)."""

    name: str
    status: Literal["indexed", "failed", "not_indexed"]
    code: str = ""
    reason: str = ""


def held_outcomes(root: Path, files: Mapping[str, str]) -> list[FileOutcome]:
    """What the index of the collection at ``root`` holds of a job's uploaded files after an
    ingest that stopped before its end (a cancelled job, a server stopped or killed): ``files``
    maps each name to the sha256 of the bytes the job uploaded (``""`` when unknown: a record
    written before 2026-12-06; the file in ``uploads/`` is compared instead). ``indexed`` for
    a file whose document is complete and holds those bytes, ``not_indexed`` (RS710) for one
    only partly committed; files it does not hold, or holds another version of (an earlier
    upload's, the job's own never reached), are left out. Reads the manifest alone (written
    whole at each commit)."""
    held = _held_entries(root)
    out: list[FileOutcome] = []
    for name, sha in files.items():
        entry = held.get(name)
        if entry is None:
            continue
        if not entry.complete:
            out.append(
                FileOutcome(
                    name,
                    "not_indexed",
                    InterruptedJobError.code,
                    "partly indexed when the job stopped: upload it again",
                )
            )
            continue
        sha = _job_sha(root, name, sha)
        if sha and entry.file_hash == sha:
            out.append(FileOutcome(name, "indexed"))
    return out


def _held_entries(root: Path) -> dict[str, catalog.DocEntry]:
    """The manifest entries of the collection at ``root`` by uploaded file name (``{}``
    before its first commit)."""
    if not (root / "index" / catalog.MANIFEST).is_file():
        return {}
    manifest = catalog.read_manifest(root / "index")
    return {Path(e.source).name: e for e in manifest.documents.values()}


def _job_sha(root: Path, name: str, sha: str) -> str:
    """``sha``, or, when the job's record has none (before 2026-12-06), the sha256 of the file
    in ``uploads/`` (``""`` when it is gone)."""
    if sha:
        return sha
    path = root / "uploads" / name
    return file_sha256(path) if path.is_file() else ""


def _settle_uploads(root: Path, files: Mapping[str, str], *, strict: bool) -> None:
    """Put the collection ``root``'s ``uploads/`` back as its index holds the job's ``files``
    (name -> sha256 of the job's bytes) after an ingest that did not end: a file the index
    holds (partly committed, or whole with the job's bytes) stays and its backup in
    ``.previous/`` goes; any other gets its backup back, or is removed. ``strict`` (after a
    crash, when the job may never have moved a file): only a file that holds the job's bytes
    is touched, and an unknown hash leaves it alone; else a record without a hash (before
    2026-12-06) stands for the bytes in ``uploads/`` (:func:`_job_sha`)."""
    held = _held_entries(root)
    backups = root / ".previous"
    for name, sha in files.items():
        target, earlier = root / "uploads" / name, backups / name
        entry = held.get(name)
        job_sha = sha if strict else _job_sha(root, name, sha)
        if entry is not None and (not entry.complete or entry.file_hash == job_sha):
            earlier.unlink(missing_ok=True)  # the index holds the job's bytes
        elif strict and not (sha and target.is_file() and file_sha256(target) == sha):
            continue  # not the job's bytes: an earlier upload's, or never moved
        elif earlier.is_file():
            earlier.replace(target)
        else:
            target.unlink(missing_ok=True)
    if backups.is_dir() and not any(backups.iterdir()):
        backups.rmdir()


DELETING_MARK = ".deleting"
"""File a collection delete writes in the collection's directory before anything else: a
directory that holds it is deleted when next opened (the server stopped during the delete)."""
QDRANT_NAME_FILE = "qdrant-collection"
"""File in a collection's directory holding the name of its Qdrant collection (``store.url``
set), written when the collection is first opened."""


def _qdrant_name(root: Path, base: str, tenant: str, name: str) -> str:
    """The recorded Qdrant collection of the tenant collection at ``root``, else the one
    :func:`qdrant_collection` gives it (nothing written)."""
    recorded = root / QDRANT_NAME_FILE
    if recorded.is_file():
        return recorded.read_text(encoding="utf-8").strip()
    built = (root / "index" / catalog.MANIFEST).is_file()
    return f"{base}-{tenant}-{name}" if built else f"{base}.{tenant}.{name}"


def qdrant_collection(root: Path, base: str, tenant: str, name: str) -> str:
    """The Qdrant collection of the tenant collection at ``root``: ``<base>.<tenant>.<name>``
    (``base``: ``store.collection``), unambiguous since neither :data:`TENANT_RE` nor
    :data:`COLLECTION_RE` allows a dot. Review 45: ``<base>-<tenant>-<name>`` gave tenant
    ``acme-x``'s ``docs`` and tenant ``acme``'s ``x-docs`` one Qdrant collection, whose other
    tenant's hits filled ``top_k`` and were then dropped. A collection indexed before keeps
    the name it was built with (such a pair stays shared until one of them is deleted and
    created again); the name is recorded in :data:`QDRANT_NAME_FILE`."""
    chosen = _qdrant_name(root, base, tenant, name)
    recorded = root / QDRANT_NAME_FILE
    if not recorded.is_file():
        root.mkdir(parents=True, exist_ok=True)
        catalog.atomic_write(recorded, chosen)
    return chosen


def remove_collection(root: Path, config: RagConfig, tenant: str, name: str) -> None:
    """Remove tenant ``tenant``'s collection ``name`` at ``root`` (``config``: the service's,
    whose ``store.collection`` is the base name): with ``store.url`` set, first its Qdrant
    side, then the directory: ``index/`` and ``uploads/``, then the name file, then the rest.
    Each step can run again after an interruption.

    The Qdrant side: a collection of its own (``<base>.<tenant>.<name>``) is dropped; one built
    before (``<base>-<tenant>-<name>``, which another tenant's collection may share) loses only
    the points of its own chunks (review 46: dropping it took the other tenant's). StoreError
    when Qdrant cannot be reached: nothing local is removed."""
    if config.store.url:
        from ragstrata.index.qdrant import delete_points, drop_collection

        own = f"{config.store.collection}.{tenant}.{name}"
        named = _qdrant_name(root, config.store.collection, tenant, name)
        index_dir = root / "index"
        store = replace(config.store, collection=named)
        if named == own:
            drop_collection(store, index_dir=index_dir)
        else:
            delete_points(store, _chunk_ids(index_dir), index_dir=index_dir)
    for part in ("index", "uploads"):
        shutil.rmtree(root / part, ignore_errors=True)
    (root / QDRANT_NAME_FILE).unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)


def _chunk_ids(index_dir: Path) -> list[str]:
    """The chunk ids the index at ``index_dir`` lists (none when it has no readable
    manifest)."""
    try:
        manifest = catalog.read_manifest(index_dir)
    except RagError:
        return []
    return [c for entry in manifest.documents.values() for c in entry.chunk_ids]


class Collection:
    """One tenant's collection. Construct through :class:`TenantRegistry` only.

    ``read_wait_s``: seconds a search/ask waits for a running write before IndexLockedError
    (503). Searches on a collection that has no index yet return no hits (and ``ask`` refuses).
    While an upload job writes an embedded index, searches and asks read the last committed
    state it published (:mod:`ragstrata.index.snapshots`) through an engine of their own.
    """

    def __init__(
        self,
        *,
        tenant: str,
        name: str,
        root: Path,
        config: RagConfig,
        embedder: Embedder,
        read_wait_s: float,
        on_violation: ViolationCallback | None = None,
        generator: ChatModel | None = None,
    ) -> None:
        self.tenant = tenant
        self.name = name
        self.root = root
        self.index_dir = root / "index"
        self.uploads = root / "uploads"
        self._read_wait_s = read_wait_s
        self._on_violation = on_violation
        self._lock = RWLock()
        self._open_lock = threading.Lock()
        self._service_config = config  # its store.collection is the base of the Qdrant name
        cfg = config.with_index(self.index_dir)
        if cfg.store.url:  # a shared Qdrant server: one Qdrant collection per tenant collection
            collection = qdrant_collection(root, cfg.store.collection, tenant, name)
            cfg = replace(cfg, store=replace(cfg.store, collection=collection))
        self._engine = Ragstrata(cfg, embedder=embedder, generator=generator)
        self._snapshot_reads = not cfg.store.url  # an embedded index publishes read snapshots
        self._config, self._embedder, self._generator = cfg, embedder, generator
        self._writing = False  # an upload job is writing the index
        self.uploads.mkdir(parents=True, exist_ok=True)
        self._deleted = False

    # ------------------------------------------------------------------ ownership
    def display_name(self, source: str) -> str:
        """``source`` as a path relative to the upload dir; TenancyViolationError when it is
        not below it (never expected, see the module docstring)."""
        path = Path(source)
        if not path.is_relative_to(self.uploads):
            self._violation(source)
            raise TenancyViolationError(
                f"a result of collection {self.name!r} lies outside its tenant's directory"
            )
        return path.relative_to(self.uploads).as_posix()

    def owns(self, source: str) -> bool:
        return Path(source).is_relative_to(self.uploads)

    def _violation(self, source: str) -> None:
        logger.error(
            "tenancy violation: collection %s/%s returned %s", self.tenant, self.name, source
        )
        if self._on_violation is not None:
            self._on_violation(self.tenant, self.name)

    # ------------------------------------------------------------------ reads
    @property
    def has_index(self) -> bool:
        return (self.index_dir / catalog.MANIFEST).is_file()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Ragstrata]:
        """The engine to read with, for the ``with`` block: the collection's own under the read
        lock, or, while an upload job writes an embedded index, an engine over the job's last
        published snapshot (:mod:`ragstrata.index.snapshots`). IndexLockedError (503) when
        neither is available within ``read_wait_s``."""
        deadline = time.monotonic() + self._read_wait_s
        with contextlib.ExitStack() as stack:
            while True:
                left = max(0.0, deadline - time.monotonic())
                if self._writing and self._snapshot_reads and self.has_index:
                    reader = stack.enter_context(
                        Ragstrata(
                            self._config,
                            embedder=self._embedder,
                            generator=self._generator,
                            read_wait_s=min(left, 1),
                        )
                    )
                    try:
                        reader.retriever  # noqa: B018 - opens the snapshot
                        engine = reader
                        break
                    except IndexLockedError:  # none published yet, or the job just ended
                        reader.close()
                        if time.monotonic() >= deadline:
                            raise
                        continue
                try:
                    stack.enter_context(self._lock.read(min(left, 0.2)))
                except LockTimeout as exc:  # only the lock's own timeout, never the search's
                    if time.monotonic() < deadline:
                        continue
                    raise CollectionBusyError(
                        f"collection {self.name!r} is being written (an upload job is running); "
                        f"retry in a few seconds"
                    ) from exc
                if self.has_index:
                    with self._open_lock:
                        self._engine.retriever  # noqa: B018 - open the store once, not per reader
                engine = self._engine
                break
            yield engine

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        filters: Filters | None = None,
    ) -> SearchResult:
        """Hybrid search in this collection; hits outside the tenant's dir are dropped."""
        with self._reading() as engine:
            if not self.has_index:
                return SearchResult(query, (), {})
            result = engine.search(query, top_k=top_k, mode=mode, filters=self._scoped(filters))
        return self._checked(result)

    def _scoped(self, filters: Filters | None) -> Filters | None:
        """``filters`` with a ``source`` filter's file names (as hits show them) turned into
        the paths the index stores, inside this collection's ``uploads/``; a value that is not
        a plain file name is InvalidRequestError (422). The HTTP API refused ``source`` while
        the CLI and MCP took it (trial 24)."""
        if not filters or "source" not in filters:
            return filters
        value = filters["source"]
        names = list(value) if isinstance(value, list | tuple) else [value]
        paths: list[str] = []
        for name in names:
            if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
                raise InvalidRequestError(
                    f"filter 'source': {str(name)[:80]!r} is not a file name of the collection; "
                    "give the name a hit shows (for example 'guide.md')"
                )
            paths.append(str(self.uploads / name))
        return {**filters, "source": paths if isinstance(value, list | tuple) else paths[0]}

    def _checked(self, result: SearchResult) -> SearchResult:
        kept = self._owned(result.hits)
        if len(kept) == len(result.hits):
            return result
        return SearchResult(result.query, kept, result.timings_ms)

    def _owned(self, hits: Sequence[Hit]) -> tuple[Hit, ...]:
        """``hits`` whose source is the tenant's; the others are logged and counted."""
        kept: list[Hit] = []
        for hit in hits:
            if self.owns(hit.chunk.source):
                kept.append(hit)
            else:
                self._violation(hit.chunk.source)
        return tuple(kept)

    def ask(
        self, question: str, *, filters: Filters | None = None, explain: bool = False
    ) -> AskOutcome:
        """Answer from this collection. ``explain`` also returns the hits behind the answer (for
        the per-retriever ranks). TenancyViolationError when a citation is not the tenant's."""
        outcome: AskOutcome | None = None
        for event in self.ask_stream(question, filters=filters, explain=explain):
            if isinstance(event, AskOutcome):
                outcome = event
        if outcome is None:  # pragma: no cover - ask_stream always ends with the outcome
            raise RuntimeError("the answer stream ended without an answer")
        return outcome

    def ask_stream(
        self, question: str, *, filters: Filters | None = None, explain: bool = False
    ) -> Generator[TokenEvent | AskOutcome, None, None]:
        """:meth:`ask` as events (:meth:`Ragstrata.ask_stream
        <ragstrata.pipeline.Ragstrata.ask_stream>`): :class:`TokenEvent` pieces of the answer as
        the LLM writes them (the raw text, before its citations are checked; without an LLM the
        finished answer's words), then one :class:`AskOutcome`, always last.

        The read lock is taken at the first ``next()`` and held until the outcome is ready or
        the generator is closed: close it when you stop early. Errors (IndexLockedError,
        GenerationError, TenancyViolationError...) are raised by the ``next()`` that meets
        them.
        """
        with self._reading() as engine:
            if not self.has_index:
                # what ``ask`` answers for a collection with no index yet
                answer = refusal(question, "empty_index", timings={})
                yield from word_tokens(answer.text)
                yield AskOutcome(answer, () if explain else None)
                return
            final: Answer | None = None
            # the LLM's prompt names documents as the tenant sees them, never by server path
            events = engine.ask_stream(
                question, filters=self._scoped(filters), display_source=self.display_name
            )
            for event in events:
                if isinstance(event, AnswerEvent):
                    final = event.answer
                else:
                    yield event
            if final is None:  # pragma: no cover - every stream ends with an AnswerEvent
                raise RuntimeError("the answer stream ended without an answer")
        for citation in final.citations:
            self.display_name(citation.source)  # raises on a foreign source
        yield AskOutcome(final, self._owned(final.hits) if explain else None)

    def documents(self) -> list[DocumentInfo]:
        """Indexed documents, by file name."""
        with self._reading():
            if not self.has_index:
                return []
            manifest = catalog.read_manifest(self.index_dir)
        return sorted(
            (
                DocumentInfo(
                    doc_id, self.display_name(e.source), e.title, len(e.chunk_ids), e.complete
                )
                for doc_id, e in manifest.documents.items()
            ),
            key=lambda d: d.name,
        )

    def outcomes_of(self, files: Mapping[str, str]) -> list[FileOutcome]:
        """What the index holds of a job's uploaded ``files`` (name → sha256 of the job's
        bytes) after an ingest that stopped before its end (see :func:`held_outcomes`)."""
        return held_outcomes(self.root, files)

    def turn_changes(self, files: Mapping[str, str]) -> dict[str, Literal["added", "updated"]]:
        """Of a job's uploaded ``files`` (name → sha256 of the job's bytes, as in
        :func:`held_outcomes`), those an ingest that stopped at a commit (a slice
        that yielded its turn) indexed whole and changed: ``added`` without an earlier version
        kept in ``.previous/``, ``updated`` with a different one (an identical earlier version
        changed nothing and is left out). The job counts them itself: the next turn finds
        them ``unchanged``."""
        backups = self.root / ".previous"
        changes: dict[str, Literal["added", "updated"]] = {}
        for outcome in held_outcomes(self.root, files):
            if outcome.status != "indexed":
                continue
            earlier = backups / outcome.name
            if not earlier.is_file():
                changes[outcome.name] = "added"
            elif file_sha256(earlier) != _job_sha(self.root, outcome.name, files[outcome.name]):
                changes[outcome.name] = "updated"
        return changes

    def counts(self) -> tuple[int, int]:
        """``(documents, chunks)`` in the index (0, 0 before the first ingest)."""
        if not self.has_index:
            return 0, 0
        manifest = catalog.read_manifest(self.index_dir)
        return len(manifest.documents), manifest.n_chunks

    # ------------------------------------------------------------------ writes
    def ingest_staged(
        self, staged: Sequence[Path], *, progress: ProgressCallback | None = None
    ) -> tuple[IngestReport, list[FileOutcome]]:
        """Move staged files into ``uploads/`` and index them, alone on the collection.

        A file that fails (binary, empty, unparsable...) is removed again, and the earlier
        version of the same name, if any, is put back (its chunks never left the index): a bad
        file costs only itself. Returns the ingest report and one outcome per staged file.
        A file already in ``uploads/`` (a slice that yielded its turn and goes on) stays; the
        earlier version kept for it since its first turn is the one put back on failure.
        """
        with self._lock.write():
            if self._deleted:
                raise NotFoundError(f"collection {self.name!r} was deleted")
            backups = self.root / ".previous"
            targets: list[Path] = []
            for path in staged:
                target = self.uploads / path.name
                if path == target:  # moved at its first turn
                    targets.append(target)
                    continue
                if target.exists():
                    backups.mkdir(parents=True, exist_ok=True)
                    target.replace(backups / path.name)
                path.replace(target)
                targets.append(target)
            if self.has_index:
                # the engine takes the index lock before reads turn to snapshots: a read
                # engine arriving first (a server that had not opened the collection yet)
                # took the lock itself, and the job failed with RS503 (trial 24)
                with self._open_lock:
                    self._engine.retriever  # noqa: B018 - opens the store under the lock
            self._writing = True
            try:
                report = self._engine.ingest(targets, progress=progress)
            finally:
                self._writing = False
            failed = {Path(f.path).name: f for f in report.failures}
            outcomes = []
            for target in targets:
                failure = failed.get(target.name)
                if failure is None:
                    outcomes.append(FileOutcome(target.name, "indexed"))
                    (backups / target.name).unlink(missing_ok=True)
                    continue
                outcomes.append(FileOutcome(target.name, "failed", failure.code, failure.reason))
                if (backups / target.name).exists():
                    (backups / target.name).replace(target)
                else:
                    target.unlink(missing_ok=True)
            shutil.rmtree(backups, ignore_errors=True)
        return report, outcomes

    def settle_stopped(self, files: Mapping[str, str]) -> None:
        """After a stop (a server stopping) ended an ingest of the uploaded ``files`` (name →
        sha256 of the job's bytes) before its end: each file the index holds, whole or partly
        committed, stays in ``uploads/`` and its earlier version's backup goes; each it does not
        hold gets its earlier version back (the index still holds that one), or is removed.
        ``uploads/`` then matches the index, and no backup is left for a later ingest to
        discard or to put back in the wrong place."""
        with self._lock.write():
            _settle_uploads(self.root, files, strict=False)

    def delete_document(self, doc_id: str) -> DocumentInfo:
        """Remove a document's chunks (one journaled commit) and its uploaded file.
        NotFoundError when the collection has no such document."""
        with self._lock.write():
            entry = None
            if self.has_index:
                entry = catalog.read_manifest(self.index_dir).documents.get(doc_id)
            if entry is None:
                raise NotFoundError(f"collection {self.name!r} has no document {doc_id!r}")
            info = DocumentInfo(
                doc_id,
                self.display_name(entry.source),
                entry.title,
                len(entry.chunk_ids),
                entry.complete,
            )
            self._engine.add_documents([], prune=lambda source: source == entry.source)
            (self.uploads / info.name).unlink(missing_ok=True)
        return info

    def close(self) -> None:
        """Release the engine (store, index lock, threads); waits for a running write."""
        with self._lock.write():
            self._engine.close()

    def destroy(self) -> tuple[int, int]:
        """Close the engine and remove the collection (:func:`remove_collection`: its points in
        Qdrant when ``store.url`` is set, its directory); waits for a running write. Returns
        the ``(documents, chunks)`` it held. StoreError when Qdrant cannot be reached: the
        directory stays (a delete's ``DELETING_MARK`` in it finishes the delete when the
        collection is next asked for)."""
        with self._lock.write():
            counts = self.counts()
            self._deleted = True
            self._engine.close()
            remove_collection(self.root, self._service_config, self.tenant, self.name)
        return counts


class TenantRegistry:
    """Every tenant's collections under ``<data_dir>/tenants``; opens each one once.

    ``embedder`` and ``generator`` (the LLM of ``llm.provider``; ``None``: the extractive
    answerer) are shared by all collections and by the snapshot readers of each: one model in
    memory, loaded once, whose prompt-prefix KV cache serves every question. Thread-safe.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        config: RagConfig,
        embedder: Embedder,
        read_wait_s: float,
        on_violation: ViolationCallback | None = None,
        generator: ChatModel | None = None,
    ) -> None:
        self.root = data_dir.resolve() / "tenants"
        self._config = config
        self._embedder = embedder
        self._generator = generator
        self._read_wait_s = read_wait_s
        self._on_violation = on_violation
        self._open: dict[tuple[str, str], Collection] = {}
        self._deleting: set[tuple[str, str]] = set()
        self._pins: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def collection(self, principal: Principal, name: str, *, create: bool = False) -> Collection:
        """The caller's collection ``name``.

        Raises InvalidRequestError (422) for a bad name, PermissionDeniedError (403) when
        another tenant owns the name, NotFoundError (404) when it does not exist and ``create``
        is false.
        """
        check_collection_name(name)
        tenant = principal.tenant
        if not TENANT_RE.fullmatch(tenant):  # keys are validated on load; never trust twice
            raise PermissionDeniedError("the API key's tenant id is invalid")
        key = (tenant, name)
        path = self.root / tenant / name
        while True:
            with self._lock:
                if key in self._deleting:
                    raise NotFoundError(f"collection {name!r} is being deleted")
                found = self._open.get(key)
                if found is not None:
                    return found
                if not (path / DELETING_MARK).exists():
                    return self._open_locked(tenant, name, path, create=create)
                self._deleting.add(key)
            # a delete the server stopped during: finish it outside the lock (review 46: a
            # Qdrant server that hung stalled every tenant's requests), then look again
            try:
                remove_collection(path, self._config, tenant, name)
            finally:
                with self._lock:
                    self._deleting.discard(key)
            logger.info("collection %s/%s: finished its interrupted delete", tenant, name)

    def _open_locked(self, tenant: str, name: str, path: Path, *, create: bool) -> Collection:
        """Open (or with ``create`` make) the collection at ``path``; the caller holds the lock
        and has checked that no delete is running or unfinished there."""
        if not path.is_dir():
            owner = self._owner(name)
            if owner is not None:
                raise PermissionDeniedError(
                    f"collection {name!r} belongs to another tenant; choose another name"
                )
            if not create:
                raise NotFoundError(
                    f"collection {name!r} does not exist; upload documents to create it"
                )
        if not path.resolve().is_relative_to(self.root / tenant):
            raise PermissionDeniedError(f"collection {name!r} is outside the tenant")
        path.mkdir(parents=True, exist_ok=True)
        found = Collection(
            tenant=tenant,
            name=name,
            root=path.resolve(),
            config=self._config,
            embedder=self._embedder,
            read_wait_s=self._read_wait_s,
            on_violation=self._on_violation,
            generator=self._generator,
        )
        self._open[(tenant, name)] = found
        return found

    def delete(
        self, principal: Principal, name: str, *, cancel_jobs: Callable[[], int]
    ) -> tuple[int, int, int]:
        """Delete the caller's collection ``name`` with its documents: ``cancel_jobs()`` runs
        first (its queued ingestion jobs), then a running write is waited for and the directory
        removed. Returns ``(documents, chunks, jobs_cancelled)``. Raises as :meth:`collection`
        (422, 403, 404); requests for the name during the delete get 404."""
        found = self.collection(principal, name)
        key = (found.tenant, found.name)
        with self._lock:
            if key in self._deleting:
                raise NotFoundError(f"collection {name!r} is being deleted")
            self._deleting.add(key)
        try:
            # durable first: a server stopped during the delete finishes it when it next opens
            # the collection, instead of bringing back what a running ingest had committed
            (found.root / DELETING_MARK).touch()
            cancelled = cancel_jobs()
            docs, chunks = found.destroy()
        finally:
            with self._lock:
                self._open.pop(key, None)
                self._deleting.discard(key)
        logger.info("collection %s/%s deleted (%d documents)", found.tenant, found.name, docs)
        return docs, chunks, cancelled

    @contextlib.contextmanager
    def pinned(self, principal: Principal, name: str, *, create: bool) -> Iterator[Collection]:
        """:meth:`collection`, kept from :meth:`discard_if_empty` until the block ends (an
        upload holds it until its job is queued)."""
        found = self.collection(principal, name, create=create)
        key = (found.tenant, found.name)
        with self._lock:
            self._pins[key] = self._pins.get(key, 0) + 1
        try:
            yield found
        finally:
            with self._lock:
                self._pins[key] -= 1
                if not self._pins[key]:
                    del self._pins[key]

    def discard_if_empty(self, collection: Collection, *, busy: Callable[[], bool]) -> bool:
        """Remove ``collection`` when it holds no document and ``busy()`` is false (no job
        queued or running on it): what a failed first upload leaves must not reserve the name.
        Returns whether it was removed."""
        key = (collection.tenant, collection.name)
        with self._lock:
            if self._open.get(key) is not collection or key in self._deleting:
                return False
            if self._pins.get(key) or busy():  # an upload is queueing a job on it
                return False
            if collection.counts() != (0, 0) or (
                collection.uploads.is_dir() and any(collection.uploads.iterdir())
            ):
                return False
            self._deleting.add(key)
        try:
            # marked as a delete is (review 46): a failed first upload is often a Qdrant that
            # is down, and an unmarked empty collection left by a failed drop kept the name
            (collection.root / DELETING_MARK).touch()
            collection.destroy()
        finally:
            with self._lock:
                self._open.pop(key, None)
                self._deleting.discard(key)
        return True

    @property
    def embedder(self) -> Embedder:
        """The embedder every collection shares."""
        return self._embedder

    def check_access(self, principal: Principal, name: str) -> None:
        """Raise as :meth:`collection` would (422 bad name, 403 another tenant's) without
        opening or creating anything."""
        check_collection_name(name)
        if not (self.root / principal.tenant / name).is_dir() and self._owner(name) is not None:
            raise PermissionDeniedError(
                f"collection {name!r} belongs to another tenant; choose another name"
            )

    def held_outcomes(self, tenant: str, name: str, files: Mapping[str, str]) -> list[FileOutcome]:
        """:func:`held_outcomes` of ``tenant``'s collection ``name`` (``[]`` when it is gone or
        its manifest cannot be read): what a job the server did not finish had indexed."""
        root = self.root / tenant / name
        if not TENANT_RE.fullmatch(tenant) or not COLLECTION_RE.fullmatch(name):
            return []
        try:
            if (root / DELETING_MARK).exists():  # being deleted: it holds nothing
                return []
            return held_outcomes(root, files)
        except (OSError, RagError):
            return []

    def settle_interrupted(self, tenant: str, name: str, files: Mapping[str, str]) -> None:
        """After a server died during a job on ``tenant``'s collection ``name`` (``files``: the
        job's files without an outcome, name -> sha256 of its bytes): each file of
        ``uploads/`` that holds the job's bytes and that the index does not hold (not at all,
        or an earlier version) is removed, its earlier version put back from ``.previous/``
        when one was kept. Files that are not the job's bytes (an earlier upload's, or the job
        never moved them) and unknown hashes are left alone. Before, a killed server left
        such files in ``uploads/`` for good, out of the document list (trial 24)."""
        root = self.root / tenant / name
        if not TENANT_RE.fullmatch(tenant) or not COLLECTION_RE.fullmatch(name):
            return
        try:
            if (root / DELETING_MARK).exists() or not root.is_dir():
                return
            _settle_uploads(root, files, strict=True)
        except (OSError, RagError):
            logger.exception("collection %s/%s: settling an interrupted job's files", tenant, name)

    def staging_dir(self, principal: Principal) -> Path:
        """Where the caller's uploads wait for their job: ``<data_dir>/staging/<tenant>``."""
        return self.root.parent / "staging" / principal.tenant

    def _owner(self, name: str) -> str | None:
        if not self.root.is_dir():
            return None
        for tenant_dir in self.root.iterdir():
            if (tenant_dir / name).is_dir() and not (tenant_dir / name / DELETING_MARK).exists():
                return tenant_dir.name
        return None

    def collections(self, principal: Principal) -> list[Collection]:
        """The caller's collections, by name."""
        tenant_dir = self.root / principal.tenant
        if not tenant_dir.is_dir():
            return []
        with self._lock:
            deleting = {n for t, n in self._deleting if t == principal.tenant}
        names = sorted(
            p.name
            for p in tenant_dir.iterdir()
            if p.is_dir()
            and COLLECTION_RE.fullmatch(p.name)
            and p.name not in deleting  # a collection being deleted is gone from the list
            and not (p / DELETING_MARK).exists()
        )
        found = []
        for name in names:
            try:
                found.append(self.collection(principal, name))
            except NotFoundError:  # deleted since the directory was listed
                continue
        return found

    def opened(self) -> list[Collection]:
        """Collections opened so far (for metrics)."""
        with self._lock:
            return list(self._open.values())

    def close(self) -> None:
        """Close every collection (each waits for its running write)."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for collection in opened:
            collection.close()
