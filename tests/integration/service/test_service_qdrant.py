"""Service collections on a shared Qdrant store (``store.url``), through qdrant-client's local
mode on one path that every collection shares, standing in for a Qdrant server (the code path of
:class:`~ragstrata.service.tenancy.Collection` is the same: it branches on ``store.url`` only).
Review 45: two tenants' collections shared one Qdrant collection, and a deleted collection's
points stayed in Qdrant."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstrata.config import RagConfig
from ragstrata.index import catalog
from ragstrata.pipeline import Ragstrata
from ragstrata.service.tenancy import QDRANT_NAME_FILE, Collection, qdrant_collection

pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RagConfig, object]:
    work = tmp_path_factory.mktemp("qdrant-service")
    config = RagConfig.load(
        env={},
        overrides={
            "store.url": f"local:{work / 'shared-qdrant'}",
            "ingest.workers": 0,
            "embedder.name": "minilm-onnx",
        },
    )
    return work, config, Ragstrata(config).embedder


def _open(shared: tuple[Path, RagConfig, object], tenant: str, name: str) -> Collection:
    work, config, embedder = shared
    return Collection(
        tenant=tenant,
        name=name,
        root=work / "tenants" / tenant / name,
        config=config,
        embedder=embedder,  # type: ignore[arg-type]
        read_wait_s=5,
    )


def _upload(collection: Collection, work: Path, name: str, text: str) -> None:
    staged = work / "staging" / name
    staged.parent.mkdir(exist_ok=True)
    staged.write_text(text, encoding="utf-8")
    _, outcomes = collection.ingest_staged([staged])
    assert [o.status for o in outcomes] == ["indexed"]


def test_tenant_collections_whose_joined_names_match_get_their_own_qdrant_collections(
    shared: tuple[Path, RagConfig, object],
) -> None:
    work = shared[0]
    a = _open(shared, "acme-x", "docs")  # local mode: one client at a time on the path
    for i in range(6):
        _upload(a, work, f"a{i}.md", f"# Heron {i}\n\nThe heron budget item {i} is {i * 100} €.\n")
    a.close()
    b = _open(shared, "acme", "x-docs")
    try:
        assert a._config.store.collection != b._config.store.collection
        _upload(b, work, "b.md", "# Heron\n\nOur heron budget note.\n")
        hits = b.search("heron budget", top_k=5).hits
        # before: acme-x's 6 chunks shared the Qdrant collection, filled top_k and were dropped
        assert [Path(h.chunk.source).name for h in hits] == ["b.md"]
    finally:
        b.close()


def test_a_deleted_collection_takes_its_points_with_it(
    shared: tuple[Path, RagConfig, object],
) -> None:
    work = shared[0]
    first = _open(shared, "acme", "secrets")
    _upload(first, work, "plan.md", "# Plan\n\nThe merger code name is BLUEHERON.\n")
    assert first.destroy() == (1, 1)
    again = _open(shared, "acme", "secrets")  # the tenant creates the name again
    try:
        _upload(again, work, "notes.md", "# Notes\n\nLunch menu for Friday is soup.\n")
        sources = {Path(h.chunk.source).name for h in again.search("merger code name").hits}
        assert sources == {"notes.md"}  # before: plan.md, deleted, was found again
    finally:
        again.close()


def test_a_collection_built_before_keeps_its_qdrant_name(tmp_path: Path) -> None:
    built = tmp_path / "built"
    (built / "index").mkdir(parents=True)
    (built / "index" / catalog.MANIFEST).write_text("{}", encoding="utf-8")
    assert qdrant_collection(built, "ragstrata", "acme", "docs") == "ragstrata-acme-docs"
    assert (built / QDRANT_NAME_FILE).read_text(encoding="utf-8") == "ragstrata-acme-docs"
    new = tmp_path / "new"
    assert qdrant_collection(new, "ragstrata", "acme", "docs") == "ragstrata.acme.docs"
    # recorded: the name holds once the index exists
    (new / "index").mkdir()
    (new / "index" / catalog.MANIFEST).write_text("{}", encoding="utf-8")
    assert qdrant_collection(new, "ragstrata", "acme", "docs") == "ragstrata.acme.docs"


def test_deleting_one_of_two_collections_sharing_a_legacy_name_keeps_the_other(
    tmp_path: Path, shared: tuple[Path, RagConfig, object]
) -> None:
    """Review 46: two collections built before the dotted names could share one Qdrant
    collection (``ragstrata-acme-x-docs``); deleting one dropped it, and the other tenant's
    searches failed. A legacy collection loses only its own points."""
    work = tmp_path
    config = shared[1]
    for tenant, name in (("acme-x", "docs"), ("acme", "x-docs")):
        root = work / "tenants" / tenant / name
        root.mkdir(parents=True)  # as the old code named them, recorded on the upgrade
        (root / QDRANT_NAME_FILE).write_text("ragstrata-acme-x-docs", encoding="utf-8")
    local = (work, config, shared[2])
    a = _open(local, "acme-x", "docs")
    _upload(a, work, "a.md", "# Heron\n\nThe heron budget of acme-x.\n")
    a.close()
    b = _open(local, "acme", "x-docs")
    _upload(b, work, "b.md", "# Heron\n\nThe heron budget of acme.\n")
    assert b.destroy() == (1, 1)
    a = _open(local, "acme-x", "docs")
    try:
        assert [Path(h.chunk.source).name for h in a.search("heron budget").hits] == ["a.md"]
    finally:
        a.close()


def test_an_empty_collection_discarded_while_qdrant_is_down_is_deleted_later(
    shared: tuple[Path, RagConfig, object], tmp_path: Path
) -> None:
    """Review 46: the cleanup after a failed first upload (typically: Qdrant is down) left the
    empty collection unmarked when the drop failed, and it kept the name reserved."""
    import socket

    from ragstrata.errors import StoreError
    from ragstrata.service.errors import NotFoundError
    from ragstrata.service.keys import Principal
    from ragstrata.service.tenancy import DELETING_MARK, TenantRegistry

    hung = socket.socket()  # accepts connections, never answers
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    try:
        config = RagConfig.load(
            env={},
            overrides={
                "store.url": f"http://127.0.0.1:{hung.getsockname()[1]}",
                "store.timeout_s": 1,
                "embedder.name": "minilm-onnx",
            },
        )
        registry = TenantRegistry(
            tmp_path,
            config=config,
            embedder=shared[2],  # type: ignore[arg-type]
            read_wait_s=1,
        )
        acme = Principal("k1", "acme", ("read", "write"))
        first = registry.collection(acme, "first", create=True)
        with pytest.raises(StoreError):
            registry.discard_if_empty(first, busy=lambda: False)
        assert (first.root / DELETING_MARK).exists()
    finally:
        hung.close()
    # the delete is finished once a Qdrant answers (a server restarted: here the local store)
    restarted = TenantRegistry(
        tmp_path,
        config=shared[1],
        embedder=shared[2],  # type: ignore[arg-type]
        read_wait_s=1,
    )
    with pytest.raises(NotFoundError):
        restarted.collection(acme, "first")
    assert not first.root.exists()
