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
    Ingestor(mm).ingest(Message(tenant_id="acme", user_id="alice", id="m2", content="I moved to Suzhou."))
    held = textcaches.cached_texts()
    assert held > 0, "the write path memoised something of alice's texts"
    assert any("CANARY-7731" in r.content for r in mm.records(tenant_id="acme", user_id="alice"))
    report = mm.erase_user(tenant_id="acme", user_id="alice")
    assert textcaches.cached_texts() == 0
    assert report.removed["text_memos"] >= held
    read_statement("I live in Hangzhou.")  # the memos work again afterwards
    assert textcaches.cached_texts() > 0
    mm.close()


def test_every_text_memo_of_the_write_path_is_registered():
    """The memos the write path keys by text are the registered ones (a new lru_cache on text would not be emptied)."""
    from memory.runtime.manager import memory_id_for
    from memory.write import adjudicate, lexicon, reading

    registered = {id(memo) for memo in textcaches._MEMOS}
    for memo in (memory_id_for, reading._read, adjudicate._measures, lexicon.change_marker, lexicon.additive_marker,
                 lexicon.qualifier_kinds):
        assert id(memo) in registered, memo
