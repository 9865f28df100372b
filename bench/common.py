"""Shared helpers for benchmark scripts: machine description, percentiles, result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

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


def chroma_executable() -> str:
    """The ``chroma`` command installed with chromadb, beside this interpreter (not looked up on PATH)."""
    exe = Path(sys.executable).parent / "chroma"
    if not exe.exists():
        raise FileNotFoundError(f"no chroma command beside {sys.executable} (chromadb is in requirements.txt)")
    return str(exe)


def stop(proc: subprocess.Popen, *, timeout: float = 30.0) -> None:
    """Stop a server process started by a benchmark or a test: terminate, then kill if it does not exit."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def chroma_server(folder: Path, *, timeout: float = 120.0) -> Iterator[int]:
    """A real ``chroma run`` on a free loopback port with its data in ``folder``; yields the port, then stops it."""
    from memory.store.chroma_files import prepare_folder
    from memory.store.heap import PROCESS_ENV

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prepare_folder(Path(folder))  # auto_vacuum before the server creates its database (memory/store/chroma_files.py)
    proc = subprocess.Popen([chroma_executable(), "run", "--path", str(folder), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=os.environ | PROCESS_ENV)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma run did not start") from None
                time.sleep(0.5)
        yield port
    finally:
        stop(proc)


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


APP_IDLE_JS = """quiet => {
    const app = document.querySelector("[data-testid='stApp']");
    const busy = !app || app.dataset.testScriptState !== "notRunning"
        || app.dataset.testConnectionState !== "CONNECTED"
        || document.querySelector("[data-testid='stStatusWidget']")
        || document.querySelector("[class*='st-key-engine-waiting']");
    const now = performance.now();
    if (busy) { window.__labIdleSince = undefined; return false; }
    if (window.__labIdleSince === undefined) window.__labIdleSince = now;
    return now - window.__labIdleSince >= quiet;
}"""
"""True once the app has been idle for ``quiet`` ms: Streamlit's own run state on stApp (``data-test-script-state``,
what Streamlit's e2e tests wait on) says notRunning over a live connection, no status widget shows, and no page waits
for the model or a background load to rerun it (lab.engine.WAITING_KEY)."""


APP_RUNS_JS = """(() => {
    window.__labRuns = 0;
    new MutationObserver(changes => { window.__labRuns += changes.length; })
        .observe(document, {attributes: true, subtree: true, attributeFilter: ["data-test-script-state"]});
})();"""
"""Counts the changes of the app's run state (every new document of a context). A change after an action means the
rerun it asked for has begun (the state leaves "notRunning" only then); a run quicker than one observer callback
still changes it twice. Nothing else tells a test that a rerun was requested but has not started yet."""
