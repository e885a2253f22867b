"""Cross-lingual query shift: move a query's embedding from its language to its passages'.

A multilingual embedding carries a language component on top of its meaning: Spanish and English
texts that say the same thing sit apart by a roughly constant offset, so a Spanish question's
vector stays nearer to generic English passages than to the one that answers it (a form of
hubness). Subtracting each language's mean removes that component (Libovický, Rosa & Fraser,
"On the Language Neutrality of Pre-trained Multilingual Representations", Findings of EMNLP
2020, language-mean centering). For one query:

    q' = normalize(q - mean_query[query language] + mean_query[passage language])

where ``mean_query[L]`` is the mean ``query:`` embedding of questions in language ``L``. The
means are estimated once per embedding model from *parallel* questions (the same headings of
the FastAPI documentation in Spanish and in English, training pages only), so their difference
is the language, not the topic. They ship as ``retrieve/language_offsets/<family>.json``
(written by ``python -m ragstrata.training.language_offsets``). The shift has no tuned
parameter: the whole offset is applied.

Pure: no store, no model; the shipped means are read lazily, once per process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragstrata.config.embedder import embedder_family
from ragstrata.errors import ConfigError

__all__ = ["OFFSET_FAMILIES", "LanguageOffsets", "language_offsets_for"]

FloatArray = NDArray[np.float32]

OFFSET_FAMILIES: frozenset[str] = frozenset({"e5"})
"""Embedder families (:func:`~ragstrata.config.embedder.embedder_family`) with shipped means.
Other embedders (MiniLM reads English only, ``openai`` is not calibrated) get no shift."""


@dataclass(frozen=True, slots=True)
class LanguageOffsets:
    """Mean unit ``query:`` embedding per language (ISO 639-1 → ``(dim,)`` float32).

    ``family``: the embedding model family they were computed with; ``source``: how (dataset,
    split, number of questions per language).
    """

    family: str
    means: Mapping[str, FloatArray]
    source: str = ""

    def __post_init__(self) -> None:
        dims = {vector.shape for vector in self.means.values()}
        if len(dims) > 1:
            raise ConfigError(f"language offsets {self.family!r}: vectors differ in shape {dims}")

    def shift(self, vector: FloatArray, *, source: str, target: str) -> FloatArray | None:
        """``vector`` (a query embedding, shape ``(dim,)``) moved from language ``source`` to
        ``target`` and renormalized to unit length; ``None`` when either language has no mean,
        the languages are equal, or the shapes differ (another model's vector)."""
        if source == target or source not in self.means or target not in self.means:
            return None
        offset = self.means[target] - self.means[source]
        if offset.shape != vector.shape:
            return None
        shifted = np.asarray(vector, dtype=np.float32) + offset
        norm = float(np.linalg.norm(shifted))
        if norm == 0.0:
            return None
        return (shifted / norm).astype(np.float32)

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "source": self.source,
            "means": {lang: [round(float(x), 7) for x in v] for lang, v in self.means.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LanguageOffsets:
        try:
            means = {
                str(lang): np.asarray(values, dtype=np.float32)
                for lang, values in dict(data["means"]).items()
            }
            return cls(family=str(data["family"]), means=means, source=str(data.get("source", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"malformed language offsets: {exc}") from exc


@cache
def _shipped(family: str) -> LanguageOffsets | None:
    path = resources.files("ragstrata.retrieve").joinpath("language_offsets", f"{family}.json")
    if not path.is_file():
        return None
    return LanguageOffsets.from_json(json.loads(path.read_text(encoding="utf-8")))


def language_offsets_for(embedder_name: str) -> LanguageOffsets | None:
    """The shipped means for an embedder (its ``name`` or config name), or ``None`` when none
    are shipped for its family (see :data:`OFFSET_FAMILIES`). Read once per process."""
    family = embedder_family(embedder_name)
    return _shipped(family) if family in OFFSET_FAMILIES else None
