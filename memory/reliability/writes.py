"""Reliability checks of the write path's message handling: no turn dropped, one bad message fails alone.

* :func:`check_messages`: restated, retried and id-reused messages, through ``add`` and the
  Ingestor: every distinct turn is stored and served (a failure is a dropped turn, a turn
  answered with another message's record, or a retry stored twice);
* :func:`check_poison`: one poison message in each async batch: a failure is any other message
  of the batch that failed or was not stored (or a poison that did not report its error).

Both run on real Chroma in a folder under ``folder``.
"""

from __future__ import annotations

from pathlib import Path

from memory.core.config import MemoryConfig
from memory.embed.embedders import Embedder
from memory.write.extract import extract_facts
from memory.write.ingest import Ingestor
from memory.runtime.manager import MemoryManager
from memory.reliability.check import Check
from memory.core.schema import Message, OwnerArgs
from memory.store.chroma import StoreLocation

T0 = 1_780_000_000.0


def check_messages(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Send restated values, retries and ids reused across sessions; count turns sent vs stored and served."""
    check = Check("messages")
    mm = MemoryManager(MemoryConfig(threshold=0.2, window_size=1000), embedder=embedder,
                       location=StoreLocation(data_dir=Path(folder) / "messages"), workspace="messages")
    ing = Ingestor(mm)
    sent = stored = served = 0
    for u in range(2 * scale):
        owner: OwnerArgs = {"tenant_id": "acme", "user_id": f"u{u}"}
        # restated value without ids: 300, 200, 300 -> three turns, 300 current
        for amount in (300, 200, 300):
            ing.ingest(Message(content=f"My budget is {amount} yuan.", **owner))
            sent += 1
        active = [r.content for r in mm.records(**owner, scope="active") if r.memory_id.startswith("fact-")]
        served += int(active == ["The user's budget is 300 yuan."])
        # the same id in two sessions, and a true retry: two turns
        for session, text in (("s1", "I live in Hangzhou."), ("s2", "I work as a nurse.")):
            msg = Message(content=text, id="m1", session_id=session, timestamp=T0, **owner)
            sent += 1
            record, again = mm.add(msg), mm.add(msg)
            served += int(record.content == text and again.memory_id == record.memory_id)
        window = mm.recent(**owner)
        stored += len(window)
        raw = [r for r in mm.records(**owner) if r.memory_id.startswith("mem-")]
        check.failures += int(len(raw) != 2)  # each id-reused turn once, the retries not again
        check.cases += 1
    check.failures += (sent - stored) + (3 * 2 * scale - served)
    check.figures.update(turns_sent=sent, turns_stored=stored, served_right=served, dropped=sent - stored)
    return check


def check_poison(embedder: Embedder, scale: int, folder: Path) -> Check:
    """One poison message (its extraction raises) in each async batch of 21: count the others that failed."""
    poison = "This message breaks the extractor."

    def extractor(text: str, **kw):  # the failure path: raises on the poison text only
        if text == poison:
            raise RuntimeError("poison message")
        return extract_facts(text, **kw)

    check = Check("poison")
    mm = MemoryManager(MemoryConfig(threshold=0.2), embedder=embedder,
                       location=StoreLocation(data_dir=Path(folder) / "poison"), workspace="poison")
    ing = Ingestor(mm, extractor=extractor, batch_size=64)
    others_failed = poison_silent = 0
    try:
        for b in range(scale):
            msgs = [Message(tenant_id=f"t{i % 3}", user_id=f"u{i % 5}", id=f"b{b}-m{i}", timestamp=T0 + i,
                            content=f"I live in city {b}-{i}. My favourite colour is shade {i}.") for i in range(20)]
            msgs.insert(10, Message(tenant_id="t1", user_id="u1", id=f"b{b}-poison", timestamp=T0, content=poison))
            futures = [ing.ingest_async(m) for m in msgs]
            ing.flush()
            for m, f in zip(msgs, futures):
                check.cases += 1
                if m.content == poison:
                    poison_silent += int(f.exception() is None)
                else:
                    others_failed += int(f.exception() is not None or bool(mm.not_ingested([m])))
    finally:
        ing.close()
    check.failures = others_failed + poison_silent
    check.figures.update(others_failed=others_failed, poison_unreported=poison_silent, batches=scale)
    return check
