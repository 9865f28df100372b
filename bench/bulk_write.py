"""A bulk write through ``MemoryManager.add_many`` vs raw Chroma ``add`` of the same vectors, side by side, one run.

`python -m bench.bulk_write [--messages N] [--users U] [--quick]` (default 5,000 messages of 100 users; --quick:
1,000 of 20) writes on disk, in fresh temporary folders, with a synthetic embedder (random unit vectors by text:
this is about the store, not the model; its cost is timed apart and taken out of the engine's figure):

* ``raw chroma``: one collection per owner (the engine's layout, cosine space), one ``add`` per owner with all of
  that owner's vectors: what the vector store itself costs;
* ``add_many (default plans)``: the engine's bulk write with plans sized by the work (issue 26);
* ``add_many (batch_size=64)``: the earlier default, one journaled plan per 64 messages.

Each ratio names its baseline: the engine's time over raw Chroma's. Writes bench/results/bulk_write.json and .md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import chromadb

from memory import MemoryConfig, MemoryManager, Message, StoreLocation

from .common import SyntheticEmbedder, write_results

T0 = 1_780_000_000.0


def _messages(n: int, users: int) -> list[Message]:
    return [Message(tenant_id="bench", user_id=f"user{i % users}", content=f"note {i} of user {i % users}: "
                    "the launch plan moves to the next sprint", id=f"m{i}", timestamp=T0 + i) for i in range(n)]


class _Remembered:
    """The synthetic embedder with its vectors computed before the clock starts (the engine's figure is the
    store's, not the embedder's)."""

    def __init__(self, texts: list[str]) -> None:
        inner = SyntheticEmbedder()
        self.name, self.dim = inner.name, inner.dim
        self._vectors = dict(zip(texts, inner.embed(texts)))

    def embed(self, texts):
        import numpy as np

        return np.stack([self._vectors[t] for t in texts])


def _raw(messages: list[Message], embedder: _Remembered, folder: Path) -> float:
    client = chromadb.PersistentClient(path=str(folder))
    by_owner: dict[str, list[Message]] = {}
    for m in messages:
        by_owner.setdefault(m.user_id, []).append(m)
    start = time.perf_counter()
    for user, owned in by_owner.items():
        collection = client.create_collection(f"raw-{user}", configuration={"hnsw": {"space": "cosine"}},
                                              embedding_function=None)
        collection.add(ids=[m.id for m in owned], embeddings=embedder.embed([m.content for m in owned]))
    return time.perf_counter() - start


def _engine(messages: list[Message], embedder: _Remembered, folder: Path, batch_size: int | None) -> float:
    manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(data_dir=folder))
    start = time.perf_counter()
    manager.add_many(messages, batch_size=batch_size)
    elapsed = time.perf_counter() - start
    assert manager.store.count() == len(messages)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=5_000)
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--quick", action="store_true", help="1,000 messages of 20 users")
    a = p.parse_args(argv)
    n, users = (1_000, 20) if a.quick else (a.messages, a.users)
    messages = _messages(n, users)
    embedder = _Remembered([m.content for m in messages])
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["raw chroma"] = _raw(messages, embedder, Path(tmp) / "raw")
        rows["add_many (default plans)"] = _engine(messages, embedder, Path(tmp) / "plans", None)
        rows["add_many (batch_size=64)"] = _engine(messages, embedder, Path(tmp) / "b64", 64)
    raw = rows["raw chroma"]
    table = "\n".join(
        [f"Bulk write on disk: {n:,} messages of {users} users, synthetic vectors (one run, side by side).", "",
         "| path | seconds | messages/s | vs raw Chroma add |", "| --- | ---: | ---: | ---: |"]
        + [f"| {name} | {s:.2f} | {n / s:,.0f} | {s / raw:.2f}x |" for name, s in rows.items()])
    write_results("bulk_write", {"messages": n, "users": users,
                                 "seconds": {k: round(v, 3) for k, v in rows.items()},
                                 "ratio_to_raw_chroma": {k: round(v / raw, 2) for k, v in rows.items()}}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
