"""An erasure by another writer of the same folder (another process; here a second manager, which shares nothing in
memory with the first) racing a write of the same user: the write is never acknowledged without being stored, and
no vector of the user outlives the erasure in a collection no registry names (found by the shared_erase check of
``python -m memory reliability``, issue 28)."""

from __future__ import annotations

import pytest

from memory import LexicalEmbedder, MemoryManager, Message, StoreLocation, WriteError


def _note(i: int) -> Message:
    return Message(tenant_id="acme", user_id="alice", id=f"m{i}", content=f"alice note {i} CANARY-RACE-{i}",
                   timestamp=float(i))


@pytest.fixture
def two_writers(tmp_path):
    location = StoreLocation(data_dir=tmp_path / "d")
    a = MemoryManager(embedder=LexicalEmbedder(), location=location, workspace="w")
    b = MemoryManager(embedder=LexicalEmbedder(), location=location, workspace="w")
    a.add(_note(1))
    b.add(_note(2))
    yield a, b
    a.close()
    b.close()


def _collections(m: MemoryManager) -> set[str]:
    return {c.name for c in m.store.client.list_collections()}


def test_an_erasure_between_a_writers_lookup_and_its_upsert_leaves_no_stray_collection(two_writers):
    a, b = two_writers
    old = a.store.collection_of("acme", "alice")
    upsert = b.store._upsert

    def racing(name, ids, vectors):  # the other writer erases alice just before this upsert
        b.store._upsert = upsert
        a.erase_user(tenant_id="acme", user_id="alice")
        upsert(name, ids, vectors)

    b.store._upsert = racing
    with pytest.raises(WriteError, match="erased by another writer"):
        b.add(_note(3))
    assert old not in _collections(a), "the erased collection was not made again"
    assert a.store.count("acme", "alice") == 0 and b.pending_plans() == []
    report = a.erase_user(tenant_id="acme", user_id="alice", disk_scan=True)
    assert all(p.remaining == 0 for p in report.paths), report.paths
    assert len(b.add_many([_note(4)])) == 1, "a write after the erasure is stored"
    assert [r.message_id for r in a.records(tenant_id="acme", user_id="alice")] == ["m4"]


def test_an_erasure_that_scrubs_a_writers_journaled_plan_is_not_acknowledged(two_writers):
    a, b = two_writers
    add_vectors = b.store.add_vectors

    def racing(records, embeddings):  # journaled, not yet committed: the other writer erases alice
        b.store.add_vectors = add_vectors
        a.erase_user(tenant_id="acme", user_id="alice")
        add_vectors(records, embeddings)

    b.store.add_vectors = racing
    with pytest.raises(WriteError, match="erased by another writer"):
        b.add(_note(3))
    assert a.records(tenant_id="acme", user_id="alice") == [] and b.pending_plans() == []
    consistency = a.store.consistency()
    assert not any(consistency.values()), consistency
