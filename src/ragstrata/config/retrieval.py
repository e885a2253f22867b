"""Query-time ranking settings: hybrid retrieval (:class:`RetrievalConfig`) and cross-encoder
reranking (:class:`RerankConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragstrata.config.checks import (
    MAX_RESULTS,
    check_count,
    check_finite,
    check_range,
    check_threads,
)
from ragstrata.errors import ConfigError


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Hybrid retrieval: weighted Reciprocal Rank Fusion (Cormack et al., SIGIR 2009).

    ``top_k``: hits returned; ``candidates``: hits each retriever contributes to fusion;
    ``rrf_k``: RRF constant (60); ``dense_weight``/``bm25_weight``: per-retriever weights (>= 0,
    not both 0) for a query asked in the language of its passages (or when that cannot be
    told); ``cross_dense_weight``/``cross_bm25_weight``: the weights for a query asked in
    another language than the passages the dense arm finds (see
    :class:`ragstrata.retrieve.hybrid.HybridRetriever`), each replacing that weight for every
    query language. Unset (``None``), each weight is the one tuned for the index's embedder
    (across languages, per query language) on the training halves of SciFact, SQuAD-es and the
    FastAPI ES/EN pages (:data:`ragstrata.retrieve.weights.CALIBRATED_WEIGHTS`,
    docs/evaluation.md).
    ``max_chunks_per_doc``: before fusion, each retriever's candidates keep at most this many
    chunks of one document (0: no cap), so that one long document cannot fill a candidate
    list. ``language_shift``: the dense arm scores passages in another
    language than the query's with the query's vector moved into their language, so that a
    question finds an answer in either language (:mod:`ragstrata.retrieve.language_shift`;
    embedders with shipped offsets only: the e5 family).
    """

    top_k: int = 5
    candidates: int = 50
    rrf_k: int = 60
    dense_weight: float | None = None
    bm25_weight: float | None = None
    cross_dense_weight: float | None = None
    cross_bm25_weight: float | None = None
    max_chunks_per_doc: int = 8
    language_shift: bool = True

    def __post_init__(self) -> None:
        check_finite("retrieval", self)
        if self.max_chunks_per_doc < 0:
            raise ConfigError(
                f"retrieval.max_chunks_per_doc={self.max_chunks_per_doc} must be >= 0 (0: no cap)"
            )
        check_count("retrieval.top_k", self.top_k, 1, MAX_RESULTS)
        check_count("retrieval.candidates", self.candidates, 1, MAX_RESULTS)
        if self.rrf_k < 1:
            raise ConfigError(f"retrieval.rrf_k={self.rrf_k} must be >= 1")
        for prefix in ("", "cross_"):
            dense = getattr(self, f"{prefix}dense_weight")
            bm25 = getattr(self, f"{prefix}bm25_weight")
            for name, value in ((f"{prefix}dense_weight", dense), (f"{prefix}bm25_weight", bm25)):
                if value is not None:
                    check_range(f"retrieval.{name}", value, 0.0, 1e6)
            if dense == 0 and bm25 == 0:
                raise ConfigError(
                    f"retrieval.{prefix}dense_weight and retrieval.{prefix}bm25_weight are both 0"
                )


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Cross-encoder reranking after hybrid retrieval (see docs/evaluation.md for the numbers
    behind the default).

    ``enabled``: rerank in ``search``/``ask``; ``model``: a local folder holding a
    sentence-transformers CrossEncoder or its ONNX export (empty = the model shipped in
    ``ragstrata/rerank/models``; reranking is skipped with a warning when it is absent);
    ``candidates``: fused hits the cross-encoder scores; ``top_k``: hits kept after reranking;
    ``min_score``: the best hit's raw cross-encoder logit under which ``ask`` refuses (unset:
    no such check); ``batch_size``: pairs per forward pass; ``max_length``: tokens per pair
    (unset: the model's own setting, 256 for the shipped model); ``threads``: intra-op threads
    (0 = runtime default); ``retrieval_weight``: weight of the retrieval rank fused with the
    cross-encoder rank (0 = cross-encoder order only; unset: the model's setting).
    """

    enabled: bool = False
    model: str = ""
    candidates: int = 50
    top_k: int = 5
    min_score: float | None = None
    batch_size: int = 16
    max_length: int | None = None
    threads: int = 0
    retrieval_weight: float | None = None

    def __post_init__(self) -> None:
        check_finite("rerank", self)
        check_count("rerank.candidates", self.candidates, 1, MAX_RESULTS)
        check_count("rerank.top_k", self.top_k, 1, MAX_RESULTS)
        if self.batch_size < 1:
            raise ConfigError(f"rerank.batch_size={self.batch_size} must be >= 1")
        if self.max_length is not None and not 8 <= self.max_length <= 8192:
            raise ConfigError(f"rerank.max_length={self.max_length} must be in [8, 8192]")
        check_threads("rerank.threads", self.threads, zero="the runtime's default")
        if self.retrieval_weight is not None:
            check_range("rerank.retrieval_weight", self.retrieval_weight, 0.0, 1e6)

    @property
    def model_path(self) -> Path:
        """The model folder: ``model`` when set, else the shipped model's folder."""
        if self.model:
            return Path(self.model).expanduser()
        models = Path(__file__).resolve().parents[1] / "rerank" / "models"
        return models / "minilm-l6-squad-es-headings"
