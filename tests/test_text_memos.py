"""The write path's process-wide memos (a message's identity, a statement's reading, its markers and measures) hold
users' texts; an erasure empties them (issue 24: before, they kept an erased user's texts)."""

from __future__ import annotations

from memory import Ingestor, LexicalEmbedder, MemoryManager, Message, StoreLocation
from memory.core import textcaches
from memory.write.reading import read_statement


def test_an_erasure_empties_the_memos_that_hold_texts(tmp_path):
    mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path / "d"))
    canary = "My locker code is CANARY-7731 and I moved to Hangzhou."
    Ingestor(mm).ingest(Message(tenant_id="acme", user_id="alice", id="m1", content=canary))
    moved = "I moved to Suzhou-CANARY-7732."
    Ingestor(mm).ingest(Message(tenant_id="acme", user_id="alice", id="m2", content=moved))
    lru = [c for c in textcaches.registered_caches() if not c.tells]  # the memos that cannot tell whose a text is
    held = sum(len(c) for c in lru)
    assert held > 0, "the write path memoised something of alice's texts"
    assert any("CANARY-7731" in r.content for r in mm.records(tenant_id="acme", user_id="alice"))
    report = mm.erase_user(tenant_id="acme", user_id="alice")
    assert sum(len(c) for c in lru) == 0, "emptied whole"
    # and none that can tell holds alice's texts (her own words only: another test of this process may have cached
    # another user's "Suzhou")
    assert textcaches.holding_texts(["CANARY-7731", "CANARY-7732"]) == []
    assert report.removed["text_memos"] >= held
    read_statement("I live in Hangzhou.")  # the memos work again afterwards
    assert sum(len(c) for c in lru) > 0
    mm.close()


def test_every_text_memo_of_the_write_path_is_registered():
    """The memos the write path keys by text are the registered ones (a new lru_cache on text would not be emptied)."""
    from memory.runtime.manager import memory_id_for
    from memory.write import adjudicate, lexicon, reading

    registered = {id(cache.memo) for cache in textcaches.registered_caches() if isinstance(cache, textcaches._LruCache)}
    for memo in (memory_id_for, reading._read, adjudicate._measures, lexicon.change_marker, lexicon.additive_marker,
                 lexicon.qualifier_kinds):
        assert id(memo) in registered, memo
