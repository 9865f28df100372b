"""The write path on real Chroma and the real MiniLM: decisions applied, version chains, idempotence,
non-blocking ingestion, bad input, the decision log and its erasure."""

import threading

import pytest

from memory import MemoryConfig, Message, Owner
from memory.core.errors import InputError
from memory.write.extract import extract_facts
from memory.write.ingest import Ingestor

T0 = 1_780_000_000.0
ALICE = {"tenant_id": "acme", "user_id": "alice"}


def _msg(content, mid, t=0, **kw):
    owner = {**ALICE, **{k: kw.pop(k) for k in ("tenant_id", "user_id") if k in kw}}
    return Message(content=content, id=mid, timestamp=T0 + t, **owner, **kw)


def _active(mm, **owner):
    return {r.content: r for r in mm.records(**(owner or ALICE), scope="active", as_of=T0 + 10_000)}


@pytest.fixture
def setup(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    return mm, Ingestor(mm)


def test_new_then_duplicate_bumps_the_stored_fact_without_a_new_vector(setup):
    mm, ing = setup
    [first] = ing.ingest(_msg("I am allergic to peanuts.", "m1"))
    assert first.decision.decision == "new" and first.decision.candidate is None
    stored = mm.get_record(first.memory_id, **ALICE)
    assert stored.source_message_ids == ["m1"] and stored.category == "user_profile" and stored.version == 1
    count = mm.store.count()

    [dup] = ing.ingest(_msg("Peanuts give me an allergic reaction.", "m2", t=60))
    assert dup.decision.decision == "duplicate" and dup.memory_id == first.memory_id
    assert dup.decision.plain_rule == "update"  # at ~0.92 the bands alone would have retired the fact
    assert mm.store.count() == count  # no new vector
    bumped = mm.get_record(first.memory_id, **ALICE)
    assert bumped.access_count == stored.access_count + 1
    assert bumped.last_verified_at == T0 + 60 > stored.last_verified_at
    assert bumped.source_message_ids == ["m1", "m2"]


def test_update_builds_a_version_chain_and_the_old_facts_are_never_recalled(setup):
    mm, ing = setup
    ids = []
    for i, amount in enumerate(["500,000", "300,000", "200,000"]):
        [e] = ing.ingest(_msg(f"The campaign budget is {amount} yuan.", f"b{i}", t=i * 60))
        ids.append(e.memory_id)
        if i:
            assert e.decision.decision == "update" and e.superseded == ids[i - 1]
    assert ing.ingest(_msg("The campaign budget is 300,000 yuan.", "b1"))[0].decision.plain_rule == "duplicate"

    v1, v2, v3 = (mm.get_record(i, **ALICE) for i in ids)
    assert (v1.version, v2.version, v3.version) == (1, 2, 3)
    assert v1.is_deprecated and v1.superseded_by == v2.memory_id and v1.supersedes == ""
    assert v2.is_deprecated and v2.superseded_by == v3.memory_id and v2.supersedes == v1.memory_id
    assert not v3.is_deprecated and v3.superseded_by == "" and v3.supersedes == v2.memory_id
    for member in ids:  # inspectable from any version, oldest first
        assert [r.memory_id for r in ing.version_chain(member, **ALICE)] == ids

    res = mm.retrieve("What is the campaign budget?", **ALICE, as_of=T0 + 1000)
    assert [h.record.memory_id for h in res.governed] == [v3.memory_id]
    dropped = {d.hit.record.memory_id: d for d in res.dropped}
    assert dropped[v1.memory_id].stage == dropped[v2.memory_id].stage == "deprecated"
    assert v3.memory_id in dropped[v2.memory_id].reason


def test_changed_city_at_low_cosine_is_an_update(setup):
    mm, ing = setup
    [old] = ing.ingest(_msg("I live in Hangzhou.", "c1"))
    [new] = ing.ingest(_msg("I moved to Shanghai last month.", "c2", t=60))
    assert new.decision.decision == "update" and new.decision.plain_rule == "new"
    assert set(_active(mm)) == {"The user moved to Shanghai last month."}
    assert mm.get_record(old.memory_id, **ALICE).superseded_by == new.memory_id


def test_different_contexts_coexist_with_their_tags(setup):
    mm, ing = setup
    ing.ingest(_msg("On weekdays I wake up at 6:30.", "w1"))
    [e] = ing.ingest(_msg("On weekends I wake up at 9:00.", "w2", t=60))
    assert e.decision.decision == "coexist" and e.decision.plain_rule == "update"
    active = _active(mm)
    assert active["On weekdays the user wakes up at 6:30."].context_tags == ["weekday"]
    assert active["On weekends the user wakes up at 9:00."].context_tags == ["weekend"]
    assert not any(r.is_deprecated for r in mm.records(**ALICE))


def test_negation_flip_retires_the_old_fact(setup):
    mm, ing = setup
    ing.ingest(_msg("I'm vegetarian.", "v1"))
    [e] = ing.ingest(_msg("I'm no longer vegetarian.", "v2", t=60))
    assert e.decision.decision == "update"
    assert set(_active(mm)) == {"The user is no longer vegetarian."}


def test_one_message_many_facts_and_candidates_stay_within_owner_and_category(setup):
    mm, ing = setup
    ing.ingest(_msg("I live in Hangzhou.", "x1", tenant_id="acme", user_id="bob"))
    ing.ingest(_msg("I live in Hangzhou.", "x1", tenant_id="globex", user_id="alice"))
    entries = ing.ingest(_msg("I live in Hangzhou, my budget is about 1500 yuan, and I want a pink watch.", "x2"))
    assert [e.decision.decision for e in entries] == ["new", "new", "new"]  # other owners' facts are no candidates
    assert [e.category for e in entries] == ["user_profile", "business_rule", "preference"]
    assert all(e.decision.candidate is None or e.decision.candidate.id in {r.memory_id for r in mm.records(**ALICE)}
               for e in entries)
    assert len(mm.records(tenant_id="acme", user_id="bob")) == 1


def test_reingesting_a_message_is_idempotent(setup):
    mm, ing = setup
    msg = _msg("I live in Hangzhou. My favourite colour is blue.", "i1")
    first = ing.ingest(msg)
    snapshot = {r.memory_id: (r.access_count, r.last_verified_at) for r in mm.records(**ALICE)}
    log_size = mm.store.texts.count_decisions(Owner(*ALICE.values()))
    again = ing.ingest(msg)
    twice = ing.ingest_many([msg, msg])
    assert [e.to_dict() for e in again] == [e.to_dict() for e in first] == [e.to_dict() for e in twice]
    assert {r.memory_id: (r.access_count, r.last_verified_at) for r in mm.records(**ALICE)} == snapshot
    assert mm.store.texts.count_decisions(Owner(*ALICE.values())) == log_size and mm.store.count() == 2


def test_fillers_questions_and_assistant_turns_store_nothing(setup):
    mm, ing = setup
    assert ing.ingest(_msg("ok thanks", "f1")) == []
    assert ing.ingest(_msg("哈哈好的", "f2")) == []
    assert ing.ingest(_msg("What's for lunch?", "f3")) == []
    assert ing.ingest(_msg("I live in Paris.", "f4", role="assistant")) == []
    assert mm.store.count() == 0


def test_decision_log_is_persisted_and_erased_with_the_user(setup):
    mm, ing = setup
    ing.ingest(_msg("The deadline is June 30.", "d1"))
    ing.ingest(_msg("The deadline moved to July 15.", "d2", t=60))
    ing.ingest(_msg("I live in Berlin.", "o1", tenant_id="acme", user_id="bob"))
    log = ing.decisions(**ALICE)
    assert [(d["message_id"], d["decision"]) for d in log] == [("d1", "new"), ("d2", "update")]
    assert log[1]["plain_rule"] == "new" and log[1]["candidate"]["text"] == "The deadline is June 30."
    assert {"fact", "candidate", "similarity", "plain_rule", "decision", "reason", "memory_id"} <= set(log[1])

    report = mm.erase_user(**ALICE)
    paths = {p.name: p.remaining for p in report.paths}
    assert report.ok and paths["decision_log"] == 0
    assert report.removed["decision_log"] == 2
    assert ing.decisions(**ALICE) == [] and len(ing.decisions(tenant_id="acme", user_id="bob")) == 1


class _GatedExtractor:
    """The real extractor, held at a gate the test opens (proves the caller did not wait for it)."""

    def __init__(self):
        self.gate, self.entered = threading.Event(), threading.Event()

    def __call__(self, text, **kw):
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return extract_facts(text, **kw)


def test_ingest_async_returns_before_the_work_and_flush_completes_it(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    mm.add(Message(content="Alice's raw note about Hangzhou.", id="raw1", timestamp=T0, **ALICE))
    gated = _GatedExtractor()
    ing = Ingestor(mm, extractor=gated)
    before = mm.store.count()

    futures = [ing.ingest_async(_msg("I live in Hangzhou.", "a1")),
               ing.ingest_async(_msg("I moved to Shanghai last month.", "a2", t=60))]
    assert not any(f.done() for f in futures)  # returned while the worker is held at the gate
    assert gated.entered.wait(30) and ing.pending == 2 and mm.store.count() == before
    res = mm.retrieve("Where does Alice live?", **ALICE, as_of=T0 + 100)  # recall does not wait for ingestion
    assert [h.record.message_id for h in res.governed] == ["raw1"]

    gated.gate.set()
    ing.flush()
    assert ing.pending == 0 and all(f.done() for f in futures)
    assert [e.decision.decision for e in futures[1].result()] == ["update"]
    assert mm.store.count() == before + 2
    assert "The user moved to Shanghai last month." in _active(mm)
    ing.close()


@pytest.mark.parametrize("bad, words", [
    ("just a string", "must be a Message"),
    (None, "must be a Message"),
    (Message(content="", id="e1", **ALICE), "must not be empty"),
    (Message(content="   ", id="e2", **ALICE), "must not be empty"),
    (Message(content="x" * 1_000_000, id="big", **ALICE), "limit"),
])
def test_bad_input_is_a_clear_error_and_leaves_the_store_unchanged(setup, bad, words):
    mm, ing = setup
    ing.ingest(_msg("I live in Hangzhou.", "ok1"))
    before = (mm.store.count(), mm.store.texts.count_decisions(), [r.to_dict() for r in mm.records(**ALICE)])
    good = _msg("I moved to Shanghai.", "ok2", t=60)
    for call in (lambda: ing.ingest(bad), lambda: ing.ingest_async(bad), lambda: ing.ingest_many([good, bad])):
        with pytest.raises(InputError) as err:
            call()
        assert words in str(err.value)
    ing.flush()
    after = (mm.store.count(), mm.store.texts.count_decisions(), [r.to_dict() for r in mm.records(**ALICE)])
    assert after == before and ing.pending == 0


def test_non_text_content_is_refused_before_it_reaches_the_write_path():
    with pytest.raises(InputError, match="content must be text"):
        Message(content=12345, **ALICE)


STORY = [
    "I live in Hangzhou.", "I work as a teacher.", "My favourite colour is blue.", "The team has 8 people.",
    "On weekdays I wake up at 6:30.", "I live in Shanghai now.", "Blue is my favourite colour.",
    "The team has grown to 12 people.", "On weekends I wake up at 9:00.", "I now work as a data scientist.",
]


def test_a_batch_decides_like_one_message_at_a_time(make_manager):
    """A batch with many facts of one owner reads the owner's facts once (not one knn per fact); same outcome."""
    one_by_one, batched = make_manager(), make_manager()
    seq = [e for i, t in enumerate(STORY) for e in Ingestor(one_by_one).ingest(_msg(t, f"s{i}", t=i))]
    bulk = Ingestor(batched).ingest_many([_msg(t, f"s{i}", t=i) for i, t in enumerate(STORY)])
    assert len(bulk) == len(STORY) >= 8
    assert [e.decision.decision for e in bulk] == [e.decision.decision for e in seq]
    assert [e.decision.decision for e in bulk] == ["new", "new", "new", "new", "new", "update", "duplicate", "update",
                                                   "coexist", "update"]
    assert set(_active(batched)) == set(_active(one_by_one)) and len(_active(batched)) == 6
    # a later batch also reads the stored facts in bulk
    later = Ingestor(batched).ingest_many([_msg(t, f"r{i}", t=100 + i) for i, t in enumerate(STORY[5:] * 2)])
    assert {e.decision.decision for e in later} == {"duplicate"} and len(_active(batched)) == 6


def test_recall_reinforcement_during_a_batch_is_not_overwritten(make_manager):
    """A test-only subclass holds the worker between reading candidates and writing."""
    entered, gate = threading.Event(), threading.Event()

    class HeldIngestor(Ingestor):
        def _decide(self, pending, wholes=None):
            out = super()._decide(pending, wholes)
            entered.set()
            assert gate.wait(30)
            return out

    mm = make_manager(MemoryConfig(threshold=0.2))
    [first] = Ingestor(mm).ingest(_msg("I live in Hangzhou.", "h1"))
    held = HeldIngestor(mm)
    future = held.ingest_async(_msg("Hangzhou is where I live.", "h2", t=60))
    assert entered.wait(30)
    res = mm.retrieve("Where does the user live?", **ALICE, as_of=T0 + 100)  # reinforces the stored fact meanwhile
    assert [h.record.memory_id for h in res.governed] == [first.memory_id]
    gate.set()
    held.flush()
    assert future.result()[0].decision.decision == "duplicate"
    rec = mm.get_record(first.memory_id, **ALICE)
    assert rec.access_count == 2  # one recall + one restatement: neither lost
    assert rec.last_accessed_at == T0 + 100 and rec.last_verified_at == T0 + 60
    held.close()
