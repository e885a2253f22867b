"""Plain-JSON views of hits and answers, shared by ``ragstrata ... --json``, the HTTP API and
the MCP server: records are typed inside the library and rendered here, at the edge.

Standard library only (the CLI imports it without the ``service`` extra). ``source`` maps a
chunk's stored source path to what the caller may see: the CLI shows it unchanged, the service
shows the file name inside the tenant's upload directory (never a server path).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ragstrata.types import Answer, Citation, Hit

SourceView = Callable[[str], str]


def _same(source: str) -> str:
    return source


_ANCHOR = re.compile(
    r"(?<=\S)[ \t]*(?:\{/\*[^{}\n]*?\*/\}|\{[ \t]*#[^{}\s]*(?:[ \t][^{}\n]*)?\})[ \t]*$", re.M
)
"""A heading anchor at the end of a line: an MDX comment ``{/*why-keys*/}`` or a MkDocs
attribute list ``{ #first-steps }``, with the blanks before it. Only on Markdown heading lines
(:func:`without_anchors`): a JSX comment in a code example is code (review 41)."""
_HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}[ \t]")


def without_anchors(text: str, span: tuple[int, int] | None) -> tuple[str, tuple[int, int] | None]:
    """``text`` for a reader, its heading anchors (:data:`_ANCHOR`) removed, and ``span``
    (character offsets into ``text``, or None) moved to the same characters of the result.
    The web page's passage box showed "### ¿Por qué React necesita keys? {/*why-keys*/}"
    (trial 37); the chunk keeps them (an English anchor in a Spanish page is a term BM25
    matches)."""
    removed = [
        (m.start(), m.end())
        for m in _ANCHOR.finditer(text)
        if _HEADING_LINE.match(text, text.rfind("\n", 0, m.start()) + 1)
    ]
    if not removed:
        return text, span

    def moved(offset: int) -> int:
        return offset - sum(min(end, offset) - start for start, end in removed if start < offset)

    kept, at = [], 0
    for start, end in removed:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept), None if span is None else (moved(span[0]), moved(span[1]))


def hit_json(hit: Hit, *, source: SourceView = _same) -> dict[str, Any]:
    """A ranked hit: rank, fused score, chunk provenance and text, ``explain`` (each
    retriever's 1-based rank and raw score: cosine for ``dense``, BM25 for ``bm25``) and
    ``copies`` (the other chunks that hold the same text, folded into this hit: chunk id,
    document, source, heading path; ``[]`` for most hits)."""
    c = hit.chunk
    return {
        "rank": hit.rank,
        "score": hit.score,
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "source": source(c.source),
        "title": c.title,
        "heading_path": list(c.section_path),
        "start": c.start,
        "end": c.end,
        "chunk_index": c.index,
        "chunk_total": c.total,
        "text": c.rendered,
        "language": c.language,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "explain": {e.retriever: {"rank": e.rank, "score": e.score} for e in hit.explain},
        "copies": [
            {
                "chunk_id": k.chunk_id,
                "doc_id": k.doc_id,
                "source": source(k.source),
                "heading_path": list(k.section_path),
            }
            for k in hit.copies
        ],
    }


def citation_json(citation: Citation, *, source: SourceView = _same) -> dict[str, Any]:
    """A numbered citation: its label, where it comes from (document, heading path, character
    offsets of the chunk in the document), the quoted sentence, and the citation check:
    ``verified`` (the claims citing it are supported; extractive quotes always are) and
    ``support`` (the checker's best score in [0, 1], ``None`` when no check ran)."""
    c = citation
    return {
        "label": c.label,
        "source": source(c.source),
        "heading_path": list(c.heading_path),
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "start": c.start,
        "end": c.end,
        "score": c.score,
        "quote": c.quote,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "verified": c.verified,
        "support": c.support,
    }


def legend_line(citation: Citation, *, source: SourceView = _same) -> str:
    """``[n] = source > heading path`` (the answer's legend line for one citation)."""
    heading = " > ".join(citation.heading_path)
    pages = ""
    if citation.page_start is not None:
        first, last = citation.page_start, citation.page_end
        pages = f" (p. {first})" if last in (None, first) else f" (p. {first}-{last})"
    where = f"{source(citation.source)}{pages}"
    return f"[{citation.label}] = {where}{' > ' + heading if heading else ''}"


def usage_json(answer: Answer) -> dict[str, int] | None:
    """The LLM's token counts (``prompt_tokens``, ``completion_tokens``, ``total_tokens``), or
    ``None`` when no LLM was called (the extractive answerer, a refusal before generation)."""
    if not answer.usage:
        return None
    prompt = int(answer.usage.get("prompt_tokens", 0))
    completion = int(answer.usage.get("completion_tokens", 0))
    total = int(answer.usage.get("total_tokens", prompt + completion))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def conflicts_json(answer: Answer) -> list[dict[str, Any]]:
    """The version conflicts behind ``answer.conflict``: per document ``title``, the version
    ``kept`` (the newest) and the older versions ``dropped``; empty without a conflict."""
    return [c.to_json() for c in answer.conflicts]


def evidence_json(answer: Answer) -> dict[str, Any]:
    """``evidence`` (``dense``, ``coverage``, ``score`` rounded to 4 places; ``model``: the
    answerability model that gave ``score``, ``None`` for the hand-made rule; ``cross``: the
    question was judged in another language than its passages; ``strong``: answered under the
    threshold by the strong-evidence guard) and ``min_evidence``: what the evidence check
    measured and its threshold; both ``None`` when the check did not run (an empty index)."""
    check = answer.evidence
    if check is None:
        return {"evidence": None, "min_evidence": None}
    return check.metadata()


def diagnostics_json(answer: Answer) -> dict[str, Any]:
    """The answer's diagnostics, as ``ragstrata ask --json`` shows them under ``metadata``:
    ``hyde_passage`` (HyDE ran), ``conflict`` (:func:`conflicts_json`, when there was one),
    ``evidence`` and ``min_evidence`` (when the check ran), the LLM's ``context_tokens`` and
    ``finish_reason``, its citation check (``claims``, ``verified_claims``, ``invalid_labels``,
    ``unsupported``, ``uncited``, ``attributed``, ``reattributed``) and ``raw_answer``, a local
    model's ``decode`` counters (:class:`~ragstrata.types.DecodeStats`), and ``refused_by`` on a
    refusal. Keys are absent where the step did not run."""
    data: dict[str, Any] = {}
    if answer.hyde_passage is not None:
        data["hyde_passage"] = answer.hyde_passage
    if answer.conflicts:
        data["conflict"] = conflicts_json(answer)
    if answer.evidence is not None:
        data.update(answer.evidence.metadata())
    generation = answer.generation
    if generation is not None:
        data["context_tokens"] = generation.context_tokens
        data["finish_reason"] = generation.finish_reason
        if generation.grounding is not None:
            data.update(generation.grounding.to_json())
        if generation.raw_answer is not None:
            data["raw_answer"] = generation.raw_answer
        if generation.decode is not None:
            data["decode"] = generation.decode.to_json()
    if answer.refused_by is not None:
        data["refused_by"] = answer.refused_by
    return data


def answer_json(answer: Answer, *, source: SourceView | None = None) -> dict[str, Any]:
    """An answer or refusal with its citations, legend, timings and the generation's record:
    ``usage`` (:func:`usage_json`), ``generator`` (``extractive`` or the LLM's name),
    ``conflict`` and ``conflicts`` (:func:`conflicts_json`), ``disagreements`` (quoted sources
    giving different values for one quantity: ``unit`` and ``claims`` of ``label`` and
    ``value``). With ``source`` the legend is
    rebuilt from the citations through it; without, the pipeline's legend is kept as is."""
    view = source or _same
    legend = (
        [legend_line(c, source=source) for c in answer.citations]
        if source is not None
        else list(answer.legend)
    )
    return {
        "question": answer.question,
        "answer": answer.text,
        "refusal": answer.refusal,
        "refused_by": answer.refused_by,
        "citations": [citation_json(c, source=view) for c in answer.citations],
        "legend": legend,
        "timings_ms": dict(answer.timings_ms),
        "usage": usage_json(answer),
        "generator": answer.generator,
        "conflict": answer.conflict,
        "conflicts": conflicts_json(answer),
        "disagreements": [d.to_json() for d in answer.disagreements],
    }
