"""Child process for tests/test_crash_safety.py: ingest a synthetic scenario into a data folder.

Usage (from the repository root): python -m tests.crash_child DATA_DIR [raw|facts]. Prints "recovered N" once the store is open
(after rolling forward any journaled plan), then one line per batch, then "done".
"""

import json
import sys
from pathlib import Path

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, parse_scenario
from memory.write.ingest import Ingestor
from memory.eval.synth import SynthSpec, generate_scenario

SPEC = SynthSpec(users=4, tenants=2, messages=160, seed=2)


def messages():
    return parse_scenario(json.dumps(generate_scenario(SPEC)), source="synthetic").messages


def main() -> None:
    data_dir, mode = Path(sys.argv[1]), sys.argv[2]
    mm = MemoryManager(MemoryConfig(window_size=4), embedder=LexicalEmbedder(),
                       location=StoreLocation(data_dir=data_dir), workspace="crash")
    print(f"recovered {mm.recovered}", flush=True)
    msgs = messages()
    if mode == "facts":
        ing = Ingestor(mm, batch_size=4)
        ing.ingest_many(msgs, progress=lambda d, t: print(f"batch {d}/{t}", flush=True))
    else:
        mm.add_many(msgs, batch_size=4, progress=lambda d, t: print(f"batch {d}/{t}", flush=True))
    print("done", flush=True)


if __name__ == "__main__":
    main()
