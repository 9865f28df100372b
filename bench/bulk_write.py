"""A bulk write through ``MemoryManager.add_many`` vs raw Chroma ``add`` of the same vectors, side by side, one run.

`python -m bench.bulk_write [--sizes N,N,...] [--users U] [--quick]` (default 5,000, 20,000 and 100,000 messages
of 100 users; --quick: 1,000 of 20) writes on disk, in fresh temporary folders, with a synthetic embedder (random
unit vectors by text, computed before the clock starts: this is about the store, not the model):

* ``raw chroma``: one collection per owner (the engine's layout, cosine space), one ``add`` per owner with all of
  that owner's vectors: what the vector store itself costs;
* ``add_many (default plans)``: the engine's bulk write with plans sized by the work (issue 26);
* ``add_many (batch_size=64)``: the earlier default's plan size, one journaled plan per 64 messages (at the first
  size of 5,000 or fewer only: at 100,000 it took 1,023 s with owners interleaved; each owner's messages now go
  together in every mode, so this row no longer shows the old default's cost).

Each ratio names its baseline: the engine's time over raw Chroma's. The engine's cost per 1,000 messages is also
given for the first and the last quarter of each write (from its progress callback, once per plan): flat means the
last quarter costs what the first did, however full the store already is. Writes bench/results/bulk_write.json and
.md.
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


def _engine(messages: list[Message], embedder: _Remembered, folder: Path,
            batch_size: int | None) -> tuple[float, list[tuple[int, float]]]:
    """Seconds for the whole add_many, and (messages done, seconds since the start) at each of its progress calls."""
    manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(data_dir=folder))
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    manager.add_many(messages, batch_size=batch_size,
                     progress=lambda done, _total: marks.append((done, time.perf_counter() - start)))
    elapsed = time.perf_counter() - start
    assert manager.store.count() == len(messages)
    manager.store.drop()
    return elapsed, marks


def per_thousand(marks: list[tuple[int, float]], total: int) -> tuple[float, float]:
    """Seconds per 1,000 messages over the first and over the last quarter of a write (from its progress marks)."""
    def rate(lo: float, hi: float) -> float:
        inside = [(0, 0.0)] + marks
        a = max((m for m in inside if m[0] <= lo), key=lambda m: m[0])
        b = min((m for m in inside if m[0] >= hi), key=lambda m: m[0])
        return 1000 * (b[1] - a[1]) / max(b[0] - a[0], 1)
    return rate(0, total / 4), rate(3 * total / 4, total)


def measure(n: int, users: int, tmp: Path, *, before: bool) -> dict:
    messages = _messages(n, users)
    embedder = _Remembered([m.content for m in messages])
    seconds: dict[str, float] = {"raw chroma": _raw(messages, embedder, tmp / f"raw{n}")}
    seconds["add_many (default plans)"], marks = _engine(messages, embedder, tmp / f"plans{n}", None)
    if before:
        seconds["add_many (batch_size=64)"], _ = _engine(messages, embedder, tmp / f"b64-{n}", 64)
    first, last = per_thousand(marks, n)
    raw = seconds["raw chroma"]
    return {"messages": n, "users": users, "seconds": {k: round(v, 3) for k, v in seconds.items()},
            "ratio_to_raw_chroma": {k: round(v / raw, 2) for k, v in seconds.items()},
            "default_s_per_1000_first_quarter": round(first, 3), "default_s_per_1000_last_quarter": round(last, 3),
            "last_over_first_quarter": round(last / first, 2) if first else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="5000,20000,100000", help="messages per run, comma-separated")
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--quick", action="store_true", help="1,000 messages of 20 users")
    a = p.parse_args(argv)
    sizes, users = ([1_000], 20) if a.quick else ([int(x) for x in a.sizes.split(",") if x], a.users)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, n in enumerate(sizes):
            rows.append(measure(n, users, Path(tmp), before=i == 0 and n <= 5_000))
    lines = ["Bulk write on disk, synthetic vectors, side by side in one run; every ratio is over raw Chroma `add` "
             "of the same vectors, one collection per owner.", "",
             "| messages | users | path | seconds | messages/s | vs raw Chroma add | s per 1,000: first quarter -> "
             "last quarter |", "| ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        n = r["messages"]
        for name, sec in r["seconds"].items():
            slope = (f"{r['default_s_per_1000_first_quarter']:.2f} -> {r['default_s_per_1000_last_quarter']:.2f}"
                     if name.startswith("add_many (default") else "")
            lines.append(f"| {n:,} | {r['users']} | {name} | {sec:.2f} | {n / sec:,.0f} | "
                         f"{r['ratio_to_raw_chroma'][name]:.2f}x | {slope} |")
    table = "\n".join(lines)
    write_results("bulk_write", {"rows": rows, "target_ratio": 3.0,
                                 "meets_target": all(r["ratio_to_raw_chroma"]["add_many (default plans)"] <= 3.0
                                                     for r in rows)}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
