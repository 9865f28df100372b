"""The store's cache of an owner's vectors stays current on write (issue 26): the first recall after a write ranks
from the cached matrix the write extended, exactly as a fresh read of the owner's vectors would, on real Chroma (in
memory) and the text store."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import MemoryRecord, Owner, StoreLocation
from memory.store.chroma import MemoryStore

DIM = 4
OWNERS = (("acme", "alice"), ("acme", "bob"))
NOW = 1_780_000_000.0


def _store(exact_max: int = 5_000) -> MemoryStore:
    return MemoryStore(location=StoreLocation(), workspace=f"cache-{uuid.uuid4().hex[:8]}", embedder_name="t",
                       dim=DIM, exact_max=exact_max)


def _records(owner: tuple[str, str], ids: list[str]) -> list[MemoryRecord]:
    """Records of one owner; memory ids are the store's keys, unique across owners (the engine's are hashes of
    the owner and the message)."""
    return [MemoryRecord(memory_id=f"{owner[1]}-{i}", tenant_id=owner[0], user_id=owner[1], content=f"fact {i}",
                         created_at=NOW) for i in ids]


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors, as the embedders give (the store's similarity is their dot product)."""
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _cold(store: MemoryStore, owner: tuple[str, str]) -> tuple[list[str], np.ndarray]:
    """What a read of the owner's vectors from the text store gives (the cache's source of truth)."""
    ids, blobs = store.texts.vectors(Owner(*owner))
    return ids, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, DIM)


class Reads:
    """Counts whole-owner reads of the text store's vectors (what a cache miss costs)."""

    def __init__(self, store: MemoryStore, monkeypatch) -> None:
        self.count = 0
        inner = store.texts.vectors

        def vectors(owner, memory_ids=None):
            if memory_ids is None:
                self.count += 1
            return inner(owner, memory_ids)

        monkeypatch.setattr(store.texts, "vectors", vectors)


def test_the_first_recall_after_a_write_reads_no_vectors_and_ranks_as_a_fresh_read(monkeypatch):
    rng = np.random.default_rng(1)
    store, owner = _store(), OWNERS[0]
    store.add(_records(owner, [f"m{i}" for i in range(20)]), _vectors(rng, 20))
    query = _vectors(rng, 1)[0]
    store.query(query, owner=Owner(*owner), n=5, scope="all")  # the cache is warm
    reads = Reads(store, monkeypatch)
    written = _vectors(rng, 3)
    written[0] = query  # the new fact is the best match
    store.add(_records(owner, ["m3", "new-1", "new-2"]), written)  # one rewritten id, two new ones
    hits = store.query(query, owner=Owner(*owner), n=5, scope="all")
    assert reads.count == 0, "the first recall after a write read the owner's vectors again"
    assert hits[0][0].memory_id == "alice-m3" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    store._cache.clear()  # the same question from a fresh read of the owner's vectors
    cold = store.query(query, owner=Owner(*owner), n=5, scope="all")
    assert reads.count == 1
    assert [(r.memory_id, s) for r, s in cold] == [(r.memory_id, s) for r, s in hits]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(OWNERS))), st.lists(st.integers(0, 12), min_size=1, max_size=6, unique=True)),
                min_size=1, max_size=8))
def test_the_cached_matrix_equals_a_fresh_read_after_any_writes(writes):
    """Any sequence of writes (ids rewritten by later writes, two owners; Chroma refuses an id twice in one write): the cached ids and rows are
    the text store's, in its order."""
    rng = np.random.default_rng(7)
    store = _store()
    for owner in OWNERS:
        store.add(_records(owner, ["seed"]), _vectors(rng, 1))
        store.query(_vectors(rng, 1)[0], owner=Owner(*owner), n=1, scope="all")
    for o, numbers in writes:
        ids = [f"m{n}" for n in numbers]
        store.add(_records(OWNERS[o], ids), _vectors(rng, len(ids)))
    for owner in OWNERS:
        version = store.texts.version(Owner(*owner))
        hit = store._cache.get(owner, version)
        assert hit is not None, "the write dropped the cache instead of extending it"
        ids, matrix = hit.value
        cold_ids, cold = _cold(store, owner)
        assert ids == cold_ids and np.array_equal(matrix, cold)


def test_a_write_that_rolls_back_leaves_the_cache_as_the_file_is(monkeypatch):
    rng = np.random.default_rng(2)
    store, owner = _store(), OWNERS[0]
    store.add(_records(owner, ["a", "b"]), _vectors(rng, 2))
    store.query(_vectors(rng, 1)[0], owner=Owner(*owner), n=1, scope="all")

    with pytest.raises(RuntimeError), store.texts.transaction():
        store.put_records(_records(owner, ["c"]), _vectors(rng, 1))
        monkeypatch.setattr(store.texts, "_db", _FailingCommit(store.texts._db))
    monkeypatch.undo()
    ids, matrix = store._owner_matrix(Owner(*owner))
    assert ids == ["alice-a", "alice-b"] == _cold(store, owner)[0] and np.array_equal(matrix, _cold(store, owner)[1])
    store.add(_records(owner, ["d"]), _vectors(rng, 1))  # the version the failed write would have had
    ids, matrix = store._owner_matrix(Owner(*owner))
    assert ids == ["alice-a", "alice-b", "alice-d"] == _cold(store, owner)[0]
    assert np.array_equal(matrix, _cold(store, owner)[1])


class _FailingCommit:
    """A connection whose COMMIT fails and rolls back, as SQLite's does on a full disk (the rest passes through)."""

    def __init__(self, db) -> None:
        self._db = db

    def execute(self, sql, *args):
        if sql == "COMMIT":
            self._db.execute("ROLLBACK")
            raise RuntimeError("disk full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_an_owner_grown_past_the_exact_scan_limit_leaves_the_cache():
    rng = np.random.default_rng(3)
    store, owner = _store(exact_max=3), OWNERS[0]
    store.add(_records(owner, ["a", "b", "c"]), _vectors(rng, 3))
    store.query(_vectors(rng, 1)[0], owner=Owner(*owner), n=1, scope="all")
    assert store._cache.get(owner, store.texts.version(Owner(*owner))) is not None
    store.add(_records(owner, ["d"]), _vectors(rng, 1))
    assert store._cache.get(owner, store.texts.version(Owner(*owner))) is None
    assert store._owner_matrix(Owner(*owner)) is None, "past the limit the owner is ranked by its HNSW index"


def test_after_commit_runs_once_at_the_outer_commit_and_never_on_rollback():
    from memory.store.textstore import TextStore

    texts, ran = TextStore(), []
    texts.after_commit(lambda: ran.append("outside"))  # no transaction: at once
    with texts.transaction():
        with texts.transaction():
            texts.after_commit(lambda: ran.append("inner"))
        assert ran == ["outside"], "an inner block's commit is not the transaction's"
        texts.after_commit(lambda: ran.append("outer"))
    assert ran == ["outside", "inner", "outer"]
    with pytest.raises(RuntimeError), texts.transaction():
        texts.after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError("abandon")
    with texts.transaction():
        pass
    assert ran == ["outside", "inner", "outer"]


def test_a_failing_after_commit_step_is_logged_and_the_write_stands(caplog):
    """The transaction has committed when the steps run: a step that raises must not make the write look failed
    (the manager would roll back vectors whose rows are committed)."""
    from memory.store.textstore import TextStore

    texts = TextStore()
    with texts.transaction():
        texts.after_commit(lambda: 1 / 0)
        texts.put_records([("m1", "acme", "alice", "fact", {}, b"\0" * 16)])
    assert texts.count_texts(Owner("acme", "alice")) == 1
    assert "after-commit step" in caplog.text
