"""add_many's plans are sized by the work (issue 26): one journaled plan, so one Chroma call per owner, for a bulk
write of short messages; long messages cut plans by characters; an explicit batch_size is kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import InputError, LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation
from memory.runtime import manager as manager_module
from memory.runtime.manager import PLAN_CHARS, PLAN_MESSAGES, plan_bounds

T0 = 1_780_000_000.0


def _messages(n: int, *, users: int = 10, size: int = 40) -> list[Message]:
    return [Message(tenant_id="acme", user_id=f"u{i % users}", content=f"note {i} " + "x" * size, id=f"m{i}",
                    timestamp=T0 + i) for i in range(n)]


def _manager() -> MemoryManager:
    return MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation())


def test_a_bulk_write_is_one_plan_and_one_chroma_call_per_owner(monkeypatch):
    mm = _manager()
    upserts, plans = [], []
    inner_upsert, inner_apply = mm.store._upsert, mm.apply
    monkeypatch.setattr(mm.store, "_upsert", lambda name, ids, vectors: (upserts.append(name),
                                                                           inner_upsert(name, ids, vectors)))
    monkeypatch.setattr(mm, "apply", lambda plan, **kw: (plans.append(plan), inner_apply(plan, **kw))[1])
    records = mm.add_many(_messages(500))
    assert len(records) == 500 and mm.store.count() == 500
    assert len(plans) == 1 and len(upserts) == 10 == len(set(upserts))


def test_plans_are_cut_by_message_count_and_by_characters():
    short = _messages(PLAN_MESSAGES * 2 + 5)
    assert [(e - s) for s, e in plan_bounds(short, None)] == [PLAN_MESSAGES, PLAN_MESSAGES, 5]
    long = _messages(9, size=PLAN_CHARS // 4)  # about four messages fill a plan's characters
    sizes = [(e - s) for s, e in plan_bounds(long, None)]
    assert sum(sizes) == 9 and max(sizes) <= 4 and len(sizes) >= 3
    huge = _messages(2, size=PLAN_CHARS * 2)  # a message over the plan's characters is a plan of its own
    assert list(plan_bounds(huge, None)) == [(0, 1), (1, 2)]
    assert list(plan_bounds(short[:10], 4)) == [(0, 4), (4, 8), (8, 10)]


def test_progress_reports_each_plan_and_a_bad_batch_size_is_refused(monkeypatch):
    monkeypatch.setattr(manager_module, "PLAN_MESSAGES", 100)
    seen: list[tuple[int, int]] = []
    _manager().add_many(_messages(250), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(100, 250), (200, 250), (250, 250)]
    for bad in (0, -1, 2.5, True, "64"):
        with pytest.raises(InputError, match="batch_size"):
            _manager().add_many(_messages(3), batch_size=bad)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, PLAN_CHARS), max_size=30), batch=st.one_of(st.none(), st.integers(1, 7)))
def test_plans_cover_every_message_once_in_order_within_their_limits(sizes, batch):
    messages = [Message(tenant_id="acme", user_id="u", content="x" * max(size // 1000, 1), id=f"m{i}",
                        timestamp=T0 + i) for i, size in enumerate(sizes)]
    bounds = list(plan_bounds(messages, batch))
    assert [i for s, e in bounds for i in range(s, e)] == list(range(len(messages)))
    for s, e in bounds:
        assert e > s
        if batch is None:
            assert e - s <= PLAN_MESSAGES
            assert e - s == 1 or sum(len(m.content) for m in messages[s:e]) <= PLAN_CHARS
        else:
            assert e - s <= batch


def test_interleaved_owners_are_written_together_and_answered_in_the_given_order(monkeypatch):
    """500 messages of 10 users, interleaved, in plans of 100: each owner's messages go in together (10 Chroma
    calls, plus one for each plan's edge that cuts an owner in two: at most 15, where interleaved plans make 6 x 10 =
    60), the records come back in the order given, a message given twice gets its
    record twice, and each window and summary is what writing in the given order leaves."""
    monkeypatch.setattr(manager_module, "PLAN_MESSAGES", 100)
    mm, upserts = _manager(), []
    inner_upsert = mm.store._upsert
    monkeypatch.setattr(mm.store, "_upsert", lambda name, ids, vectors: (upserts.append(name),
                                                                           inner_upsert(name, ids, vectors)))
    given = _messages(500)
    given.insert(7, given[3])  # a retry inside the call
    records = mm.add_many(given)
    assert [r.message_id for r in records] == [m.id for m in given]
    assert records[7] == records[3] and mm.store.count() == 500
    assert len(set(upserts)) == 10 and len(upserts) <= 10 + 5
    one_by_one = _manager()
    for m in given:
        one_by_one.add(m)
    for user in {m.user_id for m in given}:
        owner = {"tenant_id": "acme", "user_id": user}
        assert mm.recent(**owner) == one_by_one.recent(**owner)
        assert mm.summary(**owner) == one_by_one.summary(**owner)
        assert mm.summary_sources(**owner) == one_by_one.summary_sources(**owner)
