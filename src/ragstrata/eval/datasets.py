"""Readers for evaluation datasets: BEIR folders, SQuAD JSON files and small golden-query files.

Every reader validates its input and raises :class:`~ragstrata.errors.ConfigError` (a
``ValueError``) naming the file, the line or entry, and what to fix; underlying ``OSError`` /
JSON / YAML errors are chained with ``from``.

Formats:

* BEIR (Thakur et al., NeurIPS 2021 datasets track): ``corpus.jsonl[.gz]`` with ``_id``,
  ``title``, ``text``; ``queries.jsonl[.gz]`` with ``_id``, ``text``; ``qrels/{split}.tsv``
  with the header ``query-id<TAB>corpus-id<TAB>score``.
* SQuAD v1.1 / v2.0 (Rajpurkar et al. 2016, 2018): ``{"data": [{"title", "paragraphs":
  [{"context", "qas": [{"id", "question", "answers"?: [{"text"}], "is_impossible"?}]}]}]}``,
  plain or gzip. Its
  questions can be split by article into a ``"train"`` half (tune there) and a ``"test"`` half
  (report there), see :func:`article_split`.
* Golden queries: JSONL (one object a line) or YAML (a list of mappings) with keys
  ``query``, ``expected`` and optionally ``id`` and ``answers`` (expected answer strings).
* Parallel Markdown docs (the same pages in two languages) are read by
  :mod:`ragstrata.eval.parallel_docs`.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from ragstrata.errors import ConfigError
from ragstrata.optional import require

__all__ = [
    "SQUAD_SPLITS",
    "ArticleHalf",
    "CorpusDoc",
    "CorpusFormat",
    "EvalDataset",
    "GoldenQuery",
    "article_split",
    "load_beir",
    "load_golden",
    "load_squad",
]

logger = logging.getLogger(__name__)

CorpusFormat = Literal["text", "markdown"]
"""How an evaluation document's ``text`` is parsed when it is indexed: ``"text"`` (plain
paragraphs under a ``# title`` heading) or ``"markdown"`` (the Markdown parser of a real ingest,
:func:`ragstrata.ingest.loader.document_from_text`)."""

ArticleHalf = Literal["train", "test"]

SQUAD_SPLITS = ("all", "train", "test")
"""Splits :func:`load_squad` accepts: every question, or one half of the articles."""

_K = TypeVar("_K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class CorpusDoc:
    """One document of an evaluation corpus (``title`` is ``""`` when the source has none).

    ``format`` says how ``text`` is parsed when indexed (see :data:`CorpusFormat`).
    """

    doc_id: str
    title: str
    text: str
    format: CorpusFormat = "text"


@dataclass(frozen=True, slots=True)
class EvalDataset:
    """A retrieval test collection.

    Attributes:
        name: a label such as ``"beir-scifact/test"`` or ``"dev-v2.0-es_small"``.
        corpus: doc id -> document.
        queries: query id -> query text; exactly the queries that have qrels.
        qrels: query id -> doc id -> graded relevance (``> 0`` means relevant).
        unanswerable: query id -> question of the questions that have no answer in the corpus
            (SQuAD v2.0 ``is_impossible``); they are not in ``queries``/``qrels``. Empty for
            BEIR and SQuAD v1.1.
        corpus_name: a label of the corpus alone, the same for every split that shares it
            (``"dev-v1.1-es_small"`` for all three SQuAD splits): the default index folder and
            the indexed documents' sources are named after it, so the splits share one index.
            Left empty, it is ``name``.
        answers: query id -> the gold answer strings of the query (SQuAD ``answers[].text``,
            repeats dropped, file order); empty for BEIR and for questions without answers.
    """

    name: str
    corpus: dict[str, CorpusDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    unanswerable: dict[str, str] = field(default_factory=dict)
    corpus_name: str = ""
    answers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.corpus_name:
            object.__setattr__(self, "corpus_name", self.name)


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    """A hand-written query and what a good answer must cite.

    ``expected`` items are source paths (or a suffix of one, e.g. ``"docs/install.md"``) or
    doc ids; matching them against results is the runner's job. ``answers``: strings a correct
    answer contains (any one of them; scored by :mod:`ragstrata.eval.answers`), empty when the
    entry gives none.
    """

    query_id: str
    query: str
    expected: tuple[str, ...]
    answers: tuple[str, ...] = ()


# --------------------------------------------------------------------------- helpers


def _read_text(path: Path) -> str:
    """The UTF-8 text of ``path``, gunzipped when its name ends in ``.gz``."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                return fh.read()
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: file not found") from exc
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc})") from exc


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON Lines file."""
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise ConfigError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def _str_field(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(
            f"{where}: field {key!r} must be a string, got {value!r}"
            + ("" if key in obj else " (missing)")
        )
    return str(value)


def _first_existing(folder: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise ConfigError(f"{folder}: none of {', '.join(names)} found; is this a BEIR dataset folder?")


# --------------------------------------------------------------------------- BEIR


def _read_beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    lines = _read_text(path).splitlines()
    if not lines:
        raise ConfigError(
            f"{path}: empty qrels file; expected a 'query-id\tcorpus-id\tscore' header"
        )
    header = lines[0].split("\t")
    if len(header) != 3 or header[2].strip().lstrip("-").isdigit():
        raise ConfigError(
            f"{path}:1: expected the header 'query-id<TAB>corpus-id<TAB>score', got {lines[0]!r}"
        )
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise ConfigError(
                f"{path}:{lineno}: expected 3 tab-separated fields "
                f"(query-id, corpus-id, score), got {line!r}"
            )
        qid, doc_id, score_text = (f.strip() for f in fields)
        try:
            score = int(score_text)
        except ValueError as exc:
            raise ConfigError(f"{path}:{lineno}: score {score_text!r} is not an integer") from exc
        qrels.setdefault(qid, {})[doc_id] = score
    return qrels


def load_beir(path: Path, *, split: str = "test") -> EvalDataset:
    """Load a BEIR-format dataset folder for one qrels split.

    Reads ``corpus.jsonl`` (or ``corpus.jsonl.gz``), ``queries.jsonl`` (or ``.gz``) and
    ``qrels/{split}.tsv``. Only the queries that appear in that split's qrels are kept; qrels
    grades are kept as written (including ``0``). Qrels that point to a doc id missing from
    the corpus are kept (they make full recall unreachable, as in BEIR) and logged as a
    warning. ``name`` is ``"{folder name}/{split}"``.

    Raises:
        ConfigError: the folder, a file or the split is missing (the message lists the
            splits found), a line is malformed (names the file and line), a doc or query id
            repeats, or a qrels query has no text in ``queries.jsonl``.
    """
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a directory; pass the BEIR dataset folder")
    qrels_path = path / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        found = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
        raise ConfigError(
            f"{qrels_path}: no qrels for split {split!r}; "
            + (f"available splits: {', '.join(found)}" if found else "the qrels folder is empty")
        )
    corpus_path = _first_existing(path, ("corpus.jsonl", "corpus.jsonl.gz"))
    queries_path = _first_existing(path, ("queries.jsonl", "queries.jsonl.gz"))

    qrels = _read_beir_qrels(qrels_path)

    queries: dict[str, str] = {}
    for lineno, obj in _iter_jsonl(queries_path):
        where = f"{queries_path}:{lineno}"
        qid = _str_field(obj, "_id", where)
        if qid not in qrels:
            continue
        if qid in queries:
            raise ConfigError(f"{where}: query id {qid!r} appears twice")
        queries[qid] = _str_field(obj, "text", where)
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise ConfigError(
            f"{qrels_path}: {len(missing)} query ids have no text in {queries_path.name} "
            f"(first: {', '.join(missing[:5])})"
        )

    corpus: dict[str, CorpusDoc] = {}
    for lineno, obj in _iter_jsonl(corpus_path):
        where = f"{corpus_path}:{lineno}"
        doc_id = _str_field(obj, "_id", where)
        if doc_id in corpus:
            raise ConfigError(f"{where}: doc id {doc_id!r} appears twice")
        corpus[doc_id] = CorpusDoc(
            doc_id=doc_id,
            title=_str_field(obj, "title", where, required=False),
            text=_str_field(obj, "text", where),
        )

    dangling = sum(1 for judged in qrels.values() for doc_id in judged if doc_id not in corpus)
    if dangling:
        logger.warning("%s: %d qrels point to doc ids not in the corpus", qrels_path, dangling)
    # Keep the queries in qrels order, which is the file order.
    return EvalDataset(
        name=f"{path.name}/{split}",
        corpus=corpus,
        queries={qid: queries[qid] for qid in qrels},
        qrels=qrels,
    )


# --------------------------------------------------------------------------- SQuAD


def _expect(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: expected a {kind.__name__}, got {type(value).__name__}")
    return value


def article_split(articles: Sequence[_K]) -> dict[_K, ArticleHalf]:
    """Split articles in two halves: in the order given, the first ``len(articles) // 2`` are
    ``"train"`` (tune, calibrate), the others ``"test"`` (report).

    The one article split of the project: :func:`load_squad` passes the article indices of
    the file (``range(len(data))``, so file order), and the refusal calibration
    (:mod:`ragstrata.eval.refusal`) the sorted indices of the articles it has questions from.
    Deterministic, and the halves differ in size by at most one article (the odd one goes to
    ``"test"``). The halves depend on the file's article order: two files holding the same
    articles in another order split them differently.

    Raises:
        ValueError: an article is listed twice.
    """
    if len(set(articles)) != len(articles):
        raise ValueError("article_split: every article must be listed once")
    cut = len(articles) // 2
    return {article: "train" if i < cut else "test" for i, article in enumerate(articles)}


def load_squad(path: Path, *, split: str = "all") -> EvalDataset:
    """Load a SQuAD v1.1 or v2.0 JSON file (plain or ``.json.gz``) as a retrieval dataset.

    * ``corpus``: every paragraph, whatever the split; doc id
      ``f"{article_index}-{paragraph_index}"`` (0-based), title = the article title, text =
      the paragraph context.
    * ``queries``/``qrels``: every answerable question of the split's articles (id ->
      question; its own paragraph with relevance 1).
    * ``answers``: id -> the gold answer texts of each of those questions (``answers[].text``,
      stripped, repeats and empty strings dropped).
    * ``unanswerable``: the v2.0 questions of the split's articles with ``is_impossible``
      true (id -> question); they are not in ``queries``/``qrels``. Empty for v1.1 files (no
      such flag).

    ``split`` is ``"all"`` (every question), ``"train"`` (the first ``n // 2`` of the file's
    ``n`` articles) or ``"test"`` (the other articles), see :func:`article_split`. The corpus
    stays whole so that one index serves both halves, and a question of one half competes
    with the paragraphs of the other.

    ``name`` is the file name without ``.json``/``.json.gz``, followed by ``/train`` or
    ``/test`` for a half; ``corpus_name`` is the file name alone for every split.

    Raises:
        ConfigError: an unknown ``split``, the file is missing or not JSON, the structure
            differs from SQuAD's (the message names the JSON path, e.g.
            ``data[3].paragraphs[0].qas[2]``), or a question id repeats.
    """
    if split not in SQUAD_SPLITS:
        raise ConfigError(
            f"SQuAD split {split!r} is not one of {', '.join(SQUAD_SPLITS)} "
            "(train and test are halves of the articles, all is every question)"
        )
    path = Path(path)
    try:
        root = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    if isinstance(root, list):
        raise ConfigError(
            f"{path}: a JSON list is no SQuAD file (an object with 'data'); a golden file of "
            "your own questions is .yaml, .yml or .jsonl (one JSON object per line)"
        )
    root = _expect(root, dict, f"{path}: top level")
    articles = _expect(root.get("data"), list, f"{path}: field 'data'")
    halves = article_split(range(len(articles)))

    corpus: dict[str, CorpusDoc] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    unanswerable: dict[str, str] = {}
    answers: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for ai, article in enumerate(articles):
        where_a = f"{path}: data[{ai}]"
        article = _expect(article, dict, where_a)
        title = _str_field(article, "title", where_a, required=False)
        paragraphs = _expect(article.get("paragraphs"), list, f"{where_a}.paragraphs")
        for pi, paragraph in enumerate(paragraphs):
            where_p = f"{where_a}.paragraphs[{pi}]"
            paragraph = _expect(paragraph, dict, where_p)
            doc_id = f"{ai}-{pi}"
            corpus[doc_id] = CorpusDoc(
                doc_id=doc_id, title=title, text=_str_field(paragraph, "context", where_p)
            )
            qas = _expect(paragraph.get("qas", []), list, f"{where_p}.qas")
            for qi, qa in enumerate(qas):
                where_q = f"{where_p}.qas[{qi}]"
                qa = _expect(qa, dict, where_q)
                qid = _str_field(qa, "id", where_q)
                question = _str_field(qa, "question", where_q)
                if qid in seen:
                    raise ConfigError(f"{where_q}: question id {qid!r} appears twice")
                seen.add(qid)
                if split != "all" and halves[ai] != split:
                    continue
                if qa.get("is_impossible", False) is True:
                    unanswerable[qid] = question
                else:
                    queries[qid] = question
                    qrels[qid] = {doc_id: 1}
                    texts = _squad_answers(qa.get("answers", []), where_q)
                    if texts:
                        answers[qid] = texts

    stem = path.name
    for suffix in (".gz", ".json"):
        stem = stem.removesuffix(suffix)
    return EvalDataset(
        name=stem if split == "all" else f"{stem}/{split}",
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        unanswerable=unanswerable,
        corpus_name=stem,
        answers=answers,
    )


def _squad_answers(value: Any, where: str) -> tuple[str, ...]:
    """The distinct non-empty ``text`` of a SQuAD ``answers`` list, in order."""
    items = _expect(value, list, f"{where}.answers")
    texts = [
        _str_field(_expect(item, dict, f"{where}.answers[{i}]"), "text", f"{where}.answers[{i}]")
        for i, item in enumerate(items)
    ]
    return tuple(dict.fromkeys(t.strip() for t in texts if t.strip()))


# --------------------------------------------------------------------------- golden queries

_GOLDEN_KEYS = frozenset({"id", "query", "expected", "answers"})


def _golden_entry(obj: Any, n: int, where: str) -> GoldenQuery:
    if not isinstance(obj, dict):
        raise ConfigError(
            f"{where}: expected a mapping with 'query' and 'expected', got {type(obj).__name__}"
        )
    unknown = sorted(str(key) for key in obj if key not in _GOLDEN_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: id, query, expected, answers"
        )
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ConfigError(f"{where}: 'query' must be a non-empty string, got {query!r}")
    expected = obj.get("expected")
    if (
        not isinstance(expected, list)
        or not expected
        or not all(isinstance(item, str) and item.strip() for item in expected)
    ):
        raise ConfigError(
            f"{where}: 'expected' must be a non-empty list of source paths or doc ids, "
            f"got {expected!r}"
        )
    answers = obj.get("answers", [])
    if isinstance(answers, str) or not isinstance(answers, list):
        answers = None
    if answers is None or not all(
        isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in answers
    ):
        raise ConfigError(
            f"{where}: 'answers' must be a list of expected answer strings, "
            f"got {obj.get('answers')!r}"
        )
    texts = tuple(dict.fromkeys(str(a).strip() for a in answers if str(a).strip()))
    if answers and not texts:
        raise ConfigError(f"{where}: 'answers' holds only empty strings; remove it or fill it")
    from ragstrata.eval.answer_metrics import normalize_answer

    for text in texts:
        if not normalize_answer(text):  # it could never be found: say so
            raise ConfigError(
                f"{where}: answer {text!r} has no words once normalized (markup, punctuation "
                "and articles are dropped); write the text a reader sees, code in backticks"
            )
    raw_id = obj.get("id")
    if raw_id is None:
        query_id = f"q{n}"
    elif isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id):
        raise ConfigError(f"{where}: 'id' must be a non-empty string, got {raw_id!r}")
    else:
        query_id = str(raw_id)
    return GoldenQuery(
        query_id=query_id,
        query=query.strip(),
        expected=tuple(item.strip() for item in expected),
        answers=texts,
    )


def _golden_yaml(path: Path, text: str) -> list[tuple[Any, str]]:
    yaml = require("yaml", extra="ingest", package="pyyaml")  # comes with the ingest extra
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc})") from exc
    if data is None:
        return []
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise ConfigError(
            f"{path}: expected a YAML list of entries ('- query: ...'), got {type(data).__name__}"
        )
    return [
        (obj, f"{path}: entry {n} (line {item.start_mark.line + 1})")
        for n, (obj, item) in enumerate(zip(data, node.value, strict=True), start=1)
    ]


def load_golden(path: Path) -> list[GoldenQuery]:
    """Load hand-written golden queries from a ``.jsonl`` or ``.yaml``/``.yml`` file.

    Each entry is ``{query: str, expected: [str, ...], id?: str, answers?: [str, ...]}``
    (``answers``: strings a correct answer contains, numbers accepted and turned into
    strings); ``query_id`` is the
    entry's ``id`` (YAML integers are turned into strings) or ``f"q{n}"`` for the n-th entry
    (1-based, blank JSONL lines not counted). Strings are stripped. Order is file order.

    Raises:
        ConfigError: an unsupported extension, invalid JSON/YAML, an entry that is not a
            mapping, a missing or empty ``query``/``expected``, an unknown key, or a repeated
            id; the message names the file and the line (JSONL) or entry and line (YAML).
        MissingDependencyError: a YAML file without ``pyyaml`` installed.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".yaml", ".yml"):
        raise ConfigError(
            f"{path}: unsupported golden-query file extension {suffix!r}; use .jsonl, .yaml or .yml"
        )
    text = _read_text(path)
    entries: list[tuple[Any, str]]
    if suffix == ".jsonl":
        entries = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
            entries.append((obj, f"{path}:{lineno}"))
    else:
        entries = _golden_yaml(path, text)

    golden: list[GoldenQuery] = []
    seen: dict[str, str] = {}
    for n, (obj, where) in enumerate(entries, start=1):
        entry = _golden_entry(obj, n, where)
        if entry.query_id in seen:
            raise ConfigError(
                f"{where}: id {entry.query_id!r} already used at {seen[entry.query_id]}; "
                "give each entry a distinct id"
            )
        seen[entry.query_id] = where
        golden.append(entry)
    return golden
