"""An erasure's disk scan that finds the erased user's text in the text store's file rebuilds that file and searches
again, instead of only reporting it.

Beside another owner's writer, SQLite's page rebalancing can leave a copy of a deleted row in a page's unused area,
where ``secure_delete`` does not reach (``python -m bench.erase_cost --sizes 1000,5000``: an erased text found in
the text store's file in 2 of 4 runs). The test plants such a copy the same way SQLite leaves one: bytes of the
user's text in a row deleted without ``secure_delete``. Real Chroma on disk, the lexical embedder."""

from __future__ import annotations

import sqlite3

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation

SECRET = "alice keeps the spare key under the blue flower pot by the back door"


def test_a_trace_in_the_text_file_is_rebuilt_away_and_the_erasure_verified(tmp_path):
    mm = MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path / "d"))
    mm.add(Message(tenant_id="acme", user_id="alice", content=SECRET, id="m0"))
    mm.add(Message(tenant_id="acme", user_id="bob", content="bob likes tea", id="m1"))
    text_file = mm.store.text_file
    assert text_file is not None
    planted = sqlite3.connect(str(text_file), isolation_level=None)
    planted.execute("PRAGMA secure_delete = OFF")
    planted.execute("CREATE TABLE IF NOT EXISTS leftover (x TEXT)")
    planted.execute("INSERT INTO leftover VALUES (?)", (SECRET + " " + "x" * 2000,))
    planted.execute("DELETE FROM leftover")
    planted.close()
    assert SECRET.encode() in text_file.read_bytes()

    report = mm.erase_user(tenant_id="acme", user_id="alice", disk_scan=True)
    assert report.ok, report.paths
    assert report.removed.get("text_file_rebuilt") == 1
    assert SECRET.encode() not in text_file.read_bytes()
    assert [m.content for m in mm.recent(tenant_id="acme", user_id="bob")] == ["bob likes tea"]
