"""Reliability checks of one store shared by several OS processes (sections of ``python -m memory reliability``).

Issue 28's untried cases. The other checks drive a store from one process, or (``shared_folder``) from two
processes that only add; here two real processes work on one store while one of them erases a user.

* ``shared_erase``: two processes write to one data folder at once, each for a user of its own, for a user they
  share, and for a second shared user whom the first process erases halfway (once both had writes of that user
  acknowledged); both go on writing, that user too. A fresh process then reopens the folder. Counted: an
  acknowledged write of a user not erased that is not stored (lost); a write of the erased user acknowledged before
  the erasure started that is still there (its record, its canary bytes in any file of the folder, its vector id in
  any file or in Chroma's rows, its collection, or a recall that returns it); a write of the erased user started
  after the erasure ended that is not stored (lost too); a child process that exited non-zero or hung; a write
  plan left in the journal; a vector without its record, a record without its vector, or a Chroma collection that
  no owner is registered to.
* ``server_clients``: a real ``chroma run`` on a free loopback port (bound to 127.0.0.1, stopped and its folder
  removed at the end, also on a failure), and two processes as two clients of it sharing one text folder and one
  workspace. They write at once for users of their own and one user they share; then the first client erases the
  shared user, and the second client and a fresh third process must see none of its records, vectors (counted on
  the server through the store: the owner's count, the erased collection, the user's vector ids in any collection
  of the server) or recall hits, and no canary byte of it may be left in the text folder (the server's own files
  are the server's: docs/trust.md, "Erasure"). The first client's own erasure report must say verified (nothing else writes
  then), and every acknowledged write of the other users must be there, and every write of the shared user in its
  records and on the server just before the erasure. Without the ``chroma`` command the check fails and says so.

A write is judged by when it was acknowledged: each child prints, for every write, the system-wide monotonic clock
(``CLOCK_MONOTONIC``, one clock for every process of the machine) before the call and after it returned, and the
eraser prints the clock before it reads what the user has and after ``erase_user`` returned. In ``shared_erase`` a
write of the erased user that overlapped the erasure may go either way (an erasure is a barrier within its process:
:meth:`~memory.runtime.manager.MemoryManager.apply`; the other process's write lands when it commits) and is only
counted; such a write may also be refused (``ErasedError``: the user was erased by another writer while it ran, and
nothing of it is stored), which is counted too, while a refusal of any other write is a failure. Every write carries a
canary of its own (``CANARY-`` and 16 hex digits, none a prefix of another), so only
the texts written before the erasure are searched for.

The children embed with the lexical embedder, whatever the report's embedder is: what is checked is the store
shared by processes, not the model, and loading a model in each of several processes costs more than the check.
``fault`` (tests only: the report never passes one) makes a child misbehave, to show the check catches it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from memory.core.errors import ErasedError, MemoryLabError, WriteError
from memory.core.schema import Message
from memory.core.owner import Owner
from memory.embed.embedders import Embedder, LexicalEmbedder
from memory.runtime.erase import scan_for_bytes
from memory.runtime.manager import MemoryManager
from memory.store.chroma import StoreLocation
from memory.store.chroma_files import prepare_folder, rows_with_ids
from memory.store.heap import PROCESS_ENV
from memory.reliability.check import Check

TENANT = "acme"
T0 = 1_780_000_000.0
VICTIM = "victim"
"""The user that is erased while the processes write."""
SHARED = "team"
"""A user both processes write and nobody erases (``shared_erase``)."""
WRITES = 6
"""Writes per user per process in a round."""
ERASE_AFTER = 2
"""``shared_erase``: the erasure is asked for once each process has this many writes of the victim acknowledged."""
WAIT_S = 120.0
"""The longest a child waits for a signal; a round's children that run past ``ROUND_S`` are killed (hung)."""
ROUND_S = 300.0
SERVER_START_S = 120.0
FAULTS = {
    "skip_chroma_delete": "erasures leave the user's Chroma collection (no process's collection delete does anything)",
    "lose_texts": "the second process acknowledges writes whose text rows it never stored",
}
"""Bugs a child plants in itself when a test asks (``fault=``), to show each check catches one."""

_CHILD = """
import sys
from memory.reliability.shared import _child
_child(sys.argv[1])
"""

Events = list[list[dict[str, Any]]]
"""What each child printed, one JSON object a line, in order."""


def canary(token: str, worker: int, user: str, i: int) -> str:
    """The canary of one write: unique per round, process, user and index, and none a prefix of another."""
    return "CANARY-" + hashlib.sha256(f"{token}\x1f{worker}\x1f{user}\x1f{i}".encode()).hexdigest()[:16]


def message(token: str, worker: int, user: str, i: int) -> Message:
    """The ``i``-th write of ``user`` by process ``worker``: both the child and the parent build it from these."""
    return Message(tenant_id=TENANT, user_id=user, id=f"w{worker}-{user}-{i}", timestamp=T0 + i,
                   content=f"{user} note {i} from process {worker}: {canary(token, worker, user, i)}")


# --- the checks (parent side) -------------------------------------------------------------------------------------
def check_shared_erase(embedder: Embedder, scale: int, folder: Path, *, rounds: int | None = None,
                       fault: str | None = None) -> Check:
    """Two processes writing one data folder while one erases a user, ``3 * scale`` rounds; a fresh process counts.

    A collection of Chroma that no owner is registered to counts as a failure, not as litter: no erasure can reach
    it (an erasure finds the owner's collection through the registry), so whatever it holds of a user outlives every
    erasure of that user. ``erased_collection_vectors`` says how many of them sit in a collection of the erased
    name (one a write racing the erasure brought back). The eraser's own report (``erase_reports_ok``, and the paths
    it found unverified) is shown, not counted: what is left is counted above, from outside, and the other process
    may write the user while the eraser verifies."""
    _check_fault(fault)
    check = Check("shared_erase")
    figures = {"rounds": 0, "acknowledged": 0, "erased_before": 0, "written_after": 0, "overlapping": 0,
               "overlapping_stored": 0, "lost": 0, "erased_records_back": 0, "erased_bytes_back": 0,
               "erased_ids_back": 0, "erased_recalled": 0, "canaries_seen_after": 0, "crashes": 0, "hung": 0,
               "pending_plans": 0, "orphans": 0, "stray_collections": 0, "erased_collection_vectors": 0,
               "erase_reports_ok": 0, "refused_racing_the_erasure": 0, "refused_wrongly": 0}
    unverified: set[str] = set()
    first_error = ""
    for round_ in range(3 * scale if rounds is None else rounds):
        data, ctl, token = folder / f"r{round_}", folder / f"c{round_}", f"{round_}-{os.urandom(4).hex()}"
        users = [[f"own{w}", SHARED, VICTIM] for w in range(2)]
        specs = [{"role": "writer", "data": str(data), "workspace": "shared", "control": str(ctl), "token": token,
                  "worker": w, "users": users[w], "writes": WRITES, "erase": VICTIM if w == 0 else None,
                  "fault": fault} for w in range(2)]
        events, codes, error = _run_children(specs, ctl, [("start", _all_ready), ("erase", _victim_acked)])
        first_error = first_error or error
        _count_exits(figures, codes)
        erased = _first(events[0], "erased")
        acks = _acks(events)
        if erased is None:  # the eraser failed before erasing: counted as its crash, nothing to judge
            continue
        before = [k for k, (_, ack) in acks.items() if k[1] == VICTIM and ack < erased["start"]]
        after = [k for k, (start, _) in acks.items() if k[1] == VICTIM and start > erased["end"]]
        others = [k for k in acks if k[1] != VICTIM]
        probe = {"collection": erased["collection"], "vector_ids": erased["vector_ids"],
                 "texts": [message(token, *k).content for k in before]}
        census, code, error = _census(data, None, ["own0", "own1", SHARED, VICTIM], probe, ctl)
        first_error = first_error or error
        _count_exits(figures, [code])
        if census is None:
            continue
        stored = {u: set(ids) for u, ids in census["stored"].items()}
        figures["lost"] += sum(message(token, *k).id not in stored[k[1]] for k in others + after)
        figures["erased_records_back"] += sum(message(token, *k).id in stored[VICTIM] for k in before)
        needles = [canary(token, *k) for k in before] + list(erased["vector_ids"])
        figures["erased_bytes_back"] += len(scan_for_bytes(data, needles))
        figures["erased_ids_back"] += census["ids_in_chroma"]
        figures["erased_collection_vectors"] += census["erased_collection"]  # such a collection is stray too
        figures["erased_recalled"] += census["recalled"]
        seen = {found for _, found in scan_for_bytes(data, [canary(token, *k) for k in after])}
        figures["canaries_seen_after"] += len(seen)
        figures["pending_plans"] += census["pending"] + census["recovered"]
        figures["orphans"] += _orphans(census["consistency"])
        figures["stray_collections"] += len(census["stray"])
        figures["erase_reports_ok"] += int(erased["verified"])
        unverified |= set(erased["unverified"])
        figures["acknowledged"] += len(acks)
        figures["erased_before"] += len(before)
        figures["written_after"] += len(after)
        overlapping = [k for k in acks if k[1] == VICTIM and k not in before and k not in after]
        figures["overlapping"] += len(overlapping)
        figures["overlapping_stored"] += sum(message(token, *k).id in stored[VICTIM] for k in overlapping)
        refused = [e for ev in events for e in ev if e["event"] == "refused"]
        figures["refused_racing_the_erasure"] += sum(e["user"] == VICTIM and e["start"] <= erased["end"]
                                                     for e in refused)
        figures["refused_wrongly"] += sum(e["user"] != VICTIM or e["start"] > erased["end"] for e in refused)
        figures["rounds"] += 1
        check.cases += len(others) + len(before) + len(after)
    check.failures = sum(figures[k] for k in ("lost", "erased_records_back", "erased_bytes_back", "erased_ids_back",
                                              "erased_recalled", "crashes", "hung", "pending_plans", "orphans",
                                              "stray_collections", "refused_wrongly"))
    check.failures += (3 * scale if rounds is None else rounds) - figures["rounds"]  # a round that could not be judged
    check.figures = {**figures, "erase_paths_unverified": sorted(unverified), "first_error": first_error}
    return check


def check_server_clients(embedder: Embedder, scale: int, folder: Path, *, rounds: int | None = None,
                         fault: str | None = None) -> Check:
    """Two client processes of one ``chroma run`` writing at once, one erasing the user they share; the other
    client and a fresh process count what is left. ``2 * scale`` rounds on one server (started once: it is the
    slow part), each in a workspace and text folder of its own."""
    _check_fault(fault)
    check = Check("server_clients")
    planned = 2 * scale if rounds is None else rounds
    figures: dict[str, Any] = {"rounds": 0, "acknowledged": 0, "erased_writes": 0, "lost": 0, "lost_before_erase": 0,
                               "erased_seen_by_second_client": 0, "erased_seen_by_fresh_process": 0,
                               "erased_bytes_back": 0, "crashes": 0, "hung": 0, "pending_plans": 0, "orphans": 0,
                               "erase_reports_ok": 0}
    first_error = ""
    command = chroma_command()
    if command is None:
        check.failures = 1
        check.figures = {**figures, "first_error": f"no chroma command beside {sys.executable}: the server case was "
                                                   "not tried (chromadb is in requirements.txt)"}
        return check
    try:
        with chroma_server(folder / "server", command) as port:
            for round_ in range(planned):
                cases, error = _server_round(figures, folder, port, round_, fault)
                first_error = first_error or error
                check.cases += cases
    except MemoryLabError as exc:  # the server did not start: nothing was tried, which is a failure
        first_error = first_error or str(exc)
        check.failures += 1
    check.failures += sum(figures[k] for k in ("lost", "lost_before_erase", "erased_seen_by_second_client",
                                               "erased_seen_by_fresh_process", "erased_bytes_back", "crashes", "hung",
                                               "pending_plans", "orphans"))
    # no other write runs while the first client erases, so its own verification must find nothing left either
    check.failures += planned - figures["erase_reports_ok"]
    check.figures = {**figures, "first_error": first_error}
    return check


def _server_round(figures: dict[str, Any], folder: Path, port: int, round_: int, fault: str | None
                  ) -> tuple[int, str]:
    """One round of ``server_clients``: adds to ``figures``; returns the cases judged and the first child error
    (no case when a child failed before the counts could be read: the round then counts as a failure)."""
    text, ctl, token = folder / f"text{round_}", folder / f"c{round_}", f"s{round_}-{os.urandom(4).hex()}"
    users = [[f"own{w}-a", f"own{w}-b", VICTIM] for w in range(2)]
    everyone = users[0][:2] + users[1][:2] + [VICTIM]
    workspace = f"server-{round_}"
    specs = [{"role": "client", "data": str(text), "host": "127.0.0.1", "port": port, "workspace": workspace,
              "control": str(ctl), "token": token, "worker": w, "users": users[w], "everyone": everyone,
              "writes": WRITES, "fault": fault} for w in range(2)]
    signals = [("start", _all_ready), ("erase", lambda ev: "" if all(_first(e, "written") for e in ev) else None),
               ("erased", _erasure_of)]
    events, codes, first_error = _run_children(specs, ctl, signals)
    _count_exits(figures, codes)
    erased = _first(events[0], "erased")
    if erased is None:  # the first client failed before erasing: counted as its crash, nothing to judge
        return 0, first_error
    acks = _acks(events)
    victim = [k for k in acks if k[1] == VICTIM]
    others = [k for k in acks if k[1] != VICTIM]
    # both clients had finished writing: every write of the victim is in its records and on the server
    figures["lost_before_erase"] += (len(victim) - erased["records_before"]) + (len(victim) - erased["vectors_before"])
    probe = {"collection": erased["collection"], "vector_ids": erased["vector_ids"],
             "texts": [message(token, *k).content for k in victim]}
    census, code, error = _census(text, port, everyone, probe, ctl, workspace=workspace)
    _count_exits(figures, [code])
    first_error = first_error or error
    second = _first(events[1], "view")
    if census is None or second is None:
        return 0, first_error
    for name, view in (("second_client", second), ("fresh_process", census)):
        figures[f"erased_seen_by_{name}"] += len(view["stored"][VICTIM]) + view["vectors"][VICTIM] + \
            view["erased_collection"] + view["ids_in_chroma"] + view["recalled"]
        stored = {u: set(ids) for u, ids in view["stored"].items()}
        figures["lost"] += sum(message(token, *k).id not in stored[k[1]] for k in others)
    figures["erased_bytes_back"] += len(scan_for_bytes(text, [canary(token, *k) for k in victim] +
                                                        list(erased["vector_ids"])))
    figures["pending_plans"] += census["pending"] + census["recovered"]
    figures["orphans"] += _orphans(census["consistency"])
    figures["erase_reports_ok"] += int(erased["verified"])
    figures["acknowledged"] += len(acks)
    figures["erased_writes"] += len(victim)
    figures["rounds"] += 1
    return len(acks), first_error


def chroma_command() -> Path | None:
    """The ``chroma`` command installed with chromadb, beside this interpreter (not looked up on PATH)."""
    command = Path(sys.executable).parent / "chroma"
    return command if command.is_file() else None


@contextmanager
def chroma_server(folder: Path, command: Path, *, timeout: float = SERVER_START_S) -> Iterator[int]:
    """A real ``chroma run`` bound to 127.0.0.1 on a free port with its data in ``folder``; yields the port. It is
    stopped and ``folder`` removed on the way out, whatever happened; MemoryLabError when it does not answer."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prepare_folder(folder)  # auto_vacuum before the server creates its database (memory/store/chroma_files.py)
    log = folder.parent / f"{folder.name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(command), "run", "--path", str(folder), "--host", "127.0.0.1", "--port",
                                 str(port)], stdout=out, stderr=subprocess.STDOUT, env=os.environ | PROCESS_ENV)
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
        deadline = time.monotonic() + timeout
        while True:
            try:
                opener.open(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (log.read_text(errors="replace").strip().splitlines() or ["(no output)"])[-1][:200]
                    raise MemoryLabError(f"chroma run did not answer on 127.0.0.1:{port} within {timeout:g} s "
                                         f"(exit code {proc.poll()}): {tail}") from None
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
        log.unlink(missing_ok=True)


# --- running the children (parent side) ---------------------------------------------------------------------------
def _run_children(specs: list[dict[str, Any]], ctl: Path,
                  signals: list[tuple[str, Callable[[Events], str | None]]]) -> tuple[Events, list[int | None], str]:
    """Start one child per spec and follow what each prints; write the control file ``name`` (with the text the
    condition returned) as soon as its condition holds. When one child fails the others are stopped (they would
    wait for it in vain; their -9 counts too). Returns the events, each child's exit code (None: it hung past
    ``ROUND_S`` and was killed) and the last line of the first failed child's stderr."""
    ctl.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    events: Events = [[] for _ in specs]
    lock = threading.Lock()
    procs = []
    for k, spec in enumerate(specs):
        with open(ctl / f"stderr-{k}", "w") as err:
            procs.append(subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(spec)], cwd=root, text=True,
                                          stdout=subprocess.PIPE, stderr=err, env=os.environ | PROCESS_ENV))

    def follow(k: int) -> None:
        out = procs[k].stdout
        assert out is not None  # stdout=PIPE
        for line in out:
            if line.startswith("{"):
                with lock:
                    events[k].append(json.loads(line))

    readers = [threading.Thread(target=follow, args=(k,), daemon=True) for k in range(len(specs))]
    for t in readers:
        t.start()
    sent: set[str] = set()
    hung: set[int] = set()
    deadline = time.monotonic() + ROUND_S
    while True:
        states = [p.poll() for p in procs]
        if all(s is not None for s in states):
            break
        with lock:
            seen = [list(e) for e in events]
        for name, condition in signals:
            content = None if name in sent else condition(seen)
            if content is not None:
                (ctl / f"{name}.tmp").write_text(content, encoding="utf-8")
                os.replace(ctl / f"{name}.tmp", ctl / name)  # a child never reads half a signal
                sent.add(name)
        late = time.monotonic() > deadline
        if late or any(s not in (None, 0) for s in states):
            for k, p in enumerate(procs):
                if p.poll() is None:
                    p.kill()
                    hung |= {k} if late else set()
            break
        time.sleep(0.01)
    codes: list[int | None] = []
    for k, p in enumerate(procs):
        p.wait()
        readers[k].join(timeout=10)
        codes.append(None if k in hung else p.returncode)
    error = ""
    for k, code in enumerate(codes):
        if code != 0:
            lines = (ctl / f"stderr-{k}").read_text(errors="replace").strip().splitlines()
            error = f"child {k} ({specs[k]['role']}) exit {code}: " + (lines or ["(no output)"])[-1][:240]
            break
    return events, codes, error


def _census(data: Path, port: int | None, users: list[str], probe: dict[str, Any], ctl: Path, *,
            workspace: str = "shared") -> tuple[dict[str, Any] | None, int | None, str]:
    """Reopen the store in a fresh process and read what it holds (see :func:`_view`)."""
    spec = {"role": "census", "data": str(data), "host": "127.0.0.1" if port else None, "port": port,
            "workspace": workspace, "users": users, "probe": probe}
    events, codes, error = _run_children([spec], ctl / "census", [])
    return _first(events[0], "view"), codes[0], error


def _count_exits(figures: dict[str, Any], codes: list[int | None]) -> None:
    figures["crashes"] += sum(code not in (None, 0) for code in codes)
    figures["hung"] += sum(code is None for code in codes)


def _acks(events: Events) -> dict[tuple[int, str, int], tuple[float, float]]:
    """(process, user, index) -> (clock before the call, clock after it returned) of every acknowledged write."""
    return {(e["worker"], e["user"], e["i"]): (e["start"], e["ack"]) for ev in events for e in ev
            if e["event"] == "ack"}


def _first(events: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((e for e in events if e["event"] == kind), None)


def _all_ready(events: Events) -> str | None:
    return "" if all(_first(e, "ready") for e in events) else None


def _victim_acked(events: Events) -> str | None:
    """Each process has had ``ERASE_AFTER`` writes of the victim acknowledged: time to erase it."""
    counts = [sum(e["event"] == "ack" and e["user"] == VICTIM for e in ev) for ev in events]
    return "" if min(counts) >= ERASE_AFTER else None


def _erasure_of(events: Events) -> str | None:
    """What the eraser read before erasing, handed to the other client (it counts those on the server)."""
    erased = _first(events[0], "erased")
    return None if erased is None else json.dumps({k: erased[k] for k in ("collection", "vector_ids")})


def _orphans(state: dict[str, int]) -> int:
    return state["vectors_without_record"] + state["records_without_vector"] + state["duplicates"]


def _check_fault(fault: str | None) -> None:
    if fault is not None and fault not in FAULTS:
        raise MemoryLabError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")


# --- the children -------------------------------------------------------------------------------------------------
def _child(spec_text: str) -> None:
    """A child's entry point: ``spec_text`` is the JSON spec the parent built (role, store, users, ...)."""
    spec = json.loads(spec_text)
    {"writer": _writer, "client": _client, "census": _census_child}[spec["role"]](spec)


def _say(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {path.name} signal within {WAIT_S:g} s")
        time.sleep(0.01)
    return path.read_text(encoding="utf-8")


def _open(spec: dict[str, Any]) -> MemoryManager:
    location = StoreLocation(data_dir=Path(spec["data"]), host=spec.get("host"), port=spec.get("port"))
    mm = MemoryManager(embedder=LexicalEmbedder(), location=location, workspace=spec["workspace"])
    fault, worker = spec.get("fault"), spec.get("worker")
    if fault == "skip_chroma_delete":  # in every process: none may delete a collection
        setattr(mm.store, "_delete_collection", lambda name: 0)
    if fault == "lose_texts" and worker == 1:
        setattr(mm.store, "put_records", lambda records, embeddings: None)
    return mm


def _write_all(mm: MemoryManager, spec: dict[str, Any], after_each: Callable[[], None] = lambda: None) -> None:
    """Every write of this process, interleaved across its users, each acknowledged on stdout with its clocks."""
    for i in range(spec["writes"]):
        for user in spec["users"]:
            start = time.monotonic()
            try:
                mm.add(message(spec["token"], spec["worker"], user, i))
            except (WriteError, ErasedError) as exc:  # refused, not acknowledged: the parent judges whether it may be
                _say(event="refused", worker=spec["worker"], user=user, i=i, start=start, end=time.monotonic(),
                     error=str(exc)[:200])
            else:
                _say(event="ack", worker=spec["worker"], user=user, i=i, start=start, ack=time.monotonic())
            after_each()


def _erase(mm: MemoryManager, user: str) -> None:
    """Erase ``user``, printing the clock before and after and what the user had just before (collection, vector
    ids: every write of the user committed by then, in either process, must be gone after)."""
    start = time.monotonic()
    collection = mm.store.collection_of(Owner(TENANT, user))
    vector_ids = mm.store.owner_vector_ids(Owner(TENANT, user))
    records, vectors = mm.store.count(Owner(TENANT, user)), mm.store.vector_count(Owner(TENANT, user))
    report = mm.erase_user(tenant_id=TENANT, user_id=user, actor="reliability")
    _say(event="erased", start=start, end=time.monotonic(), collection=collection, vector_ids=vector_ids,
         records_before=records, vectors_before=vectors, verified=report.ok,
         unverified=[path.name for path in report.paths if path.remaining])


def _writer(spec: dict[str, Any]) -> None:
    """``shared_erase``: write; the eraser erases the victim as soon as the parent signals, and writes on."""
    mm = _open(spec)
    ctl, erase = Path(spec["control"]), spec.get("erase")
    _say(event="ready", recovered=mm.recovered)
    _wait_for(ctl / "start")
    done: list[int] = []

    def maybe_erase() -> None:
        if erase and not done and (ctl / "erase").exists():
            _erase(mm, erase)
            done.append(1)

    _write_all(mm, spec, maybe_erase)
    if erase and not done:  # the other process was slow: erase once it has had its writes acknowledged
        _wait_for(ctl / "erase")
        _erase(mm, erase)
    mm.close()


def _client(spec: dict[str, Any]) -> None:
    """``server_clients``: write; then the first client erases the victim and both look at what is left."""
    mm = _open(spec)
    ctl = Path(spec["control"])
    _say(event="ready", recovered=mm.recovered)
    _wait_for(ctl / "start")
    _write_all(mm, spec)
    _say(event="written")
    if spec["worker"] == 0:
        _wait_for(ctl / "erase")
        _erase(mm, VICTIM)
    probe = json.loads(_wait_for(ctl / "erased"))
    probe["texts"] = [message(spec["token"], w, VICTIM, i).content for w in range(2) for i in range(spec["writes"])]
    _say(event="view", **_view(mm, spec["everyone"], probe))
    mm.close()


def _census_child(spec: dict[str, Any]) -> None:
    mm = _open(spec)
    view = _view(mm, spec["users"], spec["probe"])
    registered = mm.store.registered_collections()
    stray = [] if spec.get("host") else [c.name for c in mm.store.client.list_collections() if c.name not in registered]
    _say(event="view", recovered=mm.recovered, pending=len(mm.pending_plans()), consistency=mm.store.consistency(),
         stray=stray, **view)
    mm.close()


def _view(mm: MemoryManager, users: list[str], probe: dict[str, Any]) -> dict[str, Any]:
    """What this process sees: each user's stored message ids and vector count; of the erased user's ``probe``
    (its collection and vector ids read before the erasure, texts written before it), the vectors left in that
    collection, the vector ids still held anywhere in Chroma, and the records recall returns for those texts."""
    store = mm.store
    name, ids, texts = probe["collection"], probe["vector_ids"], set(probe["texts"])
    left = store.client.get_collection(name).count() if name and store.collection_exists(name) else 0
    if store.chroma_dir is not None:
        held = rows_with_ids(store.chroma_dir, ids)
    else:  # a server: ask every collection it has
        held = sum(len(c.get(ids=ids, include=[])["ids"]) for c in store.client.list_collections()) if ids else 0
    recalled: set[str] = set()
    for text in sorted(texts):
        res = mm.retrieve(text, tenant_id=TENANT, user_id=VICTIM, reinforce=False)
        recalled |= {h.record.memory_id for h in res.blind + res.governed if h.record.content in texts}
    return {"stored": {u: sorted(r.message_id for r in mm.records(tenant_id=TENANT, user_id=u)) for u in users},
            "vectors": {u: store.vector_count(Owner(TENANT, u)) for u in users}, "erased_collection": left,
            "ids_in_chroma": held, "recalled": len(recalled)}
