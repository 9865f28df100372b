"""Kills during a background ingest: SIGKILL an agent-style ``Ingestor.ingest_async`` loop at random points, restart.

Issue 28. Each round runs ``tests/crash_child.py`` in its async mode in a fresh folder: the child submits the crash
scenario's 160 messages (4 users, 2 tenants, lexical embedder) with ``ingest_async`` as an agent's turn loop would,
and prints "acked ID" as each future completes. It is SIGKILLed a random delay (up to 50 ms) after a random number of
acks (0 now and then: before any ack is read). Then:

* the folder is reopened as the restarted child would open it (rolling forward what the kill left) and before
  anything is submitted again, since a resubmission would store a lost message anew and hide its loss: which
  acknowledged messages are not stored (lost, must be 0), and which stored messages are held other than once;
* the child is restarted and runs to its end (resubmitting every message: the stored ones are replays);
* the folder is reopened again: every message stored, none twice, no orphan vector, no plan pending.

Duplicates, orphan vectors and pending plans count both checks. Crashes are exits other than the SIGKILL: a killed
run that ended otherwise, a restart that did not exit 0 after printing "done". Not a timing: a count.

Writes bench/results/crash_async.json and .md. Run: python -m bench.crash_async [--rounds 30] [--seed 28] [--quick]
"""

from __future__ import annotations

import argparse
import random
import signal
import tempfile
import time
from pathlib import Path

from memory import Owner
from tests.crash_child import acked, messages, open_store, run

from .common import write_results

ROUNDS = 30
BEFORE_ANY_ACK = 0.2
"""Share of rounds killed before the parent has read any ack (kill_after = 0)."""


def check(folder: Path, msgs: list, acknowledged: set[str]) -> dict:
    """Reopen the folder (rolling forward a killed writer's plans) and count what is stored and how."""
    mm = open_store(folder)
    try:
        texts, state = mm.store.texts, mm.store.consistency()
        stored = {m.id for m in msgs if texts.ingested(Owner(m.tenant_id, m.user_id), [m.id])}
        held_twice = 0
        for t, u in {(m.tenant_id, m.user_id) for m in msgs}:
            held = [m.id for m in mm.recent(tenant_id=t, user_id=u)] + mm.summary_sources(tenant_id=t, user_id=u)
            held_twice += sum(held.count(i) > 1 for i in set(held))
        return {"rolled_forward": mm.recovered, "stored": len(stored), "lost_acked": len(acknowledged - stored),
                "duplicates": state["duplicates"] + held_twice,
                "orphan_vectors": state["vectors_without_record"] + state["records_without_vector"],
                "pending_plans": len(mm.pending_plans())}
    finally:
        mm.close()


def one_round(folder: Path, msgs: list, rng: random.Random) -> dict:
    start = time.perf_counter()
    kill_after = 0 if rng.random() < BEFORE_ANY_ACK else rng.randint(1, len(msgs) - 1)
    delay = rng.uniform(0, 0.05)
    code, lines, _ = run(folder, "async", kill_after=kill_after, delay=delay)
    acknowledged = acked(lines)
    after_kill = check(folder, msgs, acknowledged)
    restart_code, restart_lines, _ = run(folder, "async")
    after_restart = check(folder, msgs, set())
    finished = restart_code == 0 and restart_lines[-1:] == ["done"]
    return {
        "kill_after_acks": kill_after, "delay_ms": round(1000 * delay, 1), "killed": code == -signal.SIGKILL,
        "acked_before_kill": len(acknowledged), "plans_rolled_forward": after_kill["rolled_forward"],
        "stored_after_reopen": after_kill["stored"], "lost_acked": after_kill["lost_acked"],
        "stored_after_restart": after_restart["stored"],
        "duplicates": after_kill["duplicates"] + after_restart["duplicates"],
        "orphan_vectors": after_kill["orphan_vectors"] + after_restart["orphan_vectors"],
        "pending_plans": after_kill["pending_plans"] + after_restart["pending_plans"],
        "crashes": int(code not in (-signal.SIGKILL, 0)) + int(not finished),
        "seconds": round(time.perf_counter() - start, 1),
    }


SUMMED = ("acked_before_kill", "lost_acked", "duplicates", "orphan_vectors", "pending_plans", "crashes",
          "plans_rolled_forward")


def table(rows: list[dict], messages_per_round: int, seed: int) -> str:
    totals = {k: sum(r[k] for r in rows) for k in SUMMED}
    lines = [f"{len(rows)} rounds (seed {seed}), each in a fresh folder: {messages_per_round} messages submitted with "
             "ingest_async, SIGKILL after a random number of acks, reopen, restart to the end. Lost, duplicates, "
             "orphans, pending and crashes must all be 0.", "",
             "| round | killed after acks (+ms) | acked before kill | stored after reopen (plans rolled forward) | "
             "lost acked | stored after restart | duplicates | orphan vectors | pending plans | crashes |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for i, r in enumerate(rows, 1):
        killed = f"{r['kill_after_acks']} (+{r['delay_ms']:.0f})" if r["killed"] else "not killed"
        lines.append(f"| {i} | {killed} | {r['acked_before_kill']} | {r['stored_after_reopen']} "
                     f"({r['plans_rolled_forward']}) | {r['lost_acked']} | {r['stored_after_restart']}/"
                     f"{messages_per_round} | {r['duplicates']} | {r['orphan_vectors']} | {r['pending_plans']} | "
                     f"{r['crashes']} |")
    complete = sum(r["stored_after_restart"] == messages_per_round for r in rows)
    lines.append(f"| **total** | {sum(r['killed'] for r in rows)} killed | {totals['acked_before_kill']} | "
                 f"({totals['plans_rolled_forward']}) | **{totals['lost_acked']}** | {complete} of {len(rows)} "
                 f"complete | **{totals['duplicates']}** | **{totals['orphan_vectors']}** | "
                 f"**{totals['pending_plans']}** | **{totals['crashes']}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.crash_async", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--seed", type=int, default=28)
    p.add_argument("--quick", action="store_true", help="4 rounds")
    a = p.parse_args(argv)
    rounds = 4 if a.quick else a.rounds
    rng = random.Random(a.seed)
    msgs = messages()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-crash-async-") as tmp:
        for i in range(rounds):
            rows.append(one_round(Path(tmp) / f"round-{i}", msgs, rng))
            r = rows[-1]
            print(f"round {i + 1}/{rounds}: acked {r['acked_before_kill']}, lost {r['lost_acked']}, "
                  f"crashes {r['crashes']} ({r['seconds']} s)", flush=True)
    totals = {k: sum(r[k] for r in rows) for k in SUMMED}
    text = table(rows, len(msgs), a.seed)
    write_results("crash_async", {"rounds": rounds, "seed": a.seed, "messages_per_round": len(msgs),
                                  "rows": rows, "totals": totals,
                                  "rounds_complete_after_restart": sum(r["stored_after_restart"] == len(msgs)
                                                                       for r in rows)}, text)
    print(text)
    bad = totals["lost_acked"] + totals["duplicates"] + totals["orphan_vectors"] + totals["pending_plans"]
    return 1 if bad + totals["crashes"] or any(r["stored_after_restart"] != len(msgs) for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
