"""Extraction time per KB on adversarial inputs of 1K, 10K and 100K characters, bounded and unbounded.

Each input ("I " repeated, one long token, many numbers, a 100K-digit number, many sentence breaks,
Chinese without punctuation, many short clauses, ...) is extracted twice in one run:

* bounded: ``memory.write.extract.extract`` as the write path runs it (``read_chars`` = 4,000: the rest
  of a turn is kept raw, not read into facts);
* unbounded: the same with ``read_chars`` = the whole text, to show extraction itself is linear
  (ms per KB stays flat from 1K to 100K characters; before this change "I " x 5,000 took 25 s).

The reader's cache is cleared before every run. Results: bench/results/extraction_adversarial.json
and .md (via bench.common.write_results).

    python -m bench.extraction_adversarial [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.common import write_results
from memory.write import reading
from memory.write.extract import DEFAULT_READ_CHARS, extract

ROOT = Path(__file__).resolve().parent.parent

INPUTS = {
    "I repeated": lambda n: ("I " * n)[:n],
    "one long token": lambda n: "a" * n,
    "many numbers": lambda n: ("1,000 " * n)[:n],
    "one long number": lambda n: "My budget is " + "9" * n,
    "sentence breaks": lambda n: ("I live in Paris. " * n)[:n],
    "Chinese, no punctuation": lambda n: ("我住在杭州喜欢喝咖啡" * n)[:n],
    "many short clauses": lambda n: ("a, " * n)[:n],
    "repeated rule words": lambda n: ("my favourite is a budget for " * n)[:n],
    "whitespace run": lambda n: "I" + " " * (n - 2) + "x",
}


def _time(text: str, read_chars: int) -> float:
    reading._read.cache_clear()
    start = time.perf_counter()
    extract(text, max_chars=len(text) + 1, read_chars=read_chars)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1K and 10K characters only")
    a = p.parse_args(argv)
    sizes = [1_000, 10_000] if a.quick else [1_000, 10_000, 100_000]
    rows = []
    for name, make in INPUTS.items():
        for n in sizes:
            text = make(n)
            bounded = _time(text, DEFAULT_READ_CHARS)
            unbounded = _time(text, len(text))
            rows.append({"input": name, "chars": len(text), "bounded_s": bounded, "unbounded_s": unbounded,
                         "bounded_ms_per_kb": 1000 * bounded / (len(text) / 1000),
                         "unbounded_ms_per_kb": 1000 * unbounded / (len(text) / 1000)})
            print(f"{name:24s} {len(text):>7,} chars  bounded {bounded * 1000:8.1f} ms  "
                  f"unbounded {unbounded * 1000:8.1f} ms ({rows[-1]['unbounded_ms_per_kb']:.2f} ms/KB)", flush=True)
    worst = max(r["bounded_s"] for r in rows)
    lines = [f"Extraction per message, read_chars = {DEFAULT_READ_CHARS:,} (bounded) vs the whole text (unbounded). "
             f"Slowest bounded extraction: {worst * 1000:.0f} ms.", "",
             "| input | chars | bounded ms | unbounded ms | unbounded ms/KB |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['input']} | {r['chars']:,} | {r['bounded_s'] * 1000:.1f} | {r['unbounded_s'] * 1000:.1f} | "
              f"{r['unbounded_ms_per_kb']:.2f} |" for r in rows]
    table = "\n".join(lines)
    write_results("extraction_adversarial", {"read_chars": DEFAULT_READ_CHARS, "rows": rows,
                                             "worst_bounded_s": worst, "quick": a.quick}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
