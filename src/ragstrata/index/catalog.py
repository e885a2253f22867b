"""Index directory: manifest, write journal and lock around a :class:`VectorStore`.

Layout of an index directory::

    manifest.json   embedder, analyzer, BM25 statistics, one entry per document
    journal.json    present only while a commit is in flight (what it rewrites and appends)
    shard/          the Qdrant Edge shard
    .lock           advisory lock held by the one process that has the shard open

A commit is: write ``journal.json`` (fsync) → delete the documents' old chunks and upsert the new
ones → flush the store → replace ``manifest.json`` atomically (write temp, fsync, ``os.replace``)
→ remove the journal. Opening an index whose journal survived a crash rolls the listed documents
back to "absent" (their chunks are deleted and their manifest entries dropped), so the manifest
always equals the stored chunks and a re-run re-ingests exactly those documents.

A large document is committed in slices (:class:`DocEntry` ``complete=False`` until its last
slice lands): its first slice is a rewrite as above, each later slice an *append* that the
journal lists by chunk id. Rolling back an append deletes only those chunks (the slices
committed before stay), unless the manifest already lists them (the crash came after the
manifest was replaced): then the commit is complete and only the journal goes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from ragstrata.errors import EmbedderMismatchError, IndexLockedError, IndexNotFoundError, StoreError
from ragstrata.paths import path_text

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
JOURNAL = "journal.json"
SCHEMA_VERSION = 1


def index_signature(*, chunker: str, analyzer: str, k1: float, b: float) -> str:
    """What decides a document's chunks and BM25 weights (besides its text): a document indexed
    under another signature is re-chunked and re-weighted by the next ``ingest``."""
    return f"{chunker}|{analyzer}|k1={k1}|b={b}"


def signature_chunker(signature: str) -> str | None:
    """The chunker part of an :func:`index_signature`; ``None`` for a signature of another
    form (an entry written before signatures, ``""``)."""
    parts = signature.split("|")
    return parts[0] if len(parts) == 4 else None


def same_chunking(signature: str, wanted: str) -> bool:
    """Whether a document indexed under ``signature`` holds the chunks an index of signature
    ``wanted`` would cut from its text: the same signature, or the same chunker part (then only
    its BM25 terms or weights differ, which the writer re-analyses from the stored text,
    :meth:`~ragstrata.index.writer.IndexWriter.reanalyse`: no parse needed)."""
    if signature == wanted:
        return True
    chunker = signature_chunker(signature)
    return chunker is not None and chunker == signature_chunker(wanted)


def signature_analyzer(signature: str) -> str | None:
    """The analyzer part of an :func:`index_signature`; ``None`` for a signature of another
    form (an entry written before signatures, ``""``)."""
    parts = signature.split("|")
    return parts[1] if len(parts) == 4 else None


@dataclass(frozen=True, slots=True)
class DocEntry:
    """What the index holds for one document.

    ``signature`` is the :func:`index_signature` the document was indexed under;
    ``embed_hashes[i]`` identifies the exact text embedded for ``chunk_ids[i]`` (first 16 hex
    digits of its SHA-256), so a re-index can reuse the stored vector of any chunk whose
    embedded text did not change; ``file_hash`` is the SHA-256 of the source file's bytes, so an
    unchanged file is skipped without being parsed; ``indexed_at`` is when the document was last
    (re)indexed (ISO-8601, UTC). ``complete`` is false while only the first slices of a large
    document are committed (``chunk_ids`` is then a prefix of its chunks): the next ingest of the
    same text resumes after them, and searches meanwhile see the committed slices.
    ``bm25_avgdl`` is the average chunk length its chunks' BM25 weights were computed with
    (0.0 when unknown: an entry written before it was recorded, or slices weighted with
    different values); :meth:`~ragstrata.index.writer.IndexWriter.reweight` brings it to the
    index's :attr:`Manifest.avgdl`.
    """

    source: str
    content_hash: str
    chunk_ids: tuple[str, ...]
    bm25_length: int
    title: str
    signature: str = ""
    embed_hashes: tuple[str, ...] = ()
    file_hash: str = ""
    indexed_at: str = ""
    complete: bool = True
    bm25_avgdl: float = 0.0


@dataclass(frozen=True, slots=True)
class FailureEntry:
    """A file that failed to ingest, remembered so that the next ``ingest`` reports it again
    without parsing it while it stays the same (see :mod:`ragstrata.indexing`).

    ``path`` is the path as it was reported, ``code``/``reason`` the failure; ``retry_key``
    identifies what was tried (the file's SHA-256 and the parser limits), ``signature`` the
    :func:`index_signature` in force (a new parser version retries); ``failed_at`` is when it
    first failed so (ISO-8601, UTC).
    """

    path: str
    code: str
    reason: str
    retry_key: str
    signature: str
    failed_at: str = ""


@dataclass(slots=True)
class Manifest:
    """Mutable in-memory manifest; persisted by :func:`write_manifest`.

    ``bm25_docs``/``bm25_total_length`` give the average chunk length (in analysed terms) used
    for BM25 length normalization. ``failures`` maps the doc id of each file that failed (and
    has not been indexed since) to its :class:`FailureEntry`.
    """

    embedder: str
    dim: int
    analyzer: str
    chunker: str
    k1: float
    b: float
    documents: dict[str, DocEntry] = field(default_factory=dict)
    bm25_docs: int = 0
    bm25_total_length: int = 0
    schema_version: int = SCHEMA_VERSION
    failures: dict[str, FailureEntry] = field(default_factory=dict)

    @property
    def avgdl(self) -> float:
        return self.bm25_total_length / self.bm25_docs if self.bm25_docs else 0.0

    @property
    def n_chunks(self) -> int:
        return sum(len(e.chunk_ids) for e in self.documents.values())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["documents"] = {k: asdict(v) for k, v in self.documents.items()}
        data["failures"] = {k: asdict(v) for k, v in self.failures.items()}
        return data

    @property
    def signature(self) -> str:
        """The :func:`index_signature` of the manifest-level configuration."""
        return index_signature(chunker=self.chunker, analyzer=self.analyzer, k1=self.k1, b=self.b)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        # entries written before per-document signatures existed were indexed under the
        # manifest-level configuration
        legacy = index_signature(
            chunker=data["chunker"],
            analyzer=data["analyzer"],
            k1=float(data["k1"]),
            b=float(data["b"]),
        )
        docs = {
            k: DocEntry(
                source=v["source"],
                content_hash=v["content_hash"],
                chunk_ids=tuple(v["chunk_ids"]),
                bm25_length=int(v["bm25_length"]),
                title=v.get("title", ""),
                signature=v.get("signature") or legacy,
                embed_hashes=tuple(v.get("embed_hashes") or ()),
                file_hash=v.get("file_hash", ""),
                indexed_at=v.get("indexed_at", ""),
                complete=bool(v.get("complete", True)),
                bm25_avgdl=float(v.get("bm25_avgdl", 0.0)),
            )
            for k, v in data.get("documents", {}).items()
        }
        return cls(
            embedder=data["embedder"],
            dim=int(data["dim"]),
            analyzer=data["analyzer"],
            chunker=data["chunker"],
            k1=float(data["k1"]),
            b=float(data["b"]),
            documents=docs,
            bm25_docs=int(data.get("bm25_docs", 0)),
            bm25_total_length=int(data.get("bm25_total_length", 0)),
            schema_version=int(data.get("schema_version", SCHEMA_VERSION)),
            failures={
                k: FailureEntry(**{f: str(v.get(f, "")) for f in FailureEntry.__dataclass_fields__})
                for k, v in (data.get("failures") or {}).items()
            },
        )


def atomic_write(path: Path, payload: str) -> None:
    """Replace ``path`` with ``payload`` atomically and durably (temp file, fsync, rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # make the rename durable where directories can be fsynced
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_new_index_dir(index_dir: Path, document_suffixes: Collection[str]) -> None:
    """Refuse to create an index in a folder of documents. ``--index`` names where the index
    is written; a new user pointed it at the folder to ingest, and ``manifest.json``, ``shard/``
    and ``.lock`` were written among the documents. Raises StoreError (RS500), before anything
    is written, when ``index_dir`` has no ``manifest.json`` and holds a document file (a
    lower-case suffix among ``document_suffixes``: the ingest formats,
    :data:`ragstrata.ingest.loader.FORMATS`) at its top level, which an index folder never
    does; an empty, missing or index-only folder passes.
    """
    if (index_dir / MANIFEST).exists() or not index_dir.is_dir():
        return
    try:
        found = sorted(
            entry.name
            for entry in os.scandir(index_dir)
            if Path(entry.name).suffix.lower() in document_suffixes
        )
    except OSError:
        return  # an unreadable folder fails with its own error when it is opened
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise StoreError(
            f"{path_text(index_dir)} holds documents ({shown}) and no index: --index (or "
            "RAGSTRATA_INDEX) names the folder the index is written to, not the documents; "
            "choose an empty or new folder, e.g. --index ./.ragstrata/index"
        )


def read_manifest(index_dir: Path) -> Manifest:
    """Load ``manifest.json``; raises IndexNotFoundError when there is no index at ``index_dir``."""
    path = index_dir / MANIFEST
    if not path.is_file():
        where = index_dir if index_dir.is_absolute() else f"{index_dir} ({index_dir.absolute()})"
        # the absolute path too: an MCP server's folder is not its client's (trial 28)
        raise IndexNotFoundError(
            f"no index at {where} (missing {MANIFEST}); run `ragstrata ingest PATH --index "
            f"{index_dir}` first (without --index, ingest and ask use the default index)"
        )
    try:
        return Manifest.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # TypeError/AttributeError: JSON of another shape (trial 28: `[]` reached MCP clients
        # as "list indices must be integers or slices, not str")
        raise StoreError(f"{path} is corrupt: {type(exc).__name__}: {exc}") from exc


_READ_CACHE: dict[Path, tuple[tuple[int, int, int], Manifest]] = {}
_READ_CACHE_LOCK = threading.Lock()
_READ_CACHE_SIZE = 8


def read_manifest_shared(index_dir: Path) -> Manifest:
    """:func:`read_manifest`, parsed again only when ``manifest.json`` changed (its inode,
    size and modification time); the object returned is shared between callers and **must not
    be modified**. For readers that open an index per call (the MCP server): parsing the
    manifest of 5,183 documents (3.2 MB) took about 57 ms of each call. Raises as
    :func:`read_manifest`."""
    path = index_dir / MANIFEST
    try:
        st = path.stat()
    except OSError:
        return read_manifest(index_dir)  # IndexNotFoundError with its message
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _READ_CACHE_LOCK:
        cached = _READ_CACHE.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    manifest = read_manifest(index_dir)
    with _READ_CACHE_LOCK:
        _READ_CACHE.pop(path, None)
        _READ_CACHE[path] = (key, manifest)
        while len(_READ_CACHE) > _READ_CACHE_SIZE:
            _READ_CACHE.pop(next(iter(_READ_CACHE)))
    return manifest


def index_stats(index_dir: Path) -> dict[str, Any]:
    """Documents (and how many are only partly indexed: an ingest stopped between the slices of
    a large document), chunks, embedder, analyzer, chunker, BM25 parameters and on-disk size
    (bytes allocated, not sparse) of the index at ``index_dir``; IndexNotFoundError without
    one."""
    manifest = read_manifest(index_dir)
    size = sum(p.stat().st_blocks * 512 for p in _walk_files(index_dir))
    return {
        "index": path_text(index_dir),
        "documents": len(manifest.documents),
        # a large document interrupted between its slices: searchable in part until the next
        # ingest of its file finishes it
        "partial_documents": sum(not e.complete for e in manifest.documents.values()),
        # a re-index for a new analyzer not finished: found by dense search only until then
        "stale_analyzer_documents": stale_analyzer_documents(manifest, manifest.analyzer),
        "chunks": manifest.n_chunks,
        "embedder": manifest.embedder,
        "dim": manifest.dim,
        "analyzer": manifest.analyzer,
        "chunker": manifest.chunker,
        "bm25": {"k1": manifest.k1, "b": manifest.b, "avgdl": round(manifest.avgdl, 2)},
        "size_bytes": size,
    }


def index_listing(index_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """What :func:`index_stats` counts, one by one: ``documents`` (``doc_id``, ``source``,
    ``title``, ``chunks``, ``complete``, ``indexed_at``) and the remembered ``failures`` (files
    that failed and are reported again while unchanged: ``doc_id``, ``path``, ``code``,
    ``reason``, ``failed_at``), each by path; IndexNotFoundError without an index."""
    manifest = read_manifest(index_dir)
    documents = [
        {
            "doc_id": doc_id,
            "source": entry.source,
            "title": entry.title,
            "chunks": len(entry.chunk_ids),
            "complete": entry.complete,
            "indexed_at": entry.indexed_at,
        }
        for doc_id, entry in manifest.documents.items()
    ]
    failures = [
        {
            "doc_id": doc_id,
            "path": entry.path,
            "code": entry.code,
            "reason": entry.reason,
            "failed_at": entry.failed_at,
        }
        for doc_id, entry in manifest.failures.items()
    ]
    return {
        "documents": sorted(documents, key=lambda d: str(d["source"])),
        "failures": sorted(failures, key=lambda f: str(f["path"])),
    }


def _walk_files(root: Path) -> Iterator[Path]:
    """Files of the index at ``root``, without the read snapshots an ingest publishes."""
    for dirpath, dirs, names in os.walk(root):
        if dirpath == str(root) and "readers" in dirs:
            dirs.remove("readers")
        for name in names:
            yield Path(dirpath) / name


def write_manifest(index_dir: Path, manifest: Manifest) -> None:
    """Atomically replace ``manifest.json``."""
    atomic_write(index_dir / MANIFEST, json.dumps(manifest.to_json(), ensure_ascii=False))


def write_journal(
    index_dir: Path,
    doc_ids: Sequence[str],
    *,
    appends: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Record what a commit is about to change (durably, before touching the store): the
    documents it rewrites and, per document it appends a slice to, the chunk ids it adds."""
    data: dict[str, Any] = {"doc_ids": list(doc_ids)}
    if appends:
        data["appends"] = {d: list(ids) for d, ids in appends.items()}
    atomic_write(index_dir / JOURNAL, json.dumps(data))


def read_journal(index_dir: Path) -> list[str] | None:
    """Doc ids of an interrupted commit, or ``None`` when the last commit completed."""
    path = index_dir / JOURNAL
    if not path.is_file():
        return None
    try:
        return [str(d) for d in json.loads(path.read_text(encoding="utf-8"))["doc_ids"]]
    except (ValueError, KeyError, OSError):
        return []


def read_appends(index_dir: Path) -> dict[str, list[str]]:
    """Chunk ids an interrupted commit was appending, per document (empty without a journal,
    or for a journal that lists none or cannot be read)."""
    try:
        data = json.loads((index_dir / JOURNAL).read_text(encoding="utf-8"))
        return {str(d): [str(c) for c in ids] for d, ids in data.get("appends", {}).items()}
    except (ValueError, KeyError, OSError, AttributeError, TypeError):
        return {}


def clear_journal(index_dir: Path) -> None:
    """Mark the current commit complete."""
    with contextlib.suppress(FileNotFoundError):
        (index_dir / JOURNAL).unlink()


def check_compatible(
    manifest: Manifest,
    *,
    embedder: str,
    dim: int,
    analyzer: str,
    index_dir: Path,
    writing: bool = False,
) -> None:
    """Raise EmbedderMismatchError when the index was built with another embedder, or (for
    readers, ``writing=False``) another BM25 analyzer. A writer re-indexes documents whose
    analyzer differs, so it only needs the same embedder. A reader is warned (log) when some
    documents still carry another analyzer than the index's (a re-index not finished)."""
    if manifest.embedder != embedder or manifest.dim != dim:
        raise EmbedderMismatchError(
            f"the index at {index_dir} was built with embedder {manifest.embedder!r} "
            f"(dim {manifest.dim}) but {embedder!r} (dim {dim}) is configured; set "
            f"embedder.name back, or re-ingest into a new index (--index NEW_DIR)"
        )
    if manifest.analyzer != analyzer and not writing:
        raise EmbedderMismatchError(
            f"the index at {index_dir} was built with BM25 analyzer {manifest.analyzer!r} but "
            f"this version uses {analyzer!r}; run `ragstrata ingest` on the same paths again to "
            "re-index (stored vectors are reused, nothing is re-embedded)"
        )
    if not writing:
        stale = stale_analyzer_documents(manifest, analyzer)
        if stale:
            # a re-index for a new analyzer writes the manifest's first and each document's as
            # it reaches it; one stopped part-way, or one that did not cover every folder the
            # index came from, leaves documents whose BM25 vectors the new analyzer cannot read
            # (review 36). Not refused: a file that now fails or is gone would block the index
            # for good; their BM25 matches are lost (dense still finds them) until re-indexed.
            logger.warning(
                "%d of %d documents in %s were indexed with another BM25 analyzer than %r and "
                "are found by dense search only: run `ragstrata ingest` on the paths they came "
                "from to re-index them (stored vectors are reused), or `ragstrata forget` the "
                "ones that are gone",
                stale,
                len(manifest.documents),
                index_dir,
                analyzer,
            )


def stale_analyzer_documents(manifest: Manifest, analyzer: str) -> int:
    """How many of ``manifest``'s documents were indexed with a BM25 analyzer other than
    ``analyzer`` (by their :func:`index_signature`; entries of another form are not counted)."""
    return sum(
        1
        for entry in manifest.documents.values()
        if (doc := signature_analyzer(entry.signature)) is not None and doc != analyzer
    )


def _write_holder(handle: IO[str]) -> None:
    """Record in the held lock file which process holds it (``PID command``), for the message
    of a process that finds it taken; best effort (the lock itself is the ``flock``)."""
    import sys

    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:2]]) if sys.argv else "python"
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()} {command[:80]}\n")
        handle.flush()
    except OSError:
        pass


def _holder_text(index_dir: Path) -> str:
    """Why the lock is taken, as its holder recorded it (:func:`_write_holder`): a running
    ``ragstrata serve`` keeps a collection's index open for as long as it runs, so "try again
    when it finishes" never came true for a command-line search of it (trial 24)."""
    try:
        pid, _, command = (index_dir / ".lock").read_text(encoding="utf-8").strip().partition(" ")
    except OSError:
        pid, command = "", ""
    if " serve" in f" {command}" and pid.isdigit():
        return (
            f"`ragstrata serve` (process {pid}) keeps it open while it runs; query it "
            "through the server's API (or MCP), or stop the server first"
        )
    if pid.isdigit() and command:
        who = f"process {pid}: {command}"
    else:
        who = "an ingest, or a search/ask still running"
    return f"another process ({who}) has it open; try again when it finishes"


class IndexLock:
    """Exclusive advisory lock (``flock``) on ``<index>/.lock``, held while a process has the
    shard open. The embedded Qdrant Edge engine is single-process: a second process opening the
    shard while another writes can corrupt it, so readers of an idle index take the same lock;
    while a writer holds it they read the writer's published snapshot instead
    (:mod:`ragstrata.index.snapshots`). The operating system releases it when the process
    exits, even on SIGKILL.
    """

    def __init__(self, index_dir: Path, handle: IO[str]) -> None:
        self.index_dir = index_dir
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, index_dir: Path, *, wait_s: float = 0.0, purpose: str = "write") -> IndexLock:
        """Take the lock, polling up to ``wait_s`` seconds; raises IndexLockedError after that."""
        try:
            index_dir.mkdir(parents=True, exist_ok=True)
            handle = open(index_dir / ".lock", "a+")  # noqa: SIM115 - held until release()
        except OSError as exc:
            raise StoreError(
                f"cannot open the index directory {index_dir}: {exc.strerror}; choose a writable "
                "location with --index or RAGSTRATA_HOME"
            ) from exc
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                _write_holder(handle)
                return cls(index_dir, handle)
            except BlockingIOError as exc:
                if not told and wait_s > 0:
                    told = True  # a write that waits says so: a silent wait looks like a hang
                    logger.log(
                        logging.WARNING if purpose == "write" else logging.INFO,
                        "the index at %s is open in another process (an ingest, or a "
                        "search/ask still running); waiting up to %.0f s for it",
                        index_dir,
                        wait_s,
                    )
                if time.monotonic() >= deadline:
                    handle.close()
                    raise IndexLockedError(
                        f"cannot {purpose} the index at {index_dir}: {_holder_text(index_dir)}"
                    ) from exc
                time.sleep(0.2)

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
