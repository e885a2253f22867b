"""Evaluation: ranking metrics (pure functions) and dataset readers.

Importing this package is cheap: only the standard library is loaded (numpy is imported by
:func:`paired_randomization_test` on first call, pyyaml by :func:`load_golden` for YAML).
"""

from ragstrata.eval.datasets import (
    SQUAD_SPLITS,
    CorpusDoc,
    EvalDataset,
    GoldenQuery,
    article_split,
    load_beir,
    load_golden,
    load_squad,
)
from ragstrata.eval.metrics import (
    METRIC_NAMES,
    EvalResult,
    Qrels,
    Run,
    average_precision_at_k,
    evaluate,
    hit_rate_at_k,
    ndcg_at_k,
    paired_randomization_test,
    parse_metric,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
)

__all__ = [
    "METRIC_NAMES",
    "SQUAD_SPLITS",
    "CorpusDoc",
    "EvalDataset",
    "EvalResult",
    "GoldenQuery",
    "Qrels",
    "Run",
    "article_split",
    "average_precision_at_k",
    "evaluate",
    "hit_rate_at_k",
    "load_beir",
    "load_golden",
    "load_squad",
    "ndcg_at_k",
    "paired_randomization_test",
    "parse_metric",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
]
