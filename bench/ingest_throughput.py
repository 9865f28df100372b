"""End-to-end write-path throughput (extract -> candidates -> adjudicate -> store) vs raw model encoding.

Generates N single-fact chat turns (deterministic by seed; English and Chinese; 100 facts per
user on average, with restatements, changed values and context-qualified facts mixed in), then in
one run and on the same fact texts, slice by slice (``--slice`` turns; the order of the two
alternates per slice, so a change in machine load hits both alike):

* encode:   SentenceTransformer.encode(the slice's fact texts) with the engine's batch size;
* ingest:   Ingestor(manager).ingest_many(the slice's turns) into one growing in-memory Chroma:
            extraction, one embedding call and one candidate read per owner per batch,
            adjudication, writes and the decision log.

ratio = ingest facts/s / encode facts/s (target >= 0.7 at 10,000 facts). A third, separate pass
ingests the same turns with a zero-cost embedder into a fresh store, the text memos emptied first: that is the
write path's own overhead (ms/fact), so the ratio on an idle machine can be estimated as
encode_time / (encode_time + overhead_time) whatever the load was during the run.
Writes bench/results/ingest_throughput.json and .md.

``--judge learned`` (or ``bands``) runs the same with another write-path judge (memory.write.judges) and writes
bench/results/ingest_throughput_learned.json and .md; the rules are the default.

Run: python -m bench.ingest_throughput [--n 10000] [--quick] [--slice 2500] [--overhead-only] [--judge NAME]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter

from tqdm import tqdm

from memory import MemoryConfig, MemoryManager, Message, StoreLocation, make_embedder
from memory.core.textcaches import clear_text_caches
from memory.write.extract import extract_facts
from memory.write.ingest import Ingestor
from memory.write.judges import DEFAULT_JUDGE, JUDGE_NAMES, make_judge

from .common import SyntheticEmbedder, peak_rss_mb, write_results

T0 = 1_780_000_000.0
FACTS_PER_USER = 100
CITIES = ["Hangzhou", "Shanghai", "Beijing", "Chengdu", "Shenzhen", "Berlin", "Paris", "Tokyo", "Nanjing", "Suzhou"]
JOBS = ["data engineer", "teacher", "nurse", "product manager", "designer", "data scientist", "lawyer", "chef"]
FRUITS = ["mango", "apple", "banana", "peach", "lychee", "grape"]
COLOURS = ["blue", "green", "red", "black", "purple", "orange"]
PETS = [("dog", "Max"), ("cat", "Mochi"), ("dog", "Lucky"), ("cat", "Luna")]
PROJECTS = ["campaign", "launch", "migration", "marketing", "training"]
LANGS = [("Go", "tabs"), ("Python", "4 spaces"), ("Rust", "4 spaces"), ("Java", "4 spaces")]
CITIES_ZH = ["杭州", "上海", "北京", "成都", "深圳", "苏州"]
DRINKS_ZH = ["绿茶", "咖啡", "红茶", "豆浆"]


TEMPLATES = (
    lambda r: f"I live in {r.choice(CITIES)}.",
    lambda r: f"I moved to {r.choice(CITIES)} last month.",
    lambda r: f"I work as a {r.choice(JOBS)}.",
    lambda r: f"My favourite fruit is {r.choice(FRUITS)}.",
    lambda r: f"My favourite colour is {r.choice(COLOURS)}.",
    lambda r: "I have a {} named {}.".format(*r.choice(PETS)),
    lambda r: f"The {r.choice(PROJECTS)} budget is {r.randrange(1, 60) * 10_000:,} yuan.",
    lambda r: f"The {r.choice(PROJECTS)} deadline is June {r.randrange(1, 29)}.",
    lambda r: f"On {r.choice(['weekdays', 'weekends'])} I wake up at {r.randrange(5, 10)}:{r.choice(['00', '30'])}.",
    lambda r: "When writing {}, I prefer {}.".format(*r.choice(LANGS)),
    lambda r: f"The team has {r.randrange(3, 30)} people.",
    lambda r: f"I am allergic to {r.choice(['peanuts', 'shellfish', 'pollen', 'cats', 'milk'])}.",
    lambda r: f"我住在{r.choice(CITIES_ZH)}。",
    lambda r: f"{r.choice(['工作日', '周末'])}我早上喝{r.choice(DRINKS_ZH)}。",
)
"""One fact per turn, of many kinds, so every decision kind occurs."""


def turn(rng: random.Random) -> str:
    return TEMPLATES[rng.randrange(len(TEMPLATES))](rng)


def turns(n: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    users = max(1, n // FACTS_PER_USER)
    out = []
    for i in range(n):
        u = rng.randrange(users)
        out.append(Message(tenant_id=f"tenant-{u % 10}", user_id=f"user-{u}", content=turn(rng), id=f"m{i}",
                           timestamp=T0 + i))
    return out


def encode_seconds(model, texts: list[str], batch_size: int) -> float:
    start = time.perf_counter()
    model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - start


def ingest_seconds(ingestor: Ingestor, messages: list[Message], out: list) -> float:
    start = time.perf_counter()
    out += ingestor.ingest_many(messages)
    return time.perf_counter() - start


def _bare_ingestor(n: int, batch_size: int, judge: str = DEFAULT_JUDGE) -> Ingestor:
    """The write path with a zero-cost embedder, into a fresh in-memory store: its own overhead (a judge with a model
    of its own, the learned one, still runs it)."""
    return Ingestor(MemoryManager(MemoryConfig(), embedder=SyntheticEmbedder(), location=StoreLocation(),
                                  workspace=f"bench-ingest-bare-{n}"), batch_size=batch_size, judge=make_judge(judge))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ingest_throughput", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="chat turns (one fact each); default 10000")
    p.add_argument("--quick", action="store_true", help="1000 turns")
    p.add_argument("--slice", type=int, default=2500, help="turns per slice (and per ingest batch)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--overhead-only", action="store_true",
                   help="only the zero-cost-embedder pass: print the write path's own ms/fact (no model, no files)")
    p.add_argument("--judge", choices=JUDGE_NAMES, default=DEFAULT_JUDGE,
                   help=f"the write path's judge (default {DEFAULT_JUDGE}); another one writes ingest_throughput_NAME")
    a = p.parse_args(argv)
    n = 1000 if a.quick else a.n
    if n < 1 or a.slice < 1:
        p.error("--n and --slice must be >= 1")
    if a.overhead_only:
        slices = [turns(n, a.seed)[i : i + a.slice] for i in range(0, n, a.slice)]
        entries: list = []
        seconds = sum(ingest_seconds(_bare_ingestor(n, a.slice, a.judge), part, entries) for part in slices)
        print(f"write-path overhead: {seconds / len(entries) * 1000:.2f} ms/fact over {len(entries):,} facts "
              f"(slices of {a.slice:,}); decisions {dict(sorted(Counter(e.decision.decision for e in entries).items()))}")
        return 0

    embedder = make_embedder("minilm")
    model, batch = embedder._model, embedder.batch_size
    messages = turns(n, a.seed)
    slices = [messages[i : i + a.slice] for i in range(0, n, a.slice)]
    slice_texts = [[f.text for m in part for f in extract_facts(m.content)] for part in slices]
    texts = [t for part in slice_texts for t in part]
    encode_seconds(model, texts[:256], batch)  # warm-up

    mm = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(), workspace=f"bench-ingest-{n}")
    ingestor = Ingestor(mm, batch_size=a.slice, judge=make_judge(a.judge))
    entries: list = []
    encode_s = ingest_s = 0.0
    for k, (part, part_texts) in enumerate(zip(tqdm(slices, desc="slices", file=sys.stderr), slice_texts)):
        if k % 2:
            ingest_s += ingest_seconds(ingestor, part, entries)
            encode_s += encode_seconds(model, part_texts, batch)
        else:
            encode_s += encode_seconds(model, part_texts, batch)
            ingest_s += ingest_seconds(ingestor, part, entries)

    clear_text_caches()  # the same turns again: without this the bare pass would read them from the first pass's
    # memos (the reader's, and the learned judge's e5 vectors) and understate the write path's own cost
    bare = _bare_ingestor(n, a.slice, a.judge)
    overhead_entries: list = []
    overhead_s = sum(ingest_seconds(bare, part, overhead_entries) for part in slices)

    facts = len(entries)
    encode_fps, ingest_fps = len(texts) / encode_s, facts / ingest_s
    ratio = ingest_fps / encode_fps
    idle_estimate = encode_s / (encode_s + overhead_s)
    kinds = Counter(e.decision.decision for e in entries)
    plain = Counter(e.decision.plain_rule for e in entries)
    data = {
        "judge": a.judge, "turns": n, "facts": facts, "texts_encoded": len(texts), "users": len({(m.tenant_id, m.user_id) for m in messages}),
        "slice": a.slice, "encode_batch_size": batch, "encode_seconds": encode_s, "ingest_seconds": ingest_s,
        "encode_facts_per_s": encode_fps, "ingest_facts_per_s": ingest_fps, "ratio": ratio, "target_ratio": 0.7,
        "meets_target": ratio >= 0.7, "overhead_seconds": overhead_s, "overhead_ms_per_fact": overhead_s / facts * 1000,
        "encode_ms_per_fact": encode_s / len(texts) * 1000, "ratio_estimate_without_load_skew": idle_estimate,
        "load_average_after": os.getloadavg(), "decisions": dict(kinds), "plain_rule": dict(plain),
        "stored_vectors": mm.store.count(), "peak_rss_mb": peak_rss_mb(),
    }
    table = "\n".join([
        "| facts | encode facts/s | ingest facts/s | ratio | write-path overhead | encode | ratio from overhead | "
        "decisions (governed) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {facts:,} | {encode_fps:,.0f} | {ingest_fps:,.0f} | {ratio:.2f} | {overhead_s / facts * 1000:.2f} ms/fact | "
        f"{encode_s / len(texts) * 1000:.2f} ms/fact | {idle_estimate:.2f} | "
        f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))} |",
    ])
    path = write_results("ingest_throughput" + ("" if a.judge == DEFAULT_JUDGE else f"_{a.judge}"), data, table)
    print(table)
    print(f"\nencode {encode_s:.1f} s, ingest {ingest_s:.1f} s: ratio {ratio:.2f} (target 0.70: "
          f"{'met' if ratio >= 0.7 else 'NOT met'}); write-path overhead {overhead_s:.1f} s; "
          f"load average now {os.getloadavg()[0]:.1f}; written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
