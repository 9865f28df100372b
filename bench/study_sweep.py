"""Does a sweep cost about one pass? Time one study with a single setting vs the full grid, same run.

The expensive part of a study is encoding its texts, writing the dataset into the store and
scoring every question's pool; all happen once (``memory.eval.ranking.rank``). Each setting of the
sweep then only re-runs ``memory.runtime.recall.govern`` on the part of the cached pools it can keep
(``memory.eval.pools``); bench/study_speed.py compares the whole study with encoding alone. This script
measures, in one process:

* ``rank_s``: the single pass (encode every text once, write, score every question once);
* ``one_setting_s``: the sweep with one setting;
* ``full_sweep_s``: the sweep with the whole grid;

and reports ``ratio = (rank_s + full_sweep_s) / (rank_s + one_setting_s)``: the cost of the
whole study relative to a one-setting study. Re-embedding per setting would make it about
``settings``. Written to bench/results/study_sweep.json.

    python -m bench.study_sweep [--dataset locomo:PATH|PATH] [--mode dense|lexical|hybrid] [--embedder minilm|lexical]
    python -m bench study_sweep [--quick]      (--quick: the workshop scenario instead of LoCoMo)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.common import write_results
from memory.eval.datasets import load_dataset
from memory.eval.ranking import rank
from memory.eval.study import sweep

ROOT = Path(__file__).resolve().parent.parent

LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-sample.json"
GRID = {"thresholds": "0.1:0.9:0.05", "top_ks": "5,10", "decay_rates": "0,0.05"}
ONE = {"thresholds": "0.5", "top_ks": "10", "decay_rates": "0"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = f"locomo:{LOCOMO}" if LOCOMO.is_file() else "workshop_en"
    parser.add_argument("--dataset", default=default)
    parser.add_argument("--mode", default="dense", choices=("dense", "lexical", "hybrid"))
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "lexical"))
    parser.add_argument("--quick", action="store_true", help="the small workshop scenario (seconds, not minutes)")
    args = parser.parse_args()
    if args.quick:
        args.dataset = "workshop_en"

    dataset = load_dataset(args.dataset)
    t0 = time.perf_counter()
    rankings = rank(dataset, mode=args.mode, embedder=args.embedder)
    t1 = time.perf_counter()
    one = sweep(rankings, **ONE)
    t2 = time.perf_counter()
    full = sweep(rankings, **GRID)
    t3 = time.perf_counter()

    rank_s, one_s, full_s = t1 - t0, t2 - t1, t3 - t2
    ratio = (rank_s + full_s) / (rank_s + one_s)
    settings = len(full.sweep)
    result = {
        "dataset": dataset.name, "memories": len(dataset.memories), "questions": len(dataset.questions),
        "mode": args.mode, "embedder": rankings.embedder, "grid": GRID, "settings": settings,
        "rank_s": round(rank_s, 3), "one_setting_s": round(one_s, 3), "full_sweep_s": round(full_s, 3),
        "per_setting_s": round(full_s / settings, 4),
        "ratio_full_study_vs_one_setting_study": round(ratio, 3),
        "ratio_if_re_embedded_per_setting": settings,
        "same_numbers_for_the_shared_setting": one.sweep[0].to_dict() == full.row(threshold=0.5, top_k=10).to_dict(),
        "note": "wall-clock seconds on a shared machine; compare the ratio, not the seconds",
    }
    table = "\n".join([
        f"| {dataset.name} ({args.mode}) | seconds |", "| --- | ---: |",
        f"| one pass: write + embed + score every question once | {rank_s:.2f} |",
        f"| sweep of 1 setting | {one_s:.3f} |",
        f"| sweep of {settings} settings | {full_s:.2f} |",
        f"| **whole study / one-setting study** | **{ratio:.2f}** (re-embedding per setting: ~{settings}) |",
    ])
    out = write_results("study_sweep", result, table)
    print(f"{dataset.name}: {len(dataset.memories)} memories, {len(dataset.questions)} questions, mode {args.mode}")
    print(f"  one pass (write + embed + score once): {rank_s:.2f} s")
    print(f"  sweep of 1 setting: {one_s:.3f} s; sweep of {settings} settings: {full_s:.2f} s "
          f"({full_s / settings * 1000:.1f} ms a setting)")
    print(f"  whole study / one-setting study = {ratio:.2f} (re-embedding per setting would be ~{settings})")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
