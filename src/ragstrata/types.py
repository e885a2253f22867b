"""Core data types that flow between pipeline stages (frozen, slotted dataclasses).

Offsets are Python ``str`` indices (code points, not bytes) into ``Document.text``, the
normalized text of the document (BOM stripped, CRLF/CR turned into LF). For every block and
chunk, ``document.text[start:end]`` is exactly its text.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_QUERY_CHARS = 2000
"""Longest search query or question the user interfaces accept (CLI, HTTP API, MCP tools), in
characters: about 400 words, far past what the query encoders read (e5: 512 tokens). The
library and ``ragstrata eval`` take any length (BEIR sets such as ArguAna have long queries)."""

FloatArray: TypeAlias = "npt.NDArray[np.float32]"
"""A float32 numpy array: embeddings ``(n, dim)`` or ``(dim,)``, reranker scores ``(n,)``."""

BlockKind = Literal["heading", "paragraph", "code", "table", "list", "quote", "html", "rule"]
"""Structural kinds a loader emits. ``code`` and ``table`` are atomic for the chunker."""


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a document: ``text[start:end]`` in the normalized text.

    ``level`` is the heading level (1-6) for ``heading`` blocks and 0 otherwise; ``title`` is
    the heading's display text (markup and ``{/*anchor*/}`` ids removed) for headings only.
    """

    kind: BlockKind
    start: int
    end: int
    level: int = 0
    title: str = ""


WarningKind = Literal[
    "replaced_bytes",
    "mixed_encoding",
    "legacy_encoding",
    "mojibake",
    "html_depth",
    "front_matter",
]
"""What an :class:`IngestWarning` is about: undecodable bytes replaced by U+FFFD, lines in a
legacy encoding inside a UTF-8 file, UTF-8 text that was once read as cp1252/Latin-1 ("mÃ¡s"),
HTML nested too deep (tags removed, text kept), or Markdown front matter that could not be read
(ignored, the text kept)."""


@dataclass(frozen=True, slots=True)
class IngestWarning:
    """A file that was ingested with a caveat the user should see: its ``path``, the ``kind``,
    a ``message`` that names what happened and the fix, and ``share``, the fraction (0-1) of
    the document's characters affected (0.0 when it does not apply)."""

    path: str
    kind: WarningKind
    message: str
    share: float = 0.0


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed source file.

    ``doc_id`` is a deterministic hash of the resolved source path; ``content_hash`` is the
    SHA-256 of ``text``; ``blocks`` are sorted by ``start`` and do not overlap. ``language`` is
    the detected ISO 639-1 code (``"es"``, ``"en"``...) or ``"und"`` when undetermined.
    ``pages`` is empty for formats without pages; for PDFs ``pages[i]`` is the offset in
    ``text`` where page ``i + 1`` starts. ``file_hash`` is the SHA-256 of the file's raw bytes
    (empty for documents that did not come from a file). ``warnings`` are what loading it
    found worth reporting (replaced bytes, mixed encodings, mojibake, HTML nested too deep).
    """

    doc_id: str
    source: str
    title: str
    text: str
    blocks: tuple[Block, ...]
    content_hash: str
    format: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    language: str = "und"
    pages: tuple[int, ...] = ()
    file_hash: str = ""
    warnings: tuple[IngestWarning, ...] = ()

    def page_range(self, start: int, end: int) -> tuple[int, int] | None:
        """1-based ``(first, last)`` pages that ``text[start:end]`` spans, or ``None`` when the
        document has no pages."""
        if not self.pages:
            return None
        first, last = _span_pages(self.pages, start, end, 0)
        return max(first, 1), max(last, 1)


def _span_pages(starts: Sequence[int], start: int, end: int, base: int) -> tuple[int, int]:
    """``(first, last)`` pages of the characters ``start:end``: ``base`` plus the number of
    page starts (sorted offsets) at or before the first and the last character. A document's
    page starts (base 0) and a chunk's later-page breaks (base its first page) share it."""
    first = base + bisect.bisect_right(starts, start)
    return first, base + bisect.bisect_right(starts, max(start, end - 1))


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable passage: ``document.text[start:end] == text``.

    ``chunk_id`` is deterministic (a hash of doc id, offsets and content), so re-ingesting the
    same file yields the same ids. ``section_path`` is the heading path (outermost first);
    ``parent_id`` identifies the section the chunk belongs to; ``token_count`` is the number of
    tokens of :attr:`rendered`, measured with the embedding model's own tokenizer (special
    tokens and the heading-path prefix excluded). ``language`` is the document's detected language,
    or the other of Spanish and English for a chunk whose prose is written in it
    (:func:`~ragstrata.text.language.chunk_language`); ``page_start``/``page_end`` are the 1-based
    pages the chunk spans (PDF only, ``None`` otherwise), ``page_breaks`` the offsets in ``text``
    where each of its later pages starts (``page_end - page_start`` of them; empty for a one-page
    chunk and in an index written before 2026-12-06): :meth:`pages_of` finds a quote's own pages.
    """

    chunk_id: str
    doc_id: str
    source: str
    title: str
    section_path: tuple[str, ...]
    text: str
    start: int
    end: int
    index: int
    total: int
    token_count: int
    parent_id: str
    content_hash: str
    header: str = ""
    footer: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    language: str = "und"
    page_start: int | None = None
    page_end: int | None = None
    page_breaks: tuple[int, ...] = ()

    def pages_of(self, start: int, end: int) -> tuple[int, int] | None:
        """1-based ``(first, last)`` pages of ``text[start:end]`` (offsets in :attr:`text`),
        or ``None`` without pages; the chunk's whole range when its breaks are unknown."""
        if self.page_start is None:
            return None
        last_page = self.page_end if self.page_end is not None else self.page_start
        if len(self.page_breaks) != last_page - self.page_start:
            return self.page_start, last_page
        return _span_pages(self.page_breaks, start, end, self.page_start)

    @property
    def rendered(self) -> str:
        """``header + text + footer``: what is embedded and shown.

        ``header``/``footer`` are only set when a table or fenced code block had to be split:
        the header repeats the table's header rows or the opening fence, the footer closes the
        fence, so every rendered chunk is self-contained (balanced fences).
        """
        return self.header + self.text + self.footer

    @property
    def heading(self) -> str:
        """The heading path joined with ``" > "`` (empty string for text before any heading)."""
        return " > ".join(self.section_path)


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """A file that was not ingested: its path, the error code (``RS2xx``) and the reason.

    ``doc_id`` and ``retry_key`` (the file's SHA-256 and the parser limits, opaque) are set when
    the failure is worth remembering: the index then records it, and an unchanged file is
    reported again without being parsed, with ``unchanged`` true. Both are empty for failures
    that are cheap to find again (discovery, an unreadable file).
    """

    path: str
    code: str
    reason: str
    doc_id: str = ""
    retry_key: str = ""
    unchanged: bool = False


Retriever = Literal["dense", "bm25"]


@dataclass(frozen=True, slots=True)
class RetrieverHit:
    """One retriever's view of a hit: 1-based ``rank`` and raw ``score`` (cosine or BM25)."""

    retriever: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class Hit:
    """A ranked search result. ``score`` is the fused (RRF) score, or the single retriever's
    score when only one retriever ran; ``explain`` keeps each retriever's rank and score.
    ``copies``: the lower-ranked chunks whose text is this one's (white space aside), best
    first, folded into this hit instead of being results of their own
    (:func:`~ragstrata.retrieve.copies.collapse_copies`)."""

    chunk: Chunk
    rank: int
    score: float
    explain: tuple[RetrieverHit, ...]
    copies: tuple[Chunk, ...] = ()

    def retriever_score(self, retriever: str) -> float | None:
        """Raw score this hit got from ``retriever``, or ``None`` if that retriever missed it."""
        for item in self.explain:
            if item.retriever == retriever:
                return item.score
        return None


@dataclass(frozen=True, slots=True)
class Citation:
    """A numbered source ``[label]`` of an answer, traced to document, section and chunk."""

    label: int
    chunk_id: str
    doc_id: str
    source: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    score: float
    quote: str
    verified: bool = True
    support: float | None = None
    page_start: int | None = None
    page_end: int | None = None
    """``verified``: the claims citing this source were checked against its chunk and found
    supported (extractive quotes are verbatim, so always ``True``); ``support`` is the checker's
    best score for it in [0, 1] (``None`` when no check ran). See docs/generation.md.
    ``page_start``/``page_end``: the 1-based pages of the cited text (PDF only): an
    extractive citation's quotes' own pages, an LLM citation's chunk's."""


RefusalReason = Literal[
    "evidence", "rerank", "no_quotes", "llm", "no_citations", "unsupported", "empty_index"
]
"""Why an answer is a refusal: ``evidence`` (nothing retrieved, the evidence score under its
threshold: the answerability probability under ``llm.min_answerable`` or the model's, or the
hand-made score under ``llm.min_evidence``; or a question that asks nothing, whatever the score:
:func:`~ragstrata.generate.evidence.asks_nothing`), ``rerank`` (the best cross-encoder logit is
under ``rerank.min_score``), ``no_quotes`` (the extractive answerer found no sentence to quote),
``llm`` (the LLM declined), ``no_citations``/``unsupported`` (the LLM's answer cites nothing,
or nothing it cites is supported), ``empty_index`` (the index holds no document: ingest some
first)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """``dense``: best cosine among the hits (-1 when dense retrieval found none of them);
    ``coverage``: best share of question terms in one hit, in [0, 1]; ``score``: what the
    threshold is compared with: the learned answerability model's probability that the hits
    hold the answer, in [0, 1], when ``model`` names it (``answerability-e5-v2``), else
    (``model=None``) the hand-made blend ``dense + 0.5 × coverage`` (see
    :mod:`ragstrata.generate.evidence`); ``cross``: the question was asked in another language
    than the hits and the rule's cross-lingual threshold applied; ``strong``: the hand score
    reached the learned rule's ``strong_evidence``, so it answers whatever ``score`` says (an
    answer with ``score`` under ``min_evidence`` says why); ``reader``: the reader's best logit
    over the first hits when the score blends it in (``None``: not read)."""

    dense: float
    coverage: float
    score: float
    model: str | None = None
    cross: bool = False
    strong: bool = False
    reader: float | None = None

    def to_json(self) -> dict[str, float | str | bool | None]:
        return {
            "dense": round(self.dense, 4),
            "coverage": round(self.coverage, 4),
            "score": round(self.score, 4),
            "model": self.model,
            "cross": self.cross,
            "strong": self.strong,
            "reader": None if self.reader is None else round(self.reader, 4),
        }


EvidenceRefusal = Literal["evidence", "rerank"]
"""The refusals the evidence check itself decides (a subset of :data:`RefusalReason`)."""


@dataclass(frozen=True, slots=True)
class EvidenceCheck:
    """The refusal decision :func:`~ragstrata.generate.evidence.check_evidence` made: what it
    measured (``evidence``), the threshold its ``score`` is compared with (``min_evidence``: a
    probability for the learned check, see :class:`Evidence`) and ``refused_by``: ``None``
    (answer), ``"evidence"`` (no hit, ``evidence.score`` under ``min_evidence``, or a question
    that asks nothing: :func:`~ragstrata.generate.evidence.asks_nothing`, whatever the score) or
    ``"rerank"`` (the best cross-encoder logit is under ``min_rerank``)."""

    evidence: Evidence
    min_evidence: float
    refused_by: EvidenceRefusal | None

    @property
    def refuse(self) -> bool:
        return self.refused_by is not None

    def metadata(self) -> dict[str, Any]:
        """``evidence`` and ``min_evidence`` as JSON, as every answer's JSON carries them."""
        return {"evidence": self.evidence.to_json(), "min_evidence": self.min_evidence}


@dataclass(frozen=True, slots=True)
class VersionConflict:
    """Sources of one document (``title``) in several versions: ``kept`` is the newest
    version, ``dropped`` the older ones whose hits were removed (see
    :func:`~ragstrata.assemble.context.resolve_versions`)."""

    title: str
    kept: str
    dropped: tuple[str, ...]
    dropped_chunks: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "kept": self.kept, "dropped": list(self.dropped)}


@dataclass(frozen=True, slots=True)
class SourceDisagreement:
    """Quoted sources of different documents that give different values for one quantity:
    ``unit`` as the sources write it (``días``, ``%``), ``claims`` the ``(citation label,
    value)`` pairs, in label order (see
    :class:`~ragstrata.generate.extractive.ExtractiveAnswerer`)."""

    unit: str
    claims: tuple[tuple[int, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "claims": [{"label": label, "value": value} for label, value in self.claims],
        }


@dataclass(frozen=True, slots=True)
class UnsupportedClaim:
    """A claim of an LLM answer whose cited sources (``labels``, as the model numbered them)
    do not support it, and ``missing``: what those sources lack (numbers, names, code)."""

    sentence: str
    labels: tuple[int, ...]
    missing: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "labels": list(self.labels),
            "missing": list(self.missing),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Grounding:
    """What the citation check of an LLM answer found (see
    :func:`~ragstrata.generate.citations.ground`): ``claims`` (number of claims),
    ``verified_claims`` (claims with at least one supporting citation), ``invalid_labels``
    (out-of-range labels, removed from the text), ``unsupported`` claims, ``uncited`` (claims
    left without any valid citation), ``attributed`` (claims that got their citation from the
    checker), ``reattributed`` (claims whose cited sources did not support them and whose
    citation the checker moved to a source that does)."""

    claims: int
    verified_claims: int
    invalid_labels: tuple[int, ...]
    unsupported: tuple[UnsupportedClaim, ...]
    uncited: tuple[str, ...]
    attributed: tuple[str, ...]
    reattributed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "verified_claims": self.verified_claims,
            "invalid_labels": list(self.invalid_labels),
            "unsupported": [u.to_json() for u in self.unsupported],
            "uncited": list(self.uncited),
            "attributed": list(self.attributed),
            "reattributed": list(self.reattributed),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStats:
    """Where one local generation spent its time, by llama.cpp's own counters
    (``llama_perf_context``).

    ``prompt_tokens``: tokens of the prompt (chat template included); ``prompt_eval_tokens``
    of them were evaluated, in batches, in ``prompt_eval_ms``; the rest (``reused_tokens``)
    were the common prefix with the previous prompt of the same model, kept in its KV cache.
    ``eval_tokens``: one-token decodes (the generated tokens) in ``eval_ms``. ``load_ms``: the
    model load this generation waited for (0 when the model was already loaded). Times are
    wall-clock milliseconds.
    """

    prompt_tokens: int
    prompt_eval_tokens: int
    prompt_eval_ms: float
    eval_tokens: int
    eval_ms: float
    load_ms: float = 0.0

    @property
    def reused_tokens(self) -> int:
        """Prompt tokens taken from the KV cache instead of evaluated."""
        return max(0, self.prompt_tokens - self.prompt_eval_tokens)

    @property
    def prompt_tokens_per_s(self) -> float | None:
        """Prompt evaluation speed (``None`` when nothing was evaluated)."""
        if self.prompt_eval_ms <= 0 or not self.prompt_eval_tokens:
            return None
        return self.prompt_eval_tokens / self.prompt_eval_ms * 1000

    @property
    def eval_tokens_per_s(self) -> float | None:
        """Generation speed (``None`` when nothing was generated)."""
        if self.eval_ms <= 0 or not self.eval_tokens:
            return None
        return self.eval_tokens / self.eval_ms * 1000

    def to_json(self) -> dict[str, Any]:
        def rnd(x: float | None) -> float | None:
            return None if x is None else round(x, 1)

        return {
            "prompt_tokens": self.prompt_tokens,
            "reused_tokens": self.reused_tokens,
            "prompt_eval_tokens": self.prompt_eval_tokens,
            "prompt_eval_ms": round(self.prompt_eval_ms, 1),
            "prompt_tokens_per_s": rnd(self.prompt_tokens_per_s),
            "eval_tokens": self.eval_tokens,
            "eval_ms": round(self.eval_ms, 1),
            "eval_tokens_per_s": rnd(self.eval_tokens_per_s),
            "load_ms": round(self.load_ms, 1),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """The LLM's side of an answer: ``context_tokens`` (size of the assembled context, in the
    model's tokens), ``finish_reason`` (why the stream stopped: ``stop``, ``length``...),
    ``raw_answer`` (the text as the model wrote it, its refusal included; ``None`` when it
    wrote nothing),
    ``grounding`` (the citation check; ``None`` when the model declined) and ``decode`` (the
    local model's prompt-evaluation and generation counters; ``None`` for a remote model)."""

    context_tokens: int
    finish_reason: str | None
    raw_answer: str | None = None
    grounding: Grounding | None = None
    decode: DecodeStats | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """An answer with its numbered citations, or a refusal (``refusal=True``, no citations).

    ``timings_ms`` maps stage name (``embed_query``, ``dense``, ``bm25``, ``fusion``,
    ``evidence``, ``assemble``, ``generate``, ``first_token`` (from the question to the LLM's
    first token), ``verify``, ``total``) to wall-clock milliseconds.
    ``usage``: LLM token counts (``prompt_tokens``, ``completion_tokens``, ``total_tokens``;
    empty for the extractive answerer); ``generator``: ``extractive`` or the LLM's name;
    ``refused_by``: why a refusal refused (:data:`RefusalReason`; ``None`` for an answer);
    ``evidence``: what the evidence check measured (``None`` when it did not run: an empty
    index); ``conflicts``: the top sources came from several versions of one document and the
    newest was preferred (:attr:`conflict`); ``hits``: the retrieved hits the answer was built
    from (after HyDE, before version conflicts were resolved); ``hyde_passage``: the LLM's
    hypothetical passage when HyDE ran; ``generation``: the LLM's record (``None`` for the
    extractive answerer and refusals before any LLM call); ``disagreements``: quoted sources
    that give different values for one quantity (extractive answers). Rendered as JSON by
    :mod:`ragstrata.render`.
    """

    question: str
    text: str
    refusal: bool
    citations: tuple[Citation, ...]
    legend: tuple[str, ...]
    timings_ms: Mapping[str, float]
    usage: Mapping[str, int] = field(default_factory=dict)
    generator: str = "extractive"
    refused_by: RefusalReason | None = None
    evidence: EvidenceCheck | None = None
    conflicts: tuple[VersionConflict, ...] = ()
    hits: tuple[Hit, ...] = ()
    hyde_passage: str | None = None
    generation: Generation | None = None
    disagreements: tuple[SourceDisagreement, ...] = ()
    cited_chunks: tuple[Chunk, ...] = ()
    """The chunks citations name that are not among ``hits``: of an expanded section, the
    chunk that holds a quote (:meth:`~ragstrata.assemble.context.Source.chunk_at`)."""

    @property
    def conflict(self) -> bool:
        """Whether version conflicts were resolved (see :attr:`conflicts`)."""
        return bool(self.conflicts)


def meta_text(value: str | int | float | bool) -> str:
    """A metadata value as chunks store it and ``meta.<key>`` filters compare it: text, with
    ``true``/``false`` for booleans and digits for numbers, so that ``--filter meta.year=2024``
    on the command line (always text) matches front matter's ``year: 2024``, as the API's
    ``{"meta.year": 2024}`` does. Matching is exact (case included)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)
