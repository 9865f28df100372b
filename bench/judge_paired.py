"""Two versions of the learned judge pair by pair on the held-out sets C to I: the instrument for "does a change of the
judge decide as well as before", where one set's accuracy moves by a whole pair (0.008 to 0.010) at a time.

    python -m bench.judge_paired dump CHECKOUT OUT.json    # run from anywhere: the judge of that checkout
    python -m bench.judge_paired compare BEFORE.json AFTER.json

``dump`` imports ``memory`` from CHECKOUT (a clone at the commit to measure) and writes every held-out pair's label and
verdict (``heldout_*``, ``unseen_*``, ``fresh_*``, ``sealed_*``, ``waiting_*``, ``reserve_*``, ``twins_*``; the sealed
sets J and K are never opened). ``compare`` prints and writes (bench/results/judge_paired.json, .md) the share of
pairs with the same verdict, the pairs only one version decides right (outcome: duplicate, update, keep), per set and
in all, and the exact two-sided McNemar test on those discordant pairs.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from math import comb
from pathlib import Path

HELD_OUT = ("heldout", "unseen", "fresh", "sealed", "waiting", "reserve", "twins")


def dump(checkout: str, out: str) -> int:
    sys.path.insert(0, str(Path(checkout).resolve()))
    from memory.core.config import MemoryConfig
    from memory.eval.pairs import load_pairs
    from memory.write.judges.learned import LearnedJudge

    judge, config, verdicts = LearnedJudge(), MemoryConfig(), {}
    for path in sorted(Path(checkout, "fixtures", "independent").glob("*.json")):
        if path.stem.split("_")[0] not in HELD_OUT:
            continue
        items = [it for it in load_pairs(path) if it.expected]
        judge.prepare([], [(it.existing, it.incoming) for it in items])
        for it in items:
            verdicts[f"{path.stem}/{it.id}"] = (it.expected, judge(it.existing, it.incoming, 0.5, config=config)[0])
    Path(out).write_text(json.dumps(verdicts), encoding="utf-8")
    print(f"{out}: {len(verdicts)} pairs")
    return 0


def _outcome(verdict: str) -> str:
    return "keep" if verdict in ("coexist", "new") else verdict


def compare(before_file: str, after_file: str) -> int:
    from .common import write_results

    before = json.loads(Path(before_file).read_text(encoding="utf-8"))
    after = json.loads(Path(after_file).read_text(encoding="utf-8"))
    if set(before) != set(after):
        raise SystemExit("error: the two dumps hold different pairs")
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # pairs, same verdict, only before, only after
    for key, (expected, was) in before.items():
        now = after[key][1]
        row = per[key.split("/")[0]]
        right_before, right_after = _outcome(was) == _outcome(expected), _outcome(now) == _outcome(expected)
        row[0] += 1
        row[1] += was == now
        row[2] += right_before and not right_after
        row[3] += right_after and not right_before
    total = [sum(r[i] for r in per.values()) for i in range(4)]
    n, k = total[2] + total[3], min(total[2], total[3])
    p = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    lines = [f"Two learned judges pair by pair on the held-out sets C to I ({Path(before_file).name} -> {Path(after_file).name}).", "",
             "| set | pairs | same verdict | right only before | right only after |", "| --- | ---: | ---: | ---: | ---: |"]
    for name in sorted(per):
        r = per[name]
        lines.append(f"| {name} | {r[0]} | {r[1] / r[0]:.3f} | {r[2]} | {r[3]} |")
    lines += [f"| **all** | {total[0]} | {total[1] / total[0]:.3f} | {total[2]} | {total[3]} |", "",
              f"Exact two-sided McNemar test on the {n} discordant pairs: p = {p:.2f}."]
    write_results("judge_paired", {"sets": {k: dict(zip(("pairs", "same", "only_before", "only_after"), v))
                                            for k, v in per.items()}, "p": p}, "\n".join(lines))
    print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == "dump":
        return dump(args[1], args[2])
    if len(args) == 3 and args[0] == "compare":
        return compare(args[1], args[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
