"""Does the lesson land at the lab's defaults? Blind vs governed pollution for every labelled query of a scenario.

`python -m bench.lesson_defaults [--scenario workshop_en] [--embedder minilm]` loads the scenario the way the lab
does (an on-disk workspace, the lab's window, ``lab.loading.load_messages``), once per write path (``raw`` and
``facts``), and for each labelled query counts the polluted memories in blind top-k and in governed recall with
the default MemoryConfig, as the recall page does (``lab.pollution.kinds_of``: another owner's memory, a stale,
noise or contradiction label, a forbidden one). A query "lands" when governed is never more polluted than blind
and strictly less wherever blind is polluted (issue 10's bar for the first screen). Not a timing: a count.
Writes bench/results/lesson_defaults.json and .md.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from memory import MemoryConfig, MemoryManager, Owner, govern, make_embedder
from memory.eval.calibration import config_for
from memory.write.ingest import Ingestor
from memory.core.scenario import SCENARIOS_DIR, load_scenario
from memory.core.schema import parse_time
from memory.store.chroma import StoreLocation

from lab import WINDOW_CAPACITY, WRITE_PATHS
from lab.loading import load_messages
from lab.pollution import kinds_of
from lab.views import cached_count_tokens

from .common import write_results


def count(scenario_name: str, embedder_name: str, write_path: str, threshold: float | None = None) -> list[dict]:
    """One row per labelled query: blind and governed polluted counts at the default config (``threshold``
    instead of the default's, when given), and whether each served one of the query's relevant memories."""
    scenario = load_scenario(SCENARIOS_DIR / f"{scenario_name}.json")
    config = config_for(embedder_name, language=scenario.language)  # the sidebar's defaults for this model and language
    if threshold is not None:
        config = config.replace(threshold=threshold)
    labels = {m.id: tuple(m.labels) for m in scenario.messages}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        manager = MemoryManager(config_for(embedder_name, MemoryConfig(window_size=WINDOW_CAPACITY),
                                           language=scenario.language),
                                embedder=make_embedder(embedder_name),
                                workspace="lesson", location=StoreLocation(data_dir=Path(folder)),
                                token_counter=cached_count_tokens)  # as the lab makes a workspace
        load_messages(manager, Ingestor(manager) if write_path == "facts" else None, scenario.messages)
        for q in scenario.queries:
            owner = (q.tenant_id, q.user_id)
            as_of = parse_time(q.as_of, "as_of") if q.as_of else scenario.last_time
            candidates = manager.candidates(q.query, tenant_id=q.tenant_id, user_id=q.user_id, as_of=as_of,
                                            pool=manager.store.count(Owner(*owner)))
            result = govern(candidates, config, token_counter=cached_count_tokens)

            def polluted(hits) -> int:
                return sum(1 for h in hits if kinds_of(h.record, owner=owner, labels=labels, query=q))

            def served(hits) -> bool:
                return any(set(h.record.source_message_ids) & set(q.relevant) for h in hits)

            blind, governed = polluted(result.blind), polluted(result.governed)
            rows.append({"query": q.id, "text": q.query, "write_path": write_path, "blind": blind,
                         "governed": governed, "lands": governed <= blind and (blind == 0 or governed < blind),
                         "has_relevant": bool(q.relevant), "served_blind": served(result.blind),
                         "served_governed": served(result.governed)})
        manager.store.drop()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.lesson_defaults", description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="workshop_en")
    p.add_argument("--embedder", default="minilm", choices=("minilm", "e5", "lexical"))
    p.add_argument("--threshold", type=float, default=None, help="instead of the default's (carried) threshold")
    p.add_argument("--quick", action="store_true", help="the same (the scenario is small)")
    a = p.parse_args(argv)
    rows = [row for path in WRITE_PATHS for row in count(a.scenario, a.embedder, path, a.threshold)]
    language = load_scenario(SCENARIOS_DIR / f"{a.scenario}.json").language
    threshold = a.threshold if a.threshold is not None else config_for(a.embedder, language=language).threshold
    lines = [f"{a.scenario}, {a.embedder}, default settings (threshold {threshold}"
             f"{', given' if a.threshold is not None else ''}); polluted memories in blind top-k vs governed recall, "
             "and the labelled queries with a relevant memory for which one was served.", "",
             "| write path | queries | polluted, blind | polluted, governed | relevant served, blind | "
             "relevant served, governed | queries where it does not land |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for path in WRITE_PATHS:
        mine = [r for r in rows if r["write_path"] == path]
        misses = ", ".join(r["query"] for r in mine if not r["lands"]) or "none"
        asked = sum(r["has_relevant"] for r in mine)
        lines.append(f"| {path} | {len(mine)} | {sum(r['blind'] for r in mine)} | {sum(r['governed'] for r in mine)} "
                     f"| {sum(r['served_blind'] for r in mine)}/{asked} | {sum(r['served_governed'] for r in mine)}/"
                     f"{asked} | {misses} |")
    table = "\n".join(lines)
    name = "lesson_defaults" if (a.scenario, a.embedder) == ("workshop_en", "minilm") else \
        f"lesson_defaults_{a.scenario}_{a.embedder}"
    if a.threshold is not None:
        name += f"_at_{a.threshold:g}"
    write_results(name, {"scenario": a.scenario, "embedder": a.embedder, "threshold": threshold, "rows": rows}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
