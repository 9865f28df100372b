"""Where the test suite spends its time: `python -m bench.test_times [--label NAME] [--from JUNIT] [-- PYTEST ARGS]`.

Runs the README's test command (plain ``pytest``, so the options in pyproject.toml apply; arguments after ``--``
are added, e.g. ``-- -m "not integration"`` for the fast subset) with a JUnit report, then writes
``bench/results/test_times_<label>.json`` and ``.md``: the wall time, the CPU seconds of the run (pytest, its
workers and every process they started and waited for: a steadier figure than the wall time on a shared
machine), the tests collected and passed,
the total per test file and the 20 slowest tests (``time`` per test is its setup, call and teardown, as pytest's
JUnit report counts it). ``--from JUNIT`` only reads a report written before (how the ``before`` figures were
kept). The timed run is not a test: nothing fails on a time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from .common import RESULTS, machine

SLOWEST = 20


def read_junit(path: Path) -> dict:
    """Per-test and per-file seconds, and the outcome counts, from a pytest JUnit report."""
    root = ET.parse(path).getroot()
    tests, files = [], collections.Counter()
    counts = collections.Counter()
    for case in root.iter("testcase"):
        module = case.get("classname", "")
        file = "tests/" + module.removeprefix("tests.").split(".")[0] + ".py" if module else case.get("file", "?")
        seconds = float(case.get("time", 0.0))
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        counts[outcome] += 1
        tests.append({"test": f"{file}::{case.get('name')}", "seconds": round(seconds, 2), "outcome": outcome})
        files[file] += seconds
    tests.sort(key=lambda t: -t["seconds"])
    return {
        "collected": len(tests),
        "outcomes": dict(counts),
        "sum_of_test_seconds": round(sum(files.values()), 1),
        "per_file": [{"file": f, "seconds": round(s, 1)} for f, s in files.most_common()],
        "slowest": tests[:SLOWEST],
    }


def read_cpu(folder: Path) -> dict:
    """The tests' CPU seconds as tests/conftest.py records them (one JSON line per test per worker): the tests
    that cost the most CPU and the total per file."""
    tests, files = [], collections.Counter()
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            tests.append(row)
            files[row["test"].split("::")[0]] += row["cpu_seconds"]
    tests.sort(key=lambda t: -t["cpu_seconds"])
    return {"tests_cpu_seconds": round(sum(files.values()), 1), "most_cpu": tests[:SLOWEST],
            "per_file_cpu": [{"file": f, "cpu_seconds": round(s, 1)} for f, s in files.most_common()]}


def _busy_cores() -> tuple[float, float]:
    """(busy jiffies, all jiffies) of the whole machine, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuSampler(threading.Thread):
    """The machine's busy cores once a second while pytest runs (every process on it: a shared machine's other
    work shows up too), so the report can say when the cores stood idle and which tests were running then."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []  # (time, busy cores over the last second)
        self.stopping = threading.Event()

    def run(self) -> None:
        cores = os.cpu_count() or 1
        last = _busy_cores()
        while not self.stopping.wait(1.0):
            now = _busy_cores()
            spent = now[1] - last[1]
            self.samples.append((time.time(), round(cores * (now[0] - last[0]) / spent, 2) if spent else 0.0))
            last = now


def idle_report(samples: list[tuple[float, float]], rows: list[dict]) -> dict:
    """Core-seconds left idle, per 30 s of the run, with the tests that were running in each stretch."""
    if not samples:
        return {}
    cores, first = os.cpu_count() or 1, samples[0][0]
    bins: dict[int, list[float]] = collections.defaultdict(list)
    for at, busy in samples:
        bins[int((at - first) // 30)].append(busy)
    stretches = []
    for index, busy in sorted(bins.items()):
        start, end = first + 30 * index, first + 30 * (index + 1)
        running = sorted({r["test"] for r in rows if r.get("started", 0) < end and r.get("ended", 0) > start})
        stretches.append({"from_s": 30 * index, "busy_cores": round(sum(busy) / len(busy), 2),
                          "idle_core_seconds": round(sum(max(0.0, cores - b) for b in busy), 1),
                          "running": running[:6] + ([f"... {len(running) - 6} more"] if len(running) > 6 else [])})
    return {"idle_core_seconds": round(sum(s["idle_core_seconds"] for s in stretches), 1),
            "busy_core_seconds": round(sum(busy for _, busy in samples), 1), "stretches": stretches}


def markdown(label: str, result: dict) -> str:
    lines = [f"# Test times: {label}", "",
             f"`{result['command']}`: wall time {result.get('wall_seconds', '?')} s, "
             + (f"CPU {result['cpu_seconds']} s" if result.get("cpu_seconds") is not None
                else "CPU not measured (read from a JUnit report)")
             + f"; {result['collected']} tests; outcomes "
             f"{result['outcomes']}; the tests' own seconds add up to {result['sum_of_test_seconds']} s "
             "(more than the wall time when workers run side by side).", "",
             f"## The {SLOWEST} slowest tests", "", "| seconds | test |", "| ---: | --- |"]
    lines += [f"| {t['seconds']} | `{t['test']}` |" for t in result["slowest"]]
    if result.get("most_cpu"):
        lines += ["", f"## The {SLOWEST} tests that cost the most CPU", "",
                  f"CPU seconds of the worker (every thread) and of the processes it waited for, per test; "
                  f"{result['tests_cpu_seconds']} s in all. A process a module's fixture starts (a lab server, the "
                  "browser) counts in its module's last test.", "", "| CPU seconds | test |", "| ---: | --- |"]
        lines += [f"| {t['cpu_seconds']} | `{t['test']}` |" for t in result["most_cpu"]]
    cpu_of = {f["file"]: f["cpu_seconds"] for f in result.get("per_file_cpu", [])}
    lines += ["", "## Per file", "", "| seconds | CPU seconds | file |", "| ---: | ---: | --- |"]
    lines += [f"| {f['seconds']} | {cpu_of.get(f['file'], '')} | `{f['file']}` |" for f in result["per_file"]]
    if result.get("idle"):
        idle = result["idle"]
        lines += ["", "## When the cores stood idle", "",
                  f"{idle['idle_core_seconds']} core-seconds idle in all, {idle.get('busy_core_seconds', '?')} busy "
                  "(the machine's busy cores sampled once a second, per 30 s of the run; the tests running in each "
                  "stretch). The busy figure counts every process: Chromium too, which the CPU of pytest's tree above "
                  "misses (Playwright's driver starts it, and no process of the tree waits for it).", "",
                  "| from s | busy cores | idle core-s | running |", "| ---: | ---: | ---: | --- |"]
        lines += [f"| {s['from_s']} | {s['busy_cores']} | {s['idle_core_seconds']} | "
                  + "<br>".join(f"`{t}`" for t in s["running"]) + " |" for s in idle["stretches"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.test_times", description=__doc__.splitlines()[0])
    p.add_argument("--label", default="after", help="the results' name: test_times_<label>.json (default: after)")
    p.add_argument("--from", dest="junit", type=Path, help="read this JUnit report instead of running pytest")
    p.add_argument("--wall", type=float, help="with --from: the wall time of that run, in seconds")
    p.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = p.parse_args(argv)
    cpu = None
    if args.junit:
        junit, wall, code = args.junit, args.wall, 0
    else:
        junit = Path(tempfile.mkdtemp()) / "junit.xml"
        cpu_dir = junit.parent / "cpu"
        cpu_dir.mkdir()
        sampler = CpuSampler()
        sampler.start()
        started, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args, f"--junitxml={junit}", "-q"],
                               env=os.environ | {"MEMORY_TEST_CPU_DIR": str(cpu_dir)})
        wall = round(time.monotonic() - started, 1)
        sampler.stopping.set()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    command = " ".join(["pytest", *(f"'{a}'" if " " in a else a for a in args.pytest_args)])
    result = {"label": args.label, "command": command, "wall_seconds": wall, "cpu_seconds": cpu,
              "machine": machine(), **read_junit(junit)}
    if not args.junit:
        result.update(read_cpu(cpu_dir))
        rows = [json.loads(line) for path in sorted(cpu_dir.glob("*.jsonl"))
                for line in path.read_text(encoding="utf-8").splitlines()]
        result["idle"] = idle_report(sampler.samples, rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"test_times_{args.label}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (RESULTS / f"test_times_{args.label}.md").write_text(markdown(args.label, result), encoding="utf-8")
    print(markdown(args.label, result))
    return code


if __name__ == "__main__":
    sys.exit(main())
