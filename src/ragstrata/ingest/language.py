"""Per-document language identification with py3langid (Lui & Baldwin 2012, "langid.py: An
Off-the-shelf Language Identification Tool", ACL demo track).

The model ships inside the py3langid wheel: nothing is downloaded at run time.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ragstrata.optional import require

__all__ = ["UNDETERMINED", "detect_language"]

UNDETERMINED = "und"
"""ISO 639-2 code for "undetermined", returned for text too short or too ambiguous to call."""

_SAMPLE_CHARS = 20_000
_MIN_LETTERS = 20
_MIN_PROBABILITY = 0.5
_CODE_RE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]+>|https?://\S+", re.DOTALL)


@lru_cache(maxsize=1)
def _identifier() -> Any:
    langid = require("py3langid.langid", extra="ingest", package="py3langid")
    return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text``'s main language (``"es"``, ``"en"``...), or ``"und"``.

    Code spans, fenced code, HTML tags and URLs are removed first, then up to the first 20,000
    characters are classified. Returns ``"und"`` when fewer than 20 letters remain or the
    normalized probability of the best language is below 0.5. Deterministic.

    Raises:
        MissingDependencyError: py3langid is not installed (``pip install 'ragstrata[ingest]'``).
    """
    sample = _CODE_RE.sub(" ", text[: _SAMPLE_CHARS * 2])[:_SAMPLE_CHARS]
    if sum(ch.isalpha() for ch in sample) < _MIN_LETTERS:
        return UNDETERMINED
    language, probability = _identifier().classify(sample)
    return str(language) if float(probability) >= _MIN_PROBABILITY else UNDETERMINED
