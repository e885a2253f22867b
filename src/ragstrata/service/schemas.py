"""Wire schemas of the HTTP API (pydantic v2): request bodies are validated, responses typed.

The JSON shapes of hits and citations are built by :mod:`ragstrata.render`, the same
functions behind ``ragstrata search/ask --json``; these models only describe and check them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragstrata.types import MAX_QUERY_CHARS

_FILTER_KEY = re.compile(r"doc_id|source|title|language|meta\.[A-Za-z0-9_]{1,64}")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Response(BaseModel):
    model_config = ConfigDict(frozen=True)


FilterValue = str | list[str]


def _check_filters(value: dict[str, FilterValue] | None) -> dict[str, FilterValue] | None:
    if value is None:
        return None
    for key, item in value.items():
        if not _FILTER_KEY.fullmatch(key):
            raise ValueError(
                f"filter key {key[:80]!r} is not allowed; use doc_id, source, title, language or "
                "meta.<key>"
            )
        if isinstance(item, list) and not 1 <= len(item) <= 100:
            raise ValueError(f"filter {key!r}: a list must hold 1 to 100 values")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must hold more than white space")
    return value


class SearchRequest(_Request):
    """``POST /v1/collections/{name}/search``."""

    query: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="Keywords or a question."
    )
    top_k: int | None = Field(
        default=None, ge=1, le=50, strict=True, description="Hits to return (an integer)."
    )
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    filters: dict[str, FilterValue] | None = Field(
        default=None,
        max_length=16,
        description=(
            "Payload filters: doc_id, source (a file name as hits show it), title, language or "
            "meta.<key> -> value or list."
        ),
    )

    _filters = field_validator("filters")(_check_filters)
    _query = field_validator("query")(_not_blank)


class AskRequest(_Request):
    """``POST /v1/collections/{name}/ask``. ``stream``: answer as server-sent events
    (``text/event-stream``); ``explain``: also return the retrieval behind the answer."""

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    # strict: "yes" and 1 were taken as true (trial 24), where top_k "3" is refused
    stream: bool = Field(default=False, strict=True)
    explain: bool = Field(default=False, strict=True)
    filters: dict[str, FilterValue] | None = Field(default=None, max_length=16)

    _filters = field_validator("filters")(_check_filters)
    _question = field_validator("question")(_not_blank)


class TextDocument(_Request):
    """One document sent as JSON text; ``name``'s extension picks the format. An empty
    ``text`` is that file's failure (RS203, as an empty file in a multipart upload), not the
    whole request's."""

    name: str = Field(min_length=1, max_length=255, examples=["faq.md"])
    text: str


class TextUpload(_Request):
    """``POST /v1/collections/{name}/documents`` with ``application/json``."""

    documents: list[TextDocument] = Field(min_length=1, max_length=1000)


class ErrorDetail(_Response):
    code: str = Field(examples=["RS701"])
    message: str


class ErrorResponse(_Response):
    """Every error: a stable ``RSxxx`` code and a message naming what to fix."""

    error: ErrorDetail


class RetrieverRank(_Response):
    rank: int
    score: float


class CopyOut(_Response):
    chunk_id: str
    doc_id: str
    source: str = Field(description="File name inside the collection.")
    heading_path: list[str]


class HitOut(_Response):
    rank: int
    score: float
    chunk_id: str
    doc_id: str
    source: str = Field(description="File name inside the collection.")
    title: str
    heading_path: list[str]
    start: int
    end: int
    chunk_index: int
    chunk_total: int
    text: str
    language: str = Field(default="und", description="Detected language (ISO 639-1) or und.")
    page_start: int | None = Field(default=None, description="First page (PDF only), 1-based.")
    page_end: int | None = Field(default=None, description="Last page (PDF only), 1-based.")
    explain: dict[str, RetrieverRank] = Field(
        description="Each retriever's 1-based rank and raw score (dense: cosine, bm25: BM25)."
    )
    copies: list[CopyOut] = Field(
        default_factory=list,
        description="Other chunks with this hit's text (white space aside), best first: "
        "copies of the passage in other files or in this one, folded into this hit.",
    )


class SearchResponse(_Response):
    query: str
    hits: list[HitOut]
    language_relation: Literal["same", "cross", "unknown"] = Field(
        default="unknown",
        description="Hybrid mode: the query's language against its passages' (same, cross: "
        "the cross-lingual fusion weights were used, unknown).",
    )
    timings_ms: dict[str, float]


class CitationOut(_Response):
    label: int
    source: str
    heading_path: list[str]
    chunk_id: str
    doc_id: str
    start: int
    end: int
    score: float
    quote: str
    page_start: int | None = Field(default=None, description="First page (PDF only), 1-based.")
    page_end: int | None = Field(default=None, description="Last page (PDF only), 1-based.")
    verified: bool = Field(
        default=True,
        description="Every claim citing this source was checked against it and found supported "
        "(an extractive quote is verbatim, so always true). With llm.unsupported = 'flag' an "
        "unsupported citation is kept with verified=false.",
    )
    support: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The citation checker's best score for this source, or null when no check "
        "ran (extractive answers, llm.verify_citations = false).",
    )
    passage: str = Field(description="The cited chunk's text.")
    highlight_start: int | None = Field(
        description="Offset of ``quote`` in ``passage`` (characters; for a table row quoted "
        "as ``header: value; ...``, of the row), or null if not found."
    )
    highlight_end: int | None
    explain: dict[str, RetrieverRank] = Field(
        default_factory=dict, description="The cited chunk's retriever ranks (with explain)."
    )


class UsageOut(_Response):
    """Token counts of the LLM call behind an answer (the server's figures, or the local
    tokenizer's when the server sends none)."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)


class VersionConflictOut(_Response):
    """Sources of one document in several versions: the newest was kept, the rest dropped."""

    title: str
    kept: str = Field(description="The version whose passages were used.")
    dropped: list[str] = Field(description="Older versions, newest first.")


class ClaimOut(_Response):
    label: int = Field(description="The citation [label] of the source that says it.")
    value: str = Field(description="The value as the source writes it.", examples=["31"])


class DisagreementOut(_Response):
    """Quoted sources of different documents that give different values for one quantity."""

    unit: str = Field(examples=["días"])
    claims: list[ClaimOut]


class AskResponse(_Response):
    """A cited answer or a refusal. Built by :func:`ragstrata.render.answer_json`, the
    same fields as ``ragstrata ask --json``; the ``done`` event of a stream carries it too
    (without ``retrieval``)."""

    question: str
    answer: str = Field(
        description="The answer, each sentence followed by its citation labels [n]; with an "
        "LLM, its checked text (labels renumbered, unknown labels removed)."
    )
    refusal: bool
    refused_by: str | None = Field(
        default=None,
        description="Why a refusal refused: evidence, rerank, no_quotes, llm, no_citations, "
        "unsupported or empty_index (the collection holds no document); null for an answer.",
    )
    citations: list[CitationOut]
    legend: list[str]
    timings_ms: dict[str, float] = Field(
        description="Milliseconds per stage: embed_query, dense, bm25, fusion, rerank, hyde, "
        "assemble, generate, first_token (LLM: until the first token), verify, total; only "
        "the stages that ran."
    )
    usage: UsageOut | None = Field(
        description="The LLM's token counts; null when no LLM was called (extractive "
        "answerer, or a refusal before generation)."
    )
    generator: str = Field(
        description="'extractive' or the LLM's name (e.g. 'openai:gpt-4o-mini').",
        examples=["extractive"],
    )
    conflict: bool = Field(
        description="The top sources came from several versions of one document and only the "
        "newest version's passages were used (details in conflicts)."
    )
    conflicts: list[VersionConflictOut]
    disagreements: list[DisagreementOut] = Field(
        default_factory=list,
        description="Quoted sources that give different values for one quantity (for "
        "example 31 and 99 days of vacation): read both before trusting either.",
    )
    retrieval: list[HitOut] | None = Field(
        default=None, description="The hits behind the answer (only with explain=true)."
    )
    evidence: dict[str, Any] | None = Field(
        default=None,
        description="What the evidence check measured (dense, coverage, score, model, cross), "
        "as under metadata in `ragstrata ask --json`; null when it did not run (empty index).",
    )
    min_evidence: float | None = Field(
        default=None,
        description="The threshold the evidence score was held to (a refusal with refused_by "
        "'evidence' scored under it); null when the check did not run.",
    )


class CollectionOut(_Response):
    name: str
    documents: int
    chunks: int


class CollectionsResponse(_Response):
    tenant: str
    collections: list[CollectionOut]


class DocumentOut(_Response):
    doc_id: str
    name: str
    title: str
    chunks: int
    complete: bool = Field(
        default=True,
        description="false: an ingest stopped after committing only part of this file's "
        "chunks (a cancelled job, a server stopped or killed); upload it again.",
    )


class DocumentsResponse(_Response):
    collection: str
    documents: list[DocumentOut]


class DeleteResponse(_Response):
    deleted: DocumentOut


class CollectionDeleteResponse(_Response):
    deleted: CollectionOut
    jobs_cancelled: int = Field(ge=0, description="queued ingestion jobs cancelled")


class JobProgress(_Response):
    files_total: int
    files_done: int = Field(description="Files parsed (indexed or failed).")
    bytes_total: int
    bytes_done: int
    chunks_embedded: int = Field(description="Chunks whose vectors are ready (embedded or reused).")
    chunks_queued: int = Field(default=0, description="Chunks the parsed files gave so far.")
    chunks_committed: int = Field(default=0, description="Chunks searchable so far.")
    chunks_reweighted: int = Field(
        default=0,
        description="Chunks whose BM25 weights were updated after the commits (the index's "
        "average chunk length moved; docs/architecture.md).",
    )
    chunks_per_s: float | None = Field(
        default=None, description="Chunks embedded per second of running time (null before any)."
    )
    running_s: float = Field(default=0.0, description="Seconds the job has run (not queued).")
    fraction: float = Field(ge=0, le=1)


class JobFile(_Response):
    name: str
    status: Literal["indexed", "failed", "not_indexed"]
    code: str | None
    reason: str | None


class JobOut(_Response):
    job_id: str
    collection: str
    state: Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"]
    created: str
    started: str | None
    finished: str | None
    progress: JobProgress
    files: list[JobFile]
    report: dict[str, Any] | None
    error: ErrorDetail | None


class JobsResponse(_Response):
    jobs: list[JobOut]


class HealthResponse(_Response):
    status: Literal["ok"]
