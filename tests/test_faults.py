"""Faults and races on the write path: a failed write leaves nothing pending; lifecycle writes never undo an erasure."""

from __future__ import annotations

import threading

import pytest

from memory import Message, Owner, StoreLocation, WriteError
from memory.runtime.erase import scan_for_bytes
from memory.core.errors import MemoryLabError
from memory.runtime.lifecycle import forget, set_valid_until

T0 = 1_780_000_000.0


@pytest.mark.parametrize("half", ["add_vectors", "put_records"])
def test_a_failed_write_is_rolled_back_raised_and_leaves_no_text(make_manager, tmp_path, monkeypatch, half):
    """Without the rollback, the plan (with the canary) stays in the journal and the next open replays it."""
    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    mm.add(Message(tenant_id="acme", user_id="alice", id="a0", content="alice first note", timestamp=T0))
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise MemoryLabError("database is locked (injected)")

    monkeypatch.setattr(mm.store, half, broken)
    canary = "CANARY-failed-write-zimmerman"
    with pytest.raises(WriteError, match="rolled back"):
        mm.add(Message(tenant_id="acme", user_id="alice", id="a1", content=canary, timestamp=T0 + 1))
    monkeypatch.undo()
    assert len(calls) == 3  # retried before it gave up
    assert mm.store.texts.journal_pending() == [] and mm.store.consistency()["vectors_without_record"] == 0
    assert [r.content for r in mm.records(tenant_id="acme", user_id="alice")] == ["alice first note"]
    assert scan_for_bytes(tmp_path / "d", [canary]) == []
    mm.store.texts.close()
    reopened = make_manager(location=StoreLocation(data_dir=tmp_path / "d"), workspace=mm.workspace)
    assert reopened.recovered == 0 and len(reopened.records(tenant_id="acme", user_id="alice")) == 1


def test_a_transient_failure_is_retried_to_completion(make_manager, monkeypatch):
    mm = make_manager()
    original, calls = mm.store.add_vectors, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryLabError("database is locked (injected, once)")
        return original(*args, **kwargs)

    monkeypatch.setattr(mm.store, "add_vectors", flaky)
    record = mm.add(Message(tenant_id="acme", user_id="alice", id="a1", content="kept after one retry"))
    assert len(calls) == 2 and mm.get_record(record.memory_id, tenant_id="acme", user_id="alice")


def test_lifecycle_writes_racing_an_erase_write_nothing_back(make_manager):
    """update() rewrites only records that exist, under the write lock: 50 races, 0 write-backs."""
    mm = make_manager()
    for round_ in range(50):
        user = f"u{round_}"
        records = mm.add_many([Message(tenant_id="acme", user_id=user, id=f"{user}-{i}", content=f"{user} fact {i}",
                                       timestamp=T0 + i) for i in range(3)])
        barrier = threading.Barrier(2)

        def lifecycle():
            barrier.wait()
            for r in records:
                try:
                    set_valid_until(mm, r.memory_id, tenant_id="acme", user_id=user, valid_until=T0 + 10**6)
                except KeyError:
                    pass
            forget(mm, tenant_id="acme", user_id=user, days=0, floor=1.0)

        def erase():
            barrier.wait()
            mm.erase_user(tenant_id="acme", user_id=user, disk_scan=False)

        threads = [threading.Thread(target=lifecycle), threading.Thread(target=erase)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert mm.store.count(Owner("acme", user)) == 0 and ("acme", user) not in mm.store.owners()


def test_update_of_an_erased_record_writes_nothing(make_manager):
    mm = make_manager()
    record = mm.add(Message(tenant_id="acme", user_id="alice", id="a1", content="soon gone"))
    mm.erase_user(tenant_id="acme", user_id="alice", disk_scan=False)
    assert mm.store.update([record]) == 0 and mm.store.count(Owner("acme", "alice")) == 0
