"""Reliability check of interrupted erasures (a section of ``python -m memory reliability``): ``erase_kills``.

An erasure writes a pending-erasure record before its first delete and removes it once it has run to its report
(memory/runtime/erase.py); whatever stops it in between, the next opening of the store finishes it. This check stops
erasures and opens the store again:

* **kills**: a child process opens a data folder (a user to erase, with enough records that Chroma has written its
  index files, and two others, written in turns so that their rows share Chroma's pages) and erases the user; it is SIGKILLed
  at a hook (it kills itself there: just after the record is written, inside Chroma's purge before and between the
  segment folders' wipe and after the first, before the text store's deletes, inside their transaction before it commits, after it
  committed, inside the verification's search of Chroma's file, inside the disk scan, just before the record is
  removed) or by the parent after a random delay within the erasure's measured length. The parent then opens the
  folder as the next user of it would (``MemoryManager(...)``, which runs ``recover``) and counts.
* **full disk**: the text store's deletes (SQLite's "database or disk is full") or Chroma's purge (ENOSPC) fail inside
  an erasure in this process: the erasure raises DiskFullError, the user's reads are refused, the others' served;
  then the folder is opened again, with space.

Counted after each reopening: a record, window message or summary of the erased user (read through the store: the
manager refuses a user whose erasure is owed, and that refusal is counted too), a canary byte of the user in any file
of the folder (the user's texts, vector ids and vectors, read before the erasure), a pending-erasure record or write
plan left, another user whose records, window or summary changed, an erasure finished on opening without its audit
entry (``erase.completed_on_open`` by ``recovery``), and a child that exited other than by the kill or normally.

The children embed with the lexical embedder, whatever the report's embedder is: what is checked is the store's
erasure, not the model, and a model load in each of a dozen processes would cost more than the check.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable

from memory.core.errors import DiskFullError, ErasurePendingError
from memory.core.schema import Message
from memory.core.owner import Owner
from memory.embed.embedders import Embedder, LexicalEmbedder
from memory.runtime.erase import files_holding
from memory.runtime.manager import MemoryManager
from memory.store.chroma import HNSW_BATCH, StoreLocation, release_client
from memory.reliability.check import Check

TENANT = "acme"
VICTIM = "victim"
OTHERS = ("keeper", "bystander")
WORKSPACE = "erase-kills"
T0 = 1_780_000_000.0
HOOKS = ("after_record", "before_segment_wipe", "after_segment_wipe", "before_text_delete",
         "text_delete_uncommitted", "after_text_delete", "in_chroma_search", "in_disk_scan", "before_record_removed")
"""Where a child kills itself, in the order an erasure passes them."""
RANDOM_KILLS = 3
"""Kills after a random delay, per scale (beside one kill at every hook)."""
FULL_DISK = ("sqlite_full", "enospc_purge")
CHILD_S = 120.0

_FORKSERVER = multiprocessing.get_context("forkserver")
"""Children are forked by a server that imported the library and Chroma once (and opened no Chroma client): a child
starts in a few milliseconds where a fresh interpreter took two seconds to import them."""


def _messages(user: str, n: int, token: str) -> list[Message]:
    return [Message(tenant_id=TENANT, user_id=user, id=f"{user}-{i}", timestamp=T0 + i,
                    content=f"{user} note {i} about the quarterly plan: CANARY-{token}-{user}-{i:03d}")
            for i in range(n)]


def _open(data: Path) -> MemoryManager:
    """The store as every process here opens it (opening it finishes an interrupted erasure)."""
    return MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=data), workspace=WORKSPACE)


def _close(mm: MemoryManager) -> None:
    data = mm.data_dir
    mm.close()
    if data is not None:
        release_client(data)  # so a child (or the next opening) opens the folder afresh


def _build(data: Path, token: str, scale: int) -> dict[str, Any]:
    """A folder with the victim and two other users; what the victim holds (the canaries), what the others hold."""
    mm = _open(data)
    mine, theirs = _messages(VICTIM, HNSW_BATCH * scale, token), [_messages(u, 12 * scale, token) for u in OTHERS]
    for i in range(0, len(mine), 4):  # in turns, so that Chroma's rows of the users share pages
        mm.add_many(mine[i : i + 4] + [ms[i // 4] for ms in theirs if i // 4 < len(ms)])
    texts = sorted({r.content for r in mm.store.records(Owner(TENANT, VICTIM))})
    ids, blobs = mm.store.owner_vector_bytes(Owner(TENANT, VICTIM))
    state = {"needles": [t.encode("utf-8") for t in texts]
             + [v.encode("ascii") for v in mm.store.owner_vector_ids(Owner(TENANT, VICTIM))] + [b for b in blobs if b],
             "others": _others(mm), "victim_records": mm.store.count(Owner(TENANT, VICTIM))}
    _close(mm)
    return state


def _others(mm: MemoryManager) -> dict[str, Any]:
    """What the other users hold: their records' ids, window and summary."""
    return {user: [sorted(r.memory_id for r in mm.store.records(Owner(TENANT, user))),
                   [m["id"] for m in mm.store.window(Owner(TENANT, user))], mm.store.summary(Owner(TENANT, user))]
            for user in OTHERS}


def _count_after(data: Path, state: dict[str, Any], figures: dict[str, int], *, interrupted: bool,
                 finished: bool = False) -> int:
    """Open the folder as its next user would and count what the erasure left; returns the failures found.

    A kill after a random delay can fall before the erasure wrote its pending record (nothing deleted yet, nothing owed,
    the caller never told it was done): then the opening finishes nothing and the user must be there whole, every
    record of it (counted as ``not_begun``); every other case (a hook, all after the record; a finished erasure; an
    erasure the opening finished) must leave nothing of the user."""
    failures = 0
    mm = _open(data)
    try:
        figures["completed_on_open"] += len(mm.completed_erasures)
        if not (interrupted or finished or mm.completed_erasures):
            figures["not_begun"] += 1
            whole = mm.store.count(Owner(TENANT, VICTIM)) == state["victim_records"] and not mm.pending_erasures()
            changed = sum(v != state["others"][u] for u, v in _others(mm).items())
            figures["others_changed"] += changed
            return int(not whole) + changed
        try:
            mm.records(tenant_id=TENANT, user_id=VICTIM)
            mm.recent(tenant_id=TENANT, user_id=VICTIM)
        except ErasurePendingError:
            figures["refused_after_opening"] += 1
            failures += 1
        store = mm.store
        left = (store.count(Owner(TENANT, VICTIM)) + len(store.window(Owner(TENANT, VICTIM)))
                + int(bool(store.summary(Owner(TENANT, VICTIM)))) + store.vector_count(Owner(TENANT, VICTIM)))
        figures["records_left"] += left
        pending = len(mm.pending_erasures()) + len(mm.pending_plans())
        figures["pending_left"] += pending
        changed = sum(v != state["others"][u] for u, v in _others(mm).items())
        figures["others_changed"] += changed
        audited = [e for e in mm.audit_log() if e["action"] == "erase.completed_on_open" and e["actor"] == "recovery"]
        missing = int(bool(mm.completed_erasures) and not audited) + int(interrupted and not mm.completed_erasures)
        figures["audit_missing"] += missing
        failures += left + pending + changed + missing
    finally:
        _close(mm)
    canaries = len(files_holding(data, state["needles"]))
    figures["canary_bytes_left"] += canaries
    return failures + canaries


def check_erase_kills(embedder: Embedder, scale: int, folder: Path, *, hooks: tuple[str, ...] = HOOKS,
                      random_kills: int | None = None, full_disk: tuple[str, ...] = FULL_DISK) -> Check:
    """Kill erasures at every hook and after random delays, fail them on a full disk; reopen and count."""
    del embedder  # the children and this check embed lexically (see the module's docstring)
    check = Check("erase_kills")
    figures: dict[str, Any] = {
        "kills": 0, "killed_before_the_end": 0, "completed_on_open": 0, "full_disk_refusals": 0, "records_left": 0,
        "canary_bytes_left": 0, "pending_left": 0, "others_changed": 0, "refused_after_opening": 0,
        "audit_missing": 0, "crashes": 0, "not_begun": 0}
    rng = random.Random(2050 + scale)
    reference = _reference_seconds(folder / "reference", scale)
    figures["erase_s"] = round(reference, 3)
    rounds: list[tuple[str, float]] = [(hook, 0.0) for hook in hooks]
    rounds += [("", rng.uniform(0.0, 1.2 * reference)) for _ in range(RANDOM_KILLS * scale
                                                                       if random_kills is None else random_kills)]
    template = folder / "template"  # built once, copied for each round (a closed store's folder is a store)
    state = _build(template, f"{rng.getrandbits(32):08x}", scale)
    for n, (hook, delay) in enumerate(rounds):
        data = folder / f"k{n}"
        shutil.copytree(template, data)
        scan = n % 2 == 0 or hook == "in_disk_scan"
        code, lines = _run_child({"data": str(data), "hook": hook, "disk_scan": scan}, delay)
        killed = code == -signal.SIGKILL
        figures["kills"] += int(killed)
        figures["crashes"] += int(code not in (0, -signal.SIGKILL))
        interrupted = killed and not any(line.startswith("erased") for line in lines)
        figures["killed_before_the_end"] += int(interrupted)
        # every hook is passed after the record is written: such a kill leaves an erasure the opening must finish
        finished = any(line.startswith("erased") for line in lines)
        check.failures += _count_after(data, state, figures, interrupted=bool(hook) and killed, finished=finished)
        check.failures += int(code not in (0, -signal.SIGKILL)) + int(bool(hook) and not killed)
        check.cases += 1
    for n, how in enumerate(full_disk):
        data = folder / f"f{n}"
        shutil.copytree(template, data)
        refused = _erase_on_a_full_disk(data, how)
        figures["full_disk_refusals"] += int(refused)
        check.failures += int(not refused) + _count_after(data, state, figures, interrupted=True)
        check.cases += 1
    check.figures = figures
    return check


def _reference_seconds(data: Path, scale: int) -> float:
    """How long a child's erasure takes here (no kill): the span the random kills fall in."""
    _build(data, "reference", scale)
    code, lines = _run_child({"data": str(data), "hook": "", "disk_scan": True}, None)
    took = [float(line.split()[1]) for line in lines if line.startswith("erased ")]
    return took[0] if code == 0 and took else 0.5


def _run_child(spec: dict[str, Any], delay: float | None) -> tuple[int, list[str]]:
    """Run a child erasing the victim; with ``delay``, SIGKILL it that long after it says it starts erasing (a
    child with a hook kills itself). Returns its exit code (``-SIGKILL`` when killed) and what it said."""
    _FORKSERVER.set_forkserver_preload(["chromadb", "memory.reliability.erase_kills"])  # read once, at its start
    ours, theirs = _FORKSERVER.Pipe(duplex=False)
    proc = _FORKSERVER.Process(target=_child, args=(spec, theirs), daemon=True)
    proc.start()
    theirs.close()
    lines: list[str] = []
    deadline = time.monotonic() + CHILD_S
    while time.monotonic() < deadline:
        if not ours.poll(0.05):
            if not proc.is_alive():
                break
            continue
        try:
            lines.append(ours.recv())
        except EOFError:
            break
        if lines[-1] == "erasing" and delay is not None and not spec["hook"]:
            time.sleep(delay)
            assert proc.pid is not None  # started
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # it finished first: an erasure that was not interrupted
                pass
            break
    proc.join(timeout=max(deadline - time.monotonic(), 1.0))
    if proc.is_alive():  # hung: counted as a crash
        proc.kill()
        proc.join()
    while ours.poll():
        try:
            lines.append(ours.recv())
        except EOFError:
            break
    ours.close()
    return proc.exitcode if proc.exitcode is not None else -1, lines


def _erase_on_a_full_disk(data: Path, how: str) -> bool:
    """Erase the victim while the disk refuses the text store's deletes or Chroma's purge; True when the erasure
    raised DiskFullError, the victim's reads were then refused and another user's served."""
    from memory.store import chroma_files
    from memory.store.textstore import TextStore

    mm = _open(data)
    ok = False

    def sqlite_full(*_a: Any, **_k: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    def enospc(*_a: Any, **_k: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    target: tuple[Any, str] = (TextStore, "erase_owner") if how == "sqlite_full" else (chroma_files, "wipe_folder")
    original = getattr(*target)
    setattr(*target, sqlite_full if how == "sqlite_full" else enospc)
    try:
        try:
            mm.erase_user(tenant_id=TENANT, user_id=VICTIM, actor="reliability")
        except DiskFullError:
            ok = True
    finally:
        setattr(*target, original)
    try:
        mm.records(tenant_id=TENANT, user_id=VICTIM)
        ok = False
    except ErasurePendingError:
        pass
    ok = ok and all(mm.records(tenant_id=TENANT, user_id=u) for u in OTHERS)
    _close(mm)
    return ok


# --- the child ----------------------------------------------------------------------------------------------------
def _child(spec: dict[str, Any], say: Any) -> None:
    """Open the folder, erase the victim (killing itself at ``hook``, if one is given), say what it did."""
    mm = _open(Path(spec["data"]))
    if spec["hook"]:
        _plant(spec["hook"])
    say.send("erasing")
    start = time.perf_counter()
    mm.erase_user(tenant_id=TENANT, user_id=VICTIM, actor="reliability", disk_scan=spec["disk_scan"])
    say.send(f"erased {time.perf_counter() - start:.3f}")
    mm.close()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _plant(hook: str) -> None:
    """Make this process SIGKILL itself at ``hook`` (one of HOOKS) of the erasure it runs next."""
    from memory.runtime import erase
    from memory.store import chroma, chroma_files, textstore

    def before(owner: Any, name: str, when: Callable[..., bool] = lambda *_a, **_k: True) -> None:
        original = getattr(owner, name)

        def dying(*args: Any, **kwargs: Any) -> Any:
            if when(*args, **kwargs):
                _die()
            return original(*args, **kwargs)

        setattr(owner, name, dying)

    def after(owner: Any, name: str) -> None:
        original = getattr(owner, name)

        def dying(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            _die()
            return out

        setattr(owner, name, dying)

    store = textstore.TextStore
    {
        "after_record": lambda: after(store, "begin_erasure"),
        "before_segment_wipe": lambda: before(chroma_files, "wipe_folder"),
        "after_segment_wipe": lambda: after(chroma_files, "wipe_folder"),
        "before_text_delete": lambda: before(store, "erase_owner"),
        # inside erase_owner's transaction, after its deletes (the journal is read last): a hot journal is left
        "text_delete_uncommitted": lambda: before(store, "journal_pending", lambda self: self._depth > 0),
        "after_text_delete": lambda: after(store, "erase_owner"),
        "in_chroma_search": lambda: before(chroma.MemoryStore, "chroma_traces"),
        "in_disk_scan": lambda: before(erase, "files_holding"),
        "before_record_removed": lambda: before(store, "end_erasure"),
    }[hook]()
