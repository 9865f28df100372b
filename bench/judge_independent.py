"""The judge conformance suite: the plain two-band rule, the rule judge and the learned judge side by side, with each
one's cost per decision.

Sets: the project's own (memory/scenarios/pairs/dedup_pairs_*.json, which the rules were written against) and the
independent ones (fixtures/independent/: dev_* and test_* have been tuned on and trained on; heldout_* (set C), unseen_*
(set D), fresh_* (set E), sealed_* (set F), waiting_* (set G), reserve_* (set H) and twins_* (set I) are only measured;
spare_* (set J) and probe_* (set K) wait for the judge's next change, with --sealed). The rules and the plain rule see MiniLM's cosine (the lab's default model); the learned
judge reads its own e5 vectors whatever the store uses. A chat-model judge (memory.ChatJudge) joins with
--chat when MEMORY_JUDGE_URL names an endpoint. Results: bench/results/judge_independent.json and .md.

    python -m bench.judge_independent [--quick] [--sealed] [--embedder NAME] [--chat]

Cost per decision: each judge decides every pair of the sets once more, one pair at a time as the write path asks,
with its memos emptied first (the learned judge's time includes embedding both statements and their changed spans), timed in this process.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.common import write_results
from memory import make_embedder
from memory.core.config import MemoryConfig
from memory.core.textcaches import clear_text_caches
from memory.eval.conformance import SetResult, conformance_sets, format_conformance, plain_judge, run_conformance
from memory.eval.pairs import load_pairs, pair_similarities
from memory.write.adjudicate import Judge, judge_reason
from memory.write.judges.learned import LearnedJudge


def cost_per_decision(judge: Judge, pairs: list[tuple[str, str, float]]) -> float:
    """Milliseconds per decision, memos emptied first."""
    config = MemoryConfig()
    clear_text_caches()
    start = time.perf_counter()
    for existing, incoming, sim in pairs:
        judge(existing, incoming, sim, config=config)
    return (time.perf_counter() - start) * 1000 / max(len(pairs), 1)


HELD_OUT = ("independent/heldout", "independent/unseen", "independent/fresh", "independent/sealed", "independent/waiting",
            "independent/twins", "independent/reserve", "independent/spare", "independent/probe")
"""The sets no judge was trained or tuned on (sets J, ``spare_*``, and K, ``probe_*``, are among the sets only with
``--sealed``)."""


def summary(results: list[SetResult]) -> dict[str, Any]:
    held = [r for r in results if r.name.startswith(HELD_OUT)]
    n = sum(r.pairs for r in held)
    return {"held_out_pairs": n,
            "held_out_outcome": round(sum(r.outcome_accuracy * r.pairs for r in held) / n, 4) if n else None,
            "held_out_4_verdict": round(sum(r.accuracy * r.pairs for r in held) / n, 4) if n else None,
            "held_out_data_lost": sum(r.data_lost for r in held)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the held-out sets only (heldout_*, unseen_*, fresh_*, "
                   "sealed_*, waiting_*, twins_*, reserve_*; spare_* too with --sealed)")
    p.add_argument("--embedder", default="minilm", help="the model whose cosine the rules see (default minilm)")
    p.add_argument("--sealed", action="store_true", help="also set J (spare_*): only for measuring a judge's next "
                   "change, once (fixtures/independent/README.md)")
    p.add_argument("--chat", action="store_true", help="also the chat-model judge (MEMORY_JUDGE_URL, _MODEL, _API_KEY)")
    a = p.parse_args(argv)
    embedder = make_embedder(a.embedder)
    sets = conformance_sets(sealed=a.sealed)
    if a.quick:
        sets = {k: v for k, v in sets.items() if k.startswith(HELD_OUT)}
    judges: dict[str, tuple[str, Judge]] = {
        "plain": ("The plain two-band rule", plain_judge),
        "rules": ("The rule judge (memory.write.adjudicate.RULES)", judge_reason),
        "learned": ("The learned judge (memory.write.judges.learned, weights memory/write/judges/judge_model.json)", LearnedJudge()),
    }
    if a.chat:
        from memory.write.judges.chat import ChatJudge

        judges["chat"] = ("The chat-model judge (memory.ChatJudge)", ChatJudge.from_env())
    items = [it for path in sets.values() for it in load_pairs(path) if it.expected is not None]
    pairs = [(it.existing, it.incoming, float(s)) for it, s in zip(items, pair_similarities(items, embedder))]
    data: dict[str, Any] = {"embedder": embedder.name, "quick": a.quick, "judges": {}}
    parts = []
    for key, (title, judge) in judges.items():
        results = run_conformance(None if judge is judge_reason else judge, embedder=embedder, sets=sets)
        ms = cost_per_decision(judge, pairs)
        data["judges"][key] = {"title": title, "ms_per_decision": round(ms, 3), **summary(results),
                               "sets": [r.to_dict() for r in results]}
        s = summary(results)
        parts += [f"{title}: {ms:.2f} ms per decision; held-out sets (heldout_*, unseen_*, fresh_*, sealed_*, "
                  f"waiting_*, twins_*, reserve_*{', spare_*' if a.sealed else ''}, {s['held_out_pairs']} pairs): outcome {s['held_out_outcome']}, 4-verdict {s['held_out_4_verdict']}, "
                  f"data-losing mistakes {s['held_out_data_lost']}", "", format_conformance(results), ""]
    table = "\n".join([f"Cosine for the rules and the plain rule from {embedder.name}.", ""] + parts).rstrip()
    write_results("judge_independent" + ("_quick" if a.quick else ""), data, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
