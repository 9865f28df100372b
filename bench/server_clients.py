"""Writes and governed recall against one `chroma run` server as the number of client processes grows.

`python -m bench.server_clients [--size N] [--clients 1,2,4,8] [--queries Q] [--quick]` starts a real `chroma run`
on a loopback port, stores N synthetic memories for 100 users through the engine (``bench.recall_latency.build``:
vectors on the server, texts in a local folder), then, for each client count c, starts c processes at once. Each
opens its own ``MemoryManager`` on the same server and folder and makes Q writes (``add``: one message of a random
user, as a participant adds one) and then Q governed recalls of random users (``retrieve(reinforce=False,
include_blind=False)``). Synthetic vectors: the store is measured, not the model.

A warm governed recall scores the owner's vectors from the engine's own cache (it reads them once from the local
text store), so the server is on the write path and on a cold read, not on a warm recall: the writes are where the
client count shows. Reported per client count: p50 / p95 of one write and of one recall across all clients, writes
per second of the whole room, each as a ratio to one client (the baseline), and the server's CPU milliseconds per
write and resident memory (read from /proc). On 2 cores the clients and the server share the machine, so what grows
with c is the wait for a core as much as the server's work. Writes bench/results/server_clients.json and .md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from memory import MemoryConfig, MemoryManager, Message, StoreLocation

from .common import SyntheticEmbedder, chroma_server, percentiles, write_results
from .recall_latency import T0, USERS, build, owner_of


def _server_pid(port: int) -> int | None:
    """The pid of the ``chroma run`` listening on ``port`` (its command line names the port)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run" in cmd and str(port).encode() in cmd:
            return int(pid)
    return None


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _client(args: tuple) -> tuple[list[float], list[float]]:
    """One client process: its own manager on the shared server and folder; ``queries`` timed writes, then
    ``queries`` timed governed recalls, of random users."""
    folder, port, workspace, queries, seed, start_at = args
    mm = MemoryManager(MemoryConfig(top_k=5, overfetch=4, threshold=0.0), embedder=SyntheticEmbedder(),
                       location=StoreLocation(data_dir=Path(folder), host="127.0.0.1", port=port), workspace=workspace)
    rng = np.random.default_rng(seed)
    now = T0 + 10**7
    mm.retrieve("warm-up", tenant_id=owner_of(0)[0], user_id=owner_of(0)[1], as_of=now, reinforce=False,
                include_blind=False)
    while time.time() < start_at:  # every client starts at once
        time.sleep(0.005)
    writes, recalls = [], []
    for q in range(queries):
        t, u = owner_of(int(rng.integers(USERS)))
        message = Message(tenant_id=t, user_id=u, id=f"c{seed}-{q}", timestamp=now - 60,
                          content=f"client {seed} note {q} of {u}")
        start = time.perf_counter()
        mm.add(message)
        writes.append(time.perf_counter() - start)
    for q in range(queries):
        t, u = owner_of(int(rng.integers(USERS)))
        mm.clear_caches()  # the query embedding is paid every time
        start = time.perf_counter()
        mm.retrieve(f"client {seed} query {q}", tenant_id=t, user_id=u, as_of=now, reinforce=False,
                    include_blind=False)
        recalls.append(time.perf_counter() - start)
    mm.close()
    return writes, recalls


def run(size: int, clients: list[int], queries: int) -> dict:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp, chroma_server(Path(tmp) / "server") as port:
        folder = Path(tmp) / "texts"
        mm = build(size, StoreLocation(data_dir=folder, host="127.0.0.1", port=port))
        workspace = mm.workspace
        for user in range(USERS):  # every owner's collection written once on the server before anything is timed
            t, u = owner_of(user)
            mm.add(Message(tenant_id=t, user_id=u, id=f"warm-{user}", timestamp=T0 + 10**7 - 120,
                           content=f"a first note of {u}"))
        mm.close()
        pid = _server_pid(port)
        spawn = mp.get_context("spawn")
        # a first round with the most clients is not reported: the server's first writes after the build cost more
        for phase, c in enumerate([max(clients), *clients]):
            cpu0, rss0 = (_cpu_s(pid), _rss_mb(pid)) if pid else (0.0, 0.0)
            with spawn.Pool(c) as pool:
                start_at = time.time() + 8.0  # after every client has imported and opened its manager
                results = pool.map(_client, [(str(folder), port, workspace, queries, 100 * phase + i, start_at)
                                             for i in range(c)])  # its own seed: every message id is new
            if phase == 0:
                continue
            writes = [t for w, _ in results for t in w[3:]]  # each client's first few are warm-up
            recalls = [t for _, r in results for t in r[3:]]
            busiest = max(max(sum(w) for w, _ in results), 1e-9)  # they start at once: the room's writing time
            row = {"clients": c, "write": percentiles(writes), "recall": percentiles(recalls),
                   "writes_per_s": c * queries / busiest,
                   "server_cpu_ms_per_write": (_cpu_s(pid) - cpu0) * 1000 / (c * queries) if pid else None,
                   "server_rss_mb": _rss_mb(pid) if pid else None,
                   "server_rss_added_mb": (_rss_mb(pid) - rss0) if pid else None}
            rows.append(row)
    base = next((r for r in rows if r["clients"] == 1), rows[0])
    for r in rows:
        r["write_p50_vs_one_client"] = r["write"]["p50_ms"] / base["write"]["p50_ms"]
        r["recall_p50_vs_one_client"] = r["recall"]["p50_ms"] / base["recall"]["p50_ms"]
        r["throughput_vs_one_client"] = r["writes_per_s"] / base["writes_per_s"]
    lines = [f"{size:,} memories of {USERS} users on one `chroma run` server (loopback), texts in a local folder; each "
             f"client a process with its own MemoryManager making {queries} writes (one message each) and then "
             f"{queries} governed recalls, of random users (synthetic vectors). Every ratio is over one client. The "
             "server's CPU counts the recalls too (a warm recall does not call it).", "",
             "| clients | write p50 / p95 ms | write p50 / one client | writes/s (all clients) | "
             "throughput / one client | recall p50 / p95 ms | recall p50 / one client | server CPU ms per write | "
             "server RSS MB (added) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        cpu = f"{r['server_cpu_ms_per_write']:.1f}" if r["server_cpu_ms_per_write"] is not None else "n/a"
        rss = f"{r['server_rss_mb']:.0f} ({r['server_rss_added_mb']:+.0f})" if r["server_rss_mb"] is not None else "n/a"
        lines.append(f"| {r['clients']} | {r['write']['p50_ms']:.1f} / {r['write']['p95_ms']:.1f} | "
                     f"{r['write_p50_vs_one_client']:.2f} | {r['writes_per_s']:.0f} | "
                     f"{r['throughput_vs_one_client']:.2f} | {r['recall']['p50_ms']:.2f} / {r['recall']['p95_ms']:.2f} | "
                     f"{r['recall_p50_vs_one_client']:.2f} | {cpu} | {rss} |")
    text = "\n".join(lines)
    write_results("server_clients", {"size": size, "users": USERS, "queries": queries, "rows": rows}, text)
    print(text)
    return {"rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.server_clients", description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--clients", default="1,2,4,8")
    p.add_argument("--queries", type=int, default=150)
    p.add_argument("--quick", action="store_true", help="5,000 memories, 1, 2 and 4 clients, 60 writes and 60 recalls each")
    a = p.parse_args(argv)
    if a.quick:
        run(5_000, [1, 2, 4], 60)
    else:
        run(a.size, [int(c) for c in a.clients.split(",") if c], a.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
