"""The reliability report: isolation, erasure on disk, hostile input and crash safety, with counts.

``python -m memory reliability [--scale N] [--json]`` runs each check at a chosen scale on real
parts (Chroma in a temp data folder, the chosen embedder) and reports how many cases each tried
and what it found. The command exits non-zero when any check finds a leak, a canary byte, a lost
or duplicated record, or an unrejected hostile input.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from memory.core.config import MemoryConfig
from memory.embed.embedders import Embedder
from memory.core.errors import MemoryLabError
from memory.runtime.erase import scan_for_bytes
from memory.runtime.manager import MemoryManager, memory_id_for
from memory.core.schema import Message
from memory.store.chroma import StoreLocation
from memory.eval.synth import SynthSpec, generate_scenario

Progress = Callable[[str], None]

STEPS = ("isolation", "erasure", "hostile_input", "crash_safety", "async_kills", "write_failure", "disk_full",
         "lifecycle_races", "shared_folder", "workspace_names", "chroma_files", "messages", "poison", "hostile_inputs", "shared_erase",
         "server_clients", "erase_kills")
"""The report's checks, in the order they run."""


@dataclass
class Check:
    """One check of the report."""

    name: str
    cases: int = 0
    """How many cases (queries, canaries, inputs, kills) the check tried."""
    failures: int = 0
    """Leaks, canary bytes, accepted hostile inputs, lost or duplicated records: 0 is a pass."""
    figures: dict[str, Any] = field(default_factory=dict)
    """Further measured numbers."""


@dataclass
class Report:
    scale: int
    embedder: str
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.failures == 0 for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "embedder": self.embedder, "ok": self.ok,
                "checks": [asdict(c) for c in self.checks]}

    def text(self) -> str:
        lines = [f"reliability report (scale {self.scale}, embedder {self.embedder})"]
        for c in self.checks:
            extra = ", ".join(f"{k}={v}" for k, v in c.figures.items())
            lines.append(f"  {'PASS' if c.failures == 0 else 'FAIL'}  {c.name:<16} cases={c.cases:<5} "
                         f"failures={c.failures:<3} {extra}")
        lines.append("all checks passed" if self.ok else "SOME CHECKS FAILED")
        return "\n".join(lines)


def _scenario(scale: int, seed: int) -> list[Message]:
    from memory.core.scenario import parse_scenario

    data = generate_scenario(SynthSpec(users=4 + 2 * scale, tenants=2, messages=60 * scale + 60, seed=seed))
    return parse_scenario(json.dumps(data), source="synthetic").messages


def check_isolation(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Query every owner with every other owner's texts (near-identical across owners): count foreign hits."""
    msgs = _scenario(scale, seed=11)
    mm = MemoryManager(MemoryConfig(threshold=0.0, top_k=10, window_size=3), embedder=embedder,
                       location=StoreLocation(data_dir=folder), workspace="iso")
    mm.add_many(msgs)
    owners = sorted({(m.tenant_id, m.user_id) for m in msgs})
    rng = random.Random(scale)
    check = Check("isolation")
    for owner in owners:
        own_ids = {memory_id_for(m) for m in msgs if (m.tenant_id, m.user_id) == owner}
        foreign = [m.content for m in msgs if (m.tenant_id, m.user_id) != owner]
        for text in rng.sample(foreign, k=min(len(foreign), 5 * scale)):
            res = mm.retrieve(text, tenant_id=owner[0], user_id=owner[1], reinforce=False)
            hits = res.blind + res.governed + [d.hit for d in res.dropped]
            check.failures += sum((h.record.tenant_id, h.record.user_id) != owner or h.record.memory_id not in own_ids
                                  for h in hits)
            check.cases += 1
        window = mm.recent(tenant_id=owner[0], user_id=owner[1])
        check.failures += sum((m.tenant_id, m.user_id) != owner for m in window)
        own_text = {m.content for m in msgs if (m.tenant_id, m.user_id) == owner}
        for line in mm.summary(tenant_id=owner[0], user_id=owner[1]).splitlines():
            check.failures += int(line.split(": ", 1)[-1] not in own_text)
    check.figures = {"owners": len(owners), "memories": len(msgs)}
    return check


def check_erasure(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Plant canaries for some users, erase them, search every byte of the data folder."""
    msgs = _scenario(scale, seed=12)
    mm = MemoryManager(MemoryConfig(window_size=3), embedder=embedder, location=StoreLocation(data_dir=folder),
                       workspace="erase")
    owners = sorted({(m.tenant_id, m.user_id) for m in msgs})
    victims = owners[: max(1, len(owners) // 2)]
    canaries = {o: [f"CANARY-{uuid.uuid4().hex}" for _ in range(3)] for o in victims}
    planted = [Message(tenant_id=o[0], user_id=o[1], id=f"canary-{i}", content=f"secret note {c}")
               for o, cs in canaries.items() for i, c in enumerate(cs)]
    mm.add_many(msgs + planted)
    check = Check("erasure")
    others_before = {o: mm.store.count(*o) for o in owners if o not in victims}
    all_canaries = [c for cs in canaries.values() for c in cs]
    present_before = len(scan_for_bytes(folder, all_canaries))
    for owner in victims:
        report = mm.erase_user(tenant_id=owner[0], user_id=owner[1], actor="reliability", disk_scan=True)
        check.failures += sum(p.remaining for p in report.paths)
    found = scan_for_bytes(folder, all_canaries)
    check.cases = len(all_canaries)
    check.failures += len(found)
    changed = sum(mm.store.count(*o) != n for o, n in others_before.items())
    check.failures += changed
    audit = mm.audit_log()
    check.failures += sum(c in json.dumps(audit) for c in all_canaries)
    check.figures = {"erased_users": len(victims), "canary_bytes_before": present_before,
                     "canary_bytes_left": len(found), "other_users_changed": changed,
                     "audit_entries": len(audit)}
    return check


HOSTILE_IDS: list[Any] = [
    {"$ne": ""}, ["alice"], None, 7, 3.5, True, "", "   ", " alice", "alice\n", "al\x00ice", "a" * 300,
    "a\u200bb", "a\u2028b", b"alice",
]
LITERAL_IDS = ['{"$ne": ""}', "$or", "$ne", "аlice", "ALICE", "*", "%", "' OR 1=1 --"]


def check_hostile(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Hostile identifiers are rejected; operator-looking strings are literal; bad input changes nothing."""
    mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=folder), workspace="hostile")
    mm.add(Message(tenant_id="acme", user_id="alice", id="a1", content="The campaign budget is 300,000 yuan."))
    check = Check("hostile_input")
    before = mm.store.count()
    for bad in HOSTILE_IDS:
        for call in (lambda b: mm.retrieve("budget", tenant_id="acme", user_id=b),
                     lambda b: mm.recent(tenant_id=b, user_id="alice"),
                     lambda b: mm.erase_user(tenant_id="acme", user_id=b),
                     lambda b: Message(tenant_id=b, user_id="alice", content="x")):
            check.cases += 1
            try:
                call(bad)
                check.failures += 1  # accepted: should have been rejected
            except MemoryLabError:
                pass
    for literal in LITERAL_IDS:
        check.cases += 1
        res = mm.retrieve("campaign budget", tenant_id="acme", user_id=literal, reinforce=False)
        check.failures += len(res.blind) + len(res.governed)
    for content in ("", "   ", None, 42, "x" * (mm.config.max_message_chars + 1)):
        check.cases += 1
        try:
            mm.add(Message(tenant_id="acme", user_id="alice", content=content))  # type: ignore[arg-type]
            check.failures += 1
        except MemoryLabError:
            pass
    for bad_value in (float("nan"), float("inf"), -1, "0.5"):
        check.cases += 1
        try:
            MemoryConfig(threshold=bad_value)  # type: ignore[arg-type]
            check.failures += 1
        except MemoryLabError:
            pass
    check.failures += int(mm.store.count() != before)
    check.figures = {"records_before": before, "records_after": mm.store.count()}
    return check


_CHILD = """
import sys
from memory.tools.reliability import _child
_child(sys.argv[1], int(sys.argv[2]))
"""


def _child(folder: str, scale: int) -> None:
    """Ingest the crash scenario through the write path, printing a line per batch (run in a subprocess)."""
    from memory.embed.embedders import LexicalEmbedder
    from memory.write.ingest import Ingestor

    mm = MemoryManager(MemoryConfig(window_size=3), embedder=LexicalEmbedder(),
                       location=StoreLocation(data_dir=Path(folder)), workspace="crash")
    print(f"recovered {mm.recovered}", flush=True)
    Ingestor(mm, batch_size=4).ingest_many(_scenario(scale, seed=13), progress=lambda d, t: print("batch", flush=True))
    print("done", flush=True)


def check_crashes(scale: int, folder: Path, *, rounds: int) -> Check:
    """SIGKILL the ingesting process at random points, restart it, then count lost and duplicated records."""
    root = Path(__file__).resolve().parents[2]
    rng = random.Random(scale)
    check = Check("crash_safety")
    recovered = 0

    def run(kill_after: int | None) -> int:
        nonlocal recovered
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(folder), str(scale)], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        seen = 0
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            if line.startswith("recovered"):
                recovered += int(line.split()[1])
            seen += line.startswith("batch")
            if kill_after is not None and seen >= kill_after:
                time.sleep(rng.uniform(0, 0.05))
                proc.send_signal(signal.SIGKILL)
                break
        return proc.wait(timeout=600)

    for _ in range(rounds):
        check.cases += 1
        code = run(rng.randint(1, 6))
        check.figures["killed"] = check.figures.get("killed", 0) + int(code == -signal.SIGKILL)
    if run(None) != 0:
        check.failures += 1
    from memory.embed.embedders import LexicalEmbedder

    mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=folder), workspace="crash")
    msgs = _scenario(scale, seed=13)
    lost = sum(len(mm.not_ingested([m])) for m in msgs)
    state = mm.store.consistency()
    orphans = state["vectors_without_record"] + state["records_without_vector"]
    duplicates = state["duplicates"]
    check.failures += lost + orphans + duplicates + len(mm.pending_plans())
    check.figures.update(messages=len(msgs), records_lost=lost, orphans=orphans, duplicates=duplicates,
                         plans_rolled_forward=recovered)
    return check


def _async_child(folder: str, scale: int) -> None:
    """Submit the crash scenario turn by turn with ``Ingestor.ingest_async``, as an agent's loop does, printing
    ``acked <id>`` once a turn's future has completed (run in a subprocess; a true retry of a stored turn is a no-op)."""
    from memory.embed.embedders import LexicalEmbedder
    from memory.write.ingest import Ingestor

    mm = MemoryManager(MemoryConfig(window_size=3), embedder=LexicalEmbedder(),
                       location=StoreLocation(data_dir=Path(folder)), workspace="crash")
    print(f"recovered {mm.recovered}", flush=True)
    lock = threading.Lock()
    ingestor = Ingestor(mm, batch_size=4)

    def acked(message_id: str) -> Callable[[Any], None]:
        def done(future: Any) -> None:
            if future.exception() is None:
                with lock:
                    print(f"acked {message_id}", flush=True)
        return done

    for m in _scenario(scale, seed=13):
        ingestor.ingest_async(m).add_done_callback(acked(m.id))
    ingestor.close()
    print("done", flush=True)


_ASYNC_CHILD = """
import sys
from memory.tools.reliability import _async_child
_async_child(sys.argv[1], int(sys.argv[2]))
"""


def check_async_kills(scale: int, folder: Path, *, rounds: int) -> Check:
    """SIGKILL a process that ingests with ``ingest_async`` after a random number of acknowledged turns; after each
    kill, reopen the folder (which rolls forward what the kill left) and count the acknowledged turns that are not
    stored; then run it to the end and count duplicates, orphans and pending plans."""
    root = Path(__file__).resolve().parents[2]
    rng = random.Random(1000 + scale)
    check = Check("async_kills")
    msgs = {m.id: m for m in _scenario(scale, seed=13)}
    figures = {"killed": 0, "acknowledged": 0, "lost_acknowledged": 0, "crashes": 0}

    def run(kill_after: int | None) -> tuple[int, list[str]]:
        proc = subprocess.Popen([sys.executable, "-c", _ASYNC_CHILD, str(folder), str(scale)], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        acks: list[str] = []
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            if line.startswith("acked "):
                acks.append(line.split()[1])
            if kill_after is not None and len(acks) >= kill_after:
                time.sleep(rng.uniform(0, 0.02))
                proc.send_signal(signal.SIGKILL)
                acks += [rest.split()[1] for rest in proc.stdout.read().splitlines() if rest.startswith("acked ")]
                break
        return proc.wait(timeout=600), acks

    from memory.embed.embedders import LexicalEmbedder

    for _ in range(rounds):
        check.cases += 1
        code, acks = run(rng.randint(1, 30))
        figures["killed"] += int(code == -signal.SIGKILL)
        figures["crashes"] += int(code not in (0, -signal.SIGKILL))
        figures["acknowledged"] += len(acks)
        mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=folder), workspace="crash")
        figures["lost_acknowledged"] += len(mm.not_ingested([msgs[i] for i in acks if i in msgs]))
        mm.close()
    code, _ = run(None)
    figures["crashes"] += int(code != 0)
    mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=folder), workspace="crash")
    state = mm.store.consistency()
    figures.update(messages=len(msgs), not_stored_at_the_end=len(mm.not_ingested(list(msgs.values()))),
                   orphans=state["vectors_without_record"] + state["records_without_vector"],
                   duplicates=state["duplicates"], pending_plans=len(mm.pending_plans()))
    mm.close()
    check.failures = sum(figures[k] for k in ("lost_acknowledged", "crashes", "not_stored_at_the_end", "orphans",
                                              "duplicates", "pending_plans"))
    check.figures = figures
    return check


def run_report(embedder: Embedder, *, scale: int = 1, progress: Progress | None = None,
               only: tuple[str, ...] | None = None) -> Report:
    """Run every check (or those named in ``only``) in fresh temp folders; ``progress(name)`` is called before each."""
    if scale < 1:
        raise MemoryLabError(f"scale must be >= 1, got {scale}")
    from memory.tools import reliability_erase as erasures
    from memory.tools import reliability_inputs as inputs
    from memory.tools import reliability_shared as shared
    from memory.tools import reliability_store as faults
    from memory.tools import reliability_writes as writes

    checks = []
    steps: list[tuple[str, Callable[[Path], Check]]] = [
        ("isolation", lambda d: check_isolation(embedder, scale, d)),
        ("erasure", lambda d: check_erasure(embedder, scale, d)),
        ("hostile_input", lambda d: check_hostile(embedder, scale, d)),
        ("crash_safety", lambda d: check_crashes(scale, d, rounds=2 + 2 * scale)),
        ("async_kills", lambda d: check_async_kills(scale, d, rounds=2 + 2 * scale)),
        ("write_failure", lambda d: faults.check_write_failure(embedder, scale, d)),
        ("disk_full", lambda d: faults.check_disk_full(embedder, scale, d)),
        ("lifecycle_races", lambda d: faults.check_lifecycle_races(embedder, scale, d)),
        ("shared_folder", lambda d: faults.check_shared_folder(embedder, scale, d)),
        ("workspace_names", lambda d: faults.check_workspace_names(embedder, scale, d)),
        ("chroma_files", lambda d: faults.check_chroma_files(embedder, scale, d)),
        ("messages", lambda d: writes.check_messages(embedder, scale, d)),
        ("poison", lambda d: writes.check_poison(embedder, scale, d)),
        ("hostile_inputs", lambda d: inputs.check_inputs(embedder, scale, d)),
        ("shared_erase", lambda d: shared.check_shared_erase(embedder, scale, d)),
        ("server_clients", lambda d: shared.check_server_clients(embedder, scale, d)),
        ("erase_kills", lambda d: erasures.check_erase_kills(embedder, scale, d)),
    ]
    assert [name for name, _ in steps] == list(STEPS)
    unknown = set(only or ()) - set(STEPS)
    if unknown:
        raise MemoryLabError(f"unknown reliability checks: {', '.join(sorted(unknown))}")
    for name, fn in steps:
        if only is not None and name not in only:
            continue
        if progress:
            progress(name)
        with tempfile.TemporaryDirectory(prefix=f"mgl-{name}-") as tmp:
            checks.append(fn(Path(tmp) / "data"))
    return Report(scale=scale, embedder=embedder.name, checks=checks)
