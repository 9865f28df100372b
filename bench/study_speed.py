"""Does a study cost what its model costs? A whole study vs its limit, side by side in one run.

The study is ``python -m memory study``'s default on the LoCoMo sample (both conversations,
dense MiniLM, threshold 0.1:0.9:0.05 x top_k 5,10 x decay 0). Its limit is the work no study can
skip: encoding each distinct text (memories and questions) once, length-sorted and batched, plus
one numpy scoring pass (every question's cosine with every memory of its owner, ranked). The
script reports

* ``ratio = study_s / (encode_s + score_s)`` (target <= 1.3), with the study's phases;
* the encoding before and after length sorting: the texts as the study used to send them
  (memories in dataset-order chunks of 64, the write batches; then each owner's questions), and
  sorted by length in one pass; with the tokens the model processed each way (each batch is
  padded to its longest text), which do not depend on the machine.

Written to bench/results/study_speed.json and .md.

    python -m bench.study_speed [--dataset locomo:PATH] [--mode dense|hybrid]
    python -m bench study_speed [--quick]      (--quick: the first conversation only)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.common import write_results
from memory.eval.datasets import Dataset, load_dataset
from memory.embed.embedders import length_batches, make_embedder, padded_tokens
from memory.eval.study import DEFAULT_DECAY_RATES, DEFAULT_THRESHOLDS, DEFAULT_TOP_KS, run_study

ROOT = Path(__file__).resolve().parent.parent

LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-sample.json"
OLD_WRITE_BATCH = 64
"""MemoryManager.add_many's batch: the study used to encode memories in these chunks, in dataset order."""
TARGET = 1.3


def study_texts(data: Dataset) -> list[str]:
    """Every distinct text a dense study encodes: memories, then questions."""
    return list(dict.fromkeys([m.text for m in data.memories] + [q.text for q in data.questions]))


def old_calls(data: Dataset) -> list[list[str]]:
    """The embed calls the study made before: memories in write batches of 64, then each owner's questions."""
    mems = [m.text for m in data.memories]
    calls = [mems[i : i + OLD_WRITE_BATCH] for i in range(0, len(mems), OLD_WRITE_BATCH)]
    owners: dict[tuple[str, str], list[str]] = {}
    for q in data.questions:
        owners.setdefault(q.owner, []).append(q.text)
    return calls + list(owners.values())


def numpy_pass(data: Dataset, vectors: dict[str, np.ndarray]) -> int:
    """Every question's cosine with every memory of its owner, ranked best first; returns the pairs scored."""
    pairs = 0
    for owner in data.owners():
        mems = data.memories_of(owner)
        qs = [q for q in data.questions if q.owner == owner]
        if not mems or not qs:
            continue
        m = np.stack([vectors[x.text] for x in mems])
        q = np.stack([vectors[x.text] for x in qs])
        sims = q @ m.T
        np.argsort(-sims, axis=1, kind="stable")
        pairs += sims.size
    return pairs


def _clocked(fn) -> dict[str, float]:
    """Run ``fn`` once: its wall and CPU seconds, plus whatever timings it returns."""
    wall, cpu = time.perf_counter(), time.process_time()
    extra = fn() or {}
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, **extra}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=f"locomo:{LOCOMO}")
    parser.add_argument("--mode", default="dense", choices=("dense", "hybrid"))
    parser.add_argument("--quick", action="store_true", help="the first conversation only, one round")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds; the fastest of each side counts")
    args = parser.parse_args()

    data = load_dataset(args.dataset)
    if args.quick:
        args.repeats = 1
        first = data.owners()[0]
        data = replace(data, name=data.name + " (first conversation)",
                       memories=tuple(m for m in data.memories if m.owner == first),
                       questions=tuple(q for q in data.questions if q.owner == first))
    embedder = make_embedder("minilm")
    model = embedder._model  # the raw sentence-transformers model, for the "before" encoding only
    texts = study_texts(data)
    # warm up: the model, chromadb's import and client, bm25s (one-time costs of a process, not of a study)
    run_study("workshop_en", mode=args.mode, embedder=embedder, thresholds="0.5", top_ks="5")

    lengths = dict(zip(texts, embedder.token_lengths(texts)))
    real_tokens = int(sum(lengths.values()))
    old = old_calls(data)
    old_tokens = sum(padded_tokens(np.array([lengths[t] for t in call]),
                                   length_batches(np.array([len(t) for t in call]), embedder.batch_size)) for call in old)
    token_array = np.array([lengths[t] for t in texts])
    new_tokens = padded_tokens(token_array, length_batches(token_array, embedder.batch_size))

    n_mem, n_q = len(data.memories), len(data.questions)

    def before() -> None:  # the old calls, each straight to sentence-transformers (it sorts by characters within a call)
        for call in old:
            model.encode(call, batch_size=embedder.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                         show_progress_bar=False)

    def limit() -> dict[str, float]:  # encode once, sorted and batched, then one numpy scoring pass
        t0 = time.perf_counter()
        vectors = dict(zip(texts, embedder.embed(texts)))
        t1 = time.perf_counter()
        scored.append(numpy_pass(data, vectors))
        return {"encode_s": t1 - t0, "score_s": time.perf_counter() - t1}

    def study() -> dict[str, float]:  # the whole study, with its phases from the progress callback
        marks: dict[str, float] = {}

        def progress(done: int, total: int) -> None:
            now = time.perf_counter()
            if done >= n_mem:
                marks.setdefault("encoded", now)
                marks["written"] = now if done == n_mem else marks.get("written", now)
            if done >= n_mem + n_q:
                marks.setdefault("scored", now)

        t0 = time.perf_counter()
        results.append(run_study(data, mode=args.mode, embedder=embedder, thresholds=DEFAULT_THRESHOLDS,
                                 top_ks=DEFAULT_TOP_KS, decay_rates=DEFAULT_DECAY_RATES, progress=progress))
        t3 = time.perf_counter()
        return {"encode_s": marks["encoded"] - t0, "write_s": marks["written"] - marks["encoded"],
                "score_s": marks["scored"] - marks["written"], "sweep_s": t3 - marks["scored"]}

    results: list = []
    scored: list[int] = []
    rounds = []
    for _ in range(args.repeats):  # interleaved, so a burst of load on the shared machine hits every side
        rounds.append({
            "before": _clocked(before),
            "limit": _clocked(limit),
            "study": _clocked(study),
        })
    best = {side: min(rounds, key=lambda r: r[side]["wall_s"])[side] for side in ("before", "limit", "study")}
    before_s, encode_s, score_s = best["before"]["wall_s"], best["limit"]["encode_s"], best["limit"]["score_s"]
    limit_s, study_s = best["limit"]["wall_s"], best["study"]["wall_s"]
    phases = {k: best["study"][k] for k in ("encode_s", "write_s", "score_s", "sweep_s")}
    ratio = study_s / limit_s
    cpu_ratio = best["study"]["cpu_s"] / best["limit"]["cpu_s"]
    result = results[0]
    pairs = scored[0]

    out = {
        "dataset": data.name, "memories": n_mem, "questions": n_q, "distinct_texts": len(texts), "mode": args.mode,
        "settings": len(result.sweep), "recall_at_10": result.at_k[10].recall, "repeats": args.repeats,
        "study_s": round(study_s, 3), "study_phases_s": {k: round(v, 3) for k, v in phases.items()},
        "limit_s": round(limit_s, 3), "limit_encode_s": round(encode_s, 3), "limit_numpy_score_s": round(score_s, 4),
        "pairs_scored": pairs, "ratio_study_vs_limit": round(ratio, 3), "ratio_cpu_time": round(cpu_ratio, 3),
        "target": TARGET, "encode_before_s": round(before_s, 3), "encode_after_s": round(encode_s, 3),
        "encode_speedup": round(before_s / encode_s, 2),
        "encode_before_cpu_s": round(best["before"]["cpu_s"], 3), "limit_cpu_s": round(best["limit"]["cpu_s"], 3),
        "tokens": {"real": real_tokens, "before_padded": old_tokens, "after_padded": new_tokens},
        "rounds": [{side: {k: round(v, 3) for k, v in r[side].items()} for side in r} for r in rounds],
        "note": "wall-clock seconds on a shared machine, the fastest of the interleaved rounds; compare the ratios",
    }
    table = "\n".join([
        f"| {data.name}: {n_mem} memories, {n_q} questions ({args.mode}, {len(result.sweep)} settings) | seconds |",
        "| --- | ---: |",
        f"| limit: encode {len(texts)} distinct texts once (sorted, batched) | {encode_s:.2f} |",
        f"| limit: numpy scoring pass ({pairs:,} pairs) | {score_s:.3f} |",
        f"| whole study (`python -m memory study` default) | {study_s:.2f} |",
        f"| ... of which encode / write / score / sweep | {phases['encode_s']:.2f} / {phases['write_s']:.2f} / "
        f"{phases['score_s']:.2f} / {phases['sweep_s']:.2f} |",
        f"| **study / limit** | **{ratio:.2f}** (target <= {TARGET}; CPU time: {cpu_ratio:.2f}) |",
        f"| encoding before: dataset-order chunks of {OLD_WRITE_BATCH} + per-owner questions | {before_s:.2f} |",
        f"| encoding after: one length-sorted pass | {encode_s:.2f} ({before_s / encode_s:.1f}x faster) |",
        f"| CPU seconds of the encoding before / after | {best['before']['cpu_s']:.1f} / {best['limit']['cpu_s']:.1f} |",
        f"| tokens processed before / after (real: {real_tokens:,}) | {old_tokens:,} / {new_tokens:,} |",
    ])
    path = write_results("study_speed", out, table)
    print(table)
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
