"""memory.store.in_scope agrees with scope_where: the write path may fetch an owner's records whole (owner-only
``where``) and apply the lifecycle in Python, and must get exactly what Chroma's lifecycle filter returns.

Real Chroma (in memory); every combination of archived / deprecated / valid_until around "now", for two owners.
"""

from __future__ import annotations

import itertools
import uuid

import numpy as np
import pytest

from memory import MemoryRecord, StoreLocation
from memory.store import MemoryStore, in_scope, scope_where

NOW = 1_780_000_000.0
OWNERS = (("acme", "alice"), ("acme", "bob"))


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    s = MemoryStore(location=StoreLocation(), workspace=f"scope-{uuid.uuid4().hex[:8]}", embedder_name="t", dim=4)
    records = [
        MemoryRecord(memory_id=f"{user}-{n}", tenant_id=tenant, user_id=user, content=f"fact {n} of {user}",
                     created_at=NOW - 100, archived=archived, is_deprecated=deprecated, valid_until=NOW + offset)
        for tenant, user in OWNERS
        for n, (archived, deprecated, offset) in enumerate(itertools.product((False, True), (False, True),
                                                                              (-1.0, 0.0, 1.0, 1e6)))
    ]
    s.add(records, np.random.default_rng(0).standard_normal((len(records), 4)).astype(np.float32))
    return s


@pytest.mark.parametrize("scope", ["active", "inactive", "hot", "all"])
@pytest.mark.parametrize("owner", OWNERS)
def test_in_scope_matches_the_chroma_filter(store, scope, owner):
    tenant_id, user_id = owner
    by_chroma = set(store.collection.get(where=scope_where(tenant_id, user_id, scope=scope, now=NOW))["ids"])
    whole = store.collection.get(where=scope_where(tenant_id, user_id, scope="all"), include=["metadatas"])
    by_python = {i for i, meta in zip(whole["ids"], whole["metadatas"]) if in_scope(meta, scope=scope, now=NOW)}
    assert by_python == by_chroma
    assert by_chroma and all(i.startswith(f"{user_id}-") for i in by_chroma)
    expected = {"active": 2, "inactive": 6, "hot": 8, "all": 16}[scope]  # valid_until == now counts as expired
    assert len(by_chroma) == expected


def test_in_scope_needs_a_time_and_a_known_scope():
    meta = {"archived": False, "is_deprecated": False, "valid_until": NOW}
    with pytest.raises(ValueError, match="current time"):
        in_scope(meta, scope="active")
    with pytest.raises(ValueError, match="unknown scope"):
        in_scope(meta, scope="everything")  # type: ignore[arg-type]
