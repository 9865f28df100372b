"""What a slider change costs in the lab at 10,000 memories, next to embedding the query once.

The lab fetches a user's candidates once (``MemoryManager.candidates(pool=all)``) and, on every
slider change, re-runs ``memory.runtime.recall.govern`` plus the recall page's view building (metrics,
the two side tables, the candidate table and the plotly figure). This script times exactly that
work, and the MiniLM embedding of one query, and writes the ratio to
``bench/results/slider_rerun.json``. Streamlit's own rendering is not included.

The 10,000 memories have real texts and synthetic vectors (``q * a + noise``, normalised, with
``a`` spread over [0, 1]) so similarities cover the whole threshold range; embedding 10,000 texts
with MiniLM would only make the set-up slower, not the measured rerun.

    python -m bench.slider_rerun [--memories 10000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from lab import figures, views
from lab.pollution import kinds_of
from memory import MemoryConfig, MemoryManager, MemoryRecord, Owner, StoreLocation, govern, make_embedder

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "bench" / "results" / "slider_rerun.json"
OWNER = ("bench", "user")
QUERY = "What is the campaign budget now?"
SLIDER_MOVES = [
    {"threshold": 0.0}, {"threshold": 0.3}, {"threshold": 0.6}, {"top_k": 20}, {"top_k": 3},
    {"decay_rate": 0.5}, {"decay_rate": 0.0}, {"window_size": 3},
]


def _populate(manager: MemoryManager, n: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    q = manager.embed_query(QUERY)
    start = 1_760_000_000.0
    for first in range(0, n, 2000):
        ids = range(first, min(first + 2000, n))
        records = [MemoryRecord(
            memory_id=f"bench-{i:06d}", tenant_id=OWNER[0], user_id=OWNER[1], message_id=f"m{i}",
            content=f"Memory {i}: note about topic {i % 97} with detail {i * 7919 % 10007}.",
            created_at=start + 600.0 * i, last_accessed_at=start + 600.0 * i, importance=float(rng.uniform(0, 1)),
            access_count=int(rng.integers(0, 30)), source_message_ids=[f"m{i}"],
        ) for i in ids]
        a = rng.uniform(0.0, 1.0, size=(len(records), 1))
        noise = rng.normal(size=(len(records), q.shape[0]))
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        vecs = a * q + (1 - a) * noise
        manager.store.add(records, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2,000 memories, 3 repeats")
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.repeats = 2_000, 3

    embedder = make_embedder("minilm")
    with tempfile.TemporaryDirectory(prefix="slider-bench-") as folder:
        manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(data_dir=Path(folder)),
                                workspace="bench")
        t0 = time.perf_counter()
        _populate(manager, args.memories)
        populate_s = time.perf_counter() - t0

        counter = iter(range(10**9))
        embed_ms = _median_ms(lambda: embedder.embed([f"{QUERY} #{next(counter)}"]), args.repeats)
        as_of = 1_760_000_000.0 + 600.0 * args.memories
        t0 = time.perf_counter()
        cands = manager.candidates(QUERY, tenant_id=OWNER[0], user_id=OWNER[1], as_of=as_of, exact=True)
        fetch_ms = (time.perf_counter() - t0) * 1000
        returned = {r.memory_id for r, _ in cands.hot}
        everyone = manager.store.records(Owner(*OWNER), scope="hot")
        missing = [r.memory_id for r in everyone if r.memory_id not in returned]
        vectors = manager.store.embeddings(missing, owner=Owner(*OWNER))
        q = manager.embed_query(QUERY)
        missing_max_sim = max((float(v @ q) for v in vectors.values()), default=None)

        def kinds(record):
            return kinds_of(record, owner=OWNER, labels={}, query=None)

        def rerun(config: MemoryConfig, *, with_views: bool):
            result = govern(cands, config, token_counter=views.cached_count_tokens)
            if with_views:
                views.counts(result, kinds)
                views.hits_frame(result.blind, kinds)
                views.hits_frame(result.governed, kinds)
                figures.candidate_scores(views.candidate_frame(result, kinds), config.threshold)

        moves = []
        for move in SLIDER_MOVES:
            config = MemoryConfig().replace(**move)
            moves.append({
                "change": move,
                "govern_ms": round(_median_ms(lambda: rerun(config, with_views=False), args.repeats), 2),
                "govern_and_views_ms": round(_median_ms(lambda: rerun(config, with_views=True), args.repeats), 2),
            })
        worst = max(m["govern_and_views_ms"] for m in moves)
        worst_govern = max(m["govern_ms"] for m in moves)
        result = {
            "memories": args.memories,
            "repeats": args.repeats,
            "embed_query_once_ms": round(embed_ms, 2),
            "fetch_candidates_once_ms": round(fetch_ms, 2),
            "pool_returned": len(cands.hot),
            "pool_missing": len(missing),
            "pool_missing_max_similarity": None if missing_max_sim is None else round(missing_max_sim, 4),
            "slider_moves": moves,
            "worst_govern_ms": worst_govern,
            "worst_rerun_ms": worst,
            "ratio_worst_govern_to_embed": round(worst_govern / embed_ms, 3),
            "ratio_worst_rerun_to_embed": round(worst / embed_ms, 3),
            "ratio_worst_rerun_to_fetch": round(worst / fetch_ms, 4),
            "notes": [
                "rerun = memory.runtime.recall.govern over the cached candidates (+ the recall page's metrics, tables, "
                "candidate frame and plotly figure for *_and_views); Streamlit rendering not included",
                "embed_query_once = MiniLM (all-MiniLM-L6-v2, CPU) embedding one new query string",
                "fetch_candidates_once = what a re-embed would also redo: embed + an exact scan of the user's "
                "vectors (two Chroma gets) + text join (the lab pays it once per query and data version)",
                "govern uses the lab's memoised token counter (lab.views.cached_count_tokens)",
                "memories: real texts, synthetic vectors spread over the similarity range; as_of after the last one",
                f"setup ({args.memories} records into an on-disk Chroma + TextStore): {populate_s:.1f} s",
                "pool_missing: memories the candidate fetch did not return (0 with the exact scan)",
            ],
            "machine": {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
                        "python": platform.python_version(), "platform": platform.platform()},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    RESULTS.with_suffix(".md").write_text(
        "| memories | embed query once ms | fetch candidates once ms | worst govern ms | worst rerun ms "
        "| rerun / embed | rerun / fetch |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        f"| {args.memories:,} | {embed_ms:.1f} | {fetch_ms:.0f} | {worst_govern:.1f} | {worst:.1f} "
        f"| {worst / embed_ms:.2f} | {worst / fetch_ms:.3f} |\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k not in ("slider_moves", "notes", "machine")}, indent=2))
    print(f"written: {RESULTS.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    main()
