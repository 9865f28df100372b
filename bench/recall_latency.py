"""Governed recall latency vs a raw Chroma query with the same where and n_results; blind vs governed.

Stores N synthetic memories (random unit vectors, so the benchmark measures the store and the
engine, not the model) for 100 users in 10 tenants, then times, in alternating order on the same
store, with the query already embedded in every case:

* raw:      collection.query(where=<the governed where>, n_results=top_k*overfetch)
* governed: MemoryManager.candidates(include_blind=False) + recall.govern (the production path)
* blind:    the blind query + recall.blind (what "just top-k" costs)

Run: python -m bench.recall_latency [--sizes 1000,10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
from tqdm import tqdm

from memory import MemoryConfig, MemoryManager, StoreLocation
from memory.recall import blind, govern
from memory.schema import MemoryRecord
from memory.store import scope_where

from .common import SyntheticEmbedder, peak_rss_mb, percentiles, write_results

USERS, TENANTS = 100, 10
T0 = 1_780_000_000.0


def owner_of(i: int) -> tuple[str, str]:
    u = i % USERS
    return f"tenant-{u % TENANTS}", f"user-{u}"


def build(n: int, seed: int = 7) -> MemoryManager:
    mm = MemoryManager(MemoryConfig(top_k=5, overfetch=4, threshold=0.0), embedder=SyntheticEmbedder(),
                       location=StoreLocation(), workspace=f"bench-{n}-{int(time.time())}")
    rng = np.random.default_rng(seed)
    batch = 5000
    for start in tqdm(range(0, n, batch), desc=f"storing {n:,}", unit="batch", leave=False):
        idx = range(start, min(start + batch, n))
        vecs = rng.standard_normal((len(idx), 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        records = []
        for i in idx:
            t, u = owner_of(i)
            records.append(MemoryRecord(memory_id=f"r{i}", tenant_id=t, user_id=u, content=f"memory {i} of {u}",
                                        created_at=T0 + i, last_accessed_at=T0 + i, is_deprecated=(i % 17 == 0)))
        mm.store.add(records, vecs)
    return mm


def measure(mm: MemoryManager, queries: int, seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    cfg = mm.config
    n = cfg.top_k * cfg.overfetch
    now = T0 + 10**7
    times = {"raw": [], "governed": [], "blind": []}
    for q in tqdm(range(queries), desc="querying", leave=False):
        vec = rng.standard_normal(384).astype(np.float32)
        vec /= np.linalg.norm(vec)
        t, u = owner_of(int(rng.integers(USERS)))
        where = scope_where(t, u, scope="active", now=now)

        def raw():
            mm.store.collection.query(query_embeddings=vec.reshape(1, -1), n_results=n, where=where,
                                      include=["metadatas", "distances"])

        def governed():
            c = mm.candidates("q", tenant_id=t, user_id=u, as_of=now, include_blind=False, query_vector=vec)
            govern(c, cfg)

        def blind_only():
            hot = mm.store.query(vec, tenant_id=t, user_id=u, n=n, scope="hot")
            from memory.recall import Candidates
            blind(Candidates("q", t, u, now, hot, []), cfg.top_k)

        order = [("raw", raw), ("governed", governed), ("blind", blind_only)]
        if q % 2:
            order.reverse()
        for name, fn in order:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    out = {k: percentiles(v[5:]) for k, v in times.items()}  # first few are warm-up
    out["ratio_governed_vs_raw_p50"] = out["governed"]["p50_ms"] / out["raw"]["p50_ms"]
    out["ratio_governed_vs_raw_p95"] = out["governed"]["p95_ms"] / out["raw"]["p95_ms"]
    out["ratio_governed_vs_blind_p50"] = out["governed"]["p50_ms"] / out["blind"]["p50_ms"]
    return out


def run(sizes: list[int], queries: int) -> dict:
    rows = []
    for n in sizes:
        mm = build(n)
        res = measure(mm, queries)
        res.update(size=n, peak_rss_mb=peak_rss_mb())
        rows.append(res)
        mm.store.drop()
        del mm
        gc.collect()
    table = ["| memories | raw p50 ms | governed p50 ms | governed/raw p50 | governed/raw p95 | blind p50 ms | peak RSS MB |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        table.append(f"| {r['size']:,} | {r['raw']['p50_ms']:.2f} | {r['governed']['p50_ms']:.2f} | "
                     f"{r['ratio_governed_vs_raw_p50']:.2f} | {r['ratio_governed_vs_raw_p95']:.2f} | "
                     f"{r['blind']['p50_ms']:.2f} | {r['peak_rss_mb']:.0f} |")
    write_results("recall_latency", {"users": USERS, "tenants": TENANTS, "queries": queries, "rows": rows},
                  "\n".join(table))
    print("\n".join(table))
    return {"rows": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall_latency")
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--quick", action="store_true", help="1,000 and 10,000 memories, 60 queries")
    a = p.parse_args(argv)
    sizes = [1000, 10000] if a.quick else [int(s) for s in a.sizes.split(",")]
    run(sizes, 60 if a.quick else a.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
