"""Shared helpers for benchmark scripts: machine description, percentiles, result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    import chromadb

    return {
        "python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
        "chromadb": chromadb.__version__, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def percentiles(samples: list[float]) -> dict[str, float]:
    arr = np.asarray(samples) * 1000.0
    return {"p50_ms": float(np.percentile(arr, 50)), "p95_ms": float(np.percentile(arr, 95)),
            "mean_ms": float(statistics.fmean(arr)), "n": len(samples)}


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def write_results(name: str, data: dict[str, Any], table: str) -> Path:
    """Write bench/results/NAME.json and NAME.md; return the JSON path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "machine": machine(), **data}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    (RESULTS / f"{name}.md").write_text(table + "\n", encoding="utf-8")
    return path


class SyntheticEmbedder:
    """Random unit vectors, deterministic by text hash: for benchmarks about the store, not the model."""

    name = "synthetic384"
    dim = 384

    def embed(self, texts):
        import hashlib

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out
