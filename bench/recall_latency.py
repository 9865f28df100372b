"""Governed recall latency against its limit, the exact numpy scan of the user's own vectors.

Stores N synthetic memories (random unit vectors from text hashes, so the benchmark measures the store
and the engine, not the model) for 100 users in 10 tenants, every 17th deprecated, then times, in
alternating order on the same store, for random users:

* scan:     the limit: ``matrix @ q`` and a top-k over that user's vectors, already in memory as numpy
* governed: ``MemoryManager.retrieve(query, reinforce=False, include_blind=False)``: the production read
            path, query embedding (synthetic) included, lifecycle, threshold, score, budget
* raw:      one ``query`` on the user's own Chroma collection (n_results = top_k * overfetch)

a **first after a write** column: a new message written to a random user through ``MemoryManager.add`` (not
timed), then that user's governed recall (timed), as a participant adds a message and asks: the store keeps the
owner's vector matrix current on write, so this should cost what a warm recall costs;

the **build**: the store written owner by owner in batches (the engine's ``MemoryStore.add``: vectors, texts,
metadata) vs raw Chroma ``add`` of the same vectors in the same layout (one cosine collection per owner, same
batches), timed side by side, and the resident memory after each size's build and queries;

and a shared-vs-alone column: the same user's governed recall in a store that holds only that user's
memories, as a ratio to the shared store (where 99% of the data is other owners').

``--server`` runs the same against a real ``chroma run`` on a loopback port (texts in a local folder).

Run: python -m bench.recall_latency [--sizes 10000,100000,1000000] [--queries 300] [--server-sizes 100000]
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from memory import MemoryConfig, MemoryManager, Message, Owner, StoreLocation
from memory.core.schema import MemoryRecord

from .common import SyntheticEmbedder, chroma_server, peak_rss_mb, percentiles, write_results

# The vector cache sized to the benchmark's working set: 100 owners of up to 10,000 vectors (1.5 GB at
# 1,000,000 memories; Chroma's own HNSW index holds the same vectors in memory once loaded).
os.environ.setdefault("MEMORY_VECTOR_CACHE_MB", "2048")

USERS, TENANTS = 100, 10
T0 = 1_780_000_000.0
BATCH = 5000


def owner_of(i: int) -> tuple[str, str]:
    u = i % USERS
    return f"tenant-{u % TENANTS}", f"user-{u}"


def build(n: int, location: StoreLocation, *, only: int | None = None, seed: int = 7) -> MemoryManager:
    """A store of ``n`` memories spread over USERS owners (``only``: keep just that user's share), written
    owner by owner in batches of up to BATCH (one collection write per batch)."""
    mm = MemoryManager(MemoryConfig(top_k=5, overfetch=4, threshold=0.0), embedder=SyntheticEmbedder(),
                       location=location, workspace=f"bench-{n}-{only}-{time.time_ns()}")
    users = range(USERS) if only is None else [only]
    bar = tqdm(total=n if only is None else len(range(only, n, USERS)), unit="memory", leave=False,
               desc=f"storing {n:,}" + (f" (user {only} only)" if only is not None else ""))
    for user in users:
        mine = range(user, n, USERS)
        for start in range(0, len(mine), BATCH):
            idx = mine[start : start + BATCH]
            vecs = _vectors(n, user, idx, seed)
            t, u = owner_of(user)
            records = [MemoryRecord(memory_id=f"r{i}", tenant_id=t, user_id=u, content=f"memory {i} of {u}",
                                    created_at=T0 + i, last_accessed_at=T0 + i, is_deprecated=(i % 17 == 0))
                       for i in idx]
            mm.store.add(records, vecs)
            bar.update(len(idx))
    bar.close()
    return mm


def _vectors(n: int, user: int, idx: range, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed * 1000 + user)
    vecs = rng.standard_normal((len(idx), 384)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def raw_build(n: int, folder: Path | None, server_port: int | None = None) -> float:
    """Seconds for raw Chroma to ``add`` the same vectors as :func:`build`, one cosine collection per owner, the same
    batches (the reference the engine's build is compared with)."""
    import chromadb

    client = (chromadb.HttpClient(host="127.0.0.1", port=server_port) if server_port
              else chromadb.PersistentClient(path=str(folder)) if folder else chromadb.EphemeralClient())
    tag = time.time_ns()
    start = time.perf_counter()
    for user in tqdm(range(USERS), desc=f"raw Chroma add {n:,}", leave=False):
        mine = range(user, n, USERS)
        collection = client.create_collection(f"raw-{tag}-{user}", configuration={"hnsw": {"space": "cosine"}},
                                              embedding_function=None)
        for begin in range(0, len(mine), BATCH):
            idx = mine[begin : begin + BATCH]
            collection.add(ids=[f"r{i}" for i in idx], embeddings=_vectors(n, user, idx))
    elapsed = time.perf_counter() - start
    for user in range(USERS):
        client.delete_collection(f"raw-{tag}-{user}")
    return elapsed


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _owner_matrix(mm: MemoryManager, t: str, u: str) -> np.ndarray:
    return mm.store.owner_vectors(Owner(t, u))[1]


def measure(mm: MemoryManager, queries: int, *, users: list[int], seed: int = 11) -> dict:
    cfg = mm.config
    n = cfg.top_k * cfg.overfetch
    now = T0 + 10**7
    matrices = {u: _owner_matrix(mm, *owner_of(u)) for u in users}
    for u in users:  # steady state: every owner read once (the engine's vector cache, Chroma's index loaded)
        mm.retrieve("warm-up", tenant_id=owner_of(u)[0], user_id=owner_of(u)[1], as_of=now, reinforce=False,
                    include_blind=False)
    times: dict[str, list[float]] = {"scan": [], "governed": [], "raw": []}
    rng = np.random.default_rng(seed)
    for q in tqdm(range(queries), desc="querying", leave=False):
        user = users[int(rng.integers(len(users)))]
        t, u = owner_of(user)
        text = f"query {q} {rng.integers(10**9)}"
        vec = mm.embedder.embed([text])[0]
        matrix = matrices[user]
        handle = mm.store.client.get_collection(mm.store.texts.collection_of(Owner(t, u)))

        def scan():
            sims = matrix @ vec
            top = np.argpartition(-sims, n)[:n]
            top[np.argsort(-sims[top])]

        def governed():
            mm.clear_caches()  # the query embedding is paid every time
            mm.retrieve(text, tenant_id=t, user_id=u, as_of=now, reinforce=False, include_blind=False)

        def raw():
            handle.query(query_embeddings=vec.reshape(1, -1), n_results=n, include=["distances"])

        order = [("scan", scan), ("governed", governed), ("raw", raw)]
        if q % 2:
            order.reverse()
        for name, fn in order:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    times["after_write"] = after_write(mm, max(queries // 3, 30), users=users, now=now, seed=seed)
    out = {k: percentiles(v[5:]) for k, v in times.items()}  # the first few are warm-up
    out["ratio_governed_vs_scan_p50"] = out["governed"]["p50_ms"] / out["scan"]["p50_ms"]
    out["ratio_after_write_vs_scan_p50"] = out["after_write"]["p50_ms"] / out["scan"]["p50_ms"]
    out["ratio_governed_vs_raw_p50"] = out["governed"]["p50_ms"] / out["raw"]["p50_ms"]
    return out


def after_write(mm: MemoryManager, rounds: int, *, users: list[int], now: float, seed: int) -> list[float]:
    """Seconds of each governed recall made right after a write to the same owner (the write is not timed)."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for q in tqdm(range(rounds), desc="first recall after a write", leave=False):
        user = users[int(rng.integers(len(users)))]
        t, u = owner_of(user)
        mm.add(Message(tenant_id=t, user_id=u, content=f"a new note {q} of {u}", id=f"w{seed}-{q}",
                       timestamp=now - 60))
        mm.clear_caches()  # the query embedding is paid every time
        start = time.perf_counter()
        mm.retrieve(f"question {q} {rng.integers(10**9)}", tenant_id=t, user_id=u, as_of=now, reinforce=False,
                    include_blind=False)
        out.append(time.perf_counter() - start)
    return out


def alone_vs_shared(shared: MemoryManager, n: int, location_for, queries: int) -> dict:
    """User 0's governed p50 in a store with only user 0's share, and in the shared store (alternating)."""
    alone = build(n, location_for(f"alone{n}"), only=0)
    now, cfg = T0 + 10**7, shared.config
    t, u = owner_of(0)
    for mm in (alone, shared):
        mm.retrieve("warm-up", tenant_id=t, user_id=u, as_of=now, config=cfg, reinforce=False, include_blind=False)
    times = {"alone": [], "shared": []}
    rng = np.random.default_rng(5)
    for q in tqdm(range(queries), desc="alone vs shared", leave=False):
        text = f"probe {q} {rng.integers(10**9)}"
        pair = [("alone", alone), ("shared", shared)]
        for name, mm in (pair if q % 2 else pair[::-1]):
            mm.clear_caches()
            start = time.perf_counter()
            mm.retrieve(text, tenant_id=t, user_id=u, as_of=now, config=cfg, reinforce=False, include_blind=False)
            times[name].append(time.perf_counter() - start)
    out = {k: percentiles(v[5:]) for k, v in times.items()}
    out["ratio_shared_vs_alone_p50"] = out["shared"]["p50_ms"] / out["alone"]["p50_ms"]
    alone.store.drop()
    return out


def run_mode(mode: str, sizes: list[int], queries: int, location_for, raw_for) -> list[dict]:
    rows = []
    for n in sizes:
        rss_before = rss_mb()
        start = time.perf_counter()
        mm = build(n, location_for(f"n{n}"))
        built = time.perf_counter() - start
        res = {"build_s": built, "raw_build_s": raw_for(n)}
        res["ratio_build_vs_raw"] = res["build_s"] / res["raw_build_s"]
        res.update(measure(mm, queries, users=list(range(USERS))))
        res.update(mode=mode, size=n, per_user=n // USERS)
        res["alone"] = alone_vs_shared(mm, n, location_for, max(queries // 2, 40))
        res["rss_mb"], res["rss_added_mb"] = rss_mb(), rss_mb() - rss_before
        res["peak_rss_mb"] = peak_rss_mb()
        mm.store.drop()
        del mm
        gc.collect()
        rows.append(res)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["Every ratio names its baseline: governed recall over the exact numpy scan of the user's own vectors "
             "(its limit), warm and on the first recall after a write to that user; the engine's build over raw "
             "Chroma `add` of the same vectors (one collection per owner); shared over alone.", "",
             "| store | memories | per user | exact scan p50 ms (limit) | governed p50 ms | governed / scan | "
             "first after a write p50 ms | first after a write / scan | raw Chroma query p50 ms | "
             "build s (engine) | raw Chroma add s | build / raw add | shared / alone (governed p50) | RSS MB "
             "(added by this size) | peak RSS MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['size']:,} | {r['per_user']:,} | {r['scan']['p50_ms']:.3f} | "
                     f"{r['governed']['p50_ms']:.2f} | {r['ratio_governed_vs_scan_p50']:.1f} | "
                     f"{r['after_write']['p50_ms']:.2f} | {r['ratio_after_write_vs_scan_p50']:.1f} | "
                     f"{r['raw']['p50_ms']:.2f} | {r['build_s']:.1f} | {r['raw_build_s']:.1f} | "
                     f"{r['ratio_build_vs_raw']:.2f} | {r['alone']['ratio_shared_vs_alone_p50']:.2f} | "
                     f"{r['rss_mb']:.0f} ({r['rss_added_mb']:+.0f}) | {r['peak_rss_mb']:.0f} |")
    return "\n".join(lines)


def run(sizes: list[int], queries: int, server_sizes: list[int], *, name: str = "recall_latency") -> dict:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        rows += run_mode("embedded", sizes, queries, lambda tag: StoreLocation(data_dir=Path(tmp) / tag),
                         lambda n: raw_build(n, Path(tmp) / f"raw{n}"))
        if server_sizes:
            with chroma_server(Path(tmp) / "server") as port:
                rows += run_mode("server", server_sizes, queries, lambda tag: StoreLocation(
                    data_dir=Path(tmp) / f"srv-{tag}", host="127.0.0.1", port=port),
                    lambda n: raw_build(n, None, server_port=port))
    text = table(rows)
    write_results(name, {"users": USERS, "tenants": TENANTS, "queries": queries, "rows": rows}, text)
    print(text)
    return {"rows": rows}


def _sizes(p: argparse.ArgumentParser, flag: str, value: str) -> list[int]:
    """Comma-separated positive sizes; anything else is the parser's one-line error (a size of 0 built no store)."""
    try:
        sizes = [int(s) for s in value.split(",") if s.strip()]
    except ValueError:
        p.error(f"{flag} must be comma-separated numbers of memories, got {value!r}")
    if any(n < 1 for n in sizes):
        p.error(f"{flag}: every size must be at least 1 memory, got {value!r}")
    return sizes


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall_latency")
    p.add_argument("--sizes", default="10000,100000,1000000", help="memories per embedded store, comma-separated")
    p.add_argument("--server-sizes", default="100000", help="the same on a `chroma run` server ('' for none)")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--out", default="recall_latency_full", help="result file name under bench/results/")
    p.add_argument("--quick", action="store_true", help="10,000 memories embedded and on a server, 80 queries")
    a = p.parse_args(argv)
    if a.quick:
        run([10000], 80, [10000])
    else:
        run(_sizes(p, "--sizes", a.sizes), a.queries, _sizes(p, "--server-sizes", a.server_sizes), name=a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
