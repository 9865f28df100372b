"""An erase while the user's messages are being ingested: a defined result, and a consistent store."""

import threading

import pytest

from memory import ErasedError, MemoryConfig, Message
from memory.write.extract import extract_facts
from memory.write.ingest import Ingestor

T0 = 1_780_000_000.0


def _msg(user, i, content):
    return Message(tenant_id="acme", user_id=user, id=f"{user}-{i}", content=content, timestamp=T0 + i)


def test_erase_is_a_barrier_for_queued_and_in_flight_messages(make_manager):
    mm = make_manager(MemoryConfig(window_size=4))
    entered, release = threading.Event(), threading.Event()

    def slow_extractor(text, **kw):  # holds the worker inside the batch, before anything is written
        if "BLOCK" in text:
            entered.set()
            assert release.wait(60)
        return extract_facts(text, **kw)

    ing = Ingestor(mm, extractor=slow_extractor, batch_size=8)
    first = ing.ingest_async(_msg("guest", 0, "I live in Hangzhou. BLOCK"))
    assert entered.wait(60)
    queued = [ing.ingest_async(_msg("guest", 1, "My budget is 300,000 yuan.")),
              ing.ingest_async(_msg("alice", 1, "I live in Shanghai."))]
    report = mm.erase_user(tenant_id="acme", user_id="guest")  # the batch with guest-0 is in flight
    assert report.ok
    after = ing.ingest_async(_msg("guest", 2, "I prefer green tea."))  # accepted after the erase
    release.set()
    ing.flush(timeout=120)

    with pytest.raises(ErasedError, match="was erased while message 'guest-0' was queued"):
        first.result()
    with pytest.raises(ErasedError):
        queued[0].result()
    assert queued[1].result()  # alice's message is stored
    assert after.result()  # a message accepted after the erase belongs to the new life of the user
    guest = mm.records(tenant_id="acme", user_id="guest")
    assert [r.message_id for r in guest] == ["guest-2"]
    assert "Hangzhou" not in mm.summary(tenant_id="acme", user_id="guest")
    assert [m.id for m in mm.recent(tenant_id="acme", user_id="guest")] == ["guest-2"]
    assert [r.message_id for r in mm.records(tenant_id="acme", user_id="alice")] == ["alice-1"]
    assert mm.store.texts.journal_pending() == []
    ing.close()
