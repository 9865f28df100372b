"""What memory/store/heap.py costs: the same embedded-store workload with glibc's allocation fill off and on.

One workload, run in fresh processes (a clean heap each time; the modes alternate, round by round, so a
change in machine load hits all alike): open a MemoryManager on a temporary data folder with the real
MiniLM, add a synthetic scenario (memory.eval.synth), answer every labelled query (``retrieve``), erase one
user. Only the workload is timed (not the interpreter start or the model load).

* off:  the fill is not turned on (the benchmark marks it done before the store opens; no library
        setting does this);
* on:   the library as shipped: ``mallopt(M_PERTURB)`` when the store opens;
* env:  as shipped, and the process started with ``memory.store.heap.PROCESS_ENV`` (no tcache either).

Writes bench/results/heap_fill.json and .md. Run: python -m bench.heap_fill [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from memory.store.heap import PROCESS_ENV

from .common import write_results

ROOT = Path(__file__).resolve().parent.parent
MODES = ("off", "on", "env")
CHILD = """
import json, sys, tempfile, time
from pathlib import Path
from memory import MemoryConfig, MemoryManager, StoreLocation, make_embedder
from memory.store import heap
from memory.core.scenario import load_scenario
from memory.eval.synth import SynthSpec, generate_scenario

mode, messages = sys.argv[1], int(sys.argv[2])
if mode == "off":
    heap._state["on"] = False  # benchmark only: pretend the fill is already decided (and off)
embedder = make_embedder("minilm")
embedder.embed(["warm-up"])
folder = Path(tempfile.mkdtemp())
(folder / "s.json").write_text(json.dumps(generate_scenario(SynthSpec(users=12, tenants=3, messages=messages))))
scenario = load_scenario(folder / "s.json")
start = time.perf_counter()
manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(data_dir=folder / "data"),
                        workspace="heapfill")
manager.add_many(scenario.messages)
for q in scenario.queries:
    manager.retrieve(q.query, tenant_id=q.tenant_id, user_id=q.user_id)
owner = scenario.owners()[0]
manager.erase_user(tenant_id=owner[0], user_id=owner[1])
print(json.dumps({"seconds": time.perf_counter() - start, "fill_on": heap._state.get("on"),
                  "queries": len(scenario.queries), "messages": len(scenario.messages)}))
"""


def run_once(mode: str, messages: int) -> dict:
    inherited = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}  # each mode sets its own
    env = inherited | {"PYTHONPATH": str(ROOT)} | (PROCESS_ENV if mode == "env" else {})
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(messages)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="500 messages, 1 round")
    a = p.parse_args(argv)
    messages, rounds = (500, 1) if a.quick else (a.messages, a.rounds)
    from tqdm import tqdm

    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    meta: dict = {}
    with tqdm(total=rounds * len(MODES), desc="heap fill", unit="run") as bar:
        for r in range(rounds):
            for mode in (MODES if r % 2 == 0 else MODES[::-1]):
                got = run_once(mode, messages)
                assert got["fill_on"] == (mode != "off"), (mode, got)
                seconds[mode].append(got["seconds"])
                meta = {"messages": got["messages"], "queries": got["queries"]}
                bar.update()
    median = {m: statistics.median(v) for m, v in seconds.items()}
    ratios = {m: median[m] / median["off"] for m in MODES}
    rows = [f"| {m} | {median[m]:.2f} | {ratios[m]:.3f} |" for m in MODES]
    table = "\n".join([
        f"{meta['messages']} messages added, {meta['queries']} queries answered, one user erased; MiniLM, "
        f"embedded Chroma on disk; median of {rounds} fresh processes per mode.", "",
        "| allocation fill | workload s | vs off |", "| --- | ---: | ---: |", *rows,
    ])
    write_results("heap_fill", {"rounds": rounds, **meta, "seconds": seconds, "median_s": median,
                                "ratio_vs_off": ratios}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
