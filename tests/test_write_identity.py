"""Message identity on the write path: a restated value is stored and current, a reused id in another
session is kept apart, a true retry is idempotent, and a sync write dropped by an erasure raises."""

import pytest

from memory import ErasedError, MemoryConfig, Message
from memory.write.ingest import Ingestor
from memory.runtime.manager import memory_id_for

T0 = 1_780_000_000.0
ALICE = {"tenant_id": "acme", "user_id": "alice"}


def _budget(mm):
    active = [r for r in mm.records(**ALICE, scope="active", as_of=T0 + 10_000) if r.memory_id.startswith("fact-")]
    return [r.content for r in active]


@pytest.mark.parametrize("with_ids", [False, True])
def test_a_restated_value_is_stored_and_becomes_current(make_manager, with_ids):
    mm = make_manager(MemoryConfig(threshold=0.2, window_size=10))
    ing = Ingestor(mm)
    turns = ["My budget is 300 yuan.", "My budget is 200 yuan.", "My budget is 300 yuan."]
    entries = []
    for i, text in enumerate(turns):  # without ids, each turn is stamped when it is accepted
        extra = {"id": f"b{i}", "timestamp": T0 + i} if with_ids else {}
        entries += ing.ingest(Message(content=text, **ALICE, **extra))
    assert [e.decision.decision for e in entries] == ["new", "update", "update"]
    assert _budget(mm) == ["The user's budget is 300 yuan."]
    chain = ing.version_chain(entries[-1].memory_id, **ALICE)
    assert [r.version for r in chain] == [1, 2, 3] and [r.memory_id for r in chain] == [e.memory_id for e in entries]
    assert [m.content for m in mm.recent(**ALICE)] == turns  # the third turn reached the window


def test_restated_raw_turns_are_all_stored(make_manager):
    mm = make_manager(MemoryConfig(window_size=10))
    recs = [mm.add(Message(content=t, **ALICE)) for t in ("budget is 300", "budget is 200", "budget is 300")]
    assert len({r.memory_id for r in recs}) == 3 and len(mm.records(**ALICE)) == 3
    assert [m.content for m in mm.recent(**ALICE)] == ["budget is 300", "budget is 200", "budget is 300"]


def test_a_message_id_reused_in_another_session_is_kept_apart(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2, window_size=10))
    first = mm.add(Message(content="I live in Hangzhou.", id="m1", session_id="s1", timestamp=T0, **ALICE))
    other = mm.add(Message(content="I work as a nurse.", id="m1", session_id="s2", timestamp=T0 + 1, **ALICE))
    assert other.content == "I work as a nurse." and other.session_id == "s2"  # its own record, not the other's
    assert first.memory_id != other.memory_id and len(mm.records(**ALICE)) == 2
    same_session = mm.add(Message(content="I am vegetarian.", id="m1", session_id="s1", timestamp=T0 + 2, **ALICE))
    assert same_session.content == "I am vegetarian." and len(mm.records(**ALICE)) == 3

    ing = Ingestor(mm)
    [a] = ing.ingest(Message(content="My favourite colour is blue.", id="x", session_id="s1", timestamp=T0, **ALICE))
    [b] = ing.ingest(Message(content="I speak Japanese.", id="x", session_id="s2", timestamp=T0 + 1, **ALICE))
    assert b.decision.fact == "The user speaks Japanese." and b.memory_id != a.memory_id
    assert mm.get_record(b.memory_id, **ALICE).content == "The user speaks Japanese."


def test_a_true_retry_is_idempotent(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    msg = Message(content="I live in Hangzhou.", id="r1", session_id="s1", timestamp=T0, **ALICE)
    first = mm.add(msg)
    assert mm.add(msg).memory_id == first.memory_id == memory_id_for(msg)
    assert mm.add_many([msg, msg]) == [first, first] and len(mm.records(**ALICE)) == 1
    assert len(mm.recent(**ALICE)) == 1
    ing = Ingestor(mm)
    fact = Message(content="I am allergic to peanuts.", id="r2", session_id="s1", timestamp=T0, **ALICE)
    once = [e.to_dict() for e in ing.ingest(fact)]
    assert [e.to_dict() for e in ing.ingest(fact)] == once
    assert len(mm.records(**ALICE)) == 2 and len(mm.recent(**ALICE)) == 2


def test_a_sync_add_many_dropped_by_an_erase_raises_and_stores_the_others(make_manager):
    mm = make_manager()
    embed = mm.embedder.embed
    erased = []

    def erase_midway(texts):  # the erasure lands after the batch was accepted, before it is written
        if not erased:
            erased.append(mm.erase_user(tenant_id="acme", user_id="guest"))
        return embed(texts)

    mm.embedder = type("Racing", (), {"embed": staticmethod(erase_midway), "name": mm.embedder.name,
                                       "dim": mm.embedder.dim})()
    msgs = [Message(content=f"note {i}", id=f"g{i}", tenant_id="acme", user_id="guest", timestamp=T0 + i)
            for i in range(3)] + [Message(content="I live in Paris.", id="a1", timestamp=T0, **ALICE)]
    with pytest.raises(ErasedError, match=r"3 message\(s\) not stored.*'g0'"):
        mm.add_many(msgs)
    assert mm.records(tenant_id="acme", user_id="guest") == []
    assert [r.content for r in mm.records(**ALICE)] == ["I live in Paris."]
