"""Configuration (``ragstrata.config``): defaults, validation, file < env < overrides."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragstrata.config import (
    AnswerConfig,
    BM25Config,
    ChunkerConfig,
    EmbedderConfig,
    IngestConfig,
    LLMConfig,
    RagConfig,
    RerankConfig,
    RetrievalConfig,
    ServiceConfig,
    StoreConfig,
    default_home,
    resolve_embedder_name,
)
from ragstrata.config.checks import MAX_RESULTS, MAX_THREADS
from ragstrata.errors import ConfigError


def test_empty_home_and_index_variables_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # `RAGSTRATA_HOME= ragstrata stats` looked for an index at ./index while default_home()
    # (the service's data directory) read the same empty variable as unset
    config = RagConfig.load(env={"RAGSTRATA_HOME": "", "RAGSTRATA_INDEX": ""})
    assert config.home == Path(".ragstrata")
    assert config.index_path == Path(".ragstrata/index")
    monkeypatch.setenv("RAGSTRATA_HOME", "")
    assert default_home() == config.home


def test_defaults_are_valid(tmp_path: Path) -> None:
    config = RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    assert config == RagConfig(home=tmp_path)
    assert config.chunking == ChunkerConfig()
    assert config.bm25 == BM25Config(k1=1.2, b=0.75)
    assert config.retrieval.rrf_k == 60
    assert config.retrieval.dense_weight is None  # calibrated per embedder
    assert config.retrieval.cross_bm25_weight is None
    assert config.embedder.name == "auto"
    for kind in (
        ChunkerConfig,
        EmbedderConfig,
        BM25Config,
        RetrievalConfig,
        AnswerConfig,
        IngestConfig,
    ):
        kind()


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: ChunkerConfig(overlap_ratio=0.5), "chunking.overlap_ratio"),
        (lambda: ChunkerConfig(overlap_ratio=-0.01), "chunking.overlap_ratio"),
        (lambda: ChunkerConfig(max_tokens=8), "chunking.max_tokens"),
        (lambda: BM25Config(k1=-1), "bm25.k1"),
        (lambda: BM25Config(b=1.5), "bm25.b"),
        (lambda: RetrievalConfig(top_k=0), "retrieval.top_k"),
        (lambda: RetrievalConfig(rrf_k=0), "retrieval.rrf_k"),
        (lambda: RetrievalConfig(dense_weight=-0.1), "retrieval.dense_weight"),
        (lambda: EmbedderConfig(name="bert-xxl"), "embedder.name"),
        (lambda: RetrievalConfig(dense_weight=0, bm25_weight=0), "retrieval.dense_weight"),
        (lambda: AnswerConfig(context_tokens=10), "answer.context_tokens"),
        (lambda: IngestConfig(max_file_bytes=0), "ingest.max_file_bytes"),
        (lambda: IngestConfig(follow_symlinks="yes"), "ingest.follow_symlinks"),  # type: ignore[arg-type]
        (lambda: IngestConfig(max_worker_memory_mb=100), "ingest.max_worker_memory_mb"),
        (lambda: IngestConfig(parse_timeout_s=0), "ingest.parse_timeout_s"),
    ],
)
def test_invalid_value_is_config_error_naming_field(build, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()
    assert field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_boundary_values_are_accepted() -> None:
    ChunkerConfig(overlap_ratio=0.0, max_tokens=16)
    ChunkerConfig(overlap_ratio=0.49)
    BM25Config(k1=0.0, b=0.0)
    BM25Config(k1=3.0, b=1.0)
    RetrievalConfig(top_k=1, dense_weight=0.0, bm25_weight=1.0)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"chunking.overlap_ratio": 0.5}, "chunking.overlap_ratio"),
        ({"chunking.max_tokens": 8}, "chunking.max_tokens"),
        ({"bm25.k1": -1}, "bm25.k1"),
        ({"bm25.b": 1.5}, "bm25.b"),
        ({"retrieval.top_k": 0}, "retrieval.top_k"),
        ({"embedder.name": "nope"}, "embedder.name"),
        ({"retrieval.dense_weight": 0, "retrieval.bm25_weight": 0}, "bm25_weight"),
    ],
)
def test_invalid_value_through_load(tmp_path: Path, overrides, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)}, overrides=overrides)


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    config_file = write_toml(
        tmp_path / "custom.toml",
        "[retrieval]\ntop_k = 7\ncandidates = 30\nrrf_k = 20\n"
        '[bm25]\nk1 = 0.9\n[embedder]\nname = "e5"\n',
    )
    env = {
        "RAGSTRATA_HOME": str(tmp_path),
        "RAGSTRATA_RETRIEVAL_TOP_K": "9",
        "RAGSTRATA_RETRIEVAL_CANDIDATES": "40",
        "RAGSTRATA_BM25_B": "0.5",
        "RAGSTRATA_CHUNKING_MAX_TOKENS": "256",
    }
    config = RagConfig.load(
        config_file=config_file, env=env, overrides={"retrieval.candidates": 99}
    )
    assert config.retrieval.rrf_k == 20  # file only
    assert config.bm25.k1 == 0.9  # file only
    assert config.embedder.name == "e5"  # file only
    assert config.retrieval.top_k == 9  # env beats file
    assert config.bm25.b == 0.5  # env only, parsed as float
    assert config.chunking.max_tokens == 256  # env only, parsed as int
    assert config.retrieval.candidates == 99  # override beats env and file
    assert config.answer == AnswerConfig()  # untouched section keeps defaults


def test_config_toml_in_home_is_read(tmp_path: Path) -> None:
    write_toml(tmp_path / "config.toml", "[answer]\nmax_sentences = 5\n")
    config = RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    assert config.answer.max_sentences == 5


def test_env_value_of_wrong_type_is_config_error(tmp_path: Path) -> None:
    env = {"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_RETRIEVAL_TOP_K": "five"}
    with pytest.raises(ConfigError, match=r"retrieval\.top_k"):
        RagConfig.load(env=env)


def test_unrelated_env_vars_are_ignored(tmp_path: Path) -> None:
    env = {"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_REQUIRE_SHARED": "1", "HOME": "/x"}
    assert RagConfig.load(env=env) == RagConfig(home=tmp_path)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[retreival]\ntop_k = 3\n", "'retreival'"),
        ("[retrieval]\ntopk = 3\n", "retrieval.topk"),
        ("top_k = 3\n", "[top_k]"),
    ],
)
def test_unknown_section_or_key_in_file(tmp_path: Path, text: str, named: str) -> None:
    config_file = write_toml(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError) as info:
        RagConfig.load(config_file=config_file, env={"RAGSTRATA_HOME": str(tmp_path)})
    assert named in str(info.value)


def test_unknown_key_in_env_or_overrides(tmp_path: Path) -> None:
    home = {"RAGSTRATA_HOME": str(tmp_path)}
    with pytest.raises(ConfigError, match=r"retrieval\.topk"):
        RagConfig.load(env={**home, "RAGSTRATA_RETRIEVAL_TOPK": "3"})
    with pytest.raises(ConfigError, match="nosuch"):
        RagConfig.load(env=home, overrides={"nosuch.top_k": 3})
    with pytest.raises(ConfigError, match=r"bm25\.k3"):
        RagConfig.load(env=home, overrides={"bm25.k3": 1.0})


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    home = {"RAGSTRATA_HOME": str(tmp_path)}
    bad = write_toml(tmp_path / "broken.toml", "[retrieval\n")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        RagConfig.load(config_file=bad, env=home)
    with pytest.raises(ConfigError, match=r"missing\.toml' does not exist"):
        RagConfig.load(config_file=tmp_path / "missing.toml", env=home)
    (tmp_path / "conf.d").mkdir()
    with pytest.raises(ConfigError, match=r"conf\.d' is a folder, not a TOML file"):
        RagConfig.load(config_file=tmp_path / "conf.d", env=home)


def test_ragstrata_home_sets_home_and_index_path(tmp_path: Path) -> None:
    home = tmp_path / "rshome"
    config = RagConfig.load(env={"RAGSTRATA_HOME": str(home)})
    assert config.home == home
    assert config.index_path == home / "index"


def test_ragstrata_index_overrides_index_path(tmp_path: Path) -> None:
    env = {"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_INDEX": str(tmp_path / "elsewhere")}
    config = RagConfig.load(env=env)
    assert config.index_path == tmp_path / "elsewhere"
    assert config.with_index(tmp_path / "third").index_path == tmp_path / "third"
    assert config.with_index(None) is config


def test_default_home_without_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGSTRATA_HOME", raising=False)
    assert RagConfig().home == Path(".ragstrata")
    assert RagConfig.load(env={}).index_path == Path(".ragstrata") / "index"
    monkeypatch.setenv("RAGSTRATA_HOME", "/srv/rag")
    assert RagConfig().index_path == Path("/srv/rag/index")
    assert RagConfig.load().home == Path("/srv/rag")


def test_configs_are_frozen() -> None:
    config = RetrievalConfig()
    with pytest.raises(AttributeError):
        config.top_k = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "toml",
    [
        "[retrieval]\ntop_k = 3.7\n",
        "[retrieval]\ntop_k = true\n",
        "[retrieval]\ndense_weight = true\n",
        '[retrieval]\ndense_weight = "x"\n',
    ],
)
def test_toml_values_of_the_wrong_type_fail_at_load(tmp_path: Path, toml: str) -> None:
    (tmp_path / "config.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})


def test_toml_int_for_a_float_setting_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[retrieval]\ndense_weight = 1\n", encoding="utf-8")
    config = RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    assert config.retrieval.dense_weight == 1.0


@pytest.mark.parametrize(
    ("toml", "env"),
    [
        ("[answer]\nmin_dense_score = 0.30\n", {}),
        ("", {"RAGSTRATA_ANSWER_MIN_DENSE_SCORE": "0.3"}),
    ],
)
def test_the_removed_min_dense_score_names_its_replacement(
    tmp_path: Path, toml: str, env: dict[str, str]
) -> None:
    (tmp_path / "config.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"answer\.min_dense_score=0\.3 was removed.*llm\.min_answerable.*llm\.min_evidence",
    ):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path), **env})
    unset = RagConfig.load(
        env={"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_ANSWER_MIN_DENSE_SCORE": ""}
    )
    assert unset.answer.min_dense_score is None


def test_follow_symlinks_defaults_to_inside_and_reads_env_and_toml(tmp_path: Path) -> None:
    assert RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)}).ingest.follow_symlinks == "inside"
    env = {"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_INGEST_FOLLOW_SYMLINKS": "never"}
    assert RagConfig.load(env=env).ingest.follow_symlinks == "never"
    (tmp_path / "config.toml").write_text('[ingest]\nfollow_symlinks = "all"\n')
    assert RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)}).ingest.follow_symlinks == "all"
    with pytest.raises(ConfigError, match=r"ingest\.follow_symlinks"):
        RagConfig.load(
            env={"RAGSTRATA_HOME": str(tmp_path)}, overrides={"ingest.follow_symlinks": 1}
        )


@pytest.mark.parametrize(
    ("name", "built_with", "expected"),
    [
        ("auto", None, "e5-onnx"),
        ("auto", "minilm-onnx:all-MiniLM-L6-v2", "minilm-onnx"),
        ("auto", "e5:multilingual-e5-small-q4", "e5"),
        ("auto", "e5-onnx-fp32:multilingual-e5-small", "e5-onnx-fp32"),
        ("minilm-onnx", "e5-onnx:multilingual-e5-small", "minilm-onnx"),  # explicit wins
        ("e5-onnx", None, "e5-onnx"),
    ],
)
def test_resolve_embedder_name(name: str, built_with: str | None, expected: str) -> None:
    assert resolve_embedder_name(name, built_with) == expected


@pytest.mark.parametrize("built_with", ["openai:text-embedding-3-small", "bge-m3:xyz", "auto:x"])
def test_auto_refuses_an_index_it_cannot_rebuild(built_with: str) -> None:
    with pytest.raises(ConfigError, match=r"embedder\.name"):
        resolve_embedder_name("auto", built_with)


def test_ingest_limits_come_from_toml_and_environment(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text("[ingest]\nmax_worker_memory_mb = 1024\nparse_timeout_s = 60\n")
    cfg = RagConfig.load(config_file=config_file, env={})
    assert cfg.ingest.max_worker_memory_mb == 1024 and cfg.ingest.parse_timeout_s == 60.0
    env = {"RAGSTRATA_INGEST_MAX_WORKER_MEMORY_MB": "0"}
    assert RagConfig.load(config_file=config_file, env=env).ingest.max_worker_memory_mb == 0
    assert RagConfig.load(env={}).ingest.max_worker_memory_mb == 2048


def test_with_index_accepts_a_path_as_text(tmp_path: Path) -> None:
    cfg = RagConfig().with_index(str(tmp_path / "idx"))
    assert cfg.index_dir == tmp_path / "idx" and isinstance(cfg.index_dir, Path)


def test_embedder_family_groups_the_runtimes_of_one_model() -> None:
    from ragstrata.config.embedder import EMBEDDERS, embedder_family

    assert {n: embedder_family(n) for n in EMBEDDERS} == {
        "auto": None,
        "minilm": "minilm",
        "minilm-onnx": "minilm",
        "minilm-onnx-fp32": "minilm",
        "e5": "e5",
        "e5-onnx": "e5",
        "e5-onnx-q4": "e5",
        "e5-onnx-fp32": "e5",
        "openai": None,
    }
    # manifest names carry the model after ":"
    assert embedder_family("e5-onnx:multilingual-e5-small") == "e5"
    assert embedder_family("minilm-onnx:all-MiniLM-L6-v2") == "minilm"
    assert embedder_family("openai:text-embedding-3-small") is None
    assert embedder_family("unknown") is None


def test_a_quoted_number_in_the_file_is_refused_and_a_bad_variable_is_named(
    tmp_path: Path,
) -> None:
    # a new user's run (2026-12-03): top_k = "5" was taken silently, and a bad variable's
    # error named the setting but not the variable to fix
    write_toml(tmp_path / "config.toml", '[retrieval]\ntop_k = "5"\n')
    with pytest.raises(ConfigError, match=r"retrieval\.top_k='5' is text; write a number"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    write_toml(tmp_path / "config.toml", '[retrieval]\nlanguage_shift = "no"\n')
    with pytest.raises(ConfigError, match="write true or false without quotes"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    (tmp_path / "config.toml").unlink()
    with pytest.raises(
        ConfigError, match=r"RAGSTRATA_RETRIEVAL_TOP_K \(retrieval\.top_k\)='abc' is not a valid"
    ):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_RETRIEVAL_TOP_K": "abc"})
    with pytest.raises(ConfigError, match=r"llm\.reader\)='maybe' is not a valid bool; set true"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_LLM_READER": "maybe"})
    ok = RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path), "RAGSTRATA_RETRIEVAL_TOP_K": "7"})
    assert ok.retrieval.top_k == 7


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: EmbedderConfig(threads=MAX_THREADS + 1), "embedder.threads"),
        (lambda: RerankConfig(threads=100_000), "rerank.threads"),
        (lambda: LLMConfig(threads=MAX_THREADS + 1), "llm.threads"),
        (lambda: IngestConfig(workers=MAX_THREADS + 1), "ingest.workers"),
        (lambda: ServiceConfig(ingest_workers=MAX_THREADS + 1), "service.ingest_workers"),
        (lambda: RetrievalConfig(top_k=MAX_RESULTS + 1), "retrieval.top_k"),
        (lambda: RetrievalConfig(candidates=MAX_RESULTS + 1), "retrieval.candidates"),
        (lambda: RerankConfig(candidates=MAX_RESULTS + 1), "rerank.candidates"),
        (lambda: RerankConfig(top_k=MAX_RESULTS + 1), "rerank.top_k"),
    ],
)
def test_counts_that_would_take_the_machine_have_an_upper_bound(build, field: str) -> None:
    """A new user's `RAGSTRATA_EMBEDDER_THREADS=100000` made 21,000 threads and 17 GB before
    doing anything; these are refused when the config is built, with the bound."""
    with pytest.raises(
        ConfigError, match=rf"{field.replace('.', '[.]')}=\d+ must be in \[-?\d+, \d+\]"
    ):
        build()


def test_the_upper_bounds_themselves_are_accepted() -> None:
    EmbedderConfig(threads=MAX_THREADS)
    IngestConfig(workers=MAX_THREADS)
    RetrievalConfig(top_k=MAX_RESULTS, candidates=MAX_RESULTS)


@pytest.mark.parametrize("where", ["toml", "env"])
def test_an_integer_past_native_range_is_a_config_error(tmp_path: Path, where: str) -> None:
    """`top_k = 99999999999999999999` passed and ended in an OverflowError in the store."""
    huge = "99999999999999999999"
    env = {"RAGSTRATA_HOME": str(tmp_path)}
    if where == "env":
        env["RAGSTRATA_RETRIEVAL_TOP_K"] = huge
        load: dict[str, Path] = {}
    else:
        load = {"config_file": write_toml(tmp_path / "c.toml", f"[retrieval]\ntop_k = {huge}\n")}
    with pytest.raises(ConfigError, match=r"retrieval\.top_k\)?=99999999999999999999 is too large"):
        RagConfig.load(env=env, **load)
    env["RAGSTRATA_RETRIEVAL_TOP_K"] = str(-(2**40))
    with pytest.raises(ConfigError, match="is too large"):
        RagConfig.load(env=env)


def test_a_range_error_names_where_the_value_was_set(tmp_path: Path) -> None:
    """A new user's `RAGSTRATA_RETRIEVAL_TOP_K=0` said `retrieval.top_k=0 must be in [1, 10000]`
    without naming the variable, and a 0 in `$RAGSTRATA_HOME/config.toml` without naming the
    file: the message now says which of the two set it."""
    home = {"RAGSTRATA_HOME": str(tmp_path)}
    with pytest.raises(
        ConfigError, match=r"must be in \[1, 10000\] \(set by RAGSTRATA_RETRIEVAL_TOP"
    ):
        RagConfig.load(env={**home, "RAGSTRATA_RETRIEVAL_TOP_K": "0"})
    toml = write_toml(tmp_path / "config.toml", "[retrieval]\nrrf_k = 0\ntop_k = 2.5\n")
    with pytest.raises(ConfigError, match=r"top_k=2\.5 must be an integer \(set in config file '"):
        RagConfig.load(env=home)
    write_toml(toml, "[retrieval]\nrrf_k = 0\n")
    with pytest.raises(ConfigError) as raised:
        RagConfig.load(env=home)
    assert str(raised.value).endswith(f"rrf_k=0 must be >= 1 (set in config file {str(toml)!r})")
    # a variable's own parse error names it once; an override (a command-line option) adds
    # nothing, and the variable that it replaced is not blamed
    with pytest.raises(ConfigError) as raised:
        RagConfig.load(env={**home, "RAGSTRATA_RETRIEVAL_RRF_K": "x"})
    assert str(raised.value).count("RAGSTRATA_RETRIEVAL_RRF_K") == 1
    with pytest.raises(ConfigError) as raised:
        RagConfig.load(env=home, overrides={"retrieval.rrf_k": 0})
    assert "(set" not in str(raised.value)


@pytest.mark.parametrize(
    "setting", ["ingest.parse_timeout_s", "store.timeout_s", "rerank.min_score"]
)
@pytest.mark.parametrize("text", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_config_errors(tmp_path: Path, setting: str, text: str) -> None:
    """Review 45: TOML and float() read nan and inf, which passed every range check
    (parse_timeout_s = nan skipped every file; store.timeout_s = inf crashed)."""
    section, name = setting.split(".")
    (tmp_path / "config.toml").write_text(f"[{section}]\n{name} = {text}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{setting}.*finite"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    variable = f"RAGSTRATA_{section.upper()}_{name.upper()}"
    with pytest.raises(ConfigError, match=f"{variable}.*finite"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path / "none"), variable: text})


@pytest.mark.parametrize("text", ["5", '["a"]'])
def test_a_path_setting_of_another_type_is_a_config_error(tmp_path: Path, text: str) -> None:
    """Review 45: ``service.data_dir = 5`` passed and crashed later with a TypeError."""
    (tmp_path / "config.toml").write_text(f"[service]\ndata_dir = {text}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"service\.data_dir.*must be a string \(a path\)"):
        RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text('[service]\ndata_dir = "srv"\n', encoding="utf-8")
    assert RagConfig.load(env={"RAGSTRATA_HOME": str(tmp_path)}).service.data_dir == Path("srv")


_CONFIGS = (
    AnswerConfig,
    BM25Config,
    ChunkerConfig,
    EmbedderConfig,
    IngestConfig,
    LLMConfig,
    RerankConfig,
    RetrievalConfig,
    ServiceConfig,
    StoreConfig,
)
_FLOAT_FIELDS = [
    (cls, field.name)
    for cls in _CONFIGS
    for field in dataclasses.fields(cls)
    if str(field.type).startswith("float")
]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(("cls", "name"), _FLOAT_FIELDS, ids=lambda x: getattr(x, "__name__", x))
def test_a_config_built_in_python_refuses_nan_and_inf(cls: type, name: str, value: float) -> None:
    """Review 46: only the loader checked for nan and inf; ``IngestConfig(parse_timeout_s=nan)``
    from Python was accepted and skipped every file."""
    with pytest.raises(ConfigError, match=rf"\.{name}=.* must be a finite number"):
        cls(**{name: value})


def test_every_config_has_float_settings_to_check() -> None:
    assert len(_FLOAT_FIELDS) >= 20, _FLOAT_FIELDS


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        *[("a.b", True), ("a..b", True), ("ragstrata.acme.docs", True), ("x", True)],
        *[(".", False), ("a.b.", False), (".a", False), ("a b", False), ("", False)],
    ],
)
def test_store_collection_names_may_hold_inner_dots_only(name: str, ok: bool) -> None:
    """A service joins ``<base>.<tenant>.<name>`` (review 45); a name of dots, or one that
    starts or ends with a dot, is no Qdrant collection name."""
    if ok:
        assert StoreConfig(collection=name).collection == name
    else:
        with pytest.raises(ConfigError, match=r"store\.collection"):
            StoreConfig(collection=name)
