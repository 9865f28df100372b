"""The lifecycle scopes of every store read (records, query, query_many, scan, owner_vectors), on real Chroma
(in memory): every combination of archived / deprecated / valid_until around "now", for two owners, through the
exact-scan path and the HNSW path (an owner above ``exact_max``)."""

from __future__ import annotations

import itertools
import uuid

import numpy as np
import pytest

from memory import MemoryRecord, Owner, StoreLocation
from memory.store.chroma import MemoryStore, in_scope

NOW = 1_780_000_000.0
OWNERS = (("acme", "alice"), ("acme", "bob"))


def _store(exact_max: int) -> MemoryStore:
    s = MemoryStore(location=StoreLocation(), workspace=f"scope-{uuid.uuid4().hex[:8]}", embedder_name="t", dim=4,
                    exact_max=exact_max)
    records = [
        MemoryRecord(memory_id=f"{user}-{n}", tenant_id=tenant, user_id=user, content=f"fact {n} of {user}",
                     created_at=NOW - 100, archived=archived, is_deprecated=deprecated, valid_until=NOW + offset)
        for tenant, user in OWNERS
        for n, (archived, deprecated, offset) in enumerate(itertools.product((False, True), (False, True),
                                                                              (-1.0, 0.0, 1.0, 1e6)))
    ]
    s.add(records, np.random.default_rng(0).standard_normal((len(records), 4)).astype(np.float32))
    return s


@pytest.fixture(scope="module", params=[5_000, 4], ids=["exact", "hnsw"])
def store(request) -> MemoryStore:
    return _store(request.param)


@pytest.mark.parametrize("scope", ["active", "inactive", "hot", "all"])
@pytest.mark.parametrize("owner", OWNERS)
def test_every_read_keeps_to_the_owner_and_the_scope(store, scope, owner):
    tenant_id, user_id = owner
    whole = store.records(Owner(tenant_id, user_id), scope="all")
    expected_ids = {r.memory_id for r in whole if in_scope(r.__dict__, scope=scope, now=NOW)}
    expected = {"active": 2, "inactive": 6, "hot": 8, "all": 16}[scope]  # valid_until == now counts as expired
    assert len(expected_ids) == expected and all(i.startswith(f"{user_id}-") for i in expected_ids)
    assert {r.memory_id for r in store.records(Owner(tenant_id, user_id), scope=scope, now=NOW)} == expected_ids
    probe = np.ones(4, dtype=np.float32) / 2
    assert {r.memory_id for r, _ in store.query(probe, owner=Owner(tenant_id, user_id), n=50, scope=scope,
                                                 now=NOW)} == expected_ids
    assert {r.memory_id for r, _ in store.scan(probe, owner=Owner(tenant_id, user_id), scope=scope,
                                                now=NOW)} == expected_ids
    records, matrix = store.owner_vectors(Owner(tenant_id, user_id), scope=scope, now=NOW)
    assert {r.memory_id for r in records} == expected_ids and matrix.shape == (expected, 4)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_query_fills_n_from_deeper_ranks_when_the_best_are_out_of_scope(store, n):
    """Active records are 2 of 16: the search widens past the out-of-scope best until it has them."""
    probe = np.ones(4, dtype=np.float32) / 2
    got = store.query(probe, owner=Owner("acme", "alice"), n=n, scope="active", now=NOW)
    assert len(got) == min(n, 2)
    full = store.scan(probe, owner=Owner("acme", "alice"), scope="active", now=NOW)
    assert [r.memory_id for r, _ in got] == [r.memory_id for r, _ in full][: min(n, 2)]


def test_in_scope_needs_a_time_and_a_known_scope():
    meta = {"archived": False, "is_deprecated": False, "valid_until": NOW}
    with pytest.raises(ValueError, match="current time"):
        in_scope(meta, scope="active")
    with pytest.raises(ValueError, match="unknown scope"):
        in_scope(meta, scope="everything")  # type: ignore[arg-type]
