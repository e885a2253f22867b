"""ragstrata: retrieval-augmented answers with citations over your documents.

Public names are imported lazily, so ``import ragstrata`` stays cheap and has no side effects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Answer", "Chunk", "Citation", "Document", "Hit", "RagConfig", "RagError", "Ragstrata"]

if TYPE_CHECKING:
    from ragstrata.config import RagConfig
    from ragstrata.errors import RagError
    from ragstrata.pipeline import Ragstrata
    from ragstrata.types import Answer, Chunk, Citation, Document, Hit

_LAZY = {
    "RagConfig": "ragstrata.config",
    "RagError": "ragstrata.errors",
    "Ragstrata": "ragstrata.pipeline",
    "Answer": "ragstrata.types",
    "Chunk": "ragstrata.types",
    "Citation": "ragstrata.types",
    "Document": "ragstrata.types",
    "Hit": "ragstrata.types",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragstrata' has no attribute {name!r}")
