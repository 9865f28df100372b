"""Server mode: the same store code against a real `chroma run` on a loopback port (started and stopped here)."""

import pytest

from memory import MemoryConfig, MemoryManager, Message, Owner, StoreLocation


@pytest.mark.server
def test_recall_isolation_and_erase_against_a_real_server(chroma_server, minilm, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("MEMORY_CHROMA_PORT", str(chroma_server))
    location = StoreLocation.from_env(tmp_path / "text")
    assert location.host == "127.0.0.1" and location.port == chroma_server
    mm = MemoryManager(MemoryConfig(threshold=0.3), embedder=minilm, location=location, workspace="server-test")
    import chromadb

    assert isinstance(mm.store.client, chromadb.api.client.Client)
    assert type(mm.store.client._server).__name__ == "FastAPI"  # HTTP, not the embedded engine
    mm.add_many([
        Message(tenant_id="acme", user_id="alice", content="The campaign budget is 300,000 yuan.", id="a1"),
        Message(tenant_id="acme", user_id="bob", content="The campaign budget is 300,000 yuan.", id="b1"),
        Message(tenant_id="acme", user_id="alice", content="Lunch was noodles.", id="a2"),
    ])
    res = mm.retrieve("campaign budget", tenant_id="acme", user_id="alice", reinforce=False)
    assert [h.record.message_id for h in res.governed] == ["a1"]
    assert all(h.record.user_id == "alice" for h in res.blind)
    bob = mm.store.texts.count_owner_rows(Owner("acme", "bob"))
    report = mm.erase_user(tenant_id="acme", user_id="alice")
    assert report.ok and report.others_touched == 0
    assert mm.store.texts.count_owner_rows(Owner("acme", "bob")) == bob and bob["texts"] == 1
    # a second client (another process would do the same) sees the same server state
    other = MemoryManager(embedder=minilm, location=location, workspace="server-test")
    assert other.store.count() == 1
