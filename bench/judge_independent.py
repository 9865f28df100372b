"""The judge conformance suite on every labelled pair set: the rule judge, and the plain two-band rule beside it.

Sets: the project's own (fixtures/dedup_pairs_*.json, which the rules were written against) and the independent
ones (fixtures/independent/: dev_* and test_* have been tuned on, heldout_* is only measured). Similarity from MiniLM
(the lab's default model). This is a count, not a timing. Results: bench/results/judge_independent.json and .md.

    python -m bench.judge_independent [--quick] [--embedder NAME]
"""

from __future__ import annotations

import argparse

from bench.common import write_results
from memory import make_embedder
from memory.eval.conformance import conformance_sets, format_conformance, plain_judge, run_conformance


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the held-out sets only (heldout_*, unseen_*)")
    p.add_argument("--embedder", default="minilm", help="the model whose cosine the judges see (default minilm)")
    a = p.parse_args(argv)
    embedder = make_embedder(a.embedder)
    sets = conformance_sets()
    if a.quick:
        sets = {k: v for k, v in sets.items() if k.startswith(("independent/heldout", "independent/unseen"))}
    rules = run_conformance(None, embedder=embedder, sets=sets)
    plain = run_conformance(plain_judge, embedder=embedder, sets=sets)
    table = "\n".join([
        f"The rule judge (memory.write.adjudicate.RULES), similarity from {embedder.name}:", "",
        format_conformance(rules), "",
        "The plain two-band rule on the same pairs:", "", format_conformance(plain)])
    write_results("judge_independent", {"embedder": embedder.name, "quick": a.quick,
                                        "rules": [r.to_dict() for r in rules],
                                        "plain": [r.to_dict() for r in plain]}, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
