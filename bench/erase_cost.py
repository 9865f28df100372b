"""What an erasure costs, and what it costs everyone else, as the store grows around the erased user.

For stores of N records (embedded, synthetic vectors, 100 owners), the erased user always owns the same
100 records; everything else is other owners'. Times, side by side in one run:

* ``erase_user(disk_scan=False)``: the erasure and its targeted verification (the production path);
* ``erase_user(disk_scan=True)``: the same plus the independent byte scan of every file of the folder;
* the longest wait of another owner's writer (one ``add`` at a time in a thread) while the erasure runs,
  against its median write time with no erasure running;
* apart: one search of Chroma's database file for a user's ids and vectors (the ``chroma_file`` check, the
  one part of an erasure that reads a file whole, in pieces of memory.store.chroma_files.SCAN_CHUNK), and that
  file's size;
* apart: the peak of Python's heap during one erasure (tracemalloc, numpy's arrays included; Chroma's own Rust
  allocations are not traced);
* apart, on the folder one disk-scan erasure left: the disk scan alone (every file read once, all needles looked
  for in that pass: memory.core.bytesearch), beside the scan as it was before issue 28 (each file read whole and
  searched once per needle), with the same needles, and the folder's size.

A second table is the issue's own case (issue 28, "Erasure in seconds"): a user of 400 records, with texts of a
sentence each, erased with the disk scan from a folder of about 12 MB (20 other owners' records added until it
holds that), the same columns.

Run: python -m bench.erase_cost [--sizes 1000,20000,100000] [--rounds 7] [--deep-rounds 2]
(writes bench/results/erase_cost_full.*, or erase_cost.* with --quick; ``python -m bench summary`` collects them)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
from tqdm import tqdm

from memory import MemoryConfig, MemoryManager, Message, Owner, StoreLocation
from memory.core.schema import MemoryRecord
from memory.runtime.erase import DiskCanaries, Evidence, scan_for_bytes
from memory.store.chroma_files import locate

from .common import SyntheticEmbedder, write_results

USERS = 100
ERASED_RECORDS = 100
T0 = 1_780_000_000.0
ISSUE_RECORDS = 400
"""The issue's case: a user of 400 records in a folder of ISSUE_MB megabytes, among ISSUE_USERS other owners."""
ISSUE_MB = 12.0
ISSUE_USERS = 20
WORDS = ("the coffee meeting Paris project report deadline sister birthday flight hotel doctor gym budget "
         "Lisbon office train friday lunch contract").split()


def build(n: int, folder: Path) -> MemoryManager:
    mm = MemoryManager(MemoryConfig(), embedder=SyntheticEmbedder(), location=StoreLocation(data_dir=folder),
                       workspace="erase-bench")
    rng = np.random.default_rng(3)
    others = n - ERASED_RECORDS
    for user in tqdm(range(1, USERS), desc=f"storing {n:,}", leave=False):
        share = range(user - 1, others, USERS - 1)
        if not len(share):
            continue
        _put(mm, "tenant", f"user-{user}", list(share), rng)
    return mm


def _put(mm: MemoryManager, tenant: str, user: str, ids: list[int], rng: np.random.Generator,
         sentences: bool = False) -> None:
    vecs = rng.standard_normal((len(ids), 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"{user} memory {i}" + (f": {' '.join(rng.choice(WORDS, 10))}." if sentences else "") for i in ids]
    records = [MemoryRecord(memory_id=f"{user}-{i}", tenant_id=tenant, user_id=user, content=text,
                            created_at=T0 + i, last_accessed_at=T0 + i) for i, text in zip(ids, texts)]
    mm.store.add(records, vecs)


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def scan_each(folder: Path, needles: list[bytes]) -> list[tuple[Path, int]]:
    """The disk scan before issue 28: every file read whole, then searched once per needle."""
    hits = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            hits += [(path, i) for i, n in enumerate(needles) if n in data]
    return hits


def one_round(mm: MemoryManager, *, disk_scan: bool, rng: np.random.Generator, records: int = ERASED_RECORDS,
              sentences: bool = False, scan_reference: bool = False) -> dict:
    """Give the erased user ``records`` records, erase them while another owner writes; time both. With the disk
    scan, then time the scan alone on the folder the erasure left, with its needles (and, with ``scan_reference``,
    the scan as it was before issue 28)."""
    _put(mm, "tenant", "erased", list(range(records)), rng, sentences=sentences)
    folder, scan = mm.data_dir, {}
    assert folder is not None
    if disk_scan:
        scan["folder_mb"] = folder_mb(folder)
        needles = DiskCanaries.of(Evidence.collect(mm, Owner("tenant", "erased"))).needles()
        scan["needles"] = len(needles)
    waits: list[float] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            start = time.perf_counter()
            mm.add(Message(tenant_id="tenant", user_id="writer", content=f"writer note {time.time_ns()} {i}",
                           id=f"w-{time.time_ns()}-{i}"))
            waits.append(time.perf_counter() - start)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.3)  # the writer's own pace first
    before = len(waits)
    start = time.perf_counter()
    report = mm.erase_user(tenant_id="tenant", user_id="erased", disk_scan=disk_scan)
    erase_s = time.perf_counter() - start
    time.sleep(0.3)
    stop.set()
    thread.join()
    baseline = statistics.median(waits[:before]) if before else float("nan")
    out = {"erase_s": erase_s, "ok": report.ok, "chroma_rebuilt": report.removed.get("chroma_rebuilt", 0),
           "chroma_pages": report.removed.get("chroma_pages_rewritten", 0),
           "writer_max_wait_s": max(waits[before:], default=0.0), "writer_median_s": baseline,
           "unverified": {p.name: p.detail for p in report.paths if p.remaining}, **scan}
    if disk_scan:
        start = time.perf_counter()
        out["scan_hits"] = len(scan_for_bytes(folder, needles))
        out["scan_s"] = time.perf_counter() - start
    if disk_scan and scan_reference:
        start = time.perf_counter()
        out["scan_each_hits"] = len(scan_each(folder, needles))
        out["scan_each_s"] = time.perf_counter() - start
    return out


def chroma_search(mm: MemoryManager, rng: np.random.Generator, repeats: int = 5) -> tuple[float, float, float]:
    """The one part of an erasure whose cost is the store's: a search of Chroma's database file for a user's
    100 vector ids and 8 vectors (what the ``chroma_file`` check does), median ms; the file's size in MB; and the
    same search with the file read in one piece (how it was read before SCAN_CHUNK), median ms."""
    _put(mm, "tenant", "probe", list(range(ERASED_RECORDS)), rng)
    ids, blobs = mm.store.texts.vectors(Owner("tenant", "probe"))
    needles = [v.encode("ascii") for v in mm.store.texts.vector_ids(Owner("tenant", "probe"))] + blobs[:8]
    path = mm.store.chroma_dir / "chroma.sqlite3"
    times, whole = [], []
    for _ in range(repeats):  # alternately: the search as the erasure makes it, and the same search in one piece
        start = time.perf_counter()
        mm.store.chroma_traces(needles)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        locate(path, needles, chunk=path.stat().st_size + 1)
        whole.append(time.perf_counter() - start)
    mm.erase_user(tenant_id="tenant", user_id="probe")
    size = path.stat().st_size / 1e6
    return 1000 * statistics.median(times), size, 1000 * statistics.median(whole)


def traced_peak(mm: MemoryManager, rng: np.random.Generator) -> float:
    """MB: the peak of Python's heap above its level at the start of one erasure of a 100-record user."""
    _put(mm, "tenant", "erased", list(range(ERASED_RECORDS)), rng)
    tracemalloc.start()
    try:
        mm.erase_user(tenant_id="tenant", user_id="erased")
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def run(sizes: list[int], rounds: int, name: str, deep_rounds: int = 2) -> dict:
    rows = []
    rng = np.random.default_rng(9)
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-erase-") as tmp:
            mm = build(n, Path(tmp) / "data")
            fast = [one_round(mm, disk_scan=False, rng=rng) for _ in range(rounds)]
            deep = [one_round(mm, disk_scan=True, rng=rng, scan_reference=i == 0) for i in range(deep_rounds)]
            search_ms, file_mb, whole_ms = chroma_search(mm, rng)
            peak_mb = traced_peak(mm, rng)
            rows.append({
                "size": n, "erased_records": ERASED_RECORDS,
                "erase_ms": 1000 * statistics.median(r["erase_s"] for r in fast),
                "erase_with_disk_scan_ms": 1000 * statistics.median(r["erase_s"] for r in deep),
                "writer_max_wait_ms": 1000 * statistics.median(r["writer_max_wait_s"] for r in fast),
                "writer_median_write_ms": 1000 * statistics.median(r["writer_median_s"] for r in fast),
                "chroma_rebuilds": sum(r["chroma_rebuilt"] for r in fast + deep),
                "chroma_page_rewrites": sum(r["chroma_pages"] > 0 for r in fast + deep),
                "all_ok": all(r["ok"] for r in fast + deep), "rounds": rounds + deep_rounds,
                "unverified": [r["unverified"] for r in fast + deep if r["unverified"]],
                "chroma_file_mb": file_mb, "chroma_search_ms": search_ms, "chroma_search_whole_ms": whole_ms,
                "heap_peak_mb": peak_mb, **_scan_columns(deep),
            })
            mm.store.drop()
    issue = issue_case(rng, deep_rounds + 1)
    table = _table(rows, issue)
    write_results(name, {"rows": rows, "issue_case": issue}, table)
    print(table)
    return {"rows": rows, "issue_case": issue}


def _table(rows: list[dict], issue: dict) -> str:
    lines = ["| records in store | erased user's records | erase p50 ms | with disk scan ms | other writer's longest "
             "wait ms (its usual write ms) | erasures with Chroma pages rewritten | Chroma file rebuilds | "
             "all verified | one search of Chroma's file ms (its size MB) | the same search, file read whole, ms | "
             "erasure's Python heap peak MB | disk scan alone ms (folder MB, needles) | the same scan, a search per "
             "needle (before issue 28) ms |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['size']:,} | {r['erased_records']} | {r['erase_ms']:.0f} | "
                     f"{r['erase_with_disk_scan_ms']:.0f} | "
                     f"{r['writer_max_wait_ms']:.0f} ({r['writer_median_write_ms']:.0f}) | "
                     f"{r['chroma_page_rewrites']} of {r['rounds']} | {r['chroma_rebuilds']} of {r['rounds']} | "
                     f"{_verified(r)} | {r['chroma_search_ms']:.0f} ({r['chroma_file_mb']:.1f}) | "
                     f"{r['chroma_search_whole_ms']:.0f} | {r['heap_peak_mb']:.1f} | "
                     f"{r['disk_scan_ms']:.0f} ({r['folder_mb']:.0f}, {r['needles']:,}) | {r['scan_each_ms']:.0f} |")
    lines += ["", f"The issue's case: a user of {ISSUE_RECORDS} records erased with the disk scan from a folder of "
              f"about {ISSUE_MB:g} MB ({ISSUE_USERS} other owners), {issue['rounds']} erasures.", "",
              "| folder MB | other owners' records | needles | erase with disk scan p50 ms (max) | "
              "disk scan alone ms | the same scan, a search per needle (before issue 28) ms | "
              "erasures with Chroma pages rewritten | all verified |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
              f"| {issue['folder_mb']:.1f} | {issue['other_records']:,} | {issue['needles']:,} | "
              f"{issue['erase_with_disk_scan_ms']:.0f} ({issue['erase_with_disk_scan_max_ms']:.0f}) | "
              f"{issue['disk_scan_ms']:.0f} | {issue['scan_each_ms']:.0f} | "
              f"{issue['chroma_page_rewrites']} of {issue['rounds']} | {_verified(issue)} |"]
    return "\n".join(lines)


def _verified(row: dict) -> str:
    """True, or False with the paths an erasure found data left in (their details are in the JSON)."""
    if row["all_ok"]:
        return "True"
    return f"False ({', '.join(sorted({name for paths in row['unverified'] for name in paths}))})"


def _scan_columns(deep: list[dict]) -> dict:
    """The disk-scan erasures' folder, needles and scan times: the scan alone (median) and the one reference run."""
    return {"folder_mb": statistics.median(r["folder_mb"] for r in deep), "needles": deep[0]["needles"],
            "disk_scan_ms": 1000 * statistics.median(r["scan_s"] for r in deep),
            "scan_each_ms": 1000 * next(r["scan_each_s"] for r in deep if "scan_each_s" in r),
            "scans_agree": all(r["scan_hits"] == r.get("scan_each_hits", r["scan_hits"]) == 0 for r in deep)}


def issue_case(rng: np.random.Generator, rounds: int) -> dict:
    """A user of ISSUE_RECORDS records erased with the disk scan from a folder of about ISSUE_MB megabytes: other
    owners' records are added, 10 at a time to each of ISSUE_USERS owners, until the folder with the user holds that."""
    with tempfile.TemporaryDirectory(prefix="bench-erase-issue-") as tmp:
        folder = Path(tmp) / "data"
        mm = MemoryManager(MemoryConfig(), embedder=SyntheticEmbedder(), location=StoreLocation(data_dir=folder),
                           workspace="erase-bench-issue")
        _put(mm, "tenant", "erased", list(range(ISSUE_RECORDS)), rng, sentences=True)
        others = 0
        while folder_mb(folder) < ISSUE_MB:
            for user in range(1, ISSUE_USERS + 1):
                _put(mm, "tenant", f"user-{user}", list(range(others, others + 10)), rng, sentences=True)
            others += 10
        mm.erase_user(tenant_id="tenant", user_id="erased")
        deep = [one_round(mm, disk_scan=True, rng=rng, records=ISSUE_RECORDS, sentences=True, scan_reference=i == 0)
                for i in range(rounds)]
        mm.store.drop()
    return {"records": ISSUE_RECORDS, "other_records": others * ISSUE_USERS, "rounds": rounds,
            "erase_with_disk_scan_ms": 1000 * statistics.median(r["erase_s"] for r in deep),
            "erase_with_disk_scan_max_ms": 1000 * max(r["erase_s"] for r in deep),
            "chroma_page_rewrites": sum(r["chroma_pages"] > 0 for r in deep), "all_ok": all(r["ok"] for r in deep),
            "unverified": [r["unverified"] for r in deep if r["unverified"]],
            **_scan_columns(deep)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.erase_cost")
    p.add_argument("--sizes", default="1000,20000,100000")
    p.add_argument("--rounds", type=int, default=7, help="erasures without the disk scan per size")
    p.add_argument("--deep-rounds", type=int, default=2, help="erasures with the disk scan per size")
    p.add_argument("--quick", action="store_true", help="1,000 and 20,000 records, 2 rounds")
    a = p.parse_args(argv)
    if a.quick:
        run([1000, 20000], 2, "erase_cost")
    else:
        run([int(s) for s in a.sizes.split(",")], a.rounds, "erase_cost_full", a.deep_rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
