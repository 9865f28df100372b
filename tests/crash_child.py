"""Child process for tests/test_crash_safety.py and bench/crash_async.py: ingest a synthetic scenario into a folder.

Usage (from the repository root): python -m tests.crash_child DATA_DIR [raw|facts|async]. Prints "recovered N" once the
store is open (after rolling forward any journaled plan), then its progress, then "done". Progress is one line per
batch ("batch D/T": the first D messages are stored) for raw and facts; for async, which submits every message with
``Ingestor.ingest_async`` as an agent's turn loop would (submit, go on), one line "acked ID" per message whose future
completed successfully, written as it completes. A parent that kills the child holds it to those lines: what was
printed was acknowledged, and must be stored once the folder is opened again. :func:`run` is that parent's side.
"""

import json
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, parse_scenario
from memory.write.adjudicate import judge_reason
from memory.write.ingest import Ingestor
from memory.eval.synth import SynthSpec, generate_scenario

CHILD_JUDGE = judge_reason
"""The child's judge: the rules, which load no model (the default learned judge loads MiniLM: 15.8 s of CPU per child
start against a second). What a kill can break is the write path's plan, journal and stores, whatever judge decided."""
SPEC = SynthSpec(users=4, tenants=2, messages=160, seed=2)
ROOT = Path(__file__).resolve().parent.parent


def run(data_dir: Path, mode: str, *, kill_after: int | None = None, delay: float = 0.0,
        timeout: float = 300.0) -> tuple[int, list[str], str]:
    """Run the child in a process of its own; with ``kill_after=N``, SIGKILL it ``delay`` seconds after its N-th
    progress line ("batch", or "acked" in async mode; N=0: once it has opened its store). Returns the exit code
    (``-SIGKILL`` when killed), every line printed and stderr. The lines include those still in the pipe when the
    child died: an ack the parent had not read yet was given all the same, so it counts."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.crash_child", str(data_dir), mode], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None  # both PIPE
    progress = "acked" if mode == "async" else "batch"
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.strip())
        if kill_after is not None and sum(ln.startswith(progress) for ln in lines) >= kill_after:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=timeout)
    lines += [line.strip() for line in proc.stdout]
    return proc.returncode, lines, proc.stderr.read()


def acked(lines: list[str]) -> set[str]:
    """Ids of the messages a run acknowledged (its "acked ID" lines)."""
    return {ln.split()[1] for ln in lines if ln.startswith("acked ")}


def messages():
    return parse_scenario(json.dumps(generate_scenario(SPEC)), source="synthetic").messages


def open_store(data_dir: Path) -> MemoryManager:
    """The child's store (opening it rolls forward what a killed child left in the journal). A checker that reopens
    the folder in the child's place opens it this way, so what it rolls forward lands as the child's would."""
    return MemoryManager(MemoryConfig(window_size=4), embedder=LexicalEmbedder(),
                         location=StoreLocation(data_dir=data_dir), workspace="crash")


_SAY = threading.Lock()


def say(line: str) -> None:
    """One whole line on stdout, flushed at once: the ingest worker's callbacks and the main thread both write, and
    the parent reads a line as an acknowledgement the moment it arrives."""
    with _SAY:
        print(line, flush=True)


def ingest_async(mm: MemoryManager, msgs: list) -> None:
    """Submit every message, then wait. Each message is acknowledged ("acked ID") by its future's callback, which the
    worker runs once the future completes, so an ack is printed no earlier than the ingestor resolves the future. A
    failed future is not acknowledged: ``result()`` raises it here, and the child exits non-zero."""
    ing = Ingestor(mm, batch_size=4, judge=CHILD_JUDGE)

    def ack(message_id: str, future: Future) -> None:
        if future.exception() is None:
            say(f"acked {message_id}")

    futures = []
    for m in msgs:
        future = ing.ingest_async(m)
        future.add_done_callback(partial(ack, m.id))
        futures.append(future)
    ing.close()  # drains the queue and joins the worker, so every callback (every ack) has run before "done"
    for future in futures:
        future.result()


def main() -> None:
    data_dir, mode = Path(sys.argv[1]), sys.argv[2]
    mm = open_store(data_dir)
    say(f"recovered {mm.recovered}")
    msgs = messages()
    if mode == "async":
        ingest_async(mm, msgs)
    elif mode == "facts":
        ing = Ingestor(mm, batch_size=4, judge=CHILD_JUDGE)
        ing.ingest_many(msgs, progress=lambda d, t: say(f"batch {d}/{t}"))
    else:
        mm.add_many(msgs, batch_size=4, progress=lambda d, t: say(f"batch {d}/{t}"))
    say("done")


if __name__ == "__main__":
    main()
