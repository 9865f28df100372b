"""A poison message fails alone: the other messages of its batch, other tenants included, are stored.

The extractor fakes below exist only to make one message fail (the failure path); every other
message goes through the real extractor, the real MiniLM and real Chroma.
"""

import pytest

from memory import MemoryConfig, Message, Owner
from memory.write.extract import extract_facts
from memory.write.ingest import IngestFailed, Ingestor

T0 = 1_780_000_000.0
POISON = "I live in Poisonville."


def _messages():
    cities = ["Hangzhou", "Paris", "Lima", "Oslo", "Cairo", "Quito", "Seoul"]
    msgs = [Message(tenant_id=f"t{i % 3}", user_id=f"u{i % 7}", id=f"m{i}", timestamp=T0 + i,
                    content=f"I live in {cities[i % 7]}. My favourite colour is shade {i}.") for i in range(20)]
    msgs.insert(11, Message(tenant_id="t1", user_id="u2", id="poison", timestamp=T0 + 99, content=POISON))
    return msgs


def _poisoned(text, **kw):  # fake for the failure path: raises on one specific text
    if text == POISON:
        raise RuntimeError("extractor exploded on this message")
    return extract_facts(text, **kw)


def _stored(mm, msgs):
    return [m for m in msgs if not mm.not_ingested([m])]


def test_a_poison_message_in_an_async_batch_fails_alone(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    ing = Ingestor(mm, extractor=_poisoned, batch_size=64)
    msgs = _messages()
    futures = [ing.ingest_async(m) for m in msgs]
    ing.flush()
    errors = {m.id: f.exception() for m, f in zip(msgs, futures)}
    assert [mid for mid, e in errors.items() if e is not None] == ["poison"]
    assert "exploded" in str(errors["poison"])
    assert len(_stored(mm, msgs)) == 20 and mm.not_ingested(msgs) == [msgs[11]]
    for m, f in zip(msgs, futures):
        if m.id != "poison":
            assert [e.message_id for e in f.result()] == [m.id, m.id]
            facts = {r.content for r in mm.records(tenant_id=m.tenant_id, user_id=m.user_id)}
            assert any(m.content.split(".")[0].replace("I live", "The user lives") in c for c in facts)
    assert not any("Poisonville" in r.content for r in mm.records(tenant_id="t1", user_id="u2"))
    ing.close()


def test_a_poison_message_in_a_sync_batch_fails_alone_and_is_reported(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    ing = Ingestor(mm, extractor=_poisoned)
    msgs = _messages()
    with pytest.raises(IngestFailed, match=r"1 message\(s\) failed.*'poison': RuntimeError") as info:
        ing.ingest_many(msgs)
    assert [m.id for m, _ in info.value.failures] == ["poison"]
    assert {e.message_id for e in info.value.entries} == {m.id for m in msgs} - {"poison"}
    assert len(_stored(mm, msgs)) == 20
    # the failed message was not marked: a retry with a working extractor stores it
    Ingestor(mm).ingest(msgs[11])
    assert mm.not_ingested(msgs) == []


def test_an_adjudication_failure_undoes_the_whole_message(make_manager, monkeypatch):
    import memory.write.ingest as ingest_module

    real = ingest_module.adjudicate

    def adjudicate(fact, candidates, **kw):  # fake for the failure path: the second fact of one message raises
        if fact == "The user's favourite colour is teal.":
            raise ValueError("adjudication exploded")
        return real(fact, candidates, **kw)

    monkeypatch.setattr(ingest_module, "adjudicate", adjudicate)
    mm = make_manager(MemoryConfig(threshold=0.2))
    owner = {"tenant_id": "acme", "user_id": "alice"}
    bad = Message(content="I live in Oslo. My favourite colour is teal.", id="bad", timestamp=T0, **owner)
    good = Message(content="I speak Japanese.", id="good", timestamp=T0 + 1, **owner)
    with pytest.raises(IngestFailed):
        Ingestor(mm).ingest_many([bad, good])
    assert [r.content for r in mm.records(**owner)] == ["The user speaks Japanese."]  # Oslo undone with its message
    assert [m.id for m in mm.recent(**owner)] == ["good"]


def test_a_turn_longer_than_the_bound_is_stored_raw_and_logged(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.2))
    owner = {"tenant_id": "acme", "user_id": "alice"}
    long = "I live in Hangzhou. " + "I also like tea. " * 40 + "My favourite colour is blue."
    entries = Ingestor(mm, read_chars=200).ingest(Message(content=long, id="long", timestamp=T0, **owner))
    kinds = [e.decision.decision for e in entries]
    cut = long.rindex(".", 0, 200) + 1  # the last sentence break within the bound
    assert kinds[-1] == "bounded" and f"first {cut} of {len(long)} characters" in entries[-1].decision.reason
    raw = mm.get_record(entries[-1].memory_id, **owner)
    assert raw.content == long  # nothing lost: the whole turn is a record
    facts = [r.content for r in mm.records(**owner) if r.memory_id.startswith("fact-")]
    assert "The user lives in Hangzhou." in facts and not any("blue" in f for f in facts)
    assert [d["decision"] for d in mm.store.texts.decisions(Owner(*owner.values()))][-1] == "bounded"
