"""Reliability checks of the store under faults and races (sections of ``python -m memory reliability``).

* ``write_failure``: a vector-store failure (and a SQLite-side failure) injected into a write, then
  erase, then reopen: the write is rolled back and raised, no plan is left holding text, nothing
  comes back, no canary byte stays on disk.
* ``disk_full``: a write on a full disk (no room beyond the erasures' reserve, an ENOSPC from the vector store,
  SQLite's "database or disk is full" in the commit) is refused with DiskFullError and leaves nothing; a write and an
  erasure behind a stuck writer give up after the bounded wait (BusyError).
* ``lifecycle_races``: ``set_valid_until`` and ``forget`` racing ``erase_user`` in threads: no record
  is written back and the erased owner is not listed again.
* ``shared_folder``: two processes, then eight managers in one process, writing to one data folder:
  no plan left behind, no error surfaced, every message stored once.
* ``workspace_names``: pairs of workspace names that folded to one collection and file before
  (``团队一``/``团队二``, ``team a``/``team-a``, ``a/b``/``a:b``, long names that differ at the end):
  no pair shares data, and dropping one leaves the other whole.
* ``chroma_files``: after an erasure, Chroma's files (embedded) hold no row, vector id or vector
  byte of the user.

Each check counts cases and failures like the others of memory/reliability/.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from memory.store.chroma_files import rows_with_ids
from memory.embed.embedders import Embedder, LexicalEmbedder
from memory.runtime.erase import scan_for_bytes
from memory.core.errors import MemoryLabError, WriteError
from memory.core.owner import Owner
from memory.runtime.lifecycle import forget, set_valid_until
from memory.runtime.manager import MemoryManager
from memory.reliability.check import Check
from memory.core.schema import Message
from memory.store.chroma import StoreLocation

T0 = 1_780_000_000.0
NAME_PAIRS = (("团队一", "团队二"), ("team a", "team-a"), ("a/b", "a:b"), ("x" * 200 + "1", "x" * 200 + "2"),
              ("Team", "team"))


def _msg(user: str, i: int, text: str) -> Message:
    return Message(tenant_id="acme", user_id=user, id=f"{user}-{i}", content=text, timestamp=T0 + i)


def check_write_failure(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Inject a failure into each half of a write, then erase and reopen: count what survives."""
    check = Check("write_failure")
    figures = {"raised": 0, "pending_plans": 0, "records_back": 0, "canary_bytes": 0}
    for round_ in range(3 * scale):
        data = folder / f"r{round_}"
        mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=data), workspace="faults")
        mm.add_many([_msg("alice", i, f"alice keeps note {i}") for i in range(3)] + [_msg("bob", 0, "bob note")])
        canary = f"CANARY-{round_}-alice-diagnosis-zimmerman"
        half = "add_vectors" if round_ % 2 == 0 else "put_records"
        original = getattr(mm.store, half)

        def broken(*args, **kwargs):
            raise MemoryLabError(f"injected {half} failure (database is locked)")

        setattr(mm.store, half, broken)
        try:
            mm.add(_msg("alice", 10 + round_, canary))
        except WriteError:
            figures["raised"] += 1
        finally:
            setattr(mm.store, half, original)
        figures["pending_plans"] += len(mm.pending_plans())
        mm.erase_user(tenant_id="acme", user_id="alice")
        mm.close()
        reopened = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=data), workspace="faults")
        figures["records_back"] += len(reopened.records(tenant_id="acme", user_id="alice")) + reopened.recovered
        figures["canary_bytes"] += len(scan_for_bytes(data, [canary]))
        reopened.close()
        check.cases += 1
    check.failures = (check.cases - figures["raised"]) + figures["pending_plans"] + figures["records_back"] \
        + figures["canary_bytes"]
    check.figures = figures
    return check


def check_lifecycle_races(embedder: Embedder, scale: int, folder: Path) -> Check:
    """``set_valid_until``/``forget`` in one thread, ``erase_user`` in another, 100 times per scale."""
    check = Check("lifecycle_races")
    mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=folder), workspace="races")
    write_backs = relisted = 0
    for round_ in range(100 * scale):
        user = f"u{round_}"
        records = mm.add_many([_msg(user, i, f"{user} fact {i} about the launch") for i in range(3)])
        ids = [r.memory_id for r in records]

        def lifecycle():
            for memory_id in ids:
                try:
                    set_valid_until(mm, memory_id, tenant_id="acme", user_id=user, valid_until=T0 + 10**6)
                except KeyError:  # already erased: the write does not happen
                    pass
            forget(mm, tenant_id="acme", user_id=user, days=0, floor=1.0)

        threads = [threading.Thread(target=lifecycle),
                   threading.Thread(target=lambda: mm.erase_user(tenant_id="acme", user_id=user, disk_scan=False))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write_backs += mm.store.count(Owner("acme", user))
        relisted += int(("acme", user) in mm.store.owners())
        check.cases += 1
    check.failures = write_backs + relisted
    check.figures = {"rounds": check.cases, "write_backs": write_backs, "relisted": relisted}
    return check


_WRITER = """
import json, sys
from pathlib import Path
from memory import MemoryManager, Message, StoreLocation
from memory.embed.embedders import LexicalEmbedder
folder, worker = Path(sys.argv[1]), int(sys.argv[2])
mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=folder), workspace="shared")
msgs = [Message(tenant_id="acme", user_id=f"w{worker}-{i % 2}", id=f"w{worker}-{i}", timestamp=1780000000 + i,
                content=f"worker {worker} note {i}") for i in range(10)]
for m in msgs:
    mm.add(m)
print(json.dumps(mm.recovered))
"""


def check_shared_folder(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Writers sharing one data folder: two processes (``runs`` times), then eight managers in threads."""
    check = Check("shared_folder")
    root = Path(__file__).resolve().parents[2]
    errors = leftovers = lost = replayed = 0
    process_error = ""
    runs = 20 * scale
    for run in range(runs):
        data = folder / f"p{run}"
        procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(data), str(w)], cwd=root, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(2)]
        for p in procs:
            out, err = p.communicate(timeout=300)
            errors += int(p.returncode != 0)
            if p.returncode != 0 and not process_error:
                process_error = (err.strip().splitlines() or ["(no output)"])[-1][:300]
            replayed += json.loads(out.strip().splitlines()[-1]) if p.returncode == 0 else 0
        mm = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=data), workspace="shared")
        leftovers += mm.recovered + len(mm.pending_plans())
        lost += 20 - mm.store.count()
        mm.close()
        check.cases += 1
    failures: list[BaseException] = []
    for run in range(runs):  # eight managers of one process on one folder, writing at once
        data = folder / f"t{run}"
        managers = [MemoryManager(embedder=embedder, location=StoreLocation(data_dir=data), workspace="shared")
                    for _ in range(8)]

        def write(k: int) -> None:
            try:
                for i in range(5):
                    managers[k].add(_msg(f"m{k}", i, f"manager {k} note {i}"))
            except BaseException as exc:  # noqa: BLE001 - counted: an error surfaced to a caller
                failures.append(exc)

        threads = [threading.Thread(target=write, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        leftovers += len(managers[0].pending_plans())
        lost += 40 - managers[0].store.count()
        for mm in managers:
            mm.close()
        check.cases += 1
    errors += len(failures)
    check.failures = errors + leftovers + lost + replayed
    check.figures = {"process_runs": runs, "manager_runs": runs, "managers": 8, "errors": errors,
                     "leftover_plans": leftovers,
                     "replayed_live_plans": replayed,
                     "lost": lost, "first_error": repr(failures[0])[:200] if failures else process_error}
    return check


def check_workspace_names(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Each pair of names: two workspaces in one folder, one record each; none may see or drop the other's."""
    check = Check("workspace_names")
    location = StoreLocation(data_dir=folder)
    shared = 0
    for a, b in NAME_PAIRS:
        stores = {name: MemoryManager(embedder=embedder, location=location, workspace=name) for name in (a, b)}
        for name, mm in stores.items():
            mm.add(_msg("alice", 0, f"note of workspace {name}"))
        for name, mm in stores.items():
            seen = [r.content for r in mm.records(tenant_id="acme", user_id="alice")]
            shared += int(seen != [f"note of workspace {name}"])
        stores[a].store.drop()
        shared += int(len(stores[b].records(tenant_id="acme", user_id="alice")) != 1)
        stores[b].store.drop()
        check.cases += 1
    check.failures = shared
    check.figures = {"pairs": len(NAME_PAIRS), "shared": shared}
    return check


def check_chroma_files(embedder: Embedder, scale: int, folder: Path) -> Check:
    """Erase users of an embedded store; count their rows, vector ids and vector bytes left in Chroma's files."""
    check = Check("chroma_files")
    mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=folder), workspace="files")
    users = [f"user{u}" for u in range(4)]
    for i in range(20 * scale):  # interleaved, so the users' rows share Chroma's pages
        mm.add_many([_msg(u, i, f"{u} private line {i} about the diagnosis") for u in users])
    chroma = folder / "chroma"
    left = {"rows": 0, "ids": 0, "vector_bytes": 0}
    for user in users[:2]:
        vector_ids = mm.store.owner_vector_ids(Owner("acme", user))
        blobs = [b for b in mm.store.owner_vector_bytes(Owner("acme", user))[1] if b]
        mm.erase_user(tenant_id="acme", user_id=user, disk_scan=False)
        left["rows"] += rows_with_ids(chroma, vector_ids)
        left["ids"] += len(scan_for_bytes(chroma, [v.encode("ascii") for v in vector_ids]))
        left["vector_bytes"] += len(scan_for_bytes(chroma, blobs))
        check.cases += len(vector_ids)
    kept = sum(len(mm.records(tenant_id="acme", user_id=u)) for u in users[2:])
    check.failures = sum(left.values()) + (2 * 20 * scale - kept)
    check.figures = {**left, "others_kept": kept}
    return check


def check_disk_full(embedder: Embedder, scale: int, folder: Path) -> Check:
    """A full disk, three ways (no room beyond the reserve, ENOSPC from the vector store, SQLite full inside the
    commit), then a stuck writer: each write is refused with DiskFullError and leaves nothing
    (no record, no pending plan, no canary byte after the user's erasure), and a write or erasure behind a writer that
    holds the lock gives up with BusyError after the bounded wait instead of waiting for it."""
    import errno
    import os
    import sqlite3

    from memory.core.errors import BusyError, DiskFullError
    from memory.runtime.manager import WRITE_WAIT_ENV
    from memory.store import space

    check = Check("disk_full")
    figures = {"refused": 0, "records_stored": 0, "pending_plans": 0, "canary_bytes": 0, "busy": 0}
    saved = {k: os.environ.get(k) for k in (space.RESERVE_ENV, WRITE_WAIT_ENV)}

    def enospc(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    def sqlite_full(*_a, **_k):
        raise sqlite3.OperationalError("database or disk is full")

    try:
        for round_ in range(3 * scale):
            data = folder / f"r{round_}"
            mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=data), workspace="full")
            mm.add_many([_msg("alice", i, f"alice keeps note {i}") for i in range(3)])
            canary = f"CANARY-{round_}-alice-full-disk-quartz"
            how = ("reserve", "enospc", "sqlite_full")[round_ % 3]
            patched: tuple[object, str, object] | None = None
            if how == "reserve":  # the disk has no room beyond the erasures' reserve
                os.environ[space.RESERVE_ENV] = str(space.free_bytes(data) / 1024 / 1024)
            else:
                name = "add_vectors" if how == "enospc" else "put_records"  # the vector store; SQLite, in the commit
                target = mm.store
                patched = (target, name, getattr(target, name))
                setattr(target, name, enospc if how == "enospc" else sqlite_full)
            try:
                mm.add(_msg("alice", 10 + round_, canary))
            except DiskFullError:
                figures["refused"] += 1
            finally:
                os.environ.pop(space.RESERVE_ENV, None)
                if patched:
                    setattr(*patched)
            figures["records_stored"] += sum(canary in r.content for r in mm.records(tenant_id="acme", user_id="alice"))
            figures["pending_plans"] += len(mm.pending_plans())
            mm.erase_user(tenant_id="acme", user_id="alice")
            mm.close()
            figures["canary_bytes"] += len(scan_for_bytes(data, [canary]))
            check.cases += 1
        mm = MemoryManager(embedder=embedder, location=StoreLocation(data_dir=folder / "stuck"), workspace="full")
        os.environ[WRITE_WAIT_ENV] = "0.2"
        holding, release = threading.Event(), threading.Event()

        def stuck() -> None:
            with mm.writing():
                holding.set()
                release.wait(60)

        thread = threading.Thread(target=stuck)
        thread.start()
        holding.wait(10)
        for attempt in (lambda: mm.add(_msg("bob", 0, "bob waits")), lambda: mm.erase_user(tenant_id="acme",
                                                                                           user_id="bob")):
            try:
                attempt()
            except BusyError:
                figures["busy"] += 1
            check.cases += 1
        release.set()
        thread.join(10)
        mm.close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    check.failures = (3 * scale - figures["refused"]) + figures["records_stored"] + figures["pending_plans"] + \
        figures["canary_bytes"] + (2 - figures["busy"])
    check.figures = figures
    return check
