"""Pure parts of the service: file-name sanitizing, content-type checks, token buckets, the
readers-writer lock, API key hashing and the error -> HTTP status map (502 for a failing LLM)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstrata.errors import (
    ConfigError,
    GenerationError,
    IndexLockedError,
    IndexNotFoundError,
    IngestError,
    RagError,
    RetrievalError,
    StoreError,
)
from ragstrata.service.errors import (
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    UnsupportedMediaTypeError,
    http_status,
)
from ragstrata.service.keys import KeyStore
from ragstrata.service.ratelimit import FailureBudget, KeyRateLimiter
from ragstrata.service.rwlock import RWLock
from ragstrata.service.uploads import (
    MAX_NAME_BYTES,
    MAX_NAME_CHARS,
    check_file_type,
    safe_filename,
)


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("../../etc/passwd.md", "passwd.md"),
        ("..\\..\\windows\\win.ini.txt", "win.ini.txt"),
        ("/abs/path/a b.md", "a b.md"),
        (".env", "env"),
        ("..", "upload"),
        ("", "upload"),
        ("notes\x00.md", "notes.md"),
        ("cancio\u0301n.md", "canción.md"),
        ("we;ird|name$.md", "we_ird_name_.md"),
        ("-rf.md", "rf.md"),
        ("con%22quote.md", "con_quote.md"),  # a quote as the form encoding sends it
        ("a%0Ab.md", "a b.md"),
        ("100%25.md", "100_25.md"),  # only the three escapes the form encoding makes
        ("...md", "upload.md"),  # trial 24: "md", refused as a file without extension
        ("a..md ", "a.md"),
    ],
)
def test_safe_filename_examples(raw: str, safe: str) -> None:
    assert safe_filename(raw) == safe


@given(st.text(max_size=300))
def test_safe_filename_never_leaves_its_directory(raw: str) -> None:
    name = safe_filename(raw)
    assert name and len(name) <= MAX_NAME_CHARS and len(name.encode()) <= MAX_NAME_BYTES
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert name not in (".", "..") and not name.startswith((".", "-"))
    root = Path("/srv/uploads")
    assert (root / name).resolve().parent == root


def test_long_names_keep_their_extension() -> None:
    name = safe_filename("a" * 500 + ".markdown")
    assert len(name) == MAX_NAME_CHARS and name.endswith(".markdown")


def test_long_names_fit_a_file_name_and_stay_distinct() -> None:
    """Review 33: 120 CJK characters are 360 bytes, over Linux's 255 (the upload was answered
    500); and two long names differing past the cut became one document."""
    cjk = safe_filename("報告書" * 60 + ".md")
    assert len(cjk.encode()) <= MAX_NAME_BYTES and cjk.endswith(".md")
    assert cjk.startswith("報告書")
    common = "informe-trimestral-de-ventas-" * 5
    a, b = safe_filename(common + "2023.md"), safe_filename(common + "2024.md")
    assert a != b and a.endswith(".md") and b.endswith(".md")
    assert safe_filename(common + "2023.md") == a  # the same name, the same file
    assert safe_filename("short.md") == "short.md"  # names that fit are kept as they are


def test_file_types() -> None:
    assert check_file_type("a.md", "text/markdown") == "markdown"
    assert check_file_type("a.md", None) == "markdown"
    assert check_file_type("a.HTML", "text/html; charset=utf-8") == "html"
    assert check_file_type("a.txt", "application/octet-stream") == "text"
    for name, kind in (("a.png", "image/png"), ("a.md", "image/png"), ("a", None), ("a.exe", "")):
        with pytest.raises(UnsupportedMediaTypeError):
            check_file_type(name, kind)


def test_token_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    limiter = KeyRateLimiter(rate=2.0, burst=3, clock=lambda: now[0])
    assert [limiter.acquire("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire("k") == pytest.approx(0.5)
    assert limiter.acquire("other") == 0.0
    now[0] = 0.5
    assert limiter.acquire("k") == 0.0
    assert limiter.acquire("k") == pytest.approx(0.5)
    now[0] = 100.0  # never more than the burst
    assert [limiter.acquire("k") for _ in range(4)][-1] > 0
    with pytest.raises(ValueError):
        KeyRateLimiter(rate=0, burst=1)


def test_rwlock_readers_share_writers_exclude() -> None:
    lock = RWLock()

    def write_times_out() -> bool:
        try:
            with lock.write(timeout=0.05):
                return False
        except TimeoutError:
            return True

    def read_times_out() -> bool:
        try:
            with lock.read(timeout=0.05):
                return False
        except TimeoutError:
            return True

    with lock.read(), lock.read(timeout=0.1):  # two readers at once
        assert write_times_out()
    with lock.write():
        assert read_times_out()
    order: list[str] = []

    def writer() -> None:
        with lock.write():
            order.append("write")

    with lock.read():
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(0.05)
        # a waiting writer holds new readers back (no writer starvation)
        assert read_times_out()
    thread.join(timeout=5)
    assert order == ["write"]
    with lock.read(timeout=0.1):
        pass


def test_keys_create_verify_revoke(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    key, record = store.create("acme", name="ci", scopes=("read",))
    assert key.startswith(f"rsk_{record.key_id}_") and record.scopes == ("read",)
    principal = store.verify(key)
    assert (principal.tenant, principal.scopes) == ("acme", ("read",))
    assert store.verify(key) == principal  # cached path
    other = KeyStore(tmp_path / "keys.json")  # another process, e.g. the CLI
    other.revoke(record.key_id)
    with pytest.raises(AuthenticationError):
        store.verify(key)
    with pytest.raises(NotFoundError):
        other.revoke("ffffffffffff")
    with pytest.raises(ConfigError):
        store.create("Bad Tenant")
    with pytest.raises(ConfigError):
        store.create("acme", scopes=("admin",))
    assert [r.revoked for r in store.records()] == [True]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (AuthenticationError("x"), 401),
        (PermissionDeniedError("x"), 403),
        (RateLimitedError("x", retry_after_s=1), 429),
        (NotFoundError("x"), 404),
        (IndexNotFoundError("x"), 404),
        (IndexLockedError("x"), 503),
        (ConfigError("x"), 422),
        (RetrievalError("x"), 422),
        (IngestError("p", "x"), 422),
        (StoreError("x"), 500),
        (GenerationError("x"), 502),
        (RagError("x"), 500),
    ],
)
def test_error_status_map(error: RagError, status: int) -> None:
    assert http_status(error) == status


def test_wrong_secrets_are_budgeted_per_key_id_and_address(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json", failure_rate_per_s=0.001, failure_burst=2)
    key, record = store.create("acme")
    other, _ = store.create("globex")
    wrong = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    for _ in range(2):  # each costs one scrypt and one token of both budgets
        with pytest.raises(AuthenticationError):
            store.verify(wrong, client="10.0.0.66")
    with pytest.raises(RateLimitedError, match="from this address"):
        store.verify(wrong, client="10.0.0.66")  # refused before hashing
    with pytest.raises(AuthenticationError):
        store.verify(wrong, client="10.0.0.67")  # a clean address gets its one try
    with pytest.raises(RateLimitedError, match=record.key_id):
        store.verify(wrong, client="10.0.0.67")  # then the key id's spent budget applies
    # the key's owner, from a clean address, is not locked out (never verified before)
    assert store.verify(key, client="10.0.0.9").tenant == "acme"
    # another tenant's new key, from another address: untouched by either budget
    assert store.verify(other, client="10.0.0.7").tenant == "globex"
    with pytest.raises(AuthenticationError):
        store.verify("rsk_short", client="10.0.0.8")  # malformed: no scrypt, no budget
    assert store.verify(other, client="10.0.0.8").tenant == "globex"


def test_failure_budget_is_per_key_and_bounded() -> None:
    now = [0.0]
    budget = FailureBudget(rate=1.0, burst=2, clock=lambda: now[0], max_keys=4)
    budget.fail("a")
    assert budget.blocked("a") == 0.0
    budget.fail("a")
    assert budget.blocked("a") == pytest.approx(1.0)
    assert budget.blocked("b") == 0.0
    now[0] = 1.0
    assert budget.blocked("a") == 0.0  # refilled one token
    for key in "bcdef":  # past max_keys: refilled buckets are forgotten first
        budget.fail(key)
    assert len(budget._buckets) <= 4


def test_every_collection_shares_the_one_llm(tmp_path: Path) -> None:
    # one model in memory for the whole service: a collection (or a snapshot reader of one)
    # that built its own would load the GGUF again and lose the prompt-prefix KV cache
    from ragstrata.config import RagConfig
    from ragstrata.service.keys import Principal
    from ragstrata.service.tenancy import TenantRegistry
    from ragstrata.testing.fakes import HashEmbedder, ScriptedChatModel

    generator = ScriptedChatModel()
    registry = TenantRegistry(
        tmp_path,
        config=RagConfig(home=tmp_path / "home"),
        embedder=HashEmbedder(),
        read_wait_s=1.0,
        generator=generator,
    )
    try:
        acme = registry.collection(Principal("k1", "acme", ("write",)), "kb", create=True)
        globex = registry.collection(Principal("k2", "globex", ("write",)), "kb2", create=True)
        assert acme._engine.generator is generator
        assert globex._engine.generator is generator
        assert acme._generator is generator  # what its snapshot readers are built with
    finally:
        registry.close()


def test_a_read_arriving_as_an_upload_starts_does_not_fail_the_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 24 (2026-12-06): after a restart, an upload to a collection no request had opened
    yet failed with RS503 when a search or ask came at the same moment: the read's engine took
    the index lock before the job's writer did. The collection's engine now holds the lock
    before reads turn to the job's snapshots; the read waits (503 at worst), the upload lands."""
    from ragstrata.config import RagConfig
    from ragstrata.errors import IndexLockedError
    from ragstrata.service.keys import Principal
    from ragstrata.service.tenancy import TenantRegistry
    from ragstrata.testing.fakes import HashEmbedder

    def registry() -> TenantRegistry:
        return TenantRegistry(
            tmp_path,
            config=RagConfig(home=tmp_path / "home"),
            embedder=HashEmbedder(),
            read_wait_s=0.5,
        )

    def staged(name: str, text: str) -> Path:
        path = tmp_path / "staging" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    who = Principal("k1", "acme", ("write",))
    first = registry()
    try:
        kb = first.collection(who, "kb", create=True)
        kb.ingest_staged([staged("a.md", "# Guardias\n\nLas guardias cambian los lunes.\n")])
    finally:
        first.close()
    restarted = registry()  # a new server process: nothing opened the collection yet
    readers: list[Any] = []
    try:
        kb = restarted.collection(who, "kb")
        write = kb._engine.ingest

        def read_then_write(*args: Any, **kwargs: Any) -> Any:
            answer = kb.ask_stream("¿Cuándo cambian las guardias?")
            try:
                next(answer)  # an ask holding its read engine while the job starts writing
                readers.append(answer)
            except IndexLockedError:
                pass  # it waited for a snapshot the job had not published yet: a 503
            return write(*args, **kwargs)

        monkeypatch.setattr(kb._engine, "ingest", read_then_write)
        _, outcomes = kb.ingest_staged([staged("b.md", "# Turnos\n\nEl turno de noche.\n")])
        assert [(o.name, o.status) for o in outcomes] == [("b.md", "indexed")]
    finally:
        for answer in readers:
            answer.close()
        restarted.close()


def test_a_table_row_quoted_with_its_header_is_marked_in_its_passage() -> None:
    """Trial 24 (2026-12-06): the extractive answerer quotes a table row read with its header
    ("Severidad: S1; ..."), which is not in the passage as written: the web page marked
    nothing. The row's own offsets come from the answerer's reading of the same table."""
    from ragstrata.generate.extractive import _table_rows
    from ragstrata.service.routes_query import quote_span

    passage = (
        "#### Escalado\n\n"
        "| Severidad | Tiempo de respuesta | Acciones |\n| --- | --- | --- |\n"
        "| S1 | 15 minutos | Avisar al jefe de guardia<br>Abrir sala de crisis |\n"
        "| S2 | 1 hora | Avisar en `#platform-oncall` |\n"
    )
    rows = _table_rows(passage, [])
    assert len(rows) == 2
    for row in rows:
        assert row.shown and row.shown not in passage  # read with its header
        assert quote_span(passage, row.shown) == (row.start, row.end), row.shown
    assert quote_span(passage, "Escalado") == (5, 13)  # a quote as written
    assert quote_span(passage, "Severidad: S3; Tiempo de respuesta: 2 días") is None
    assert quote_span(passage, "") is None
