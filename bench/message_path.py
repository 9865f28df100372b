"""The message path beside the pair path: each labelled pair as two chat messages of one user through the facts write
path, against the same judge on the pair's two statements.

For each pair of the chosen sets a fresh owner says ``existing`` as a first chat message and ``incoming`` as a second
one an hour later, through :class:`memory.write.ingest.Ingestor` (English sets on MiniLM, Chinese sets on e5 with the
bands carried to its scale, as the lab does: :func:`memory.eval.calibration.config_for`): every pair's first message
in one ``ingest_many`` call, then every second one in another. The message path's verdict for the pair:

- ``update``: a record stored from the first message was retired by the second;
- ``duplicate``: no fact of the second message was stored (each one a duplicate, or none extracted);
- kept (``coexist`` or ``new``) otherwise.

The pair path is the same judge on the pair's two texts (:func:`memory.eval.pairs.evaluate_pairs`, the cosine of the
same model, the same bands). Reported per set and judge: the outcome accuracy of both paths (duplicate, update, kept:
coexist and new both keep the fact), the share of pairs with the same outcome on both paths, the updates after which
no record of the first message was retired (its old value stays live in governed recall), and the second message's
facts judged against nothing although the first message stored facts (the candidate selection hid them).

Sets: the held-out sets by default (``fixtures/independent/`` heldout_*, unseen_*, fresh_*, sealed_*, waiting_*,
reserve_*, twins_*: only measured); ``--sets training`` takes the training sets (``fixtures/training/train_*``, the
only pairs to tune the message path on), ``--every N`` every N-th pair, ``--details`` (training sets only) writes each
pair whose outcome differs between the paths or from the label. Sets J and K (``spare_*``, ``probe_*``) are never
opened. Results: bench/results/message_path.json and .md (``_quick``, ``_training`` for those runs).

    python -m bench.message_path [--quick] [--judge learned|rules] [--sets held-out|training] [--every N] [--details]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from bench.common import write_results
from memory import Ingestor, MemoryManager, Message, StoreLocation, make_embedder
from memory.core.config import MemoryConfig
from memory.core.scenario import FIXTURES_DIR
from memory.embed.embedders import Embedder
from memory.eval.calibration import config_for
from memory.eval.pairs import PairItem, evaluate_pairs, load_pairs
from memory.write.adjudicate import Judge
from memory.write.judges import make_judge

HELD_OUT = ("heldout", "unseen", "fresh", "sealed", "waiting", "reserve", "twins")
"""The held-out sets measured by default (fixtures/independent/README.md), each in English and Chinese."""
EMBEDDERS = {"en": "minilm", "zh": "e5"}
"""The store's model for each language's pairs (the lab's choice for each)."""
JUDGES = ("learned", "rules")
FIRST_AT, SECOND_AT = 1_767_225_600.0, 1_767_229_200.0
"""When the first and the second message are said (2026-01-01 00:00 and 01:00 UTC)."""
TENANT = "bench"


def outcome(verdict: str) -> str:
    """duplicate, update, or keep (coexist and new both keep the fact)."""
    return "keep" if verdict in ("coexist", "new") else verdict


def held_out_sets() -> dict[str, Path]:
    """name -> path of the held-out sets, named one by one (sets J and K are not even listed)."""
    folder = FIXTURES_DIR / "independent"
    return {f"{name}_{lang}": folder / f"{name}_{lang}.json" for name in HELD_OUT for lang in ("en", "zh")}


def training_sets() -> dict[str, Path]:
    """name -> path of the training-only sets (fixtures/training/train_*.json; not next/)."""
    folder = FIXTURES_DIR / "training"
    paths = sorted(folder.glob("train_*.json"), key=lambda p: (p.stem.split("_")[1], int(p.stem.split("_")[2])))
    return {p.stem: p for p in paths}


def language_of(name: str) -> str:
    return "zh" if name.endswith("_zh") or "_zh_" in name else "en"


@dataclass
class MessageRun:
    """What the message path did with one pair."""

    verdict: str
    """update, duplicate or new (kept): see the module docstring."""
    first: list[str] = field(default_factory=list)
    """The facts stored from the first message."""
    second: list[dict[str, Any]] = field(default_factory=list)
    """The second message's decisions: fact, decision, candidate, reason code."""
    hidden: int = 0
    """Facts of the second message judged against nothing although the first message stored facts."""


def message_path(items: Sequence[PairItem], *, embedder: Embedder, config: MemoryConfig, judge: Judge,
                 ) -> list[MessageRun]:
    """Each pair as two messages of a fresh owner through the write path; one run per pair, in order."""
    manager = MemoryManager(config, embedder=embedder, location=StoreLocation(),
                            workspace=f"message-path-{time.time_ns()}")
    try:
        ingestor = Ingestor(manager, judge=judge)
        owners = [f"pair-{i}" for i in range(len(items))]
        first = ingestor.ingest_many([Message(tenant_id=TENANT, user_id=u, id="first", content=it.existing,
                                              timestamp=FIRST_AT) for u, it in zip(owners, items)])
        second = ingestor.ingest_many([Message(tenant_id=TENANT, user_id=u, id="second", content=it.incoming,
                                               timestamp=SECOND_AT) for u, it in zip(owners, items)])
    finally:
        manager.close()
    stored: dict[str, set[str]] = {u: set() for u in owners}
    first_facts: dict[str, list[str]] = {u: [] for u in owners}
    for e in first:
        if e.decision.decision != "bounded":
            stored[e.user_id].add(e.memory_id)
            first_facts[e.user_id].append(e.decision.fact)
    by_owner: dict[str, list[Any]] = {u: [] for u in owners}
    for e in second:
        if e.decision.decision != "bounded":
            by_owner[e.user_id].append(e)
    runs = []
    for u in owners:
        entries = by_owner[u]
        if any(e.superseded in stored[u] for e in entries if e.superseded):
            verdict = "update"
        elif all(e.decision.decision == "duplicate" for e in entries):
            verdict = "duplicate"
        else:
            verdict = "new"
        hidden = sum(1 for e in entries if stored[u] and e.decision.why.code == "new.no_candidate")
        runs.append(MessageRun(verdict, first_facts[u], [
            {"fact": e.decision.fact, "decision": e.decision.decision,
             "candidate": e.decision.candidate.text if e.decision.candidate else None,
             "reason": e.decision.why.code} for e in entries], hidden))
    return runs


def measure_set(name: str, items: list[PairItem], *, embedder: Embedder, config: MemoryConfig, judge: Judge,
                details: bool = False) -> dict[str, Any]:
    """Both paths on one set: accuracies, agreement, stale updates, hidden facts (and, with ``details``, the pairs
    whose outcome differs)."""
    start = time.perf_counter()
    pair = [r.decision for r in evaluate_pairs(items, embedder=embedder, config=config, source=name,
                                               judge=judge).results]
    runs = message_path(items, embedder=embedder, config=config, judge=judge)
    seconds = time.perf_counter() - start
    expected = [it.expected for it in items]
    n = len(items)
    updates = [i for i, e in enumerate(expected) if e == "update"]
    out: dict[str, Any] = {
        "set": name, "pairs": n,
        "pair_outcome": round(sum(outcome(p) == outcome(e) for p, e in zip(pair, expected)) / n, 4),
        "message_outcome": round(sum(outcome(r.verdict) == outcome(e) for r, e in zip(runs, expected)) / n, 4),
        "same_outcome": round(sum(outcome(p) == outcome(r.verdict) for p, r in zip(pair, runs)) / n, 4),
        "updates": len(updates),
        "stale_after_update_message": sum(runs[i].verdict != "update" for i in updates),
        "stale_after_update_pair": sum(pair[i] != "update" for i in updates),
        "message_silent_losses": sum(runs[i].verdict == "duplicate" for i in updates),
        "message_wrong_retirements": sum(r.verdict == "update" and e in ("coexist", "new") for r, e in zip(runs, expected)),
        "hidden_by_candidates": sum(r.hidden for r in runs),
        "split_second": sum(len(r.second) > 1 for r in runs),
        "seconds": round(seconds, 1),
    }
    if details:
        out["differing"] = [
            {"id": it.id, "existing": it.existing, "incoming": it.incoming, "expected": it.expected, "pair": p,
             "message": r.verdict, "first_facts": r.first, "second": r.second}
            for it, p, r in zip(items, pair, runs)
            if outcome(p) != outcome(r.verdict) or outcome(r.verdict) != outcome(it.expected or "")]
    return out


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pair-weighted accuracies and summed counts over ``rows``."""
    n = sum(r["pairs"] for r in rows)
    out: dict[str, Any] = {"pairs": n}
    for key in ("pair_outcome", "message_outcome", "same_outcome"):
        out[key] = round(sum(r[key] * r["pairs"] for r in rows) / n, 4) if n else None
    for key in ("updates", "stale_after_update_message", "stale_after_update_pair", "message_silent_losses",
                "message_wrong_retirements", "hidden_by_candidates", "split_second", "seconds"):
        out[key] = round(sum(r[key] for r in rows), 1) if key == "seconds" else sum(r[key] for r in rows)
    return out


def table(judge: str, rows: list[dict[str, Any]], by_language: dict[str, dict[str, Any]]) -> str:
    lines = [f"Judge: {judge}", "",
             "| set | pairs | pair path outcome | message path outcome | same outcome | updates | old value live "
             "after update (message / pair) | silent losses (message) | wrong retirements (message) | facts hidden "
             "from the judge | second message split | seconds |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in [*rows, *({"set": f"**all {lang}**", **t} for lang, t in by_language.items())]:
        lines.append(f"| {r['set']} | {r['pairs']} | {r['pair_outcome']:.3f} | {r['message_outcome']:.3f} | "
                     f"{r['same_outcome']:.3f} | {r['updates']} | {r['stale_after_update_message']} / "
                     f"{r['stale_after_update_pair']} | {r['message_silent_losses']} | {r['message_wrong_retirements']} | "
                     f"{r['hidden_by_candidates']} | {r['split_second']} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the --judge judge only, every 3rd pair")
    p.add_argument("--judge", choices=JUDGES, default="learned", help="the judge (default learned; the full run adds "
                   "the rules beside it)")
    p.add_argument("--sets", choices=("held-out", "training"), default="held-out",
                   help="held-out: fixtures/independent/ (measured only); training: fixtures/training/train_*")
    p.add_argument("--every", type=int, default=0, help="every N-th pair of each set (default 1; 3 with --quick)")
    p.add_argument("--details", action="store_true", help="with --sets training: the pairs whose outcome differs")
    a = p.parse_args(argv)
    if a.details and a.sets != "training":
        p.error("--details is for the training sets only: the held-out sets are only measured")
    every = a.every or (3 if a.quick else 1)
    if every < 1:
        p.error(f"--every must be >= 1, got {every}")
    sets = held_out_sets() if a.sets == "held-out" else training_sets()
    judges = [a.judge] if a.quick else [a.judge, *(j for j in JUDGES if j != a.judge)]
    embedders = {lang: make_embedder(name) for lang, name in EMBEDDERS.items()}
    configs = {"en": MemoryConfig(), "zh": config_for(EMBEDDERS["zh"], language="zh")}
    data: dict[str, Any] = {"sets": a.sets, "every": every, "embedders": EMBEDDERS,
                            "bands": {lang: [c.conflict_band, c.duplicate_band] for lang, c in configs.items()},
                            "judges": {}}
    parts = [f"Each pair as two chat messages of a fresh user through the facts write path (English on "
             f"{EMBEDDERS['en']}, Chinese on {EMBEDDERS['zh']}) beside the same judge on the pair "
             f"({a.sets} sets{f', every {every}th pair' if every > 1 else ''}). Outcome: duplicate, update or kept.", ""]
    loaded = {name: [it for it in load_pairs(path) if it.expected is not None][::every] for name, path in sets.items()}
    for key in judges:
        judge = make_judge(key)
        rows = []
        for name, items in loaded.items():
            lang = language_of(name)
            rows.append(measure_set(name, items, embedder=embedders[lang], config=configs[lang], judge=judge,
                                    details=a.details))
            r = rows[-1]
            print(f"{key} {name}: pair {r['pair_outcome']:.3f} message {r['message_outcome']:.3f} "
                  f"same {r['same_outcome']:.3f} ({r['seconds']:.0f} s)", flush=True)
        by_language = {lang: totals([r for r in rows if language_of(r["set"]) == lang]) for lang in ("en", "zh")}
        data["judges"][key] = {"by_language": by_language, "all": totals(rows), "sets": rows}
        parts += [table(key, [{k: v for k, v in r.items() if k != "differing"} for r in rows], by_language), ""]
    text = "\n".join(parts).rstrip()
    suffix = "_training" if a.sets == "training" else "_quick" if a.quick else ""
    write_results("message_path" + suffix, data, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
