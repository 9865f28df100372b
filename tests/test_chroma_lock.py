"""An embedded Chroma client's calls and the erasure's direct reads of Chroma's SQLite file exclude each other.

Chroma's Rust bindings carry their own SQLite; memory.store.chroma_files reads and rewrites the same file through
Python's, and POSIX locks never exclude two connections of one process. Without one lock around both, an erasure
beside another owner's writer read a "malformed" file (``python -m bench.erase_cost --sizes 1000,5000``: 4 of 4 runs
failed before, 0 of 4 after). Real Chroma on disk, the lexical embedder (the model is not what is tested)."""

from __future__ import annotations

import threading

import numpy as np

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation
from memory.store import chroma_files


def _manager(tmp_path) -> MemoryManager:
    return MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path / "d"))


def test_a_chroma_write_waits_while_chromas_file_is_open_directly(tmp_path):
    mm = _manager(tmp_path)
    mm.add(Message(tenant_id="acme", user_id="alice", content="first note", id="m0"))
    done = threading.Event()

    def write() -> None:
        mm.add(Message(tenant_id="acme", user_id="bob", content="a note of another owner", id="m1"))
        done.set()

    with chroma_files._connect(mm.store.chroma_dir) as db:  # what the erasure's check and rewrite open
        db.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        writer = threading.Thread(target=write)
        writer.start()
        assert not done.wait(1.0), "a Chroma write ran while Chroma's file was open through Python's SQLite"
    assert done.wait(60)
    writer.join()
    assert mm.count(tenant_id="acme", user_id="bob") == 1


def test_collections_of_an_embedded_client_are_serialised_and_read_through(tmp_path):
    mm = _manager(tmp_path)
    client = mm.store.client
    assert isinstance(client, chroma_files.Serialized)
    handle = client.get_or_create_collection("lock-check", embedding_function=None)
    assert isinstance(handle, chroma_files.Serialized) and handle.name == "lock-check"
    handle.upsert(ids=["a"], embeddings=np.ones((1, 8), dtype=np.float32))
    assert handle.count() == 1
