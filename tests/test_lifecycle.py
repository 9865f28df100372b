"""Lifecycle: expiry in the read filter, recall reinforcement, the forgetting pass and cold storage."""

import math

import pytest

from memory import MemoryConfig, Message
from memory.core.errors import InputError
from memory.write.ingest import Ingestor
from memory.runtime.lifecycle import DAY, cold_since, forget, heat, set_valid_until, version_chain

T0 = 1_780_000_000.0
ALICE = {"tenant_id": "acme", "user_id": "alice"}


@pytest.fixture
def mm(make_manager):
    return make_manager(MemoryConfig(threshold=0.2, decay_rate=0.05))


def _facts(mm, *texts):
    ing = Ingestor(mm)
    return [ing.ingest(Message(content=t, id=f"m{i}", timestamp=T0 + i, **ALICE))[0].memory_id for i, t in enumerate(texts)]


def test_expired_fact_is_never_recalled_but_stays_auditable(mm):
    [promo, city] = _facts(mm, "The user has a 20% discount coupon for watches.", "The user lives in Hangzhou.")
    set_valid_until(mm, promo, **ALICE, valid_until=T0 + 7 * DAY)

    before = mm.retrieve("discount coupon for watches", **ALICE, as_of=T0 + 6 * DAY, reinforce=False)
    assert promo in [h.record.memory_id for h in before.governed]
    after = mm.retrieve("discount coupon for watches", **ALICE, as_of=T0 + 8 * DAY, reinforce=False)
    assert promo not in [h.record.memory_id for h in after.governed]
    assert {d.hit.record.memory_id: d.stage for d in after.dropped}[promo] == "expired"
    assert promo in [r.memory_id for r in mm.records(**ALICE, scope="all")]
    assert city in [h.record.memory_id for h in mm.retrieve("where does the user live", **ALICE,
                                                              as_of=T0 + 8 * DAY, reinforce=False).governed]


def test_superseded_fact_is_not_recalled_and_its_chain_is_inspectable(mm):
    [old, new] = _facts(mm, "I live in Hangzhou.", "I live in Shanghai now.")
    res = mm.retrieve("Which city does the user live in?", **ALICE, as_of=T0 + 10)
    assert [h.record.memory_id for h in res.governed] == [new]
    chain = version_chain(mm, old, **ALICE)
    assert [(r.memory_id, r.version, r.is_deprecated) for r in chain] == [(old, 1, True), (new, 2, False)]
    with pytest.raises(KeyError):
        version_chain(mm, old, tenant_id="acme", user_id="bob")  # another user cannot walk it


def test_recall_reinforces_what_it_returns(mm):
    [city, food] = _facts(mm, "I live in Hangzhou.", "My favourite fruit is mango.")
    r0 = mm.get_record(city, **ALICE)
    mm.retrieve("Which city does the user live in?", **ALICE, as_of=T0 + 5 * DAY, reinforce=False)
    assert mm.get_record(city, **ALICE).access_count == r0.access_count
    res = mm.retrieve("Which city does the user live in?", **ALICE, as_of=T0 + 5 * DAY)
    assert city in [h.record.memory_id for h in res.governed]
    r1 = mm.get_record(city, **ALICE)
    assert r1.access_count == r0.access_count + 1 and r1.last_accessed_at == T0 + 5 * DAY
    assert heat(r1, T0 + 5 * DAY, decay_rate=0.05) > heat(r0, T0 + 5 * DAY, decay_rate=0.05)  # the heat rebound


def test_heat_and_cold_since():
    from memory.core.schema import MemoryRecord

    r = MemoryRecord("x", "t", "u", "c", created_at=T0, last_accessed_at=T0, importance=0.5)
    assert heat(r, T0, decay_rate=0.05) == pytest.approx(0.5)
    assert heat(r, T0 + 10 * DAY, decay_rate=0.05) == pytest.approx(0.5 * math.exp(-0.5))
    crossing = cold_since(r, decay_rate=0.05, floor=0.05)
    assert crossing == pytest.approx(T0 + math.log(10) / 0.05 * DAY)
    assert heat(r, crossing, decay_rate=0.05) == pytest.approx(0.05)
    assert cold_since(r, decay_rate=0.0, floor=0.05) > T0 + 1e9  # no decay: never cold


def test_forgetting_pass_archives_only_facts_cold_for_n_days(mm):
    [city, food] = _facts(mm, "I live in Hangzhou.", "My favourite fruit is mango.")
    # heat 0.5 * exp(-0.05 d) falls under 0.05 after ln(10)/0.05 = 46.05 days; archived 90 days after that
    cold_at = T0 + math.log(10) / 0.05 * DAY
    mm.retrieve("Which city does the user live in?", **ALICE, as_of=T0 + 60 * DAY)  # the city fact is used again

    early = forget(mm, **ALICE, as_of=cold_at + 89 * DAY, floor=0.05, days=90)
    assert early.archived == [] and early.checked == 2
    late = forget(mm, **ALICE, as_of=cold_at + 91 * DAY, floor=0.05, days=90)
    assert late.archived == [food]  # the city fact was reinforced on day 60: still warm enough

    rec = mm.get_record(food, **ALICE)
    assert rec.archived
    assert food not in [r.memory_id for r in mm.records(**ALICE, scope="hot")]
    res = mm.retrieve("favourite fruit mango", **ALICE, as_of=cold_at + 92 * DAY, reinforce=False)
    assert food not in [h.record.memory_id for h in res.governed + res.blind]  # recall never reads the archive
    assert food in [r.memory_id for r in mm.records(**ALICE, scope="all")]  # audits do
    assert any(a["action"] == "forget" for a in mm.store.texts.audit_log())

    report = mm.erase_user(**ALICE)  # erasure reaches cold storage too
    paths = {p.name: p.remaining for p in report.paths}
    assert report.ok and paths["long_term_vectors"] == 0


def test_forget_validates_its_options(mm):
    before = [r.to_dict() for r in mm.records(**ALICE)]
    for bad in ({"floor": -0.1}, {"floor": 2}, {"days": -1}, {"floor": "low"}):
        with pytest.raises(InputError):
            forget(mm, **ALICE, as_of=T0, **bad)
    with pytest.raises(Exception, match="tenant_id"):
        forget(mm, tenant_id={"$ne": "x"}, user_id="alice")
    assert [r.to_dict() for r in mm.records(**ALICE)] == before
