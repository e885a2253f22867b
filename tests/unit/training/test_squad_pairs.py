"""Training data without SciFact: SQuAD-es training-article groups over a real index, the
held-out dev paragraphs, and the parallel docs' training pages (the held-out pages never read)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.errors import ConfigError
from ragstrata.eval.datasets import EvalDataset, load_squad
from ragstrata.eval.parallel_docs import load_parallel_docs
from ragstrata.eval.runner import dataset_documents
from ragstrata.pipeline import Ragstrata
from ragstrata.testing.fakes import HashEmbedder
from ragstrata.training.pairs import (
    check_plain_folder,
    parallel_training_files,
    parallel_training_pages,
    squad_dev_split,
    squad_groups,
)
from ragstrata.training.reranker import TrainSettings, run_training

TOPICS = {
    "Volcanes": ["lava", "ceniza", "magma"],
    "Ríos": ["caudal", "delta", "cuenca"],
    "Bosques": ["roble", "musgo", "helecho"],
    "Desiertos": ["duna", "oasis", "cactus"],
}


def _squad_file(tmp_path: Path) -> Path:
    """Four articles of three paragraphs; each paragraph shares its article's topic words, so
    retrieval finds same-article neighbours; two questions a paragraph."""
    data = []
    for title, words in TOPICS.items():
        paragraphs = []
        for pi, word in enumerate(words):
            answer = f"{word}{pi}x"
            context = (
                f"{title} y {' '.join(words)} aparecen juntos. El dato clave de este párrafo "
                f"es {answer}, que describe el {word} con detalle."
            )
            qas = [
                {
                    "id": f"{title}-{pi}-{qi}",
                    "question": f"¿Qué describe el {word} en {title.lower()} {qi}?",
                    "answers": [{"text": answer, "answer_start": context.index(answer)}],
                }
                for qi in range(2)
            ]
            paragraphs.append({"context": context, "qas": qas})
        data.append({"title": title, "paragraphs": paragraphs})
    path = tmp_path / "tiny-v1.1-es.json"
    path.write_text(json.dumps({"data": data}, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def squad(tmp_path: Path) -> EvalDataset:
    return load_squad(_squad_file(tmp_path), split="train")


@pytest.fixture
def engine(tmp_path: Path, squad: EvalDataset) -> Iterator[Ragstrata]:
    eng = Ragstrata(RagConfig(home=tmp_path / "home"), embedder=HashEmbedder())
    eng.add_documents(dataset_documents(squad))
    yield eng
    eng.close()


def test_squad_groups_positive_holds_the_answer_negatives_are_other_paragraphs(
    engine: Ragstrata, squad: EvalDataset
) -> None:
    qids = sorted(squad.queries)
    assert len(qids) == 12  # the training half only: 2 of 4 articles
    groups = squad_groups(engine, squad, qids, negatives=2, rng=random.Random(0))
    assert len(groups) == len(qids)
    for qid, group in zip(qids, groups, strict=True):
        (gold,) = squad.qrels[qid]
        assert group.query == squad.queries[qid] and group.source == "squad-es-train"
        assert len(group.passages) == 3
        assert squad.answers[qid][0] in group.passages[0]
        assert all(squad.corpus[gold].text not in p for p in group.passages[1:])
        # the test half's articles (Bosques, Desiertos) are indexed but never a passage
        assert not any(p.startswith(("Bosques", "Desiertos")) for p in group.passages)
        # the hard case is in: at least one negative from the gold paragraph's own article
        title = squad.corpus[gold].title
        same = sum(p.startswith(title) for p in group.passages[1:])
        assert group.neighbour_negatives == same >= 1


def test_neighbours_zero_and_too_few_candidates(engine: Ragstrata, squad: EvalDataset) -> None:
    qids = sorted(squad.queries)[:4]
    plain = squad_groups(engine, squad, qids, negatives=2, neighbours=0, rng=random.Random(0))
    assert len(plain) == 4
    # 6 paragraphs in the training articles: 5 candidates at most
    assert len(squad_groups(engine, squad, qids, negatives=5, rng=random.Random(0))) == 4
    assert squad_groups(engine, squad, qids, negatives=6, rng=random.Random(0)) == []


def test_dev_split_holds_out_whole_paragraphs(squad: EvalDataset) -> None:
    train, dev = squad_dev_split(squad, 2, seed=3)
    assert len(dev) == 2 and not set(train) & set(dev)
    dev_docs = {d for q in dev for d in squad.qrels[q]}
    assert len(dev_docs) == 2
    assert not dev_docs & {d for q in train for d in squad.qrels[q]}
    assert len(train) == len(squad.queries) - 2 * 2  # both questions of each dev paragraph
    assert squad_dev_split(squad, 2, seed=3) == (train, dev)


def test_run_training_refuses_the_test_half_and_parallel_language_folders(
    tmp_path: Path, engine: Ragstrata
) -> None:
    test_half = load_squad(_squad_file(tmp_path), split="test")
    settings = TrainSettings(max_steps=1)
    with pytest.raises(ConfigError, match="training half"):
        run_training(engine, test_half, [], tmp_path / "out", tmp_path / "work", settings)
    docs = _parallel(tmp_path / "par")
    with pytest.raises(ConfigError, match="--parallel-docs"):
        run_training(
            engine,
            load_squad(_squad_file(tmp_path), split="train"),
            [docs / "es"],
            tmp_path / "out",
            tmp_path / "work",
            settings,
        )
    assert not (tmp_path / "out").exists()


def _parallel(root: Path) -> Path:
    pairs = [
        ("Instalar el paquete", "Install the package"),
        ("Configurar la base de datos", "Configure the database"),
        ("Probar la aplicación", "Test the application"),
        ("Desplegar con contenedores", "Deploy with containers"),
        ("Manejar los errores", "Handle the errors"),
        ("Leer los parámetros", "Read the parameters"),
        ("Validar los datos recibidos", "Validate the received data"),
        ("Servir archivos estáticos", "Serve static files"),
    ]
    for n, (es, en) in enumerate(pairs):
        for lang, title in (("es", es), ("en", en)):
            page = root / lang / f"section{n % 3}" / f"page{n}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(f"# {title}\n\nText {n} {lang}.\n", encoding="utf-8")
    return root


def test_parallel_training_pages_never_include_a_held_out_page(tmp_path: Path) -> None:
    root = _parallel(tmp_path / "par")
    pages = parallel_training_pages(root)
    held_out = {
        page
        for d in ("es-en:test", "en-es:test")
        for judged in load_parallel_docs(root, direction=d).qrels.values()
        for page in judged
    }
    assert pages and held_out and not set(pages) & held_out
    assert len(pages) + len(held_out) == 8
    files = parallel_training_files(root)
    assert sorted(f.relative_to(root).as_posix() for f in files) == sorted(
        f"{lang}/{p}" for lang in ("en", "es") for p in pages
    )


def test_plain_folder_check(tmp_path: Path) -> None:
    root = _parallel(tmp_path / "par")
    for folder in (root, root / "es", root / "en"):
        with pytest.raises(ConfigError, match="--parallel-docs"):
            check_plain_folder(folder)
    check_plain_folder(root / "es" / "section0")  # a plain subfolder is not a language folder
    (tmp_path / "plain").mkdir()
    check_plain_folder(tmp_path / "plain")


def test_fastapi_training_pages_exclude_the_cross_lingual_test_pages(
    shared_corpus: Callable[[str], Path],
) -> None:
    root = shared_corpus("fastapi-docs-md")
    pages = set(parallel_training_pages(root))
    trained: set[str] = set()
    for direction in ("es-en", "en-es"):
        test = load_parallel_docs(root, direction=f"{direction}:test")
        train = load_parallel_docs(root, direction=f"{direction}:train")
        assert not pages & {p for judged in test.qrels.values() for p in judged}
        trained |= {p for judged in train.qrels.values() for p in judged}
    assert len(pages) > 20 and pages <= trained
